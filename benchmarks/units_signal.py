"""What the signal move of sampler="units" buys: the ESS of the readout norm q_a with and without it, side by side.

    python benchmarks/units_signal.py                   # linear N = 100, P = 50 and sigmoidal y− = 0.1 N = P = 60
    python benchmarks/units_signal.py --sweeps 20,40 --out /tmp/us

Per net, the same run (4 chains from the prior, ``--sweeps`` warm-up + kept sweeps, seed 0) with ``signal_step`` 0
(the move left out) and :data:`bnnzoo.inference.units.SIGNAL_STEP`: the mean, bulk ESS and R̂ of q_a per class
and of the training error, the acceptance of the unit moves and of the signal move, and seconds per sweep
(compilation excluded).  On the linear net the exact value of q_a is known at finite N (``linear_exact_m1``).

Writes ``benchmarks/results/units_signal.md`` and ``.json`` (or ``--out`` stem).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from _bench import rhat_of

HERE = Path(__file__).resolve().parent


def one(net, step, warmup, samples, seed=0):
    import arviz as az
    import numpy as np

    import bnnzoo
    from bnnzoo.inference import units as U
    from bnnzoo.theory.linear import linear_exact_m1

    if net == "linear":
        task = bnnzoo.tasks.binary_toy_task(P=50)
        kw = dict(width=100, activation="linear", temperature=0.01)
        exact = float(linear_exact_m1(task.X, task.Y, width=100, temperature=0.01).U[0, 0])
    else:
        task = bnnzoo.toy_task(P=60, y_neg=0.1)
        kw = dict(width=60, activation="sigmoid", temperature=0.01)
        exact = None
    out, st, info = U.units_chains(task.X, task.Y, num_chains=4, num_warmup=warmup, num_samples=samples, seed=seed,
                                   signal_step=step, exclude=("W1",), **kw)
    q, mse = out["q_a"], out["mse"]
    t = info["timing"]
    return dict(net=net, signal_step=step, warmup=warmup, samples=samples,
                q_a=[float(q[..., r].mean()) for r in range(q.shape[-1])],
                q_a_ess=[float(az.ess(q[..., r])) for r in range(q.shape[-1])],
                q_a_rhat=[float(rhat_of(q[..., r])) for r in range(q.shape[-1])],
                q_a_exact=exact, mse_ess=float(az.ess(mse)), mse_rhat=float(rhat_of(mse)),
                acceptance=float(st["acceptance_rate"].mean()),
                signal_acceptance=float(st["signal_acceptance"].mean()) if "signal_acceptance" in st else None,
                s_per_sweep=(t["warmup_s"] + t["sampling_s"]) / (warmup + samples))


def main(argv=None):
    from bnnzoo._record import jsonable
    from bnnzoo.inference.units import SIGNAL_STEP

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nets", default="linear,sigmoidal")
    p.add_argument("--sweeps", default="400,600", help="warm-up,kept sweeps")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    import jax

    warmup, samples = (int(s) for s in args.sweeps.split(","))
    rows, t_all = [], time.perf_counter()
    for net in args.nets.split(","):
        for step in (0.0, SIGNAL_STEP):
            r = one(net, step, warmup, samples)
            print(json.dumps(r), flush=True)
            rows.append(r)
    stem = Path(args.out or HERE / "results" / "units_signal")
    stem.parent.mkdir(parents=True, exist_ok=True)
    meta = dict(python=platform.python_version(), jax=jax.__version__, cpu_count=os.cpu_count(),
                total_s=round(time.perf_counter() - t_all, 1), args=vars(args))
    Path(f"{stem}.json").write_text(json.dumps(jsonable(dict(meta=meta, rows=rows)), indent=1))
    cmd = "python benchmarks/units_signal.py " + " ".join(f"--{k} '{v}'" for k, v in vars(args).items()
                                                         if v is not None and k != "out")
    md = ["# sampler='units': the readout norm's ESS with and without the signal move", "", f"`{cmd}`", "",
          f"Machine: {meta['cpu_count']} CPU cores; total {meta['total_s']} s. Python {meta['python']}, jax "
          f"{meta['jax']}. 4 chains from the prior, {warmup} warm-up + {samples} kept sweeps, seed 0; linear net "
          "N = 100, P = 50 (binary ±1 task, exact q_a from the finite-N quadrature), sigmoidal net N = P = 60, "
          "y− = 0.1; T = 0.01.", "",
          "| net | signal step | q_a (exact) | ESS of q_a | R̂ of q_a | ESS / R̂ of mse | unit-move acceptance | "
          "signal-move acceptance | s per sweep |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ex = "" if r["q_a_exact"] is None else f" ({r['q_a_exact']:.4f})"
        sa = "—" if r["signal_acceptance"] is None else f"{r['signal_acceptance']:.2f}"
        md.append(f"| {r['net']} | {r['signal_step']:g} | {', '.join(f'{v:.4f}' for v in r['q_a'])}{ex} | "
                  f"{', '.join(f'{v:.0f}' for v in r['q_a_ess'])} | {', '.join(f'{v:.2f}' for v in r['q_a_rhat'])} "
                  f"| {r['mse_ess']:.0f} / {r['mse_rhat']:.2f} | {r['acceptance']:.3f} | {sa} | "
                  f"{r['s_per_sweep']:.3f} |")
    Path(f"{stem}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
