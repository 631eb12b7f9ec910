"""Each quoted slope or exponent of the reproduction page with and without its most influential point.

A row of ``reproduce/claims.toml`` whose ``value`` quotes a fitted slope or exponent (:data:`reproduce.render.SLOPE`)
states in its field ``influence`` the same fit with and without the point whose removal changes it most
(``render --check`` refuses the row otherwise).  This module reads, for every such row (:data:`ROWS`), the points
the row's ``value`` fits from its result files, refits them and writes that sentence (:func:`summary`).

Three kinds of fit occur (a *series* of :data:`ROWS`):

* ``single``: one least-squares line (log y on log x, or y on x), as :func:`fit_with_and_without`.
* ``seeds``: one line per seed and the mean ± standard error of the slopes over seeds (the curse-of-detail, attention
  and deep-linear rows).  The point left out is one x value, left out of every seed's fit: the one whose removal
  changes the mean slope most.
* ``joint``: one coefficient of the joint fit log count = c₀ + b log N1 + c log d over runs (row C4); the point left
  out is one value of N1 (for b) or of d (for c), with every run there.

A fit that rests on two points (or two per seed) is said to, with nothing left out.

Run: ``python -m reproduce.influence [ID ...]`` prints ``id: sentence`` for every row (or the rows named).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from pathlib import Path

import numpy as np

from . import _common as C

RESULTS = Path(__file__).resolve().parent / "results"
MINUS = "\u2212"


# ------------------------------------------------------------------------------------------------------- fitting
def _line(x, y, w=None) -> tuple[float, float | None]:
    """Least-squares slope of ``y`` on ``x`` and its standard error.

    Parameters
    ----------
    x, y : array_like
        The points (already on the fitted scale), at least two distinct x.
    w : array_like, optional
        Weights 1/s² of the y values.  Without them the standard error comes from the residuals (None from two
        points); with them it is the weighted one, scaled up by √(χ²/dof) when the points scatter more than their
        errors say (as :func:`reproduce.finite_size.fit_exponent`).

    Returns
    -------
    tuple
        (slope, standard error or None).
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    weighted = w is not None
    w = np.asarray(w, float) if weighted else np.ones_like(x)
    A = np.column_stack([np.ones_like(x), x])
    cov = np.linalg.inv(A.T @ (A * w[:, None]))
    b = cov @ (A.T @ (w * y))
    r = y - A @ b
    dof = len(x) - 2
    if dof <= 0:
        return float(b[1]), float(math.sqrt(cov[1, 1])) if weighted else None
    chi2 = float(np.sum(w * r ** 2))
    scale = max(chi2 / dof, 1.0) if weighted else chi2 / dof
    return float(b[1]), float(math.sqrt(cov[1, 1] * scale))


def _scaled(x, y, se, log: bool):
    """The points on the fitted scale and their weights (None without ``se``)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    s = None if se is None else np.asarray(se, float)
    if log:
        if s is not None:
            s = s / y
        x, y = np.log(x), np.log(y)
    return x, y, (None if s is None else 1.0 / s ** 2)


def fit_with_and_without(x, y, se=None, log: bool = True) -> dict:
    """Least-squares slope of log y on log x, with each single point left out.

    Parameters
    ----------
    x, y : array_like
        The points, at least 3; on a log scale every x and y must be positive.
    se : array_like, optional
        Standard errors of ``y``; the fit is then weighted by 1/se² of the fitted values (se/y on a log scale) and its
        standard error is the weighted one, scaled up by √(χ²/dof) when the points scatter more than their errors
        say.
        Without them the fit is unweighted and its standard error comes from the residuals.
    log : bool
        Fit log y on log x (default) or y on x.

    Returns
    -------
    dict
        ``slope``, ``se``, ``n`` (points) and ``without``: ``x`` (the x of the most influential point, the one whose
        removal changes the slope most), ``slope`` and ``se`` of the fit without it (``se`` None when two unweighted
        points are left); ``left_out`` lists (x, slope, se) for every point left out in turn.

    Notes
    -----
    Influence is measured on the slope only: a point far off the line near the middle of log x moves the intercept
    more than the slope, so leaving out an end point (high leverage) can change the slope more.

    Raises
    ------
    ValueError
        With fewer than 3 points, arrays of different lengths, fewer than 3 distinct x, non-positive values on a log
        scale or non-positive standard errors.
    """
    x, y = np.asarray(x, float).ravel(), np.asarray(y, float).ravel()
    if len(x) != len(y):
        raise ValueError(f"y must have one value per x ({len(x)}), got {len(y)}")
    if len(x) < 3:
        raise ValueError(f"x must hold at least 3 points (a fit without one of them needs two), got {len(x)}")
    if len(set(x.tolist())) < 3:
        raise ValueError(f"x must take at least 3 distinct values, got {sorted(set(x.tolist()))}")
    if se is not None:
        se = np.asarray(se, float).ravel()
        if len(se) != len(x):
            raise ValueError(f"se must have one value per x ({len(x)}), got {len(se)}")
        if not np.all(se > 0):
            raise ValueError(f"se must be positive, got {se.tolist()}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be finite")
    if log and not (np.all(x > 0) and np.all(y > 0)):
        raise ValueError("x and y must be positive on a log scale (log=True)")
    fx, fy, w = _scaled(x, y, se, log)
    slope, s = _line(fx, fy, w)
    left = []
    for i in range(len(x)):
        keep = np.arange(len(x)) != i
        b, sb = _line(fx[keep], fy[keep], None if w is None else w[keep])
        left.append((float(x[i]), b, sb))
    xi, b, sb = max(left, key=lambda t: abs(t[1] - slope))
    return dict(slope=slope, se=s, n=len(x), without=dict(x=xi, slope=b, se=sb), left_out=left)


def _two_point_slope(x, y, log: bool) -> float:
    """The slope of the line through two (or more) points."""
    fx, fy, _ = _scaled(x, y, None, log)
    return _line(fx, fy)[0]


def _seed_slopes(seeds: dict, log: bool, drop=None) -> list:
    """Per seed, the slope over its points (without x = ``drop``); None where fewer than two are left."""
    out = []
    for x, y in seeds.values():
        pts = [(a, b) for a, b in zip(x, y) if b is not None and a != drop]
        out.append(_two_point_slope(*zip(*pts), log) if len(pts) >= 2 else None)
    return out


def _joint_coef(runs: list, which: int, drop=None) -> tuple[float, float]:
    """Coefficient ``which`` (1: b of log N1, 2: c of log d) of log count = c₀ + b log N1 + c log d over ``runs``
    ((N1, d, count) each) without the runs at ``drop`` (of N1 for b, of d for c), with its ordinary standard error."""
    rs = [r for r in runs if r[which - 1] != drop]
    X = np.column_stack([np.ones(len(rs)), np.log([r[0] for r in rs]), np.log([r[1] for r in rs])])
    y = np.log([r[2] for r in rs])
    coef = np.linalg.lstsq(X, y, rcond=None)[0]
    res = y - X @ coef
    cov = float(res @ res) / (len(y) - 3) * np.linalg.inv(X.T @ X)
    return float(coef[which]), float(math.sqrt(cov[which, which]))


def evaluate(series: dict) -> dict:
    """One series of :data:`ROWS` fitted with and without its most influential point.

    Parameters
    ----------
    series : dict
        ``kind`` (``single``, ``seeds`` or ``joint``), ``key``, ``label``, ``xname``, ``digits`` and the points:
        ``x``, ``y``, optional ``se`` and ``log`` (single); ``seeds`` {seed: (x, y)} and ``log`` (seeds); ``runs``
        [(N1, d, count)] and ``which`` (joint).

    Returns
    -------
    dict
        ``key``, ``label``, ``xname``, ``digits``, ``xs`` (the x values), ``value`` and ``se`` of the fit with every
        point (``per_seed`` slopes for seeds) and ``without`` (``x``, ``value``, ``se``, ``per_seed``), None when
        the fit rests on two points (two per seed).
    """
    kind = series["kind"]
    out = {k: series[k] for k in ("key", "label", "xname", "digits")}
    if kind == "single":
        x, y, se, log = series["x"], series["y"], series.get("se"), series.get("log", True)
        out["xs"] = list(x)
        if len(x) < 3:
            return dict(out, value=_two_point_slope(x, y, log), se=None, without=None)
        f = fit_with_and_without(x, y, se, log)
        w = f["without"]
        return dict(out, value=f["slope"], se=f["se"],
                    without=dict(x=w["x"], value=w["slope"], se=w["se"], per_seed=None))
    if kind == "seeds":
        seeds, log = series["seeds"], series.get("log", True)
        used = {s: [a for a, b in zip(x, y) if b is not None] for s, (x, y) in seeds.items()}
        out["xs"] = sorted({a for xs in used.values() for a in xs})
        out["x_per_seed"] = used
        per = _seed_slopes(seeds, log)
        m, se = C.mean_se(per)
        out.update(value=m, se=se, per_seed=per, seeds=list(seeds))
        if max(len(v) for v in used.values()) < 3:
            return dict(out, without=None)
        best = None
        for xd in out["xs"]:
            p = _seed_slopes(seeds, log, drop=xd)
            mw, sw = C.mean_se(p)
            if mw is not None and (best is None or abs(mw - m) > abs(best["value"] - m)):
                best = dict(x=xd, value=mw, se=sw, per_seed=p)
        return dict(out, without=best)
    if kind == "joint":
        runs, which = series["runs"], series["which"]
        out["xs"] = sorted({r[which - 1] for r in runs})
        v, s = _joint_coef(runs, which)
        left = [(xd, *_joint_coef(runs, which, xd)) for xd in out["xs"]]
        xd, b, sb = max(left, key=lambda t: abs(t[1] - v))
        return dict(out, value=v, se=s, n_runs=len(runs), without=dict(x=xd, value=b, se=sb, per_seed=None))
    raise ValueError(f"series kind must be single, seeds or joint, got {kind!r}")


# ------------------------------------------------------------------------------------------------ result files
@functools.lru_cache(maxsize=None)
def _load(stem: str) -> dict:
    """The result file ``reproduce/results/<stem>.json``."""
    return json.loads((RESULTS / f"{stem}.json").read_text())


def _by_key(d: dict) -> dict:
    """A JSON object with numeric keys as {number: value}, in order."""
    return {int(k) if float(k).is_integer() else float(k): v for k, v in sorted(d.items(), key=lambda kv: float(kv[0]))}


def _pstar_seeds(pstar: dict) -> dict:
    """{seed: (x, P* or None)} from {seed: {x: P*}} (curse of detail) or {seed: {x: {P_star, flag}}} (attention,
    P* None where the crossing is flagged)."""
    out = {}
    for seed, byx in _by_key(pstar).items():
        byx = _by_key(byx)
        vals = [(v["P_star"] if v["flag"] == "" else None) if isinstance(v, dict) else v for v in byx.values()]
        out[seed] = (list(byx), vals)
    return out


def _series(kind: str, key: str, label: str, xname: str, digits: int, **points) -> dict:
    """One series of :data:`ROWS`."""
    return dict(kind=kind, key=key, label=label, xname=xname, digits=digits, **points)


def a1() -> list:
    """Row A1: log–log slopes of q_a (and of the ReLU bulk readout) in P, unweighted (``readout_scaling_cpu``)."""
    res = _load("readout_scaling_cpu")["results"]
    names = dict(linear="log–log slope of q_a in P, linear", sigmoidal="sigmoidal", relu="ReLU",
                 linear_fixed="control (σ_a² fixed)")
    out = [_series("single", net, lab, "P", 3, x=[e["P"] for e in res[net]], y=[e["q_a"] for e in res[net]])
           for net, lab in names.items()]
    out.append(_series("single", "relu_bulk", "ReLU bulk readout exponent", "P", 2, x=[e["P"] for e in res["relu"]],
                       y=[e["bulk"] for e in res["relu"]]))
    return out


def q1() -> list:
    """Row Q1: exponent of the ReLU outliers' readout and preactivation in N, weighted by the s.e. of the mean log
    size per N (floored at 10⁻³, as ``finite_size.fit_exponent``) (``finite_size_cpu_n400long``)."""
    out = []
    relu = _load("finite_size_cpu_n400long")["relu"]
    for key in ("readout", "preactivation"):
        x, y, se = [], [], []
        for e in relu:
            lv = np.log(np.asarray(e["outliers"][key], float))
            if lv.size >= 2:
                x.append(e["N"])
                y.append(float(np.exp(lv.mean())))
                se.append(y[-1] * max(float(lv.std(ddof=1)) / math.sqrt(lv.size), 1e-3))
        out.append(_series("single", key, f"outlier {key} exponent", "N", 3, x=x, y=y, se=se))
    return out


def _outlier_sizes(stem: str, net: str, key: str, stat) -> tuple[int, float]:
    """(N, ``stat`` of the outliers' ``key`` sizes) of net ``net`` in result file ``stem``."""
    n = next(n for n in _load(stem)["nets"] if n["net"] == net)
    return n["N"], float(stat(np.abs(np.asarray(n["outliers"][key], float))))


def _rms(v):
    """Root mean square of an array."""
    return np.sqrt(np.mean(v ** 2))


def s4() -> list:
    """Row S4: log–log slope of the certified 111 excess over the mean field in N = P, weighted by its s.e.
    (``certified_finite_size``)."""
    d = _load("certified_finite_size")
    ws = [d["widths"][str(N)] for N in d["analysis"]["N"]]
    return [_series("single", "excess_111", "log–log slope of the 111 excess over the mean field in N = P", "N", 2,
                    x=[w["N"] for w in ws], y=[w["excess_111"] for w in ws], se=[w["excess_111_se"] for w in ws])]


def b1() -> list:
    """Row B1: growth exponents of the ReLU outliers' RMS readout and preactivation from N = 60 to 120 (seed 0;
    ``other_codes_cpu``, ``other_codes_cpu_N120``)."""
    out = []
    for key, lab in (("readout", "ReLU outlier RMS |a| exponent"),
                     ("preactivation", "ReLU outlier RMS preactivation exponent")):
        pts = [_outlier_sizes(s, "relu", key, _rms) for s in ("other_codes_cpu", "other_codes_cpu_N120")]
        out.append(_series("single", key, lab, "N", 2, x=[p[0] for p in pts], y=[p[1] for p in pts]))
    return out


def b2() -> list:
    """Row B2: growth exponents of the outliers' median readout and preactivation from N = 60 to 120, softplus and
    ReLU² (seed 0; ``other_codes_cpu``, ``other_codes_cpu_N120``)."""
    out = []
    for net, name in (("softplus", "softplus"), ("relu2", "ReLU²")):
        for key, sym in (("readout", "|a|"), ("preactivation", "z")):
            pts = [_outlier_sizes(s, net, key, np.median) for s in ("other_codes_cpu", "other_codes_cpu_N120")]
            out.append(_series("single", f"{net}_{key}", f"{name} {sym} exponent", "N", 2, x=[p[0] for p in pts],
                               y=[p[1] for p in pts]))
    return out


def _curse_pstar(stem: str, level: str, model: str = "three_layer_summary") -> dict:
    """{seed: (d, P*)} at A = ``level`` of the net ``model`` (a summary key) in curse-of-detail file ``stem``."""
    return _pstar_seeds(_load(stem)[model]["P_star"][level])


def _curse_pstar_joined(stems: list, level: str) -> dict:
    """{seed: (d, P*)} at A = ``level`` over several curse-of-detail files of the three-layer net, their seeds and
    input dimensions joined (d in increasing order)."""
    seeds: dict = {}
    for stem in stems:
        for seed, (x, y) in _curse_pstar(stem, level).items():
            seeds.setdefault(seed, []).extend(zip(x, y))
    return {seed: tuple(list(v) for v in zip(*sorted(pts))) for seed, pts in sorted(seeds.items())}


def _nngp(model: str) -> dict:
    """{seed: (d, P*(A = 0.25))} of the NNGP baseline of ``model`` (``curse_of_detail_cpu``)."""
    seeds = {}
    for c in _load("curse_of_detail_cpu")["nngp"][model]:
        x, y = seeds.setdefault(c["seed"], ([], []))
        x.append(c["d"])
        y.append(c["P_star"]["0.25"])
    return dict(sorted(seeds.items()))


def c9() -> list:
    """Row C9: per-seed log–log slopes of P*(A = 0.25) (and of P*(A = 0.5)) in d at N1 = N2 = 32
    (``curse_of_detail_cpu``)."""
    return [_series("seeds", "fixed", "fixed-width slope of P*(A = 0.25) in d", "d", 2,
                    seeds=_curse_pstar("curse_of_detail_cpu", "0.25")),
            _series("seeds", "fixed_A0.5", "fixed-width slope of P*(A = 0.5)", "d", 2,
                    seeds=_curse_pstar("curse_of_detail_cpu", "0.5"))]


PROPORTIONAL_SEEDS_0_5 = ["curse_of_detail_cpu_proportional", "curse_of_detail_cpu_proportional_seeds345",
                          "curse_of_detail_cpu_proportional_d20"]
"""The proportional-limit runs of row C1 (N1 = N2 = 4 d): seeds 0–2 and 3–5 at d = 6, 8, 12, 16, and seeds 0–5 at d = 20."""


def c1() -> list:
    """Row C1: the C9 slopes and the proportional-limit ones (N1 = N2 = 4 d; ``curse_of_detail_cpu_proportional``,
    seeds 0–5 joined, and the aligned start family ``curse_of_detail_cpu_proportional_aligned``)."""
    return c9() + [_series("seeds", "proportional", "proportional-limit slope of P*(A = 0.25)", "d", 2,
                           seeds=_curse_pstar("curse_of_detail_cpu_proportional", "0.25")),
                   _series("seeds", "proportional_A0.5", "proportional-limit slope of P*(A = 0.5)", "d", 2,
                           seeds=_curse_pstar("curse_of_detail_cpu_proportional", "0.5")),
                   _series("seeds", "proportional_6", "proportional-limit slope of P*(A = 0.25), seeds 0–5", "d", 2,
                           seeds=_curse_pstar_joined(PROPORTIONAL_SEEDS_0_5, "0.25")),
                   _series("seeds", "proportional_aligned", "proportional-limit slope of P*(A = 0.25) from the aligned "
                           "start, seeds 0–5", "d", 2,
                           seeds=_curse_pstar("curse_of_detail_cpu_proportional_aligned", "0.25"))]


def c2() -> list:
    """Row C2: per-seed log–log slopes of the NNGP's P*(A = 0.25) in d (``curse_of_detail_cpu``)."""
    return [_series("seeds", "nngp", "NNGP slope of P*(A = 0.25) in d", "d", 2, seeds=_nngp("three_layer"))]


def _spec_seeds(runs: list) -> dict:
    """{seed: (N1, specialists per net)} of width runs at one d."""
    seeds = {}
    for r in sorted(runs, key=lambda r: (r["config"]["seed"], r["config"]["N1"])):
        x, y = seeds.setdefault(r["config"]["seed"], ([], []))
        x.append(r["config"]["N1"])
        y.append(r["specialists"])
    return seeds


def c4() -> list:
    """Row C4: per-seed exponents of the specialist count in N1 at each d, and the joint fit's b and c over
    d = 8, 16, 32 (``curse_of_detail_cpu_spec_d``)."""
    runs = _load("curse_of_detail_cpu_spec_d")["specialists"]
    ds = sorted({r["config"]["d"] for r in runs})
    out = [_series("seeds", f"N1_d{d}", f"exponent in N1 at d = {d}", "N1", 2,
                   seeds=_spec_seeds([r for r in runs if r["config"]["d"] == d])) for d in ds]
    joint = [(r["config"]["N1"], r["config"]["d"], r["specialists"]) for r in runs if r["config"]["d"] != ds[0]]
    out += [_series("joint", "joint_b", f"joint-fit b over d = {', '.join(map(str, ds[1:]))}", "N1", 2,
                    runs=joint, which=1),
            _series("joint", "joint_c", "joint-fit c", "d", 2, runs=joint, which=2)]
    return out


def c6() -> list:
    """Row C6: per-seed slopes of the two-layer net's P*(A = 0.25) in d and exponents of its specialist count in N
    (``curse_of_detail_cpu``)."""
    return [_series("seeds", "pstar", "slope of P*(A = 0.25) in d", "d", 2,
                    seeds=_curse_pstar("curse_of_detail_cpu", "0.25", "two_layer_summary")),
            _series("seeds", "specialists", "specialist exponent in N", "N", 2,
                    seeds=_spec_seeds(_load("curse_of_detail_cpu")["two_layer_widths"]))]


def c7() -> list:
    """Row C7: per-seed log–log slopes of the attention P*(A_f = 0.25) in d (``attention_dim_cpu``)."""
    return [_series("seeds", "d", "slope of P* in d", "d", 2,
                    seeds=_pstar_seeds(_load("attention_dim_cpu")["analysis"]["P_star"]))]


def c8() -> list:
    """Row C8: per-seed log–log slopes of the attention P* in L at β = 1 and at β = √L
    (``attention_context_cpu``)."""
    v = _load("attention_context_cpu")["analysis"]["variants"]
    return [_series("seeds", "fixed", "β = 1 slope of P* in L", "L", 2, seeds=_pstar_seeds(v["fixed"]["P_star"])),
            _series("seeds", "sqrtL", "β = √L slope", "L", 2, seeds=_pstar_seeds(v["sqrtL"]["P_star"]))]


def _t90(init: str, take_log: bool) -> dict:
    """{seed: (D, T90 or ln T90)} of start ``init`` (``deep_linear_dynamics_cpu``)."""
    es = sorted((e for e in _load("deep_linear_dynamics_cpu")["depth"]["entries"] if e["init"] == init),
                key=lambda e: e["depth"])
    D = [e["depth"] for e in es]
    per_seed = list(zip(*[e["T90"]["per_seed"] for e in es]))
    f = (lambda v: math.log(v) if v else None) if take_log else (lambda v: v)
    return {s: (D, [f(v) for v in y]) for s, y in enumerate(per_seed)}


def _t90_series(start: str, label: str, digits: int, take_log: bool) -> dict:
    """Per-seed slopes of T90 (or ln T90) in D for one start of ``deep_linear_dynamics_cpu``."""
    return _series("seeds", start, label, "D", digits, seeds=_t90(start, take_log), log=False)


def g6() -> list:
    """Row G6: per-seed slopes of ln T90 in D (log-slope per layer), small and scaled Gaussian starts
    (``deep_linear_dynamics_cpu``)."""
    return [_t90_series("gaussian_small", "small Gaussian start, log-slope of T90 in D", 3, True),
            _t90_series("gaussian_scaled", "scaled Gaussian log-slope", 2, True)]


def g8() -> list:
    """Row G8: per-seed slopes of T90 in D for the orthogonal start and of ln T90 for the scaled Gaussian one
    (``deep_linear_dynamics_cpu``)."""
    return [_t90_series("orthogonal", "orthogonal start, slope of T90 in D", 3, False),
            _t90_series("gaussian_scaled", "scaled Gaussian log-slope", 2, True)]


def g7() -> list:
    """Row G7: exponents α (of D) and β (of b0) of the joint fit ln T½ = c + α ln D + β ln b0 of the top mode's
    scaled half time from the decoupled start, b0 read as the end-to-end and as the per-layer mode strength
    (``deep_linear_dynamics_cpu_b0``)."""
    es = _load("deep_linear_dynamics_cpu_b0")["b0"]["entries"]
    out = []
    for reading, label in (("end_to_end", "end-to-end b0"), ("per_layer", "per-layer b0")):
        runs = [(e["depth"], e["b0"], e["T_half_top"]["mean"]) for e in es if e["reading"] == reading]
        out += [_series("joint", f"{reading}_alpha", f"{label}, exponent α of D", "D", 2, runs=runs, which=1),
                _series("joint", f"{reading}_beta", f"{label}, exponent β of b0", "b0", 2, runs=runs, which=2)]
    return out


ROWS = {"A1": a1, "Q1": q1, "S4": s4, "B1": b1, "B2": b2, "C1": c1, "C2": c2, "C4": c4, "C6": c6, "C7": c7, "C8": c8,
        "C9": c9, "G6": g6, "G7": g7, "G8": g8}
"""Row id → the function that reads the points its ``value`` fits from its result files (a list of series, see
:func:`evaluate`): every row of ``claims.toml`` whose ``value`` quotes a slope or exponent."""


# ---------------------------------------------------------------------------------------------------- sentences
def influence(row_id: str) -> list:
    """Every series of row ``row_id`` fitted with and without its most influential point (:func:`evaluate`).

    Raises
    ------
    ValueError
        When ``row_id`` is not in :data:`ROWS`.
    """
    if row_id not in ROWS:
        raise ValueError(f"row_id must be one of {', '.join(ROWS)}, got {row_id!r}")
    return [evaluate(s) for s in ROWS[row_id]()]


def _num(v, digits: int) -> str:
    """``v`` to ``digits`` decimals with a typographic minus (no "−0.00")."""
    s = f"{v:.{digits}f}"
    return s.replace("-", MINUS) if float(s) != 0 else s.lstrip("-")


def _pm(v, se, digits: int) -> str:
    """``v ± se`` to ``digits`` decimals (a standard error that would round to 0 with one significant digit)."""
    if v is None:
        return "—"
    if se is None:
        return _num(v, digits) + " (no s.e. from two points)"
    return _num(v, digits) + (f" ± {se:.{digits}f}" if se >= 0.5 * 10 ** -digits else f" ± {se:.1g}")


def _x(v) -> str:
    """An x value as the rows write it (integers without a decimal point)."""
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def _clause(r: dict, prev) -> str:
    """One fit's part of the sentence (its x values left out when ``prev``, the previous (xname, xs), has them)."""
    dg, xn = r["digits"], r["xname"]
    over = "" if (xn, r["xs"]) == prev else f" over {xn} = {', '.join(_x(v) for v in r['xs'])}"
    if "per_seed" in r:
        got = [(s, p) for s, p in zip(r["seeds"], r["per_seed"]) if p is not None]
        vals = " / ".join(_num(p, dg) for _, p in got)
        if r["without"] is None:
            where = "; ".join(f"{xn} = {', '.join(_x(v) for v in r['x_per_seed'][s])}" for s, _ in got)
            who = f"seed {got[0][0]}" if len(got) == 1 else f"seeds {', '.join(str(s) for s, _ in got)}"
            return (f"{r['label']} ({who}) rests on two points per seed ({where}): {vals}; nothing can be left out")
        w = r["without"]
        wvals = " / ".join("—" if p is None else _num(p, dg) for p in w["per_seed"])
        return (f"{r['label']}{over}, per seed {vals}, mean {_pm(r['value'], r['se'], dg)}; without {xn} = "
                f"{_x(w['x'])} (the most influential point, left out of every seed's fit): {wvals}, mean "
                f"{_pm(w['value'], w['se'], dg)}")
    if r["without"] is None:
        return (f"{r['label']} rests on two points ({xn} = {', '.join(_x(v) for v in r['xs'])}): "
                f"{_num(r['value'], dg)}; nothing can be left out")
    w = r["without"]
    runs = f" ({r['n_runs']} runs)" if "n_runs" in r else ""
    return (f"{r['label']}{over}{runs}: {_pm(r['value'], r['se'], dg)}; without {xn} = {_x(w['x'])} "
            f"(the most influential point): {_pm(w['value'], w['se'], dg)}")


def summary(row_id: str) -> str:
    """One sentence: each fit of row ``row_id`` with and without its most influential point.

    Returns
    -------
    str
        The fits' clauses joined by " — ", e.g. "NNGP slope of P*(A = 0.25) in d over d = 6, 8, 12, 16, per seed
        1.75 / 2.83 / 1.73, mean 2.10 ± 0.37; without d = 16 (the most influential point, left out of every seed's
        fit): 1.62 / 2.73 / 1.39, mean 1.91 ± 0.41." (row C2); a fit on two points says so.

    Raises
    ------
    ValueError
        When ``row_id`` is not in :data:`ROWS`.
    """
    clauses, prev = [], None
    for r in influence(row_id):
        clauses.append(_clause(r, prev))
        prev = (r["xname"], r["xs"])
    return " — ".join(clauses) + "."


def main(argv=None) -> int:
    """Print ``id: sentence`` for every row of :data:`ROWS` (or the rows named)."""
    p = argparse.ArgumentParser(prog="python -m reproduce.influence", description=__doc__.split("\n\n")[0])
    p.add_argument("rows", nargs="*", metavar="ID", help=f"rows to print (default: all of {', '.join(ROWS)})")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    bad = [r for r in args.rows if r not in ROWS]
    if bad:
        p.error(f"ID must be one of {', '.join(ROWS)}, got {bad[0]!r}")
    for row in args.rows or ROWS:
        print(f"{row}: {summary(row)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
