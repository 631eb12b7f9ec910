"""Fig. 1's binary task (m = 1, y = ±1, classes ½, sigmoid φ = ½(1 + erf), T = 0.01): is the exact 10/01 code balance
of the unit-wise sampler the posterior's or the sampler's?

    python benchmarks/units_binary_balance.py

Three measurements, written to ``benchmarks/results/units_binary_balance.md`` and ``.json`` (or ``--out`` stem):

1. the kernel driven from prior starts at N = P = 60 (4 chains): units per chain on code 10 and 01 (the signs of a
   unit's class means of h over the two classes) at the start and after 1, 2, 5, 10 and 30 sweeps;
2. from the state after 30 sweeps: the change of log π (readout integrated out, the kernel's ``log_target``) when
   one unit's row is negated (h → −h: 10 ↔ 01), per unit, and when a 10 and a 01 unit are negated together;
3. at N = 4, P = 8, T = 0.05: the distribution of the per-draw count on code 10 under ``sampler="units"``
   (8 chains × 1000 draws) and under NUTS (8 chains × 2000 draws), both from prior draws.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import bnnzoo
from bnnzoo.tasks import binary_toy_task

from _bench import toy_kernel, with_reading

jax.config.update("jax_enable_x64", True)


def split(H, lab):
    """(units on code 10, units on 01) per chain of preactivations H (..., N, P)."""
    m0, m1 = H[..., lab == 0].mean(-1), H[..., lab == 1].mean(-1)
    return np.sum((m0 > 0) & (m1 < 0), axis=-1), np.sum((m0 < 0) & (m1 > 0), axis=-1)


def drive(N: int, chains: int, seed: int):
    task = binary_toy_task(P=N, N0=N + 10)
    lab = np.asarray(task.labels)
    kern = toy_kernel(task, "sigmoid")
    H = kern.s[None, None, :] * jax.random.normal(jax.random.PRNGKey(seed), (chains, N, N), jnp.float64)
    sweep = jax.jit(jax.vmap(lambda H, k: kern.sweep(H, k)[0]))
    trace = {0: split(np.asarray(H), lab)}
    for t in range(1, 31):
        H = sweep(H, jax.random.split(jax.random.PRNGKey(seed + t), chains))
        if t in (1, 2, 5, 10, 30):
            trace[t] = split(np.asarray(H), lab)
    lt = jax.jit(kern.log_target)
    H0 = H[0]
    base = float(lt(H0))
    m0, m1 = np.asarray(H0[:, lab == 0].mean(-1)), np.asarray(H0[:, lab == 1].mean(-1))
    is10 = (m0 > 0) & (m1 < 0)
    cost = np.array([float(lt(H0.at[i].set(-H0[i]))) - base for i in range(N)])
    i, j = np.flatnonzero(is10)[0], np.flatnonzero(~is10)[0]
    pair = float(lt(H0.at[i].set(-H0[i]).at[j].set(-H0[j]))) - base
    return trace, cost, is10, pair


def tiny(sampler: str, samples: int, N=4, P=8, T=0.05):
    task = binary_toy_task(P=P, N0=P + 10)
    lab = np.asarray(task.labels)
    t0 = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = bnnzoo.sample("sigmoidal", task, width=N, temperature=T, sampler=sampler, num_chains=8,
                            num_warmup=samples // 2, num_samples=samples, seed=1, record=("z",), progress=False)
    n10, _ = split(np.asarray(run.posterior["z1"].values, float), lab)
    return [float(np.mean(n10 == k)) for k in range(N + 1)], time.time() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="output stem (default benchmarks/results/units_binary_balance)")
    args = p.parse_args()
    stem = Path(args.out or Path(__file__).parent / "results" / "units_binary_balance")
    t0 = time.time()
    trace, cost, is10, pair = drive(60, 4, 0)
    units, t_units = tiny("units", 1000)
    nuts, t_nuts = tiny("nuts", 2000)
    q = lambda x: [round(float(v), 2) for v in np.percentile(x, [0, 50, 100])]      # noqa: E731
    res = dict(trace={t: dict(n10=a.tolist(), n01=b.tolist()) for t, (a, b) in trace.items()},
               flip_cost_10=q(cost[is10]), flip_cost_01=q(cost[~is10]), pair_flip=pair,
               tiny=dict(N=4, P=8, T=0.05, units=units, nuts=nuts, units_s=t_units, nuts_s=t_nuts),
               total_s=time.time() - t0)
    md = ["# Fig. 1's binary task: the 10/01 code balance under the unit-wise sampler", "",
          f"`python benchmarks/units_binary_balance.py`; {res['total_s']:.0f} s on a shared 2-core machine.", "",
          "## Units on code 10 / 01 per chain, N = P = 60, T = 0.01, prior starts (4 chains)", "",
          "| sweeps | 10 | 01 |", "|---|---|---|"]
    md += [f"| {t} | {v['n10']} | {v['n01']} |" for t, v in res["trace"].items()]
    md += ["", "## One unit negated (h → −h) from the state after 30 sweeps (chain 0)", "",
           f"Δ log π (min, median, max) for a unit on 10: {res['flip_cost_10']}; on 01: {res['flip_cost_01']}; "
           f"a 10 and a 01 unit negated together: {pair:+.4f}.", "",
           "## Per-draw count on code 10, N = 4, P = 8, T = 0.05 (8 chains from prior draws)", "",
           "| count | 0 | 1 | 2 | 3 | 4 |", "|---|---|---|---|---|---|",
           "| units (1000 draws/chain) | " + " | ".join(f"{v:.4f}" for v in units) + " |",
           "| NUTS (2000 draws/chain) | " + " | ".join(f"{v:.4f}" for v in nuts) + " |"]
    Path(f"{stem}.json").write_text(json.dumps(res, indent=1))
    md = with_reading(Path(f"{stem}.md"), md)
    Path(f"{stem}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
