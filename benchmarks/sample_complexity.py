"""Sample-complexity sweeps of the three-layer erf net (He₃ target) and the softmax attention head (docs/theory.md §8).

For each configuration the posterior is sampled by NUTS (``bnnzoo.sample``) and the alignment A_f = ⟨f, y⟩/⟨y, y⟩ of
the posterior-mean predictor is measured on a fresh test set.  P* is read off as the P where A_f crosses a
threshold (log-linear interpolation).  Reported scalings to check (Rubin, Davidovich & Ringel, arXiv 2512.04165, as
summarised in docs/theory.md §8 — unverified): three-layer P* ∝ d (curves collapse against P/d); attention P* ∝ √(L d³).
The NNGP (infinite-width, standard readout) kernel-regression alignment is computed next to the three-layer
net as the no-feature-learning baseline (it needs P ∼ d³).

Usage (CPU-sized defaults; every run is cached as JSON, so re-running only adds missing points)::

    python benchmarks/sample_complexity.py                      # both sweeps
    python benchmarks/sample_complexity.py --which three_layer --d 8 16 --p-over-d 2 4 8 16 32
    python benchmarks/sample_complexity.py --which attention --L 2 4 8 --attn-d 8 --P 32 64 128 256 512
    python benchmarks/sample_complexity.py --d 8 16 32 --p-over-d 2 4 8 16 32 64 --cached-only   # table only
    python benchmarks/sample_complexity.py --which attention --L 4 --attn-d 4 8 16 --P 16 32 64 128 256 512 \
        --name sample_complexity_attention_d                   # d dependence of the attention P*

Writes ``<out>/<name>.json`` and ``<out>/<name>.md`` (default name ``sample_complexity``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np


def _key(cfg: dict) -> str:
    return hashlib.sha1(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:16]


def _cached(cache: Path, cfg: dict, fn, cached_only: bool = False):
    path = cache / f"{cfg['model']}_{_key(cfg)}.json"
    if path.exists():
        return json.loads(path.read_text())
    if cached_only:
        return None
    res = fn(cfg)
    res["config"] = cfg
    path.write_text(json.dumps(res, indent=1))
    return res


# --------------------------------------------------------------------------------------------- NNGP baseline
def _erf_kernel(S11, S22, S12):
    """E[erf(u) erf(v)] for (u, v) Gaussian with covariances S (docs/theory.md §6 with α = 1)."""
    return (2.0 / math.pi) * np.arcsin(2.0 * S12 / np.sqrt((1.0 + 2.0 * S11) * (1.0 + 2.0 * S22)))


def nngp_three_layer_alignment(task, kappa, sigma_w1=1.0, sigma_w2=1.0, sigma_a2=1.0) -> float:
    """Alignment of the NNGP (standard readout, N1, N2 → ∞) posterior mean with noise κ on the task's test set."""
    X = np.concatenate([task.X, task.X_test])
    d = X.shape[1]
    S = sigma_w1 * X @ X.T / d
    diag = np.diag(S)
    S = sigma_w2 * _erf_kernel(diag[:, None], diag[None, :], S)
    diag = np.diag(S)
    K = sigma_a2 * _erf_kernel(diag[:, None], diag[None, :], S)
    P = task.P
    alpha = np.linalg.solve(K[:P, :P] + kappa * np.eye(P), task.Y[:, 0])
    f = K[P:, :P] @ alpha
    y = task.Y_test[:, 0]
    return float(f @ y / (y @ y))


# --------------------------------------------------------------------------------------------- runs
def run_three_layer(cfg: dict) -> dict:
    import bnnzoo
    from bnnzoo.diagnostics.alignment import alignment, first_layer_overlaps, second_layer_overlaps
    from bnnzoo.models.three_layer import three_layer, three_layer_dims
    from bnnzoo.tasks.hermite import hermite_task

    task = hermite_task(d=cfg["d"], P=cfg["P"], P_test=cfg["P_test"], seed=cfg["seed"])
    t0 = time.time()
    idata = bnnzoo.sample(three_layer, task, num_chains=cfg["chains"], num_warmup=cfg["warmup"],
                          num_samples=cfg["samples"], seed=cfg["seed"], progress=False,
                          max_tree_depth=cfg["max_tree_depth"], dims=three_layer_dims(with_test=True),
                          width1=cfg["N1"], width2=cfg["N2"], readout=cfg["readout"], kappa=cfg["kappa"])
    wall = time.time() - t0
    A = alignment(idata)
    w = task.meta["w_star"]
    ov = first_layer_overlaps(idata, w, sigma_w1=1.0)
    s2 = second_layer_overlaps(idata, w, max_test=500)
    from bnnzoo import azcompat

    ss = azcompat.get_group(idata, "sample_stats")
    return dict(A=A.mean_predictor, A_sd=A.sd, A_chains=A.chain_means.tolist(), rel_error=A.rel_error,
                A_nngp=nngp_three_layer_alignment(task, cfg["kappa"]),
                specialists=ov.mean_specialists, specialists_chance=ov.chance, q_star=ov.q_star,
                q3=s2.q3, q1=s2.q1, max_r3=s2.max_r3,
                divergences=int(ss["diverging"].values.sum()), tree_depth=float(ss["tree_depth"].values.mean()),
                wall_s=round(wall, 1))


def run_attention(cfg: dict) -> dict:
    import bnnzoo
    from bnnzoo import azcompat
    from bnnzoo.diagnostics.alignment import alignment
    from bnnzoo.models.attention import attention, attention_dims
    from bnnzoo.tasks.attention_task import attention_task

    task = attention_task(L=cfg["L"], d=cfg["d"], P=cfg["P"], P_test=cfg["P_test"], seed=cfg["seed"])
    t0 = time.time()
    idata = bnnzoo.sample(attention, task, num_chains=cfg["chains"], num_warmup=cfg["warmup"],
                          num_samples=cfg["samples"], seed=cfg["seed"], progress=False,
                          max_tree_depth=cfg["max_tree_depth"], dims=attention_dims(with_test=True),
                          context_length=cfg["L"], heads=cfg["heads"], readout=cfg["readout"], kappa=cfg["kappa"])
    wall = time.time() - t0
    A = alignment(idata)
    ss = azcompat.get_group(idata, "sample_stats")
    return dict(A=A.mean_predictor, A_sd=A.sd, A_chains=A.chain_means.tolist(), rel_error=A.rel_error,
                divergences=int(ss["diverging"].values.sum()), tree_depth=float(ss["tree_depth"].values.mean()),
                wall_s=round(wall, 1))


def crossing(P, A, level):
    """P where A first crosses ``level`` (log-linear interpolation); None if it never does in range."""
    P, A = np.asarray(P, float), np.asarray(A, float)
    for i in range(1, len(P)):
        if A[i - 1] < level <= A[i]:
            x0, x1 = math.log(P[i - 1]), math.log(P[i])
            return float(math.exp(x0 + (level - A[i - 1]) * (x1 - x0) / (A[i] - A[i - 1])))
    return None if A[0] < level else float(P[0])


# --------------------------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--which", nargs="+", default=["three_layer", "attention"], choices=["three_layer", "attention"])
    ap.add_argument("--d", nargs="+", type=int, default=[8, 16], help="three-layer input dimensions")
    ap.add_argument("--p-over-d", nargs="+", type=float, default=[2, 4, 8, 16, 32])
    ap.add_argument("--width", type=int, default=32, help="N1 = N2 of the three-layer net")
    ap.add_argument("--L", nargs="+", type=int, default=[2, 4, 8], help="attention context lengths")
    ap.add_argument("--attn-d", nargs="+", type=int, default=[8], help="attention token dimensions")
    ap.add_argument("--P", nargs="+", type=int, default=[32, 64, 128, 256, 512], help="attention P values")
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--kappa", type=float, default=0.05)
    ap.add_argument("--readout", default="standard", choices=["standard", "meanfield"])
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=150)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--max-tree-depth", type=int, default=8)
    ap.add_argument("--P-test", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--levels", nargs="+", type=float, default=[0.25, 0.5])
    ap.add_argument("--cache", default=os.environ.get("BNNZOO_CACHE", "/tmp/zoo_cache/sample_complexity"))
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--name", default="sample_complexity", help="stem of the results files written under --out")
    ap.add_argument("--cached-only", action="store_true",
                    help="run nothing new: tabulate the configurations of the grid that are in the cache")
    args = ap.parse_args(argv)
    cache, out = Path(args.cache), Path(args.out)
    cache.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    common = dict(kappa=args.kappa, readout=args.readout, chains=args.chains, warmup=args.warmup,
                  samples=args.samples, max_tree_depth=args.max_tree_depth, P_test=args.P_test, seed=args.seed)
    results = {"three_layer": [], "attention": [], "settings": dict(common, width=args.width, heads=args.heads,
                                                                       attn_d=args.attn_d)}
    t_all = time.time()
    if "three_layer" in args.which:
        for d in args.d:
            for r in args.p_over_d:
                cfg = dict(common, model="three_layer", d=d, P=int(round(r * d)), N1=args.width, N2=args.width)
                res = _cached(cache, cfg, run_three_layer, args.cached_only)
                if res is None:
                    continue
                results["three_layer"].append(res)
                print(f"three_layer d={d} P={cfg['P']} A={res['A']:.3f} (nngp {res['A_nngp']:.3f}) "
                      f"spec={res['specialists']:.2f} t={res['wall_s']}s", flush=True)
    if "attention" in args.which:
        for d in args.attn_d:
            for L in args.L:
                for P in args.P:
                    cfg = dict(common, model="attention", L=L, d=d, P=P, heads=args.heads, target="centred")
                    res = _cached(cache, cfg, run_attention, args.cached_only)
                    if res is None:
                        continue
                    results["attention"].append(res)
                    print(f"attention L={L} d={d} P={P} A={res['A']:.3f} t={res['wall_s']}s", flush=True)
    results["total_wall_s"] = round(time.time() - t_all, 1)
    results["summary"] = summarize(results, args.levels)
    (out / f"{args.name}.json").write_text(json.dumps(results, indent=1))
    (out / f"{args.name}.md").write_text(markdown(results, args.levels))
    print(markdown(results, args.levels))


def summarize(results, levels):
    summ = {"three_layer": {}, "attention": {}}
    by_d = {}
    for r in results["three_layer"]:
        by_d.setdefault(r["config"]["d"], []).append(r)
    for d, rs in by_d.items():
        rs = sorted(rs, key=lambda r: r["config"]["P"])
        P = [r["config"]["P"] for r in rs]
        summ["three_layer"][d] = {f"P*@{lv}": crossing(P, [r["A"] for r in rs], lv) for lv in levels}
        summ["three_layer"][d].update({f"P*_nngp@{lv}": crossing(P, [r["A_nngp"] for r in rs], lv) for lv in levels})
    by_dL = {}
    for r in results["attention"]:
        by_dL.setdefault((r["config"]["d"], r["config"]["L"]), []).append(r)
    for (d, L), rs in sorted(by_dL.items()):
        rs = sorted(rs, key=lambda r: r["config"]["P"])
        P = [r["config"]["P"] for r in rs]
        summ["attention"].setdefault(d, {})[L] = {f"P*@{lv}": crossing(P, [r["A"] for r in rs], lv) for lv in levels}
    # exponent of P* in d at fixed L: least-squares log-log slope over the d values with a crossing (paper: 1.5)
    summ["attention_d_exponent"] = {}
    for L in sorted({L for _, L in by_dL}):
        for lv in levels:
            pts = [(d, v[L][f"P*@{lv}"]) for d, v in sorted(summ["attention"].items()) if v.get(L, {}).get(f"P*@{lv}")]
            slope = float(np.polyfit(np.log([d for d, _ in pts]), np.log([p for _, p in pts]), 1)[0]) \
                if len(pts) >= 2 else None
            summ["attention_d_exponent"].setdefault(L, {})[f"P*@{lv}"] = dict(slope=slope, d=[d for d, _ in pts])
    return summ


def _fmt(x, nd=3):
    return "—" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))


def markdown(results, levels) -> str:
    s = results["settings"]
    lines = ["# Sample complexity sweeps (bnnzoo benchmarks/sample_complexity.py)", "",
             f"NUTS, {s['chains']} chains × ({s['warmup']} warmup + {s['samples']} draws), max tree depth "
             f"{s['max_tree_depth']}, κ = {s['kappa']}, {s['readout']} readout, seed {s['seed']}, "
             f"{s['P_test']} test points; summed sampling wall time of the runs below "
             f"{sum(r['wall_s'] for r in results['three_layer'] + results['attention']):.0f} s (2 shared CPU cores; "
             f"wall times include contention).", ""]
    if results["three_layer"]:
        lines += [f"## Three-layer erf net, He₃ target (N1 = N2 = {s['width']})", "",
                  "| d | P | P/d | A_f (BNN) | sd over draws | chain means | A_f (NNGP) | specialists | chance | "
                  "q3 | q1 | tree depth | div | s |", "|" + "---|" * 14]
        for r in sorted(results["three_layer"], key=lambda r: (r["config"]["d"], r["config"]["P"])):
            c = r["config"]
            lines.append(f"| {c['d']} | {c['P']} | {c['P'] / c['d']:.0f} | {r['A']:.3f} | {r['A_sd']:.3f} | "
                         f"{' / '.join(f'{a:.2f}' for a in r['A_chains'])} | {r['A_nngp']:.3f} | "
                         f"{r['specialists']:.2f} | {r['specialists_chance']:.2f} | {r['q3']:.3f} | {r['q1']:.3f} | "
                         f"{r['tree_depth']:.1f} | {r['divergences']} | {r['wall_s']} |")
        lines += ["", "| d | " + " | ".join(f"P*(A={lv}) BNN | P*/d | P*(A={lv}) NNGP" for lv in levels) + " |",
                  "|---|" + "---|---|---|" * len(levels)]
        for d, v in sorted(results["summary"]["three_layer"].items(), key=lambda kv: int(kv[0])):
            cells = []
            for lv in levels:
                p = v[f"P*@{lv}"]
                cells += [_fmt(p, 1), _fmt(p / int(d) if p else None, 2), _fmt(v[f"P*_nngp@{lv}"], 1)]
            lines.append(f"| {d} | " + " | ".join(cells) + " |")
    if results["attention"]:
        lines += ["", f"## Softmax attention, cubic target (d = {', '.join(map(str, s['attn_d']))}, H = {s['heads']})",
                  "", "| d | L | P | A_f | sd over draws | chain means | tree depth | div | s |", "|" + "---|" * 9]
        for r in sorted(results["attention"], key=lambda r: (r["config"]["d"], r["config"]["L"], r["config"]["P"])):
            c = r["config"]
            lines.append(f"| {c['d']} | {c['L']} | {c['P']} | {r['A']:.3f} | {r['A_sd']:.3f} | "
                         f"{' / '.join(f'{a:.2f}' for a in r['A_chains'])} | {r['tree_depth']:.1f} | "
                         f"{r['divergences']} | {r['wall_s']} |")
        lines += ["", "| d | L | " + " | ".join(f"P*(A={lv}) | P*/√(L d³)" for lv in levels) + " |",
                  "|---|---|" + "---|---|" * len(levels)]
        for d, vd in sorted(results["summary"]["attention"].items(), key=lambda kv: int(kv[0])):
            for L, v in sorted(vd.items(), key=lambda kv: int(kv[0])):
                cells = []
                for lv in levels:
                    p = v[f"P*@{lv}"]
                    cells += [_fmt(p, 1), _fmt(p / math.sqrt(int(L) * int(d) ** 3) if p else None, 3)]
                lines.append(f"| {d} | {L} | " + " | ".join(cells) + " |")
        exps = results["summary"]["attention_d_exponent"]
        if any(e["slope"] is not None for v in exps.values() for e in v.values()):
            lines += ["", "Exponent of P* in d at fixed L (least-squares log-log slope over the d values listed; "
                      "paper: 1.5).", "", "| L | " + " | ".join(f"slope at A={lv} | d used" for lv in levels) + " |",
                      "|---|" + "---|---|" * len(levels)]
            for L, v in sorted(exps.items(), key=lambda kv: int(kv[0])):
                cells = []
                for lv in levels:
                    e = v[f"P*@{lv}"]
                    cells += [_fmt(e["slope"], 2), ", ".join(map(str, e["d"])) or "—"]
                lines.append(f"| {L} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
