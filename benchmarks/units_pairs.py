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

import arviz as az
import numpy as np

import bnnzoo
from bnnzoo.inference import units as U

from _bench import (TOY_NETS, codes_of, parse_runs, rhat_of, run_specs, spec_header, spec_parser, sweeps_of,
                    toy_setting, write_result)

NETS = {k: TOY_NETS[k] for k in ("relu", "sig_half")}
DEFAULT_RUNS = "relu:0,relu:0.5,relu:2,sig_half:0,sig_half:0.5"


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
                q_a_rhat_max=float(max(rhat_of(q[..., r]) for r in range(m))),
                q_a_ess_min=float(min(az.ess(q[..., r]) for r in range(m))),
                code_rhat_max=float(max(rhat_of(f) for f in frequent)),
                outliers_mean=[round(float(no[..., r].mean()), 3) for r in range(m)],
                outliers_chain_means=no.mean(1).round(2).tolist(),
                outliers_rhat_max=float(max(rhat_of(no[..., r]) for r in range(m))),
                outliers_ess_min=float(min(az.ess(no[..., r]) for r in range(m))),
                outliers_sd_within=float(no.std(1).mean()), outliers_sd_between=float(no.mean(1).std(0).mean()),
                outlier_count_changes=float(np.mean(np.any(np.diff(no, axis=1) != 0, axis=-1))),
                s_per_sweep=(t["warmup_s"] + t["sampling_s"]) / (warmup + samples))


def write(stem, args, rows, total):
    md = spec_header("sampler='units': the pair rotations and the ReLU net's outliers", "units_pairs.py", args, total,
                     toy_setting(args) + ", every kept sweep recorded.") + [
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
    write_result(stem, args, rows, total, md)


def number(x) -> bool:
    """Whether ``x`` reads as a number >= 0."""
    try:
        return float(x) >= 0
    except ValueError:
        return False


def main(argv=None):
    p = spec_parser(__doc__, runs=DEFAULT_RUNS, runs_help=f"net:pairs, comma-separated (nets: {', '.join(NETS)})",
                    size=60, sweeps="100,300", out="units_pairs")
    args = p.parse_args(argv)
    runs = parse_runs(args.runs, lambda r: len(r) == 2 and r[0] in NETS and number(r[1]),
                      f"net:pairs (pairs a number >= 0) with net among {', '.join(NETS)}")
    warmup, samples = sweeps_of(args)
    return run_specs(runs, lambda net, pairs: one(net, float(pairs), args.size, args.chains, warmup, samples,
                                                  seed=args.seed), args, write)


if __name__ == "__main__":
    main()
