"""Softmax attention: how the token dimension d enters the sample complexity P* (theory page §8; Rubin, Davidovich &
Ringel report P* ∝ √(L d³), so at a fixed context length L the log–log slope of P* in d is 3/2).

The model, target and search are those of the ``attention_context`` experiment (zoo entry ``softmax_attention``,
H = 2 heads, key dimension d_h = d, standard readout, score scale β = 1; target
y = q Σ_ℓ (k_ℓ − k̄)(v_ℓ − v̄)/√(L − 1)), with d swept at one L instead of L at one d.  Per (seed, d): A_f of the posterior-mean predictor on a test set on a ladder of
P, searched in strides from a start point until A_f crosses 0.25 (start: the previous seed's P* at that d), then
refined halfway between the bracketing points; P*(0.25) by log-linear interpolation between the bracketing points.
Per seed, the least-squares slope of log P* on log d over the d with a crossing (at least 3), and over the larger half
of the d values (when that holds 3: the law is asymptotic in d); their means ± s.e. over seeds against 3/2.  Every
entry: 4 chains from prior draws (sampler "auto" = ChEES for this entry), the sampler health (status, R̂ of the
training error, the readout norm and the outputs) stored next to A_f.

Near P* the posterior of this head has a learned and an unlearned state, and chains with a short warm-up stay in the
one they found, so the cpu size warms up for 1000 steps.

Run: ``python -m reproduce attention_dim --size ci|cpu|paper [--d 4,6,8,12,16] [--L 4] [--seeds 0,1,2]
[--warmup W] [--samples S] [--seed 0] [--resume] [--overwrite]``.  ``--seeds`` draws the tasks; an entry's sampler
seed is its task seed plus ``--seed``.  ``--resume`` continues a stopped run from its JSON file (same warm-up, draws,
test contexts, κ and L), reusing the entries it already holds.
"""

from __future__ import annotations

import math

from . import _common as C
from . import attention_context as AC

NAME = "attention_dim"
CLAIMS = ("C7",)
LEVEL = AC.LEVEL
THEORY_SLOPE = 1.5
ENTRY_KEYS = ("L", "warmup", "samples", "P_test", "kappa")
# per size: token dimensions, context length, seeds, the P ladder (P ≈ 8·2^(k/2)) and search stride, the start P per
# d (P* grows with d), the most evaluations per curve, warm-up and kept draws, test contexts, ridge κ
SIZES = {
    "ci": dict(d=(3, 4, 6), L=4, seeds=(0,), ladder=(16,), stride=1, start={}, max_evals=1, warmup=30, samples=20,
               P_test=100, kappa=0.05),
    "cpu": dict(d=(4, 6, 8, 12, 16), L=4, seeds=(0, 1, 2),
                ladder=(8, 11, 16, 23, 32, 45, 64, 91, 128, 181, 256, 362, 512), stride=2,
                start={4: 32, 6: 45, 8: 64, 12: 128, 16: 181}, max_evals=5, warmup=1000, samples=200, P_test=500,
                kappa=0.05),
    "paper": dict(d=(4, 8, 16, 32), L=8, seeds=(0, 1, 2, 3, 4),
                  ladder=(16, 23, 32, 45, 64, 91, 128, 181, 256, 362, 512, 724, 1024, 1448, 2048), stride=2,
                  start={4: 45, 8: 91, 16: 256, 32: 724}, max_evals=6, warmup=1000, samples=500, P_test=2000,
                  kappa=0.05),
}


def analyse(summary: dict) -> dict:
    """P* per (seed, d), the slope of log P* in log d per seed, its mean ± s.e. over seeds, P* per d over seeds;
    ``slope_z`` = (mean slope − 3/2)/s.e. and ``theory_holds`` (|z| ≤ 2; None without a slope or its s.e.);
    ``health_counts``: entries per sampler-health status."""
    s = summary["settings"]
    curves = {}
    for e in summary["entries"]:
        curves.setdefault((e["seed"], e["d"]), {})[e["P"]] = e["A"]
    pstar = {}
    for (seed, d), ev in curves.items():
        p, flag = AC.crossing(list(ev), list(ev.values()))
        pstar.setdefault(seed, {})[d] = dict(P_star=p, flag=flag)
    # the law is asymptotic in d: the slope over the upper half of the d values (at least 3) shows any curvature
    n_d = len(s["d"])
    upper = list(sorted(s["d"])[n_d // 2:]) if n_d - n_d // 2 >= 3 else []
    per_seed = {}
    for seed, byd in sorted(pstar.items()):
        ds = [d for d in sorted(byd) if byd[d]["flag"] == ""]
        b, se = C.loglog_slope(ds, [byd[d]["P_star"] for d in ds]) if len(ds) >= 3 else (None, None)
        du = [d for d in ds if d in upper]
        bu = C.loglog_slope(du, [byd[d]["P_star"] for d in du])[0] if len(du) >= 3 else None
        per_seed[seed] = dict(slope=b, slope_fit_se=se, d_used=ds, slope_upper=bu)
    m, se = C.mean_se([r["slope"] for r in per_seed.values()])
    mu, seu = C.mean_se([r["slope_upper"] for r in per_seed.values()])
    by_d = {}
    for d in s["d"]:
        logs = [math.log(pstar[sd][d]["P_star"]) for sd in pstar if d in pstar[sd] and pstar[sd][d]["flag"] == ""]
        lm, lse = C.mean_se(logs)
        st = [e["health"]["status"] for e in summary["entries"] if e["d"] == d]
        by_d[d] = dict(log_P_star=lm, log_P_star_se=lse, n_seeds=len(logs),
                       P_star_geo=math.exp(lm) if lm is not None else None, n_entries=len(st),
                       n_equilibrated=st.count("equilibrated"))
    geo = [(d, b["P_star_geo"]) for d, b in by_d.items() if b["P_star_geo"] is not None]
    pooled = C.loglog_slope([g[0] for g in geo], [g[1] for g in geo]) if len(geo) >= 3 else (None, None)
    z = (m - THEORY_SLOPE) / se if m is not None and se else None
    health = [e["health"]["status"] for e in summary["entries"]]
    return dict(P_star=pstar, per_seed=per_seed, slope_mean=m, slope_se=se, upper_d=upper, slope_upper_mean=mu,
                slope_upper_se=seu,
                n_seeds=sum(r["slope"] is not None for r in per_seed.values()), by_d=by_d,
                slope_of_geometric_means=pooled[0], slope_of_geometric_means_fit_se=pooled[1],
                theory_slope=THEORY_SLOPE, slope_z=z, theory_holds=bool(abs(z) <= 2) if z is not None else None,
                health_counts={h: health.count(h) for h in sorted(set(health))})


def run(argv=None) -> int:
    argv = [] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--d", default=None, help="comma-separated token dimensions >= 2 (default per size)")
    p.add_argument("--L", type=int, default=None, help="context length >= 2 (default per size)")
    p.add_argument("--seeds", default=None, help="comma-separated task seeds >= 0 (default per size); the sampler's "
                                                  "seed of an entry is its task seed + --seed")
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps (default per size)")
    p.add_argument("--samples", type=int, default=None, help="kept draws per chain (default per size)")
    p.add_argument("--resume", action="store_true", help="continue a stopped run from its JSON file")
    args = p.parse_args(argv)
    C.check_args(args)
    s = dict(SIZES[args.size])
    if args.d is not None:
        s["d"] = C.int_list(args.d, "--d", 2)
    if args.seeds is not None:
        s["seeds"] = C.int_list(args.seeds, "--seeds", 0)
    for name, lo in (("warmup", 0), ("samples", 1)):
        v = getattr(args, name)
        if v is not None:
            if v < lo:
                raise ValueError(f"--{name} must be >= {lo}, got {v}")
            s[name] = v
    if args.L is not None:
        if args.L < 2:
            raise ValueError(f"--L must be >= 2, got {args.L}")
        s["L"] = args.L
    stem = args.name or f"{NAME}_{args.size}"
    old = C.previous_run(args, stem, s, ENTRY_KEYS) if args.resume else None
    files = C.ResultFiles(args.out, stem, args.overwrite or args.resume)
    prov = C.provenance(args, argv)
    if old:
        prov = C.continued_provenance(old, prov)
    summary = dict(provenance=prov, settings=s, heads=AC.HEADS, beta=1.0, level=LEVEL, chains=C.CHAINS,
                   sampler="auto", entries=list(old["entries"]) if old else [])
    done = {(e["d"], e["seed"], e["P"]): e for e in summary["entries"]}
    ladder, st = list(s["ladder"]), s["stride"]
    summary["analysis"] = analyse(summary)
    files.write(summary)
    prev = {}
    for seed in s["seeds"]:
        for d in s["d"]:
            ev = {P: e["A"] for (dd, sd, P), e in done.items() if (dd, sd) == (d, seed)}
            start = s["start"].get(d, s["start"].get(str(d), ladder[len(ladder) // 2]))
            P = AC.start_P(ladder, prev.get(d), start) if not ev else AC.next_P(ev, ladder, stride=st)
            while P is not None and len(ev) < s["max_evals"]:
                C.log(f"{NAME}: d = {d}, L = {s['L']}, seed {seed}, P = {P}")
                e = AC.entry("fixed", s["L"], seed, P, dict(s, d=d), args.progress, args.seed)
                e["d"] = d
                summary["entries"].append(e)
                done[(d, seed, P)] = e
                ev[P] = e["A"]
                summary["analysis"] = analyse(summary)
                files.write(summary)
                C.log(f"{NAME}: A_f = {e['A']:.3f} ({e['seconds']} s, {e['health']['status']})")
                P = AC.next_P(ev, ladder, stride=st)
            if ev:
                pst, flag = AC.crossing(list(ev), list(ev.values()))
                if flag == "":
                    prev[d] = pst
    summary["analysis"] = analyse(summary)
    files.write(summary)
    C.log(f"{NAME}: wrote {files.json}")
    return 0
