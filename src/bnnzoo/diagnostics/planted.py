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

from dataclasses import dataclass

from .._record import Record
from .. import azcompat
from ..inference.certify import POWER, compare_chain_means
from .populations import population_observables

__all__ = ["PlantedCheck", "planted_check", "compare_chain_means", "POWER"]

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
