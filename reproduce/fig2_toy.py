"""The paper's Fig. 2 setting (theory page §2–§3): one-hidden-layer linear, sigmoidal and ReLU nets on the toy task.

* Linear (y+ / y− = 1 / 0): the readout second moment U = aᵀa/N against the exact saddle point of the linear theory
  (``bnnzoo.theory.linear.linear_saddle_point``, N → ∞ at the run's T), and ergodicity of the readout (the ratio of a
  neuron's time variance to the pooled variance: 1 when every neuron explores the whole marginal).
* Sigmoidal (1 / ½): fraction of units per code against the single-neuron mean-field branch masses, readout branches
  (BIC), frozen codes and broken ergodicity.
* ReLU (1 / −½): outlier count per chain (theory: at least m − 1, on the toy task one per class) and the outliers'
  readout and preactivation sizes against the bulk (theory: ratio of order √N).

Every net records the sampler health and the R̂ across chains of its permutation-invariant observables.

Sizes: ``ci`` N = P = 20; ``cpu`` N = P = 100; ``paper`` the paper's Fig. 2, N = P = 500 (linear 200), N0 = N + 20.
Run: ``python reproduce/fig2_toy.py --size ci|cpu|paper [--nets linear,sigmoidal,relu] [--overwrite]``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

PROG = "fig2_toy.py"
NETS = ("linear", "sigmoidal", "relu")
ENTRY = {"linear": "deep_linear", "sigmoidal": "sigmoidal", "relu": "relu"}
Y_NEG = {"linear": 0.0, "sigmoidal": 0.5, "relu": -0.5}
# per size and net: N = P, warm-up, kept draws; thinning of the recorded preactivations
SETTINGS = {
    "ci": dict(N={"linear": 20, "sigmoidal": 20, "relu": 20}, warmup={"linear": 150, "sigmoidal": 150, "relu": 200},
               samples=100, thin_z=1),
    "cpu": dict(N={"linear": 100, "sigmoidal": 100, "relu": 100},
                warmup={"linear": 500, "sigmoidal": 500, "relu": 2000}, samples=500, thin_z=1),
    "paper": dict(N={"linear": 200, "sigmoidal": 500, "relu": 500},
                  warmup={"linear": 1000, "sigmoidal": 1000, "relu": 3000}, samples=500, thin_z=5),
}


def ergodicity_ratio(rd) -> dict:
    """Readout ergodicity (:func:`bnnzoo.diagnostics.ergodicity.ergodicity` on a): ratio, s.e., verdict."""
    from bnnzoo.diagnostics.ergodicity import ergodicity

    e = ergodicity(rd.a, "a", n_boot=50)
    return dict(ratio=e.ratio, ratio_se=e.ratio_se, verdict=e.verdict)


def net_entry(net: str, s: dict, args) -> dict:
    N = s["N"][net]
    run, task, dt = C.sample_toy(ENTRY[net], N=N, P=N, y_neg=Y_NEG[net], warmup=s["warmup"][net],
                                 samples=s["samples"], seed=args.seed, thin_z=s["thin_z"], progress=args.progress)
    rd = C.run_data_of(run)
    e = dict(net=net, N=N, P=N, N0=N + 20, y_neg=Y_NEG[net], warmup=s["warmup"][net], samples=s["samples"],
             seconds=round(dt, 1), sigma_a2=rd.sigma_a2, temperature=rd.temperature,
             health=C.health_summary(run), ergodicity=ergodicity_ratio(rd), codes=C.code_summary(rd))
    if net == "linear":
        e.update(C.linear_U_check(rd, task))
    elif net == "sigmoidal":
        from bnnzoo.theory.meanfield import single_neuron_meanfield

        th = single_neuron_meanfield(task.X, task.Y, labels=task.labels, nonlinearity="sigmoid",
                                     temperature=rd.temperature, sigma_a2=rd.sigma_a2)
        mf = {str(c): float(p) for c, p in zip(th.branch_code, th.branch_mass)}
        fr = e["codes"]["fraction"]
        e.update(meanfield_mass=mf, branches=C.branch_summary(rd),
                 tv_to_meanfield=0.5 * sum(abs(fr.get(c, 0.0) - mf.get(c, 0.0)) for c in set(mf) | set(fr)))
    else:
        o = C.outlier_summary(rd)
        e.update(outliers=o, readout_ratio=(float(np.median(o["readout"]) / o["bulk_readout"])
                                            if o["readout"] else float("nan")),
                 preactivation_ratio=(float(np.median(o["preactivation"]) / o["bulk_preactivation"])
                                      if o["preactivation"] else float("nan")),
                 sqrt_N=math.sqrt(N))
    return e


def markdown(summary: dict) -> str:
    lines = [C.header("Fig. 2 setting: linear, sigmoidal and ReLU nets on the toy task", summary["provenance"]),
             "Toy task (orthogonal inputs, classes 1/2, 1/4, 1/4, m = 3), one hidden layer, N = P, N0 = N + 20, "
             "T = 0.01; written by `reproduce/fig2_toy.py` (stores summaries, not draws).\n",
             "| net | N = P | warm-up + draws | health | max R̂ (invariant obs.) | readout ergodicity ratio | codes | "
             "result | theory | seconds |", "|---|---|---|---|---|---|---|---|---|---|"]
    for e in summary["nets"]:
        h, er = e["health"], e["ergodicity"]
        if e["net"] == "linear":
            res = f"U (Frobenius) rel. error {C.fmt(e['U_relative_error'], e['U_relative_error_se'])}"
            theo = "U of the saddle point (N → ∞)"
        elif e["net"] == "sigmoidal":
            fr, se = e["codes"]["fraction"], e["codes"]["fraction_se"]
            res = "codes " + ", ".join(f"{c} {C.fmt(fr[c], se[c])}" for c in sorted(fr, key=lambda c: -fr[c]))
            res += f" (TV to mean field {C.fmt(e['tv_to_meanfield'])})"
            theo = "mean field " + ", ".join(f"{c} {C.fmt(p)}" for c, p in e["meanfield_mass"].items())
        else:
            o = e["outliers"]
            res = (f"outliers per chain {o['per_chain']}, one per class: {o['one_per_class']}; outlier/bulk "
                   f"readout {C.fmt(e['readout_ratio'])}, preactivation {C.fmt(e['preactivation_ratio'])}")
            theo = f"≥ m − 1 = 2 (one per class); size ratio O(√N) = O({C.fmt(e['sqrt_N'])})"
        lines.append(f"| {e['net']} | {e['N']} | {e['warmup']} + {e['samples']} | {h['status']} | "
                     f"{C.fmt(h['max_rhat'])} | {C.fmt(er['ratio'], er['ratio_se'])} ({er['verdict']}) | "
                     f"{e['codes']['verdict']} | {res} | {theo} | {e['seconds']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = C.parser(PROG, __doc__.split("\n\n")[0])
    p.add_argument("--nets", default=",".join(NETS), help="comma-separated: linear, sigmoidal, relu (default all)")
    args = p.parse_args(argv)
    C.check_args(args)
    nets = [x.strip() for x in args.nets.split(",") if x.strip()]
    bad = sorted(set(nets) - set(NETS))
    if bad or not nets:
        raise ValueError(f"--nets must name some of {', '.join(NETS)}, got {args.nets!r}")
    files = C.ResultFiles(args.out, args.name or f"fig2_toy_{args.size}", args.overwrite)
    s = SETTINGS[args.size]
    summary = dict(provenance=C.provenance(args, argv), settings=s, nets=[])
    for i, net in enumerate(nets):
        C.log(f"{PROG}: [{i + 1}/{len(nets)}] {net}, N = P = {s['N'][net]}")
        e = net_entry(net, s, args)
        summary["nets"].append(e)
        files.write(summary, markdown(summary))
        C.log(f"{PROG}: {net} done in {e['seconds']} s: health {e['health']['status']}")
    C.log(f"{PROG}: wrote {files.json} and {files.md}")
    return 0


if __name__ == "__main__":
    sys.exit(C.run_main(PROG, main))
