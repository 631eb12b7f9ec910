"""Finite size on the toy task (theory page §3, §5): ReLU outliers and sigmoidal branch masses versus the width N at
fixed P.

* ReLU, y− = −1/2: the outlier neurons' readout norm |a_i| and preactivation size (RMS over draws and points) for
  each N, the exponent of their growth with N fitted on a log–log scale (theory: ½, outliers of order √N against an
  O(1) bulk) and the outlier count per chain (theory: at least m − 1; on the toy task m = 3, one per class).
* Sigmoidal, y− = ½: the fraction of units on each code (modal code of the unit over its draws) and the readout
  branch masses (BIC clustering) for each N, against the single-neuron mean field (N → ∞; the same for every N since
  P and σ_a² = 1/P are fixed).

Every entry records the sampler health and the R̂ across chains of the permutation-invariant observables (training
error, readout norm per class, network outputs, outlier count), so frozen units are shown frozen at equilibrium.

* **From certified runs** (``--from-certified``): instead of sampling, the sigmoidal part reads certified runs of row
  ``sig1`` of ``reproduce/certified.py`` (y− = ½, N = P, one temperature shared by every run, several start families,
  ``certify=True``; :func:`certified_entry` refuses anything else).  Per N: the per-draw fraction of the units on
  each of the codes 011, 101, 110, 111 per family (mean ± s.e. over the family's chains, the certification's error
  model) and pooled over the families by their plain mean (s.e. √Σ s.e.² / F: the families are independent runs of
  equal standing, and their agreement is what the certification tested), against the single-neuron mean field's
  masses at that P and T as the run recorded them (N → ∞ at fixed P; here P = N grows with N, so the mean field is
  evaluated at each P); the excess of the 111 fraction over the mean field with its s.e. (the mean field carries no
  sampling error, so the s.e. is the sampled fraction's), N × excess, and the total-variation distance to
  the mean field, ½ Σ |sampled − mean field| over every code (the four and the rare others, whose mass is given
  separately).  Across N: the weighted least-squares slope of log excess on log N (weights from the s.e. of log
  excess, scaled up by √(χ²/dof) when the points scatter more than their errors say;
  :func:`reproduce.influence.fit_with_and_without`) and the same fit without its most influential point: an excess
  that is a finite-size effect of order 1/N has slope −1 and a constant N × excess.

* **ReLU from certified runs** (``--from-certified`` naming runs of row ``relu`` of ``reproduce/certified.py``: y− = −½,
  N = P, one temperature, certified): per N the outliers' RMS readout norm |a| (and the bulk's) per family (mean ±
  s.e. over the family's chains, :func:`reproduce.certified.outlier_sizes`) and pooled over the families as above,
  the outliers per class per family; across N the weighted least-squares slope of log RMS |a| on log N for the
  outliers and the bulk, with and without the most influential point (theory: ½ for the outliers, 0 for the bulk,
  along N = P as in Fig. 2).  Writes ``certified_finite_size_relu`` by default.

Run: ``python -m reproduce finite_size --size ci|cpu|paper [--parts relu,sigmoid] [--widths N,...] [--relu-warmup K]
[--overwrite]``, or ``python -m reproduce finite_size --combine A.json B.json ... --name STEM`` to merge the widths of
several runs into one result without sampling, or ``python -m reproduce finite_size --from-certified
'certified_units_sig1_n30_T0.01,certified_units_sig1_n60_T0.01,certified_units_sig1_n100' [--name STEM]``
(comma-separated result stems or glob patterns in ``--out``; writes ``certified_finite_size`` by default).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from bnnzoo.theory.critical_temperature import redundant_mass, toy_meanfield

from . import _common as C
from .influence import fit_with_and_without

NAME = "finite_size"
CLAIMS = ("S1", "S2", "S4", "Q1", "Q2")
M = 3          # classes of the toy task
# per size: P, N0, ReLU widths, sigmoid widths, warm-up (ReLU, sigmoid), kept draws, z thinning
SIZES = {
    "ci": dict(P=20, N0=40, relu_N=(20, 40), sigmoid_N=(20, 40), relu_warmup=200, sigmoid_warmup=150, samples=100,
               thin_z=1),
    "cpu": dict(P=100, N0=120, relu_N=(50, 100, 200, 400), sigmoid_N=(50, 100, 200), relu_warmup=2000,
                sigmoid_warmup=500, samples=400, thin_z=2),
    "paper": dict(P=100, N0=120, relu_N=(50, 100, 200, 400, 700, 1000), sigmoid_N=(50, 100, 200, 500, 1000),
                  relu_warmup=3000, sigmoid_warmup=1000, samples=500, thin_z=5),
}
Y_NEG = {"relu": -0.5, "sigmoidal": 0.5}
CERTIFIED_ROW = C.SIG1_ROW                 # the row of reproduce/certified.py that --from-certified reads
FROM_CERTIFIED_IGNORES = ("--size", "--seed", "--progress", "--parts", "--widths", "--relu-warmup", "--combine")
"""The options that ``--from-certified`` (no sampling, no merging) would ignore, and so refuses."""
CODES = ("011", "101", "110", "111")       # the mean field's codes on the toy task at y− = ½


def fit_exponent(Ns, values) -> dict:
    """Weighted least-squares slope of mean log(value) against log N.

    ``values`` : per N, the list of the outliers' sizes.  Each N's point is the mean of log(size) over its outliers
    with standard error std/√n (n ≥ 2; N with fewer outliers is left out).  The slope's standard error is the WLS one,
    scaled up by √(χ²/dof) when the points scatter more than their errors say.
    Returns {slope, se, intercept, n_points, chi2_dof}.
    """
    x, y, s = [], [], []
    for N, v in zip(Ns, values):
        lv = np.log(np.asarray(v, float))
        if lv.size >= 2:
            x.append(math.log(N))
            y.append(float(lv.mean()))
            s.append(max(float(lv.std(ddof=1)) / math.sqrt(lv.size), 1e-3))
    if len(x) < 2:
        return dict(slope=float("nan"), se=float("nan"), intercept=float("nan"), n_points=len(x),
                    chi2_dof=float("nan"))
    x, y, w = np.array(x), np.array(y), 1.0 / np.array(s) ** 2
    A = np.stack([np.ones_like(x), x], 1)
    cov = np.linalg.inv(A.T @ (A * w[:, None]))
    b = cov @ (A.T @ (w * y))
    chi2 = float(np.sum(w * (y - A @ b) ** 2))
    dof = len(x) - 2
    scale = math.sqrt(max(chi2 / dof, 1.0)) if dof > 0 else 1.0
    return dict(slope=float(b[1]), se=float(math.sqrt(cov[1, 1]) * scale), intercept=float(b[0]), n_points=len(x),
                chi2_dof=chi2 / dof if dof > 0 else float("nan"))


def meanfield_masses(task, T: float, sigma_a2: float) -> dict:
    """Mean-field branch masses per code (N → ∞) for the task."""
    from bnnzoo.theory.meanfield import single_neuron_meanfield

    th = single_neuron_meanfield(task.X, task.Y, labels=task.labels, nonlinearity="sigmoid", temperature=T,
                                 sigma_a2=sigma_a2)
    return {str(c): float(p) for c, p in zip(th.branch_code, th.branch_mass)}


def relu_entry(N: int, s: dict, args) -> dict:
    run, task, dt = C.sample_toy("relu", N=N, P=s["P"], N0=s["N0"], y_neg=Y_NEG["relu"], warmup=s["relu_warmup"],
                                 samples=s["samples"], seed=args.seed, thin_z=s["thin_z"], progress=args.progress)
    rd = C.run_data_of(run)
    return dict(N=N, P=s["P"], N0=s["N0"], warmup=s["relu_warmup"], samples=s["samples"], seconds=round(dt, 1),
                sigma_a2=rd.sigma_a2, temperature=rd.temperature, health=C.health_summary(run),
                outliers=C.outlier_summary(rd))


def sigmoid_entry(N: int, s: dict, args) -> dict:
    run, task, dt = C.sample_toy("sigmoidal", N=N, P=s["P"], N0=s["N0"], y_neg=Y_NEG["sigmoidal"],
                                 warmup=s["sigmoid_warmup"], samples=s["samples"], seed=args.seed,
                                 thin_z=s["thin_z"], progress=args.progress)
    rd = C.run_data_of(run)
    mf = meanfield_masses(task, rd.temperature, rd.sigma_a2)
    codes = C.code_summary(rd)
    tv = 0.5 * sum(abs(codes["fraction"].get(c, 0.0) - mf.get(c, 0.0)) for c in set(mf) | set(codes["fraction"]))
    return dict(N=N, P=s["P"], N0=s["N0"], warmup=s["sigmoid_warmup"], samples=s["samples"], seconds=round(dt, 1),
                sigma_a2=rd.sigma_a2, temperature=rd.temperature, health=C.health_summary(run), codes=codes,
                branches=C.branch_summary(rd), meanfield_mass=mf, tv_to_meanfield=tv)


def relu_sizes(e: dict) -> dict:
    """The outliers' mean RMS readout norm and preactivation of one ReLU entry, each with its standard error over
    the outliers (None with fewer than two outliers; both None without outliers)."""
    out = {}
    for key in ("readout", "preactivation"):
        out[f"{key}_mean"], out[f"{key}_mean_se"] = C.mean_se(e["outliers"][key])
    return out


def max_rhat_q_a(h: dict) -> float | None:
    """The largest R̂ of the readout norms per class q_a[c] of a health summary (None when none is recorded)."""
    qa = [v for k, v in h["rhat"].items() if k.startswith("q_a") and v is not None]
    return max(qa) if qa else None


def complete(summary: dict) -> dict:
    """``summary`` with what is computed from its entries filled in: on every ReLU entry the outliers' mean sizes
    (:func:`relu_sizes`), on every entry the largest R̂ of its readout norms (``rhat_max_q_a``), and the
    ``analysis`` (:func:`analyse`), in place.  Needs the JSON summary alone, so it also completes a stored result
    file."""
    for kind in ("relu", "sigmoid"):
        for e in summary[kind]:
            if kind == "relu":
                e.update(relu_sizes(e))
            e["rhat_max_q_a"] = max_rhat_q_a(e["health"])
    summary["analysis"] = analyse(summary)
    return summary


def analyse(summary: dict) -> dict:
    """Fitted exponents and verdicts from the finished entries; the widths planned in ``settings`` but not finished
    (``unfinished``, per part)."""
    relu = summary["relu"]
    out = {}
    if relu:
        eq = [e for e in relu if e["health"]["status"] == "equilibrated"]
        for key in ("readout", "preactivation"):
            for suffix, entries in (("", relu), ("_equilibrated", eq)):
                if suffix and len(eq) == len(relu):
                    continue
                f = fit_exponent([e["N"] for e in entries], [e["outliers"][key] for e in entries])
                f["theory"] = 0.5
                f["z_vs_half"] = ((f["slope"] - 0.5) / f["se"] if f["se"] and math.isfinite(f["se"])
                                  else float("nan"))
                f["widths"] = [e["N"] for e in entries]
                out[f"exponent_{key}{suffix}"] = f
        out["outliers_per_chain"] = {e["N"]: e["outliers"]["per_chain"] for e in relu}
        out["min_outliers_theory"] = M - 1
        out["one_per_class_all_N"] = all(e["outliers"]["one_per_class"] for e in relu)
        out["at_least_m_minus_1"] = all(min(e["outliers"]["per_chain"]) >= M - 1 for e in relu)
    sig = summary["sigmoid"]
    if sig:
        out["tv_to_meanfield"] = {e["N"]: e["tv_to_meanfield"] for e in sig}
    out["all_equilibrated"] = all(e["health"]["status"] == "equilibrated" for e in relu + sig)
    unfinished = {}
    for kind in ("relu", "sigmoid"):
        planned = summary.get("settings", {}).get(f"{kind}_N") or []
        missing = sorted(set(planned) - {e["N"] for e in summary[kind]})
        if missing:
            unfinished[kind] = missing
    out["unfinished"] = unfinished
    return out


# ------------------------------------------------------------------------------------------------ certified runs
def certified_entry(summary: dict, stem: str) -> dict:
    """One certified run of row ``sig1`` (a ``reproduce/certified.py`` result summary, read by
    :func:`reproduce._common.certified_sig1`) as an entry of the ``--from-certified`` analysis: N, T, health, the
    families' agreement, the per-draw code fractions per family and the mean field's code masses the run recorded.

    Parameters
    ----------
    summary : dict
        The run's JSON summary (the fields :func:`reproduce._common.certified_sig1` reads), with
        ``result.meanfield_codes`` and the certification's ``detectable``.
    stem : str
        The run's result stem (recorded, and named in errors).

    Returns
    -------
    dict
        ``run``, ``N``, ``P`` (= N), ``T``, ``sampler``, ``chains_per_family``, ``warmup``, ``samples``,
        ``seconds``; ``health`` (status, criterion, largest R̂ of the invariant observables, R̂ of the 111 fraction
        across all chains); ``families``, ``agree``, ``disagreements``; ``per_family`` ({family: {code: [mean,
        s.e.]}} over every code a family visits, a code absent from the record counting 0 ± 0);
        ``detectable_111`` (the largest smallest-detectable difference of the 111 fraction over the pairs of
        families); ``meanfield`` ({code: mass} as the run recorded it).

    Raises
    ------
    ValueError
        One line naming ``--from-certified`` and the run: the refusals of :func:`reproduce._common.certified_sig1`
        (not a certified run of row sig1, y− not ½, not equilibrated by a named criterion, fewer than two families
        or families that disagree), or when the run recorded no mean field.
    """
    c = C.certified_sig1(summary, stem, Y_NEG["sigmoidal"])
    if not c["meanfield"]:
        raise ValueError(f"--from-certified: {stem} recorded no mean-field code masses (result.meanfield_codes)")
    keep = ("run", "N", "P", "T", "sampler", "chains_per_family", "warmup", "samples", "seconds")
    return dict({k: c[k] for k in keep},
                health={k: c["health"][k] for k in ("status", "criterion", "max_rhat", "rhat_111")},
                families=c["families"], agree=c["agree"], disagreements=c["disagreements"],
                per_family=c["per_family"], detectable_111=c["detectable_111"], meanfield=c["meanfield"])


def solved_meanfield_R(P: int, T: float) -> float:
    """The single-neuron mean field's mass off 111 on the toy task with P points at T, solved here on the default
    grid (:func:`bnnzoo.theory.critical_temperature.toy_meanfield`), the one a certified run of row sig1 records."""
    r = toy_meanfield(P, T)
    masses: dict[str, float] = {}
    for c, m in zip(r.branch_code, r.branch_mass):
        masses[str(c)] = masses.get(str(c), 0.0) + float(m)
    return redundant_mass(masses)


def check_recorded_meanfield(entries: list[dict]) -> None:
    """Refuse an entry (:func:`certified_entry`) whose recorded mean field's mass off 111 differs from
    :func:`solved_meanfield_R` at its P and T by more than :data:`reproduce._common.MEANFIELD_AGREE`
    (:func:`reproduce._common.check_meanfield`)."""
    for e in entries:
        C.check_meanfield(e["run"], 1.0 - e["meanfield"].get("111", 0.0), solved_meanfield_R(e["P"], e["T"]))


def certified_width(e: dict) -> dict:
    """The ``--from-certified`` analysis of one certified entry (:func:`certified_entry`): per family and pooled
    (:func:`reproduce._common.pooled`), the four codes' fractions against the mean field, the 111 excess,
    N × excess and the total-variation distance.

    Returns
    -------
    dict
        ``N``, ``P``, ``T``, ``run``; ``codes`` ({code: {"per_family": {family: [mean, s.e.]}, "pooled": [mean,
        s.e.], "meanfield": mass, "difference": pooled − mean field}} for 011, 101, 110, 111); ``other_codes``
        (pooled fraction on every other code); ``excess_111`` and ``excess_111_se`` (pooled 111 fraction − the mean
        field's 111 mass, s.e. the pooled one's), ``excess_111_z`` (excess / s.e.), ``excess_111_per_family``
        ({family: [excess, s.e.]}), ``N_excess_111`` and ``N_excess_111_se``; ``tv_to_meanfield`` (½ Σ |pooled −
        mean field| over every code); ``detectable_111``; ``status``, ``agree``.
    """
    pool = C.pooled(e["per_family"])
    mf = e["meanfield"]
    codes = {c: dict(per_family={f: v[c] for f, v in e["per_family"].items()}, pooled=pool[c],
                     meanfield=mf.get(c, 0.0), difference=pool[c][0] - mf.get(c, 0.0)) for c in CODES}
    x, se = codes["111"]["difference"], pool["111"][1]
    tv = 0.5 * sum(abs(pool.get(c, [0.0])[0] - mf.get(c, 0.0)) for c in sorted(set(pool) | set(mf)))
    return dict(N=e["N"], P=e["P"], T=e["T"], run=e["run"], codes=codes,
                other_codes=float(sum(v[0] for c, v in pool.items() if c not in CODES)),
                excess_111=x, excess_111_se=se, excess_111_z=x / se if se > 0 else None,
                excess_111_per_family={f: [v["111"][0] - mf.get("111", 0.0), v["111"][1]]
                                       for f, v in e["per_family"].items()},
                N_excess_111=e["N"] * x, N_excess_111_se=e["N"] * se, tv_to_meanfield=float(tv),
                detectable_111=e["detectable_111"], status=e["health"]["status"], agree=e["agree"])


def excess_fit(widths: list[dict]) -> dict:
    """Log–log fit of the 111 excess against N over the widths of :func:`certified_width`, weighted by the s.e.,
    with and without its most influential point (:func:`reproduce.influence.fit_with_and_without`).

    Returns
    -------
    dict
        ``N`` (the widths fitted), ``slope``, ``se``, ``z_vs_minus_one`` ((slope + 1) / se), ``without`` (``N`` of
        the point left out, ``slope``, ``se``) and ``left_out`` ([N, slope, se] for every point left out); with two
        widths the slope through them (``se`` and ``without`` None); with fewer, or any excess ≤ 0 or s.e. 0 (no
        log–log fit), ``slope`` None and ``reason``.
    """
    N = [w["N"] for w in widths]
    y = [w["excess_111"] for w in widths]
    se = [w["excess_111_se"] for w in widths]
    out = dict(N=N, slope=None, se=None, z_vs_minus_one=None, without=None)
    if len(N) < 2:
        return dict(out, reason="fewer than two widths")
    if any(v <= 0 for v in y) or any(s <= 0 for s in se):
        return dict(out, reason="an excess <= 0 or an s.e. of 0: no weighted log-log fit")
    if len(N) == 2:
        b = (math.log(y[1]) - math.log(y[0])) / (math.log(N[1]) - math.log(N[0]))
        return dict(out, slope=b, reason="two widths: the slope through them, no s.e.")
    f = fit_with_and_without(N, y, se, log=True)
    return dict(out, slope=f["slope"], se=f["se"], z_vs_minus_one=(f["slope"] + 1) / f["se"] if f["se"] else None,
                without=dict(N=int(f["without"]["x"]), slope=f["without"]["slope"], se=f["without"]["se"]),
                left_out=[[int(x), b, s] for x, b, s in f["left_out"]])


def from_certified(entries: list[dict]) -> dict:
    """The ``--from-certified`` analysis of certified entries (:func:`certified_entry`), one per N, all at one
    temperature.

    Returns
    -------
    dict
        ``entries`` (the entries in increasing N, without their per-family code tables, which ``widths`` holds),
        ``widths`` ({N: :func:`certified_width`}) and ``analysis`` (``T``, ``N``, ``excess_fit``
        (:func:`excess_fit`), ``N_excess_111`` and ``tv_to_meanfield`` per N, ``all_equilibrated``, ``all_agree``).

    Raises
    ------
    ValueError
        No entries, entries at different temperatures, or two entries with the same N.
    """
    if not entries:
        raise ValueError("--from-certified must name at least one certified run")
    temps = sorted({e["T"] for e in entries})
    if len(temps) > 1:
        raise ValueError(f"--from-certified: the runs must share one temperature, got T = {temps} "
                         f"({', '.join(e['run'] for e in entries)})")
    Ns = [e["N"] for e in entries]
    if len(set(Ns)) != len(Ns):
        raise ValueError(f"--from-certified: two runs share a width among N = {sorted(Ns)}")
    es = sorted(entries, key=lambda e: e["N"])
    widths = [certified_width(e) for e in es]
    return dict(entries=[{k: v for k, v in e.items() if k != "per_family"} for e in es],
                widths={str(w["N"]): w for w in widths},
                analysis=dict(T=temps[0], N=[w["N"] for w in widths], excess_fit=excess_fit(widths),
                              N_excess_111={str(w["N"]): w["N_excess_111"] for w in widths},
                              tv_to_meanfield={str(w["N"]): w["tv_to_meanfield"] for w in widths},
                              all_equilibrated=all(e["health"]["status"] == "equilibrated" for e in es),
                              all_agree=all(e["agree"] for e in es)))


def relu_certified_entry(summary: dict, stem: str) -> dict:
    """One certified run of row ``relu`` (a ``reproduce/certified.py`` result summary) as an entry of the ReLU
    ``--from-certified`` analysis.

    Returns
    -------
    dict
        ``run``, ``N``, ``T``, ``sampler``, ``chains_per_family``, ``warmup``, ``samples``, ``seconds``, ``health``
        (status, criterion, largest R̂), ``families``, ``agree``, ``outliers`` ({family: per class [mean, s.e.]}),
        ``sizes`` ({family: {"outlier_rms_a", "bulk_rms_a", "ratio": [mean, s.e.]}}) and ``pooled`` (the same three
        pooled over the families: plain mean, s.e. √Σ s.e.² / F).

    Raises
    ------
    ValueError
        One line naming ``--from-certified`` and the run: not a certified run of row relu with a result, y− not
        −½, no outlier sizes recorded (a run from before they were), health not "equilibrated" by a named
        criterion, fewer than two families or families that disagree.
    """
    row = (summary.get("rows") or {}).get("relu")
    if not summary.get("populations_certified") or row is None or "certification" not in row.get("result", {}):
        raise ValueError(f"--from-certified: {stem} is not a certified run of row relu with a result")
    if row["row"]["y_neg"] != Y_NEG["relu"]:
        raise ValueError(f"--from-certified: {stem} has y- = {row['row']['y_neg']}, this analysis needs "
                         f"{Y_NEG['relu']}")
    res, cert = row["result"], row["result"]["certification"]
    if "outlier_sizes" not in res:
        raise ValueError(f"--from-certified: {stem} recorded no outlier sizes (result.outlier_sizes)")
    h = res["health"]
    if h["status"] != "equilibrated" or not h.get("criterion"):
        raise ValueError(f"--from-certified: {stem} has health {h['status']!r}; only runs equilibrated by the "
                         "present criterion are read")
    fams = list(cert["families"])
    if len(set(fams)) < 2 or cert["agree"] is not True:
        raise ValueError(f"--from-certified: {stem} has families {fams} with agree {cert['agree']!r}; needs two or "
                         "more families that agree")
    obs = cert["observables"]
    sizes = {f: {k: res["outlier_sizes"][f][k] for k in ("outlier_rms_a", "bulk_rms_a", "ratio")} for f in fams}
    return dict(run=stem, N=row["settings"]["N"], T=summary["temperature"], sampler=summary.get("sampler"),
                chains_per_family=summary.get("chains"), warmup=row["settings"]["warmup"],
                samples=row["settings"]["samples"], seconds=row.get("seconds"),
                health=dict(status=h["status"], criterion=h["criterion"], max_rhat=h.get("max_rhat")),
                families=fams, agree=cert["agree"],
                outliers={f: [obs[f"outliers[{c}]"][f] for c in range(M)] for f in fams},
                sizes=sizes, pooled=C.pooled(sizes))


def relu_fit(Ns: list[int], pooled: list[dict], key: str) -> dict:
    """Slope of log ``key`` (pooled [mean, s.e.] per N) on log N: with three or more widths
    :func:`reproduce.influence.fit_with_and_without` (with and without the most influential point); with two, the
    slope between them and its propagated s.e. (``without`` None)."""
    y = [p[key][0] for p in pooled]
    se = [p[key][1] for p in pooled]
    if len(Ns) >= 3:
        f = fit_with_and_without(Ns, y, se)
        return dict(slope=f["slope"], se=f["se"], n=f["n"],
                    without=dict(N=int(f["without"]["x"]), slope=f["without"]["slope"], se=f["without"]["se"]))
    d = math.log(Ns[1] / Ns[0])
    return dict(slope=math.log(y[1] / y[0]) / d, se=math.hypot(se[0] / y[0], se[1] / y[1]) / d, n=2, without=None)


def relu_from_certified(entries: list[dict]) -> dict:
    """The ReLU ``--from-certified`` analysis of certified entries (:func:`relu_certified_entry`), one per N, all at
    one temperature: ``entries`` in increasing N and ``analysis`` (``T``, ``N``, the fits of the outliers' and the
    bulk's RMS |a| (:func:`relu_fit`), ``all_equilibrated``, ``all_agree``).  ValueError: fewer than two entries,
    entries at different temperatures or two with the same N."""
    temps = sorted({e["T"] for e in entries})
    Ns = [e["N"] for e in entries]
    if len(entries) < 2 or len(temps) > 1 or len(set(Ns)) != len(Ns):
        raise ValueError(f"--from-certified: the ReLU analysis needs two or more runs of different N at one "
                         f"temperature, got N = {Ns}, T = {temps}")
    es = sorted(entries, key=lambda e: e["N"])
    Ns, pooled = [e["N"] for e in es], [e["pooled"] for e in es]
    return dict(entries=es, analysis=dict(T=temps[0], N=Ns, outlier_rms_a_fit=relu_fit(Ns, pooled, "outlier_rms_a"),
                                          bulk_rms_a_fit=relu_fit(Ns, pooled, "bulk_rms_a"),
                                          all_equilibrated=all(e["health"]["status"] == "equilibrated" for e in es),
                                          all_agree=all(e["agree"] for e in es)))


def run_relu_from_certified(args, argv: list, stems: list[str]) -> int:
    """``--from-certified`` on runs of row relu: analyse them, write ``--name`` (default
    ``certified_finite_size_relu``), marked certified."""
    files = C.ResultFiles(args.out, args.name or f"certified_{NAME}_relu", args.overwrite, certified=True)
    entries = [relu_certified_entry(json.loads((Path(args.out) / f"{st}.json").read_text()), st) for st in stems]
    summary = dict(provenance=C.provenance(args, argv),
                   settings=dict(y_neg=Y_NEG["relu"], row="relu", runs=stems,
                                 pooling="plain mean over the families, s.e. sqrt(sum of s.e.^2) / F"),
                   **relu_from_certified(entries))
    files.write(summary)
    for e in summary["entries"]:
        o, b = e["pooled"]["outlier_rms_a"], e["pooled"]["bulk_rms_a"]
        C.log(f"{NAME}: N = P = {e['N']}: outlier RMS |a| {o[0]:.3f} ± {o[1]:.3f}, bulk {b[0]:.4f} ± {b[1]:.4f}")
    f = summary["analysis"]["outlier_rms_a_fit"]
    C.log(f"{NAME}: log-log slope of the outliers' RMS |a| in N {f['slope']:.3f} ± {f['se']:.3f}; {_without(f)}")
    C.log(f"{NAME}: wrote {files.json}")
    return 0


def _without(fit: dict) -> str:
    """The log's words for a fit's refit without its most influential point (none with two widths)."""
    w = fit.get("without")
    if not w:
        return "no refit without a point (fewer than three widths)"
    se = f" ± {w['se']:.3f}" if w.get("se") is not None else ""
    return f"without N = {w['N']}: {w['slope']:.3f}{se}"


def run_from_certified(args, argv: list) -> int:
    """``--from-certified``: read the certified runs, analyse them, write ``--name`` (default
    ``certified_finite_size``), marked certified: it names the runs it reads in ``settings.runs`` and its entries
    carry each run's start families and whether they agree.  Runs of row relu go to the ReLU analysis
    (:func:`run_relu_from_certified`); the runs named must all be of one row."""
    stems = C.certified_stems(args.from_certified, Path(args.out))
    rows = {st: sorted((json.loads((Path(args.out) / f"{st}.json").read_text()).get("rows") or {})) for st in stems}
    if any(r == ["relu"] for r in rows.values()):
        if not all(r == ["relu"] for r in rows.values()):
            raise ValueError(f"--from-certified: the runs must all be of one row, got {rows}")
        return run_relu_from_certified(args, argv, stems)
    files = C.ResultFiles(args.out, args.name or f"certified_{NAME}", args.overwrite, certified=True)
    entries = [certified_entry(json.loads((Path(args.out) / f"{st}.json").read_text()), st) for st in stems]
    C.log(f"{NAME}: {len(entries)} certified runs: " + ", ".join(f"N = {e['N']} T = {e['T']:g}" for e in entries))
    check_recorded_meanfield(entries)
    summary = dict(provenance=C.provenance(args, argv),
                   settings=dict(y_neg=Y_NEG["sigmoidal"], row=CERTIFIED_ROW, codes=list(CODES),
                                 pooling="plain mean over the families, s.e. sqrt(sum of s.e.^2) / F", runs=stems),
                   **from_certified(entries))
    files.write(summary)
    for N, w in summary["widths"].items():
        C.log(f"{NAME}: N = P = {N}: 111 {w['codes']['111']['pooled'][0]:.4f} ± {w['excess_111_se']:.4f} against "
              f"mean field {w['codes']['111']['meanfield']:.4f}: excess {w['excess_111']:+.4f}, N x excess "
              f"{w['N_excess_111']:.3f}, TV {w['tv_to_meanfield']:.4f}")
    f = summary["analysis"]["excess_fit"]
    C.log(f"{NAME}: log-log slope of the 111 excess in N {f['slope']} ± {f['se']}; {_without(f)}")
    C.log(f"{NAME}: wrote {files.json}")
    return 0


def combine(args, argv) -> int:
    """Merge finished entries of several result files (e.g. widths run in separate processes) into one result."""

    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)
    parts = []
    for f in args.combine:
        try:
            parts.append(json.loads(Path(f).read_text()))
        except (OSError, ValueError) as e:
            raise ValueError(f"--combine: cannot read {f} as a result file ({e})") from None
        if not all(k in parts[-1] for k in ("provenance", "relu", "sigmoid")):
            raise ValueError(f"--combine: {f} is not a {NAME} result file")
    summary = dict(provenance=dict(parts[0]["provenance"]), settings=parts[0].get("settings", {}), relu=[],
                   sigmoid=[], combined_from=[dict(file=Path(f).name, command=p["provenance"]["command"],
                                                   started=p["provenance"]["started"])
                                              for f, p in zip(args.combine, parts)])
    if len(parts) > 1:
        summary["provenance"]["command"] += "  (combined with " + "; ".join(
            p["provenance"]["command"] for p in parts[1:]) + ")"
    for kind in ("relu", "sigmoid"):
        seen = {}
        for p in parts:
            for e in p[kind]:
                seen.setdefault(e["N"], e)
        summary[kind] = [seen[N] for N in sorted(seen)]
    files.write(complete(summary))
    C.log(f"{NAME}: wrote {files.json}")
    return 0


def run(argv=None) -> int:
    argv = [] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--parts", default="relu,sigmoid", help="comma-separated: relu, sigmoid (default both)")
    p.add_argument("--widths", default=None,
                   help="comma-separated widths N replacing the size's lists of the parts run (e.g. 400)")
    p.add_argument("--relu-warmup", type=int, default=None,
                   help="warm-up steps of the ReLU runs, replacing the size's (e.g. a longer one for the largest N)")
    p.add_argument("--combine", nargs="+", default=None, metavar="JSON",
                   help="no sampling: merge the entries of these result files of this experiment (the first file's "
                        "entry wins for a width run twice) and write them as one result")
    p.add_argument("--from-certified", dest="from_certified", default=None,
                   help="comma-separated result stems or patterns (in --out) of certified runs of row sig1 "
                        "(reproduce/certified.py, one width each, one temperature): analyse their code fractions "
                        "against the mean field instead of sampling")
    args = p.parse_args(argv)
    C.check_args(args)
    if args.from_certified is not None:
        C.refuse_ignored(p, args, argv, "--from-certified", FROM_CERTIFIED_IGNORES)
        return run_from_certified(args, argv)
    if args.combine:
        return combine(args, argv)
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    bad = sorted(set(parts) - {"relu", "sigmoid"})
    if bad or not parts:
        raise ValueError(f"--parts must name relu and/or sigmoid, got {args.parts!r}")
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)
    s = dict(SIZES[args.size])
    if args.widths:
        try:
            widths = tuple(int(w) for w in args.widths.split(","))
        except ValueError:
            raise ValueError(f"--widths must be comma-separated integers, got {args.widths!r}") from None
        if any(w < 2 for w in widths):
            raise ValueError(f"--widths must be >= 2, got {args.widths!r}")
        s.update({f"{k}_N": widths for k in ("relu", "sigmoid")})
    if args.relu_warmup is not None:
        if args.relu_warmup < 1:
            raise ValueError(f"--relu-warmup must be >= 1, got {args.relu_warmup}")
        s["relu_warmup"] = args.relu_warmup
    summary = dict(provenance=C.provenance(args, argv), settings=s, relu=[], sigmoid=[], analysis={})
    jobs = ([("sigmoid", N) for N in s["sigmoid_N"]] if "sigmoid" in parts else []) + \
           ([("relu", N) for N in s["relu_N"]] if "relu" in parts else [])
    for i, (kind, N) in enumerate(jobs):
        C.log(f"{NAME}: [{i + 1}/{len(jobs)}] {kind} N = {N}, P = {s['P']}")
        e = relu_entry(N, s, args) if kind == "relu" else sigmoid_entry(N, s, args)
        summary[kind].append(e)
        files.write(complete(summary))
        C.log(f"{NAME}: {kind} N = {N} done in {e['seconds']} s: health {e['health']['status']}"
              + (f", outliers per chain {e['outliers']['per_chain']}" if kind == "relu" else
                 f", TV to mean field {e['tv_to_meanfield']:.3f}"))
    C.log(f"{NAME}: wrote {files.json}")
    return 0
