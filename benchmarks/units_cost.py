"""What a sweep of ``sampler="units"`` costs against N = P on one CPU core, and what a certified run would take.

For each size, in a fresh process on the cores the script was started on (run it under ``taskset -c K`` for one
core) with XLA on one thread: Fig. 2's
sigmoidal net (toy task, y− = ½, N0 = N + 20, T = 0.01), ``bnnzoo.sample(..., sampler="units")`` with ``--chains``
chains, called three times: once to compile, then with 1 + 1 and 1 + 1 + ``--sweeps`` sweeps.  The difference of the
last two calls over ``--sweeps`` × chains is the cost of one sweep of one chain (the calls' fixed costs cancel); peak
memory is the process's maximum resident set.

The projection multiplies that cost by the chain-sweeps of a certified run — start families × chains per family ×
(warm-up + kept sweeps) — and divides by the cores (families run on separate cores, which :mod:`units_sharing`
measures at 1.4–1.5× the time alone for two sigmoidal runs, so the division is a lower bound).  Two settings are
projected: the one of the certified sigmoidal runs at N = P = 30, 60 and 100 at T = 0.01 (3 × 8 × (150 + 300)), and the smallest that
certified the demo's N = P = 40 net (2 × 4 × (50 + 100)).  Whether the smaller setting certifies at N = P = 500 is not
known: no such run exists.

With ``--snaper-sizes``, SNAPER (the sampler's default for uncertified runs) on the same net and core: its sampling
time per chain and kept draw after ``--snaper-warmup`` warm-up steps (from the run's own timing, compilation and
warm-up excluded) and its leapfrog steps per draw, so that a switch rate per draw converts to one per second.

Run: ``taskset -c 1 python benchmarks/units_cost.py --sizes 60,100,200,300,500 --chains 4 --sweeps 4 --out
benchmarks/results/units_cost`` (writes ``.json`` and ``.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import run_child, versions, with_reading  # noqa: E402

SETTINGS = {"S4's certified runs (N ≤ 100)": (3, 8, 150, 300), "the demo's (N = 40)": (2, 4, 50, 100)}
"""Projected certified runs: name → (start families, chains per family, warm-up sweeps, kept sweeps)."""

ONE_THREAD = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}


def one(cfg: dict) -> dict:
    """Time one size (run in a child process); returns the numbers as a dict."""
    import bnnzoo

    entry = bnnzoo.get_entry("sigmoidal")
    N, C = cfg["size"], cfg["chains"]
    task = entry.make_task(**dict(entry.task_defaults, P=N, N0=N + 20, y_neg=0.5))

    def call(samples):
        t0 = time.perf_counter()
        bnnzoo.sample(entry, task, width=N, temperature=0.01, num_chains=C, num_warmup=1, num_samples=samples,
                      seed=cfg["seed"], sampler="units", record=("z",), progress=False)
        return time.perf_counter() - t0

    if cfg.get("sampler") == "snaper":
        t0 = time.perf_counter()
        run = bnnzoo.sample(entry, task, width=N, temperature=0.01, num_chains=C, num_warmup=cfg["warmup"],
                            num_samples=cfg["samples"], seed=cfg["seed"], sampler="snaper", record=("z",),
                            progress=False)
        timing = bnnzoo.run_config(run)["engine"]["timing"]
        return dict(cfg, wall_s=time.perf_counter() - t0, warmup_s=timing["warmup_s"],
                    s_per_chain_draw=timing["sampling_s"] / (C * cfg["samples"]),
                    steps_per_draw=float(run.sample_stats["n_steps"].mean()),
                    peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    first = call(1)
    short = call(1)
    long = call(1 + cfg["sweeps"])
    per = (long - short) / (cfg["sweeps"] * C)
    return dict(cfg, first_call_s=first, short_s=short, long_s=long, s_per_chain_sweep=per,
                peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def projection(per: float, cores: int) -> dict:
    """Projected wall seconds of each of :data:`SETTINGS` from the cost of one chain-sweep ``per`` on ``cores``."""
    return {name: per * F * C * (W + S) / min(cores, F) for name, (F, C, W, S) in SETTINGS.items()}


def markdown(res: dict) -> list[str]:
    a = res["args"]
    lines = [
        "# The units sampler's cost against N = P, one CPU core, and the time to a certified run",
        "",
        "`" + (f"taskset -c {','.join(map(str, res['cores']))} "
               if len(res.get("cores", ())) < res.get("cpu_count", os.cpu_count() or 1) else "")
        + f"python benchmarks/units_cost.py --sizes {a['sizes']} --chains {a['chains']} --sweeps {a['sweeps']} "
        + (f"--snaper-sizes {a['snaper_sizes']} --snaper-warmup {a['snaper_warmup']} "
           f"--snaper-samples {a['snaper_samples']} " if a["snaper_sizes"] else "") + f"--out {a['out']}`",
        "",
        f"Machine: {res['machine']}; every size in a fresh process with XLA on one thread; total "
        f"{res['total_s']:.0f} s. " + ", ".join(f"{k} {v}" for k, v in res["versions"].items()) + ".",
        "",
        "Fig. 2's sigmoidal net (toy task, y− = ½, T = 0.01), the sampler's default moves. *Per chain-sweep*: the "
        "time of one sweep (every unit moved once) of one chain, from the difference of two calls that differ only "
        "in their kept sweeps. *Projected*: chain-sweeps of a certified run × that cost / min(cores, families), "
        f"on {a['cores']} cores — a lower bound, since two runs side by side each take 1.4–1.5× their time alone "
        "(`units_sharing.md`). Settings: "
        + "; ".join(f"{n}: {F} families × {C} chains × ({W} + {S}) sweeps" for n, (F, C, W, S) in SETTINGS.items())
        + ".",
        "",
        "| N = P | chains | s per chain-sweep | first call s (compile) | peak memory MB | "
        + " | ".join(f"projected, {n}" for n in SETTINGS) + " |",
        "|---|---|---|---|---|" + "---|" * len(SETTINGS),
    ]
    for r in res["rows"]:
        if r.get("sampler") == "snaper":
            continue
        if "error" in r:
            lines.append(f"| {r['size']} | {r['chains']} | {r['error']} |")
            continue
        proj = projection(r["s_per_chain_sweep"], a["cores"])
        lines.append(f"| {r['size']} | {r['chains']} | {r['s_per_chain_sweep']:.3f} | {r['first_call_s']:.1f} | "
                     f"{r['peak_rss_mb']:.0f} | " + " | ".join(f"{v / 60:.1f} min" for v in proj.values()) + " |")
    snaper = [r for r in res["rows"] if r.get("sampler") == "snaper"]
    if snaper:
        lines += ["", f"SNAPER on the same net, {a['chains']} chains, {a['snaper_warmup']} warm-up steps + "
                  f"{a['snaper_samples']} kept draws; time per chain and kept draw from the run's sampling time "
                  "(compilation and warm-up excluded).", "",
                  "| N = P | s per chain-draw | leapfrog steps per draw | warm-up s | peak memory MB |",
                  "|---|---|---|---|---|"]
        for r in snaper:
            lines.append(f"| {r['size']} | {r['error']} |" if "error" in r else
                         f"| {r['size']} | {r['s_per_chain_draw']:.3f} | {r['steps_per_draw']:.1f} | "
                         f"{r['warmup_s']:.0f} | {r['peak_rss_mb']:.0f} |")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="60,100,200,300,500", help="comma-separated N = P")
    p.add_argument("--chains", type=int, default=4, help="chains per call")
    p.add_argument("--sweeps", type=int, default=4, help="extra kept sweeps of the long call")
    p.add_argument("--snaper-sizes", dest="snaper_sizes", default="", help="comma-separated N = P to time SNAPER at")
    p.add_argument("--snaper-warmup", dest="snaper_warmup", type=int, default=200, help="SNAPER's warm-up steps")
    p.add_argument("--snaper-samples", dest="snaper_samples", type=int, default=50, help="SNAPER's kept draws")
    p.add_argument("--cores", type=int, default=2, help="cores of the projection")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=int, default=900, help="seconds per size")
    p.add_argument("--out", default="benchmarks/results/units_cost", help="output stem (must not exist)")
    p.add_argument("--render", default=None, help="only rewrite STEM.md from STEM.json")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one is not None:
        print(json.dumps(one(json.loads(args.one))))
        return
    if args.render is not None:
        stem = Path(args.render)
        md = with_reading(Path(f"{stem}.md"), markdown(json.loads(Path(f"{stem}.json").read_text())))
        Path(f"{stem}.md").write_text("\n".join(md) + "\n")
        return
    stem = Path(args.out)
    if Path(f"{stem}.json").exists() or Path(f"{stem}.md").exists():
        p.error(f"--out {stem}: the result exists; choose another stem")
    t0 = time.perf_counter()
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        rows.append(run_child(__file__, dict(size=n, chains=args.chains, sweeps=args.sweeps, seed=args.seed),
                              args.timeout, ONE_THREAD))
        print(json.dumps(rows[-1]), flush=True)
    for n in (int(s) for s in args.snaper_sizes.split(",") if s):
        rows.append(run_child(__file__, dict(size=n, chains=args.chains, sampler="snaper", warmup=args.snaper_warmup,
                                             samples=args.snaper_samples, seed=args.seed), args.timeout, ONE_THREAD))
        print(json.dumps(rows[-1]), flush=True)
    res = dict(args=vars(args), rows=rows, total_s=time.perf_counter() - t0, versions=versions(),
               cores=sorted(os.sched_getaffinity(0)), cpu_count=os.cpu_count(),
               machine=f"{platform.machine()}, {os.cpu_count()} cores, the run bound to cores "
               f"{sorted(os.sched_getaffinity(0))}")
    for k in ("one", "render"):
        res["args"].pop(k)
    stem.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{stem}.json").write_text(json.dumps(res, indent=1))
    md = with_reading(Path(f"{stem}.md"), markdown(res))
    Path(f"{stem}.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
