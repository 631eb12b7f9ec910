"""Is the health gate's drift test calibrated on a run at equilibrium?  Geweke's statistic of
:mod:`bnnzoo.inference.health` (last half against first tenth, both standard errors from the last half's spectral
density at zero) applied to windows of the kept draws of one run sampled with ``certify=True`` (all after the warm-up).

    python benchmarks/drift_calibration.py --width 100 --warmup 300 --samples 600 --out benchmarks/results/drift_calibration_relu_n100
    python benchmarks/drift_calibration.py --width 10 --warmup 10 --samples 40 --window 20 --step 10 --chains 2 --out /tmp/dc/tiny

Samples the ReLU net of row Q1 (toy task, y− = −½, T = 0.01, N = P = ``--width``, N0 = P + 20) with
``bnnzoo.sample(..., sampler="units", certify=True)`` (prior and annealed families × ``--chains``), then, for every
invariant observable the gate judges (``mse``, ``q_a[c]``, ``n_outliers``, ``q_z1``) and every window of
``--window`` kept draws starting at ``--step`` multiples, the drift |z| of each chain.  A window that starts after
equilibrium is a draw from the null hypothesis: a calibrated test puts about ``chains × 2·Φ(−3)`` chains above
|z| = 3 per window and almost none above the gate's 4.  Reported per observable: windows, the largest |z|, the windows
with a chain above 4, the mean number of chains above 3 per window against the calibrated expectation, and the whole
run's |z| (what the gate read).  For the outlier count it also reports the first tenth's excess over the modal count
per chain against the largest excess of any later window of the same length.

Writes ``STEM.json`` and ``STEM.md`` (``--out``; neither may exist).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from _bench import versions, write_page

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.inference.health import MAX_DRIFT_Z, _drift, invariant_observables, sampler_health


def windows(x: np.ndarray, window: int, step: int) -> list[dict]:
    """Drift |z| per chain of ``x`` (chain, draw) on every window of ``window`` draws starting at multiples of
    ``step``."""
    out = []
    for start in range(0, x.shape[1] - window + 1, step):
        z, _ = _drift(x[:, start:start + window])
        out.append(dict(start=start, z=[float(v) for v in z]))
    return out


def summarise(name: str, x: np.ndarray, window: int, step: int) -> dict:
    """The calibration numbers of one observable (module docstring)."""
    C = x.shape[0]
    ws = windows(x, window, step)
    zs = np.array([w["z"] for w in ws])                              # (window, chain)
    whole, _ = _drift(x)
    res = dict(observable=name, windows=len(ws), max_z=float(zs.max()),
               windows_above_gate=int((zs > MAX_DRIFT_Z).any(1).sum()),
               chains_above_3=float((zs > 3).sum(1).mean()), expected_above_3=float(C * 2 * stats.norm.sf(3)),
               whole_run_z=float(whole.max()), whole_run_chain=int(whole.argmax()), per_window=ws)
    if name == "n_outliers":
        t = max(x.shape[1] // 10, 4)
        mode = float(stats.mode(x, axis=None).mode)
        ex = x - mode
        first = ex[:, :t].sum(1)
        later = ex[:, t:t + (x.shape[1] - t) // t * t].reshape(C, -1, t).sum(-1)
        res.update(modal_count=mode, first_tenth_excess=[float(v) for v in first],
                   later_windows=int(later.size), later_max_excess=float(later.max()),
                   later_median_excess=float(np.median(later)))
    return res


def markdown(res: dict) -> list[str]:
    a = res["args"]
    lines = ["# Drift test calibration on the kept draws of a run sampled with certify=True", "",
             f"`python benchmarks/drift_calibration.py --width {a['width']} --warmup {a['warmup']} "
             f"--samples {a['samples']} --chains {a['chains']} --window {a['window']} --step {a['step']} "
             f"--out {a['out']}`", "",
             f"Machine: {res['machine']}. Sampling {res['sample_s']:.0f} s. "
             + ", ".join(f"{k} {v}" for k, v in res["versions"].items()) + ".", "",
             f"ReLU net of row Q1, N = P = {a['width']}, T = 0.01, `sampler=\"units\"` (default moves), prior and "
             f"annealed families × {a['chains']} chains, {a['warmup']} warm-up + {a['samples']} kept sweeps; health "
             f"of the run: {res['status']} ({res['reason'] or 'no reason'}). Windows of {a['window']} kept draws "
             f"every {a['step']}; |z| is the gate's Geweke statistic per chain (gate: {MAX_DRIFT_Z:g}).", "",
             "| observable | windows | largest drift z | windows with a chain above the gate | chains above 3 per "
             "window (calibrated) | whole run's drift z (chain) |", "|---|---|---|---|---|---|"]
    for r in res["observables"]:
        lines.append(f"| {r['observable']} | {r['windows']} | {r['max_z']:.2f} | {r['windows_above_gate']} | "
                     f"{r['chains_above_3']:.2f} ({r['expected_above_3']:.3f}) | {r['whole_run_z']:.2f} "
                     f"({r['whole_run_chain']}) |")
    n = next((r for r in res["observables"] if r["observable"] == "n_outliers"), None)
    if n:
        lines += ["", f"Outlier count: modal count {n['modal_count']:g}; excess over it in each chain's first tenth "
                  f"{', '.join(f'{v:g}' for v in n['first_tenth_excess'])}; in the {n['later_windows']} later windows "
                  f"of the same length at most {n['later_max_excess']:g} (median {n['later_median_excess']:g})."]
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--width", type=int, default=100, help="N = P (>= 8)")
    p.add_argument("--warmup", type=int, default=300, help="warm-up sweeps per family (>= 1)")
    p.add_argument("--samples", type=int, default=600, help="kept sweeps per chain (>= 16)")
    p.add_argument("--chains", type=int, default=8, help="chains per family (>= 2)")
    p.add_argument("--window", type=int, default=200, help="draws per window (>= 8, <= --samples)")
    p.add_argument("--step", type=int, default=50, help="draws between window starts (>= 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="output stem (neither STEM.json nor STEM.md may exist)")
    args = p.parse_args(argv)
    for name, lo in (("width", 8), ("warmup", 1), ("samples", 16), ("chains", 2), ("window", 8), ("step", 1)):
        if getattr(args, name) < lo:
            p.error(f"--{name} must be an integer >= {lo}, got {getattr(args, name)}")
    if args.window > args.samples:
        p.error(f"--window must be <= --samples ({args.samples}), got {args.window}")
    stem = Path(args.out)
    if any(Path(f"{stem}{e}").exists() for e in (".json", ".md")):
        p.error(f"--out {stem}: a result with this stem exists; choose another stem")
    entry = bnnzoo.get_entry("relu")
    N = args.width
    task = entry.make_task(**dict(entry.task_defaults, P=N, N0=N + 20, y_neg=-0.5))
    t0 = time.perf_counter()
    run = bnnzoo.sample(entry, task, seed=args.seed, certify=True, width=N, depth=1, temperature=0.01,
                        num_chains=args.chains, num_warmup=args.warmup, num_samples=args.samples, sampler="units",
                        record=("z",), progress=True)
    sample_s = time.perf_counter() - t0
    health = sampler_health(run)
    obs = invariant_observables(azcompat.get_group(run, "posterior"))
    res = dict(args=vars(args), machine=f"{platform.machine()}, {os.cpu_count()} cores", versions=versions(),
               sample_s=sample_s, status=health.status, reason=health.reason,
               observables=[summarise(k, v, args.window, args.step) for k, v in obs.items() if v.ndim == 2])
    stem.parent.mkdir(parents=True, exist_ok=True)
    print("\n".join(write_page(stem, res, markdown(res))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
