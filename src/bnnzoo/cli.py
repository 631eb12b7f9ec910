"""Command line: ``bnnzoo list``, ``bnnzoo sample``, ``bnnzoo demo``, ``bnnzoo diagnose``."""

from __future__ import annotations

import argparse
import inspect
import json
import os
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


def _accepted(fn) -> set[str]:
    return set(inspect.signature(fn).parameters)


def _check_flags(entry, given: dict, fn, what: str) -> None:
    """A clear error, before anything compiles, for a flag the entry's task builder or model does not take."""
    params = inspect.signature(fn).parameters
    if any(q.kind is inspect.Parameter.VAR_KEYWORD for q in params.values()):
        return
    bad = sorted(set(given) - set(params))
    if bad:
        flags = ", ".join("--" + b.replace("_", "-") for b in bad)
        raise ValueError(f"{flags} does not apply to {entry.name!r} (its {what} {fn.__name__} takes "
                         f"{', '.join(sorted(_accepted(fn) - {'X', 'Y'}))})")


def _task_for(entry, args):
    kw = dict(entry.task_defaults)
    given = {}
    for flag in ("P", "N0", "y_neg", "P_test"):
        v = getattr(args, flag, None)
        if v is not None and (flag != "P_test" or v):
            given[flag] = v
    _check_flags(entry, given, entry.make_task, "task builder")
    kw.update(given)
    if "seed" in _accepted(entry.make_task):
        kw.setdefault("seed", getattr(args, "task_seed", 0))
    return entry.make_task(**kw)


def _model_overrides(args, entry=None) -> dict:
    kw = {}
    for name in ("width", "depth", "temperature", "sigma_a2"):
        v = getattr(args, name, None)
        if v is not None:
            kw[name] = v
    if entry is not None:
        _check_flags(entry, kw, entry.model, "model")
    return kw


def _long_run_options(args) -> dict:
    """`sample` options for long runs: --chunk / --store / --resume stream chunks and checkpoints to a folder."""
    kw = {}
    chunk, store, resume = getattr(args, "chunk", None), getattr(args, "store", None), getattr(args, "resume", False)
    if chunk is not None or store is not None or resume:
        kw["store"] = store if store is not None else str(args.out) + ".store"
        kw["resume"] = bool(resume)
        if chunk is not None:
            kw["chunk_size"] = chunk
    if getattr(args, "exclude", None):
        kw["exclude"] = tuple(args.exclude.split(","))
    if getattr(args, "reparam", None):
        kw["reparam"] = tuple(args.reparam.split(","))
    if getattr(args, "warm_start", 0):
        kw["warm_start"] = args.warm_start
    return kw


def _use_cpu_cores(args) -> None:
    """Expose min(chains, CPU cores) host devices so the chains run in parallel on a CPU (one chain per core) instead
    of vectorised on one core.  Only in a ``bnnzoo`` process of its own (not when ``main([...])`` is called from
    Python, where JAX may be running and XLA_FLAGS would leak into child processes); respects an XLA_FLAGS device
    count the user set, and leaves GPUs alone (the flag only adds CPU devices)."""
    user_set = "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "")
    if not getattr(args, "own_process", False) or user_set:
        return
    n = min(int(args.chains), os.cpu_count() or 1)
    if n > 1:
        import numpyro

        numpyro.set_host_device_count(n)


def _cmd_sample(args) -> int:
    from . import azcompat
    from .inference import sample
    from .models import get_entry

    entry = get_entry(args.entry)
    task = _task_for(entry, args)
    overrides = _model_overrides(args, entry)
    explicit = [args.coordinator, args.num_processes, args.process_id]
    if any(v is not None for v in explicit) and not (args.distributed and all(v is not None for v in explicit)):
        raise ValueError("--coordinator, --num-processes and --process-id go together, with --distributed")
    if args.distributed:                   # before JAX starts its backends; one device per process on a CPU
        from .inference.distributed import initialize

        initialize(args.coordinator, args.num_processes, args.process_id)
    else:
        _use_cpu_cores(args)
    record = tuple(args.record.split(",")) if args.record else ()
    precision = None if args.matmul_precision == "jax" else args.matmul_precision
    t0 = time.time()
    idata = sample(entry, task, num_chains=args.chains, num_warmup=args.warmup, num_samples=args.samples,
                   seed=args.seed, thinning=args.thin, record=record, progress=not args.quiet,
                   sampler=args.sampler, matmul_precision=precision, **_long_run_options(args), **overrides)
    out = Path(args.out)
    if args.distributed:
        import jax

        if jax.process_index() != 0:       # every process holds the whole run; one writes it
            print(f"process {jax.process_index()} done ({time.time() - t0:.1f} s); process 0 writes {out}")
            return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    azcompat.to_netcdf(idata, out)
    print(f"wrote {out} ({time.time() - t0:.1f} s; {task!r})")
    return 0


def _trace_png(idata, path, var_names, coords=None):
    import matplotlib

    matplotlib.use("Agg")
    from . import azcompat

    azcompat.save_plot(azcompat.plot_trace(idata, var_names=var_names, coords=coords), path)


def run_demo(out: Path, *, width=100, P=100, chains=4, warmup=500, relu_warmup=2000, samples=500, seed=0,
             progress=True, entries=("deep_linear", "sigmoidal", "relu"), sampler="snaper", warm_start=0) -> dict:
    """Sample the linear, sigmoidal and ReLU nets on the toy task, write NetCDF files and trace plots, and diagnose
    them (``<out>/report/``; every verdict in ``<out>/demo_summary.json``).

    Parameters
    ----------
    out : output folder.   width, P : N and P of the toy nets.   seed : the sampling seed.
    chains, samples : chains and kept draws per chain.   sampler : "snaper" (default) or "nuts".
    warmup : warm-up steps of the linear and sigmoidal nets.
    relu_warmup : warm-up steps of the ReLU net: its chains start with several outlier units per class that merge
        into one per class slowly (seed 1: 4 to 9 outliers per chain after 500 SNAPER warm-up steps, 3 after 2000).
    entries : the zoo entries to run.   warm_start : Adam steps before warm-up (0: off).

    Returns
    -------
    dict : per entry, the run's NetCDF path, sampling seconds, training MSE, divergences, coding scheme and verdicts.
    """
    from . import azcompat
    from .inference import sample
    from .models import get_entry

    out.mkdir(parents=True, exist_ok=True)
    summary, runs = {}, {}
    for name in entries:
        entry = get_entry(name)
        task = entry.make_task(**dict(entry.task_defaults, P=P))
        t0 = time.time()
        n_warm = relu_warmup if name == "relu" else warmup
        print(f"[demo] sampling {name}: N={width}, {task!r}, {chains} chains x ({n_warm} warm-up + {samples} draws)",
              flush=True)
        idata = sample(entry, task, num_chains=chains, num_warmup=n_warm, num_samples=samples, seed=seed,
                       record=("z",), progress=progress, width=width, sampler=sampler, warm_start=warm_start)
        dt = time.time() - t0
        nc = out / f"{name}.nc"
        azcompat.to_netcdf(idata, nc)
        post = azcompat.get_group(idata, "posterior")
        _trace_png(idata, out / f"{name}_trace_a.png", ["a"], coords={"neuron": [0, 1, 2]})
        _trace_png(idata, out / f"{name}_trace_order.png", ["mse", "q_a"])
        ss = azcompat.get_group(idata, "sample_stats")
        summary[name] = dict(netcdf=str(nc), seconds=round(dt, 1), mse=float(post["mse"].mean()),
                             target_variance=float(task.Y.var()), divergences=int(ss["diverging"].sum()),
                             mean_tree_depth=float(ss["tree_depth"].mean()), warmup=n_warm)
        print(f"[demo] {name}: {dt:.0f} s, posterior-mean training MSE {summary[name]['mse']:.2e} "
              f"(target variance {summary[name]['target_variance']:.2e}), "
              f"{summary[name]['divergences']} divergences", flush=True)
        runs[name] = idata
    # diagnostics report: figures + JSON per run in <out>/report/<name>/, all verdicts in <out>/report/summary.json
    from .diagnostics import write_report

    for name, res in write_report(runs, out / "report").items():
        rep = res["report"]
        summary[name].update(coding_scheme=rep.coding_scheme, verdicts=rep.verdicts, report=str(out / "report" / name))
        print(f"[demo] {name}: {rep.coding_scheme} code; " + ", ".join(f"{k} {v}" for k, v in rep.verdicts.items()),
              flush=True)
    (out / "demo_summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _cmd_demo(args) -> int:
    out = Path(args.out)
    _use_cpu_cores(args)
    run_demo(out, width=args.width, P=args.P, chains=args.chains, warmup=args.warmup, relu_warmup=args.relu_warmup,
             samples=args.samples, seed=args.seed, progress=not args.quiet, sampler=args.sampler)
    print(f"[demo] wrote NetCDF files, trace plots, diagnostics reports (report/) and demo_summary.json to {out}/")
    return 0


def _cmd_diagnose(args) -> int:
    from . import azcompat
    from .diagnostics import diagnose

    if not Path(args.run).is_file():
        raise FileNotFoundError(f"run file {args.run} not found (write one with `bnnzoo sample ... --out FILE`)")
    idata = azcompat.from_netcdf(args.run)
    rep = diagnose(idata, store=args.save is not None, kernels=not args.no_kernels)
    if args.figures:
        from .plots import save_figures

        save_figures(idata, args.figures, report=rep)
    if args.save:
        azcompat.to_netcdf(idata, args.save)
    if args.json:
        print(rep.to_json(indent=1))
    else:
        print(repr(rep))
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
    ps.add_argument("--sampler", choices=["nuts", "hmc", "gibbs", "chees", "snaper"], default="nuts",
                    help="gibbs: the exact blocked Gibbs sampler, linear nets only; chees: ChEES-HMC, every chain "
                    "the same number of leapfrog steps, tuned across chains (>= 2 chains); snaper: the same sampler "
                    "with the trajectory length tuned on the slowest direction (better readout mixing)")
    ps.add_argument("--seed", type=int, default=0)
    ps.add_argument("--record", default="z", help="comma-separated extra sites (default 'z': all preactivations)")
    ps.add_argument("--quiet", action="store_true", help="no progress bar")
    ps.add_argument("--out", required=True, help="output NetCDF file")
    ps.add_argument("--chunk", type=int, help="kept draws per chunk, each streamed to the store folder with a "
                    "sampler-state checkpoint")
    ps.add_argument("--store", help="folder for the chunks and checkpoints (default: OUT.store)")
    ps.add_argument("--resume", action="store_true", help="continue the interrupted run in the store folder "
                    "(same arguments)")
    ps.add_argument("--exclude", help="comma-separated sites not to record (e.g. W1)")
    ps.add_argument("--reparam", help="faster exact sampling: 'readout', 'data_space' or 'readout,data_space'")
    ps.add_argument("--warm-start", dest="warm_start", type=int, default=0,
                    help="Adam steps onto the solution space before warm-up")
    ps.add_argument("--matmul-precision", dest="matmul_precision", default="highest",
                    choices=["highest", "high", "tensorfloat32", "bfloat16", "default", "jax"],
                    help="float32 matrix-product precision on GPUs (default 'highest': exact float32; 'jax': JAX's "
                    "own setting, TensorFloat32 on recent NVIDIA GPUs); no effect on CPU")
    ps.add_argument("--distributed", action="store_true",
                    help="one of several processes (hosts) started together: jax.distributed.initialize, with the "
                    "coordinator read from the cluster environment (SLURM, Open MPI) unless --coordinator is given; "
                    "the chains are split over the processes and process 0 writes OUT (not --sampler gibbs)")
    ps.add_argument("--coordinator", help="with --distributed: HOST:PORT of process 0")
    ps.add_argument("--num-processes", dest="num_processes", type=int, help="with --coordinator: number of processes")
    ps.add_argument("--process-id", dest="process_id", type=int, help="with --coordinator: this process's index")
    ps.set_defaults(func=_cmd_sample)

    pd = sub.add_parser("demo", help="sample the linear, sigmoidal and ReLU toy nets and write a report")
    pd.add_argument("--out", default="bnnzoo_demo", help="output folder")
    pd.add_argument("--width", type=int, default=100)
    pd.add_argument("--P", type=int, default=100)
    pd.add_argument("--chains", type=int, default=4, help="chains (SNAPER tunes across them: >= 2, 4 advised)")
    pd.add_argument("--warmup", type=int, default=500, help="warm-up steps per chain (linear and sigmoidal nets)")
    pd.add_argument("--relu-warmup", dest="relu_warmup", type=int, default=2000,
                    help="warm-up steps per chain of the ReLU net (its outlier units merge slowly: one per class)")
    pd.add_argument("--samples", type=int, default=500)
    pd.add_argument("--sampler", choices=["snaper", "nuts"], default="snaper",
                    help="snaper (default): ChEES-HMC tuned on the slowest direction, 4 chains reach equilibrium on "
                    "all three nets; nuts: NumPyro's NUTS")
    pd.add_argument("--seed", type=int, default=0)
    pd.add_argument("--quiet", action="store_true", help="no progress bar")
    pd.set_defaults(func=_cmd_demo)

    pg = sub.add_parser("diagnose", help="diagnose a sampled run (ergodicity, branches, codes, symmetry, kernels, "
                                         "theory)")
    pg.add_argument("run", help="NetCDF file written by `bnnzoo sample` / bnnzoo.sample")
    pg.add_argument("--json", action="store_true", help="print the verdicts and numbers as JSON")
    pg.add_argument("--figures", metavar="DIR", help="also write the paper-style figures to DIR")
    pg.add_argument("--save", metavar="FILE", help="write the run with the diagnostics groups added to FILE")
    pg.add_argument("--no-kernels", dest="no_kernels", action="store_true",
                    help="skip kernels, CKA, D_LR and NC1 (the costliest part at large P)")
    pg.set_defaults(func=_cmd_diagnose)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    args.own_process = argv is None
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as e:
        print(f"bnnzoo: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
