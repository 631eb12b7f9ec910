"""What the pair rotations of sampler="units" buy on the ReLU net's outliers — side by side with the sampler
without them (same task, seed, start and sweeps).

    python benchmarks/units_pairs.py                                  # the defaults below (about 15 min on 2 cores)
    python benchmarks/units_pairs.py --runs relu:0,relu:0.5 --sweeps 10,20 --out /tmp/up

The ReLU net (y− = −½) carries each class on a few outlier units with large readouts and preactivations on top of a
bulk.  Within a chain the outliers' number per class barely changes: an outlier's conditional is narrow, so its tries,
own-readout step and local steps are mostly rejected, and a new outlier must grow out of the bulk.  Chains that started
with one outlier for a class keep one; chains with three keep three.  The pair rotations (``pairs`` per unit and
sweep, :mod:`bnnzoo.inference.units`) rotate two units' preactivation rows into each other, which splits one outlier
into two or merges two at little cost in the target.

Per run (``--runs`` net:pairs, comma-separated): acceptance of the unit moves and of the pair rotations, the largest R̂
and smallest bulk ESS of q_a over the classes, the largest R̂ of the code fractions held by at least 5 % of the units,
the outliers per class per draw (units whose readout norm exceeds N^{1/4} times the median over the units of that draw;
each outlier's class is its readout's largest entry): mean, the largest R̂ and smallest ESS over the classes, the
within-chain and between-chain sd; the number of kept sweeps in which a chain's outlier count per class changed; and
seconds per sweep (compilation excluded; the machine may be shared).

Nets: ``relu`` ReLU, y− = −½; ``sig_half`` sigmoidal, y− = ½; on the toy task, N = P = ``--size``, T = 0.01.

Writes ``benchmarks/results/units_pairs.md`` and ``.json`` (or ``--out`` stem), after every run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import arviz as az
import numpy as np

import bnnzoo
from bnnzoo.inference import units as U

HERE = Path(__file__).resolve().parent
NETS = {"relu": ("relu", -0.5), "sig_half": ("sigmoid", 0.5)}
DEFAULT_RUNS = "relu:0,relu:0.5,relu:2,sig_half:0,sig_half:0.5"


def codes_of(z, Y):
    """Codes (chain, draw, unit): bits of the class-mean signs of the preactivations z (chain, draw, N, P)."""
    lab = np.argmax(Y, axis=1)
    A = (lab[:, None] == np.arange(Y.shape[1])).astype(float)
    A /= A.sum(0)
    return np.sum((z @ A > 0) * (1 << np.arange(Y.shape[1])), axis=-1)


def outliers_per_class(a):
    """(chain, draw, class) counts of the outlier units per class: readout norm above N^{1/4} times the draw's
    median over the units, assigned to the class of the readout's largest entry."""
    N, m = a.shape[-2:]
    norm = np.linalg.norm(a, axis=-1)
    out = norm > N**0.25 * np.median(norm, axis=-1, keepdims=True)
    cls = np.argmax(a, axis=-1)
    return np.stack([np.sum(out & (cls == r), axis=-1) for r in range(m)], axis=-1)


def one(net, pairs, size, chains, warmup, samples, seed=0):
    """One run with ``pairs`` pair rotations per unit and sweep; its measurements as a dict."""
    activation, y_neg = NETS[net]
    task = bnnzoo.toy_task(P=size, y_neg=y_neg)
    out, st, info = U.units_chains(task.X, task.Y, num_chains=chains, num_warmup=warmup, num_samples=samples,
                                   seed=seed, width=size, activation=activation, temperature=0.01, pairs=pairs,
                                   tries=U.TRIES, own=U.OWN, local=U.LOCAL,
                                   record=("z",), exclude=("W1",))
    z = np.asarray(out["z1"], float)
    codes = codes_of(z, np.asarray(task.Y))
    fracs = {int(k): (codes == k).mean(-1) for k in np.unique(codes)}
    frequent = [f for f in fracs.values() if f.mean() >= 0.05]
    q = np.asarray(out["q_a"], float)
    no = outliers_per_class(np.asarray(out["a"], float)).astype(float)
    m = q.shape[-1]
    t = info["timing"]
    return dict(net=net, pairs=pairs, size=size, chains=chains, warmup=warmup, samples=samples, seed=seed,
                acceptance=float(np.mean(st["acceptance_rate"])),
                pair_acceptance=float(np.mean(st["pair_acceptance"])) if "pair_acceptance" in st else None,
                q_a_rhat_max=float(max(az.rhat(q[..., r]) for r in range(m))),
                q_a_ess_min=float(min(az.ess(q[..., r]) for r in range(m))),
                code_rhat_max=float(max(az.rhat(f) for f in frequent)),
                outliers_mean=[round(float(no[..., r].mean()), 3) for r in range(m)],
                outliers_chain_means=no.mean(1).round(2).tolist(),
                outliers_rhat_max=float(max(az.rhat(no[..., r]) for r in range(m))),
                outliers_ess_min=float(min(az.ess(no[..., r]) for r in range(m))),
                outliers_sd_within=float(no.std(1).mean()), outliers_sd_between=float(no.mean(1).std(0).mean()),
                outlier_count_changes=float(np.mean(np.any(np.diff(no, axis=1) != 0, axis=-1))),
                s_per_sweep=(t["warmup_s"] + t["sampling_s"]) / (warmup + samples))


def write(stem, args, rows, total):
    stem.with_suffix(".json").write_text(json.dumps(dict(args=vars(args), rows=rows, total_s=total), indent=1))
    md = ["# sampler='units': the pair rotations and the ReLU net's outliers\n",
          f"`python benchmarks/units_pairs.py --runs {args.runs} --size {args.size} --chains {args.chains} "
          f"--sweeps {args.sweeps}`\n",
          f"Machine: {os.cpu_count()} CPU cores ({platform.machine()}), load average at the end "
          f"{os.getloadavg()[0]:.1f}; total {total:.0f} s. Python {platform.python_version()}. "
          f"Toy task, T = 0.01, N = P = {args.size}, {args.chains} chains from the prior, seed {args.seed}, "
          f"{args.sweeps.replace(',', ' warm-up + ')} kept sweeps, every kept sweep recorded.\n",
          "| net | pairs per unit and sweep | acceptance (unit moves) | acceptance (pairs) | max R̂ of q_a | "
          "min ESS of q_a | max R̂ of code fractions ≥ 5 % | outliers per class (mean) | max R̂ of outliers per "
          "class | min ESS | sd within / between chains | sweeps with a count change | s per sweep |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        pa = "–" if r["pair_acceptance"] is None else f"{r['pair_acceptance']:.3f}"
        md.append(f"| {r['net']} | {r['pairs']:g} | {r['acceptance']:.3f} | {pa} | {r['q_a_rhat_max']:.3f} | "
                  f"{r['q_a_ess_min']:.0f} | {r['code_rhat_max']:.3f} | "
                  f"{' / '.join(f'{x:.2f}' for x in r['outliers_mean'])} | {r['outliers_rhat_max']:.2f} | "
                  f"{r['outliers_ess_min']:.0f} | {r['outliers_sd_within']:.2f} / {r['outliers_sd_between']:.2f} | "
                  f"{r['outlier_count_changes']:.3f} | {r['s_per_sweep']:.3f} |")
    stem.with_suffix(".md").write_text("\n".join(md) + "\n")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", default=DEFAULT_RUNS, help=f"net:pairs, comma-separated (nets: {', '.join(NETS)})")
    p.add_argument("--size", type=int, default=60, help="N = P")
    p.add_argument("--chains", type=int, default=8)
    p.add_argument("--sweeps", default="100,300", help="warm-up,kept sweeps")
    p.add_argument("--seed", type=int, default=0, help="the seed of every run (task, start and moves)")
    p.add_argument("--out", default=None, help="output stem (default benchmarks/results/units_pairs)")
    args = p.parse_args(argv)
    runs = [tuple(r.split(":")) for r in args.runs.split(",")]
    def number(x):
        try:
            return float(x) >= 0
        except ValueError:
            return False

    bad = [r for r in runs if len(r) != 2 or r[0] not in NETS or not number(r[1])]
    if bad:
        raise SystemExit(f"--runs: each run must be net:pairs (pairs a number >= 0) with net among "
                         f"{', '.join(NETS)}; got {bad}")
    warmup, samples = (int(x) for x in args.sweeps.split(","))
    stem = Path(args.out or HERE / "results" / "units_pairs")
    rows, t0 = [], time.time()
    for net, pairs in runs:
        rows.append(one(net, float(pairs), args.size, args.chains, warmup, samples, seed=args.seed))
        print(json.dumps(rows[-1]), flush=True)
        write(stem, args, rows, time.time() - t0)
    return rows


if __name__ == "__main__":
    main()
