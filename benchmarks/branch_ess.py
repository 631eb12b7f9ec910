"""Why the readout ESS of the sigmoidal and ReLU nets is low under every sampler: readout entries frozen in branches.

    python benchmarks/branch_ess.py                      # sigmoidal net, NUTS, N = P = 100, 4 chains, 300 + 1000 (~2 min)
    python benchmarks/branch_ess.py --activation relu --sampler snaper

One run (the settings of bench_sampling's N = P = 100 rows), then per readout entry: bulk ESS over all chains,
rank-normalised split R̂, and the within-chain ESS (each chain's bulk ESS on its own, summed over the chains).
The neurons are clustered into readout branches (``bnnzoo.diagnostics.readout_branches``, one unit per neuron and
chain); a neuron whose units sit on one branch in every chain is "agreeing".  Chains start independently and
neurons are exchangeable, so with frozen branches (docs/theory.md §3) neuron i of one chain has no reason to share a
branch with neuron i of another: only the agreeing neurons can have a bulk ESS above a few per chain.

Writes ``benchmarks/results/branch_ess_<activation>_<sampler>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

from _bench import readout_mixing

HERE = Path(__file__).resolve().parent
NETS = {"linear": ("deep_linear", 0.0), "sigmoid": ("sigmoidal", 0.5), "relu": ("relu", -0.5)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--activation", default="sigmoid", choices=sorted(NETS))
    p.add_argument("--sampler", default="nuts")
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument("--samples", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="output stem (default benchmarks/results/branch_ess_<act>_<sampler>)")
    args = p.parse_args(argv)

    import numpy as np

    import bnnzoo
    from bnnzoo import azcompat
    from bnnzoo.diagnostics.branches import readout_branches

    warnings.simplefilter("ignore")
    entry, y_neg = NETS[args.activation]
    task = bnnzoo.toy_task(P=args.size, y_neg=y_neg, seed=0)
    t0 = time.perf_counter()
    idata = bnnzoo.sample(entry, task, width=args.size, temperature=0.01, num_chains=args.chains,
                          num_warmup=args.warmup, num_samples=args.samples, seed=args.seed, sampler=args.sampler,
                          record=("z1",), progress=False)
    wall = time.perf_counter() - t0
    a = azcompat.get_group(idata, "posterior")["a"].values                  # (chain, draw, neuron, class)
    C, D, N, m = a.shape
    bulk, rhat, within = readout_mixing(a)
    br = readout_branches(idata)
    lab = np.asarray(br.labels).reshape(C, N)
    agree = np.array([lab[0, i] >= 0 and np.all(lab[:, i] == lab[0, i]) for i in range(N)])
    out = dict(vars(args), wall_s=round(wall, 1), draws=C * D, n_branches=int(br.n_branches),
               branch_masses=[round(float(x), 3) for x in br.masses], n_outlier_units=int(br.outliers.n_outliers),
               n_units=C * N, rhat_frac=float(np.mean(rhat > 1.1)), ess_bulk_mean=float(bulk.mean()),
               ess_bulk_median=float(np.median(bulk)), ess_bulk_min=float(bulk.min()),
               ess_within_mean=float(within.mean()), ess_within_min=float(within.min()),
               n_agreeing=int(agree.sum()),
               ess_bulk_mean_agreeing=float(bulk[agree].mean()) if agree.any() else None,
               ess_bulk_mean_other=float(bulk[~agree].mean()) if (~agree).any() else None,
               ess_within_mean_agreeing=float(within[agree].mean()) if agree.any() else None,
               ess_within_mean_other=float(within[~agree].mean()) if (~agree).any() else None)
    stem = Path(args.out or HERE / "results" / f"branch_ess_{args.activation}_{args.sampler}")
    stem.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{stem}.json").write_text(json.dumps(out, indent=1))

    def f(x):
        return "—" if x is None else f"{x:.1f}" if abs(x) < 100 else f"{x:.0f}"

    md = [f"# Readout ESS and branches: {args.activation}, {args.sampler}", "",
          f"`python benchmarks/branch_ess.py --activation {args.activation} --sampler {args.sampler}` "
          f"(N = P = {args.size}, {C} chains, {args.warmup} + {args.samples} draws, seed {args.seed}, T = 0.01; "
          f"{wall:.0f} s on {__import__('os').cpu_count()} CPU cores).", "",
          f"- readout branches (BIC): {br.n_branches}, masses {out['branch_masses']}; outlier units "
          f"{out['n_outlier_units']} of {C * N}",
          f"- readout entries with R̂ > 1.1: {out['rhat_frac']:.2f}",
          f"- bulk ESS of {C * D} draws: mean {f(out['ess_bulk_mean'])}, median {f(out['ess_bulk_median'])}, "
          f"min {f(out['ess_bulk_min'])}",
          f"- within-chain ESS (summed over chains): mean {f(out['ess_within_mean'])}, min {f(out['ess_within_min'])}",
          f"- neurons on one branch in every chain: {out['n_agreeing']} of {N}; their bulk ESS mean "
          f"{f(out['ess_bulk_mean_agreeing'])} against {f(out['ess_bulk_mean_other'])} for the others (within-chain "
          f"{f(out['ess_within_mean_agreeing'])} against {f(out['ess_within_mean_other'])})", ""]
    Path(f"{stem}.md").write_text("\n".join(md))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
