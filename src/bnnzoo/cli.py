"""Command line: ``bnnzoo list``, ``bnnzoo sample``, ``bnnzoo demo``."""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path


def _cmd_list(args) -> int:
    from .models import list_entries

    for e in list_entries():
        print(f"{e.name:<22} {e.description}")
        if args.verbose:
            print(f"{'':<22} defaults: {e.defaults}; task: {e.task_defaults}")
            for o in e.observables:
                print(f"{'':<24}- {o.name}: {o.description}" + (f"  [theory: {o.theory}]" if o.theory else ""))
    return 0


def _task_for(entry, args):
    kw = dict(entry.task_defaults)
    if getattr(args, "P", None) is not None:
        kw["P"] = args.P
    if getattr(args, "N0", None) is not None:
        kw["N0"] = args.N0
    if getattr(args, "y_neg", None) is not None:
        kw["y_neg"] = args.y_neg
    if getattr(args, "P_test", None):
        kw["P_test"] = args.P_test
    if "seed" in entry.make_task.__code__.co_varnames:
        kw.setdefault("seed", getattr(args, "task_seed", 0))
    return entry.make_task(**kw)


def _model_overrides(args) -> dict:
    kw = {}
    for name in ("width", "depth", "temperature", "sigma_a2"):
        v = getattr(args, name, None)
        if v is not None:
            kw[name] = v
    return kw


def _cmd_sample(args) -> int:
    from . import azcompat
    from .inference import sample
    from .models import get_entry

    entry = get_entry(args.entry)
    task = _task_for(entry, args)
    record = tuple(args.record.split(",")) if args.record else ()
    t0 = time.time()
    idata = sample(entry, task, num_chains=args.chains, num_warmup=args.warmup, num_samples=args.samples,
                   seed=args.seed, thinning=args.thin, record=record, progress=not args.quiet,
                   sampler=args.sampler, **_model_overrides(args))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    azcompat.to_netcdf(idata, out)
    print(f"wrote {out} ({time.time() - t0:.1f} s; {task!r})")
    return 0


def _trace_png(idata, path, var_names, coords=None):
    import matplotlib

    matplotlib.use("Agg")
    from . import azcompat

    azcompat.save_plot(azcompat.plot_trace(idata, var_names=var_names, coords=coords), path)


def run_demo(out: Path, *, width=100, P=100, chains=2, warmup=300, samples=300, seed=0, progress=True,
             entries=("deep_linear", "sigmoidal", "relu")) -> dict:
    """Sample the linear, sigmoidal and ReLU nets on the toy task and write NetCDF files and trace plots."""
    from . import azcompat
    from .inference import sample
    from .models import get_entry

    out.mkdir(parents=True, exist_ok=True)
    summary = {}
    for name in entries:
        entry = get_entry(name)
        task = entry.make_task(**dict(entry.task_defaults, P=P))
        t0 = time.time()
        print(f"[demo] sampling {name}: N={width}, {task!r}, {chains} chains x ({warmup} warm-up + {samples} draws)",
              flush=True)
        idata = sample(entry, task, num_chains=chains, num_warmup=warmup, num_samples=samples, seed=seed,
                       record=("z",), progress=progress, width=width)
        dt = time.time() - t0
        nc = out / f"{name}.nc"
        azcompat.to_netcdf(idata, nc)
        post = azcompat.get_group(idata, "posterior")
        _trace_png(idata, out / f"{name}_trace_a.png", ["a"], coords={"neuron": [0, 1, 2]})
        _trace_png(idata, out / f"{name}_trace_order.png", ["mse", "q_a"])
        ss = azcompat.get_group(idata, "sample_stats")
        summary[name] = dict(netcdf=str(nc), seconds=round(dt, 1), mse=float(post["mse"].mean()),
                             target_variance=float(task.Y.var()), divergences=int(ss["diverging"].sum()),
                             mean_tree_depth=float(ss["tree_depth"].mean()))
        print(f"[demo] {name}: {dt:.0f} s, posterior-mean training MSE {summary[name]['mse']:.2e} "
              f"(target variance {summary[name]['target_variance']:.2e}), "
              f"{summary[name]['divergences']} divergences", flush=True)
    (out / "demo_summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _cmd_demo(args) -> int:
    out = Path(args.out)
    run_demo(out, width=args.width, P=args.P, chains=args.chains, warmup=args.warmup, samples=args.samples,
             seed=args.seed, progress=not args.quiet)
    print(f"[demo] wrote NetCDF files, trace plots and demo_summary.json to {out}/")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bnnzoo", description="Sample and understand Bayesian neural networks.")
    sub = p.add_subparsers(dest="command", required=True)

    pl = sub.add_parser("list", help="list the zoo's models")
    pl.add_argument("-v", "--verbose", action="store_true", help="show defaults and observables")
    pl.set_defaults(func=_cmd_list)

    ps = sub.add_parser("sample", help="sample a zoo model on its default task and write NetCDF")
    ps.add_argument("entry", help="zoo entry name (see `bnnzoo list`)")
    ps.add_argument("--width", type=int, help="hidden width N")
    ps.add_argument("--depth", type=int, help="number of hidden layers L")
    ps.add_argument("--P", type=int, help="number of training points")
    ps.add_argument("--N0", type=int, help="input dimension (default P + 20)")
    ps.add_argument("--P-test", dest="P_test", type=int, default=0, help="number of test points")
    ps.add_argument("--temperature", type=float, help="(rescaled) temperature T")
    ps.add_argument("--sigma-a2", dest="sigma_a2", type=float, help="readout prior variance (default: paper's rule)")
    ps.add_argument("--y-neg", dest="y_neg", type=float, help="target on the wrong classes")
    ps.add_argument("--chains", type=int, default=2)
    ps.add_argument("--warmup", type=int, default=300)
    ps.add_argument("--samples", type=int, default=300)
    ps.add_argument("--thin", type=int, default=1)
    ps.add_argument("--sampler", choices=["nuts", "hmc"], default="nuts")
    ps.add_argument("--seed", type=int, default=0)
    ps.add_argument("--record", default="z", help="comma-separated extra sites (default 'z': all preactivations)")
    ps.add_argument("--quiet", action="store_true", help="no progress bar")
    ps.add_argument("--out", required=True, help="output NetCDF file")
    ps.set_defaults(func=_cmd_sample)

    pd = sub.add_parser("demo", help="sample the linear, sigmoidal and ReLU toy nets and write a report")
    pd.add_argument("--out", default="bnnzoo_demo", help="output folder")
    pd.add_argument("--width", type=int, default=100)
    pd.add_argument("--P", type=int, default=100)
    pd.add_argument("--chains", type=int, default=2)
    pd.add_argument("--warmup", type=int, default=300)
    pd.add_argument("--samples", type=int, default=300)
    pd.add_argument("--seed", type=int, default=0)
    pd.add_argument("--quiet", action="store_true", help="no progress bar")
    pd.set_defaults(func=_cmd_demo)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as e:
        print(f"bnnzoo: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
