"""Mean-field critical temperature of the sigmoidal net's redundant code on the toy task (theory page §1, §3, §5).

Toy task (orthogonal inputs, classes ½ ¼ ¼, m = 3), targets y+ = 1 and y−, one hidden sigmoidal layer, σ_a² = 1/P,
N → ∞ at fixed P (:func:`bnnzoo.theory.single_neuron_meanfield`).  At low rescaled temperature T the single-neuron
readout density p(a) has branches with codes 011/101/110 besides 111 (the redundant code); T_c is the temperature
above which only the 111 branch is left.  :func:`meanfield_critical_temperature` brackets T_c on a temperature grid,
bisects the bracket and confirms its upper end without the solver's grid (:func:`exact_ascent`).
``reproduce/critical_temperature.py`` compares it with samples at finite N.
"""

from __future__ import annotations

import time

import numpy as np
from scipy import optimize

from ..tasks.toy import toy_task
from .meanfield import MeanFieldResult, activation_moments, single_neuron_meanfield
from .schemes import mass_per_code

__all__ = ["MIN_MASS", "toy_meanfield", "redundant_mass", "is_redundant", "exact_ascent",
           "meanfield_critical_temperature"]

MIN_MASS = 1e-3
"""Mean-field mass of the codes other than 111 below which the redundant code counts as gone (equal to the solver's
default floor for reporting a branch, ``min_mass`` of :func:`bnnzoo.theory.single_neuron_meanfield_classes`)."""


def toy_meanfield(P: int, T: float, *, y_neg: float = 0.5, n_grid: int | None = None,
                  lam0: np.ndarray | None = None) -> MeanFieldResult:
    """Single-neuron mean field of the sigmoidal net on the toy task with P points.

    The task is :func:`bnnzoo.toy_task` with N0 = P + 20, y+ = 1 and y− = ``y_neg`` (its class sizes and targets);
    σ_a² = 1/P, σ_w² = 1.

    Parameters
    ----------
    P : int
        Number of training points (classes in ratios ½ ¼ ¼, rounded as :func:`bnnzoo.toy_task` does).
    T : float
        Rescaled temperature, >= 0.
    y_neg : float
        Target of the wrong classes, y−.
    n_grid : int or None
        Grid points per readout coordinate of the solver (None: its default).
    lam0 : (3, 3) array or None
        Starting λ of the self-consistency solve (e.g. the solution at a nearby temperature); None: the solver's own
        continuation.

    Returns
    -------
    MeanFieldResult
        The solution: λ (3, 3), branches (``branch_code``, ``branch_mass``, ``branch_mode`` (B, 3)), …

    Raises
    ------
    RuntimeError
        When the solver finds no normalisable solution (not expected for the sigmoid).
    """
    task = toy_task(P=P, N0=P + 20, y_pos=1.0, y_neg=y_neg)
    r = single_neuron_meanfield(task.X, task.Y, labels=task.labels, nonlinearity="sigmoid", temperature=T,
                                sigma_a2=1.0 / P, lam0=lam0, check_grid=False, n_grid=n_grid)
    if not r.normalizable:
        raise RuntimeError(f"mean field at P = {P}, T = {T}: {r.status}")
    return r


def redundant_mass(masses: dict) -> float:
    """Mean-field mass of the codes other than 111 (the counterpart of the fraction of units off 111).

    Parameters
    ----------
    masses : dict
        {code: mass}, as from :func:`bnnzoo.theory.schemes.mass_per_code`.

    Returns
    -------
    float
        The sum of the masses of every code but ``"111"`` (0 when there is none).
    """
    return float(sum(v for k, v in masses.items() if k != "111"))


def is_redundant(masses: dict, min_mass: float = MIN_MASS) -> bool:
    """Whether a mean-field solution still has a coding branch other than 111.

    Parameters
    ----------
    masses : dict
        {code: mass} of the solution.
    min_mass : float
        Threshold on :func:`redundant_mass`.

    Returns
    -------
    bool
        ``redundant_mass(masses) > min_mass``.
    """
    return redundant_mass(masses) > min_mass


def exact_ascent(result: MeanFieldResult, start) -> dict:
    """Gradient ascent of log p(a) under the λ of a mean-field solution, without the solver's grid.

    log p(a) = −|a|²/(2σ_a²) + Σ_c P_c log M(λ_cᵀa), with log M and its derivative from Gauss–Hermite quadrature
    (:func:`bnnzoo.theory.activation_moments`), maximised by BFGS (gradient tolerance 1e-10).  Grid-free so that a
    basin narrower than the solver's grid spacing is not missed.

    Parameters
    ----------
    result : MeanFieldResult
        The solution whose λ (3, 3), class sizes, σ_a², σ_w² and nonlinearity define p(a).
    start : (3,) array_like
        Starting readout vector a.

    Returns
    -------
    dict
        ``start`` and ``end`` (lists of 3 floats; ``end`` is the local maximum reached, BFGS's last iterate) and
        ``code`` (str of 3 bits: bit c is 1 when λ_cᵀa > 0 at ``end``, i.e. the mean activation on class c is above
        the prior's ½ for the sigmoid).
    """
    lam, sizes, sa2 = result.lam, result.class_sizes, result.sigma_a2

    def neg_logp(a):  # −log p(a) and its gradient
        lM, m1, _ = activation_moments(lam @ a, result.nonlinearity, result.sigma_w2)
        return 0.5 * a @ a / sa2 - sizes @ lM, a / sa2 - (sizes * m1) @ lam

    end = optimize.minimize(neg_logp, np.asarray(start, float), jac=True, method="BFGS", options={"gtol": 1e-10}).x
    return dict(start=list(map(float, start)), end=list(map(float, end)),
                code="".join("1" if v > 0 else "0" for v in lam @ end))


def meanfield_critical_temperature(P: int, temps, *, y_neg: float = 0.5, n_grid: int | None = None,
                                   tol: float = 5e-4, min_mass: float = MIN_MASS) -> dict:
    """Mean-field T_c(P) of the redundant code: the temperature above which p(a) has the 111 branch only.

    The mean field (:func:`toy_meanfield`) is solved at every temperature of ``temps``, each solve continued from the
    previous λ; T_c is bracketed between the highest temperature with a non-111 branch (:func:`is_redundant`) and the
    next higher one, and the bracket is bisected until it is no wider than ``tol``, each solve continued from the λ of
    the bracket's redundant end.  The self-consistent solution is unique at every T (the action is strictly convex), so
    the continuation only speeds the solve up.  The upper end is then checked without the grid: :func:`exact_ascent`
    under its λ from every non-111 mode of the lower end.

    Parameters
    ----------
    P : int
        Number of training points (N = ∞).
    temps : sequence of float
        Ascending temperatures; must bracket T_c.
    y_neg : float
        Target of the wrong classes, y−.
    n_grid : int or None
        Grid points per readout coordinate of the solver (None: its default).
    tol : float
        Largest width of the final bracket.
    min_mass : float
        Mass of the non-111 codes above which a solution counts as redundant.

    Returns
    -------
    dict
        ``P``; ``T_c`` and ``T_c_err`` (the bracket's centre and half-width); ``lo`` and ``hi`` (the highest
        temperature found redundant and the lowest found not, ``hi − lo <= tol``); ``steps`` (bisection solves);
        ``tol``; ``n_grid``; ``lo_masses`` and ``hi_masses`` ({code: mass} at ``lo`` and ``hi``); ``lo_modes``
        ({code: mode (list of 3 floats)} at ``lo``); ``hi_check`` ({``ascents``: the :func:`exact_ascent` results
        from the non-111 modes of ``lo`` under the λ of ``hi``, ``confirmed``: whether there is at least one and all
        end on code 111}); ``curve`` (per temperature of ``temps``: {``T``, ``masses``, ``redundant_mass``});
        ``seconds`` (wall time, rounded to 0.1 s).

    Raises
    ------
    ValueError
        When ``temps`` does not bracket T_c (no temperature is redundant, or none above the highest redundant one is
        not).
    RuntimeError
        From :func:`toy_meanfield`, when a solve finds no normalisable solution.
    """
    t0 = time.time()
    curve, lam, res = [], None, {}
    for T in temps:
        r = res[T] = toy_meanfield(P, T, y_neg=y_neg, n_grid=n_grid, lam0=lam)
        lam = r.lam
        ms = mass_per_code(r.branch_code, r.branch_mass)
        curve.append(dict(T=T, masses=ms, redundant_mass=redundant_mass(ms)))
    red = [c["T"] for c in curve if is_redundant(c["masses"], min_mass)]
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
        r = toy_meanfield(P, mid, y_neg=y_neg, n_grid=n_grid, lam0=r_lo.lam)
        ms = mass_per_code(r.branch_code, r.branch_mass)
        steps += 1
        if is_redundant(ms, min_mass):
            lo, r_lo, lo_ms = mid, r, ms
        else:
            hi, r_hi, hi_ms = mid, r, ms
    ascents = [exact_ascent(r_hi, a) for a, c in zip(r_lo.branch_mode, r_lo.branch_code) if c != "111"]
    hi_check = dict(ascents=ascents, confirmed=bool(ascents) and all(x["code"] == "111" for x in ascents))
    return dict(P=P, T_c=0.5 * (lo + hi), T_c_err=0.5 * (hi - lo), lo=lo, hi=hi, steps=steps, tol=tol,
                n_grid=n_grid, lo_masses=lo_ms, hi_masses=hi_ms,
                lo_modes=dict(zip(r_lo.branch_code, r_lo.branch_mode.tolist())),
                hi_check=hi_check, curve=curve, seconds=round(time.time() - t0, 1))
