"""Per-draw code fractions of chains started at a planted teacher: is the teacher's population a typical draw?

The planted check (:func:`bnnzoo.diagnostics.planted_check`) compares the chain means of a family started at the
teacher with those of a family started from the prior.  When a sampler keeps each unit's code (SNAPER on the
sigmoidal net), every planted chain keeps the teacher's own population, one draw of the posterior's, so the planted
family's chain means scatter far less than populations do from draw to draw.  A sampler whose codes change every
sweep (``sampler="units"``) shows that draw-to-draw law.  This script samples both from the teacher of a planted
sigmoidal task and prints, per sampler, the per-draw fraction of units on code 100 (the sign of each unit's
class-mean preactivation; classes from the teacher's outputs): a few draws per chain, the mean and sd over all
draws and chains, each chain's mean, and the share of draws at or above the teacher's value.

With ``--check`` each sampler also runs a family from the prior (warm-up: SNAPER 100 steps, units 5 sweeps; the same
draws) and the planted check compares it with the family at the teacher twice: by chain means everywhere (Welch,
``frozen_below=0``) and with its default error model, which judges an observable whose planted population is frozen
by a prediction interval; per observable it prints the model, the planted chains' within-chain sd over the prior
family's per-draw sd, the scatter of the planted chain means over that of independent draws, and both t against
their thresholds.

Run: ``python benchmarks/planted_population_draws.py [--width 100] [--temperature 0.001] [--chains 4]
[--draws 40] [--seed 0] [--check]`` (about half a minute on 2 CPU cores; with ``--check --chains 8 --draws 80``
about four minutes).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.diagnostics import planted_check
from bnnzoo.diagnostics.planted import FROZEN
from bnnzoo.tasks import planted_init, planted_task

PRIOR_WARMUP = {"snaper": 100, "units": 5}
"""The prior family's warm-up per sampler with ``--check`` (steps; sweeps for units)."""


def code_fractions(run, labels: np.ndarray, code: tuple[int, ...]) -> np.ndarray:
    """Per-draw fraction (chain, draw) of the units whose class-mean preactivation signs are ``code``."""
    z = azcompat.get_group(run, "posterior")["z1"].transpose("chain", "draw", "neuron", "point").values
    classes = np.unique(labels)
    A = (labels[:, None] == classes[None, :]).astype(float)
    bits = (z @ (A / A.sum(0))) > 0
    return np.all(bits == np.asarray(code, bool), axis=-1).mean(-1)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--width", type=int, default=100, help="N = P (default 100)")
    p.add_argument("--temperature", type=float, default=0.001, help="T of the teacher and the model (0.001)")
    p.add_argument("--chains", type=int, default=4, help="chains per sampler (4)")
    p.add_argument("--draws", type=int, default=40, help="kept draws (sweeps for units) per chain (40)")
    p.add_argument("--seed", type=int, default=0, help="teacher seed (0)")
    p.add_argument("--check", action="store_true",
                   help="also run a family from the prior per sampler and print the planted check both ways")
    args = p.parse_args(argv)
    N, C = args.width, args.chains
    entry = bnnzoo.get_entry("sigmoidal")
    base = entry.make_task(**dict(entry.task_defaults, P=N, N0=N + 20, y_neg=0.5))
    kw = dict(width=N, depth=1, temperature=args.temperature)
    task = planted_task(entry, base, seed=args.seed, **kw)
    labels = np.asarray(task.labels)
    print(f"sigmoidal net, N = P = {N}, T = {args.temperature}, teacher seed {args.seed}, {C} chains started at the "
          f"teacher, {args.draws} draws each; per-draw fraction of units on code 100")
    for sampler, warmup in (("snaper", 25), ("units", 0)):
        t0 = time.time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = bnnzoo.sample(entry, task, sampler=sampler, num_chains=C, num_warmup=warmup,
                                num_samples=args.draws, init=planted_init(task, C), seed=1, record=("z",),
                                progress=False, **kw)
        frac = code_fractions(run, labels, (1, 0, 0))
        print(f"\n{sampler} (warm-up {warmup}), {time.time() - t0:.0f} s")
        for d in sorted({0, 1, 2, 5, 10, args.draws - 1}):
            print(f"  draw {d:3d}: {np.round(frac[:, d], 3)}")
        print(f"  all draws: mean {frac.mean():.4f}, sd {frac.std(ddof=1):.4f}; chain means "
              f"{np.round(frac.mean(1), 4)}; first draw's mean {frac[:, 0].mean():.3f}; share of draws >= 0.178 "
              f"(the SNAPER planted family's mean in planted_truth_cpu_n100_T0.001): {np.mean(frac >= 0.178):.3f}")
        if args.check:
            check(entry, task, sampler, run, C, args.draws, kw)
    return 0


def check(entry, task, sampler: str, planted, C: int, draws: int, kw: dict) -> None:
    """Run a family from the prior and print the planted check against ``planted`` by chain means everywhere and
    with the default error model, observable by observable."""
    t0 = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prior = bnnzoo.sample(entry, task, sampler=sampler, num_chains=C, num_warmup=PRIOR_WARMUP[sampler],
                              num_samples=draws, seed=3, record=("z",), progress=False, **kw)
    welch = planted_check(planted, prior, entry, frozen_below=0.0)
    new = planted_check(planted, prior, entry)
    print(f"\n  {sampler} from the prior (warm-up {PRIOR_WARMUP[sampler]}), {time.time() - t0:.0f} s; planted check at "
          f"family-wise 1 %: chain means everywhere (Welch) {'reached' if welch.reached else 'NOT reached'} "
          f"({len(welch.differing)} differing); default error model {'reached' if new.reached else 'NOT reached'} "
          f"({len(new.differing)} differing, {len(new.frozen)} of {len(new.observables)} observables frozen)")
    print("  observable                 model                 sd ratio  scatter  planted           prior           "
          "|t| / threshold  Welch |t| / threshold")
    for k, o in new.observables.items():
        w = welch.observables[k]
        sp = o["spread"]
        print(f"  {k:26s} {'prediction interval' if o['model'] == FROZEN else 'chain means (Welch)':21s} "
              f"{sp['ratio']:8.2f}  {sp['planted_scatter']:7.1f}  {o['planted'][0]:.4g} ± {o['planted'][1]:.2g}  "
              f"{o['other'][0]:.4g} ± {o['other'][1]:.2g}  {abs(o['t']):5.2f} / {o['threshold']:.2f}     "
              f"{abs(w['t']):5.2f} / {w['threshold']:.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
