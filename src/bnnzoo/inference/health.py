"""Sampler health before physics: can a run carry verdicts at all, and has it reached equilibrium?

Every per-unit verdict of bnnzoo (ergodicity, permutation symmetry, codes, readout branches, outliers) and every
theory comparison reads the draws as samples of the posterior.  A sampler that failed (diverged, got stuck, ran too
short) produces draws that look like broken ergodicity or frozen codes for reasons that have nothing to do with the
network.  :func:`sampler_health` judges that first, from the sampler's own statistics, from the permutation-invariant
observables of the run and from the run's certification of its populations (when :func:`bnnzoo.sample` was asked to
certify), and returns a :class:`SamplerHealth` record with one of four statuses; :func:`gate_verdicts` then says
which verdicts the run can carry:

* ``"failed"``: the run cannot carry verdicts (a sampler fault, too few draws or effective draws, an R̂ that could
  not be computed, e.g. one chain without a split R̂); every verdict becomes ``"inconclusive: <reasons>"``;
* ``"metastable"``: the run's start families disagree on a population observable (the certification); every verdict
  becomes ``"metastable: <disagreements>"``;
* ``"relaxing"``: the sampler works but the run has not reached equilibrium (an invariant observable drifts across the
  run, the chains disagree on one, or disagree within the population tolerance below with too few effective draws);
  every verdict becomes ``"relaxing: <evidence>"``.  No per-unit verdict is confident in a run that is not at
  equilibrium: frozen codes, broken symmetry and broken ergodicity are what a relaxing run shows whatever the
  equilibrium is;
* ``"equilibrated"``: verdicts stand.  "Ergodicity broken" then means what the theory means: the invariant
  observables mixed (across chains, or across the halves of a single chain) while the units kept their identity.
  :attr:`SamplerHealth.evidence` lists the checks that were actually run, and :attr:`SamplerHealth.populations` says
  whether the populations were certified; without a certification the population verdicts (``codes``, ``branches``,
  ``outliers``) carry the suffix ``" (populations not certified)"``.

Permutation-invariant observables (they do not change when the hidden units are relabelled, so every chain and every
part of a chain must agree on them at equilibrium, even when ergodicity of the single units is broken):
``mse`` (training error), ``q_a[c] = |a_c|²/N`` (readout norm per class), ``f`` (network outputs on the training
points, judged by its worst entries), ``q_z<l>`` = mean of (zˡ)² (trace of layer l's kernel over P, when the
preactivations were recorded) and ``n_outliers`` (readout outliers per draw, FCN readouts only).  Every one is
judged by every check below; none is ever skipped, whichever sampler made the run.  Only the sampler-statistic
checks a sampler has no statistics for are absent (the exact Gibbs sampler has no energies, so no E-BFMI and
movement; tree depth is NUTS's), and the evidence lists the ones that ran.  A run of a model of its own with none of
these sites (no ``mse``, ``a``, ``z<l>``, ``f``) is judged on every numeric variable of its posterior instead,
entry by entry (at most 1000 entries per variable, by the worst): such a model declares no permutation symmetry, so
its entries must mix across chains; a posterior with nothing to judge is "failed".

Rules:

* R̂ is the rank-normalised R̂ of ArviZ (Vehtari et al. 2021, through :mod:`bnnzoo.azcompat`): between chains when
  the run has two or more, else the split R̂ between the two halves of the single chain (ArviZ gives no R̂ for one
  chain, so the halves are passed as two chains).  An R̂ that is NaN (it cannot be computed) never passes: the run
  is "failed" (one chain: ``"one chain, no split R̂"``).  Chains that are each constant but differ from one another
  have zero within-chain variance and R̂ = +inf (:func:`bnnzoo.azcompat.rhat`, where ArviZ alone returns about 1e16
  or inf by chance of rounding): the chains disagree, named "constant and different" in the evidence.  This reaches
  ``n_outliers`` (a frozen count is an equilibrium value, not a stuck sampler) and single entries of ``f``; an
  observable constant within every chain otherwise fails as a sampler that did not move, and ``n_outliers`` at one
  count in every chain counts as mixed (R̂ 1).
* An observable with many entries (``f``) is judged by its worst entries: the largest R̂ and the smallest bulk ESS
  over entries, and the number of entries above the R̂ threshold (``"f: 9 of 60 outputs R̂ > 1.1"``); any entry
  above the threshold makes the run relaxing.  Entries constant over the whole run (e.g. an output pinned at 0) are
  left out and counted in the evidence.
* Population tolerance (unit averages ``q_a[c]``, ``q_z<l>`` only): the N units of a chain are one sample of the
  single-unit marginal; when ergodicity is broken (the physics being measured) that sample is frozen, so a unit
  average differs between chains, and can creep within one, by about its population standard error
  std_units / √N even at equilibrium.  The tolerance may therefore *widen* what counts as a disagreement, never
  remove a test: R̂, drift and ESS are always computed and reported, and the chains disagree on a unit average when
  its R̂ exceeds ``MAX_RHAT`` *and* its chain means (or the means of the two halves of one chain) differ by more than
  ``min(POPULATION_SE_FACTOR × population s.e., POPULATION_SD_CAP × within-chain sd)``, or when the R̂ of the chains
  with their mean offsets removed still exceeds ``MAX_RHAT`` (the tolerance excuses an offset between chain means,
  never a trend within a chain or chains of different spread); it drifts when Geweke's ``|z|`` exceeds ``MAX_DRIFT_Z``
  and the chain's mean moved by more than the same tolerance.  The cap keeps a frozen population's sampling error
  from hiding chains that sample visibly different states: at small N the population s.e. can be many within-chain
  sds.  A difference the tolerance excuses still leaves its R̂ in the record and is named in the evidence, and a
  tolerated difference with a bulk ESS below ``MIN_ESS`` makes the run relaxing (the chains differ and the run is too
  short to tell a frozen population from a relaxing one); with a handful of chains an R̂ above 1.1 brings the bulk
  ESS near the number of chains, so the tolerance changes the status only for runs with many chains.
* Bulk ESS is judged for every observable: below ``MIN_ESS`` the run is "failed" (run too short), or "relaxing" when
  the same observable also disagrees or drifts (a drifting observable has a low ESS).
* Certification (``bnnzoo.sample(..., certify=True)``): the run's attribute ``bnnzoo_certification`` (JSON with the
  start ``families``, whether they ``agree`` and the ``disagreements``) makes a run whose families disagree
  "metastable" (unless it failed; before "relaxing", whose evidence is kept in the record), and a run whose
  families agree and that passes every check above "equilibrated" with "populations certified by <families>".
* Criterion of a certified run (the certification's ``ensemble`` record, :func:`bnnzoo.workflows.certify.
  ensemble_criterion`): when the population observables mix within the chains the checks above apply as stated
  ("R̂: ..."); when they are frozen per chain, each chain's q_a and training error are set by its own population, so
  their R̂ stays above ``MAX_RHAT`` at equilibrium (docs/theory.md §10).  The **ensemble criterion** then judges a
  scalar invariant observable whose R̂ exceeds ``MAX_RHAT`` by the R̂ of its residual with each chain's population
  regressed out (leave one chain out), in place of the population tolerance: the chains disagree on it when that
  residual R̂ exceeds ``MAX_RHAT``, and its ESS is the residual's.  Drift within each chain is judged as above.
  A code fraction held by a handful of units over all chains (all of them in one chain would have probability ≥ 1 %
  were the chains to exchange them freely: 3 units or fewer with 8 chains) does not choose the criterion: its R̂,
  ~1e16 when one unit sits on the code in one chain and the others have none, reads that unit, not frozen
  populations; the criterion's reason names such fractions ("too few units to decide").
  :attr:`SamplerHealth.criterion` says which criterion was used, and why.

Thresholds (each with the reason for its value):

* ``MIN_DRAWS = 100`` kept draws per chain: below it the rank-normalised R̂ and ESS (Vehtari et al. 2021) are too noisy
  to tell a mixed chain from a stuck one, and a unit's time variance (ergodicity ratio) is dominated by its noise.
* ``MIN_CHAINS = 1``: one chain can carry verdicts, judged by split R̂ between its halves; with two or more chains
  the between-chain R̂ is used, the stronger check (the evidence says which was used).
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
* ``MIN_ESS = 20`` (bulk ESS, all chains together, of every invariant observable, the smallest over entries): fewer
  effective draws give Monte Carlo standard errors above ≈ 0.22 of a standard deviation, too coarse for the theory
  comparisons.
* ``MAX_RHAT = 1.1``: R̂ of an invariant observable above 1.1 means the chains (or halves) disagree on it (Gelman et
  al.'s classical threshold; the stricter 1.01 needs far longer runs than bnnzoo's CI sizes).
* ``POPULATION_SE_FACTOR = 3``: a unit average's chain means may differ by up to 3 population standard errors before
  the difference counts (a frozen sample of N units puts a chain's mean within 3 s.e. of the marginal's with
  ≈ 99.7 % probability), within the cap below.
* ``POPULATION_SD_CAP = 1``: the population tolerance never exceeds one within-chain standard deviation.  Chains
  whose means are one sd apart still overlap on most of their draws (two Gaussians one sd apart share 62 % of their
  mass; two such chains have R̂ ≈ 1.2), so the widening excuses at most a mild R̂ excess; a larger separation means
  the chains sample different states, which the certification, not the health gate, must resolve.
* ``MAX_DRIFT_Z = 4``: the mean of an invariant observable over the last half of a chain differs from its mean over
  the first tenth by more than 4 standard errors (Geweke's 1992 test and windows; the first tenth catches a
  transient from the starting point that a halves split averages away).  Both windows' standard errors come from
  the spectral density at zero of the last half (its variance times its draws per effective draw), and the
  difference is read with Student's t at the last half's ESS − 1 degrees of freedom and quoted as the normal z of
  the same tail probability: the first tenth of a slowly mixing observable is shorter than its autocorrelation, so
  its own variance is biased low and would raise false alarms.  4 keeps the false-alarm rate below ≈ 1e-4 per test,
  and a run makes a few dozen tests.
* ``MIN_STEP_MOVEMENT = 0.05``: a chain creeps when the median change of its log density from one kept draw to the
  next is below 0.05 of the sd of its kinetic energy ("failed": a step size far too small).  A transition that
  explores moves the log density by a sizeable fraction of one such sd (equipartition), while a tiny fixed step
  moves it by thousandths and makes a drift that would otherwise read as a run that needs to be longer.
* ``FROZEN_RELATIVE = 1e-6``: an observable whose sd within every chain is below 1e-6 of its largest magnitude did
  not move ("failed"): a few float32 ulps (1.2e-7 each) of jitter on a stuck chain would otherwise pass R̂ and ESS,
  which are rank-based and blind to scale.
* Identical chains: two or more chains whose judged values are equal draw for draw (the same seed and start) make
  the run "failed": their agreement proves nothing.

The tempered sampler is judged by its own diagnostics as well:

* Tempered SMC (``sampler="smc"``): a chain is an independent SMC run and its draws are particles, not a time
  series, so the checks that read the draws in order (Geweke drift, autocorrelation ESS, E-BFMI, movement, step
  movement) are not run; R̂ between the chains compares the independent runs.  In their place: a stage of a run
  whose effective sample size of the weights fell below ``MIN_SMC_STAGE_ESS`` = 0.05 of the particles (the weights
  collapsed onto a few particles) and a final population with fewer than ``MIN_DISTINCT_PARTICLES`` = 0.5 of its
  particles distinct (by their log density: the mutations did not separate the duplicates of resampling) make the
  run "failed".
* A stored run of parallel tempering (``sampler="pt"``, removed) is judged by the checks above alone; the evidence
  of an equilibrated one says that its round trips are no longer checked.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from dataclasses import dataclass, field

import numpy as np
import xarray as xr
from scipy import stats

from .. import azcompat
from .._log import user_stacklevel
from .._record import Record
from .smc import log_evidence_of as read_log_evidence

__all__ = ["SamplerHealth", "sampler_health", "gate_verdicts", "warn_if_unhealthy", "invariant_observables",
           "MIN_DRAWS", "MIN_CHAINS", "MAX_DIVERGENCE_RATE", "MIN_EBFMI", "MAX_TREE_SATURATION", "MIN_MOVEMENT",
           "MIN_ESS", "MAX_RHAT", "MAX_DRIFT_Z", "FROZEN_RELATIVE", "MIN_STEP_MOVEMENT", "POPULATION_SE_FACTOR",
           "POPULATION_SD_CAP", "MIN_SMC_STAGE_ESS", "MIN_DISTINCT_PARTICLES", "population_se", "POPULATION_VERDICTS",
           "NOT_CERTIFIED", "CERTIFICATION_ATTR", "judged_values", "values_checksum", "outlier_mask"]

HEALTH_GROUP = "diagnostics_health"
"""The group a run stores its :class:`SamplerHealth` in (:func:`bnnzoo.sample`, :func:`bnnzoo.diagnose`)."""

MIN_DRAWS = 100
MIN_CHAINS = 1
MAX_DIVERGENCE_RATE = 0.01
MIN_EBFMI = 0.3
MAX_TREE_SATURATION = 0.25
MIN_MOVEMENT = 0.1
MIN_ESS = 20.0
MAX_RHAT = 1.1
MAX_DRIFT_Z = 4.0
FROZEN_RELATIVE = 1e-6
MIN_STEP_MOVEMENT = 0.05
POPULATION_SE_FACTOR = 3.0
POPULATION_SD_CAP = 1.0
MIN_SMC_STAGE_ESS = 0.05
MIN_DISTINCT_PARTICLES = 0.5

#: verdict-name prefixes of the population verdicts (marked when the populations are not certified)
POPULATION_VERDICTS = ("codes", "branches", "outliers")
#: the suffix a population verdict of an uncertified run carries
NOT_CERTIFIED = " (populations not certified)"
#: the run attribute in which ``bnnzoo.sample(..., certify=True)`` stores its certification (JSON)
CERTIFICATION_ATTR = "bnnzoo_certification"

_THRESHOLDS = dict(min_draws=MIN_DRAWS, min_chains=MIN_CHAINS, max_divergence_rate=MAX_DIVERGENCE_RATE,
                   min_ebfmi=MIN_EBFMI, max_tree_saturation=MAX_TREE_SATURATION, min_movement=MIN_MOVEMENT,
                   min_ess=MIN_ESS, max_rhat=MAX_RHAT, max_drift_z=MAX_DRIFT_Z,
                   population_se_factor=POPULATION_SE_FACTOR, population_sd_cap=POPULATION_SD_CAP,
                   frozen_relative=FROZEN_RELATIVE, min_step_movement=MIN_STEP_MOVEMENT,
                   min_smc_stage_ess=MIN_SMC_STAGE_ESS,
                   min_distinct_particles=MIN_DISTINCT_PARTICLES)


@dataclass(frozen=True, repr=False)
class SamplerHealth(Record):
    """Whether a run can carry verdicts (see the module docstring for every check and threshold).

    Attributes
    ----------
    status : "equilibrated", "relaxing", "metastable" or "failed".
    reasons : why the run failed (empty unless status is "failed"), one short sentence each.
    relaxing : evidence that the run has not reached equilibrium (R̂, drift or ESS of an invariant observable; also
        recorded for a failed or metastable run, where it is not the cause of the status).
    evidence : the checks the verdicts rest on, only those that were run (between-chain or split R̂, the observables,
        the sampler statistics available, differences the population tolerance excused, the certification).
    sampler : the sampler's name from the run's provenance ("" when unknown).
    n_chains, n_draws : the run's size (kept draws per chain).
    divergences : divergent transitions (all chains); divergence_rate : their fraction of all transitions.
    ebfmi_min : smallest E-BFMI over chains (NaN without energies).
    tree_saturation : fraction of NUTS transitions at the maximum tree depth (NaN for other samplers).
    movement_min : smallest over chains of sd(log density) / sd(kinetic energy) (NaN without energies).
    step_movement_min : smallest over chains of the median absolute change of the log density per draw / sd(kinetic
        energy) (NaN without energies).
    rhat : {observable: R̂} (between-chain when n_chains ≥ 2, else split R̂ between the halves; the largest over
        entries for an observable with many entries; NaN when it could not be computed).
    ess : {observable: bulk ESS, all chains} (the smallest over entries).
    drift_z : {observable: largest absolute z over chains of Geweke's last-half minus first-tenth mean}.
    thresholds : the thresholds used.
    mixed : every invariant observable has a finite R̂ ≤ ``MAX_RHAT`` (the population tolerance aside).
    tolerance : {unit average: the population tolerance used for it, in the observable's units}.
    entries : {observable with many entries: {"n": entries judged, "rhat_above": entries with R̂ above
        ``MAX_RHAT`` or NaN, "ess_below": entries with bulk ESS below ``MIN_ESS``, "constant": entries left out}}.
    populations : "not certified", "certified by <families>" or "metastable" (the certification's verdict).
    certification : the run's certification record (JSON object of ``bnnzoo.sample(..., certify=True)``: families,
        agree, disagreements, observables, error_model, ensemble), or None when the run was not certified.
    criterion : by which law the invariant observables were judged, and why: "R̂: ..." (the ordinary gate) or
        "ensemble: ..." (populations frozen per chain, judged with each chain's population regressed out); ""
        for a run that was not certified (the ordinary gate).
    values_checksum : :func:`values_checksum` of the values judged ("" when ``observables`` were given): a
        stored health whose checksum no longer matches the run's values is stale and judged again.
    log_evidence : the log evidence of an SMC run as one line (``str`` of
        :func:`bnnzoo.inference.smc.log_evidence`: "log evidence not trustworthy: <reason> (...)" when its
        checks failed), "" for other samplers.
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
    step_movement_min: float = float("nan")
    rhat: dict = field(default_factory=dict)
    ess: dict = field(default_factory=dict)
    drift_z: dict = field(default_factory=dict)
    thresholds: dict = field(default_factory=lambda: dict(_THRESHOLDS))
    mixed: bool = True
    tolerance: dict = field(default_factory=dict)
    entries: dict = field(default_factory=dict)
    populations: str = "not certified"
    certification: dict | None = None
    criterion: str = ""
    values_checksum: str = ""
    log_evidence: str = ""

    @property
    def disagreements(self) -> tuple:
        """The certification's disagreements (one line each; empty when certified or not certified)."""
        c = self.certification or {}
        return tuple(str(d) for d in c.get("disagreements", ())) if c.get("agree") is False else ()

    @property
    def reason(self) -> str:
        """One line: the reasons for a failed run, the disagreements of the start families of a metastable one, the
        evidence of a relaxing one, "" otherwise."""
        if self.status == "failed":
            return "; ".join(self.reasons)
        if self.status == "metastable":
            return "; ".join(self.disagreements) or "the start families disagree"
        return "; ".join(self.relaxing)

    def summary(self) -> list[str]:
        def fmt(d):
            return ", ".join(f"{k} {v:.3g}" if isinstance(v, float) and math.isfinite(v) else f"{k} {v}"
                             for k, v in d.items())

        r = self.reason
        head = r if r.startswith(self.status + ":") else f"{self.status}" + (f": {r}" if r else "")
        lines = [head + f" [{self.sampler or 'sampler ?'}, {self.n_chains} chains × {self.n_draws} draws]",
                 f"divergences {self.divergences} ({self.divergence_rate:.2%}), E-BFMI min {self.ebfmi_min:.2f}, "
                 f"tree-depth saturation {self.tree_saturation:.2f}, movement min {self.movement_min:.2f}"]
        if self.rhat:
            lines.append(("R̂: " if self.n_chains > 1 else "split R̂: ") + fmt(self.rhat))
        if self.ess:
            lines.append("ESS: " + fmt(self.ess))
        if self.drift_z:
            lines.append("drift |z| (Geweke, last half vs first tenth): " + fmt(self.drift_z))
        if self.evidence:
            lines.append("evidence: " + self.evidence)
        pops = self.populations or "not certified"
        lines.append(f"populations {pops}" if pops != "metastable" else
                     "populations metastable: " + "; ".join(self.disagreements))
        if self.criterion:
            lines.append("criterion " + self.criterion)
        if self.log_evidence:
            lines.append(self.log_evidence)
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
            sq = av ** 2                                # one array of squares serves q_a and the outlier counts
            q = sq.reshape(C, D, -1, av.shape[-1]).mean(2)
            for c in range(q.shape[-1]):
                out[f"q_a[{c}]"] = q[..., c]
            if av.ndim == 4 and av.shape[2] >= 8:
                out["n_outliers"] = _outlier_counts(sq)
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


def judged_values(posterior: xr.Dataset, y: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """What :func:`sampler_health` judges in a run: its :func:`invariant_observables`, or, for a model of its own
    with none of the zoo's sites, every numeric variable of its posterior (module docstring)."""
    obs = invariant_observables(posterior, y)
    if obs:
        return obs
    return _own_model_observables(posterior, int(posterior.sizes["chain"]), int(posterior.sizes["draw"]))


def values_checksum(values: dict) -> str:
    """SHA-256 of the judged values ({name: array}: names, shapes and float64 bytes, in name order): stored with
    a run's health, so that a run whose draws changed after it was judged is judged again."""
    h = hashlib.sha256()
    for name in sorted(values):
        v = np.ascontiguousarray(np.asarray(values[name], np.float64))
        h.update(f"{name}:{v.shape}\n".encode())
        h.update(v)                                 # the array's bytes, read in place (no copy)
    return h.hexdigest()


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


def outlier_mask(norms) -> np.ndarray:
    """Which units are readout outliers: a norm above N^{1/4} times the median over the N units (the readout half of
    :func:`bnnzoo.diagnostics.branches.find_outliers`' criterion; N^{1/4} is the geometric midpoint between the bulk's
    O(1) and an outlier's O(√N) scale).  The one rule behind the ``n_outliers`` observable, the ``outliers``
    population observable, the codes figure and the outlier sizes of the reproduction runs.

    Parameters
    ----------
    norms : array (..., N)
        The length of every unit's readout vector, for the N units (leading axes: chain, draw, ...).

    Returns
    -------
    array (..., N) of bool.
    """
    r = np.asarray(norms, float)
    return r > r.shape[-1] ** 0.25 * np.maximum(np.median(r, axis=-1, keepdims=True), 1e-300)


def _outlier_counts(sq: np.ndarray) -> np.ndarray:
    """Readout outliers per draw (chain, draw) from the squared readouts ``sq`` (chain, draw, neuron, class)
    (:func:`outlier_mask`)."""
    return outlier_mask(np.sqrt(sq.sum(-1))).sum(-1).astype(float)


def _rhat_chains(x: np.ndarray) -> np.ndarray:
    """The chains R̂ compares, (chain, draw, ...): the run's chains, or the two halves of a single chain (the middle
    draw of an odd-length chain left out), since ArviZ gives no R̂ for one chain."""
    if x.shape[0] > 1:
        return x
    h = x.shape[1] // 2
    return np.concatenate([x[:, :h], x[:, x.shape[1] - h:]], axis=0)


def _ess_rhat(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bulk ESS (all chains) and rank-normalised R̂ (between chains, or split R̂ between the halves of one chain)
    of x (chain, draw, entry) per entry, from ArviZ through bnnzoo.azcompat."""
    dims = ("chain", "draw", "entry")
    e = np.asarray(azcompat.ess(xr.Dataset({"x": (dims, x)}), method="bulk")["x"].values, float)
    r = np.asarray(azcompat.rhat(xr.Dataset({"x": (dims, _rhat_chains(x))}))["x"].values, float)
    return e, r


def _drift(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Geweke's statistic per chain of x (chain, draw): (|z|, |mean(last half) − mean(first tenth)|).

    Both windows' standard errors come from one spectral density at frequency zero (variance × draws per effective
    draw), estimated on the last half (the longer window, and the one nearer equilibrium): a first tenth of a slowly
    mixing observable is shorter than its autocorrelation, so its own variance is biased low and would raise false
    alarms.  The difference over its standard error is read with Student's t at the last half's ESS − 1 degrees of
    freedom and returned as the normal quantile of the same tail probability."""
    C, D = x.shape
    h, t = D // 2, max(D // 10, 4)
    zs, ds = [], []
    for c in range(C):
        a, b = x[c, :t], x[c, D - h:]
        d = b.mean() - a.mean()
        ds.append(abs(d))
        ref = b if b.var() > 0 else a                  # a frozen last half: the first window's scale
        if ref.var() == 0:
            zs.append(0.0 if d == 0 else math.inf)
            continue
        e = float(np.nan_to_num(azcompat.ess(xr.Dataset({"x": (("chain", "draw"), ref[None])}))["x"].values,
                                nan=1.0))
        e = min(max(e, 2.0), float(len(ref)))          # ≥ 1 degree of freedom
        s0 = ref.var(ddof=1) * len(ref) / e            # variance × integrated autocorrelation time
        z = abs(d) / math.sqrt(s0 / len(a) + s0 / len(b))
        zs.append(float(stats.norm.isf(stats.t.sf(z, e - 1.0))))
    return np.asarray(zs, float), np.asarray(ds, float)


def _stats(ss: xr.Dataset | None, cfg: dict) -> dict:
    """Divergences, E-BFMI, tree-depth saturation and movement from the sample_stats group."""
    out = dict(divergences=0, divergence_rate=float("nan"), ebfmi_min=float("nan"), tree_saturation=float("nan"),
               movement_min=float("nan"), step_movement_min=float("nan"))
    if ss is None:
        return out
    if "diverging" in ss:
        d = np.asarray(ss["diverging"].values, bool)
        out["divergences"] = int(d.sum())
        out["divergence_rate"] = float(d.mean()) if d.size else float("nan")
    samp = cfg.get("sampler", {}) if isinstance(cfg.get("sampler"), dict) else {}
    if "energy" in ss and ss["energy"].shape[1] >= 3 and samp.get("sampler") != "smc":   # particles: no series
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
            if lp.shape[1] >= 3:
                with np.errstate(invalid="ignore", divide="ignore"):
                    step = np.where(sd_k > 0, np.median(np.abs(np.diff(lp, axis=1)), axis=1) / sd_k, np.nan)
                if np.isfinite(step).any():
                    out["step_movement_min"] = float(np.nanmin(step))
    if samp.get("sampler", "nuts") == "nuts" and "tree_depth" in ss:
        maxd = int(samp.get("max_tree_depth") or 10)
        td = np.asarray(ss["tree_depth"].values)
        # tree_depth is floor(log2(n_steps)) + 1; a saturated tree has 2**maxd − 1 steps, depth maxd
        out["tree_saturation"] = float(np.mean(td >= maxd)) if td.size else float("nan")
    return out


def _certification(attrs: dict) -> dict | None:
    """The run's certification (module docstring) from its attributes, or None when it was not certified.

    Raises ValueError when the attribute is there but is not a JSON object with a list ``families`` and a boolean
    ``agree``."""
    raw = attrs.get(CERTIFICATION_ATTR)
    if raw is None:
        return None
    try:
        cert = json.loads(raw) if isinstance(raw, (str, bytes)) else raw
    except (TypeError, ValueError):
        cert = None
    if not isinstance(cert, dict) or not isinstance(cert.get("families"), list) \
            or not isinstance(cert.get("agree"), bool):
        raise ValueError(f"run attribute {CERTIFICATION_ATTR}: expected a JSON object with a list 'families' and a "
                         f"boolean 'agree', got {str(raw)[:80]!r}")
    return cert


def _load(idata):
    """(posterior, sample_stats or None, y or None, config, certification or None) of a run or a NetCDF path."""
    if isinstance(idata, (str, os.PathLike)):
        idata = azcompat.read_run_file(idata, "idata")
    post = azcompat.get_group(idata, "posterior")
    names = azcompat.group_names(idata)
    ss = azcompat.get_group(idata, "sample_stats") if "sample_stats" in names else None
    y = np.asarray(azcompat.get_group(idata, "observed_data")["y"].values) if "observed_data" in names else None
    attrs = azcompat.get_attrs(idata)
    try:
        cfg = json.loads(attrs.get("bnnzoo_config", "{}"))
    except (TypeError, ValueError):
        cfg = {}
    return post, ss, y, cfg, _certification(attrs)


@dataclass
class _Judged:
    """What the observable checks of :func:`sampler_health` collect."""

    one_chain: bool
    series: bool = True                   # the draws are a time series (False: SMC particles)
    rhat: dict = field(default_factory=dict)
    ess: dict = field(default_factory=dict)
    drift: dict = field(default_factory=dict)
    tolerance: dict = field(default_factory=dict)
    entries: dict = field(default_factory=dict)
    reasons: list = field(default_factory=list)
    relaxing: list = field(default_factory=list)
    low_ess: list = field(default_factory=list)
    excused: list = field(default_factory=list)
    tested: list = field(default_factory=list)
    mixed: bool = True

    def no_rhat(self, what: str) -> None:
        self.mixed = False
        self.reasons.append(f"one chain, no split R̂ for {what}" if self.one_chain else
                            f"R̂ of {what} could not be computed")


def _judge_scalar(J: _Judged, name: str, x: np.ndarray, pop_se: float | None, ensemble: dict | None = None) -> None:
    """R̂, drift and ESS of one (chain, draw) observable, with the population tolerance for a unit average, or
    with the ensemble criterion's residual (``ensemble``: its record for this observable) when the run's
    populations are frozen per chain."""
    D = x.shape[1]
    e, r = _ess_rhat(x[..., None])
    rh, es = float(r[0]), float(e[0])
    J.rhat[name], J.ess[name] = rh, es
    zc, dc = _drift(x) if D >= 8 and J.series else (np.zeros(0), np.zeros(0))
    J.drift[name] = float(zc.max()) if zc.size else float("nan")
    parts = _rhat_chains(x)
    means = parts.mean(1)
    spread = float(means.max() - means.min())
    sd_within = math.sqrt(float(np.mean(parts.var(1, ddof=1))))
    tol, why = 0.0, ""
    if pop_se is not None:
        tol = min(POPULATION_SE_FACTOR * pop_se, POPULATION_SD_CAP * sd_within)
        J.tolerance[name] = tol
        why = (f"tolerance {tol / sd_within:.2g} within-chain sd" if sd_within > 0 else f"tolerance {tol:.3g}")
    J.tested.append(name)
    if math.isnan(rh):
        J.no_rhat(name)
        return
    in_sd = f"{spread / sd_within:.2g} within-chain sd apart" if sd_within > 0 else f"{spread:.3g} apart"
    what = "chain means" if not J.one_chain else "half means"
    disagree = rh > MAX_RHAT and spread > tol
    rest = ""
    rr = ensemble.get("residual_rhat", math.nan) if ensemble and rh > MAX_RHAT else None
    if rr is not None:                                     # the ensemble criterion: the residual must mix
        disagree = not rr <= MAX_RHAT
        ens_note = f"R̂ {rr:.2f} with each chain's population regressed out"
        if disagree:
            rest = f"; {ens_note}, above {MAX_RHAT}: the ensemble criterion fails"
        es = float(ensemble.get("residual_ess", es))
        J.ess[name] = es
    elif rh > MAX_RHAT and not disagree:
        # the tolerance excuses only an offset between chain means: R̂ of the chains with their offsets removed
        # (a trend within a chain, chains of different spread) still counts
        centred = parts - means[:, None] + means.mean()
        r_c = float(np.asarray(azcompat.rhat(xr.Dataset({"x": (("chain", "draw"), centred)}))["x"].values))
        if not r_c <= MAX_RHAT:
            disagree = True
            rest = f"; {r_c:.2f} with the {what}' offsets removed, which no population tolerance excuses"
    if rh > MAX_RHAT:
        J.mixed = False
    if disagree:
        stated = (f"{rh:.2f} > {MAX_RHAT}" if math.isfinite(rh) else
                  "inf: the " + ("chains" if not J.one_chain else "halves") + " are constant and different")
        J.relaxing.append((f"chains disagree on {name} (R̂ {stated}" if not J.one_chain else
                           f"{name} differs between the halves of the chain (split R̂ {stated}")
                          + (rest + ")" if rest else f"; {what} {in_sd}, {why})" if why else ")"))
    elif rr is not None:
        J.excused.append(f"{name} R̂ {rh:.2f} ({what} {in_sd}; {ens_note}: ensemble criterion)")
    elif rh > MAX_RHAT:
        J.excused.append(f"{name} R̂ {rh:.2f} ({what} {in_sd}, {why})")
    drifting = bool(np.any((zc > MAX_DRIFT_Z) & (dc > tol)))
    if drifting:
        J.relaxing.append(f"{name} drifts across the run (|z| {J.drift[name]:.1f} > {MAX_DRIFT_Z:g}"
                          + (f"; {why})" if why else ")"))
    elif zc.size and zc.max() > MAX_DRIFT_Z:
        moved = float(dc[zc > MAX_DRIFT_Z].max())
        J.excused.append(f"{name} drift |z| {zc.max():.1f} (moved " + (f"{moved / sd_within:.2g} within-chain sd"
                         if sd_within > 0 else f"{moved:.3g}") + f", {why})")
    if not es >= MIN_ESS and J.series:                     # NaN fails; SMC particles: the stage ESS instead
        if disagree or drifting:
            pass                                           # a drifting or disagreeing observable has a low ESS
        elif rh > MAX_RHAT or (zc.size and zc.max() > MAX_DRIFT_Z):
            J.relaxing.append(f"{name}: bulk ESS {es:.0f} < {MIN_ESS:g} with the chains apart within the population "
                              f"tolerance (R̂ {rh:.2f}): too short to tell a frozen population from a relaxing one")
        else:
            J.low_ess.append(f"{name} {es:.0f}")


def _judge_entries(J: _Judged, name: str, x: np.ndarray, noun: str) -> None:
    """R̂ and ESS of every entry of a (chain, draw, entry) observable, judged by its worst entries."""
    live = x.std(axis=(0, 1)) > 0
    n, n_const = int(live.sum()), int((~live).sum())
    e, r = _ess_rhat(x[..., live])
    bad_r = ~(r <= MAX_RHAT)                               # NaN counts as above
    bad_e = ~(e >= MIN_ESS)
    nan_r = int(np.isnan(r).sum())
    J.rhat[name] = float(np.nanmax(r)) if np.isfinite(r).any() else float("nan")
    J.ess[name] = float(np.nanmin(e)) if np.isfinite(e).any() else float("nan")
    J.entries[name] = {"n": n, "rhat_above": int(bad_r.sum()), "ess_below": int(bad_e.sum()), "constant": n_const}
    J.tested.append(f"{name} (worst of {n} {noun}" + (f"; {n_const} constant, not tested" if n_const else "") + ")")
    if nan_r:
        J.no_rhat(f"{nan_r} of {n} {noun} of {name}")
        return
    k = int(bad_r.sum())
    if k:
        J.mixed = False
        n_inf = int(np.isinf(r).sum())
        J.relaxing.append(("chains disagree on " if not J.one_chain else "halves of the chain disagree on ")
                          + f"{name}: {k} of {n} {noun} {'split ' if J.one_chain else ''}R̂ > {MAX_RHAT} "
                          + (f"(max {J.rhat[name]:.2f})" if not n_inf else
                             f"(max inf: {n_inf} constant within the {'chains' if not J.one_chain else 'halves'} "
                             f"and different between them)"))
    elif bad_e.any() and J.series:
        J.low_ess.append(f"{name} {J.ess[name]:.0f} ({int(bad_e.sum())} of {n} {noun})")


def sampler_health(idata, *, observables: dict | None = None) -> SamplerHealth:
    """Judge whether a run can carry verdicts (module docstring: checks, rules, thresholds, statuses).

    Parameters
    ----------
    idata : a run from :func:`bnnzoo.sample` (InferenceData / DataTree), or the path to its NetCDF file.
    observables : {name: (chain, draw) or (chain, draw, entry) array} to judge instead of
        :func:`invariant_observables` of the run (e.g. an entry's own order parameters; no population tolerance).

    Returns
    -------
    SamplerHealth

    Raises
    ------
    ValueError : when the run has no posterior draws with (chain, draw) axes, or its certification attribute is
        malformed.
    """
    post, ss, y, cfg, cert = _load(idata)
    if "chain" not in post.dims or "draw" not in post.dims:
        raise ValueError("idata: the posterior has no (chain, draw) dims; pass a run made by bnnzoo.sample")
    C, D = int(post.sizes["chain"]), int(post.sizes["draw"])
    if observables is None:
        obs = invariant_observables(post, y)
        own_model = not obs               # a model of its own (no zoo sites): every entry of every variable
        if own_model:
            obs = _own_model_observables(post, C, D)
    else:
        obs, own_model = {k: np.asarray(v, float) for k, v in observables.items()}, False
    pop_se = population_se(post) if observables is None else {}
    samp = cfg.get("sampler", {})
    sampler = str(samp.get("sampler", "")) if isinstance(samp, dict) else str(samp or "")
    st = _stats(ss, cfg)
    smc = sampler == "smc"
    J = _Judged(one_chain=C == 1, series=not smc)
    reasons = J.reasons
    ens = (cert or {}).get("ensemble") if observables is None else None
    ens = ens if isinstance(ens, dict) else {}
    ens_obs = ens.get("observables", {}) if ens.get("criterion") == "ensemble" else {}
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
    elif st["step_movement_min"] < MIN_STEP_MOVEMENT:
        reasons.append(f"the sampler creeps: the median change of the log density per draw is "
                       f"{st['step_movement_min']:.2g} sd of the kinetic energy (< {MIN_STEP_MOVEMENT:g}) in a chain: "
                       f"a step size far too small")
    if D < 4 and C == 1:
        reasons.append("one chain, no split R̂ (fewer than 4 draws)")
    engine = cfg.get("engine", {}) if isinstance(cfg.get("engine"), dict) else {}
    tempering = ""
    if sampler == "pt":                  # a stored run of the removed parallel tempering
        tempering = "parallel tempering's round trips not checked (sampler 'pt' removed)"
    elif smc:
        tempering = _smc_checks(engine, ss, J)
    if C >= 2 and obs:
        reasons += _identical_chains(obs, C)
    if D >= 4:
        for name, x in obs.items():
            x3 = x if x.ndim == 3 else x[..., None]
            if not np.isfinite(x3).all():
                reasons.append(f"non-finite values of {name}")
                continue
            scale = np.abs(x3).max(axis=(0, 1))
            if np.all(x3.std(axis=1) <= FROZEN_RELATIVE * scale) and name != "n_outliers" and scale.max() > 0:
                reasons.append(f"{name} changes by less than {FROZEN_RELATIVE:g} of its size within every chain "
                               f"(the chains did not move)")
                continue
            if x3.std(axis=(0, 1)).max() == 0:
                if name == "n_outliers":           # a frozen outlier count is an equilibrium value, not a stuck chain
                    J.rhat[name], J.ess[name], J.drift[name] = 1.0, float(C * D), 0.0
                    J.tested.append(f"{name} (constant)")
                else:
                    reasons.append(f"{name} never changes (the chains did not move)")
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if x.ndim == 3:
                    _judge_entries(J, name, x3, "outputs" if name == "f" else "entries")
                else:
                    _judge_scalar(J, name, x, pop_se.get(name), ens_obs.get(name))
    if not obs:
        reasons.append("no observable to judge: the posterior holds no numeric variable")
    if J.low_ess and not reasons:
        reasons.append(f"run too short: bulk ESS < {MIN_ESS:g} for " + ", ".join(J.low_ess))
    relaxing = J.relaxing
    certified = cert is not None and cert["agree"]
    if reasons:
        status = "failed"
    elif cert is not None and not cert["agree"]:
        status = "metastable"
    else:
        status = "relaxing" if relaxing else "equilibrated"
    families = ", ".join(str(f) for f in cert["families"]) if cert is not None else ""
    populations = ("not certified" if cert is None else f"certified by {families}" if certified else "metastable")
    criterion = "" if not ens else (("ensemble: " if ens_obs else "R̂: ") + str(ens.get("why", "")))
    evidence = _evidence(status, J, st, C, relaxing, populations, cert)
    if status == "equilibrated" and tempering:
        evidence += "; " + tempering
    if own_model:                         # no declared symmetry: what was judged are the posterior's variables
        evidence = evidence.replace("the invariant observables", "the posterior's variables")
    return SamplerHealth(status=status, reasons=tuple(reasons), relaxing=tuple(relaxing), evidence=evidence,
                         sampler=sampler, n_chains=C, n_draws=D, rhat=J.rhat, ess=J.ess, drift_z=J.drift,
                         mixed=J.mixed, tolerance=J.tolerance, entries=J.entries, populations=populations,
                         certification=cert, criterion=criterion,
                         values_checksum=values_checksum(obs) if observables is None else "",
                         log_evidence=str(read_log_evidence(engine)) if "log_evidence" in engine else "", **st)


OWN_MODEL_MAX_ENTRIES = 1000


def _smc_checks(engine: dict, ss: xr.Dataset | None, J: _Judged) -> str:
    """Tempered SMC's own diagnostics (module docstring): the stage ESS of every run and the distinct particles of
    the final populations; reasons in ``J`` when they fail, else the evidence note."""
    n = int(engine.get("num_particles", 0) or 0)
    ess = np.asarray(engine.get("ess_min", []), float)
    notes = []
    if n and ess.size:
        c = int(np.argmin(ess))
        if not ess[c] >= MIN_SMC_STAGE_ESS * n:
            J.reasons.append(f"SMC weights collapsed: a stage of run {c} kept an ESS of {ess[c]:.1f} of {n} particles "
                             f"(< {MIN_SMC_STAGE_ESS:g}); raise target_ess or the particles")
        notes.append(f"stage ESS ≥ {ess.min() / n:.2f} of the particles")
    if ss is not None and "lp" in ss:
        lp = np.asarray(ss["lp"].values, float)
        distinct = np.array([np.unique(row).size / row.size for row in lp.reshape(lp.shape[0], -1)])
        if not distinct.min() >= MIN_DISTINCT_PARTICLES:
            J.reasons.append(f"SMC mutations did not separate the resampled particles: {distinct.min():.0%} distinct "
                             f"in run {int(np.argmin(distinct))} (< {MIN_DISTINCT_PARTICLES:.0%}); raise "
                             f"num_mcmc_steps")
        notes.append(f"{distinct.min():.0%} or more of the particles distinct")
    return "SMC: " + ", ".join(notes) if notes else ""


def _identical_chains(obs: dict, C: int) -> list[str]:
    """One reason per group of chains whose judged values are equal draw for draw (chains started alike with the
    same seed: their agreement proves nothing)."""
    seen: dict[str, int] = {}
    groups: dict[int, list[int]] = {}
    for c in range(C):
        key = values_checksum({k: np.asarray(v)[c] for k, v in obs.items()})
        first = seen.setdefault(key, c)
        if first != c:
            groups.setdefault(first, [first]).append(c)
    return [f"chains {', '.join(map(str, g))} are identical draw for draw (the same seed and start?): their "
            f"agreement proves nothing" for g in groups.values()]


def _own_model_observables(post, C: int, D: int) -> dict:
    """The observables of a run of a model with none of the zoo's sites: every numeric variable of the posterior,
    scalars as (chain, draw), the rest as (chain, draw, entry) judged by their worst entries (at most the first
    ``OWN_MODEL_MAX_ENTRIES`` entries each).  Such a model declares no permutation symmetry, so its entries are
    expected to mix across chains."""
    out = {}
    for name in sorted(post.data_vars):
        v = np.asarray(post[name].values)
        if v.dtype.kind not in "fiu" or v.ndim < 2:
            continue
        v = _lead(v).reshape(C, D, -1)[..., :OWN_MODEL_MAX_ENTRIES].astype(float)
        if v.shape[2]:
            out[name] = v[..., 0] if v.shape[2] == 1 else v
    return out


def _evidence(status: str, J: _Judged, st: dict, C: int, relaxing: list, populations: str, cert) -> str:
    """The evidence line: the checks that were run, and nothing that was not."""
    if status == "failed":
        return "none: the sampler failed or the run is too short, so no verdict is drawn"
    if status == "metastable":
        return ("the start families disagree on population observables ("
                + "; ".join(str(d) for d in cert.get("disagreements", ())) + ")"
                + ("; invariant observables not yet at equilibrium: " + "; ".join(relaxing) if relaxing else ""))
    if status == "relaxing":
        return "invariant observables not yet at equilibrium: " + "; ".join(relaxing)
    stats = [k for k, v in (("divergences", st["divergence_rate"]), ("E-BFMI", st["ebfmi_min"]),
                            ("movement", st["movement_min"]), ("tree depth", st["tree_saturation"]))
             if math.isfinite(v)]
    used = ", ".join(J.tested) or "none"
    rh = (f"between-chain R̂ ≤ {MAX_RHAT}" if C > 1 else f"one chain: split R̂ ≤ {MAX_RHAT} between its halves")
    out = (f"{rh}, Geweke drift |z| ≤ {MAX_DRIFT_Z:g} and bulk ESS ≥ {MIN_ESS:g} for the invariant observables "
           f"({used})" if J.series else
           f"R̂ ≤ {MAX_RHAT} between the independent SMC runs for the invariant observables ({used})")
    if J.excused:
        out += (f"; except, within the population tolerance (min of {POPULATION_SE_FACTOR:g} population s.e. and "
                f"{POPULATION_SD_CAP:g} within-chain sd): " + "; ".join(J.excused))
    out += ("" if C > 1 else "; no between-chain check") + "; sampler statistics: " + (", ".join(stats) or "none")
    if populations.startswith("certified"):
        em = cert.get("error_model")
        out += f"; populations {populations}" + (f" (error model: {em})" if em else "")
        ens = cert.get("ensemble") if isinstance(cert.get("ensemble"), dict) else {}
        if ens:
            out += f"; judged by the {'ensemble criterion' if ens.get('criterion') == 'ensemble' else 'R̂ gate'}: " \
                   + str(ens.get("why", ""))
    else:
        out += "; populations not certified"
    return out


def _no_verdict(v) -> bool:
    """"n/a" and "not tested: ..." say that nothing was concluded: no gate applies to them."""
    return str(v) == "n/a" or str(v).startswith("not tested")


SEE_HEALTH = "see the sampler health"
"""What a gated verdict says after its status: the reason is in the health record, once."""


def gate_verdicts(verdicts: dict, health: SamplerHealth) -> dict:
    """The verdicts a run with this ``health`` can carry.

    Parameters
    ----------
    verdicts : dict
        ``{verdict name: verdict}`` as :func:`bnnzoo.diagnose` builds them (keys such as ``"ergodicity[a]"``,
        ``"symmetry[z1]"``, ``"codes[z1]"``, ``"branches"``, ``"outliers"``, ``"theory"``); left unchanged.
    health : SamplerHealth
        The run's health, from :func:`sampler_health`.

    Returns
    -------
    dict
        A new dict with the same keys.  Status ``"failed"``: every verdict becomes ``"inconclusive: see the sampler
        health"``; status ``"metastable"`` or ``"relaxing"``: ``"<status>: see the sampler health"`` (a run away
        from equilibrium carries no per-unit or theory verdict; the reason is stated once, in the health record's
        own summary, not once per verdict; ``"n/a"`` and ``"not tested: ..."``, no verdict, stay).  Status ``"equilibrated"``: unchanged, except that without a certification the
        population verdicts (names starting with one of ``POPULATION_VERDICTS``) get the suffix
        ``" (populations not certified)"`` (a suffix, so that prefix comparisons keep working).
    """
    if health.status == "failed":
        return {k: f"inconclusive: {SEE_HEALTH}" for k in verdicts}
    if health.status in ("relaxing", "metastable"):
        text = f"{health.status}: {SEE_HEALTH}"
        return {k: v if _no_verdict(v) else text for k, v in verdicts.items()}
    if (health.populations or "not certified") != "not certified":
        return dict(verdicts)
    return {k: f"{v}{NOT_CERTIFIED}" if k.startswith(POPULATION_VERDICTS) and not _no_verdict(v)
            and not str(v).endswith(NOT_CERTIFIED) else v for k, v in verdicts.items()}


def warn_if_unhealthy(idata, stacklevel: int | None = None, store: bool = False) -> SamplerHealth | None:
    """Warn (RuntimeWarning) when the chains of a finished run did not mix, relax or move (status "relaxing" or
    "metastable", or "failed" for a stuck sampler, low E-BFMI, saturated trees, too few effective draws or a missing
    R̂); divergences are left to the sampler's own warning, and a run shorter than ``MIN_DRAWS`` is not warned about
    (a deliberate short run).  With ``store`` the health is also stored in the run (group ``HEALTH_GROUP``), where
    :func:`bnnzoo.diagnose` reads it instead of judging again.  Returns the :class:`SamplerHealth`, or None when it
    could not be judged (a run without a posterior, or with a malformed certification).  The warning points at
    ``stacklevel`` (default: the first frame outside bnnzoo, the user's call)."""
    try:
        h = sampler_health(idata)
    except (KeyError, ValueError):
        return None
    if store:
        azcompat.set_groups(idata, {HEALTH_GROUP: h.to_dataset()})
    if h.n_draws < MIN_DRAWS:                # a deliberate short run: judged and stored, not warned about
        return h
    other = [r for r in h.reasons if "diverged" not in r]
    if h.status in ("relaxing", "metastable") or other:
        what = "; ".join(other + list(h.relaxing) + list(h.disagreements))
        warnings.warn(f"the chains did not mix ({what}): verdicts drawn from this run are inconclusive; sample "
                      f"longer, with more warm-up, or check the sampler settings", RuntimeWarning,
                      stacklevel=user_stacklevel() if stacklevel is None else stacklevel)
    return h
