"""What is slow in the ReLU net's populations under sampler="units": the outliers, per move and per chain.

    python benchmarks/units_relu_diagnose.py                       # N = P = 60, 8 chains, 100 + 300 sweeps, pairs 0
    python benchmarks/units_relu_diagnose.py --pairs 0.5 --out /tmp/diag_pairs

One run of the ReLU toy net (y− = −½, T = 0.01) with every kept sweep recorded.  To count the acceptances of each
kind of unit move (the independence tries, the own-readout step, the local steps) per unit and sweep, the script
runs the sampler with its kernel's sweep reporting them per unit (``sweep(by_move="unit")``; the draws are the
sampler's own).

Per draw a unit is an outlier when its readout norm exceeds N^{1/4} times the median over the units of that draw
(:func:`bnnzoo.diagnostics.find_outliers` applies the same factor to scales averaged over draws); its class is its
readout's largest entry.  Measured: outliers per class per draw (chain means, R̂, ESS, sd within and between chains);
acceptance of each move kind for outlier and bulk units; the rms change of a unit's preactivations per sweep; how
often an outlier stays one; q_a's per-chain means next to the outlier counts; q_a split into the outliers' and the
bulk's part (R̂, ESS).

Writes ``benchmarks/results/units_relu_diagnose.md`` (or ``--out`` stem + ``.md``).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import arviz as az
import jax.numpy as jnp
import numpy as np

import bnnzoo
from bnnzoo.inference import units as U

HERE = Path(__file__).resolve().parent

class _Counting(U._Kernel):
    """The sampler's kernel with its sweep's acceptance reported per unit and move type (N, 3): the accepted
    (tries, own-readout step, local steps) of each unit in that sweep; the draws are the sampler's own."""

    def sweep(self, H, key, by_move="unit"):
        return super().sweep(H, key, by_move="unit")


def diagnose(size, chains, warmup, samples, seed, pairs):
    task = bnnzoo.toy_task(P=size, y_neg=-0.5)
    plain, U._Kernel = U._Kernel, _Counting
    try:
        t0 = time.time()
        out, st, info = U.units_chains(task.X, task.Y, num_chains=chains, num_warmup=warmup, num_samples=samples,
                                       seed=seed, width=size, activation="relu", temperature=0.01, pairs=pairs,
                                       tries=U.TRIES, own=U.OWN, local=U.LOCAL,
                                       record=("z",), exclude=("W1",))
        wall = time.time() - t0
    finally:
        U._Kernel = plain
    z, a, qa = (np.asarray(out[k], float) for k in ("z1", "a", "q_a"))
    acc = np.asarray(st["acceptance_rate"], float)                   # (chain, draw, unit, 3) counts
    N, m = a.shape[-2:]
    norm = np.linalg.norm(a, axis=-1)
    med = np.median(norm, axis=-1, keepdims=True)
    out_ = norm > N**0.25 * med
    cls = np.argmax(a, axis=-1)
    nout = np.stack([np.sum(out_ & (cls == r), axis=-1) for r in range(m)], -1).astype(float)
    zr = np.sqrt(np.mean(z**2, axis=-1))
    dz = np.sqrt(np.mean((z[:, 1:] - z[:, :-1]) ** 2, axis=-1))
    o1 = out_[:, :-1]
    per = np.array([info["kernel"]["tries"], int(info["kernel"]["own"]), info["kernel"]["local"]], float)
    a2 = a**2
    qo, qb = (a2 * out_[..., None]).sum(2) / N, (a2 * ~out_[..., None]).sum(2) / N
    L = [f"Per draw: bulk readout norm (median) {med.mean():.3f}, outliers' {norm[out_].mean():.2f}; preactivation rms "
         f"bulk (median) {np.median(zr):.2f}, outliers {zr[out_].mean():.2f}; an outlier stays one at the next sweep "
         f"with probability {np.sum(out_[:, 1:] & out_[:, :-1]) / np.sum(o1):.3f}.\n",
         "| class | outliers per draw, mean | chain means | R̂ | ESS | sd within chains | sd between chain means |",
         "|---|---|---|---|---|---|---|"]
    for r in range(m):
        x = nout[..., r]
        L.append(f"| {r} | {x.mean():.2f} | {' '.join(f'{v:.2f}' for v in x.mean(1))} | {az.rhat(x):.2f} | "
                 f"{az.ess(x):.0f} | {x.std(1).mean():.2f} | {x.mean(1).std():.2f} |")
    L += ["", "| units | draws × units | tries accepted (of " f"{per[0]:.0f}) | own-readout step | local steps (of "
          f"{per[2]:.0f}) | rms change of h per sweep | the same / rms h |", "|---|---|---|---|---|---|---|"]
    for name, mask in (("outliers", out_), ("bulk", ~out_)):
        r = acc[mask].mean(0) / np.where(per > 0, per, 1)
        mk = mask[:, :-1]
        L.append(f"| {name} | {int(mask.sum())} | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} | {dz[mk].mean():.3f} | "
                 f"{(dz[mk] / zr[:, :-1][mk]).mean():.3f} |")
    L += ["", "| class | q_a: R̂ | ESS | chain means | outliers' part: R̂ | ESS | bulk part: R̂ | ESS |",
          "|---|---|---|---|---|---|---|---|"]
    for r in range(m):
        L.append(f"| {r} | {az.rhat(qa[..., r]):.3f} | {az.ess(qa[..., r]):.0f} | "
                 f"{' '.join(f'{v:.3f}' for v in qa[..., r].mean(1))} | {az.rhat(qo[..., r]):.3f} | "
                 f"{az.ess(qo[..., r]):.0f} | {az.rhat(qb[..., r]):.3f} | {az.ess(qb[..., r]):.0f} |")
    return L, wall


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=60, help="N = P")
    p.add_argument("--chains", type=int, default=8)
    p.add_argument("--sweeps", default="100,300", help="warm-up,kept sweeps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pairs", type=float, default=0.0, help="pair rotations per unit and sweep")
    p.add_argument("--out", default=None, help="output stem (default benchmarks/results/units_relu_diagnose)")
    args = p.parse_args(argv)
    warmup, samples = (int(x) for x in args.sweeps.split(","))
    lines, wall = diagnose(args.size, args.chains, warmup, samples, args.seed, args.pairs)
    head = ["# sampler='units': what is slow in the ReLU net (outliers)\n",
            f"`python benchmarks/units_relu_diagnose.py --size {args.size} --chains {args.chains} --sweeps "
            f"{args.sweeps} --seed {args.seed} --pairs {args.pairs:g}`\n",
            f"Machine: {os.cpu_count()} CPU cores ({platform.machine()}), load average at the end "
            f"{os.getloadavg()[0]:.1f}; {wall:.0f} s. Python {platform.python_version()}. ReLU toy net, y− = −½, "
            f"T = 0.01, N = P = {args.size}, {args.chains} chains from the prior, {warmup} warm-up + {samples} kept "
            f"sweeps (every one recorded), default moves, {args.pairs:g} pair rotations per unit and sweep.\n"]
    stem = Path(args.out or HERE / "results" / "units_relu_diagnose")
    stem.with_suffix(".md").write_text("\n".join(head + lines) + "\n")
    print("\n".join(head + lines))


if __name__ == "__main__":
    main()
