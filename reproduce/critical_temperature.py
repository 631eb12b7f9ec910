"""The critical temperature of the sigmoidal net's redundant code versus the width N (theory page §1, §3, §5).

Toy task (orthogonal inputs, classes 1/2, 1/4, 1/4, m = 3), targets y+ = 1, y− = ½, one hidden sigmoidal layer,
σ_a² = 1/P, N = P, N0 = P + 20.  At small rescaled temperature T the feature layer uses the redundant code (units on
011/101/110 and a few on 111, readout branches, ergodicity broken); above a critical temperature T_c it disappears.

* **Mean field** (theory page §5, ``bnnzoo.theory.meanfield``; N → ∞ at fixed P).  Definition used here: T_c is the
  temperature above which the single-neuron readout density p(a) has one branch only, with code 111 — the 011, 101
  and 110 branches are gone (the mean-field mass of the codes other than 111 is below ``MIN_MASS``).  The self-consistent
  solution is unique at every T (the action is strictly convex), so T_c is bracketed on the temperature grid and then
  bisected, each solve continued from the λ of the bracket's redundant end, until the bracket is narrower than the
  size's ``bisect_tol``; T_c is reported as the bracket's centre ± half its width.  The mean-field masses per code are
  also evaluated at every sampled temperature.
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

Run: ``python reproduce/critical_temperature.py --size ci|cpu|paper [--widths 30,60] [--temperatures ...]
[--warmup W] [--samples S] [--parts meanfield,samples] [--overwrite]``.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

PROG = "critical_temperature.py"
Y_NEG = 0.5
MIN_MASS = 1e-3        # mean-field mass of the non-111 codes below which the redundant code counts as gone
CODES = ("011", "101", "110", "111")
# per size: widths N = P, temperatures, warm-up, kept draws, z thinning, mean-field grid points per readout
# coordinate (None: the solver's default, 57) and bisection tolerance
SETTINGS = {
    "ci": dict(N=(16,), T=(0.02, 0.25), warmup=150, samples=100, thin_z=1, n_grid=25, bisect_tol=8e-3),
    "cpu": dict(N=(30, 60, 100), T=(0.01, 0.03, 0.045, 0.055, 0.065, 0.08, 0.12), warmup=300, samples=200, thin_z=2,
                n_grid=None, bisect_tol=5e-4),
    "paper": dict(N=(50, 100, 200, 500), T=(0.01, 0.02, 0.03, 0.04, 0.05, 0.055, 0.06, 0.065, 0.07, 0.08, 0.1, 0.15),
                  warmup=1000, samples=500, thin_z=5, n_grid=None, bisect_tol=2e-4),
}


# ------------------------------------------------------------------------------------------------------ mean field
def meanfield(P: int, T: float, *, n_grid=None, lam0=None):
    """Single-neuron mean field of the toy task with P points (the class sizes of ``bnnzoo.toy_task``), y− = ½,
    σ_a² = 1/P.  Raises RuntimeError when the solver finds no bulk solution (not expected for the sigmoid)."""
    import bnnzoo
    from bnnzoo.theory.meanfield import single_neuron_meanfield

    task = bnnzoo.toy_task(P=P, N0=P + 20, y_pos=1.0, y_neg=Y_NEG)
    r = single_neuron_meanfield(task.X, task.Y, labels=task.labels, nonlinearity="sigmoid", temperature=T,
                                sigma_a2=1.0 / P, lam0=lam0, check_grid=False, n_grid=n_grid)
    if not r.normalizable:
        raise RuntimeError(f"mean field at P = {P}, T = {T}: {r.status}")
    return r


def mass_per_code(r) -> dict:
    """{code: total mean-field mass} (a flat top can be split into two basins of the same code; they are summed)."""
    out: dict = {}
    for c, m in zip(r.branch_code, r.branch_mass):
        out[c] = out.get(c, 0.0) + float(m)
    return out


def redundant_mass(masses: dict) -> float:
    """Mean-field mass of the codes other than 111 (the order parameter's counterpart)."""
    return float(sum(v for k, v in masses.items() if k != "111"))


def is_redundant(masses: dict) -> bool:
    """Whether the mean-field solution still has a coding branch other than 111."""
    return redundant_mass(masses) > MIN_MASS


def ascend(r, start) -> dict:
    """Exact gradient ascent of log p(a) (no grid: Gauss–Hermite log M and its derivative m1) under the λ of mean-field
    result ``r``, from ``start``: the local maximum reached and its code (bit c: λ_cᵀa > 0, i.e. mean activation on
    class c above the prior's ½)."""
    from scipy import optimize

    from bnnzoo.theory.meanfield import activation_moments

    lam, sizes, sa2 = r.lam, r.class_sizes, r.sigma_a2

    def neg_logp(a):  # −log p(a) = |a|²/(2σ_a²) − Σ_c P_c log M(λ_cᵀa), and its gradient
        lM, m1, _ = activation_moments(lam @ a, "sigmoid", r.sigma_w2)
        return 0.5 * a @ a / sa2 - sizes @ lM, a / sa2 - (sizes * m1) @ lam

    end = optimize.minimize(neg_logp, np.asarray(start, float), jac=True, method="BFGS", options={"gtol": 1e-10}).x
    return dict(start=list(map(float, start)), end=list(map(float, end)),
                code="".join("1" if v > 0 else "0" for v in lam @ end))


def critical_temperature(P: int, temps, *, n_grid=None, tol: float = 5e-4) -> dict:
    """Mean-field T_c of the toy task with P points: the curve at ``temps`` (ascending), then bisection.

    Returns {T_c, T_c_err, lo, hi, steps, curve: [{T, masses, redundant_mass}], lo_masses, hi_masses, hi_check,
    seconds}.  ``lo`` is the highest temperature found with a coding branch other than 111, ``hi`` the lowest without
    one (``hi − lo <= tol``).  ``hi_check``: a grid-free confirmation at ``hi`` — exact gradient ascent of log p(a)
    under the λ of ``hi``, started at every non-111 mode of ``lo``, and whether every ascent ends on code 111
    (``confirmed``).  Raises ValueError when the grid does not bracket T_c.
    """
    t0 = time.time()
    curve, lam, res = [], None, {}
    for T in temps:
        r = res[T] = meanfield(P, T, n_grid=n_grid, lam0=lam)
        lam = r.lam
        ms = mass_per_code(r)
        curve.append(dict(T=T, masses=ms, redundant_mass=redundant_mass(ms)))
    red = [c["T"] for c in curve if is_redundant(c["masses"])]
    above = [c["T"] for c in curve if red and c["T"] > max(red)]
    if not red or not above:
        raise ValueError(f"the temperature grid {list(temps)} does not bracket the mean-field T_c at P = {P}: "
                         f"add temperatures {'below' if not red else 'above'} it")
    lo, hi = max(red), min(above)
    lo_ms = next(c["masses"] for c in curve if c["T"] == lo)
    hi_ms = next(c["masses"] for c in curve if c["T"] == hi)
    r_lo, r_hi, steps = res[lo], res[hi], 0
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        r = meanfield(P, mid, n_grid=n_grid, lam0=r_lo.lam)
        ms = mass_per_code(r)
        steps += 1
        if is_redundant(ms):
            lo, r_lo, lo_ms = mid, r, ms
        else:
            hi, r_hi, hi_ms = mid, r, ms
    ascents = [ascend(r_hi, a) for a, c in zip(r_lo.branch_mode, r_lo.branch_code) if c != "111"]
    hi_check = dict(ascents=ascents, confirmed=bool(ascents) and all(x["code"] == "111" for x in ascents))
    return dict(P=P, T_c=0.5 * (lo + hi), T_c_err=0.5 * (hi - lo), lo=lo, hi=hi, steps=steps, tol=tol,
                n_grid=n_grid, lo_masses=lo_ms, hi_masses=hi_ms, lo_modes=dict(zip(r_lo.branch_code,
                                                                                   r_lo.branch_mode.tolist())),
                hi_check=hi_check, curve=curve, seconds=round(time.time() - t0, 1))


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
            res["T_erg"] = rising_crossing(T, [e["ergodicity"]["ratio"] for e in es], 0.5)
            erg_chains = [rising_crossing(T, [e["ergodicity"]["per_chain"][c] for e in es], 0.5)
                          for c in range(len(es[0]["ergodicity"]["per_chain"]))]
            res["T_erg_se"] = mean_se(erg_chains)[1]
            res["T_erg_per_chain"] = erg_chains
        res["all_equilibrated"] = all(e["health"]["status"] == "equilibrated" for e in es)
        out[str(N)] = res
    return out


# ------------------------------------------------------------------------------------------------------ markdown
def _f(v, se=None, digits=3):
    return C.fmt(v, se, digits)


def markdown(summary: dict) -> str:
    s = summary["settings"]
    lines = [C.header("Critical temperature of the sigmoidal redundant code versus N", summary["provenance"]),
             "Toy task (orthogonal inputs, classes 1/2, 1/4, 1/4, m = 3), y+ = 1, y− = ½, one hidden sigmoidal "
             "layer, σ_a² = 1/P, N = P, N0 = P + 20; written by `reproduce/critical_temperature.py` (stores "
             "summaries, not draws).  Mean-field T_c: the temperature above which the single-neuron readout density "
             "p(a) has one branch only, with code 111 (mass of the other codes below "
             f"{MIN_MASS:g}), bracketed on the temperature grid and bisected to a bracket narrower than "
             f"{s['bisect_tol']:g}.  R: fraction of units whose modal code (the code held on most draws) is not 111 "
             "(mean field: the mass of the branches with a code other than 111); R_draw: fraction of (unit, draw) "
             "pairs not on 111 (at finite P it keeps a floor above T_c from the fluctuating class means).  T_½: where R falls to half its value at the lowest temperature "
             "(linear interpolation on the grid), width: between its 80 % and 20 % crossings, T_erg: where the "
             "readout ergodicity ratio rises through ½.  ± are standard errors over the 4 chains.\n"]
    mf = summary["meanfield"]
    if mf:
        lines += ["## Mean field (N → ∞ at fixed P)\n",
                  "| P | T_c | bisection bracket | steps | codes just below T_c | codes just above T_c | exact ascent "
                  "from the non-111 modes below, at the upper end | seconds |",
                  "|---|---|---|---|---|---|---|---|"]
        for P in sorted(mf, key=int):
            m = mf[P]
            def codes(ms):
                return ", ".join(f"{k} {v:.3f}" for k, v in sorted(ms.items()))
            lines.append(f"| {P} | {m['T_c']:.4f} ± {m['T_c_err']:.4f} | [{m['lo']:.4f}, {m['hi']:.4f}] | "
                         f"{m['steps']} | {codes(m['lo_masses'])} | {codes(m['hi_masses'])} | "
                         + ", ".join(x["code"] for x in m["hi_check"]["ascents"])
                         + f" ({'confirmed' if m['hi_check']['confirmed'] else 'NOT confirmed'}) | {m['seconds']} |")
        lines.append("")
    a = summary["analysis"]
    if a:
        lines += ["## T_c versus N\n",
                  "| N = P | mean-field T_c | mean-field T_½ | sampled T_½ (grid bracket) | sampled T_½ / mean-field T_½ | "
                  "width sampled | width mean field | T_erg (ergodicity ratio ½) | all equilibrated |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for N in sorted(a, key=int):
            r = a[N]
            sp, mfr = r.get("sampled", {}), r.get("meanfield", {})
            ratio = (sp["T_half"] / mfr["T_half"] if sp.get("T_half") is not None and mfr.get("T_half") else None)
            lines.append(f"| {N} | {_f(r['T_c_meanfield'], r['T_c_meanfield_err'])} | {_f(mfr.get('T_half'))} | "
                         f"{_f(sp.get('T_half'), sp.get('T_half_se'))}"
                         + (f" ({sp['T_half_bracket'][0]:g}–{sp['T_half_bracket'][1]:g})"
                            if sp.get("T_half_bracket") else "") + f" | {_f(ratio)} | "
                         f"{_f(sp.get('width'), sp.get('width_se'))} | {_f(mfr.get('width'))} | "
                         f"{_f(r.get('T_erg'), r.get('T_erg_se'))} | {r['all_equilibrated']} |")
        lines.append("\n— : no crossing inside the temperature grid.\n")
    for N in sorted({e["N"] for e in summary["samples"]}):
        es = sorted([e for e in summary["samples"] if e["N"] == N], key=lambda e: e["T"])
        Tc = mf.get(str(N), {}).get("T_c")
        lines += [f"## N = P = {N}\n",
                  "| T | T / T_c | R sampled | R mean field | modal 011 / 101 / 110 / 111 | mean field 011 / 101 / "
                  "110 / 111 | R_draw | switches per unit per draw | code memory | readout ergodicity ratio | "
                  "BIC branches | health | max R̂ | seconds |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for e in es:
            mm, cs, er, h = e["meanfield_mass"], e["modal_codes"], e["ergodicity"], e["health"]
            lines.append(
                f"| {e['T']:g} | {_f(e['T'] / Tc if Tc else None)} | {_f(e['R'], e['R_se'])} | "
                f"{_f(e['meanfield_R'])} | "
                + " / ".join(f"{cs['fraction'].get(c, 0.0):.3f}" for c in CODES) + " | "
                + " / ".join(f"{mm.get(c, 0.0):.3f}" for c in CODES) + " | "
                f"{_f(e['R_draw'], e['R_draw_se'])} | {_f(cs['switching_rate'], cs['switching_rate_se'])} | {_f(cs['code_memory'])} | "
                f"{_f(er['ratio'], er['ratio_se'])} | {e['branches']['n_branches']} | {h['status']} | "
                f"{_f(h['max_rhat'])} | {e['seconds']} |")
        lines.append("")
    planned = {(N, T) for N in s["N"] for T in s["T"]}
    missing = sorted(planned - {(e["N"], e["T"]) for e in summary["samples"]})
    if missing:
        lines.append(f"Entries (N, T) not finished in this result: {missing}.\n")
    return "\n".join(lines)


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


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = C.parser(PROG, __doc__.split("\n\n")[0])
    p.add_argument("--widths", default=None, help="comma-separated widths N = P (>= 8) replacing the size's list")
    p.add_argument("--temperatures", default=None,
                   help="comma-separated temperatures T > 0 replacing the size's grid (must bracket the mean-field "
                        "T_c, about 0.06-0.07)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps per chain replacing the size's (>= 10)")
    p.add_argument("--samples", type=int, default=None,
                   help="kept draws per chain replacing the size's (>= 10, a multiple of the size's z thinning)")
    p.add_argument("--parts", default="meanfield,samples",
                   help="comma-separated: meanfield, samples (default both; samples need the mean field)")
    args = p.parse_args(argv)
    C.check_args(args)
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    if not parts or set(parts) - {"meanfield", "samples"}:
        raise ValueError(f"--parts must name meanfield and/or samples, got {args.parts!r}")
    s = dict(SETTINGS[args.size])
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
    files = C.ResultFiles(args.out, args.name or f"critical_temperature_{args.size}", args.overwrite)
    summary = dict(provenance=C.provenance(args, argv), settings=dict(s, y_neg=Y_NEG, min_mass=MIN_MASS,
                                                                       parts=parts),
                   meanfield={}, samples=[], analysis={})
    # the mean field first (seconds per width): it brackets T_c and is the reference of every sampled entry
    for P in s["N"]:
        C.log(f"{PROG}: mean field P = {P}: curve at T = {list(s['T'])} and bisection")
        summary["meanfield"][str(P)] = critical_temperature(P, s["T"], n_grid=s["n_grid"], tol=s["bisect_tol"])
        m = summary["meanfield"][str(P)]
        C.log(f"{PROG}: mean-field T_c(P = {P}) = {m['T_c']:.4f} ± {m['T_c_err']:.4f} ({m['seconds']} s)")
        files.write(summary, markdown(summary))
    if "samples" in parts:
        jobs = [(N, T) for N in s["N"] for T in s["T"]]
        for i, (N, T) in enumerate(jobs):
            C.log(f"{PROG}: [{i + 1}/{len(jobs)}] N = P = {N}, T = {T:g}")
            mf_ms = next(c["masses"] for c in summary["meanfield"][str(N)]["curve"] if c["T"] == T)
            e = sample_entry(N, T, s, args, mf_ms)
            summary["samples"].append(e)
            summary["analysis"] = analyse(summary)
            files.write(summary, markdown(summary))
            C.log(f"{PROG}: N = {N}, T = {T:g} done in {e['seconds']} s: R = {e['R']:.3f} (mean field "
                  f"{e['meanfield_R']:.3f}), ergodicity ratio {e['ergodicity']['ratio']:.2f}, health "
                  f"{e['health']['status']}")
    C.log(f"{PROG}: wrote {files.json} and {files.md}")
    return 0


if __name__ == "__main__":
    sys.exit(C.run_main(PROG, main))
