"""The critical temperature of the sigmoidal net's redundant code versus the width N (theory page §1, §3, §5).

Toy task (orthogonal inputs, classes 1/2, 1/4, 1/4, m = 3), targets y+ = 1, y− = ½, one hidden sigmoidal layer,
σ_a² = 1/P, N = P, N0 = P + 20.  At small rescaled temperature T the feature layer uses the redundant code (units on
011/101/110 and a few on 111, readout branches, ergodicity broken); above a critical temperature T_c it disappears.

* **Mean field** (theory page §5, ``bnnzoo.theory.critical_temperature``; N → ∞ at fixed P).  Definition used here:
  T_c is the temperature above which the single-neuron readout density p(a) has one branch only, with code 111 — the
  011, 101 and 110 branches are gone (the mean-field mass of the codes other than 111 is below ``MIN_MASS``).  The
  self-consistent solution is unique at every T (the action is strictly convex), so T_c is bracketed on the
  temperature grid and then bisected, each solve continued from the λ of the bracket's redundant end, until the
  bracket is narrower than the size's ``bisect_tol``; T_c is reported as the bracket's centre ± half its width.  The
  mean-field masses per code are also evaluated at every sampled temperature.
* **Samples**: for each N = P of the size and each temperature of its grid, 4 SNAPER chains from prior draws.  Per
  entry: the fraction of units on each modal code (the code a unit holds on most draws; code of a unit at a draw: bit
  c set when its class-c mean preactivation is > 0), per chain; the order parameter of the redundant code, R = the
  fraction of units whose modal code is not 111, against the mean-field mass of the branches with a code other than
  111 (the comparison of the finite-size rows S1/S4 of the reproduction page); the same fraction per draw, R_draw
  (the fraction of (unit, draw) pairs off 111; at finite P it keeps a floor above T_c, since a class mean over P/4
  points fluctuates around a small positive value, and it has no mean-field counterpart here); code switches per unit
  per draw and the code memory; the readout ergodicity ratio (within-unit over total variance of a; ≈ 0 frozen, ≈ 1
  ergodic); the readout branches (BIC); the sampler health with the R̂ of the permutation-invariant observables.
  Errors are standard errors over the 4 chains.
* **Sampled T_c(N)**: T_½, where R falls to half its value at the lowest temperature of the grid, linearly
  interpolated between the grid temperatures that bracket the crossing, with the standard error over chains (T_½ of
  each chain's own R curve); the same interpolation on the mean-field curve gives the mean-field T_½ it is compared
  with (the mean-field R drops to 0 at T_c, so its T_½ lies below T_c).  The width of the transition is the
  interpolated distance between the temperatures where R crosses 80 % and 20 % of its low-T value (the transition
  sharpens with N when it shrinks), and T_erg is where the readout ergodicity ratio rises through ½ (below it the
  units are frozen in their branches).  A unit that switches between branches takes its most visited code as modal
  code, so R also falls where the units stop being frozen: T_½ and T_erg are read together, and both depend on the
  length of the run (a unit that switches once in a thousand draws looks frozen in a run of two hundred;
  ``--warmup`` and ``--samples`` change it).
* **From certified runs** (``--from-certified``): instead of sampling, the analysis reads certified runs of row
  ``sig1`` of ``reproduce/certified.py`` (one temperature per file, several start families, ``certify=True``), e.g.
  with ``sampler="units"``.  Per run: the sampler health, whether the families agree, and the fraction of units off
  111 per draw, R_draw = 1 − the ``code_fraction[z1][111]`` of the certification, per family (mean ± s.e. over the
  family's chains, the certification's error model) and pooled over the families (their mean; s.e. from theirs),
  against the mean-field mass off 111 at that T and P (the mean field of the bullet above, whose T_c it also bisects
  on the runs' temperatures and the ``cpu`` grid; the mass off 111 that a run recorded itself, on the same grid,
  must agree with it to :data:`reproduce._common.MEANFIELD_AGREE`).  Per width: T_½ of R_draw (where it falls to
  half its value at the lowest certified temperature, interpolated as above) against the mean field's T_½ on the
  same temperatures; the s.e. of T_½ is the scatter of T_½ over curves drawn from the runs' means and standard
  errors (independent normal errors, :data:`T_HALF_DRAWS` curves); and what is left off 111 in the runs above the
  mean-field T_c (per draw, beside the fraction of units whose readout vector lies in each sign orthant, the
  certification's ``branch_mass``).

Run: ``python -m reproduce critical_temperature --size ci|cpu|paper [--widths 30,60] [--temperatures ...]
[--warmup W] [--samples S] [--parts meanfield,samples] [--overwrite]``, or ``python -m reproduce
critical_temperature --from-certified 'certified_units_sig1_n60_T*' [--name STEM]`` (comma-separated result stems
or patterns in ``--out``).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from bnnzoo.theory.critical_temperature import MIN_MASS, meanfield_critical_temperature, redundant_mass

from . import _common as C

NAME = "critical_temperature"
CLAIMS = ("S4", "S6")
Y_NEG = 0.5
CODES = ("011", "101", "110", "111")
CERTIFIED_ROW = C.SIG1_ROW  # the row of reproduce/certified.py that --from-certified reads
FROM_CERTIFIED_IGNORES = ("--seed", "--progress", "--widths", "--temperatures", "--warmup", "--samples", "--parts")
"""The options that ``--from-certified`` (no sampling; ``--size`` sets its mean-field grid and bisection) would
ignore, and so refuses."""
T_HALF_DRAWS = 4000        # curves drawn from the certified runs' means and s.e. for the s.e. of T_½
# per size: widths N = P, temperatures, warm-up, kept draws, z thinning, mean-field grid points per readout
# coordinate (None: the solver's default, 57) and bisection tolerance
SIZES = {
    "ci": dict(N=(16,), T=(0.02, 0.25), warmup=150, samples=100, thin_z=1, n_grid=25, bisect_tol=8e-3),
    "cpu": dict(N=(30, 60, 100), T=(0.01, 0.03, 0.045, 0.055, 0.065, 0.08, 0.12), warmup=300, samples=200, thin_z=2,
                n_grid=None, bisect_tol=5e-4),
    "paper": dict(N=(50, 100, 200, 500), T=(0.01, 0.02, 0.03, 0.04, 0.05, 0.055, 0.06, 0.065, 0.07, 0.08, 0.1, 0.15),
                  warmup=1000, samples=500, thin_z=5, n_grid=None, bisect_tol=2e-4),
}


# ------------------------------------------------------------------------------------------------------ crossings
def crossing(T, y, level: float, bracket: bool = False):
    """First temperature (ascending ``T``) at which ``y`` falls to ``level`` or below, linearly interpolated between
    the two bracketing grid points; None when ``y`` never falls that low (or starts there).  With ``bracket``: the
    pair (crossing, (T_i, T_i+1)) of the crossing and the grid temperatures around it ((None, None) if none)."""
    T, y = np.asarray(T, float), np.asarray(y, float)
    if np.all(np.isfinite(y)) and y[0] > level:
        for i in range(1, len(T)):
            if y[i] <= level:
                t = float(T[i - 1] + (y[i - 1] - level) / (y[i - 1] - y[i]) * (T[i] - T[i - 1]))
                return (t, (float(T[i - 1]), float(T[i]))) if bracket else t
    return (None, None) if bracket else None


def rising_crossing(T, y, level: float):
    """First temperature at which ``y`` rises to ``level`` or above (interpolated), None if never."""
    return crossing(T, -np.asarray(y, float), -level)


def transition(T, R) -> dict:
    """T_½ (R falls to half its lowest-T value), the 80 %/20 % crossings and the width between them."""
    R = np.asarray(R, float)
    ref = float(R[0])
    t_half, br = crossing(T, R, 0.5 * ref, bracket=True)
    t80, t20 = crossing(T, R, 0.8 * ref), crossing(T, R, 0.2 * ref)
    return dict(reference=ref, T_half=t_half, T_half_bracket=br, T_80=t80, T_20=t20,
                width=(t20 - t80) if t80 is not None and t20 is not None else None)


mean_se = C.mean_se


# ------------------------------------------------------------------------------------------------------ samples
def per_draw_codes(rd) -> dict:
    """Fraction of (unit, draw) pairs on each code, per chain (all units, first-layer class-mean preactivations)."""
    from bnnzoo.diagnostics.codes import code_ids, code_string

    ids = code_ids(rd.class_means(1))  # (chain, draw, neuron)
    per_chain = {}
    for k in range(1 << rd.m):
        per_chain[code_string(k, rd.m)] = [float(np.mean(ids[c] == k)) for c in range(ids.shape[0])]
    return {k: v for k, v in per_chain.items() if any(v)}


def readout_ergodicity(rd) -> dict:
    """Readout ergodicity ratio (:func:`bnnzoo.diagnostics.ergodicity.ergodicity` of a), per chain and mean ± s.e."""
    from bnnzoo.diagnostics.ergodicity import ergodicity

    per = [float(ergodicity(rd.a[c:c + 1], "a", n_boot=0).ratio) for c in range(rd.a.shape[0])]
    m, se = mean_se(per)
    return dict(ratio=m, ratio_se=se, per_chain=per)


def sample_entry(N: int, T: float, s: dict, args, mf_masses: dict) -> dict:
    run, task, dt = C.sample_toy("sigmoidal", N=N, P=N, y_neg=Y_NEG, warmup=s["warmup"], samples=s["samples"],
                                 seed=args.seed, thin_z=s["thin_z"], progress=args.progress, temperature=T)
    rd = C.run_data_of(run)
    pd = per_draw_codes(rd)
    codes = C.code_summary(rd)
    n_chains = rd.a.shape[0]
    R_chain = [1.0 - x for x in codes["per_chain"].get("111", [0.0] * n_chains)]
    R, R_se = mean_se(R_chain)
    R_draw_chain = [1.0 - x for x in pd.get("111", [0.0] * n_chains)]
    R_draw, R_draw_se = mean_se(R_draw_chain)
    return dict(N=N, P=N, N0=N + 20, T=T, warmup=s["warmup"], samples=s["samples"], seconds=round(dt, 1),
                sigma_a2=rd.sigma_a2, temperature=rd.temperature, health=C.health_summary(run),
                R=R, R_se=R_se, R_per_chain=R_chain, modal_codes=codes,
                R_draw=R_draw, R_draw_se=R_draw_se, R_draw_per_chain=R_draw_chain,
                per_draw={k: dict(mean=float(np.mean(v)), se=mean_se(v)[1], per_chain=v) for k, v in pd.items()},
                ergodicity=readout_ergodicity(rd), branches=C.branch_summary(rd), meanfield_mass=mf_masses,
                meanfield_R=redundant_mass(mf_masses))


# ------------------------------------------------------------------------------------------------------ analysis
def analyse(summary: dict) -> dict:
    """Per width: the sampled and mean-field T_½, widths, T_erg, against the mean-field T_c."""
    out = {}
    for N in sorted({e["N"] for e in summary["samples"]}):
        es = sorted([e for e in summary["samples"] if e["N"] == N], key=lambda e: e["T"])
        mf = summary["meanfield"].get(str(N), {})
        res = dict(temperatures=[e["T"] for e in es], T_c_meanfield=mf.get("T_c"), T_c_meanfield_err=mf.get("T_c_err"))
        if len(es) >= 2:
            T = [e["T"] for e in es]
            samp = transition(T, [e["R"] for e in es])
            chains = [transition(T, [e["R_per_chain"][c] for e in es]) for c in range(len(es[0]["R_per_chain"]))]
            samp["T_half_se"] = mean_se([c["T_half"] for c in chains])[1]
            samp["T_half_per_chain"] = [c["T_half"] for c in chains]
            samp["width_se"] = mean_se([c["width"] for c in chains])[1]
            res["sampled"] = samp
            res["meanfield"] = transition(T, [e["meanfield_R"] for e in es])
            mf_half = res["meanfield"]["T_half"]
            res["T_half_ratio"] = samp["T_half"] / mf_half if samp["T_half"] is not None and mf_half else None
            res["T_erg"] = rising_crossing(T, [e["ergodicity"]["ratio"] for e in es], 0.5)
            erg_chains = [rising_crossing(T, [e["ergodicity"]["per_chain"][c] for e in es], 0.5)
                          for c in range(len(es[0]["ergodicity"]["per_chain"]))]
            res["T_erg_se"] = mean_se(erg_chains)[1]
            res["T_erg_per_chain"] = erg_chains
        res["all_equilibrated"] = all(e["health"]["status"] == "equilibrated" for e in es)
        out[str(N)] = res
    return out


# ------------------------------------------------------------------------------------------------ certified runs
def certified_entry(summary: dict, stem: str) -> dict:
    """One certified run of row ``sig1`` (a ``reproduce/certified.py`` result summary, read by
    :func:`reproduce._common.certified_sig1`) as an entry of the ``--from-certified`` analysis: N, T, health, the
    families' agreement and the fraction of units off 111 per draw.

    Parameters
    ----------
    summary : dict
        The run's JSON summary (the fields :func:`reproduce._common.certified_sig1` reads); the observables
        ``branch_mass[<signs>]`` too, where recorded.
    stem : str
        The run's result stem (recorded, and named in errors).

    Returns
    -------
    dict
        ``run``, ``N``, ``P``, ``T``, ``sampler``, ``chains_per_family``, ``warmup``, ``samples``, ``seconds``;
        ``health`` (status, reason, criterion, largest R̂ of the invariant observables, R̂ of the 111 fraction);
        ``families``, ``agree``, ``disagreements``; ``R_draw_per_family`` ({family: [mean, s.e.]}, R_draw = 1 − the
        111 fraction); ``R_draw`` and ``R_draw_se`` (the families' mean and its s.e., √Σ s.e.² / F);
        ``per_draw`` ({code: the families' mean fraction}); ``readout_orthants`` ({signs: the families' mean
        fraction of units whose readout vector lies in that sign orthant, ``branch_mass``}); ``meanfield_R_of_run``
        (1 − the mean-field 111 mass the run itself recorded, or None; :func:`from_certified` checks it against its
        own solve and does not write it).

    Raises
    ------
    ValueError
        The refusals of :func:`reproduce._common.certified_sig1` (not a certified run of row sig1, y− not ½, not
        equilibrated by a named criterion, fewer than two families or families that disagree).
    """
    c = C.certified_sig1(summary, stem, Y_NEG)
    obs, fams = c["observables"], c["families"]
    r_fam = {f: [1.0 - v["111"][0], v["111"][1]] for f, v in c["per_family"].items()}
    codes = {name.split("][")[-1].rstrip("]"): float(np.mean([v[0] for v in obs[name].values()]))
             for name in obs if name.startswith("code_fraction[z1][")}
    orthants = {name[len("branch_mass["):-1]: float(np.mean([v[0] for v in obs[name].values()]))
                for name in obs if name.startswith("branch_mass[")}
    keep = ("run", "N", "P", "T", "sampler", "chains_per_family", "warmup", "samples", "seconds", "health",
            "families", "agree", "disagreements")
    return dict({k: c[k] for k in keep},
                R_draw_per_family=r_fam, R_draw=float(np.mean([v[0] for v in r_fam.values()])),
                R_draw_se=float(math.sqrt(sum(v[1] ** 2 for v in r_fam.values())) / len(fams)),
                per_draw={k: codes[k] for k in sorted(codes) if codes[k] > 0},
                readout_orthants={o: orthants[o] for o in sorted(orthants) if orthants[o] > 0},
                meanfield_R_of_run=(1.0 - c["meanfield"].get("111", 0.0)) if c["meanfield"] else None)


def t_half_scatter(T, R, se, draws: int = T_HALF_DRAWS, seed: int = 0) -> dict:
    """The s.e. of T_½ (:func:`transition`) of a curve ``R`` known to ± ``se`` at the temperatures ``T``: the
    standard deviation of T_½ over ``draws`` curves R + se · ε (ε independent standard normal), and the fraction of
    those curves that cross half their lowest-T value on the grid."""
    rng = np.random.default_rng(seed)
    R, se = np.asarray(R, float), np.asarray(se, float)
    got = [transition(T, R + se * rng.standard_normal(R.shape))["T_half"] for _ in range(draws)]
    got = np.asarray([t for t in got if t is not None], float)
    return dict(T_half_se=float(got.std(ddof=1)) if got.size > 1 else None, crossing_fraction=got.size / draws,
                draws=draws)


def from_certified(entries: list[dict], bisect_tol: float, n_grid: int | None = None) -> dict:
    """The ``--from-certified`` analysis of certified entries (:func:`certified_entry`): per width, the mean field
    at every entry's temperature and its T_c, R_draw against the mean-field mass off 111, T_½ of both curves and
    what is left off 111 above T_c.

    Parameters
    ----------
    entries : list of dict
        From :func:`certified_entry`; at most one per (N, T).
    bisect_tol : float
        Bisection tolerance of the mean-field T_c.
    n_grid : int or None
        Grid points per readout coordinate of the mean-field solver (None: its default).

    Returns
    -------
    dict
        ``{"meanfield": {P: meanfield_critical_temperature(...)}, "entries": [...], "analysis": {N: ...}}``; each
        entry gains ``meanfield_mass``, ``meanfield_R`` (the mass off 111 of this solve, the one the T_c and the
        mean-field T_½ come from), ``R_minus_meanfield`` (in units of the run's s.e. too: ``z``) and ``T_over_Tc``,
        and loses ``meanfield_R_of_run``.

    Raises
    ------
    ValueError
        Two entries with the same N and T; or, with ``n_grid`` None (the grid the certified runs solve the mean field
        on), an entry whose ``meanfield_R_of_run`` differs from ``meanfield_R`` by more than
        :data:`reproduce._common.MEANFIELD_AGREE` (:func:`reproduce._common.check_meanfield`).
    """
    seen = [(e["N"], e["T"]) for e in entries]
    if len(set(seen)) != len(seen):
        raise ValueError(f"--from-certified: two runs share (N, T) among {sorted(seen)}")
    out = dict(meanfield={}, entries=[], analysis={})
    for N in sorted({e["N"] for e in entries}):
        es = sorted([e for e in entries if e["N"] == N], key=lambda e: e["T"])
        T = [e["T"] for e in es]
        grid = sorted(set(T) | set(SIZES["cpu"]["T"]))          # the cpu grid brackets T_c
        mf = meanfield_critical_temperature(N, grid, y_neg=Y_NEG, n_grid=n_grid, tol=bisect_tol)
        out["meanfield"][str(N)] = mf
        for e in es:
            ms = next(c["masses"] for c in mf["curve"] if c["T"] == e["T"])
            mf_R = redundant_mass(ms)
            e = dict(e)
            recorded = e.pop("meanfield_R_of_run", None)
            if n_grid is None:
                C.check_meanfield(e["run"], recorded, mf_R)
            d = e["R_draw"] - mf_R
            out["entries"].append(dict(e, meanfield_mass=ms, meanfield_R=mf_R, R_minus_meanfield=d,
                                       z=d / e["R_draw_se"] if e["R_draw_se"] else None, T_over_Tc=e["T"] / mf["T_c"]))
        res = dict(temperatures=T, T_c_meanfield=mf["T_c"], T_c_meanfield_err=mf["T_c_err"],
                   statuses=[e["health"]["status"] for e in es], families_agree=[e["agree"] for e in es],
                   all_equilibrated=all(e["health"]["status"] == "equilibrated" for e in es),
                   all_agree=all(e["agree"] for e in es))
        if len(es) >= 2:
            samp = transition(T, [e["R_draw"] for e in es])
            samp.update(t_half_scatter(T, [e["R_draw"] for e in es], [e["R_draw_se"] for e in es]))
            res["sampled"] = samp
            res["meanfield"] = transition(T, [redundant_mass(next(c["masses"] for c in mf["curve"] if c["T"] == t))
                                              for t in T])
            mf_half = res["meanfield"]["T_half"]
            res["T_half_ratio"] = samp["T_half"] / mf_half if samp["T_half"] is not None and mf_half else None
        res["above_Tc"] = [dict(T=e["T"], R_draw=e["R_draw"], R_draw_se=e["R_draw_se"], per_draw=e["per_draw"],
                                readout_orthants=e["readout_orthants"], status=e["health"]["status"],
                                agree=e["agree"])
                           for e in es if e["T"] > mf["T_c"] + mf["T_c_err"]]
        out["analysis"][str(N)] = res
    return out


def run_from_certified(args, argv: list) -> int:
    """``--from-certified``: read the certified runs, analyse them, write ``--name`` (default
    ``certified_critical_temperature``, named like the certified runs it reads), marked certified: its entries
    carry each run's start families and whether they agree."""
    stems = C.certified_stems(args.from_certified, Path(args.out))
    files = C.ResultFiles(args.out, args.name or f"certified_{NAME}", args.overwrite, certified=True)
    entries = [certified_entry(json.loads((Path(args.out) / f"{st}.json").read_text()), st) for st in stems]
    s = SIZES[args.size]
    C.log(f"{NAME}: {len(entries)} certified runs: " + ", ".join(f"N = {e['N']} T = {e['T']:g}" for e in entries))
    summary = dict(provenance=C.provenance(args, argv),
                   settings=dict(y_neg=Y_NEG, row=CERTIFIED_ROW, bisect_tol=s["bisect_tol"], n_grid=s["n_grid"],
                                 min_mass=MIN_MASS, runs=stems),
                   **from_certified(entries, s["bisect_tol"], s["n_grid"]))
    files.write(summary)
    for N, a in summary["analysis"].items():
        samp, mfa = a.get("sampled", {}), a.get("meanfield", {})
        C.log(f"{NAME}: N = {N}: T_half {samp.get('T_half')} ± {samp.get('T_half_se')} against mean field "
              f"{mfa.get('T_half')}; T_c {a['T_c_meanfield']:.4f}; statuses {a['statuses']}")
    C.log(f"{NAME}: wrote {files.json}")
    return 0


# ------------------------------------------------------------------------------------------------------ main
def _floats(text: str, what: str, lo: float, integer: bool = False) -> tuple:
    try:
        vals = tuple((int if integer else float)(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"{what} must be comma-separated {'integers' if integer else 'numbers'}, got {text!r}") \
            from None
    if not vals or any(not v > lo for v in vals) or (not integer and any(not math.isfinite(v) for v in vals)):
        raise ValueError(f"{what} must be {'integers' if integer else 'numbers'} > {lo:g}, got {text!r}")
    return tuple(sorted(set(vals)))


def missing_entries(summary: dict) -> list:
    """The planned (N, T) entries of the run's settings that the summary does not hold yet."""
    s = summary["settings"]
    if "samples" not in s["parts"]:
        return []
    planned = {(N, T) for N in s["N"] for T in s["T"]}
    return [list(x) for x in sorted(planned - {(e["N"], e["T"]) for e in summary["samples"]})]


def run(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--widths", default=None, help="comma-separated widths N = P (>= 8) replacing the size's list")
    p.add_argument("--temperatures", default=None,
                   help="comma-separated temperatures T > 0 replacing the size's grid (must bracket the mean-field "
                        "T_c, about 0.06-0.07)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps per chain replacing the size's (>= 10)")
    p.add_argument("--samples", type=int, default=None,
                   help="kept draws per chain replacing the size's (>= 10, a multiple of the size's z thinning)")
    p.add_argument("--parts", default="meanfield,samples",
                   help="comma-separated: meanfield, samples (default both; samples need the mean field)")
    p.add_argument("--from-certified", dest="from_certified", default=None,
                   help="comma-separated result stems or patterns (in --out) of certified runs of row sig1 "
                        "(reproduce/certified.py, one temperature each): analyse them instead of sampling")
    args = p.parse_args(argv)
    C.check_args(args)
    if args.from_certified is not None:
        C.refuse_ignored(p, args, argv, "--from-certified", FROM_CERTIFIED_IGNORES)
        return run_from_certified(args, argv)
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    if not parts or set(parts) - {"meanfield", "samples"}:
        raise ValueError(f"--parts must name meanfield and/or samples, got {args.parts!r}")
    s = dict(SIZES[args.size])
    if args.widths:
        s["N"] = _floats(args.widths, "--widths", 7, integer=True)
    if args.temperatures:
        s["T"] = _floats(args.temperatures, "--temperatures", 0.0)
    if args.warmup is not None:
        if args.warmup < 10:
            raise ValueError(f"--warmup must be >= 10, got {args.warmup}")
        s["warmup"] = args.warmup
    if args.samples is not None:
        if args.samples < 10 or args.samples % s["thin_z"] or (args.samples > 100 and 100 % s["thin_z"]):
            raise ValueError(f"--samples must be >= 10 and a multiple of {s['thin_z']} (the z thinning of size "
                             f"{args.size}), got {args.samples}")
        s["samples"] = args.samples
    if len(s["T"]) < 2:
        raise ValueError(f"--temperatures needs at least 2 values to bracket T_c, got {args.temperatures!r}")
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)
    summary = dict(provenance=C.provenance(args, argv), settings=dict(s, y_neg=Y_NEG, min_mass=MIN_MASS,
                                                                       parts=parts),
                   meanfield={}, samples=[], analysis={})
    summary["missing"] = missing_entries(summary)
    # the mean field first (seconds per width): it brackets T_c and is the reference of every sampled entry
    for P in s["N"]:
        C.log(f"{NAME}: mean field P = {P}: curve at T = {list(s['T'])} and bisection")
        summary["meanfield"][str(P)] = meanfield_critical_temperature(P, s["T"], y_neg=Y_NEG, n_grid=s["n_grid"],
                                                                       tol=s["bisect_tol"])
        m = summary["meanfield"][str(P)]
        C.log(f"{NAME}: mean-field T_c(P = {P}) = {m['T_c']:.4f} ± {m['T_c_err']:.4f} ({m['seconds']} s)")
        files.write(summary)
    if "samples" in parts:
        jobs = [(N, T) for N in s["N"] for T in s["T"]]
        for i, (N, T) in enumerate(jobs):
            C.log(f"{NAME}: [{i + 1}/{len(jobs)}] N = P = {N}, T = {T:g}")
            mf_ms = next(c["masses"] for c in summary["meanfield"][str(N)]["curve"] if c["T"] == T)
            e = sample_entry(N, T, s, args, mf_ms)
            e["T_over_Tc"] = T / summary["meanfield"][str(N)]["T_c"]
            summary["samples"].append(e)
            summary["analysis"] = analyse(summary)
            summary["missing"] = missing_entries(summary)
            files.write(summary)
            C.log(f"{NAME}: N = {N}, T = {T:g} done in {e['seconds']} s: R = {e['R']:.3f} (mean field "
                  f"{e['meanfield_R']:.3f}), ergodicity ratio {e['ergodicity']['ratio']:.2f}, health "
                  f"{e['health']['status']}")
    C.log(f"{NAME}: wrote {files.json}")
    return 0
