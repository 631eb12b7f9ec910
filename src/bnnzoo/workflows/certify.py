"""Certified runs: the same model from several start families, compared on its population observables.

Chains started alike and run alike can lock into the same wrong populations of units (codes, readout branches,
outliers), where a between-chain R̂ cannot see it.  ``bnnzoo.sample(..., certify=True)`` (:func:`sample`) therefore runs the model
from two or more **start families**, each with ``num_chains`` chains and the same sampler settings, and compares
the entry's population observables (:mod:`bnnzoo.diagnostics.populations`) across the families.  A run is
certified when every family agrees on every observable within its finite-N error.

Start families
--------------
* ``"prior"``: every chain starts from a prior draw (the default start of :func:`bnnzoo.sample`; with the same seed
  these are the chains of the uncertified run).
* ``"annealed"``: a short geometric schedule in the entry's likelihood temperature (its ``temperature`` keyword,
  ``ZooEntry.populations.temperature``): stages at ``ANNEAL_FACTOR`` = 100 T and 10 T (``ANNEAL_STAGES`` = 2 hot
  stages, a factor 10 apart), each a run of max(num_warmup // 2, ``MIN_STAGE_WARMUP``) warm-up steps and one draw,
  the first started from prior draws, each later one from the previous stage's final positions; the run at T then
  starts from the last hot stage's positions.  At 100 T the likelihood is a hundredth as sharp, so the populations
  form where barriers are low and are then cooled, as in simulated annealing.
* ``"meanfield"`` (the one-hidden-layer net with the non-lazy readout, a linear or sigmoidal φ, on a task with
  orthogonal inputs of equal norm and class-symmetric targets): every hidden unit is drawn from the single-neuron
  mean field (:func:`bnnzoo.theory.single_neuron_meanfield`, docs/theory.md §5).  Its readout vector a_i is drawn
  from the mean-field density p(a) (a grid cell drawn with its mass, then a uniform point in the cell), so the
  units fall on the branches with the mean field's masses P_γ; its preactivation on every training point μ of class
  c is drawn from the tilted law ∝ N(h | 0, σ_w² κ) exp(λ_cᵀ a_i φ(h)) given that readout (exact for linear φ, on a
  grid otherwise), so its class means and code are those of its branch; its first-layer weights are the ones that
  give these preactivations, W1_i = h_i X/(√N0 κ), plus a prior draw in the directions orthogonal to the inputs.
  Entries or settings without this mean field do not offer the family (``ZooEntry.populations.note`` says why).
* ``"planted"`` (a planted task, :func:`bnnzoo.tasks.planted_task`, any entry): every chain starts at the teacher,
  an exact posterior draw, so this family starts at equilibrium (docs/theory.md §10); ``certify=True`` adds it on a
  planted task, and the families' agreement then includes reaching the teacher's populations (judged by the
  planted check's error model, "Error model" below: a frozen planted population is one draw of the law).

The returned run holds all families' chains concatenated along ``chain`` in family order, with a ``family``
coordinate on ``chain`` in every group that has chains, the comparison in the attribute ``bnnzoo_certification``
(JSON) and in ``run_config(idata)["certification"]`` (:func:`certify_run` computes it for any such run).

Store
-----
With ``store=DIR`` (and ``chunk_size``) every family runs into a store of its own, ``DIR/family_<name>``
(:mod:`bnnzoo.inference.store`: chunks, checkpoints, a lock), and ``DIR`` is a store whose ``run.json`` holds the
certification's identity (families, chains per family, seeds, model and sizes, with a fingerprint of those and the
data) and whose lock is held while the certification runs; the annealed family's starting values are kept in
``DIR/annealed_start.npz`` (a checkpoint file).  ``resume=True`` refuses a ``DIR`` of another certification (naming
what differs), reads every finished family back without running a block, takes the annealed start from its file,
and continues the family in flight from its last checkpoint, so a kill or a failed family costs only the family in
flight, and the draws are those of the uninterrupted run.  A family that fails after others finished raises its own
error with a message naming them (and, without a store, saying that ``store=`` keeps them).

Error model
-----------
Each chain is one independent sample of the population: its N units are frozen into one draw of the population law
when ergodicity is broken, so chains differ by their population even at equilibrium.  For an observable x (chain,
draw), a family f with n_f chains has the mean m_f of its chain means μ_c and the standard error

    se_f = sqrt( max(s_f², mc_f) / n_f ),

where s_f² is the **measured** variance of its chain means and mc_f the mean over its chains of var_c / ESS_c (the
within-chain Monte-Carlo variance of a chain mean, ESS_c ArviZ's bulk ESS of the chain alone: a chain mean scatters
at least by that).  There is no binomial floor: units coupled through the readout scatter less than independent
ones (measured in certified runs, docs/theory.md §10), so a floor p(1 − p)/N would cost power.  Three tests per
observable, at a family-wise false-alarm rate ``ALPHA`` = 1 % over all M tests (Bonferroni):

* mean: families i and j agree when Welch's ``|t| = |m_i − m_j| / sqrt(se_i² + se_j²)`` is at most the Student-t
  quantile at 1 − α/(2M) with Satterthwaite's degrees of freedom (n_f − 1 per family); the record states the
  smallest difference each comparison detects with probability ``POWER`` = 0.8 (:data:`bnnzoo.diagnostics.planted.POWER`);
* scatter: the families' chain means scatter alike (Brown–Forsythe test, p ≥ α/M; families of three or more
  chains): the population law is a mean and a scatter;
* over-dispersion (fractions of N units): a family's chain means scatter no more than N independent units would
  (χ² of s_f² against p̄(1 − p̄)/N + mc_f, p ≥ α/M): chains of one family that sit in different collective states.

A family started at the teacher (``"planted"``) is compared with each other family by
:func:`bnnzoo.diagnostics.planted.compare_planted`, the planted check's own choice of error model per observable:
Welch on the chain means as above while the planted chains move through the law; when the planted population is
frozen (every planted chain keeps the teacher's population, so their chain means scatter as one draw, not as the
law), the teacher's value is one draw of the other family's law, and the families agree when the planted mean lies
within m_o ± t·√(s_o² + se_p² + se_o²) of the other family's mean, s_o its per-draw sd (the same Student-t quantile,
Satterthwaite's degrees of freedom); the scatter test is then not run (the planted chains' scatter is not a sample
of the law's), and a code fraction's units count the teacher's population once.  Each test's record names its
model ("model").  Chain means of a frozen planted family compared by Welch would call a typical teacher
"disagreeing" far more often than α; as one draw, only a difference of several per-draw sds is detected: one draw of
a law says no more (false alarms and detection rates: ``benchmarks/results/family_power.md``).

Units too few to compare: a code fraction (kind "fraction", N units per chain) carried by U units in the two
families' chains together (U = N Σ_c μ_c over their chains, or the same count of units off the code when that is
smaller) is a count, and a count of a few units says nothing about a scatter or a mean: were the families to share
the law, each unit would fall in family f with probability n_f / (n_i + n_j), so all U units fall in one family with
probability Σ_f (n_f / (n_i + n_j))^U (2^(1−U) for equal families), the smallest p-value any split of them can have.
When that is at least α/M neither the mean nor the scatter test is run on the pair (no split of U units could be
significant, and the tests on chain means would read the count's resolution 1/N as a difference: chain means 0, 0,
1/N, 1/N against 0, 0, 0, 0 give Brown–Forsythe p 0, since the deviations from each family's median are equal
within each family, and 1/N in every chain against 0 gives Welch's ``|t|`` infinite); the record lists the pair under
"not_compared", "too few units to compare mean or scatter".  With two families of equal size and M ≈ 10–100 this leaves
out U ≤ 10–14 units; a code on 10 % of 60 units in every chain of one of two 4-chain families (about 24 units) is
compared.

The over-dispersion test has the same kind of limit.  Its null law is N independent units per chain; given the U
units on a code (or off it) in a family's n chains, they are then spread over the chains as a multinomial with equal
shares, and the most extreme spread, all of them in one chain, has probability n·n^(−U) = n^(1−U): the smallest
p-value any spread of U units can have.  The χ² approximation does not see that: 4 units of 60 in one chain of 8
give χ² = 56 on 7 degrees of freedom (p ~ 1e-9) where no spread of 4 units can reach p below 8^(−3) ≈ 0.002.  The
test is run only when n^(1−U) < α/M, i.e. U > 1 + ln(M/α)/ln n; otherwise the record lists the family under
"not_compared", "too few units to show over-dispersion" (unless it has no unit on the code, or none off it).  With
8 chains per family and M ≈ 8–100 this leaves out U ≤ 4–5 units.  Its power at 8 chains is that of χ² on 7 degrees
of freedom (the measured rates at 3 and 3.5 binomial sds: ``benchmarks/results/family_power.md``).

With 4 chains per family the mean threshold sits near 9 standard errors; ``certify`` therefore runs ``CERTIFY_CHAINS``
= 8 chains per family unless ``num_chains`` is given (about 5; at M = 72 tests, see ``CERTIFY_CHAINS``).  No exact
count test is added for 4-chain families: units are coupled within a chain, so a test on units pooled per family
(Fisher's) is not valid, and the valid one, a permutation over chains, cannot go below 2/C(8, 4) = 1/35 with 4 + 4
chains, above α/M for any M (both tests' power on a code at 10 % vs 0 % of 60 units:
``benchmarks/results/family_power.md``).  Fractions that are 0 or 1 in every chain of every family have zero error and
agree.

Criterion
---------
:func:`ensemble_criterion` says by which law the health gate (:mod:`bnnzoo.inference.health`) judges the run's
invariant observables: the ordinary R̂ when the population observables mix within the chains (a sampler that moves
populations), else the ensemble criterion: each chain stationary on its own, and q_a, the training error and the
other invariant observables compared across chains after regressing out each chain's population.  A code fraction
held by too few units to show freezing does not decide: one unit sitting on a rare code in one chain for the whole
run gives the fraction a huge R̂ (no variance within the other chains; ``tests/workflows/test_ensemble.py``) whether
or not the populations move.
Its U units (counted as above, over all C chains) would all fall in one chain with probability C^(1−U) were the
chains to exchange them freely; when that is at least ``ALPHA`` (U ≤ 3 with 8 chains) the fraction is left out of
the choice, and the criterion's reason names it ("too few units to decide").
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import time
from pathlib import Path
from typing import Sequence

import jax
import numpy as np
import xarray as xr

from scipy import stats

from .. import azcompat
from ..diagnostics._data import np_activation
from ..diagnostics.planted import FROZEN, WELCH, chain_mean_stats, compare_planted, welch
from ..diagnostics.populations import population_observables
from ..inference import sampling
from ..inference.convert import jsonable, sealed, versions
from ..inference.health import HEALTH_GROUP, MAX_RHAT, _ess_rhat, invariant_observables, warn_if_unhealthy
from ..inference.plan import default_num_chains, make_spec, resolve_kwargs
from ..inference.store import RunStore, check_store, fingerprint, read_checkpoint, save_state
from ..models.fcn import fcn
from ..models.zoo import START_FAMILIES
from ..tasks.planted import planted_init
from ..theory.meanfield import single_neuron_meanfield

__all__ = ["sample", "certified_sample", "certify_run", "combine_families", "concat_families", "compare_families",
           "COMPUTED_RECORD", "SAME_CONFIG",
           "ensemble_criterion", "annealed_start", "meanfield_start", "check_certify", "FamilyUnavailable", "ALPHA",
           "ANNEAL_FACTOR", "ANNEAL_STAGES", "MIN_STAGE_WARMUP", "ERROR_MODEL", "START_FAMILIES", "CERTIFY_CHAINS"]

_logger = logging.getLogger(__name__)

ALPHA = 0.01
"""Family-wise false-alarm rate of a certification (all observables and family pairs together, Bonferroni)."""
ANNEAL_FACTOR = 100.0
"""The hottest annealing stage runs at this multiple of the run's temperature."""
ANNEAL_STAGES = 2
"""Hot stages of the annealed start, geometric from ANNEAL_FACTOR·T down (100 T, 10 T), before the run at T."""
MIN_STAGE_WARMUP = 10
"""Fewest warm-up steps of one hot stage (a stage runs max(num_warmup // 2, this))."""
ERROR_MODEL = (
    "chains as independent population samples, error from the measured scatter of the chain means: se = "
    "sqrt(max(var of chain means, within-chain MC variance var/ESS)/n_chains), no binomial floor; families agree "
    "on the mean when Welch's |t| <= the Student-t quantile (Satterthwaite dof) at 1 - alpha/(2 M), on the scatter "
    "when Brown-Forsythe p >= alpha/M, and a family's fractions are not over-dispersed against N independent units "
    "(chi2 p >= alpha/M); alpha = 0.01 over the M tests (Bonferroni); a fraction carried by so few units in a "
    "pair's chains that all of them in one family would have p >= alpha/M is not compared on mean or scatter, "
    "nor a family's fraction for over-dispersion when all its units in one chain would have p >= alpha/M; a "
    "family started at the teacher is compared by diagnostics.planted.compare_planted: Welch while its chains "
    "move, else (planted population frozen) a prediction interval, its mean as one draw of the other family's law, "
    "without the scatter test")



CERTIFY_CHAINS = 8
"""Chains per start family when ``certify`` is asked for without ``num_chains``.  Two families comparing 20
observables of which 16 are fractions (for example a fully-connected net on 3 classes: 8 code fractions, 8 branch
masses, 3 outlier counts and the training error) make M = 2·20 + 16·2 = 72 tests; Welch's threshold, the Student-t
quantile at 1 − α/(2M) with α = 1 % and Satterthwaite's 2(n − 1) degrees of freedom (n chains per family, equal
scatter; fewer degrees of freedom and a higher threshold when one family scatters more), is then 5.2 standard errors
with 8 chains and 8.6 with 4.  Three families (M = 168): 5.7 and 10.0."""


def sample(model, task, *, certify: bool | Sequence[str] = False, **kwargs):
    """Sample the posterior of ``model`` on ``task`` (:func:`bnnzoo.inference.sample`, every argument of which this
    takes), optionally certified across start families.

    Parameters
    ----------
    model, task, **kwargs
        As :func:`bnnzoo.inference.sample` (sampler settings and model keywords).
    certify : bool or sequence of str
        True: run the model from every start family the entry offers (``ZooEntry.populations.families``:
        "prior", "annealed", "meanfield"; "planted" on a planted task), each with ``num_chains`` chains
        (``CERTIFY_CHAINS`` = 8 when not given) and the same settings, and compare their population observables
        (this module's docstring states the error model and the criterion); a sequence names the families (two or
        more).  The run then holds all families' chains along ``chain`` (a ``family`` coordinate names each chain's
        family) and the comparison in the attribute ``bnnzoo_certification`` and in
        ``run_config(idata)["certification"]``.  Needs a zoo entry, two or more chains per family,
        ``init="prior"``, no ``reparam`` or sampler "gibbs" / "smc".  With ``store``, each family
        runs into its own store and ``resume=True`` runs only what is left (module docstring, "Store").  False
        (default): one run of :func:`bnnzoo.inference.sample`.

    Returns
    -------
    InferenceData (ArviZ 0.x) or DataTree (ArviZ 1.x)
        As :func:`bnnzoo.inference.sample`; with ``certify``, every family's chains.  Either way the sampler health
        is judged on the whole run and stored in it, with a RuntimeWarning when the chains did not mix
        (:func:`bnnzoo.inference.health.warn_if_unhealthy`; the start families are judged together, not one by one).

    Raises
    ------
    ValueError
        On any bad argument, before anything compiles.
    """
    if certify is False:                     # one run, its health judged: a warning when the chains did not mix
        idata = sampling.sample(model, task, **kwargs)
        warn_if_unhealthy(idata, store=True)
        return idata
    bound = _INFERENCE_SIGNATURE.bind(model, task, **kwargs)
    bound.apply_defaults()
    call = dict(bound.arguments)
    model_kwargs = call.pop("model_kwargs", {})
    if call["num_chains"] is None:          # every chain is one population sample: power needs 8 per family
        call["num_chains"] = max(default_num_chains()[0], CERTIFY_CHAINS)
    spec = make_spec(model, task, model_kwargs=model_kwargs, certify=True,
                     **{k: v for k, v in call.items() if k not in ("model", "task")})
    if spec.sampler.name != call["sampler"]:  # "auto" resolved once, for every family alike
        _logger.info("certify: sampler='auto' runs %r for every start family", spec.sampler.name)
    return certified_sample(spec.entry, task, certify, dict(call, sampler=spec.sampler.name), model_kwargs)


_INFERENCE_SIGNATURE = inspect.signature(sampling.sample)
_params = list(_INFERENCE_SIGNATURE.parameters.values())
sample.__signature__ = _INFERENCE_SIGNATURE.replace(parameters=_params[:-1] + [
    inspect.Parameter("certify", inspect.Parameter.KEYWORD_ONLY, default=False)] + _params[-1:])
del _params


class FamilyUnavailable(ValueError):
    """A start family cannot be built for this entry and these settings (the message says why)."""


# --------------------------------------------------------------------------------------------------- validation
def check_certify(certify, entry, call: dict) -> tuple[str, ...]:
    """The start families ``certify`` asks for, checked with the run's arguments before anything compiles.

    Parameters
    ----------
    certify : True or a sequence of family names (``START_FAMILIES``).
    entry : the zoo entry (None for a plain NumPyro model: refused).
    call : the arguments of :func:`bnnzoo.sample` (``num_chains``, ``sampler``, ``init``, ...).

    Returns
    -------
    tuple of str : the families, in the entry's order.

    Raises
    ------
    ValueError
        a bad ``certify``, an entry without population observables, a family the entry does not offer, fewer than
        two chains per family, or an option certification cannot take (reparam, a given ``init``,
        sampler="gibbs" or "smc", which cannot start from given values).
    """
    if entry is None or getattr(entry, "populations", None) is None:
        name = getattr(entry, "name", "a plain NumPyro model")
        raise ValueError(f"certify needs a zoo entry that declares population observables (ZooEntry.populations); "
                         f"{name!r} declares none")
    spec = entry.populations
    task = call.get("task")
    offered = tuple(spec.families) + (("planted",) if getattr(task, "teacher", None) is not None else ())
    if certify is True:
        families = offered
    elif isinstance(certify, (list, tuple)) and all(isinstance(f, str) for f in certify):
        families = tuple(certify)
        bad = [f for f in families if f not in START_FAMILIES]
        if bad or len(set(families)) != len(families) or len(families) < 2:
            raise ValueError(f"certify must name two or more distinct start families among {START_FAMILIES}, got "
                             f"{list(certify)}")
        if "planted" in families and "planted" not in offered:
            raise ValueError("certify: the 'planted' family starts at the teacher of a planted task; this task has "
                             "none (make one with bnnzoo.tasks.planted_task)")
        missing = [f for f in families if f not in offered]
        if missing:
            raise ValueError(f"certify: zoo entry {entry.name!r} offers the start families {list(offered)}, "
                             f"not {missing} ({spec.note})")
        families = tuple(f for f in offered if f in families)
    else:
        raise ValueError(f"certify must be True, False or a list of two or more start families among "
                         f"{START_FAMILIES}, got {certify!r}")
    n = call.get("num_chains")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 2:
        raise ValueError(f"certify counts every chain as one population sample: num_chains must be >= 2 per start "
                         f"family (4 or more advised), got {n!r}")
    reparam, init = call.get("reparam"), call.get("init", "prior")
    given = [name for name, set_ in (
        ("reparam", reparam is not None and (isinstance(reparam, str) or len(reparam) > 0)),
        ("init", not (isinstance(init, str) and init == "prior")),
        ("sampler='gibbs'", call.get("sampler") == "gibbs"),
        ("sampler='smc'", call.get("sampler") == "smc")) if set_]
    if given:
        raise ValueError(f"certify starts every family's chains itself: drop {given}")
    return families


# --------------------------------------------------------------------------------------------------- the families
def _resolved(entry, task, model_kwargs: dict) -> dict:

    return resolve_kwargs(entry.name, entry.model, entry, task, dict(model_kwargs), ())


def _temperature(entry, kw: dict) -> float:
    key = entry.populations.temperature
    T = kw.get(key)
    if isinstance(T, bool) or not isinstance(T, (int, float, np.number)) or not (math.isfinite(T) and T > 0):
        raise ValueError(f"certify: the annealed start raises the model keyword {key!r}, which must be a number > 0; "
                         f"got {T!r}")
    return float(T)


def _final_positions(idata, sites: Sequence[str]) -> dict:
    post = azcompat.get_group(idata, "posterior")
    missing = [s for s in sites if s not in post]
    if missing:
        raise ValueError(f"certify: the stage run did not record the latent sites {missing}")
    return {s: np.asarray(post[s].values[:, -1]) for s in sites}


def annealed_start(entry, task, base: dict, model_kwargs: dict, seed: int) -> tuple[dict, dict]:
    """Starting values of the annealed family: the chains' final positions after the hot stages.

    Parameters
    ----------
    entry : the zoo entry (its ``populations.temperature`` names the temperature keyword).
    task : the task.
    base : keyword arguments of :func:`bnnzoo.sample` shared by every family (sizes, sampler settings).
    model_kwargs : the model keywords of the run (the temperature T among them or in the entry's defaults).
    seed : the first stage's seed; stage j runs with ``seed + j``.

    Returns
    -------
    (dict, dict) : {latent site: array (chain, ...)} to start the run at T from, and the schedule
    {"temperatures": [...], "stage_warmup": n, "seeds": [...]} for the record.
    """

    kw = _resolved(entry, task, model_kwargs)
    key, T = entry.populations.temperature, _temperature(entry, kw)
    temps = [T * ANNEAL_FACTOR ** ((ANNEAL_STAGES - j) / ANNEAL_STAGES) for j in range(ANNEAL_STAGES)]
    n_warm = max(int(base["num_warmup"]) // 2, MIN_STAGE_WARMUP)
    sites = list(sampling.trace_latent_sites(entry.model, task.X, task.Y, kw))
    stage = dict(base, num_warmup=n_warm, num_samples=1, thinning=1, record=(), log_likelihood=False,
                 posterior_predictive=False, prior_predictive=False, chunk_size=None, exclude=(),
                 site_thinning=None)
    init, seeds = "prior", []
    for j, Tj in enumerate(temps):
        _logger.info("certify: annealed start, stage %d/%d at %s = %.3g", j + 1, len(temps), key, Tj)
        run = sampling.sample(entry, task, **dict(stage, seed=seed + j, init=init), **dict(model_kwargs, **{key: Tj}))
        init = _final_positions(run, sites)
        seeds.append(seed + j)
    return init, {"temperatures": temps + [T], "stage_warmup": n_warm, "seeds": seeds}


def meanfield_start(entry, task, model_kwargs: dict, num_chains: int, seed: int) -> tuple[dict, dict]:
    """Starting values of the mean-field family: every hidden unit drawn from the single-neuron mean field.

    Parameters
    ----------
    entry : a fully-connected zoo entry (one hidden layer, non-lazy readout, linear or sigmoidal φ).
    task : a task with orthogonal inputs of equal norm and class-symmetric targets (the toy task).
    model_kwargs : the run's model keywords (width, temperature, sigma_a2, ...).
    num_chains : chains to start.
    seed : seed of the draws (NumPy).

    Returns
    -------
    (dict, dict) : {"W1": (chain, N, N0), "a": (chain, N, m)} and the mean field's branches and posterior-mean
    output per class for the record ({"codes": [...], "masses": [...], "F": (class, output)}).

    Raises
    ------
    FamilyUnavailable
        when the entry, its settings or the task have no single-neuron mean field, or it has no normalisable
        solution (the message says which).
    """

    if entry.model is not fcn:
        raise FamilyUnavailable(f"{entry.name!r} is not a fully-connected net: no single-neuron mean field")
    kw = _resolved(entry, task, model_kwargs)
    act, depth, readout = kw.get("activation", "linear"), int(kw.get("depth", 1)), kw.get("readout", "nonlazy")
    why = ("depth must be 1 (the mean field covers one hidden layer)" if depth != 1 else
           "the lazy readout has no single-neuron mean field here" if readout != "nonlazy" else
           f"activation {act!r}: the mean-field start needs 'linear' or 'sigmoid'"
           if act not in ("linear", "sigmoid") else "")
    if why:
        raise FamilyUnavailable(f"meanfield start unavailable: {why}")
    X, Y, labels = np.asarray(task.X, float), np.asarray(task.Y, float), np.asarray(task.labels).astype(int)
    sw2 = float(kw.get("sigma_w2", 1.0))
    try:
        mf = single_neuron_meanfield(X, Y, labels=labels, nonlinearity=act, temperature=float(kw["temperature"]),
                                     sigma_a2=float(kw["sigma_a2"]), sigma_w2=sw2, check_grid=False)
    except (ValueError, NotImplementedError) as e:
        raise FamilyUnavailable(f"meanfield start unavailable: {e}") from None
    if not mf.normalizable:
        raise FamilyUnavailable(f"meanfield start unavailable: {mf.status}")
    P, N0 = X.shape
    N, m = int(kw["width"]), Y.shape[1]
    kappa = float(np.mean(np.sum(X * X, 1)) / N0)
    var = sw2 * kappa
    rng = np.random.default_rng(seed)
    # readouts: grid cells drawn with their mass, then a uniform point in the cell
    g = mf.grid
    dx = float(g[1] - g[0])
    mass = np.clip(mf.density.ravel(), 0.0, None)
    cells = rng.choice(mass.size, size=num_chains * N, p=mass / mass.sum())
    a = g[np.stack(np.unravel_index(cells, mf.density.shape), -1)] + rng.uniform(-dx / 2, dx / 2, (num_chains * N, m))
    # preactivations given the readout: the tilted law of each class, per unit
    s = a @ mf.lam.T                                                             # (units, class)
    h = np.empty((num_chains * N, P))
    for c in range(mf.lam.shape[0]):
        pts = np.flatnonzero(labels == c)
        h[:, pts] = _tilted_draws(s[:, c], len(pts), act, var, rng)
    # first-layer weights reproducing h on the inputs; a prior draw orthogonal to them
    xi = rng.normal(0.0, math.sqrt(sw2), (num_chains * N, N0))
    W1 = h @ X / (math.sqrt(N0) * kappa) + xi - (xi @ X.T) @ X / (N0 * kappa)
    start = {"W1": W1.reshape(num_chains, N, N0), "a": a.reshape(num_chains, N, m)}
    return start, {"codes": list(mf.branch_code), "masses": [float(v) for v in mf.branch_mass],
                   "F": np.asarray(mf.F, float).tolist()}


def _tilted_draws(s: np.ndarray, n: int, act: str, var: float, rng, chunk: int = 256,
                  n_grid: int = 4001) -> np.ndarray:
    """``n`` draws for each tilt s (units,) of h ∝ N(h | 0, var) exp(s φ(h)): exact for linear φ (N(s var, var)),
    by inverse CDF on a grid for a bounded φ in [0, 1] (the tilt moves the mass by at most √(2 |s| var)); the
    grids of a chunk of units are inverted together by one search over their stacked CDFs."""
    sd = math.sqrt(var)
    if act == "linear":
        return s[:, None] * var + sd * rng.standard_normal((len(s), n))

    phi = np_activation(act)
    out = np.empty((len(s), n))
    for lo in range(0, len(s), chunk):
        sc = s[lo:lo + chunk]
        R = len(sc)
        hg = np.linspace(-1.0, 1.0, n_grid) * sd * (8.0 + math.sqrt(2.0 * float(np.max(np.abs(sc)))))
        logp = -0.5 * hg[None] ** 2 / var + sc[:, None] * phi(hg)[None]
        w = np.exp(logp - logp.max(1, keepdims=True))
        cdf = np.cumsum(w, 1)
        cdf = cdf / cdf[:, -1:]
        rows = np.arange(R)[:, None]
        flat = (cdf + 2.0 * rows).ravel()                 # rows stacked: one increasing array
        q = (rng.uniform(0.0, 1.0, (R, n)) + 2.0 * rows).ravel()
        pos = np.clip(np.searchsorted(flat, q), 1, flat.size - 1)
        j = np.clip(pos - np.repeat(rows.ravel(), n) * n_grid, 1, n_grid - 1)
        f0, f1 = flat[pos - 1], flat[pos]
        t = np.where(f1 > f0, (q - f0) / np.where(f1 > f0, f1 - f0, 1.0), 0.0)
        out[lo:lo + R] = (hg[j - 1] + np.clip(t, 0.0, 1.0) * (hg[1] - hg[0])).reshape(R, n)
    return out


# --------------------------------------------------------------------------------------------------- the run
def certified_sample(entry, task, certify, call: dict, model_kwargs: dict):
    """Run every start family and return one run with the comparison (what ``sample(..., certify=...)`` does).

    Parameters
    ----------
    entry : the zoo entry.
    task : the task.
    certify : True or a sequence of family names (:func:`check_certify`).
    call : the arguments :func:`bnnzoo.sample` was called with (with ``store``, every family runs into its own
        store, ``store/family_<name>``, and ``resume`` continues them: see the module docstring).
    model_kwargs : its model keywords.

    Returns
    -------
    InferenceData or DataTree : the families' runs concatenated along ``chain`` (module docstring).

    Raises
    ------
    ValueError
        bad arguments (before anything compiles), fewer than two families left to run, or a store this call may
        not use (:class:`~bnnzoo.inference.store.StoreError`: another run's, locked, or, with ``resume``, a
        certification with other families, chains, seeds or settings; the message names what differs).
    Exception
        the error of a family that failed after others finished, of the same type, its message naming the finished
        families and where they are kept (with ``store``) or how to keep them (without).
    """

    families = list(check_certify(certify, entry, call))
    seed, n = int(call["seed"]), int(call["num_chains"])
    store, resume = call.get("store"), bool(call.get("resume"))
    base = {k: v for k, v in call.items() if k not in ("model", "task", "certify", "init", "seed", "store", "resume")}
    t0 = time.time()
    starts, details, skipped = {}, {}, {}
    if "meanfield" in families:              # cheap, and may rule the family out: before anything samples
        try:
            starts["meanfield"], details["meanfield"] = meanfield_start(entry, task, model_kwargs, n, seed + 2)
        except FamilyUnavailable as e:
            if certify is not True:
                raise
            skipped["meanfield"] = str(e)
            families.remove("meanfield")
    if "annealed" in families:
        _temperature(entry, _resolved(entry, task, model_kwargs))
    if len(families) < 2:
        raise ValueError(f"certify: fewer than two start families can run for {entry.name!r} ({skipped})")
    runs, seeds = {}, {"prior": seed, "annealed": seed + 1, "meanfield": seed + 2, "planted": seed + 3}
    top = None
    if store is not None:                    # the certification's own store: its identity, the lock, the families
        top = RunStore(_own_folder(store))
        top.lock()
    try:
        if top is not None:
            manifest = _certify_manifest(entry, task, families, n, {f: seeds[f] for f in families}, base,
                                         model_kwargs)
            check_store(top, resume, manifest)
            if not top.exists():
                top.write_manifest(manifest)
        for fam in families:
            _logger.info("certify: start family %r (%d chains)", fam, n)
            sub = None if store is None else Path(store) / f"family_{fam}"     # (several processes: a folder each)
            try:
                init = "prior"
                if fam == "annealed":
                    init, details["annealed"] = _annealed_start_kept(entry, task, base, model_kwargs, seed + 10,
                                                                     top, resume)
                elif fam == "meanfield":
                    init = starts["meanfield"]
                elif fam == "planted":
                    init = planted_init(task, n)
                again = sub is not None and resume and RunStore(_own_folder(sub)).exists()   # read, not re-run
                runs[fam] = sampling.sample(entry, task, **dict(base, seed=seeds[fam], init=init, store=sub,
                                                                resume=again), **model_kwargs)
            except KeyboardInterrupt:        # kept as it is (an interrupt), with what finished said once
                if runs:
                    _logger.warning("%s", _family_message(KeyboardInterrupt(), fam, list(runs), top))
                raise
            except Exception as e:
                if not runs:
                    raise
                raise _family_failed(e, fam, list(runs), top) from e
    finally:
        if top is not None:
            top.unlock(remove_if_new=True)
    combined, record = _combined(runs, entry, dict(
        skipped_families=skipped, starts=details, seeds={f: seeds[f] for f in runs}, num_chains_per_family=n,
        store=None if top is None else str(top.path), wall_time_s=None), t0)
    _logger.info("certify: %s", "families agree" if record["agree"] else "; ".join(record["disagreements"]))
    return combined


def _own_folder(path) -> Path:
    """This process's store folder below ``path``: ``path/process_<k>`` when several processes run the chains (as
    :func:`bnnzoo.inference.sample` keeps them), else ``path``."""
    return Path(path) / f"process_{jax.process_index()}" if jax.process_count() > 1 else Path(path)


def _certify_manifest(entry, task, families: list, n: int, seeds: dict, base: dict, model_kwargs: dict) -> dict:
    """The identity of a certification with a store (its ``run.json``): the families, chains per family and seeds,
    the model and the sampler settings, with a fingerprint of those and the data; a resume must match it."""
    ident = dict(certify=dict(families=list(families), num_chains=n, seeds=seeds), model=entry.name,
                 model_kwargs=jsonable(model_kwargs), sampler=jsonable(base["sampler"]),
                 num_warmup=base["num_warmup"], num_samples=base["num_samples"], thinning=base["thinning"],
                 task=jsonable(task.meta))
    return dict(ident, fingerprint=fingerprint(ident, [task.X, task.Y]), versions=versions())


def _annealed_start_kept(entry, task, base: dict, model_kwargs: dict, seed: int, top, resume: bool):
    """:func:`annealed_start`, its starting values kept in the certification's store (``annealed_start.npz``, a
    checkpoint file of :mod:`bnnzoo.inference.store`) and read back on a resume instead of running the hot stages
    again."""
    path = None if top is None else top.path / "annealed_start.npz"
    if path is not None and resume and path.exists():
        meta, arrays = read_checkpoint(path)
        return {s: arrays[f"leaf{i:04d}"] for i, s in enumerate(meta["sites"])}, meta["details"]
    init, details = annealed_start(entry, task, base, model_kwargs, seed)
    if path is not None:                 # the leaves of a dict are its values in key order
        save_state(path, init, {"sites": sorted(init), "details": details})
    return init, details


def _family_message(e: BaseException, family: str, finished: list, top) -> str:
    """One line: the start family ``family`` failed (or was interrupted) after ``finished`` ones, what finished and
    where it is kept (a store) or how to keep it (none)."""
    why = f"{type(e).__name__}: {str(e).splitlines()[0]}" if str(e) else type(e).__name__
    kept = (f"the finished families {finished} are kept in {top.path}: resume=True (CLI: --resume) runs only the "
            f"rest" if top is not None else
            f"the finished families {finished} were discarded: give store=DIR (CLI: --store DIR or --chunk N) to "
            f"keep each family as it finishes, and resume=True (CLI: --resume) to run only the rest")
    what = "was interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
    return f"certify: start family {family!r} {what} ({why}); {kept}"


def _family_failed(e: Exception, family: str, finished: list, top) -> Exception:
    """The error of a start family that failed after ``finished`` ones (:func:`_family_message`), of the same type
    where it takes a message."""
    msg = _family_message(e, family, finished, top)
    try:
        return type(e)(msg)
    except Exception:  # noqa: BLE001  an exception type that takes no single message
        return RuntimeError(msg)


def concat_families(runs: dict):
    """Runs of the same model and settings, one per start family, as one run.

    Parameters
    ----------
    runs : dict
        {family name: InferenceData or DataTree}, in the order the families are to take.

    Returns
    -------
    InferenceData or DataTree : every group with a ``chain`` dim concatenated along it in family order (chains
        renumbered 0..), with a ``family`` coordinate on ``chain``; the other groups (copies) and the attributes from
        the first run.  A stored health (group ``diagnostics_health``) is left out: it judged one family alone.

    Raises
    ------
    ValueError
        if ``runs`` is empty.
    """
    if not runs:
        raise ValueError("concat_families: runs is empty; give {family: run} for two or more families")
    fams = list(runs)
    first = runs[fams[0]]
    groups = {}
    for name in azcompat.group_names(first):
        parts = [azcompat.get_group(runs[f], name) for f in fams if name in azcompat.group_names(runs[f])]
        if len(parts) != len(fams) or name == HEALTH_GROUP:
            continue
        if "chain" not in parts[0].dims:
            groups[name] = parts[0].copy()       # a copy: the caller's run keeps its own group and attributes
            continue
        fam_of, offset, out = [], 0, []
        for f, ds in zip(fams, parts):
            c = ds.sizes["chain"]
            out.append(ds.assign_coords(chain=np.arange(offset, offset + c)))
            fam_of += [f] * c
            offset += c
        cat = xr.concat(out, dim="chain", data_vars="minimal", coords="minimal", compat="override",
                        combine_attrs="override")
        groups[name] = cat.assign_coords(family=("chain", np.array(fam_of, dtype=str)))
    return azcompat.make_idata(groups, azcompat.get_attrs(first))


COMPUTED_RECORD = ("families", "agree", "disagreements", "observables", "scatter", "overdispersion", "tests",
                   "ensemble", "error_model", "detectable", "skipped_observables", "runs")
"""Entries of a certification record that :func:`certify_run` computes, which :func:`combine_families` will not
take from its caller."""

SAME_CONFIG = ("model", "model_kwargs", "task", "task_name", "record")
"""Configuration entries (``run_config``) on which the runs :func:`combine_families` combines must agree, besides
the sampler, the kept draws and the thinning (the seed, the start and the warm-up may differ)."""


def combine_families(runs: dict, entry=None, **record):
    """Runs of one model and setting sampled apart, one per start family (in separate calls, processes or
    machines), as one certified run: what ``sample(..., certify=...)`` returns (its draws, certification and stored
    health), when every family was sampled with the seed, start and sampler ``certify`` gives it.

    ``certify`` seeds the families ``seed`` (prior), ``seed + 1`` (annealed), ``seed + 2`` (mean field), starts them
    at "prior", :func:`annealed_start` and :func:`meanfield_start`, and resolves ``sampler="auto"`` for a certified
    run, which may pick another sampler than an uncertified call does (``run_config(run)["sampler"]`` names it).

    Parameters
    ----------
    runs : dict
        {family name: InferenceData or DataTree}: two or more families of two or more chains each, of the same
        model, model arguments, task, recorded sites, sampler (and its ``moves``), kept draws and thinning
        (:data:`SAME_CONFIG`).
    entry : ZooEntry, str or None
        The zoo entry (None: the runs' model).
    **record
        Entries of the certification record that replace the defaults: ``starts`` ({family: how it started};
        default empty), ``seeds`` (default: each run's seed), ``wall_time_s`` (default: the families' wall times
        summed, the cost of the run rather than its elapsed time when the families ran side by side), or any other
        entry to keep with the record except those :func:`certify_run` computes (:data:`COMPUTED_RECORD`).

    Returns
    -------
    InferenceData or DataTree : :func:`concat_families` of the runs, with :func:`certify_run`'s record in its
        attributes (``bnnzoo_certification``) and its configuration's ``certification``, and its health stored
        (:func:`bnnzoo.inference.health.warn_if_unhealthy`, which warns when the run is not healthy).

    Raises
    ------
    ValueError
        if fewer than two runs are given, a run has no bnnzoo configuration, the runs differ in a setting they must
        share (the message names it), ``record`` names a computed entry, or a family has fewer than two chains
        (:func:`certify_run`).
    """
    if len(runs) < 2:
        raise ValueError(f"combine_families needs two or more families, got {len(runs)}: {list(runs)}")
    if bad := sorted(set(record) & set(COMPUTED_RECORD)):
        raise ValueError(f"combine_families: {bad} are computed by certify_run and cannot be given")
    configs, shared = {}, {}
    for f, r in runs.items():
        attrs = azcompat.get_attrs(r)
        if "bnnzoo_config" not in attrs:
            raise ValueError(f"combine_families: the run of family {f!r} has no bnnzoo configuration (not made by "
                             "bnnzoo.sample)")
        configs[f] = json.loads(attrs["bnnzoo_config"])
        shared[f] = dict({k: configs[f].get(k) for k in SAME_CONFIG}, sampler=attrs.get("sampler"),
                         moves=(configs[f].get("sampler") or {}).get("moves"),
                         num_samples=attrs.get("num_samples"), thinning=attrs.get("thinning"))
    first = next(iter(runs))
    for f in runs:
        if diff := [k for k in shared[first] if shared[f][k] != shared[first][k]]:
            raise ValueError(f"combine_families: family {f!r} differs from {first!r} in {diff}; the families must "
                             "share them")
    chains = {f: int(azcompat.get_group(r, "posterior").sizes["chain"]) for f, r in runs.items()}
    defaults = dict(skipped_families={}, starts={}, seeds={f: c.get("seed") for f, c in configs.items()},
                    num_chains_per_family=(next(iter(chains.values())) if len(set(chains.values())) == 1
                                           else chains),
                    store=None, wall_time_s=round(sum(c.get("wall_time_s") or 0.0 for c in configs.values()), 3))
    return _combined(runs, entry, dict(defaults, **record))[0]


def _combined(runs: dict, entry, extra: dict, t0: float | None = None):
    """(the runs concatenated with their certification in the attributes and their health stored, the certification
    record); with ``t0`` (``time.time()`` at the start) the record's wall time is taken after the comparison.  Warns
    when the combined run is not healthy (:func:`bnnzoo.inference.health.warn_if_unhealthy`)."""
    combined = concat_families(runs)
    record = certify_run(combined, entry)
    record.update(extra)
    if t0 is not None:
        record["wall_time_s"] = round(time.time() - t0, 3)
    combined = _with_record(combined, record, runs)
    warn_if_unhealthy(combined, store=True)
    return combined, record


def _with_record(idata, record: dict, runs: dict):
    attrs = azcompat.get_attrs(idata)
    cfg = json.loads(attrs["bnnzoo_config"])
    configs = {f: json.loads(azcompat.get_attrs(r)["bnnzoo_config"]) for f, r in runs.items()}
    record["runs"] = {f: {"seed": c.get("seed"), "init": c.get("sampler", {}).get("init"),
                          "divergences": c.get("divergences"), "wall_time_s": c.get("wall_time_s"),
                          "resumed_from_block": c.get("engine", {}).get("resumed_from_block")}
                      for f, c in configs.items()}
    cfg["certification"] = record
    cfg["divergences"] = int(sum(c.get("divergences", 0) for c in configs.values()))
    cfg["wall_time_s"] = record["wall_time_s"]
    attrs.update(bnnzoo_config=json.dumps(cfg), bnnzoo_certification=json.dumps(record),
                 num_chains=int(sum(azcompat.get_group(r, "posterior").sizes["chain"] for r in runs.values())))
    groups = {g: azcompat.get_group(idata, g) for g in azcompat.group_names(idata)}
    for ds in groups.values():
        ds.attrs.clear()

    return azcompat.make_idata(groups, sealed(attrs, groups.get("posterior")))


def certify_run(idata, entry=None, family: str = "family") -> dict:
    """The certification record of a run whose chains carry a start-family coordinate.

    Parameters
    ----------
    idata : InferenceData or DataTree
        A run with a coordinate ``family`` on ``chain`` (as ``sample(..., certify=True)`` or
        :func:`concat_families` makes it).
    entry : ZooEntry, str or None
        The zoo entry (None: the run's model).
    family : str
        The name of the family coordinate.

    Returns
    -------
    dict : :func:`compare_families`' record plus "skipped_observables" ({name: why}) and "ensemble"
        (:func:`ensemble_criterion`).

    Raises
    ------
    ValueError
        if the run has no family coordinate, or fewer than two families of two or more chains.
    """

    post = azcompat.get_group(idata, "posterior")
    if family not in post.coords:
        raise ValueError(f"the run has no {family!r} coordinate on chain: it was not made by certify")
    values = population_observables(idata, entry)
    fams = np.asarray(post.coords[family].values).astype(str)
    rec = compare_families(values, fams, info=values.info, planted="planted" if "planted" in fams else None)
    rec["skipped_observables"] = dict(values.skipped)
    rec["ensemble"] = ensemble_criterion(idata, values, values.info)
    return rec


# --------------------------------------------------------------------------------------------------- comparison
def _chain_ess(values: dict, names: list) -> np.ndarray:
    """ArviZ bulk ESS of every chain alone, (observable, chain); NaN where ArviZ gives none."""
    x = np.stack([np.asarray(values[k], float) for k in names], 0)              # (obs, C, D)
    n_obs, C, D = x.shape
    if D < 4:
        return np.full((n_obs, C), float(D))
    ds = xr.Dataset({"x": (("chain", "draw", "obs", "c"), np.transpose(x, (2, 0, 1))[None])})
    return np.asarray(azcompat.ess(ds, method="bulk")["x"].values, float)


def _fmt_pair(m: float, se: float) -> str:
    """'0.160 ± 0.010': three significant digits of the larger of the two, both to the same decimals."""
    top = max(abs(m), abs(se))
    if not math.isfinite(top) or top == 0:
        return f"{m:.3g} ± {se:.2g}"
    if top >= 1e4 or top < 1e-6:
        return f"{m:.3g} ± {se:.2g}"
    d = max(0, 2 - int(math.floor(math.log10(top))))
    return f"{m:.{d}f} ± {se:.{d}f}"


def _scatter_p(a: np.ndarray, b: np.ndarray) -> float:
    """Brown–Forsythe p-value that two groups' chain means scatter alike; 1 when neither scatters or a group has
    fewer than 3 chains (with 2 the deviations from the median are equal by construction: no test)."""
    if min(len(a), len(b)) < 3 or (np.ptp(a) == 0 and np.ptp(b) == 0):
        return 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        p = float(stats.levene(a, b, center="median").pvalue)
    return p if math.isfinite(p) else 1.0


def _units(mu: np.ndarray, n_units: int) -> float:
    """Units that carry a fraction's information in the chains given: the units on it or the units off it, whichever
    are fewer, summed over the chains' time-averaged fractions ``mu`` (chain,) of ``n_units`` units each."""
    on = float(n_units * np.sum(mu))
    return max(min(on, n_units * len(mu) - on), 0.0)


def _all_in_one(units: float, shares: Sequence[float]) -> float:
    """The chance that all of ``units`` units fall in one group when each falls in group g with probability
    ``shares[g]`` independently: sum over g of shares[g]**units, at most 1 (``units`` rounded to a whole count).
    It is the smallest p-value any split of those units between the groups can have under a shared law."""
    u = int(round(units))
    return min(1.0, float(sum(s ** u for s in shares)))


def _pair_test(x, mu, mc, chains, fi, fj, planted, q, stat) -> dict:
    """The mean and scatter comparison of families ``fi`` and ``fj`` on one observable x (chain, draw) with chain
    means ``mu`` and Monte-Carlo variances ``mc`` (chain,): Welch on the chain means, or, when one of them is the
    ``planted`` family, :func:`bnnzoo.diagnostics.planted.compare_planted` (Welch while the planted chains move, the
    prediction interval when the planted population is frozen, then without the scatter test: the planted chains'
    scatter is not a sample of the law's).  "t" is always fj's mean minus fi's over its error."""
    if planted not in (fi, fj):
        r = welch(stat[fi], stat[fj], q)
        r.update(model=WELCH, scatter_p=_scatter_p(mu[chains[fi]], mu[chains[fj]]))
        return r
    o = fj if fi == planted else fi
    sign = 1.0 if fi == planted else -1.0                        # compare_planted's t is other − planted
    p, c = chains[planted], chains[o]
    r = compare_planted(x[p], x[c], q, mc_a=mc[p], mc_b=mc[c])
    out = {k: v for k, v in r.items() if k not in ("a", "b")}
    out["t"] = sign * r["t"]
    if "welch" in out:
        out["welch"] = dict(out["welch"], t=sign * out["welch"]["t"])
    out["scatter_p"] = None if r["model"] == FROZEN else _scatter_p(mu[chains[fi]], mu[chains[fj]])
    return out


def compare_families(values: dict, chain_family, *, info: dict | None = None, alpha: float = ALPHA,
                     planted: str | None = None) -> dict:
    """Compare population observables across start families (the module docstring states the error model).

    Parameters
    ----------
    values : {name: (chain, draw) array}
        The population observables (:func:`bnnzoo.diagnostics.populations.population_observables`).
    chain_family : sequence of str, (chain,)
        Each chain's start family.
    info : {name: ObservableInfo} or None
        Each observable's kind (``.kind``: "fraction", "unit_mean", "network") and ``.n_units``: fractions are
        also tested for over-dispersion against N independent units; None treats every observable as "network".
    alpha : float
        Family-wise false-alarm rate over all tests, in (0, 1).
    planted : str or None
        The family started at the teacher of a planted task (its pairs are judged by
        :func:`bnnzoo.diagnostics.planted.compare_planted`, module docstring), or None: no such family.

    Returns
    -------
    dict
        "families" (names, in order of first appearance), "agree" (bool), "disagreements" (one line each:
        "name: fam_i m_i ± se_i vs fam_j m_j ± se_j", "name: planted m ± se is no plausible draw of fam's law ...",
        "name: scatter ..." or "name: fam over-dispersed ..."), "observables" ({name: {family: [mean, se]}}),
        "scatter" ({name: {family: sd of its chain means}}), "tests" ({name: {"fam_i|fam_j": {"t" (fam_j − fam_i
        over its error), "dof", "threshold", "detectable", "scatter_p" (None where not tested), "model"
        (:data:`~bnnzoo.diagnostics.planted.WELCH` or, for a frozen planted family,
        :data:`~bnnzoo.diagnostics.planted.FROZEN`, with "spread" and "welch" as :func:`compare_planted` gives
        them)}}), "planted" (the ``planted`` argument),
        "overdispersion" ({name: {family: p-value}}, fractions only), "error_model", "alpha", "n_comparisons",
        "chains" ({family: [chain indices]}), "not_compared" (one line per fraction and family pair carried by too
        few units to compare, their "tests" entry having "compared" False and "units", and one per fraction and
        family with too few units to show over-dispersion, their χ² p-value kept in "overdispersion"; module
        docstring).

    Raises
    ------
    ValueError
        fewer than two families, a family with fewer than two chains, or arrays that do not match the chains.
    """
    fam = np.asarray(chain_family).astype(str)
    fams = list(dict.fromkeys(fam.tolist()))
    chains = {f: np.flatnonzero(fam == f) for f in fams}
    if len(fams) < 2 or min(len(c) for c in chains.values()) < 2:
        raise ValueError(f"compare_families needs two or more families of two or more chains each, got "
                         f"{ {f: len(c) for f, c in chains.items()} }")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if planted is not None and planted not in chains:
        raise ValueError(f"planted must name one of the families {fams} or be None, got {planted!r}")
    names = [k for k in values]
    for k in names:
        if np.ndim(values[k]) != 2 or np.shape(values[k])[0] != len(fam):
            raise ValueError(f"observable {k!r} must be (chain, draw) with {len(fam)} chains, got "
                             f"{np.shape(values[k])}")
    kinds = {k: getattr(info.get(k) if info is not None else None, "kind", "network") for k in names}
    fractions = [k for k in names if kinds[k] == "fraction"]
    pairs = [(fams[i], fams[j]) for i in range(len(fams)) for j in range(i + 1, len(fams))]
    M = max(2 * len(names) * len(pairs) + len(fractions) * len(fams), 1)
    q = alpha / (2 * M)
    ess = _chain_ess(values, names) if names else np.zeros((0, len(fam)))
    observables, scatter, tests, over, lines, skipped = {}, {}, {}, {}, [], []
    for o, name in enumerate(names):
        x = np.asarray(values[name], float)
        D = x.shape[1]
        mu = x.mean(1)
        var_c = x.var(1, ddof=1) if D > 1 else np.zeros(len(mu))
        e = np.where(np.isfinite(ess[o]) & (ess[o] > 0), ess[o], 1.0)
        mc = np.where(var_c > 0, var_c / e, 0.0)
        stat = {f: chain_mean_stats(x[idx], mc[idx]) for f, idx in chains.items()}
        observables[name] = {f: [m, se] for f, (m, se, _) in stat.items()}
        scatter[name] = {f: float(mu[idx].std(ddof=1)) for f, idx in chains.items()}
        tests[name] = {}
        for fi, fj in pairs:
            r = _pair_test(x, mu, mc, chains, fi, fj, planted, q, stat)
            tests[name][f"{fi}|{fj}"] = r
            r["compared"] = True
            frozen = r["model"] == FROZEN
            if name in fractions:
                n_units = max(int(getattr(info[name], "n_units", 0) or 0), 1)
                if frozen:       # the planted chains hold one population, the teacher's: its units count once
                    o = fj if fi == planted else fi
                    held = np.concatenate([[mu[chains[planted]].mean()], mu[chains[o]]])
                    shares = [1.0 / len(held), 1.0 - 1.0 / len(held)]
                else:
                    held = mu[np.concatenate([chains[fi], chains[fj]])]
                    shares = [len(chains[fi]) / len(held), len(chains[fj]) / len(held)]
                r["units"] = round(_units(held, n_units), 6)
                p_min = _all_in_one(r["units"], shares)
                if p_min >= 2 * q:
                    r["compared"] = False
                    skipped.append(f"{name}: {fi} vs {fj}: too few units to compare mean or scatter "
                                   f"({r['units']:.3g} on the code or off it in all their chains"
                                   f"{', the frozen planted population counted once' if frozen else ''}; all in "
                                   f"one family: p {p_min:.2g} ≥ α/M {2 * q:.3g})")
                    continue
            if abs(r["t"]) > r["threshold"] and frozen:
                o = fj if fi == planted else fi
                lines.append(f"{name}: {planted} {_fmt_pair(*stat[planted][:2])} is no plausible draw of {o}'s law "
                             f"{stat[o][0]:.3g}, sd {r['spread']['other_sd']:.2g} per draw (|t| {abs(r['t']):.2f} > "
                             f"{r['threshold']:.2f}; planted population frozen)")
            elif abs(r["t"]) > r["threshold"]:
                lines.append(f"{name}: {fi} {_fmt_pair(*stat[fi][:2])} vs {fj} {_fmt_pair(*stat[fj][:2])}")
            if r["scatter_p"] is not None and r["scatter_p"] < 2 * q:
                lines.append(f"{name}: scatter between chains {fi} {scatter[name][fi]:.3g} vs {fj} "
                             f"{scatter[name][fj]:.3g} (Brown–Forsythe p {r['scatter_p']:.1e})")
        if name in fractions:
            n_units = max(int(getattr(info[name], "n_units", 0) or 0), 1)
            p_bar = float(np.clip(mu.mean(), 0.0, 1.0))
            over[name] = {}
            for f, idx in chains.items():
                ref = p_bar * (1.0 - p_bar) / n_units + float(mc[idx].mean())
                s2 = float(mu[idx].var(ddof=1))
                chi2 = (len(idx) - 1) * s2 / ref if ref > 0 else (math.inf if s2 > 0 else 0.0)
                p = float(stats.chi2.sf(chi2, len(idx) - 1))
                over[name][f] = p
                units = _units(mu[idx], n_units)
                p_min = _all_in_one(units, [1.0 / len(idx)] * len(idx))
                if p_min >= 2 * q:       # no spread of these few units over the chains is significant: not tested
                    if units > 0:        # (none: the fraction is 0 or 1 in every chain, nothing to say)
                        skipped.append(f"{name}: {f}: too few units to show over-dispersion ({units:.3g} on the code "
                                       f"or off it in its chains; all in one chain: p {p_min:.2g} ≥ α/M "
                                       f"{2 * q:.3g})")
                elif p < 2 * q:
                    lines.append(f"{name}: {f} over-dispersed (chain means scatter by {math.sqrt(s2):.3g}, "
                                 f"{math.sqrt(s2 / ref):.1f}× the {n_units} independent units' "
                                 f"{math.sqrt(ref):.3g}; χ² p {p:.1e})")
    return {"families": fams, "agree": not lines, "disagreements": lines, "observables": observables,
            "scatter": scatter, "tests": tests, "overdispersion": over, "error_model": ERROR_MODEL,
            "alpha": alpha, "n_comparisons": M, "chains": {f: [int(i) for i in idx] for f, idx in chains.items()},
            "not_compared": skipped, "planted": planted}


# --------------------------------------------------------------------------------------------------- criterion
def _fmt_rhat(r: float) -> str:
    """R̂ to two decimals; "> 100" for chains that each hold a nearly fixed, different value; "inf (chains constant
    and different)" for chains that each hold a fixed, different value (:func:`bnnzoo.azcompat.rhat`)."""
    if r == math.inf:
        return "inf (chains constant and different)"
    return f"{r:.2f}" if r < 100 else "> 100"


def ensemble_criterion(idata, values: dict, info: dict | None = None) -> dict:
    """Which law judges a certified run's invariant observables, with the ensemble criterion's numbers.

    When the population observables (kinds "fraction" and "unit_mean") mix within the chains (R̂ over all chains
    ≤ ``MAX_RHAT``), the ordinary R̂ gate of :mod:`bnnzoo.inference.health` applies: criterion "rhat".  Otherwise
    each chain holds a frozen population, which fixes its q_a and training error (docs/theory.md §10): criterion
    "ensemble".  Each scalar invariant observable's chain means are then regressed on the chains' populations (the
    first principal components of the standardised chain means of the population observables, one per
    two chains beyond two, at least one), and each chain's draws shifted by its offset as predicted from the
    *other* chains (leave-one-chain-out, so an offset that no population explains is not fitted away); the residual
    must mix (R̂ ≤ ``MAX_RHAT``, judged by the health gate).  A "fraction" held by so few units U over the C chains
    that all of them in one chain would have probability C^(1−U) ≥ ``ALPHA`` under free exchange does not take part
    in the choice (module docstring): its R̂ reads one frozen unit, not frozen populations.

    Parameters
    ----------
    idata : the run (all families' chains).
    values : {name: (chain, draw)} population observables of the run.
    info : {name: ObservableInfo} or None (None: every observable a "network" one, so the criterion is "rhat").

    Returns
    -------
    dict
        "criterion" ("rhat" or "ensemble"), "why" (one line, naming the fractions left out), "populations_rhat"
        ({name: R̂}), "too_few_units" ({name: units} of the fractions left out of the choice); for "ensemble"
        also "components" (regressors used) and "observables" ({name: {"rhat", "residual_rhat", "residual_ess",
        "explained" (the fraction of the chain means' variance the populations explain, leave-one-chain-out)}}).
    """
    pops = [k for k in values if getattr((info or {}).get(k), "kind", "network") in ("fraction", "unit_mean")
            and np.ptp(np.asarray(values[k], float)) > 0]
    pop_rhat, few = {}, {}
    for k in pops:
        x = np.asarray(values[k], float)
        pop_rhat[k] = float(np.asarray(azcompat.rhat(xr.Dataset({"x": (("chain", "draw"), x)}))["x"].values))
        if info[k].kind == "fraction":
            units = _units(x.mean(1), max(int(info[k].n_units or 0), 1))
            if _all_in_one(units, [1.0 / len(x)] * len(x)) >= ALPHA:
                few[k] = units
    pops = [k for k in pops if k not in few]
    C = int(np.shape(values[pops[0]])[0]) if pops else 0
    worst = max(pops, key=lambda k: np.nan_to_num(pop_rhat[k], nan=np.inf), default=None)
    few_note = ("; too few units to decide: " + ", ".join(f"{k} ({u:.3g} unit{'s' if round(u) != 1 else ''})"
                                                          for k, u in few.items())) if few else ""
    if worst is None or pop_rhat[worst] <= MAX_RHAT:
        why = ("no population observable varies" if worst is None else
               f"populations mix within chains (largest R̂ {_fmt_rhat(pop_rhat[worst])}, {worst})") + few_note
        return {"criterion": "rhat", "why": why, "populations_rhat": pop_rhat, "too_few_units": few}
    means = np.stack([np.asarray(values[k], float).mean(1) for k in pops], -1)        # (C, K)
    sd = means.std(0)
    z = (means[:, sd > 0] - means[:, sd > 0].mean(0)) / sd[sd > 0]
    u, s, _ = np.linalg.svd(z, full_matrices=False)
    rank = int((s > 1e-9 * s[0]).sum()) if s.size else 0
    n_comp = max(1, min(rank, (C - 2) // 2))
    design = np.column_stack([np.ones(C), u[:, :n_comp]])
    hat = np.einsum("ck,ck->c", design, np.linalg.pinv(design).T)                      # leverages h_cc
    post = azcompat.get_group(idata, "posterior")
    names = azcompat.group_names(idata)
    y = np.asarray(azcompat.get_group(idata, "observed_data")["y"].values) if "observed_data" in names else None
    out = {}
    for name, x in invariant_observables(post, y).items():
        if x.ndim != 2 or not np.isfinite(x).all() or np.ptp(x) == 0:
            continue
        mu = x.mean(1)
        fit = design @ np.linalg.lstsq(design, mu, rcond=None)[0]
        # leave-one-chain-out: each chain's offset predicted from the other chains' populations, so the fit cannot
        # absorb an offset that no population explains
        loo = mu - (mu - fit) / np.maximum(1.0 - hat, 1e-12)
        resid = x - (loo - mu.mean())[:, None]
        ess, rh = _ess_rhat(x[..., None])
        ess_r, rh_r = _ess_rhat(resid[..., None])
        var_mu = float(mu.var())
        out[name] = {"rhat": float(rh[0]), "residual_rhat": float(rh_r[0]), "residual_ess": float(ess_r[0]),
                     "explained": 1.0 - float((mu - loo).var()) / var_mu if var_mu > 0 else 1.0}
    return {"criterion": "ensemble", "populations_rhat": pop_rhat, "components": n_comp, "observables": out,
            "too_few_units": few,
            "why": f"populations frozen per chain ({worst} R̂ {_fmt_rhat(pop_rhat[worst])} > {MAX_RHAT}): q_a, the "
                   f"training error and the other invariant observables are judged with each chain's population "
                   f"regressed out ({n_comp} component{'s' if n_comp > 1 else ''}){few_note}"}
