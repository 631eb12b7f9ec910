"""Sample-complexity sweeps of the three-layer erf net (He₃ target) and the softmax attention head with NUTS (theory
page §8; Rubin, Davidovich & Ringel): the alignment A_f of the posterior-mean predictor against P, and P* where it
crosses a level.

For each configuration the posterior is sampled by NUTS (``bnnzoo.sample``, ``--chains`` chains, maximal tree depth
``--max-tree-depth``) and the alignment A_f = ⟨f, y⟩/⟨y, y⟩ of the posterior-mean predictor is measured on a fresh
test set.  P* is read off as the P where A_f crosses a level (``--levels``; log-linear interpolation,
:func:`crossing`).  Reported scalings to check (the paper as summarised on theory page §8): three-layer P* ∝ d (curves
collapse against P/d); attention P* ∝ √(L d³), so P*/√(L d³) is stored next to every attention P*, and the log–log
slope of P* in d at fixed L (paper: 1.5).  The NNGP (infinite-width, standard readout) kernel-regression alignment is
computed next to the three-layer net as the no-feature-learning baseline (it needs P ∼ d³).

This is the older, single-seed sweep (NUTS, 2 chains at ``--size cpu``) behind rows C1, C7 and C8 next to the
SNAPER/ChEES experiments ``curse_of_detail``, ``attention_dim`` and ``attention_context``; its stored results are
``reproduce/results/sample_complexity.json`` (both sweeps, seed 0) and
``sample_complexity_attention_d_fine{,_seed1,_seed2}.json`` (attention, L = 4, d = 4, 8, 16, seeds 0, 1, 2).

Sizes (``SIZES``): ``ci`` a few tiny nets (seconds each, for the tests); ``cpu`` three-layer d = 8, 16, P/d = 2 … 32,
N1 = N2 = 32, attention d = 8, L = 2, 4, 8, P = 32 … 512, 2 chains × (150 + 100), 1000 test points (what the stored
``sample_complexity.json`` ran, extended there to d = 32 and P/d = 64 by options); ``paper`` our choice of a larger
sweep for one GPU (d up to 32, N1 = N2 = 128, L up to 16, 4 chains × (1000 + 500)).  Every option below overrides
its size's value.  Every run is cached as JSON under ``--cache``, so re-running only adds missing points;
``--cached-only`` samples nothing and summarises the configurations of the grid that are in the cache.

Run: ``python -m reproduce sample_complexity --size ci|cpu|paper [--which three_layer attention] [--d 8 16]
[--p-over-d 2 4 8 16 32] [--width 32] [--L 2 4 8] [--attn-d 8] [--P 32 64 128 256 512] [--chains 2] [--warmup 150]
[--samples 100] [--levels 0.25 0.5] [--cache DIR] [--cached-only] [--overwrite]``; e.g. the d dependence of the
attention P*: ``python -m reproduce sample_complexity --which attention --L 4 --attn-d 4 8 16
--P 16 23 32 45 64 91 128 181 256 362 512 --seed S --name sample_complexity_attention_d_fine``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path

import numpy as np

from . import _common as C

NAME = "sample_complexity"
CLAIMS = ("C1", "C7", "C8")
WHICH = ("three_layer", "attention")
SIZES = {
    "ci": dict(which=WHICH, d=(4, 8), p_over_d=(2, 8), width=8, L=(2, 4), attn_d=(4,), P=(16, 32), heads=2,
               kappa=0.05, readout="standard", chains=2, warmup=20, samples=20, max_tree_depth=5, P_test=200,
               levels=(0.25, 0.5)),
    "cpu": dict(which=WHICH, d=(8, 16), p_over_d=(2, 4, 8, 16, 32), width=32, L=(2, 4, 8), attn_d=(8,),
                P=(32, 64, 128, 256, 512), heads=2, kappa=0.05, readout="standard", chains=2, warmup=150,
                samples=100, max_tree_depth=8, P_test=1000, levels=(0.25, 0.5)),
    "paper": dict(which=WHICH, d=(8, 16, 32), p_over_d=(2, 4, 8, 16, 32, 64), width=128, L=(2, 4, 8, 16),
                  attn_d=(8,), P=(32, 64, 128, 256, 512, 1024), heads=2, kappa=0.05, readout="standard", chains=4,
                  warmup=1000, samples=500, max_tree_depth=10, P_test=2000, levels=(0.25, 0.5)),
}


def _key(cfg: dict) -> str:
    return hashlib.sha1(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:16]


def _cached(cache: Path, cfg: dict, fn, cached_only: bool = False):
    """The cached result of ``cfg`` or, unless ``cached_only`` (then None), a new run of ``fn(cfg)``, cached."""
    path = cache / f"{cfg['model']}_{_key(cfg)}.json"
    if path.exists():
        return json.loads(path.read_text())
    if cached_only:
        return None
    res = fn(cfg)
    res["config"] = cfg
    cache.mkdir(parents=True, exist_ok=True)
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
def run_three_layer(cfg: dict, progress: bool = False) -> dict:
    import bnnzoo
    from bnnzoo import azcompat
    from bnnzoo.diagnostics.alignment import alignment, first_layer_overlaps, second_layer_overlaps
    from bnnzoo.models.three_layer import three_layer, three_layer_dims
    from bnnzoo.tasks.hermite import hermite_task

    task = hermite_task(d=cfg["d"], P=cfg["P"], P_test=cfg["P_test"], seed=cfg["seed"])
    t0 = time.time()
    idata = bnnzoo.sample(three_layer, task, num_chains=cfg["chains"], num_warmup=cfg["warmup"],
                          num_samples=cfg["samples"], seed=cfg["seed"], progress=progress,
                          max_tree_depth=cfg["max_tree_depth"], dims=three_layer_dims(with_test=True),
                          width1=cfg["N1"], width2=cfg["N2"], readout=cfg["readout"], kappa=cfg["kappa"])
    wall = time.time() - t0
    A = alignment(idata)
    w = task.meta["w_star"]
    ov = first_layer_overlaps(idata, w, sigma_w1=1.0)
    s2 = second_layer_overlaps(idata, w, max_test=500)
    ss = azcompat.get_group(idata, "sample_stats")
    return dict(A=A.mean_predictor, A_sd=A.sd, A_chains=A.chain_means.tolist(), rel_error=A.rel_error,
                A_nngp=nngp_three_layer_alignment(task, cfg["kappa"]),
                specialists=ov.mean_specialists, specialists_chance=ov.chance, q_star=ov.q_star,
                q3=s2.q3, q1=s2.q1, max_r3=s2.max_r3,
                divergences=int(ss["diverging"].values.sum()), tree_depth=float(ss["tree_depth"].values.mean()),
                wall_s=round(wall, 1))


def run_attention(cfg: dict, progress: bool = False) -> dict:
    import bnnzoo
    from bnnzoo import azcompat
    from bnnzoo.diagnostics.alignment import alignment
    from bnnzoo.models.attention import attention, attention_dims
    from bnnzoo.tasks.attention_task import attention_task

    task = attention_task(L=cfg["L"], d=cfg["d"], P=cfg["P"], P_test=cfg["P_test"], seed=cfg["seed"])
    t0 = time.time()
    idata = bnnzoo.sample(attention, task, num_chains=cfg["chains"], num_warmup=cfg["warmup"],
                          num_samples=cfg["samples"], seed=cfg["seed"], progress=progress,
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


# --------------------------------------------------------------------------------------------- summary
def summarize(results: dict, levels) -> dict:
    """P* per d (three-layer: BNN and NNGP, with P*/d) and per (d, L) (attention, with P*/√(L d³)) for every level,
    the log–log slope of the attention P* in d at each L, and the summed sampling time of the runs.  Adds ``P_over_d``
    to every three-layer run of ``results``."""
    summ = {"three_layer": {}, "attention": {}}
    for r in results["three_layer"]:
        r["P_over_d"] = r["config"]["P"] / r["config"]["d"]
    by_d = {}
    for r in results["three_layer"]:
        by_d.setdefault(r["config"]["d"], []).append(r)
    for d, rs in by_d.items():
        rs = sorted(rs, key=lambda r: r["config"]["P"])
        P = [r["config"]["P"] for r in rs]
        v = {}
        for lv in levels:
            p = crossing(P, [r["A"] for r in rs], lv)
            v[f"P*@{lv}"] = p
            v[f"P*/d@{lv}"] = p / d if p else None
        v.update({f"P*_nngp@{lv}": crossing(P, [r["A_nngp"] for r in rs], lv) for lv in levels})
        summ["three_layer"][d] = v
    by_dL = {}
    for r in results["attention"]:
        by_dL.setdefault((r["config"]["d"], r["config"]["L"]), []).append(r)
    for (d, L), rs in sorted(by_dL.items()):
        rs = sorted(rs, key=lambda r: r["config"]["P"])
        P = [r["config"]["P"] for r in rs]
        v = {}
        for lv in levels:
            p = crossing(P, [r["A"] for r in rs], lv)
            v[f"P*@{lv}"] = p
            v[f"P*/sqrt(L d^3)@{lv}"] = p / math.sqrt(L * d ** 3) if p else None
        summ["attention"].setdefault(d, {})[L] = v
    # exponent of P* in d at fixed L: least-squares log-log slope over the d values with a crossing (paper: 1.5)
    summ["attention_d_exponent"] = {}
    for L in sorted({L for _, L in by_dL}):
        for lv in levels:
            pts = [(d, v[L][f"P*@{lv}"]) for d, v in sorted(summ["attention"].items()) if v.get(L, {}).get(f"P*@{lv}")]
            slope = float(np.polyfit(np.log([d for d, _ in pts]), np.log([p for _, p in pts]), 1)[0]) \
                if len(pts) >= 2 else None
            summ["attention_d_exponent"].setdefault(L, {})[f"P*@{lv}"] = dict(slope=slope, d=[d for d, _ in pts])
    summ["sampling_s"] = round(sum(r["wall_s"] for r in results["three_layer"] + results["attention"]), 1)
    return summ


# --------------------------------------------------------------------------------------------- command line
def _check(vals, name: str, ok, valid: str) -> tuple:
    if not vals or not all(ok(v) for v in vals) or len(set(vals)) != len(vals):
        raise ValueError(f"{name} must be {valid}, got {' '.join(map(str, vals))}")
    return tuple(vals)


def run(argv=None) -> int:
    argv = [] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--which", nargs="+", default=None, metavar="PART",
                   help=f"some of {', '.join(WHICH)} (default both)")
    p.add_argument("--d", nargs="+", type=int, default=None, help="three-layer input dimensions (>= 1)")
    p.add_argument("--p-over-d", nargs="+", type=float, default=None, help="three-layer P/d grid (> 0)")
    p.add_argument("--width", type=int, default=None, help="N1 = N2 of the three-layer net (>= 1)")
    p.add_argument("--L", nargs="+", type=int, default=None, help="attention context lengths (>= 2)")
    p.add_argument("--attn-d", nargs="+", type=int, default=None, help="attention token dimensions (>= 1)")
    p.add_argument("--P", nargs="+", type=int, default=None, help="attention P values (>= 2)")
    p.add_argument("--heads", type=int, default=None, help="attention heads (>= 1)")
    p.add_argument("--kappa", type=float, default=None, help="likelihood variance κ (> 0)")
    p.add_argument("--readout", default=None, choices=["standard", "meanfield"])
    p.add_argument("--chains", type=int, default=None, help="NUTS chains (>= 1)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps (>= 0)")
    p.add_argument("--samples", type=int, default=None, help="kept draws per chain (>= 1)")
    p.add_argument("--max-tree-depth", type=int, default=None, help="NUTS maximal tree depth (>= 1)")
    p.add_argument("--P-test", type=int, default=None, help="test points (>= 1)")
    p.add_argument("--levels", nargs="+", type=float, default=None, help="alignment levels of P*, in (0, 1)")
    p.add_argument("--cache", default=os.environ.get("BNNZOO_CACHE", "/tmp/zoo_cache/sample_complexity"),
                   help="folder of the per-run cache (re-running only adds missing points)")
    p.add_argument("--cached-only", action="store_true",
                   help="sample nothing: summarise the configurations of the grid that are in the cache")
    args = p.parse_args(argv)
    C.check_args(args)
    s = dict(SIZES[args.size])
    checks = dict(
        which=("--which", lambda v: v in WHICH, f"some of {', '.join(WHICH)}"),
        d=("--d", lambda v: v >= 1, "distinct integers >= 1"),
        p_over_d=("--p-over-d", lambda v: math.isfinite(v) and v > 0, "distinct numbers > 0"),
        L=("--L", lambda v: v >= 2, "distinct integers >= 2"),
        attn_d=("--attn-d", lambda v: v >= 1, "distinct integers >= 1"),
        P=("--P", lambda v: v >= 2, "distinct integers >= 2"),
        levels=("--levels", lambda v: 0 < v < 1, "distinct numbers in (0, 1)"))
    for k, (name, ok, valid) in checks.items():
        if getattr(args, k) is not None:
            s[k] = _check(getattr(args, k), name, ok, valid)
    for k, lo in (("width", 1), ("heads", 1), ("chains", 1), ("warmup", 0), ("samples", 1), ("max_tree_depth", 1),
                  ("P_test", 1)):
        v = getattr(args, k)
        if v is not None:
            if v < lo:
                raise ValueError(f"--{k.replace('_', '-')} must be >= {lo}, got {v}")
            s[k] = v
    if args.kappa is not None:
        if not (math.isfinite(args.kappa) and args.kappa > 0):
            raise ValueError(f"--kappa must be a number > 0, got {args.kappa}")
        s["kappa"] = args.kappa
    if args.readout is not None:
        s["readout"] = args.readout
    cache = Path(args.cache)
    if cache.exists() and not cache.is_dir():
        raise ValueError(f"--cache: {cache} is a file, not a folder")
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)
    common = dict(kappa=s["kappa"], readout=s["readout"], chains=s["chains"], warmup=s["warmup"],
                  samples=s["samples"], max_tree_depth=s["max_tree_depth"], P_test=s["P_test"], seed=args.seed)
    settings = dict(s, seed=args.seed)
    results = dict(provenance=C.provenance(args, argv), settings=settings, three_layer=[], attention=[])
    t_all = time.time()

    def record(part, res):
        results[part].append(res)
        results["total_wall_s"] = round(time.time() - t_all, 1)
        results["summary"] = summarize(results, s["levels"])
        files.write(results)

    if "three_layer" in s["which"]:
        for d in s["d"]:
            for r in s["p_over_d"]:
                cfg = dict(common, model="three_layer", d=d, P=int(round(r * d)), N1=s["width"], N2=s["width"])
                res = _cached(cache, cfg, lambda c: run_three_layer(c, args.progress), args.cached_only)
                if res is None:
                    continue
                record("three_layer", res)
                C.log(f"{NAME}: three_layer d={d} P={cfg['P']} A={res['A']:.3f} (nngp {res['A_nngp']:.3f}) "
                      f"spec={res['specialists']:.2f} t={res['wall_s']}s")
    if "attention" in s["which"]:
        for d in s["attn_d"]:
            for L in s["L"]:
                for P in s["P"]:
                    cfg = dict(common, model="attention", L=L, d=d, P=P, heads=s["heads"], target="centred")
                    res = _cached(cache, cfg, lambda c: run_attention(c, args.progress), args.cached_only)
                    if res is None:
                        continue
                    record("attention", res)
                    C.log(f"{NAME}: attention L={L} d={d} P={P} A={res['A']:.3f} t={res['wall_s']}s")
    results["total_wall_s"] = round(time.time() - t_all, 1)
    results["summary"] = summarize(results, s["levels"])
    files.write(results)
    C.log(f"{NAME}: wrote {files.json}")
    return 0
