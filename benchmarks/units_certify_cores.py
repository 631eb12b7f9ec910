"""Time to a certified run on a multi-core CPU: each start family of ``sampler="units"`` in its own process on its
own core, the families combined afterwards (:func:`bnnzoo.workflows.certify.combine_families`).

    python benchmarks/units_certify_cores.py --size 500 --chains 4 --sweeps 50,100 --out /tmp/ucc/units_certify_cores
    python benchmarks/units_certify_cores.py --size 20 --chains 2 --sweeps 5,10 --out /tmp/ucc/tiny

Fig. 2's sigmoidal net (toy task, y− = ½ unless ``--y-neg``, T = 0.01 unless ``--temperature``, one hidden layer),
the families of ``--families`` (prior, meanfield), each ``bnnzoo.sample(..., sampler="units", init=<its start>)``
with the seed ``sample(..., certify=...)`` gives it, bound to one core of ``--cores`` (``taskset``) with XLA on one
thread, all started together. Each family's run (every preactivation recorded: chains × draws × N × P numbers) is
kept as ``STEM_<family>.nc``. Reported: the wall time from the start of the families to the combined verdict (the
time a user waits: compilation, the mean-field start, the NetCDF files written and read back, the comparison and the
mean field included), each family's wall time (its start, sampling and file), the health of the combined run
(:func:`bnnzoo.inference.health.sampler_health`: ``equilibrated`` only when the families agree on every population
observable and the chains pass the health gate, by R̂ or, for populations frozen within chains, by the ensemble
criterion; the record says which), the families' agreement, the largest R̂, and the fraction of units on one code
(``--code``, default 111) per family beside the mean field's. "Time to a certified run" is that wall time when the status is ``equilibrated``. A family
that fails or runs past ``--timeout`` stops the others.

Writes ``STEM.json`` and ``STEM.md`` (``--out``; it must not exist), or with ``--render STEM`` only rewrites
``STEM.md`` from ``STEM.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _bench import versions, with_reading, write_page

ONE_THREAD = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}
SEED_OFFSET = {"prior": 0, "annealed": 1, "meanfield": 2}      # as sample(..., certify=...) seeds its families


def _task(cfg: dict):
    import bnnzoo

    entry = bnnzoo.get_entry("sigmoidal")
    N = cfg["size"]
    return entry, entry.make_task(**dict(entry.task_defaults, P=N, N0=N + 20, y_neg=cfg["y_neg"]))


def one(cfg: dict) -> dict:
    """One family's run (in a child process): sampled, written to its NetCDF file; returns its timing."""
    import bnnzoo
    from bnnzoo import azcompat
    from bnnzoo.workflows.certify import meanfield_start

    entry, task = _task(cfg)
    model_kw = dict(width=cfg["size"], temperature=cfg["temperature"])
    t0 = time.perf_counter()
    init, seed = "prior", cfg["seed"] + SEED_OFFSET[cfg["family"]]
    if cfg["family"] == "meanfield":
        init, _ = meanfield_start(entry, task, model_kw, cfg["chains"], seed)
    run = bnnzoo.sample(entry, task, num_chains=cfg["chains"], num_warmup=cfg["warmup"],
                        num_samples=cfg["samples"], seed=seed, sampler="units", init=init, record=("z",),
                        progress=True, **model_kw)
    azcompat.to_netcdf(run, cfg["path"])
    return dict(family=cfg["family"], wall_s=time.perf_counter() - t0, core=sorted(os.sched_getaffinity(0)))


def combined(cfg: dict, families: list[str], stem: Path) -> dict:
    """The families' runs combined and judged: status, agreement, R̂ and the code ``cfg["code"]`` per family."""
    from bnnzoo import azcompat
    from bnnzoo.inference.health import sampler_health
    from bnnzoo.theory import single_neuron_meanfield
    from bnnzoo.workflows.certify import combine_families

    runs = {f: azcompat.from_netcdf(Path(f"{stem}_{f}.nc")) for f in families}
    run = combine_families(runs)
    h = sampler_health(run)
    cert = json.loads(azcompat.get_attrs(run)["bnnzoo_certification"])
    finite = [v for v in h.rhat.values() if isinstance(v, float) and math.isfinite(v)]
    _, task = _task(cfg)
    mf = single_neuron_meanfield(task, nonlinearity="sigmoid", temperature=cfg["temperature"],
                                 sigma_a2=1.0 / cfg["size"])
    code = cfg.get("code", "111")
    mass = sum(float(w) for c, w in zip(mf.branch_code, mf.branch_mass) if c == code) if mf.normalizable else None
    return dict(status=h.status, reason=h.reason, populations=h.populations, criterion=h.criterion,
                agree=cert["agree"],
                disagreements=cert["disagreements"], max_rhat=max(finite) if finite else None,
                observable=cert["observables"].get(f"code_fraction[z1][{code}]"), meanfield=mass)


def markdown(res: dict) -> list[str]:
    a, r = res["args"], res["result"]
    obs = "; ".join(f"{f} {v[0]:.4f} ± {v[1]:.4f}" for f, v in (r.get("observable") or {}).items())
    walls = ", ".join(f"{c['family']} {c['wall_s']:.0f} s (core {','.join(map(str, c['core']))})"
                      for c in res["children"])
    cert = f"{res['total_s'] / 60:.1f} min" if r.get("status") == "equilibrated" else f"not reached ({r.get('status')})"
    mr = "—" if r.get("max_rhat") is None else f"{r['max_rhat']:.2f}"
    w, s = a["sweeps"].split(",")
    code = a.get("code", "111")
    extra = "".join(f" --{k.replace('_', '-')} {a[k]}" for k, d in (("y_neg", 0.5), ("temperature", 0.01))
                    if a.get(k, d) != d) + ("" if code == "111" else f" --code {code}")
    return [
        "# Time to a certified run, one start family per core: sampler='units', Fig. 2's sigmoidal net", "",
        f"`python benchmarks/units_certify_cores.py --size {a['size']} --chains {a['chains']} --sweeps {a['sweeps']} "
        f"--families {a['families']} --cores {a['cores']}{extra} --out {a['out']}`", "",
        f"Machine: {res['machine']}. Total {res['total_s']:.0f} s. "
        + ", ".join(f"{k} {v}" for k, v in res["versions"].items()) + ".", "",
        f"Toy task, N = P = {a['size']}, N0 = P + 20, y− = {a['y_neg']}, T = {a['temperature']}; families "
        f"{a['families']} of {a['chains']} chains, {w} warm-up + {s} kept sweeps each, every family in its own "
        "process on its own core (XLA on one thread), started together, combined with "
        "`bnnzoo.workflows.certify.combine_families`. *Wall*: from the first family's start to the combined "
        "verdict (compile included).", "",
        f"| N = P | wall | per family | health | families agree | max R̂ | code {code} per family | mean field | "
        "time to a certified run |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {a['size']} | {res['total_s']:.0f} s | {walls} | {r.get('status')}"
        + (f" ({r['criterion']})" if r.get("criterion") else "")
        + (f": {r['reason'][:200].replace('|', '/')}" if r.get("reason") else "")
        + f" | {r.get('agree')} | {mr} | {obs} | "
        f"{'—' if r.get('meanfield') is None else format(r['meanfield'], '.4f')} | {cert} |",
    ]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=500, help="N = P (default 500)")
    p.add_argument("--chains", type=int, default=4, help="chains per family (>= 2)")
    p.add_argument("--sweeps", default="50,100", metavar="WARMUP,SAMPLES", help="warm-up and kept sweeps")
    p.add_argument("--families", default="prior,meanfield", help="two or more of prior, meanfield")
    p.add_argument("--cores", default="0,1", help="the cores, one per family (comma-separated)")
    p.add_argument("--temperature", type=float, default=0.01)
    p.add_argument("--y-neg", dest="y_neg", type=float, default=0.5)
    p.add_argument("--code", default="111", help="the code whose fraction per family is reported (e.g. 100 at y− = 0.1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=int, default=7200, help="seconds for the families together (all stop after it)")
    p.add_argument("--out", default="benchmarks/results/units_certify_cores", help="output stem (must not exist)")
    p.add_argument("--render", default=None, help="only rewrite STEM.md from STEM.json")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one is not None:
        print(json.dumps(one(json.loads(args.one))), flush=True)
        return 0
    if args.render is not None:
        stem = Path(args.render)
        md = with_reading(Path(f"{stem}.md"), markdown(json.loads(Path(f"{stem}.json").read_text())))
        Path(f"{stem}.md").write_text("\n".join(md) + "\n")
        return 0
    families = args.families.split(",")
    if len(families) < 2 or any(f not in ("prior", "meanfield") for f in families) or len(set(families)) < 2:
        p.error(f"--families must name two or more distinct families among prior, meanfield, got {args.families!r}")
    try:
        cores = [int(c) for c in args.cores.split(",")]
        warmup, samples = (int(x) for x in args.sweeps.split(","))
    except ValueError:
        p.error(f"--cores must be integers, one per family, and --sweeps two integers WARMUP,SAMPLES; got "
                f"{args.cores!r} and {args.sweeps!r}")
    if len(cores) != len(families) or any(c not in os.sched_getaffinity(0) for c in cores):
        p.error(f"--cores must name one core per family ({len(families)}) among {sorted(os.sched_getaffinity(0))}, "
                f"got {args.cores!r}")
    if args.chains < 2 or warmup < 0 or samples < 1:
        p.error(f"--chains must be >= 2 and --sweeps WARMUP >= 0, SAMPLES >= 1; got {args.chains} and {args.sweeps!r}")
    if shutil.which("taskset") is None:
        p.error("taskset (util-linux) is needed to bind each family to its core and was not found")
    stem = Path(args.out)
    ends = [".json", ".md"] + [f"_{f}.{e}" for f in families for e in ("nc", "out")]
    if any(Path(f"{stem}{e}").exists() for e in ends):
        p.error(f"--out {stem}: a result with this stem exists; choose another stem")
    stem.parent.mkdir(parents=True, exist_ok=True)
    base = dict(size=args.size, chains=args.chains, warmup=warmup, samples=samples, seed=args.seed,
                temperature=args.temperature, y_neg=args.y_neg)
    t0 = time.perf_counter()
    env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"), **ONE_THREAD}
    outs = {f: open(f"{stem}_{f}.out", "w+") for f in families}       # each family's result line (JSON)
    procs = {f: subprocess.Popen(["taskset", "-c", str(c), sys.executable, __file__, "--one",
                                  json.dumps(dict(base, family=f, path=f"{stem}_{f}.nc"))],
                                 stdout=outs[f], text=True, env=env) for f, c in zip(families, cores)}
    failed = None
    while failed is None and any(pr.poll() is None for pr in procs.values()):
        if time.perf_counter() - t0 > args.timeout:
            failed = f"the families ran past --timeout {args.timeout} s"
        failed = failed or next((f"family {f} failed (exit code {pr.returncode}; its error output is above)"
                                 for f, pr in procs.items() if pr.poll() not in (None, 0)), None)
        time.sleep(1.0)
    for pr in procs.values():
        if pr.poll() is None:
            pr.kill()
            pr.wait()
    lines = {}
    for f in families:                   # each family's result line, then its file goes
        outs[f].seek(0)
        lines[f] = [ln for ln in outs[f].read().splitlines() if ln.startswith("{")]
        outs[f].close()
        Path(f"{stem}_{f}.out").unlink()
    failed = failed or next((f"family {f} failed (exit code {procs[f].returncode}; its error output is above)"
                             for f in families if procs[f].returncode != 0 or not lines[f]), None)
    if failed:
        print(f"units_certify_cores: {failed}; the other families were stopped (a finished family's STEM_<family>.nc "
              "is kept)", file=sys.stderr)
        return 1
    children = [json.loads(lines[f][-1]) for f in families]
    result = combined(dict(base, code=args.code), families, stem)
    res = dict(args=vars(args), children=children, result=result, total_s=time.perf_counter() - t0,
               versions=versions(), machine=f"{platform.machine()}, {os.cpu_count()} cores")
    for k in ("one", "render"):
        res["args"].pop(k)
    print("\n".join(write_page(stem, res, markdown(res))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
