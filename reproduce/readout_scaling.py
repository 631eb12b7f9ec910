"""Readout size against the number of training points P under the σ_a² rule (theory page §2): with the non-lazy
readout and σ_a² = 1/P^{1/L} (linear, ReLU) or 1/P (sigmoidal), the readout does not grow with P.

One hidden layer on the toy task (orthogonal inputs, N0 = P + 20, classes 1/2, 1/4, 1/4), the width N fixed and P
swept, T = 0.01, 4 SNAPER chains from prior draws.  Per (net, P): the readout norm q_a = tr(U)/m with U = aᵀa/N
(posterior mean per chain, mean ± s.e. over chains), the bulk readout (median over units of a unit's RMS |a|; in the
ReLU net a few outliers of order √N dominate q_a) and the sampler health.  Per net: the log–log slopes of q_a and of
the bulk readout in P (the rule: 0).  The linear net is also compared with the exact N → ∞ saddle point
(``bnnzoo.theory.linear_saddle_point``) at every P, and a control (``linear_fixed``) keeps σ_a² at the rule's value
for the smallest P, where the saddle point's U grows with P.

Nets (``--nets``): ``linear`` (y− = 0), ``sigmoidal`` (y− = ½), ``relu`` (y− = −½), ``linear_fixed``.
Sizes: ``ci`` N = 10, P ∈ {10, 20}; ``cpu`` N = 60, P ∈ {30, 60, 120, 240}; ``paper`` N = 200, P ∈ {50 … 800}.

Run: ``python -m reproduce readout_scaling --size ci|cpu|paper [--nets linear,sigmoidal] [--overwrite]``.
"""

from __future__ import annotations

import numpy as np

from . import _common as C

NAME = "readout_scaling"
CLAIMS = ("A1",)
NETS = {  # net -> zoo entry, y−, σ_a² rule ("rule": the zoo's default at each P; "fixed": the rule at the smallest P)
    "linear": ("deep_linear", 0.0, "rule"),
    "sigmoidal": ("sigmoidal", 0.5, "rule"),
    "relu": ("relu", -0.5, "rule"),
    "linear_fixed": ("deep_linear", 0.0, "fixed"),
}
SIZES = {
    "ci": dict(N=10, P=(10, 20), warmup=100, relu_warmup=100, samples=100),
    "cpu": dict(N=60, P=(30, 60, 120, 240), warmup=500, relu_warmup=1500, samples=300),
    "paper": dict(N=200, P=(50, 100, 200, 400, 800), warmup=1000, relu_warmup=3000, samples=500),
}


def readout_sizes(a: np.ndarray) -> dict:
    """q_a = tr(aᵀa)/(N m) per chain (mean over draws) and the bulk readout (median over units of the unit's RMS |a|
    over draws and classes) per chain, from readout draws ``a`` (chain, draw, neuron, class)."""
    a = np.asarray(a, float)
    q = np.mean(np.sum(a ** 2, axis=(2, 3)), axis=1) / (a.shape[2] * a.shape[3])
    bulk = np.median(np.sqrt(np.mean(a ** 2, axis=(1, 3))), axis=1)
    return dict(q_a_chains=q.tolist(), bulk_chains=bulk.tolist())


def entry(net: str, P: int, s: dict, args) -> dict:
    import bnnzoo
    from bnnzoo.models.fcn import default_sigma_a2

    name, y_neg, rule = NETS[net]
    act = bnnzoo.get_entry(name).defaults["activation"]
    sa2 = default_sigma_a2(act, "nonlazy", P if rule == "rule" else min(s["P"]), 1)
    warm = s["relu_warmup"] if net == "relu" else s["warmup"]
    run, task, dt = C.sample_toy(name, N=s["N"], P=P, y_neg=y_neg, warmup=warm, samples=s["samples"], seed=args.seed,
                                 progress=args.progress, sigma_a2=sa2)
    rd = C.run_data_of(run)
    e = dict(P=P, sigma_a2=sa2, sigma_a2_rule=rule, warmup=warm, seconds=round(dt, 1),
             health=C.health_summary(run), **readout_sizes(rd.a))
    e["q_a"], e["q_a_se"] = C.mean_se(e["q_a_chains"])
    e["bulk"], e["bulk_se"] = C.mean_se(e["bulk_chains"])
    if name == "deep_linear":
        chk = C.linear_U_check(rd, task)
        e.update(q_a_theory=float(np.trace(np.asarray(chk["U_theory"]))) / task.Y.shape[1],
                 U_relative_error=chk["U_relative_error"], U_relative_error_se=chk["U_relative_error_se"])
    return e


def analyse(results: dict) -> dict:
    out = {}
    for net, entries in results.items():
        Ps = [e["P"] for e in entries]
        out[net] = dict(zip(("slope_q_a", "slope_q_a_se"), C.loglog_slope(Ps, [e["q_a"] for e in entries])))
        out[net].update(zip(("slope_bulk", "slope_bulk_se"), C.loglog_slope(Ps, [e["bulk"] for e in entries])))
        if entries and "q_a_theory" in entries[0]:
            out[net]["slope_theory"] = C.loglog_slope(Ps, [e["q_a_theory"] for e in entries])[0]
    return out


def run(argv=None) -> int:
    argv = [] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--nets", default=",".join(NETS), help=f"comma-separated, some of {', '.join(NETS)} (default all)")
    args = p.parse_args(argv)
    C.check_args(args)
    nets = C.name_list(args.nets, "--nets", NETS)
    s = SIZES[args.size]
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)
    summary = dict(provenance=C.provenance(args, argv), settings=s, results={n: [] for n in nets}, analysis={})
    for net in nets:
        for P in s["P"]:
            C.log(f"{NAME}: {net}, N = {s['N']}, P = {P}")
            e = entry(net, P, s, args)
            summary["results"][net].append(e)
            summary["analysis"] = analyse(summary["results"])
            files.write(summary)
            C.log(f"{NAME}: {net} P = {P}: q_a {C.fmt(e['q_a'], e['q_a_se'])}, bulk {C.fmt(e['bulk'])}, "
                  f"health {e['health']['status']} ({e['seconds']} s)")
    C.log(f"{NAME}: wrote {files.json}")
    return 0
