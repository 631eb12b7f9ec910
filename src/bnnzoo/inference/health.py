"""Sampler health before physics: can a run carry verdicts at all, and has it reached equilibrium?

Every per-unit verdict of bnnzoo (ergodicity, branches, codes, permutation symmetry) and every theory comparison reads
the draws as samples of the posterior.  A sampler that failed (diverged, got stuck, ran too short) produces draws that
look like broken ergodicity or frozen codes for reasons that have nothing to do with the network.
:func:`sampler_health` judges that first, from the sampler's own statistics and from the permutation-invariant
observables of the run, and returns a :class:`SamplerHealth` record with one of three statuses:

* ``"failed"``: the run cannot carry verdicts; :func:`gate_verdicts` turns every verdict into
  ``"inconclusive: <reason>"``;
* ``"relaxing"``: the sampler works but the run has not reached equilibrium (an order parameter or the outlier count
  drifts across the run, or the chains disagree on an invariant observable); :func:`gate_verdicts` turns "theory
  disagrees" into ``"relaxing: <evidence>"``, and "ergodicity broken" into ``"inconclusive: ..."`` when the chains
  disagree on an invariant observable (R̂);
* ``"equilibrated"``: verdicts stand.  "Ergodicity broken" then means what the theory means: the invariant
  observables mixed (across chains, or across the halves of a single chain) while the units kept their identity;
  :attr:`SamplerHealth.evidence` says which of these checks were available.

Permutation-invariant observables (they do not change when the hidden units are relabelled, so every chain and every
part of a chain must agree on them at equilibrium, even when ergodicity of the single units is broken):
``mse`` (training error), ``q_a[c] = |a_c|²/N`` (readout norm per class), ``f`` (network outputs on the training
points; the median R̂ over points and classes is used), ``q_z<l>`` = mean of (zˡ)² (trace of layer l's kernel over P,
when the preactivations were recorded) and ``n_outliers`` (readout outliers per draw, FCN readouts only).

Thresholds (each with the reason for its value):

* ``MIN_DRAWS = 100`` kept draws per chain: below it the rank-normalised R̂ and ESS (Vehtari et al. 2021) are too noisy
  to tell a mixed chain from a stuck one, and a unit's time variance (ergodicity ratio) is dominated by its noise.
* ``MIN_CHAINS = 1``: one chain can carry verdicts, judged by split R̂ between its halves; with two or more chains
  the between-chain R̂ is used, the stronger check (the report says which was used).
* ``MAX_DIVERGENCE_RATE = 0.01``: a divergent transition marks a region the integrator cannot follow; above 1 % of
  transitions the posterior is visibly biased (Betancourt 2017 treats any divergence as a warning; 1 % tolerates the
  rare ones that large nets give at a well-tuned step size).
* ``MIN_EBFMI = 0.3``: energy Bayesian fraction of missing information below 0.3 means the momentum resampling cannot
  move the chain through the energy levels (Betancourt 2016, the threshold Stan and ArviZ use).
* ``MAX_TREE_SATURATION = 0.25`` (NUTS): more than a quarter of the transitions cut at the maximum tree depth means
  NUTS degenerates into a random walk of truncated trajectories, and the mixing numbers below are optimistic.
* ``MIN_MOVEMENT = 0.1``: a chain is stuck when the standard deviation of its log density is below 0.1 of that of
  its kinetic energy.  Both are ≈ √(d/2) for a d-dimensional posterior that the chain explores (equipartition), and
  the kinetic energy is redrawn every transition whether the chain moves or not; a tiny step size leaves the log
  density constant.
* ``MIN_ESS = 20`` (bulk ESS, all chains together, of every invariant observable): fewer effective draws give Monte
  Carlo standard errors above ≈ 0.22 of a standard deviation, too coarse for the theory comparisons ("run too
  short"; an observable that drifts or on which the chains disagree counts as relaxing instead).
* ``MAX_RHAT = 1.1``: between-chain (or split) rank-normalised R̂ of an invariant observable above 1.1 means the chains
  disagree on it (Gelman et al.'s classical threshold; the stricter 1.01 needs far longer runs than bnnzoo's CI sizes).
* ``POPULATION_SE_FACTOR = 3``: the N units of a chain are one sample of the single-unit marginal; when ergodicity is
  broken (the physics being measured) that sample is frozen, so a unit average (``q_a[c]``, ``q_z<l>``) differs
  between chains, and can creep within one, by about its population standard error std_units / √N even at
  equilibrium.  R̂, drift and ESS of a unit average are therefore evidence only when its chain means (or a chain's
  first tenth and last half) differ by more than 3 population standard errors; a relaxing outlier shows in
  ``n_outliers``, which is always judged.
* ``MAX_DRIFT_Z = 4``: the mean of an invariant observable over the last half of a chain differs from its mean over
  the first tenth by more than 4 standard errors (Geweke's 1992 test and windows, each window's standard error from
  its own ESS; the first tenth catches a transient from the starting point that a halves split averages away); 4
  keeps the false-alarm rate below ≈ 1e-4 per test, and a run makes a few dozen tests.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from .. import azcompat
from .._record import Record

__all__ = ["SamplerHealth", "sampler_health", "gate_verdicts", "warn_if_unhealthy", "invariant_observables",
           "MIN_DRAWS", "MIN_CHAINS", "MAX_DIVERGENCE_RATE", "MIN_EBFMI", "MAX_TREE_SATURATION", "MIN_MOVEMENT",
           "MIN_ESS", "MAX_RHAT", "MAX_DRIFT_Z", "POPULATION_SE_FACTOR", "population_se"]

MIN_DRAWS = 100
MIN_CHAINS = 1
MAX_DIVERGENCE_RATE = 0.01
MIN_EBFMI = 0.3
MAX_TREE_SATURATION = 0.25
MIN_MOVEMENT = 0.1
MIN_ESS = 20.0
MAX_RHAT = 1.1
MAX_DRIFT_Z = 4.0
POPULATION_SE_FACTOR = 3.0

_THRESHOLDS = dict(min_draws=MIN_DRAWS, min_chains=MIN_CHAINS, max_divergence_rate=MAX_DIVERGENCE_RATE,
                   min_ebfmi=MIN_EBFMI, max_tree_saturation=MAX_TREE_SATURATION, min_movement=MIN_MOVEMENT,
                   min_ess=MIN_ESS, max_rhat=MAX_RHAT, max_drift_z=MAX_DRIFT_Z,
                   population_se_factor=POPULATION_SE_FACTOR)


@dataclass(frozen=True, repr=False)
class SamplerHealth(Record):
    """Whether a run can carry verdicts (see the module docstring for every check and threshold).

    Attributes
    ----------
    status : "equilibrated", "relaxing" or "failed".
    reasons : why the run failed (empty unless status is "failed"), one short sentence each.
    relaxing : evidence that the run has not reached equilibrium (R̂ or drift of an invariant observable; also
        recorded for a failed run, where it is not the cause of the status).
    evidence : which checks the verdicts rest on (between-chain or split R̂, the observables used).
    sampler : the sampler's name from the run's provenance ("" when unknown).
    n_chains, n_draws : the run's size (kept draws per chain).
    divergences : divergent transitions (all chains); divergence_rate : their fraction of all transitions.
    ebfmi_min : smallest E-BFMI over chains (NaN without energies).
    tree_saturation : fraction of NUTS transitions at the maximum tree depth (NaN for other samplers).
    movement_min : smallest over chains of sd(log density) / sd(kinetic energy) (NaN without energies).
    rhat : {observable: R̂} (between-chain when n_chains ≥ 2, else split R̂).
    ess : {observable: bulk ESS, all chains}.
    drift_z : {observable: largest absolute z over chains of Geweke's last-half minus first-tenth mean}.
    thresholds : the thresholds used.
    mixed : no counted invariant observable has R̂ above ``MAX_RHAT`` (between chains, or split for one chain): the
        condition under which "ergodicity broken" stands in a relaxing run (a transient drift alone leaves it).
    """

    status: str
    reasons: tuple = ()
    relaxing: tuple = ()
    evidence: str = ""
    sampler: str = ""
    n_chains: int = 0
    n_draws: int = 0
    divergences: int = 0
    divergence_rate: float = float("nan")
    ebfmi_min: float = float("nan")
    tree_saturation: float = float("nan")
    movement_min: float = float("nan")
    rhat: dict = field(default_factory=dict)
    ess: dict = field(default_factory=dict)
    drift_z: dict = field(default_factory=dict)
    thresholds: dict = field(default_factory=lambda: dict(_THRESHOLDS))
    mixed: bool = True

    @property
    def conclusive(self) -> bool:
        """True when the run can carry verdicts (status not "failed")."""
        return self.status != "failed"

    @property
    def reason(self) -> str:
        """One line: the reasons for a failed run, the evidence of a relaxing one, "" otherwise."""
        return "; ".join(self.reasons if self.status == "failed" else self.relaxing)

    def summary(self) -> list[str]:
        def fmt(d):
            return ", ".join(f"{k} {v:.3g}" if isinstance(v, float) and math.isfinite(v) else f"{k} {v}"
                             for k, v in d.items())

        lines = [f"{self.status}" + (f": {self.reason}" if self.reason else "") + f" [{self.sampler or 'sampler ?'}, "
                 f"{self.n_chains} chains × {self.n_draws} draws]",
                 f"divergences {self.divergences} ({self.divergence_rate:.2%}), E-BFMI min {self.ebfmi_min:.2f}, "
                 f"tree-depth saturation {self.tree_saturation:.2f}, movement min {self.movement_min:.2f}"]
        if self.rhat:
            lines.append("R̂: " + fmt(self.rhat))
        if self.ess:
            lines.append("ESS: " + fmt(self.ess))
        if self.drift_z:
            lines.append("drift |z| (Geweke, last half vs first tenth): " + fmt(self.drift_z))
        if self.evidence:
            lines.append("evidence: " + self.evidence)
        return lines


def _lead(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, float)


def invariant_observables(posterior: xr.Dataset, y: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The run's permutation-invariant observables, each (chain, draw): ``mse``, ``q_a[c]``, ``q_z<l>``,
    ``n_outliers`` (module docstring), plus ``f`` as (chain, draw, entry).

    posterior : the run's posterior group (dims chain, draw first).  y : (P, m) training targets, used for ``mse``
    when the posterior has ``f`` but no ``mse``.
    """
    out: dict[str, np.ndarray] = {}
    if "mse" in posterior:
        out["mse"] = _lead(posterior["mse"].values).reshape(posterior["mse"].shape[:2] + (-1,)).mean(-1)
    elif "f" in posterior and y is not None and posterior["f"].shape[2:] == np.shape(y):
        out["mse"] = np.mean((_lead(posterior["f"].values) - y) ** 2, axis=(2, 3))
    if "a" in posterior:
        a = posterior["a"]
        av = _lead(a.values)
        C, D = av.shape[:2]
        if "class" in a.dims and a.ndim >= 3:
            av = np.moveaxis(av, a.dims.index("class"), -1)
            q = (av ** 2).reshape(C, D, -1, av.shape[-1]).mean(2)
            for c in range(q.shape[-1]):
                out[f"q_a[{c}]"] = q[..., c]
            if av.ndim == 4 and av.shape[2] >= 8:
                out["n_outliers"] = _outlier_counts(av)
        else:
            out["q_a"] = (av ** 2).reshape(C, D, -1).mean(-1)
    for name in sorted(posterior.data_vars):
        if name == "z" or (name.startswith("z") and name[1:].isdigit()):
            zv = _lead(posterior[name].values)
            out["q_" + (name if name != "z" else "z1")] = (zv ** 2).reshape(zv.shape[:2] + (-1,)).mean(-1)
    if "f" in posterior:
        fv = _lead(posterior["f"].values)
        out["f"] = fv.reshape(fv.shape[:2] + (-1,))
    return out


def population_se(posterior: xr.Dataset) -> dict[str, float]:
    """Population standard error of the unit averages among the invariant observables (``q_a[c]``, ``q_z<l>``):
    std over the units of a unit's time-averaged contribution / √N, the largest over chains."""
    out: dict[str, float] = {}
    if "a" in posterior and "class" in posterior["a"].dims and posterior["a"].ndim == 4:
        a = np.moveaxis(_lead(posterior["a"].values), posterior["a"].dims.index("class"), -1)
        contrib = (a ** 2).mean(1)                                 # (C, N, m)
        se = contrib.std(1, ddof=1) / math.sqrt(contrib.shape[1])  # (C, m)
        for c in range(se.shape[-1]):
            out[f"q_a[{c}]"] = float(se[:, c].max())
    for name in sorted(posterior.data_vars):
        if (name == "z" or (name.startswith("z") and name[1:].isdigit())) and posterior[name].ndim == 4:
            zv = _lead(posterior[name].values)
            contrib = (zv ** 2).mean(axis=(1, 3))                  # (C, N)
            out["q_" + (name if name != "z" else "z1")] = float(
                (contrib.std(1, ddof=1) / math.sqrt(contrib.shape[1])).max())
    return out


def _largest_change(x: np.ndarray) -> float:
    """The largest difference an R̂ or drift test can have seen in x (chain, draw): between chain means, or between
    a chain's first tenth and last half."""
    C, D = x.shape
    m = x.mean(1)
    between = float(m.max() - m.min())
    t = max(D // 10, 1)
    drift = float(np.max(np.abs(x[:, D - D // 2:].mean(1) - x[:, :t].mean(1)))) if D >= 2 else 0.0
    return max(between, drift)


def _outlier_counts(a: np.ndarray) -> np.ndarray:
    """Readout outliers per draw (chain, draw): units whose readout norm exceeds N^(1/4) times the draw's median
    (the readout half of :func:`bnnzoo.diagnostics.branches.find_outliers`' criterion)."""
    N = a.shape[2]
    r = np.sqrt((a ** 2).sum(-1))  # (C, D, N)
    med = np.median(r, axis=2, keepdims=True)
    return (r > N ** 0.25 * np.maximum(med, 1e-300)).sum(-1).astype(float)


def _ess_rhat(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bulk ESS and rank-normalised R̂ (ArviZ, through bnnzoo.azcompat) of x (chain, draw, entry) per entry."""
    ds = xr.Dataset({"x": (("chain", "draw", "entry"), x)})
    e = np.asarray(azcompat.ess(ds, method="bulk")["x"].values, float)
    r = np.asarray(azcompat.rhat(ds)["x"].values, float)
    return e, r


def _drift_z(x: np.ndarray) -> float:
    """Largest |z| over chains of Geweke's statistic: mean(last half) − mean(first tenth), each window's standard
    error from its own bulk ESS."""
    C, D = x.shape
    h, t = D // 2, max(D // 10, 4)
    zs = []
    for c in range(C):
        a, b = x[c, :t], x[c, D - h:]
        d = b.mean() - a.mean()
        va, vb = a.var(ddof=1), b.var(ddof=1)
        if va == 0 and vb == 0:
            zs.append(0.0 if d == 0 else math.inf)
            continue
        ea = float(np.nan_to_num(azcompat.ess(xr.Dataset({"x": (("chain", "draw"), a[None])}))["x"].values, nan=1.0))
        eb = float(np.nan_to_num(azcompat.ess(xr.Dataset({"x": (("chain", "draw"), b[None])}))["x"].values, nan=1.0))
        se = math.sqrt(va / max(ea, 1.0) + vb / max(eb, 1.0))
        zs.append(abs(d) / se if se > 0 else (0.0 if d == 0 else math.inf))
    return float(max(zs)) if zs else float("nan")


def _stats(ss: xr.Dataset | None, cfg: dict) -> dict:
    """Divergences, E-BFMI, tree-depth saturation and movement from the sample_stats group."""
    out = dict(divergences=0, divergence_rate=float("nan"), ebfmi_min=float("nan"), tree_saturation=float("nan"),
               movement_min=float("nan"))
    if ss is None:
        return out
    if "diverging" in ss:
        d = np.asarray(ss["diverging"].values, bool)
        out["divergences"] = int(d.sum())
        out["divergence_rate"] = float(d.mean()) if d.size else float("nan")
    if "energy" in ss and ss["energy"].shape[1] >= 3:
        e = np.asarray(ss["energy"].values, float)
        with np.errstate(invalid="ignore", divide="ignore"):
            bfmi = np.sum(np.diff(e, axis=1) ** 2, axis=1) / np.sum((e - e.mean(1, keepdims=True)) ** 2, axis=1)
        out["ebfmi_min"] = float(np.nanmin(bfmi)) if np.isfinite(bfmi).any() else float("nan")
        if "lp" in ss:
            lp = np.asarray(ss["lp"].values, float)
            kinetic = e + lp                          # energy = potential + kinetic, lp = −potential
            sd_k = kinetic.std(1)
            with np.errstate(invalid="ignore", divide="ignore"):
                mv = np.where(sd_k > 0, lp.std(1) / sd_k, np.nan)
            if np.isfinite(mv).any():
                out["movement_min"] = float(np.nanmin(mv))
    samp = cfg.get("sampler", {}) if isinstance(cfg.get("sampler"), dict) else {}
    if samp.get("sampler", "nuts") == "nuts" and "tree_depth" in ss:
        maxd = int(samp.get("max_tree_depth") or 10)
        td = np.asarray(ss["tree_depth"].values)
        # tree_depth is floor(log2(n_steps)) + 1; a saturated tree has 2**maxd − 1 steps, depth maxd
        out["tree_saturation"] = float(np.mean(td >= maxd)) if td.size else float("nan")
    return out


def _load(idata):
    """(posterior, sample_stats or None, y or None, config) of a run, a NetCDF path or a RunData (read through its
    attributes, so the sampler layer does not import the diagnostics)."""
    if isinstance(idata, (str, os.PathLike)):
        idata = azcompat.from_netcdf(idata)
    if all(hasattr(idata, k) for k in ("a", "f", "recorded_z", "Y", "config")):
        data = {"a": (("chain", "draw", "neuron", "class"), idata.a)}
        if idata.f is not None:
            data["f"] = (("chain", "draw", "point", "class"), idata.f)
        for l, z in idata.recorded_z.items():
            data[f"z{l}"] = (("chain", "draw", "neuron", "point"), z)
        return xr.Dataset(data), None, idata.Y, dict(idata.config)
    post = azcompat.get_group(idata, "posterior")
    names = azcompat.group_names(idata)
    ss = azcompat.get_group(idata, "sample_stats") if "sample_stats" in names else None
    y = np.asarray(azcompat.get_group(idata, "observed_data")["y"].values) if "observed_data" in names else None
    try:
        cfg = json.loads(azcompat.get_attrs(idata).get("bnnzoo_config", "{}"))
    except (TypeError, ValueError):
        cfg = {}
    return post, ss, y, cfg


def sampler_health(idata, *, observables: dict | None = None) -> SamplerHealth:
    """Judge whether a run can carry verdicts (module docstring: checks, thresholds, statuses).

    Parameters
    ----------
    idata : a run from :func:`bnnzoo.sample` (InferenceData / DataTree), the path to its NetCDF file, or a
        :class:`~bnnzoo.diagnostics._data.RunData` (no sampler statistics: only the observables are judged).
    observables : {name: (chain, draw) or (chain, draw, entry) array} to judge instead of
        :func:`invariant_observables` of the run (e.g. an entry's own order parameters).

    Returns
    -------
    SamplerHealth

    Raises
    ------
    ValueError : when the run has no posterior draws with (chain, draw) axes.
    """
    post, ss, y, cfg = _load(idata)
    if "chain" not in post.dims or "draw" not in post.dims:
        raise ValueError("idata: the posterior has no (chain, draw) dims; pass a run made by bnnzoo.sample")
    C, D = int(post.sizes["chain"]), int(post.sizes["draw"])
    obs = invariant_observables(post, y) if observables is None else {k: np.asarray(v, float)
                                                                       for k, v in observables.items()}
    pop_se = population_se(post) if observables is None else {}
    samp = cfg.get("sampler", {})
    sampler = str(samp.get("sampler", "")) if isinstance(samp, dict) else str(samp or "")
    st = _stats(ss, cfg)
    reasons: list[str] = []
    if C < MIN_CHAINS:
        reasons.append(f"{C} chain(s) (need ≥ {MIN_CHAINS})")
    if D < MIN_DRAWS:
        reasons.append(f"too few draws: {D} per chain (need ≥ {MIN_DRAWS})")
    if st["divergence_rate"] > MAX_DIVERGENCE_RATE:
        reasons.append(f"{st['divergences']} of {C * D} transitions diverged ({st['divergence_rate']:.1%} > "
                       f"{MAX_DIVERGENCE_RATE:.0%})")
    if st["ebfmi_min"] < MIN_EBFMI:
        reasons.append(f"E-BFMI {st['ebfmi_min']:.2f} < {MIN_EBFMI}")
    if st["tree_saturation"] > MAX_TREE_SATURATION:
        reasons.append(f"{st['tree_saturation']:.0%} of NUTS trees hit the maximum depth (> "
                       f"{MAX_TREE_SATURATION:.0%})")
    if st["movement_min"] < MIN_MOVEMENT:
        reasons.append(f"stuck sampler: sd(log density)/sd(kinetic energy) = {st['movement_min']:.2g} "
                       f"< {MIN_MOVEMENT} in a chain")
    rhat: dict[str, float] = {}
    ess: dict[str, float] = {}
    drift: dict[str, float] = {}
    relaxing: list[str] = []
    low_ess: list[str] = []
    exempt: list[str] = []
    mixed = True
    if D >= 4:
        for name, x in obs.items():
            x3 = x if x.ndim == 3 else x[..., None]
            if not np.isfinite(x3).all():
                reasons.append(f"non-finite values of {name}")
                continue
            if x3.std(axis=(0, 1)).max() == 0:
                if name == "n_outliers":           # a frozen outlier count is an equilibrium value, not a stuck chain
                    rhat[name], ess[name], drift[name] = 1.0, float(C * D), 0.0
                else:
                    reasons.append(f"{name} never changes (the chains did not move)")
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                e, r = _ess_rhat(x3)
                if x.ndim == 3:                   # many entries (f): the median is the observable's mixing number
                    rhat[name], ess[name] = float(np.nanmedian(r)), float(np.nanmedian(e))
                else:
                    rhat[name], ess[name] = float(r[0]), float(e[0])
                    drift[name] = _drift_z(x) if D >= 8 else float("nan")
            tol = pop_se.get(name)
            if tol is not None and _largest_change(x) <= POPULATION_SE_FACTOR * tol:
                exempt.append(name)
                continue                           # within the frozen population's own sampling error: not evidence
            unsettled = rhat[name] > MAX_RHAT or drift.get(name, 0.0) > MAX_DRIFT_Z
            if rhat[name] > MAX_RHAT:
                mixed = False
                relaxing.append(f"chains disagree on {name} (R̂ {rhat[name]:.2f} > {MAX_RHAT})" if C > 1 else
                                f"{name} differs between the halves of the chain (split R̂ {rhat[name]:.2f} > "
                                f"{MAX_RHAT})")
            if drift.get(name, 0.0) > MAX_DRIFT_Z:
                relaxing.append(f"{name} drifts across the run (|z| {drift[name]:.1f} > {MAX_DRIFT_Z:g})")
            if ess[name] < MIN_ESS and not unsettled:     # a drifting observable has a low ESS: relaxing
                low_ess.append(f"{name} {ess[name]:.0f}")
    if low_ess and not reasons:
        reasons.append(f"run too short: bulk ESS < {MIN_ESS:g} for " + ", ".join(low_ess))
    status = "failed" if reasons else ("relaxing" if relaxing else "equilibrated")
    used = ", ".join(k for k in rhat) or "none"
    note = (f"; {', '.join(exempt)}: chain means within {POPULATION_SE_FACTOR:g} population standard errors (what a "
            f"frozen population of units gives), not counted" if exempt else "")
    if status == "failed":
        evidence = "none: the sampler failed or the run is too short, so no verdict is drawn"
    elif C > 1:
        evidence = (f"between-chain R̂ ≤ {MAX_RHAT} and bulk ESS ≥ {MIN_ESS:g} of the invariant observables "
                    f"({used}), no drift (Geweke){note}" if status == "equilibrated" else
                    "invariant observables not yet at equilibrium: " + "; ".join(relaxing))
    else:
        evidence = (f"one chain: split R̂ ≤ {MAX_RHAT} between its halves and bulk ESS ≥ {MIN_ESS:g} of the "
                    f"invariant observables ({used}){note}; no between-chain check" if status == "equilibrated" else
                    "invariant observables not yet at equilibrium: " + "; ".join(relaxing))
    return SamplerHealth(status=status, reasons=tuple(reasons), relaxing=tuple(relaxing), evidence=evidence,
                         sampler=sampler, n_chains=C, n_draws=D, rhat=rhat, ess=ess, drift_z=drift, mixed=mixed,
                         **st)


def gate_verdicts(verdicts: dict, health: SamplerHealth) -> dict:
    """The verdicts a run with this ``health`` can carry.

    Parameters
    ----------
    verdicts : dict
        ``{verdict name: verdict}`` as :func:`bnnzoo.diagnose` builds them (keys such as ``"ergodicity[a]"``,
        ``"symmetry[z1]"``, ``"codes[z1]"``, ``"theory"``); left unchanged.
    health : SamplerHealth
        The run's health, from :func:`sampler_health`.

    Returns
    -------
    dict
        A new dict with the same keys.  Status ``"failed"``: every verdict becomes ``"inconclusive: <reasons>"``.
        Status ``"relaxing"``: ``"theory disagrees"`` becomes ``"relaxing: <evidence>"``, and ``"ergodicity
        broken"`` becomes ``"inconclusive: relaxing: <evidence>"`` when the invariant observables did not mix
        (``health.mixed`` false: broken ergodicity means units that keep their identity while the invariant
        observables mix); a drift alone (a transient from the start) leaves it.  Status ``"equilibrated"``:
        unchanged.
    """
    if health.status == "failed":
        return {k: f"inconclusive: {health.reason}" for k in verdicts}
    if health.status != "relaxing":
        return dict(verdicts)
    out = {}
    for k, v in verdicts.items():
        s = str(v)
        if k.startswith("theory") and s.startswith("disagrees"):
            out[k] = f"relaxing: {health.reason}"
        elif k.startswith("ergodicity") and s.startswith("broken") and not health.mixed:
            out[k] = f"inconclusive: relaxing: {health.reason}"
        else:
            out[k] = v
    return out


def warn_if_unhealthy(idata, stacklevel: int = 3) -> SamplerHealth | None:
    """Warn (RuntimeWarning) when the chains of a finished run did not mix, relax or move (status "relaxing", or
    "failed" for a stuck sampler, low E-BFMI, saturated trees or too few effective draws); divergences are left to
    the sampler's own warning, and a run shorter than ``MIN_DRAWS`` is not warned about (a deliberate short run).
    Returns the :class:`SamplerHealth`, or None when it could not be judged (a run without a posterior)."""
    try:
        h = sampler_health(idata)
    except (KeyError, ValueError):
        return None
    other = [r for r in h.reasons if "diverged" not in r and not r.startswith("too few draws")]
    if h.status == "relaxing" or other:
        what = "; ".join(other + list(h.relaxing))
        warnings.warn(f"the chains did not mix ({what}): verdicts drawn from this run are inconclusive; sample "
                      f"longer, with more warm-up, or check the sampler settings", RuntimeWarning,
                      stacklevel=stacklevel)
    return h
