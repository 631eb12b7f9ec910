"""What is slow in the ReLU net's populations under sampler="units": the outliers, per move and per chain.

    python benchmarks/units_relu_diagnose.py                       # N = P = 60, 8 chains, 100 + 300 sweeps, pairs 0
    python benchmarks/units_relu_diagnose.py --pairs 0.5 --out /tmp/diag_pairs

One run of the ReLU toy net (y− = −½, T = 0.01) with every kept sweep recorded.  To count the acceptances of each
kind of unit move (the independence tries, the own-readout step, the local steps) per unit and sweep, the script
drives the sampler's kernel itself (as ``units_budget.py`` does) with its sweep reporting them per unit
(``sweep(by_move="unit")``), and draws the readout at every kept sweep; seeds, starts and sweeps follow
:func:`bnnzoo.inference.units.units_chains`, so the draws are that function's with the same arguments.

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
import jax
import jax.numpy as jnp
import numpy as np

import bnnzoo
from bnnzoo.inference import units as U

from _bench import rhat_of, toy_kernel

HERE = Path(__file__).resolve().parent


def run(size, chains, warmup, samples, seed, pairs):
    """(z (chain, draw, N, P), a (chain, draw, N, m), q_a (chain, draw, m), accepted moves per unit and type (chain,
    draw, N, 3), the kernel's moves (tries, own, local)) of ``warmup`` + ``samples`` sweeps of the ReLU toy net from the
    prior, every kept sweep recorded, with the sampler's general moves (units.TRIES, OWN, LOCAL; not the ReLU net's
    defaults) and ``pairs`` pair rotations per unit and sweep."""
    task = bnnzoo.toy_task(P=size, y_neg=-0.5)
    with jax.enable_x64(True):
        kern = toy_kernel(task, "relu", tries=U.TRIES, own=U.OWN, local=U.LOCAL, pairs=pairs)
        key = jax.random.PRNGKey(seed)                                  # units_chains' seeds: start, then per sweep
        k_init, key = jax.random.split(key)
        H = kern.s[None, None, :] * jax.random.normal(k_init, (chains, kern.N, kern.P), jnp.float64)
        keys = lambda t: jax.random.split(jax.random.fold_in(key, t), chains)
        sweep = jax.jit(jax.vmap(lambda H, k: kern.sweep(H, k, by_move="unit")[:2]))
        readout = jax.jit(jax.vmap(lambda H, k: kern.draw(H, k)[0]))
        for t in range(warmup):
            H, _ = sweep(H, keys(2 * t))
        z, a, acc = [], [], []
        for d in range(samples):
            t = 2 * warmup + 2 * d
            H, acc_d = sweep(H, keys(t))
            a_d = readout(H, keys(t + 1))
            z.append(np.asarray(H, np.float32))
            a.append(np.asarray(a_d))
            acc.append(np.asarray(acc_d))
    a = np.stack(a, 1)
    qa = np.mean(a**2, axis=-2).astype(np.float32)
    return (np.stack(z, 1), a.astype(np.float32), qa, np.stack(acc, 1).astype(float),
            (kern.tries, int(kern.own), kern.local))


def diagnose(size, chains, warmup, samples, seed, pairs):
    t0 = time.time()
    z, a, qa, acc, per = run(size, chains, warmup, samples, seed, pairs)
    wall = time.time() - t0
    z, a, qa = (np.asarray(x, float) for x in (z, a, qa))
    N, m = a.shape[-2:]
    norm = np.linalg.norm(a, axis=-1)
    med = np.median(norm, axis=-1, keepdims=True)
    out_ = norm > N**0.25 * med
    cls = np.argmax(a, axis=-1)
    nout = np.stack([np.sum(out_ & (cls == r), axis=-1) for r in range(m)], -1).astype(float)
    zr = np.sqrt(np.mean(z**2, axis=-1))
    dz = np.sqrt(np.mean((z[:, 1:] - z[:, :-1]) ** 2, axis=-1))
    o1 = out_[:, :-1]
    per = np.array(per, float)
    a2 = a**2
    qo, qb = (a2 * out_[..., None]).sum(2) / N, (a2 * ~out_[..., None]).sum(2) / N
    L = [f"Per draw: bulk readout norm (median) {med.mean():.3f}, outliers' {norm[out_].mean():.2f}; preactivation rms "
         f"bulk (median) {np.median(zr):.2f}, outliers {zr[out_].mean():.2f}; an outlier stays one at the next sweep "
         f"with probability {np.sum(out_[:, 1:] & out_[:, :-1]) / np.sum(o1):.3f}.\n",
         "| class | outliers per draw, mean | chain means | R̂ | ESS | sd within chains | sd between chain means |",
         "|---|---|---|---|---|---|---|"]
    for r in range(m):
        x = nout[..., r]
        L.append(f"| {r} | {x.mean():.2f} | {' '.join(f'{v:.2f}' for v in x.mean(1))} | {rhat_of(x):.2f} | "
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
        L.append(f"| {r} | {rhat_of(qa[..., r]):.3f} | {az.ess(qa[..., r]):.0f} | "
                 f"{' '.join(f'{v:.3f}' for v in qa[..., r].mean(1))} | {rhat_of(qo[..., r]):.3f} | "
                 f"{az.ess(qo[..., r]):.0f} | {rhat_of(qb[..., r]):.3f} | {az.ess(qb[..., r]):.0f} |")
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
            f"sweeps (every one recorded), {U.TRIES} tries, own-readout step {'on' if U.OWN else 'off'}, "
            f"{U.LOCAL} local steps (the sampler's general moves), {args.pairs:g} pair rotations per unit and sweep.\n"]
    stem = Path(args.out or HERE / "results" / "units_relu_diagnose")
    Path(f"{stem}.md").write_text("\n".join(head + lines) + "\n")
    print("\n".join(head + lines))


if __name__ == "__main__":
    main()
