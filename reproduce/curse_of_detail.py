"""Curse of detail, fully-connected part (theory page §8; Rubin, Davidovich & Ringel): the sample complexity P* of
erf nets learning the single-index target He₃(w*·x) on Gaussian inputs x ∈ ℝᵈ, and the first-layer specialists.

Three parts (``--part``):

* ``three_layer``: the three-layer erf net (zoo entry ``three_layer_erf``: f = aᵀ erf(W² erf(W¹x/√d)/√N1)/√N2,
  standard readout, likelihood variance κ, unit prior variances) at N1 = N2, swept over d and P/d, several seeds
  (a seed draws w*, the data and the chains' starts).  Per run: the alignment A_f = ⟨f̄, y⟩/⟨y, y⟩ of the
  posterior-mean predictor on a fresh test set, and next to it the NNGP (N1, N2 → ∞) posterior mean's
  (``bnnzoo.theory.gp.gp_posterior``, erf, depth 2, the same κ).  P*(A) per seed and d is where A_f crosses A
  (log-linear interpolation between grid points, ``crossing`` of the ``sample_complexity`` experiment); the log–log
  slope of P* in d is fitted per seed and reported as mean ± s.e. over seeds (theory: 1, against 3 for the kernel).
  The collapse against P/d: the spread across d of the seed-mean A_f at each P/d, next to its s.e. over seeds.  The
  NNGP's own P* is read off a denser and longer P grid (it costs one linear solve per P).
* ``specialists``: the same net at fixed d and P (near/above P*) with N1 swept (N2 fixed): the number of first-layer
  units whose overlap W¹_j·w* exceeds 3 NNGP standard deviations (``first_layer_overlaps``; chance count
  N1 · 0.0027), its exponent in N1 (theory: the count ∝ (N1/d)^{1/3}, exponent ⅓), and for the pattern of C5
  (specialisation–magnetisation → GP–specialisation as N1 grows) the BNN's A_f against the NNGP's and the second
  layer's magnetisation q3 = ⟨corr(h²_k, He₃)²⟩_k and q1 = ⟨corr(h²_k, w*·x)²⟩_k (``second_layer_overlaps``).
  With several d (``--spec-d``, each at P = spec_p_over_d · d) the width sweep runs at every d, and a joint fit
  log count = c₀ + b log N1 + c log d tests the d part of the law (b = ⅓, c = −⅓).
* ``two_layer``: one hidden layer.  The zoo has no erf activation for the one-hidden-layer net; we use the zoo entry
  ``sigmoidal_lazy``: f = aᵀφ(W x/√d)/√N, standard (lazy) readout, likelihood variance T = κ, prior variances 1,
  with φ(z) = ½ + ½ erf(√π z/2).  This is an erf net up to an affine map: the constant ½ adds a feature (a readout
  bias) orthogonal to He₃, the factor √π/2 rescales the first-layer prior variance to π/4 (so the specialist
  threshold, 3 NNGP standard deviations of W_j·w* ~ N(0, 1), is still 3), the factor ½ scales the readout.  P* vs
  d over seeds as for the three-layer net (NNGP: the sigmoid kernel, depth 1), and specialists vs N at fixed d and
  P (theory: count ∝ √(N/d), exponent ½).

Sizes (``--size``, table ``SIZES``): ``ci`` N1 = N2 = 8, d ∈ {4, 6}, 40 warm-up + 20 draws, one seed (run by
``tests/reproduce/test_reproduce_curse.py``); ``cpu`` N1 = N2 = 32, d ∈ {6, 8, 12, 16}, P/d ∈ {4, 8, 12}, 150 + 100
draws, three seeds for the three-layer sweep (``--n-seeds 3`` for the others too), widths 16 … 128 at d = 8, P = 96;
``paper`` d up to 64, N1 = N2 = 128, widths up to 512, 1000 + 500 draws, five seeds, for one GPU — our choice of a
proportional-limit sweep (the theory page does not give the paper's sizes).  A P* sweep whose A_f does not cross
0.25 on its grid is extended by doubling P (up to ``max_p_over_d``), or by halving P when A_f is above 0.25 already
at the smallest P.

Every run: SNAPER, 4 chains, vectorised, from prior draws (``--start prior``, default) or, for the three-layer P*
sweep, from the aligned ("learned") phase (``--start aligned``, :func:`aligned_init`: ALIGNED_UNITS first-layer
units planted along w* with overlap ±ALIGNED_OVERLAP, the rest a prior draw), the second start family that brackets
a hysteretic P* from above; the sampler health (status, R̂ of the training error,
readout norm and outputs across chains) is stored next to the physics.  Errors are standard errors over seeds unless
a key says "chains".  Every finished run is cached as JSON under ``--cache`` (a stopped sweep resumes) and the result
file is rewritten after every run.

Run: ``python -m reproduce curse_of_detail --size ci|cpu|paper [--part three_layer specialists two_layer]
[--n-seeds K] [--d 8,16] [--spec-d 4,8,16] [--width-per-d ALPHA] [--start prior|aligned] [--warmup W]
[--samples S] [--compare-with FILES] [--cache DIR] [--overwrite]``.
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
from .sample_complexity import crossing

NAME = "curse_of_detail"
CLAIMS = ("C1", "C2", "C3", "C4", "C5", "C6")
PARTS = ("three_layer", "specialists", "two_layer")
LEVELS = (0.25, 0.5)
# per size.  three_layer / two_layer: d values, P/d grid, width(s), seeds; specialists: d, P/d and the N1 sweep
# (N2 = width); two_layer: its own d, P/d, width and the N sweep at (spec_d, spec_p_over_d); nngp_p_over_d: the
# (cheap) NNGP grid; max_p_over_d: a P* sweep whose A_f stays below 0.25 on the grid is extended by doubling P up to
# this P/d (one whose A_f is above 0.25 at the smallest P by halving P, down to P/d = 1); sampler sizes, test points.
SIZES = {
    "ci": dict(d=(4, 6), p_over_d=(4, 16), width=8, n_seeds=1,
               spec_d=4, spec_p_over_d=16, spec_widths=(8, 16), spec_seeds=1,
               two_d=(4,), two_p_over_d=(16,), two_width=8, two_spec_widths=(8,), two_seeds=1,
               nngp_p_over_d=(2, 4, 8, 16, 32, 64), max_p_over_d=16, kappa=0.05, warmup=40, samples=20, P_test=200),
    "cpu": dict(d=(6, 8, 12, 16), p_over_d=(4, 8, 12), width=32, n_seeds=3,
                spec_d=8, spec_p_over_d=12, spec_widths=(16, 32, 64, 128), spec_seeds=2,
                two_d=(6, 8, 12, 16), two_p_over_d=(4, 8, 12), two_width=32, two_spec_widths=(16, 32, 64, 128),
                two_seeds=1,
                nngp_p_over_d=(2, 4, 8, 16, 32, 64, 128, 256), max_p_over_d=24, kappa=0.05, warmup=150,
                samples=100, P_test=500),
    "paper": dict(d=(16, 24, 32, 48, 64), p_over_d=(2, 4, 8, 16, 32), width=128, n_seeds=5,
                  spec_d=32, spec_p_over_d=16, spec_widths=(32, 64, 128, 256, 512), spec_seeds=5,
                  two_d=(16, 24, 32, 48, 64), two_p_over_d=(2, 4, 8, 16, 32), two_width=128,
                  two_spec_widths=(32, 64, 128, 256, 512), two_seeds=5,
                  nngp_p_over_d=(2, 4, 8, 16, 32, 64, 128), max_p_over_d=64, kappa=0.05, warmup=1000,
                  samples=500, P_test=2000),
}
THEORY = dict(three_layer_slope=1.0, nngp_slope=3.0, three_layer_spec_exponent=1 / 3, two_layer_spec_exponent=0.5,
              two_layer_slope=1.0)
NNGP_MAX_P = 4096
STARTS = ("prior", "aligned")
# the aligned start family (--start aligned): ALIGNED_UNITS first-layer units with overlap W¹_j·w* = ±ALIGNED_OVERLAP.
# The learned state of the prior-started proportional-limit runs (reproduce/results/curse_of_detail_cpu_proportional*)
# holds 2–3.5 specialists per net (overlap beyond 3 NNGP s.d.) at A_f ≈ 0.4–0.5, and their mean square overlap with
# w* puts those specialists' overlaps at about 4–6; 3 units at 5 is a start of that size.
ALIGNED_UNITS = 3
ALIGNED_OVERLAP = 5.0


# ------------------------------------------------------------------------------------------------------ one run
def nngp_alignment(task, model: str, kappa: float) -> float:
    """A_f of the NNGP posterior mean (N → ∞ of the run's net, standard readout, likelihood variance κ) on the task's
    test set: erf kernel of depth 2 for the three-layer net, the sigmoid kernel of depth 1 for the two-layer net."""
    from bnnzoo.diagnostics.alignment import alignment_from_arrays
    from bnnzoo.theory.gp import gp_posterior

    nl, depth = ("erf", 2) if model == "three_layer" else ("sigmoid", 1)
    gp = gp_posterior(task.X, task.Y, task.X_test, nonlinearity=nl, depth=depth, temperature=kappa, sigma_a2=1.0)
    return alignment_from_arrays(gp.mean, task.Y_test).mean_predictor


def _task(d, P, P_test, seed):
    from bnnzoo.tasks.hermite import hermite_task

    return hermite_task(d=d, P=P, P_test=P_test, seed=seed)


def aligned_init(w_star, width1: int, width2: int, num_chains: int, seed: int, units: int = ALIGNED_UNITS,
                 overlap: float = ALIGNED_OVERLAP) -> dict:
    """Starting values of the three-layer erf net in the aligned ("learned") phase, for ``bnnzoo.sample(...,
    init=...)``: every site a prior draw (unit variances), except that the first ``units`` first-layer units have
    their component along w* set to ±``overlap`` (signs drawn), so W¹_j·ŵ* = ±overlap exactly for those units.

    Parameters
    ----------
    w_star : (d,) teacher direction (normalised here).
    width1, width2 : N1, N2.
    num_chains : chains (leading axis of every value).
    seed : draws the values (NumPy ``default_rng((seed, 1))``: the same seed gives the same start).
    units : planted units (1 ≤ units ≤ width1).
    overlap : their overlap with ŵ* (> 0).

    Returns
    -------
    dict : {"W1": (chain, N1, d), "W2": (chain, N2, N1), "a": (chain, N2, 1)} float32.

    Raises
    ------
    ValueError
        ``units`` outside [1, width1], ``overlap`` not > 0, or a zero ``w_star``.
    """
    w = np.asarray(w_star, dtype=float).ravel()
    if not np.linalg.norm(w) > 0:
        raise ValueError("w_star must be non-zero")
    if not 1 <= units <= width1:
        raise ValueError(f"units must be in [1, width1 = {width1}], got {units}")
    if not overlap > 0:
        raise ValueError(f"overlap must be > 0, got {overlap}")
    w = w / np.linalg.norm(w)
    rng = np.random.default_rng((seed, 1))
    W1 = rng.standard_normal((num_chains, width1, w.size))
    signs = rng.choice((-1.0, 1.0), size=(num_chains, units))
    W1[:, :units] += (signs * overlap - W1[:, :units] @ w)[..., None] * w
    W2 = rng.standard_normal((num_chains, width2, width1))
    a = rng.standard_normal((num_chains, width2, 1))
    return dict(W1=W1.astype(np.float32), W2=W2.astype(np.float32), a=a.astype(np.float32))


def run_entry(cfg: dict, progress: bool = False) -> dict:
    """Sample one configuration and return its summary (alignment, NNGP alignment, specialists, q3/q1, health);
    ``cfg["start"]`` "aligned" starts the chains from :func:`aligned_init` (three-layer net only), absent or
    "prior" from prior draws."""
    import bnnzoo
    from bnnzoo.diagnostics.alignment import alignment, first_layer_overlaps, second_layer_overlaps

    task = _task(cfg["d"], cfg["P"], cfg["P_test"], cfg["seed"])
    common = dict(num_chains=C.CHAINS, num_warmup=cfg["warmup"], num_samples=cfg["samples"], seed=cfg["seed"],
                  sampler="snaper", progress=progress)
    if cfg.get("start", "prior") == "aligned":
        if cfg["model"] != "three_layer":
            raise ValueError(f"start 'aligned' is for the three-layer net, got model {cfg['model']!r}")
        common["init"] = aligned_init(task.meta["w_star"], cfg["N1"], cfg["N2"], C.CHAINS, cfg["seed"])
    t0 = time.time()
    if cfg["model"] == "three_layer":
        run = bnnzoo.sample("three_layer_erf", task, width1=cfg["N1"], width2=cfg["N2"], kappa=cfg["kappa"],
                            **common)
    else:
        run = bnnzoo.sample("sigmoidal_lazy", task, width=cfg["N1"], temperature=cfg["kappa"], sigma_a2=1.0,
                            **common)
    wall = time.time() - t0
    A = alignment(run)
    w = task.meta["w_star"]
    ov = first_layer_overlaps(run, w, sigma_w1=1.0)
    spec_chain = ov.n_specialists.mean(axis=1)
    out = dict(A=A.mean_predictor, A_sd=A.sd, A_chains=A.chain_means.tolist(), rel_error=A.rel_error,
               A_nngp=nngp_alignment(task, cfg["model"], cfg["kappa"]),
               specialists=ov.mean_specialists, specialists_chains=spec_chain.tolist(),
               specialists_chance=ov.chance, q_star=ov.q_star, health=C.health_summary(run), seconds=round(wall, 1))
    if cfg["model"] == "three_layer":
        s2 = second_layer_overlaps(run, w, max_test=500)
        out.update(q3=s2.q3, q1=s2.q1, max_r3=s2.max_r3)
    return out


def _key(cfg: dict) -> str:
    return hashlib.sha1(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:16]


def cached_entry(cache: Path, cfg: dict, progress: bool = False) -> tuple[dict, bool]:
    """(summary, was_cached): the cached summary of ``cfg`` or a new run, cached."""
    path = cache / f"{cfg['model']}_{_key(cfg)}.json"
    if path.exists():
        return json.loads(path.read_text()), True
    res = run_entry(cfg, progress)
    res["config"] = cfg
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(C.jsonable(res), indent=1, allow_nan=False))
    return res, False


def nngp_curve(model: str, d: int, seed: int, s: dict, cache: Path | None = None) -> dict:
    """NNGP A_f on the P/d grid ``nngp_p_over_d`` (P ≤ NNGP_MAX_P) and its P* per level (cached under ``cache``)."""
    P = [int(round(r * d)) for r in s["nngp_p_over_d"] if r * d <= NNGP_MAX_P]
    cfg = dict(model=model, d=d, seed=seed, P=P, P_test=s["P_test"], kappa=s["kappa"])
    path = None if cache is None else cache / f"nngp_{_key(cfg)}.json"
    if path is not None and path.exists():
        A = json.loads(path.read_text())["A"]
    else:
        A = [nngp_alignment(_task(d, p, s["P_test"], seed), model, s["kappa"]) for p in P]
        if path is not None:
            cache.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(dict(config=cfg, A=A)))
    return dict(d=d, seed=seed, P=P, A=A, P_star={str(lv): crossing(P, A, lv) for lv in LEVELS})


# ------------------------------------------------------------------------------------------------------ summaries
_mean_se = C.mean_se


def _slope(x, y):
    """Least-squares slope of log y on log x (None with fewer than 2 points)."""
    return C.loglog_slope(x, y)[0]


def pstar_summary(runs: list[dict], nngp: list[dict]) -> dict:
    """P* per seed and d, its mean ± s.e. over seeds, per-seed log–log slopes in d, the collapse against P/d."""
    by = {}
    for r in runs:
        c = r["config"]
        by.setdefault((c["seed"], c["d"]), []).append(r)
    seeds = sorted({k[0] for k in by})
    ds = sorted({k[1] for k in by})
    pstar = {}  # level -> seed -> d -> P*
    for lv in LEVELS:
        for (seed, d), rs in by.items():
            rs = sorted(rs, key=lambda r: r["config"]["P"])
            # None when A_f never reaches the level on the grid, or is above it already at the smallest P
            pstar.setdefault(str(lv), {}).setdefault(str(seed), {})[str(d)] = crossing(
                [r["config"]["P"] for r in rs], [r["A"] for r in rs], lv) if rs[0]["A"] < lv else None
    out = dict(seeds=seeds, d=ds, P_star=pstar, per_d={}, slope={}, nngp_slope={}, collapse={})
    for lv in LEVELS:
        L = str(lv)
        per_d = {}
        for d in ds:
            vals = [pstar[L][str(s)].get(str(d)) for s in seeds if str(d) in pstar[L][str(s)]]
            m, se = _mean_se(vals)
            per_d[str(d)] = dict(mean=m, se=se, n=sum(v is not None for v in vals), n_seeds=len(vals),
                                 over_d=(m / d if m is not None else None), se_over_d=(se / d if se else None))
        out["per_d"][L] = per_d
        slopes = [_slope(ds, [pstar[L][str(s)].get(str(d)) for d in ds]) for s in seeds]
        m, se = _mean_se(slopes)
        pooled = _slope([d for s in seeds for d in ds], [pstar[L][str(s)].get(str(d)) for s in seeds for d in ds])
        out["slope"][L] = dict(per_seed=slopes, mean=m, se=se, pooled=pooled)
        ns = [_slope([c["d"] for c in nngp if c["seed"] == s], [c["P_star"][L] for c in nngp if c["seed"] == s])
              for s in sorted({c["seed"] for c in nngp})]
        m, se = _mean_se(ns)
        out["nngp_slope"][L] = dict(per_seed=ns, mean=m, se=se)
    # collapse: A at fixed P/d across d (seed means), against the s.e. over seeds
    grid = {}
    for r in runs:
        c = r["config"]
        grid.setdefault(round(c["P"] / c["d"], 6), {}).setdefault(c["d"], []).append(r["A"])
    for r_, byd in sorted(grid.items()):
        cells = {str(d): dict(zip(("mean", "se"), _mean_se(v))) for d, v in sorted(byd.items())}
        means = [v["mean"] for v in cells.values()]
        ses = [v["se"] for v in cells.values() if v["se"] is not None]
        out["collapse"][str(r_)] = dict(per_d=cells, spread=float(max(means) - min(means)),
                                        sd_across_d=float(np.std(means, ddof=1)) if len(means) > 1 else None,
                                        mean_se=float(np.mean(ses)) if ses else None)
    return out


def start_comparison(runs: list[dict], reference: list[dict]) -> dict:
    """The P* sweep's runs against a reference sweep from the other start family (``--compare-with``): A_f at every
    (d, seed, P, N1) both ran, the difference (this sweep − reference) with its chain standard error (the two
    runs' chain s.e. combined in quadrature), and P*(A = 0.25) of both per seed and d.

    Parameters
    ----------
    runs, reference : lists of run summaries (``A``, ``A_chains``, ``config``) of the three-layer net.

    Returns
    -------
    dict : ``pairs`` (one per matched run: d, seed, P, A, A_reference, diff, diff_se), ``n_pairs``, ``mean_diff``
    and ``se_diff`` (mean ± s.e. of the differences), ``sd_diff``, ``max_abs_diff``, ``max_abs_z`` (largest
    |diff| / diff_se), ``P_star`` {seed: {d: [this, reference]}} where both cross, ``max_rel_pstar_diff``.
    """
    def key(r):
        c = r["config"]
        return c["d"], c["seed"], c["P"], c["N1"]

    def chain_se(r):
        a = np.asarray(r["A_chains"], float)
        return float(a.std(ddof=1) / math.sqrt(a.size))

    ref = {key(r): r for r in reference}
    pairs = [dict(d=k[0], seed=k[1], P=k[2], A=r["A"], A_reference=ref[k]["A"], diff=r["A"] - ref[k]["A"],
                  diff_se=math.hypot(chain_se(r), chain_se(ref[k])))
             for r in runs if (k := key(r)) in ref]
    diffs = [p["diff"] for p in pairs]
    m, se = _mean_se(diffs)
    both = pstar_summary(runs, []), pstar_summary(reference, [])
    lv = str(LEVELS[0])
    pstar = {}
    for seed, per_d in both[0]["P_star"][lv].items():
        for d, v in per_d.items():
            w = both[1]["P_star"][lv].get(seed, {}).get(d)
            if v is not None and w is not None:
                pstar.setdefault(seed, {})[d] = [v, w]
    rel = [abs(v - w) / w for per_d in pstar.values() for v, w in per_d.values()]
    return dict(pairs=pairs, n_pairs=len(pairs), mean_diff=m, se_diff=se,
                sd_diff=float(np.std(diffs, ddof=1)) if len(diffs) > 1 else None,
                max_abs_diff=max(map(abs, diffs), default=None),
                max_abs_z=max((abs(p["diff"]) / p["diff_se"] for p in pairs if p["diff_se"] > 0), default=None),
                P_star=pstar, max_rel_pstar_diff=max(rel, default=None))


def _width_rows(runs: list[dict], theory_exponent: float) -> tuple[dict, list, float | None]:
    """Rows per width (mean ± s.e. over seeds), the per-seed exponents in N and the exponent of the seed means, for
    runs at one d."""
    byN = {}
    for r in runs:
        byN.setdefault(r["config"]["N1"], []).append(r)
    rows = {}
    for N, rs in sorted(byN.items()):
        row = dict(n_seeds=len(rs), chance=rs[0]["specialists_chance"])
        for k in ("specialists", "A", "A_nngp", "q3", "q1", "q_star"):
            if all(k in r for r in rs):
                row[k], row[k + "_se"] = _mean_se([r[k] for r in rs])
        d = rs[0]["config"]["d"]
        row["per_theory_law"] = row["specialists"] / (N / d) ** theory_exponent
        rows[str(N)] = row
    seeds = sorted({r["config"]["seed"] for r in runs})
    per_seed = []
    for s in seeds:
        pts = sorted((r["config"]["N1"], r["specialists"]) for r in runs if r["config"]["seed"] == s)
        if len(pts) >= 2:
            per_seed.append(_slope([p[0] for p in pts], [p[1] for p in pts]))
    Ns = sorted(byN)
    pooled = _slope(Ns, [rows[str(N)]["specialists"] for N in Ns])
    return rows, per_seed, pooled


def _log_fit(runs: list[dict]):
    """(design matrix [1, log N, log d], log counts, least-squares coefficients) of ``runs``; None when N or d
    takes one value."""
    N = np.array([r["config"]["N1"] for r in runs], float)
    d = np.array([r["config"]["d"] for r in runs], float)
    if len(set(N)) < 2 or len(set(d)) < 2:
        return None
    y = np.log(np.array([r["specialists"] for r in runs], float))
    X = np.column_stack([np.ones_like(N), np.log(N), np.log(d)])
    return X, y, np.linalg.lstsq(X, y, rcond=None)[0]


def joint_fit(runs: list[dict]) -> dict | None:
    """Least-squares fit log count = c₀ + b log N + c log d over every run (widths N, dimensions d), with the
    ordinary standard errors of b and c, the per-seed fits' mean ± s.e., and the residual scatter; None with fewer
    than two d or two N.  The law count ∝ (N/d)^e predicts b = e and c = −e."""
    fit = _log_fit(runs)
    if fit is None or len(fit[1]) < 4:
        return None
    X, y, coef = fit
    resid = y - X @ coef
    s2 = float(resid @ resid / (len(y) - 3))
    cov = s2 * np.linalg.inv(X.T @ X)
    per_seed = [f[2] for sd in sorted({r["config"]["seed"] for r in runs})
                if (f := _log_fit([r for r in runs if r["config"]["seed"] == sd])) is not None]
    bs, cs = [float(c[1]) for c in per_seed], [float(c[2]) for c in per_seed]
    return dict(b=float(coef[1]), b_se=float(np.sqrt(cov[1, 1])), c=float(coef[2]), c_se=float(np.sqrt(cov[2, 2])),
                n_runs=len(y), resid_sd=float(np.sqrt(s2)), per_seed_b=bs, per_seed_c=cs,
                b_seeds=_mean_se(bs), c_seeds=_mean_se(cs))


def width_summary(runs: list[dict], theory_exponent: float) -> dict:
    """Specialists, A_f (BNN, NNGP), q3, q1 per width (mean ± s.e. over seeds) and the exponent of the count in N,
    per d (``per_d``; ``rows`` and ``exponent`` directly when the runs have one d); with several d also the joint
    fit in N and d (:func:`joint_fit`, ``joint``)."""
    ds = sorted({r["config"]["d"] for r in runs})
    per_d = {}
    for d in ds:
        rows, per_seed, pooled = _width_rows([r for r in runs if r["config"]["d"] == d], theory_exponent)
        m, se = _mean_se(per_seed)
        per_d[str(d)] = dict(rows=rows, exponent=dict(per_seed=per_seed, mean=m, se=se, of_seed_means=pooled,
                                                      theory=theory_exponent))
    if len(ds) == 1:
        return dict(per_d[str(ds[0])], per_d=per_d)
    # the law is a large-d statement: the fit without the smallest d shows whether that d alone bends it
    rest = [r for r in runs if r["config"]["d"] != ds[0]]
    return dict(per_d=per_d, joint=joint_fit(runs), joint_without_smallest_d=joint_fit(rest),
                smallest_d=ds[0], theory=theory_exponent)


# ------------------------------------------------------------------------------------------------------ driver
def three_width(s: dict, d: int) -> int:
    """N1 = N2 of the three-layer P* sweep at dimension d: the size's fixed ``width``, or ``width_per_d`` · d (the
    proportional limit N ∝ d, in which the paper states P* ∝ d) when that is set."""
    return max(int(round(s["width_per_d"] * d)), 2) if s.get("width_per_d") else int(s["width"])


def plan(parts, s: dict, seeds) -> list[tuple[str, dict]]:
    """(part, config) of every run, part by part in the order of ``parts``, seed by seed within a part (the
    specialists use the first ``spec_seeds`` seeds, the two-layer net the first ``two_seeds``)."""
    base = dict(kappa=s["kappa"], warmup=s["warmup"], samples=s["samples"], P_test=s["P_test"])
    spec_ds = s["spec_d"] if isinstance(s["spec_d"], (list, tuple)) else (s["spec_d"],)
    out = []
    for part in parts:
        if part == "three_layer":
            # the start enters the config (and so the cache key) only when it is not the default prior start
            start = {} if s.get("start", "prior") == "prior" else dict(start=s["start"])
            out += [("three_layer", dict(base, model="three_layer", d=d, P=int(round(r * d)), N1=three_width(s, d),
                                         N2=three_width(s, d), seed=seed, **start))
                    for seed in seeds for d in s["d"] for r in s["p_over_d"]]
        elif part == "specialists":
            out += [("specialists", dict(base, model="three_layer", d=d, P=int(round(s["spec_p_over_d"] * d)), N1=N1,
                                         N2=s["width"], seed=seed))
                    for d in spec_ds for seed in seeds[:s["spec_seeds"]] for N1 in s["spec_widths"]]
        else:
            for seed in seeds[:s["two_seeds"]]:
                out += [("two_layer", dict(base, model="two_layer", d=d, P=int(round(r * d)), N1=s["two_width"],
                                           N2=None, seed=seed)) for d in s["two_d"] for r in s["two_p_over_d"]]
            out += [("two_layer_widths", dict(base, model="two_layer", d=d, P=int(round(s["spec_p_over_d"] * d)),
                                              N1=N, N2=None, seed=seed))
                    for d in spec_ds for seed in seeds[:s["two_seeds"]] for N in s["two_spec_widths"]]
    return out


def _extension(part: str, cfg: dict, runs: list[dict], s: dict) -> dict | None:
    """The next run of a P* sweep once its (d, seed) has every grid P: P doubled while A_f < 0.25 at every P (up to
    P/d = ``max_p_over_d``), P halved while A_f ≥ 0.25 already at the smallest P (down to P/d = 1); else None."""
    if part not in ("three_layer", "two_layer"):
        return None
    grid = s["p_over_d"] if part == "three_layer" else s["two_p_over_d"]
    d = cfg["d"]
    same = [r for r in runs if r["config"]["d"] == d and r["config"]["seed"] == cfg["seed"]]
    if {int(round(x * d)) for x in grid} - {r["config"]["P"] for r in same}:
        return None
    if not any(r["A"] >= LEVELS[0] for r in same):
        P = 2 * max(r["config"]["P"] for r in same)
        return dict(cfg, P=P) if P <= s["max_p_over_d"] * d else None
    low = min(same, key=lambda r: r["config"]["P"])
    P = low["config"]["P"] // 2
    return dict(cfg, P=P) if low["A"] >= LEVELS[0] and P >= d else None


def _summarise(summary: dict, s: dict, reference: list[dict] | None = None) -> None:
    """The summaries of every part with runs (P* and slopes, width exponents and joint fits; with ``reference`` runs
    the start-family comparison :func:`start_comparison`)."""
    if summary["three_layer"]:
        summary["three_layer_summary"] = pstar_summary(summary["three_layer"], summary["nngp"]["three_layer"])
        if reference:
            summary["start_comparison"] = start_comparison(summary["three_layer"], reference)
    if summary["specialists"]:
        summary["specialists_summary"] = width_summary(summary["specialists"], THEORY["three_layer_spec_exponent"])
    if summary["two_layer"]:
        summary["two_layer_summary"] = pstar_summary(summary["two_layer"], summary["nngp"]["two_layer"])
    if summary["two_layer_widths"]:
        summary["two_layer_widths_summary"] = width_summary(summary["two_layer_widths"],
                                                            THEORY["two_layer_spec_exponent"])


def run(argv=None) -> int:
    argv = [] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--part", nargs="+", default=list(PARTS), metavar="PART",
                   help=f"some of {', '.join(PARTS)} (default all)")
    p.add_argument("--n-seeds", type=int, default=None,
                   help="number of seeds --seed, --seed + 1, ... of every part (default per size: ci 1; cpu 3 for "
                        "the three-layer P* sweep, 2 for the specialists, 1 for the two-layer net; paper 5)")
    p.add_argument("--spec-d", default=None,
                   help="comma-separated input dimensions of the specialist (width) sweeps, each at P = spec_p_over_d "
                        "· d (default per size: ci 4, cpu 8, paper 32)")
    p.add_argument("--d", dest="dims", default=None,
                   help="comma-separated input dimensions of the three-layer P* sweep instead of the size's (e.g. "
                        "24,32 with --width-per-d 4: one process per d, merged by a run over every d with the same "
                        "--cache)")
    p.add_argument("--width-per-d", dest="width_per_d", type=float, default=None,
                   help="three-layer P* sweep at N1 = N2 = ALPHA · d (the proportional limit) instead of the size's "
                        "fixed width (e.g. 4: N1 = N2 = 24 … 64 at d = 6 … 16)")
    p.add_argument("--start", choices=STARTS, default="prior",
                   help="start family of the three-layer P* sweep's chains: prior (prior draws, default) or aligned "
                        f"({ALIGNED_UNITS} first-layer units planted along w* with overlap ±{ALIGNED_OVERLAP:g}, the "
                        "learned phase); the other parts always start from prior draws")
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps per chain instead of the size's (>= 1)")
    p.add_argument("--samples", type=int, default=None, help="kept draws per chain instead of the size's (>= 1)")
    p.add_argument("--compare-with", dest="compare_with", default=None,
                   help="comma-separated result files (JSON) of the three-layer P* sweep from the other start family: "
                        "the runs at the same d, seed, P and width are compared (key start_comparison)")
    p.add_argument("--cache", default=os.environ.get("BNNZOO_CACHE_CURSE", "/tmp/zoo_cache/curse_of_detail"),
                   help="folder of the per-run cache (a stopped sweep resumes from it)")
    args = p.parse_args(argv)
    C.check_args(args)
    bad = [x for x in args.part if x not in PARTS]
    if bad or not args.part:
        raise ValueError(f"--part must name some of {', '.join(PARTS)}, got {' '.join(args.part)!r}")
    if args.width_per_d is not None and not (args.width_per_d > 0 and math.isfinite(args.width_per_d)):
        raise ValueError(f"--width-per-d must be a number > 0, got {args.width_per_d}")
    for name, v in (("--warmup", args.warmup), ("--samples", args.samples)):
        if v is not None and v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    if args.n_seeds is not None and args.n_seeds < 1:
        raise ValueError(f"--n-seeds must be >= 1, got {args.n_seeds}")
    cache = Path(args.cache)
    if cache.exists() and not cache.is_dir():
        raise ValueError(f"--cache: {cache} is a file, not a folder")
    s = dict(SIZES[args.size])
    if args.dims is not None:
        s["d"] = tuple(C.int_list(args.dims, "--d", 2))
    if args.spec_d is not None:
        sd = C.int_list(args.spec_d, "--spec-d", 2)
        s["spec_d"] = sd if len(sd) > 1 else sd[0]
    if args.n_seeds is not None:
        s.update(n_seeds=args.n_seeds, spec_seeds=args.n_seeds, two_seeds=args.n_seeds)
    if args.width_per_d is not None:
        s["width_per_d"] = args.width_per_d
    s.update({k: v for k, v in (("warmup", args.warmup), ("samples", args.samples)) if v is not None})
    if args.start != "prior":
        if args.part != ["three_layer"]:
            raise ValueError(f"--start {args.start} needs --part three_layer alone, got {' '.join(args.part)}")
        s.update(start=args.start, aligned_units=ALIGNED_UNITS, aligned_overlap=ALIGNED_OVERLAP)
    reference = None
    if args.compare_with is not None:
        paths = [Path(x) for x in args.compare_with.split(",") if x]
        bad = [str(x) for x in paths if not x.is_file()]
        if bad or not paths:
            raise ValueError(f"--compare-with must name existing result files, got {args.compare_with!r}")
        reference = []
        for x in paths:
            runs = json.loads(x.read_text()).get("three_layer", [])
            if not runs:
                raise ValueError(f"--compare-with: {x} holds no three-layer runs")
            reference += runs
        s["compare_with"] = [x.name for x in paths]
    seeds = list(range(args.seed, args.seed + s["n_seeds"]))
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)
    summary = dict(provenance=C.provenance(args, argv), settings=s, parts=args.part, seeds=seeds, theory=THEORY,
                   chains=C.CHAINS, three_layer_width={str(d): three_width(s, d) for d in s["d"]},
                   three_layer=[], specialists=[], two_layer=[], two_layer_widths=[],
                   nngp=dict(three_layer=[], two_layer=[]))
    for model, ds in (("three_layer", s["d"] if "three_layer" in args.part else ()),
                      ("two_layer", s["two_d"] if "two_layer" in args.part else ())):
        for seed in (seeds if model == "three_layer" else seeds[:s["two_seeds"]]):
            for d in ds:
                C.log(f"{NAME}: NNGP alignment curve, {model}, d={d}, seed={seed}")
                summary["nngp"][model].append(nngp_curve(model, d, seed, s, cache))
    todo = plan(args.part, s, seeds)
    done = 0
    while todo:
        part, cfg = todo.pop(0)
        done += 1
        C.log(f"{NAME}: [{done}/{done + len(todo)}] {part} d={cfg['d']} P={cfg['P']} N1={cfg['N1']} "
              f"seed={cfg['seed']}")
        res, was_cached = cached_entry(cache, cfg, args.progress)
        summary[part].append(dict(res, P_over_d=cfg["P"] / cfg["d"]))
        _summarise(summary, s, reference)
        files.write(summary)
        C.log(f"{NAME}: A_f {res['A']:.3f} (NNGP {res['A_nngp']:.3f}), specialists {res['specialists']:.2f}, "
              f"health {res['health']['status']}" + (" (cached)" if was_cached else f", {res['seconds']} s"))
        nxt = _extension(part, cfg, summary[part], s)
        if nxt is not None:
            todo.insert(0, (part, nxt))
    C.log(f"{NAME}: wrote {files.json}")
    return 0
