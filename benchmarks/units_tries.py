"""What a sweep of sampler="units" costs and how many codes it changes, by tries per unit and size.

    python benchmarks/units_tries.py                                # N = P = 100, 200 (tries 1, 8, 32) and 500 (8)
    python benchmarks/units_tries.py --sizes 60 --tries 1,8 --out /tmp/ut

Sigmoidal net on the toy task (y− = ½, T = 0.01), 2 chains from the prior, the kernel of
:mod:`bnnzoo.inference.units` compiled once per setting (compilation excluded); after ``--warmup`` sweeps,
``--sweeps`` sweeps are timed.  Per setting: seconds per sweep (both chains), the accepted fraction of the
proposals, accepted moves per unit and sweep, and the fraction of units whose code (class-mean signs of the
preactivations) differs after the sweep from before it — and that per second.  ``tries`` independence proposals
per unit share one cavity and one set of proposal pieces, so extra tries cost little.

Writes ``benchmarks/results/units_tries.md`` and ``.json`` (or ``--out`` stem).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from _bench import toy_kernel

HERE = Path(__file__).resolve().parent


def one(N, tries, chains, warmup, sweeps, seed=0):
    import jax
    import numpy as np

    import bnnzoo

    task = bnnzoo.toy_task(P=N, y_neg=0.5, seed=0)
    with jax.enable_x64(True):
        k = toy_kernel(task, "sigmoid", tries=tries)
        H = k.s[None, None, :] * jax.random.normal(jax.random.PRNGKey(seed), (chains, N, N))

        def keys(r):
            return jax.random.split(jax.random.PRNGKey(seed + 1 + r), chains)

        t0 = time.perf_counter()
        sweep = jax.jit(jax.vmap(k.sweep)).lower(H, keys(0)).compile()
        compile_s = time.perf_counter() - t0
        for r in range(warmup):
            H = sweep(H, keys(r))[0]
        jax.block_until_ready(H)
        acc, changed = [], []
        t0 = time.perf_counter()
        for r in range(sweeps):
            H, a, c = sweep(H, keys(warmup + r))[:3]
            acc.append(a)
            changed.append(c)
        jax.block_until_ready(H)
        dt = (time.perf_counter() - t0) / sweeps
    acc, changed = float(np.mean(acc)), float(np.mean(changed))
    return dict(N=N, P=N, tries=tries, chains=chains, warmup=warmup, sweeps=sweeps, compile_s=round(compile_s, 1),
                s_per_sweep=dt, acceptance=acc, accepted_per_unit_per_sweep=acc * tries,
                code_changes_per_unit_per_sweep=changed, code_changes_per_unit_per_s=changed / dt)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="100,200,500")
    p.add_argument("--tries", default="1,8,32;1,8,32;8", help="tries per size, ';' between sizes")
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--warmup", default="40,40,5", help="warm-up sweeps per size")
    p.add_argument("--sweeps", default="30,30,5", help="timed sweeps per size")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    import jax

    sizes = [int(s) for s in args.sizes.split(",")]
    tries = [[int(t) for t in g.split(",")] for g in args.tries.split(";")]
    warm = [int(s) for s in args.warmup.split(",")]
    sweeps = [int(s) for s in args.sweeps.split(",")]
    rows, t_all = [], time.perf_counter()
    for j, N in enumerate(sizes):
        for t in tries[min(j, len(tries) - 1)]:
            r = one(N, t, args.chains, warm[min(j, len(warm) - 1)], sweeps[min(j, len(sweeps) - 1)])
            print(json.dumps(r), flush=True)
            rows.append(r)
    stem = Path(args.out or HERE / "results" / "units_tries")
    stem.parent.mkdir(parents=True, exist_ok=True)
    meta = dict(python=platform.python_version(), jax=jax.__version__, cpu_count=os.cpu_count(),
                total_s=round(time.perf_counter() - t_all, 1), args=vars(args))
    Path(f"{stem}.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    cmd = "python benchmarks/units_tries.py " + " ".join(f"--{k} '{v}'" for k, v in vars(args).items()
                                                        if v is not None and k != "out")
    md = ["# sampler='units': cost and code changes per sweep by tries per unit", "", f"`{cmd}`", "",
          f"Machine: {meta['cpu_count']} CPU cores, idle; total {meta['total_s']} s. Python {meta['python']}, "
          f"jax {meta['jax']}. Sigmoidal net, toy task, y− = ½, T = 0.01, {args.chains} chains from the prior; "
          "seconds per sweep for both chains (compilation excluded). A code change: a unit's class-mean sign "
          "pattern differs after its move from before it.", "",
          "| N = P | tries | warm-up + timed sweeps | s per sweep | acceptance per proposal | accepted moves per "
          "unit per sweep | code changes per unit per sweep | code changes per unit per s |",
          "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['N']} | {r['tries']} | {r['warmup']} + {r['sweeps']} | {r['s_per_sweep']:.3f} | "
                  f"{r['acceptance']:.3f} | {r['accepted_per_unit_per_sweep']:.2f} | "
                  f"{r['code_changes_per_unit_per_sweep']:.4f} | {r['code_changes_per_unit_per_s']:.3f} |")
    Path(f"{stem}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
