"""Chains on a multi-core CPU: vectorised on one device vs one chain per host device, side by side in one run.

    python benchmarks/bench_chains.py                       # toy nets at N = P = 100, 2 chains, ~5 min on 2 cores
    python benchmarks/bench_chains.py --nets relu --warmup 300 --samples 300
    python benchmarks/bench_chains.py --sampler snaper --chains 4 --out benchmarks/results/results_chains_snaper.md

JAX sees a CPU as one device, so ``bnnzoo.sample`` vectorises the chains there: one core works and every step waits for
the chain with the longest trajectory.  ``numpyro.set_host_device_count(k)`` (called by the ``bnnzoo`` CLI) exposes k
host devices and ``chain_method="auto"`` then runs one chain per device.  Both methods run here with the same seed,
so they draw the same chains up to floating-point differences (the table reports the largest), and the table gives
wall seconds (compilation included, as a user waits for it) and their ratio.  Writes
``benchmarks/results/results_chains.md`` (or ``--out``).

With ``--sampler chees`` or ``snaper`` (whose tuning couples the chains) the chains are sharded over the host devices
(``chain_method="sharded"``: each device runs its share, the tuning gathers all chains) against vectorised on one;
the table adds the leapfrog steps per draw each run tuned itself to.  In float32 their draws agree only up to
rounding grown through the chains' dynamics (see ``tests/perf/test_chains.py``), so the difference column can be
large there: the two runs are then different, equally valid chains.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
Y_NEG = {"deep_linear": 0.0, "sigmoidal": 0.5, "relu": -0.5}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nets", nargs="+", default=list(Y_NEG), choices=list(Y_NEG))
    ap.add_argument("--size", type=int, default=100, help="N = P")
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--sampler", default="nuts", choices=("nuts", "chees", "snaper"))
    ap.add_argument("--out", default=str(HERE / "results" / "results_chains.md"))
    args = ap.parse_args()
    coupled = args.sampler != "nuts"
    n_dev = min(args.chains, os.cpu_count() or 1)
    if args.chains % n_dev:
        ap.error(f"--chains {args.chains} must be a multiple of the {n_dev} host devices for sharding")

    import numpyro

    numpyro.set_host_device_count(n_dev)
    import jax
    import numpy as np

    import bnnzoo

    rows = []
    for net in args.nets:
        task = bnnzoo.toy_task(P=args.size, y_neg=Y_NEG[net], seed=0)
        times, draws, steps = {}, {}, {}
        methods = ("vectorized", "sharded")
        for method in methods:
            t0 = time.perf_counter()
            idata = bnnzoo.sample(net, task, width=args.size, num_chains=args.chains, num_warmup=args.warmup,
                                  num_samples=args.samples, seed=0, progress=False, chain_method=method,
                                  sampler=args.sampler)
            times[method] = time.perf_counter() - t0
            draws[method] = np.asarray(bnnzoo.azcompat.get_group(idata, "posterior")["a"].values)
            steps[method] = float(bnnzoo.azcompat.get_group(idata, "sample_stats")["n_steps"].values.mean())
            print(f"{net:12s} {method:10s} {times[method]:7.1f} s  {steps[method]:.0f} steps/draw", flush=True)
        same = float(np.max(np.abs(draws["vectorized"] - draws[methods[1]])))
        rows.append((net, times["vectorized"], times[methods[1]], times["vectorized"] / times[methods[1]], same,
                     steps["vectorized"], steps[methods[1]]))

    other = "sharded over the devices" if coupled else "one chain per device"
    lines = [
        f"# Chains on a CPU: vectorised vs {other} (benchmarks/bench_chains.py)",
        "",
        f"{args.sampler.upper() if coupled else 'NUTS'}, N = P = {args.size}, {args.chains} chains × "
        f"({args.warmup} warm-up + {args.samples} draws), seed 0; "
        f"{os.cpu_count()} CPU cores, {jax.local_device_count()} host devices, {platform.processor() or platform.machine()}; "
        "wall seconds including compilation.",
        "",
        f"| net | vectorised (s) | {other} (s) | speed-up | max abs difference of the readout draws "
        f"| steps / draw (vectorised, {other}) |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {n} | {v:.1f} | {p:.1f} | {r:.2f}× | {d:.1e} | {sv:.0f}, {sp:.0f} |"
              for n, v, p, r, d, sv, sp in rows]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
