"""Did chains from other starts reach the planted chains?  The check of a planted (teacher–student) run.

On a planted task (:func:`bnnzoo.tasks.planted_task`) the teacher is an exact posterior draw, so chains started at
the teacher start at equilibrium and their population observables (:func:`bnnzoo.diagnostics.populations.
population_observables`: code fractions, branch masses, outliers, training error) are samples of the equilibrium
law.  Chains from another start reached equilibrium only if their observables follow the same law.

Each observable is compared by one of two error models, chosen from the data:

* **chain means (Welch)**, when the planted chains move through the law: the chain means of the two groups, with
  the error taken from the **measured** scatter between the chains of each group (Welch's t with Satterthwaite's
  degrees of freedom; no binomial floor: units coupled through the readout scatter less than independent ones); a
  group whose chains do not scatter at all uses the mean within-chain Monte-Carlo error instead;
* **a prediction interval**, when the planted population is frozen (a sampler that keeps each unit's code keeps the
  teacher's population in every planted chain): the planted chains then hold one draw of the population law, not
  its mean, and the question is whether that draw is a plausible draw of the law the other group samples.  The
  planted mean p must lie within m ± t·√(s² + se_p² + se_o²) of the other group's mean m, where s is the other
  group's per-draw spread (within its chains and between them: the law's draw-to-draw sd when it samples the law).

The planted population counts as frozen for an observable when the planted chains explore less than the other
group's law and hold on to what they start with: their within-chain sd is below ``frozen_below`` (0.7) times s, and
either below half of that or their chain means scatter more than four times as much as independent draws' would
(:func:`compare_planted`).  The family-wise false-alarm rate ``alpha`` is split over the observables (Bonferroni).
The check also states its power: the smallest difference of each observable it would detect with probability 0.8
at that rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from .._record import Record
from .. import azcompat
from .populations import population_observables

__all__ = ["PlantedCheck", "planted_check", "compare_planted", "compare_chain_means", "chain_mean_stats",
           "law_spread", "planted_motion", "welch", "prediction", "POWER", "FROZEN_BELOW", "MEMORY", "WELCH",
           "FROZEN"]

POWER = 0.8
"""The detection probability at which a comparison states its smallest detectable difference."""

FROZEN_BELOW = 0.7
"""The planted population counts as frozen only when the planted chains' within-chain sd is below this fraction of
the other group's per-draw spread: it lies between the ratios of planted chains that move (the unit-wise sampler) and
of planted chains that keep the teacher's codes (SNAPER, on the code fractions), both measured on the sigmoidal net at
N = P = 100, T = 0.001 in ``benchmarks/results/planted_check_frozen_T0.001.md``."""

MEMORY = 4.0
"""Planted chains whose chain means scatter more than this many times as much as independent draws' would (n · B / W,
:func:`planted_motion`) hold on to what they started with; chains of independent draws give 1 (above 4 with
probability 2e-4 for 8 chains, 0.007 for 4), chains that move with autocorrelation time τ about τ (in the benchmark
above the unit-wise sampler's planted chains stay below 4 and SNAPER's, on the code fractions, far above it)."""

WELCH = "chain means (Welch)"
"""The error model of an observable whose planted chains move (:func:`compare_chain_means`)."""

FROZEN = "prediction interval: planted population frozen"
"""The error model of an observable whose planted population is frozen (:func:`prediction`)."""


@dataclass(frozen=True, repr=False)
class PlantedCheck(Record):
    """Whether the chains of another start family reached the planted chains' population observables.

    Attributes
    ----------
    reached : bool
        No observable differs at family-wise rate ``alpha``.
    observables : dict
        {name: :func:`compare_planted`'s record: "planted": [mean, se], "other": [mean, se], "t", "dof",
        "threshold" (the absolute t above which the difference counts), "detectable" (the smallest difference
        detected with probability 0.8), "model" (:data:`WELCH` or :data:`FROZEN`), "spread" (the planted chains'
        within-chain sd, the other group's per-draw sd and their ratio), "welch" (Welch's t and threshold, for
        reference where the model is the prediction interval)}.
    differing : tuple of str
        One line per observable that differs.
    alpha : float
        Family-wise false-alarm rate.
    chains : dict
        {"planted": n, "other": n}.
    skipped : dict
        {observable: why it was not compared}.
    frozen : tuple of str
        The observables whose planted population was frozen (compared by the prediction interval).
    frozen_below : float
        The within-chain-sd ratio below which the planted population counts as frozen.
    """

    reached: bool
    observables: dict
    differing: tuple
    alpha: float
    chains: dict
    skipped: dict
    frozen: tuple = ()
    frozen_below: float = FROZEN_BELOW

    def summary(self) -> list[str]:
        head = (f"planted check: other start {'reached' if self.reached else 'did NOT reach'} the planted chains' "
                f"populations ({self.chains['other']} vs {self.chains['planted']} chains, {len(self.observables)} "
                f"observables, family-wise alpha {self.alpha:g})")
        lines = [head]
        if self.frozen:
            lines.append(f"  planted population frozen in {len(self.frozen)} of {len(self.observables)} observables, "
                         f"judged by a prediction interval: {', '.join(self.frozen)}")
        lines += [f"  differs: {d}" for d in self.differing]
        worst = sorted(self.observables.items(), key=lambda kv: -abs(kv[1]["t"] / kv[1]["threshold"]))[:3]
        for name, o in worst:
            line = (f"  {name}: planted {o['planted'][0]:.4g} ± {o['planted'][1]:.2g}, other "
                    f"{o['other'][0]:.4g} ± {o['other'][1]:.2g}")
            if o.get("model") == FROZEN:
                line += f" (sd {o['spread']['other_sd']:.2g} per draw)"
            lines.append(line + f" (|t| {abs(o['t']):.2f} against {o['threshold']:.2f}; detectable difference "
                         f"{o['detectable']:.2g}; {o.get('model', WELCH)})")
        return lines


def chain_mean_stats(x: np.ndarray, mc: np.ndarray | None = None) -> tuple[float, float, int]:
    """(mean of the chain means, its standard error, chains − 1) of one group's (chain, draw) values.

    The error is the measured scatter of the chain means, each chain one sample of the population law, floored by
    the chains' mean Monte-Carlo variance ``mc`` (chain,) (a chain mean scatters at least by its own sampling error;
    None: the within-chain variance over the draws, as if independent)."""
    x = np.asarray(x, float)
    mu = x.mean(1)
    n = len(mu)
    s2 = float(mu.var(ddof=1)) if n > 1 else 0.0
    if mc is None:
        mc = x.var(1, ddof=1) / x.shape[1] if x.shape[1] > 1 else np.zeros(n)
    return float(mu.mean()), math.sqrt(max(s2, float(np.mean(mc))) / n), n - 1


def welch(a: tuple, b: tuple, q: float) -> dict:
    """Welch's comparison of two groups' (mean, se, dof) at one-sided level ``q`` per tail.

    Returns {"t" (b − a over its error), "dof" (Satterthwaite), "threshold" (the ``|t|`` above which the groups
    differ), "detectable" (the smallest difference detected with probability :data:`POWER`)}."""
    (ma, sa, na), (mb, sb, nb) = a, b
    v = sa ** 2 + sb ** 2
    d = mb - ma
    t = 0.0 if d == 0 else (d / math.sqrt(v) if v > 0 else math.copysign(math.inf, d))
    if v > 0:
        dof = v ** 2 / ((sa ** 4 / na if na else 0.0) + (sb ** 4 / nb if nb else 0.0))
    else:
        dof = float(na + nb)
    dof = max(dof, 1.0)
    k = float(stats.t.isf(q, dof))
    return {"t": t, "dof": dof, "threshold": k, "detectable": (k + float(stats.t.isf(1 - POWER, dof))) * math.sqrt(v)}


def compare_chain_means(a: np.ndarray, b: np.ndarray, q: float) -> dict:
    """Welch's comparison of the chain means of two groups of chains at one-sided level ``q`` per tail.

    Parameters
    ----------
    a, b : (chain, draw) values of one observable in each group (two or more chains each).
    q : the tail probability of the threshold (two-sided rate / 2).

    Returns
    -------
    dict
        "a", "b" ([mean, se], :func:`chain_mean_stats`), "t" (the difference over its error, b − a), "dof",
        "threshold" (the ``|t|`` above which the groups differ), "detectable" (the smallest difference detected with
        probability :data:`POWER`).
    """
    sa, sb = chain_mean_stats(a), chain_mean_stats(b)
    return {"a": list(sa[:2]), "b": list(sb[:2]), **welch(sa, sb, q)}


def _within_between(x: np.ndarray) -> tuple[float, float, int, int]:
    """(W, B, chains, draws) of one group's (chain, draw) values: W the mean within-chain variance (0 with one draw),
    B the variance of the chain means (0 with one chain)."""
    x = np.asarray(x, float)
    c, n = x.shape
    w = float(x.var(1, ddof=1).mean()) if n > 1 else 0.0
    b = float(x.mean(1).var(ddof=1)) if c > 1 else 0.0
    return w, b, c, n


def law_spread(x: np.ndarray) -> tuple[float, float]:
    """(per-draw sd, its degrees of freedom) of one group's (chain, draw) values: the spread of single draws around
    the group's mean, within chains and between them.

    The variance is W + B, the mean within-chain variance W plus the variance B of the chain means (one-way analysis
    of variance): when each chain holds its own population, B carries the populations' scatter; when the chains
    move through the law, W does.  Its degrees of freedom are Satterthwaite's, B with chains − 1 and W with
    chains · (draws − 1) (autocorrelation ignored: it matters only where W dominates, and the degrees of freedom are
    then large either way)."""
    w, b, c, n = _within_between(x)
    den = (b ** 2 / (c - 1) if c > 1 else 0.0) + (w ** 2 / (c * (n - 1)) if n > 1 else 0.0)
    return math.sqrt(w + b), ((w + b) ** 2 / den if den > 0 else math.inf)


def planted_motion(x: np.ndarray) -> tuple[float, float]:
    """(within-chain sd, scatter of the chain means) of one group's (chain, draw) values.

    The within-chain sd is √W, W the mean within-chain variance; the scatter is n · B / W, B the variance of the
    chain means over the n draws: about 1 for chains of independent draws, about the autocorrelation time for
    chains that move, and growing with n for chains that start together and keep apart (each keeping a population
    of its own).  (0, nan) with one draw; the scatter is nan with one chain or no within-chain scatter."""
    w, b, c, n = _within_between(x)
    if n < 2:
        return 0.0, math.nan
    return math.sqrt(w), (n * b / w if w > 0 and c > 1 else math.nan)


def prediction(a: tuple, b: tuple, law: tuple, q: float) -> dict:
    """Is group a's mean a plausible single draw of the law group b samples?  At one-sided level ``q`` per tail.

    Parameters
    ----------
    a, b : (mean, se, dof) of each group (:func:`chain_mean_stats`); a is the frozen (planted) group.
    law : (sd, dof) of b's single draws (:func:`law_spread`).
    q : the tail probability of the threshold.

    Returns
    -------
    dict
        {"t" ((b − a) over √(sd² + se_a² + se_b²), the prediction error of one new draw of b's law), "dof"
        (Satterthwaite's over sd² + se_b² with the law's degrees of freedom, both being estimated from b's scatter,
        and se_a² with a's), "threshold", "detectable"} as in :func:`welch`.

    When b's chains each hold one draw of the law, sd² + se_b² is its chain means' variance times 1 + 1/chains, and
    t is Student's with chains − 1 degrees of freedom: the prediction interval of one new draw of a normal law.
    """
    (ma, sa, na), (mb, sb, nb), (s, ns) = a, b, law
    parts = [(s ** 2 + sb ** 2, ns), (sa ** 2, na)]
    v = sum(p for p, _ in parts)
    d = mb - ma
    t = 0.0 if d == 0 else (d / math.sqrt(v) if v > 0 else math.copysign(math.inf, d))
    den = sum(p ** 2 / k for p, k in parts if k and p > 0)
    dof = max(v ** 2 / den if den > 0 else float(na + nb), 1.0)
    k = float(stats.t.isf(q, dof))
    return {"t": t, "dof": dof, "threshold": k, "detectable": (k + float(stats.t.isf(1 - POWER, dof))) * math.sqrt(v)}


def compare_planted(a: np.ndarray, b: np.ndarray, q: float, frozen_below: float = FROZEN_BELOW, *,
                    mc_a: np.ndarray | None = None, mc_b: np.ndarray | None = None) -> dict:
    """Compare one observable of a planted group with another group, by the error model the data call for.

    The planted population counts as frozen when the planted chains explore less than the other group's law and keep
    what they start with: their within-chain sd is below ``frozen_below`` times the other group's per-draw sd
    (:func:`law_spread`), and either below half of that (they barely move) or their chain means scatter more than
    :data:`MEMORY` times as much as independent draws would (:func:`planted_motion`: chains that move slowly, or
    that start together and keep apart, hold on to a population).  Narrower planted chains of nearly independent
    draws are read as another law, not as a frozen one (a posterior at a lower temperature is narrower); planted
    chains that do not move at all count as frozen also when the other group does not spread either.  When
    frozen, the planted mean is judged as one draw of the other group's law (:func:`prediction`); else the chain
    means are compared (:func:`compare_chain_means`, whose numbers it returns unchanged).

    Parameters
    ----------
    a, b : (chain, draw) values of one observable in the planted group and the other group (two or more chains).
    q : the tail probability of the threshold (two-sided rate / 2).
    frozen_below : the ratio of sds below which the planted population counts as frozen (0: never).
    mc_a, mc_b : (chain,) or None
        Each chain's Monte-Carlo variance of its mean, the floor of each group's standard error
        (:func:`chain_mean_stats`; None: the within-chain variance over the draws, as if independent).

    Returns
    -------
    dict
        :func:`compare_chain_means`'s record ("a", "b", "t", "dof", "threshold", "detectable") with "model"
        (:data:`WELCH` or :data:`FROZEN`), "spread" ({"planted_within_sd", "other_sd", "ratio", "planted_scatter"}) and,
        where the model is the prediction interval, "welch" ({"t", "threshold"} of the chain-mean comparison, for
        reference).
    """
    sa, sb = chain_mean_stats(a, mc_a), chain_mean_stats(b, mc_b)
    law = law_spread(b)
    within, scatter = planted_motion(a)
    ratio = within / law[0] if law[0] > 0 else (0.0 if within == 0 else math.inf)   # chains that never move: frozen
    w = welch(sa, sb, q)
    out = {"a": list(sa[:2]), "b": list(sb[:2]), **w, "model": WELCH,
           "spread": {"planted_within_sd": within, "other_sd": law[0], "ratio": ratio, "planted_scatter": scatter}}
    if ratio < frozen_below and (ratio < frozen_below / 2 or scatter > MEMORY):
        out.update(prediction(sa, sb, law, q), model=FROZEN, welch={"t": w["t"], "threshold": w["threshold"]})
    return out


def planted_check(planted, other, entry=None, *, alpha: float = 0.01,
                  frozen_below: float = FROZEN_BELOW) -> PlantedCheck:
    """Compare the population observables of chains started elsewhere with those of chains started at the teacher.

    Parameters
    ----------
    planted : InferenceData or DataTree
        A run of :func:`bnnzoo.sample` on a planted task with every chain started at the teacher
        (``init=bnnzoo.tasks.planted_init(task, C)``), two or more chains.
    other : InferenceData or DataTree
        A run on the same task and model from another start (two or more chains).
    entry : ZooEntry, str or None
        The zoo entry (None: read from the runs' provenance).
    alpha : float
        Family-wise false-alarm rate over the observables, in (0, 1).
    frozen_below : float
        The planted population counts as frozen for an observable when the planted chains' within-chain sd is below
        this fraction of the other run's per-draw sd, in [0, 1] (0: every observable by chain means, Welch).

    Returns
    -------
    PlantedCheck

    Raises
    ------
    ValueError
        ``alpha`` outside (0, 1), ``frozen_below`` outside [0, 1], a run with fewer than two chains, or runs with no
        population observable in common.

    Notes
    -----
    Every planted chain starts at the teacher, one posterior draw.  A sampler that changes the units' codes
    (``sampler="units"``) carries the planted chains through the population law, and their chain means are
    compared with the other run's by Welch's t on the measured scatter of the chain means.  A sampler that keeps
    each unit's code (HMC on the sigmoidal net) keeps the teacher's population in every planted chain: their chain
    means then scatter far less than the populations of independent draws do, and the chain-mean comparison would
    read the teacher's own offset from the law's mean as "not reached".  For such an observable (the planted
    chains' within-chain sd below ``frozen_below`` times the other run's per-draw sd, and their draws barely
    moving or not independent: :func:`compare_planted`) the check asks instead
    whether the planted mean is a plausible draw of the other run's law: a prediction interval whose width is the
    other run's per-draw sd (:func:`prediction`).  It detects only differences of the order of that sd, as it must:
    one draw of a population says no more about the law.  The result names the model of every observable
    (``observables[name]["model"]``; ``frozen`` lists the prediction-interval ones).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if not 0 <= frozen_below <= 1:
        raise ValueError(f"frozen_below must lie in [0, 1], got {frozen_below!r}")
    runs = {"planted": planted, "other": other}
    chains = {}
    for name, run in runs.items():
        c = int(azcompat.get_group(run, "posterior").sizes["chain"])
        if c < 2:
            raise ValueError(f"planted_check needs two or more chains in the {name} run (their scatter is the "
                             f"error), got {c}")
        chains[name] = c
    vp = population_observables(planted, entry)
    vo = population_observables(other, entry)
    names = [k for k in vp if k in vo]
    skipped = {k: "not in both runs" for k in sorted(set(vp) ^ set(vo))}
    skipped.update({k: v for k, v in {**vp.skipped, **vo.skipped}.items()})
    if not names:
        raise ValueError("the two runs share no population observable (record the same sites in both)")
    q = alpha / (2 * len(names))
    observables, differing, frozen = {}, [], []
    for k in names:
        r = compare_planted(vp[k], vo[k], q, frozen_below)
        observables[k] = {"planted": r["a"], "other": r["b"], **{x: r[x] for x in r if x not in ("a", "b")}}
        if r["model"] == FROZEN:
            frozen.append(k)
        if abs(r["t"]) > r["threshold"]:
            if r["model"] == FROZEN:
                differing.append(f"{k}: planted {r['a'][0]:.4g} ± {r['a'][1]:.2g} is no plausible draw of the other "
                                 f"run's law {r['b'][0]:.4g}, sd {r['spread']['other_sd']:.2g} per draw (|t| "
                                 f"{abs(r['t']):.2f} > {r['threshold']:.2f}; planted population frozen)")
            else:
                differing.append(f"{k}: planted {r['a'][0]:.4g} ± {r['a'][1]:.2g} vs other {r['b'][0]:.4g} ± "
                                 f"{r['b'][1]:.2g} (|t| {abs(r['t']):.2f} > {r['threshold']:.2f})")
    return PlantedCheck(reached=not differing, observables=observables, differing=tuple(differing),
                        alpha=float(alpha), chains=chains, skipped=skipped, frozen=tuple(frozen),
                        frozen_below=float(frozen_below))
