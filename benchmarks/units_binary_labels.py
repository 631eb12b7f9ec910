"""Does the unit-wise sampler mix Fig. 1's binary task faster when its proposal's codes use the task's two classes?
Side by side, the same seed and starts.

    python benchmarks/units_binary_labels.py                        # the defaults below
    python benchmarks/units_binary_labels.py --runs sig:one,sig:labels --size 30 --sweeps 20,40 --out /tmp/ubl

On a task with one output (m = 1) the classes of the unit-wise proposal's code mixture (:mod:`bnnzoo.inference.units`)
were one (argmax of Y): a unit's code was the sign of its mean preactivation, and the templates of the two codes
averaged the readouts of units that carry opposite classes.  With the task's labels (``labels=``, what
``bnnzoo.sample`` passes) the codes are the four of the two classes (10, 01, 11, 00), each with its own template.
Every move is Metropolis–Hastings-corrected against the full target either way; only the mixing may differ.

Per run (``--runs`` net:classes, net ``sig`` (sigmoidal) or ``relu``, classes ``one`` (labels=None) or ``labels``):
the binary task (N0 = P + 10, targets ±1, classes ½), T = 0.01, N = P = ``--size``, ``--chains`` chains from the
prior, ``--sweeps`` warm-up + kept sweeps, the sampler's default moves.  Measured over the kept sweeps: acceptance of
the unit moves; code changes per unit per sweep and persistent switches per unit (a unit's modal code over a window of
``--window`` sweeps differs from the window before), both with codes over the task's two classes (as
:mod:`bnnzoo.diagnostics.populations` reads them), whatever classes the proposal used; the largest R̂ and smallest
bulk ESS per chain and sweep of q_a and mse; the fraction of units on 10 and 01; seconds per sweep (compilation
excluded; the machine may be shared).

Writes ``benchmarks/results/units_binary_labels.md`` and ``.json`` (or ``--out`` stem), after every run.
"""

from __future__ import annotations

import numpy as np

import bnnzoo
from bnnzoo.diagnostics.codes import class_means, code_ids
from bnnzoo.inference import units as U

from _bench import (parse_runs, persistent_switches, readout_mixing, run_specs, spec_header, spec_parser, sweeps_of,
                    write_result)

NETS = {"sig": "sigmoid", "relu": "relu"}


def mixing(x):
    """(largest R̂, smallest bulk ESS) over the entries of draws x (chain, draw, ...)."""
    ess, rhat, _ = readout_mixing(np.asarray(x, float))
    return float(np.max(rhat)), float(np.min(ess))


def one(net, classes, size, chains, warmup, samples, seed, window):
    task = bnnzoo.tasks.binary_toy_task(P=size)
    labels = np.asarray(task.labels)
    out, st, info = U.units_chains(task.X, task.Y, num_chains=chains, num_warmup=warmup, num_samples=samples,
                                   seed=seed, width=size, activation=NETS[net], temperature=0.01, record=("z",),
                                   exclude=("W1",), labels=labels if classes == "labels" else None)
    codes = code_ids(class_means(np.asarray(out["z1"], float), labels, 2))    # (chain, draw, unit), over the 2 classes
    q_rhat, q_ess = mixing(out["q_a"])
    m_rhat, m_ess = mixing(np.asarray(out["mse"])[..., None])
    t = info["timing"]
    per = chains * samples
    return dict(net=net, classes=classes, proposal_classes=info["kernel"]["classes"],
                components=info["kernel"]["components"], size=size, chains=chains, warmup=warmup,
                samples=samples, seed=seed, window=window,
                acceptance=float(np.mean(st["acceptance_rate"])),
                code_changes_per_unit_sweep=float(np.mean(codes[:, 1:] != codes[:, :-1])),
                persistent_switches_per_unit=float(persistent_switches(codes, window)[0].mean()),
                q_a_rhat_max=q_rhat, q_a_ess_per_chain_sweep=q_ess / per,
                mse_rhat=m_rhat, mse_ess_per_chain_sweep=m_ess / per,
                on_10=float((codes == 1).mean()), on_01=float((codes == 2).mean()),
                s_per_sweep=(t["warmup_s"] + t["sampling_s"]) / (warmup + samples))


def write(stem, args, rows, total):
    warmup, samples = sweeps_of(args)
    setting = (f"Binary task (m = 1, targets ±1), T = 0.01, N = P = {args.size}, {args.chains} chains from the prior, "
               f"seed {args.seed}, {warmup} warm-up + {samples} kept sweeps, windows of {args.window} sweeps.")
    md = spec_header("sampler='units' on a one-output task: the proposal's codes over one class or the task's two",
                     "units_binary_labels.py", args, total, setting, extra=f" --window {args.window}") + [
        "| net | proposal classes (components) | acceptance | code changes per unit per sweep | persistent switches "
        "per unit | max R̂ of q_a | ESS of q_a per chain and sweep | R̂ of mse | ESS of mse per chain and sweep | "
        "on 10 / 01 | s per sweep |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['net']} | {r['proposal_classes']} ({r['components']}) | {r['acceptance']:.3f} | "
                  f"{r['code_changes_per_unit_sweep']:.4f} | {r['persistent_switches_per_unit']:.2f} | "
                  f"{r['q_a_rhat_max']:.3f} | {r['q_a_ess_per_chain_sweep']:.3f} | {r['mse_rhat']:.3f} | "
                  f"{r['mse_ess_per_chain_sweep']:.3f} | {r['on_10']:.3f} / {r['on_01']:.3f} | "
                  f"{r['s_per_sweep']:.4f} |")
    write_result(stem, args, rows, total, md)


def main(argv=None):
    p = spec_parser(__doc__, runs="sig:one,sig:labels,relu:one,relu:labels",
                    runs_help="net:classes (net sig or relu; classes one or labels), comma-separated", size=60,
                    sweeps="100,300", out="units_binary_labels")
    p.add_argument("--window", type=int, default=20, help="sweeps per window of the persistent switches")
    args = p.parse_args(argv)
    runs = parse_runs(args.runs, lambda r: len(r) == 2 and r[0] in NETS and r[1] in ("one", "labels"),
                      "net:classes with net sig or relu and classes one or labels")
    warmup, samples = sweeps_of(args)
    return run_specs(runs, lambda net, classes: one(net, classes, args.size, args.chains, warmup, samples,
                                                    args.seed, args.window), args, write)


if __name__ == "__main__":
    main()
