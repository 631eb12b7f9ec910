"""Did chains from other starts reach the planted chains?  The check of a planted (teacher–student) run.

On a planted task (:func:`bnnzoo.tasks.planted_task`) the teacher is an exact posterior draw, so chains started at
the teacher start at equilibrium and their population observables (:func:`bnnzoo.diagnostics.populations.
population_observables`: code fractions, branch masses, outliers, training error) are samples of the equilibrium
law.  Chains from another start reached equilibrium only if their observables follow the same law.

The comparison is of chain means, with the error taken from the **measured** scatter between the chains of each
group (Welch's t with Satterthwaite's degrees of freedom; no binomial floor: units coupled through the readout
scatter less than independent ones); a group whose chains do not scatter at all (an observable constant in every
chain) uses the mean within-chain Monte-Carlo error instead.  The family-wise false-alarm rate ``alpha`` is split
over the observables (Bonferroni).  The check also states its power: the smallest difference of each observable
it would detect with probability 0.8 at that rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from .._record import Record
from .. import azcompat
from .populations import population_observables

__all__ = ["PlantedCheck", "planted_check", "compare_chain_means", "chain_mean_stats", "welch", "POWER"]

POWER = 0.8
"""The detection probability at which a comparison states its smallest detectable difference."""



@dataclass(frozen=True, repr=False)
class PlantedCheck(Record):
    """Whether the chains of another start family reached the planted chains' population observables.

    Attributes
    ----------
    reached : bool
        No observable differs at family-wise rate ``alpha``.
    observables : dict
        {name: {"planted": [mean, se], "other": [mean, se], "t", "dof", "threshold" (the absolute t above which the
        difference counts), "detectable" (the smallest difference detected with probability 0.8)}}.
    differing : tuple of str
        One line per observable that differs.
    alpha : float
        Family-wise false-alarm rate.
    chains : dict
        {"planted": n, "other": n}.
    skipped : dict
        {observable: why it was not compared}.
    """

    reached: bool
    observables: dict
    differing: tuple
    alpha: float
    chains: dict
    skipped: dict

    def summary(self) -> list[str]:
        head = (f"planted check: other start {'reached' if self.reached else 'did NOT reach'} the planted chains' "
                f"populations ({self.chains['other']} vs {self.chains['planted']} chains, {len(self.observables)} "
                f"observables, family-wise alpha {self.alpha:g})")
        lines = [head] + [f"  differs: {d}" for d in self.differing]
        worst = sorted(self.observables.items(), key=lambda kv: -abs(kv[1]["t"]))[:3]
        for name, o in worst:
            lines.append(f"  {name}: planted {o['planted'][0]:.4g} ± {o['planted'][1]:.2g}, other "
                         f"{o['other'][0]:.4g} ± {o['other'][1]:.2g} (|t| {abs(o['t']):.2f} against "
                         f"{o['threshold']:.2f}; detectable difference {o['detectable']:.2g})")
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


def planted_check(planted, other, entry=None, *, alpha: float = 0.01) -> PlantedCheck:
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

    Returns
    -------
    PlantedCheck

    Raises
    ------
    ValueError
        ``alpha`` outside (0, 1), a run with fewer than two chains, or runs with no population observable in common.

    Notes
    -----
    The error of each family mean is the scatter of its chain means.  With a sampler that keeps each unit's code
    (HMC on the sigmoidal net), every planted chain keeps the teacher's own population, a single posterior draw of
    it, so the planted family's chain means scatter far less than the populations of independent draws do, and a
    family at the law's mean can read as "not reached" (``benchmarks/planted_population_draws.py``).  The check is
    sound when the planted chains change codes (``sampler="units"``) or when the population observables' draw-to-draw
    scatter is small next to the detectable differences it reports.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
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
    observables, differing = {}, []
    for k in names:
        r = compare_chain_means(vp[k], vo[k], q)
        observables[k] = {"planted": r["a"], "other": r["b"], "t": r["t"], "dof": r["dof"],
                          "threshold": r["threshold"], "detectable": r["detectable"]}
        if abs(r["t"]) > r["threshold"]:
            differing.append(f"{k}: planted {r['a'][0]:.4g} ± {r['a'][1]:.2g} vs other {r['b'][0]:.4g} ± "
                             f"{r['b'][1]:.2g} (|t| {abs(r['t']):.2f} > {r['threshold']:.2f})")
    return PlantedCheck(reached=not differing, observables=observables, differing=tuple(differing),
                        alpha=float(alpha), chains=chains, skipped=skipped)
