"""Softmax attention: how the token dimension d enters the sample complexity P* (theory page §8; Rubin, Davidovich &
Ringel report P* ∝ √(L d³), so at a fixed context length L the log–log slope of P* in d is 3/2).

The model, target and search are those of ``attention_context.py`` (zoo entry ``softmax_attention``, H = 2 heads,
key dimension d_h = d, standard readout, score scale β = 1; target y = q Σ_ℓ (k_ℓ − k̄)(v_ℓ − v̄)/√(L − 1)), with d
swept at one L instead of L at one d.  Per (seed, d): A_f of the posterior-mean predictor on a test set on a ladder of
P, searched in strides from a start point until A_f crosses 0.25 (start: the previous seed's P* at that d), then
refined halfway between the bracketing points; P*(0.25) by log-linear interpolation between the bracketing points.
Per seed, the least-squares slope of log P* on log d over the d with a crossing (at least 3), and over the larger half
of the d values (when that holds 3: the law is asymptotic in d); their means ± s.e. over seeds against 3/2.  Every
entry: 4 chains from prior draws (sampler "auto" = ChEES for this entry), the sampler health (status, R̂ of the
training error, the readout norm and the outputs) stored and shown next to A_f.

Near P* the posterior of this head has a learned and an unlearned state, and chains with a short warm-up stay in the
one they found, so the cpu size warms up for 1000 steps.

Run: ``python reproduce/attention_dim.py --size ci|cpu|paper [--d 4,6,8,12,16] [--L 4] [--seeds 0,1,2]
[--warmup W] [--samples S] [--seed 0] [--resume | --tabulate] [--overwrite]``.  ``--seeds`` draws the tasks; an
entry's sampler seed is its task seed plus ``--seed``.  ``--resume`` continues a stopped run from its JSON file (same
warm-up, draws, test contexts, κ and L), reusing the entries it already holds; ``--tabulate`` rewrites the result
files from the JSON file without sampling.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
import attention_context as AC  # noqa: E402

PROG = "attention_dim.py"
LEVEL = AC.LEVEL
THEORY_SLOPE = 1.5
ENTRY_KEYS = ("L", "warmup", "samples", "P_test", "kappa")
# per size: token dimensions, context length, seeds, the P ladder (P ≈ 8·2^(k/2)) and search stride, the start P per
# d (P* grows with d), the most evaluations per curve, warm-up and kept draws, test contexts, ridge κ
SETTINGS = {
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
    """P* per (seed, d), the slope of log P* in log d per seed, its mean ± s.e. over seeds, P* per d over seeds."""
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
    return dict(P_star=pstar, per_seed=per_seed, slope_mean=m, slope_se=se, upper_d=upper, slope_upper_mean=mu,
                slope_upper_se=seu,
                n_seeds=sum(r["slope"] is not None for r in per_seed.values()), by_d=by_d,
                slope_of_geometric_means=pooled[0], slope_of_geometric_means_fit_se=pooled[1])


def verdict(summary: dict) -> str:
    a = summary["analysis"]
    health = [e["health"]["status"] for e in summary["entries"]]
    hl = (f"Sampler health of the {len(health)} entries: "
          + ", ".join(f"{health.count(h)} {h}" for h in sorted(set(health))) + ".")
    if a["slope_mean"] is None:
        return "No slope yet (crossings at fewer than 3 d per seed).  " + hl
    txt = (f"Slope of P* in d at L = {summary['settings']['L']}: {C.fmt(a['slope_mean'], a['slope_se'])} (mean ± "
           f"s.e. over {a['n_seeds']} seeds; of the geometric means over seeds {C.fmt(a['slope_of_geometric_means'])})"
           f"; theory {THEORY_SLOPE}.  ")
    if a["slope_se"]:
        z = (a["slope_mean"] - THEORY_SLOPE) / a["slope_se"]
        txt += (f"The slope is {abs(z):.1f} s.e. {'above' if z > 0 else 'below'} 3/2: "
                + ("P* ∝ d^(3/2) holds within 2 s.e.  " if abs(z) <= 2 else "P* ∝ d^(3/2) does not hold.  "))
    if a.get("slope_upper_mean") is not None:
        txt += (f"Over the larger d ({', '.join(map(str, a['upper_d']))}) the slope is "
                f"{C.fmt(a['slope_upper_mean'], a['slope_upper_se'])}.  ")
    bad = [f"d = {d}: {b['n_entries'] - b['n_equilibrated']} of {b['n_entries']}"
           for d, b in a["by_d"].items() if b["n_entries"] and b["n_equilibrated"] < b["n_entries"]]
    if bad:
        txt += f"Entries not equilibrated per d — {'; '.join(bad)}.  "
    return txt + hl


def markdown(summary: dict) -> str:
    s, prov = summary["settings"], summary["provenance"]
    lines = [C.header("Softmax attention: the token dimension d and the sample complexity P*", prov).replace(
        "Sampler: SNAPER", "Sampler: auto (ChEES for the attention head)")]
    lines += C.history_lines(prov)
    lines += ["", f"Context length L = {s['L']}, score scale β = 1, H = {AC.HEADS} heads, key dimension d_h = d, "
              f"standard readout c = 1/√(H d_h), κ = {s['kappa']}, prior σ² = σ_a² = 1; {s['warmup']} warm-up + "
              f"{s['samples']} draws per chain; {s['P_test']} test contexts; P ladder "
              f"{', '.join(map(str, s['ladder']))} searched per curve in strides of {s['stride']} until A_f crosses "
              f"{LEVEL}, then refined halfway between the bracketing points (at most {s['max_evals']} values per "
              "curve).  Model, target and search as in `attention_context.py`.\n",
              "## Sampled entries\n", "A_f of the posterior-mean predictor; ± the standard error over the 4 chains' "
              "means.\n", "| d | seed | P | A_f | chain means | health | max R̂ | divergences | s |",
              "|---|---|---|---|---|---|---|---|---|"]
    for e in sorted(summary["entries"], key=lambda e: (e["d"], e["seed"], e["P"])):
        lines.append(f"| {e['d']} | {e['seed']} | {e['P']} | {AC.entry_cells(e)}")
    a = summary.get("analysis")
    if a:
        lines += ["", f"## P*(A_f = {LEVEL}) and its exponent in d\n",
                  "P* per seed (\"<P\": already crossed at the smallest P tried; \">P\": not crossed at the largest; "
                  "both left out of the fits); geometric mean over seeds with the standard error of log P*.\n",
                  "| d | P* per seed | geometric mean P* | s.e. of log P* | entries equilibrated |",
                  "|---|---|---|---|---|"]
        for d in s["d"]:
            cells = []
            for sd in sorted(a["P_star"], key=int):
                ps = a["P_star"][sd].get(d) or a["P_star"][sd].get(str(d))
                if ps:
                    cells.append(f"{ps['flag']}{ps['P_star']:.1f}")
            b = a["by_d"].get(d) or a["by_d"].get(str(d))
            lines.append(f"| {d} | {' / '.join(cells) or '—'} | {C.fmt(b['P_star_geo'])} | "
                         f"{C.fmt(b['log_P_star_se'])} | {b['n_equilibrated']} of {b['n_entries']} |")
        per = ", ".join(f"seed {sd}: {C.fmt(x['slope'])} (d {', '.join(map(str, x['d_used']))})"
                        for sd, x in a["per_seed"].items())
        lines += ["", f"Slope of log P* in log d per seed: {per or '—'}; mean ± s.e. over seeds "
                  f"{C.fmt(a['slope_mean'], a['slope_se'])}; theory {THEORY_SLOPE}."]
        if a.get("upper_d"):
            up = " / ".join(C.fmt(x["slope_upper"]) for x in a["per_seed"].values())
            lines.append(f"Over the larger d only ({', '.join(map(str, a['upper_d']))}): per seed {up}, mean ± s.e. "
                         f"{C.fmt(a['slope_upper_mean'], a['slope_upper_se'])}.")
        lines += ["", "## Verdict\n", verdict(summary)]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = C.parser(PROG, __doc__.split("\n\n")[0])
    p.add_argument("--d", default=None, help="comma-separated token dimensions >= 2 (default per size)")
    p.add_argument("--L", type=int, default=None, help="context length >= 2 (default per size)")
    p.add_argument("--seeds", default=None, help="comma-separated task seeds >= 0 (default per size); the sampler's "
                                                  "seed of an entry is its task seed + --seed")
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps (default per size)")
    p.add_argument("--samples", type=int, default=None, help="kept draws per chain (default per size)")
    p.add_argument("--resume", action="store_true", help="continue a stopped run from its JSON file")
    p.add_argument("--tabulate", action="store_true",
                   help="rewrite the result files from the entries of the existing JSON file, sampling nothing")
    args = p.parse_args(argv)
    C.check_args(args)
    s = dict(SETTINGS[args.size])
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
    stem = args.name or f"attention_dim_{args.size}"
    old = None
    if args.resume or args.tabulate:
        old = C.previous_run(args, stem, s, ENTRY_KEYS)
        if args.tabulate:          # the table covers what was sampled: its d and seeds
            s["d"] = tuple(sorted({e["d"] for e in old["entries"]}))
            s["seeds"] = tuple(sorted({e["seed"] for e in old["entries"]}))
    files = C.ResultFiles(args.out, stem, args.overwrite or args.resume or args.tabulate)
    prov = C.provenance(args, argv)
    if old:
        prov = C.continued_provenance(old, prov, args.tabulate)
    summary = dict(provenance=prov, settings=s, entries=list(old["entries"]) if old else [])
    done = {(e["d"], e["seed"], e["P"]): e for e in summary["entries"]}
    ladder, st = list(s["ladder"]), s["stride"]
    summary["analysis"] = analyse(summary)
    files.write(summary, markdown(summary))
    prev = {}
    for seed in (() if args.tabulate else s["seeds"]):
        for d in s["d"]:
            ev = {P: e["A"] for (dd, sd, P), e in done.items() if (dd, sd) == (d, seed)}
            start = s["start"].get(d, s["start"].get(str(d), ladder[len(ladder) // 2]))
            P = AC.start_P(ladder, prev.get(d), start) if not ev else AC.next_P(ev, ladder, stride=st)
            while P is not None and len(ev) < s["max_evals"]:
                C.log(f"{PROG}: d = {d}, L = {s['L']}, seed {seed}, P = {P}")
                e = AC.entry("fixed", s["L"], seed, P, dict(s, d=d), args.progress, args.seed)
                e["d"] = d
                summary["entries"].append(e)
                done[(d, seed, P)] = e
                ev[P] = e["A"]
                summary["analysis"] = analyse(summary)
                files.write(summary, markdown(summary))
                C.log(f"{PROG}: A_f = {e['A']:.3f} ({e['seconds']} s, {e['health']['status']})")
                P = AC.next_P(ev, ladder, stride=st)
            if ev:
                pst, flag = AC.crossing(list(ev), list(ev.values()))
                if flag == "":
                    prev[d] = pst
    summary["analysis"] = analyse(summary)
    files.write(summary, markdown(summary))
    C.log(f"{PROG}: wrote {files.json} and {files.md}")
    return 0


if __name__ == "__main__":
    sys.exit(C.run_main(PROG, main))
