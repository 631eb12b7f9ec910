"""Adaptive tempered SMC from the prior with HMC mutations; ``bnnzoo.sample(..., sampler="smc")`` runs it.

The sequential Monte Carlo itself is BlackJAX's (``blackjax.adaptive_tempered_smc``: Del Moral, Doucet & Jasra 2006;
docs/theory.md §10): a population of particles drawn from the prior is moved along π_β ∝ p(θ) p(Y | θ)^β from β = 0
to β = 1, each step choosing the next β so the effective sample size of the incremental weights is ``target_ess``
of the particles, resampling (systematic) and mutating every particle by ``num_mcmc_steps`` HMC transitions
(``blackjax.mcmc.hmc``).  Its weights give the log evidence, log Ẑ = Σ_t log mean_i exp((β_t − β_{t−1}) ℓ(θ_i)).

What bnnzoo adds is the split of a model's density, the tuning of the mutations between steps and the mapping onto
a run:

* Prior and likelihood of any NumPyro model are split by site: the observed sample sites (``obs=``, which includes
  ``numpyro.factor``) are the likelihood, every other sample site and the Jacobian of the unconstraining transforms
  the prior (:class:`SplitDensity`).
* Mutation kernel: before each step the diagonal inverse mass is the weighted variance of the particles (they
  represent the current π_β), and the step size is multiplied by exp(ā − ``target_accept``), ā the mean acceptance
  of the previous step's mutations; the number of leapfrog steps is drawn every step from ⌈L/2⌉..L.
* Chains: every chain is an independent SMC run with ``num_samples`` particles (the particles batched by the
  library, the runs one after the other through the same compiled step: batching the runs as well would double the
  compile time of BlackJAX's step, whose root-finding and resampling branches become selects under ``jax.vmap``).
  When a run has reached β = 1, two more resample-and-mutate steps at β = 1 (the first re-tunes the step size at the
  target, the second's particles are kept) leave equally weighted particles, and particle i of run c is draw i of
  chain c.  So a chain's draws are independent posterior draws (up to the duplicates of resampling, which the
  mutations separate), and chains that disagree are SMC runs that disagree: R̂ across chains compares independent
  runs.  ``num_warmup`` is not used (the path from the prior is the warm-up) and ``thinning`` must be 1.
* Evidence: each run gives its own log Ẑ_c; the run's estimate is log mean_c Ẑ_c (the mean of unbiased estimates of
  Z is unbiased), its standard error from the spread of the independent runs, s = sd_c(log Ẑ_c):
  se = s / √C · √((C − 1) / (C − 3)).  The factor makes the error calibrated: log Ẑ_c is asymptotically normal
  (Bérard, Del Moral & Doucet 2014), so (estimate − log Z) / (s / √C) follows Student's t with C − 1 degrees of
  freedom, whose variance is (C − 1) / (C − 3); without it four runs give z-scores of sd √3.  Fewer than
  ``MIN_RUNS`` = 4 runs leave that variance infinite: the estimate is then marked not trustworthy.  log Ẑ_c is
  biased low (Jensen: E log Ẑ_c ≈ log Z − s² / 2 under that normal law), and log mean_c Ẑ_c keeps a bias of about
  s² / (2C); a spread s above ``MAX_LOG_Z_SD`` = 1 nat (bias no longer small against the error, and a heavy right
  tail of Ẑ_c that a few runs miss) also marks the estimate not trustworthy (more particles or mutation steps).

What a run made by ``bnnzoo.sample(..., sampler="smc")`` holds besides the usual groups: ``sample_stats`` per particle
(chain, draw) from the last mutation step (energy, lp, acceptance_rate averaged over its transitions, step_size,
diverging if any transition diverged, n_steps), and in ``run_config(idata)["engine"]``: ``num_particles``,
``num_tempering_steps``, ``beta_path`` and ``ess_min`` per run, ``step_size`` and ``acceptance`` per run,
``log_z_per_chain``, ``options``, and ``log_evidence`` = {"value", "se", "method", "trustworthy", "reason"}, read by
:func:`log_evidence`, which also reads the runs stored by the parallel tempering of earlier versions (their
provenance holds the same ``log_evidence`` record); :func:`bnnzoo.sample` warns when the evidence is not trustworthy.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from functools import partial
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from numpyro import handlers
from numpyro.distributions.transforms import biject_to
from numpyro.infer.util import constrain_fn, potential_energy
from numpyro.primitives import Messenger

from .._log import user_stacklevel
from ..models._checks import check_int
from .convert import run_config

__all__ = ["SplitDensity", "split_density", "tempered_smc", "combine_log_z", "smc_evidence_trust", "LogEvidence",
           "log_evidence", "log_evidence_of", "check_options", "run_smc", "SMC_OPTIONS", "DEFAULT_NUM_STEPS",
           "MIN_RUNS", "MAX_LOG_Z_SD"]

_logger = logging.getLogger(__name__)

MIN_RUNS = 4            # independent runs needed for a finite-variance error from their spread (Student's t, C − 1 dof)
MAX_LOG_Z_SD = 1.0      # nats: a larger spread of the runs' log Z makes the Jensen bias s²/2 comparable to the error
DEFAULT_NUM_STEPS = 16  # largest leapfrog count per mutation step
SMC_OPTIONS = {"target_ess": 0.5, "num_mcmc_steps": 10, "max_steps": 1000}


class _ScaleLatent(Messenger):
    """Multiplies the ``scale`` of the sample sites not in ``obs_names`` by ``factor``: the latent sites and the
    Jacobian factors that :func:`numpyro.infer.util.potential_energy` adds (they pass through every handler, this one
    included, so they are scaled with the prior they belong to)."""

    def __init__(self, fn, obs_names, factor):
        self.obs_names, self.factor = frozenset(obs_names), factor
        super().__init__(fn)

    def process_message(self, msg):
        if msg["type"] == "sample" and msg["name"] not in self.obs_names:
            msg["scale"] = self.factor if msg["scale"] is None else self.factor * msg["scale"]


class SplitDensity(NamedTuple):
    """Prior and likelihood of a NumPyro model as functions of one flat unconstrained vector.

    Attributes
    ----------
    logprior : callable x (D,) -> scalar, the log prior density of the unconstrained coordinates (the Jacobian of
        the transforms to the constrained sites included).
    loglik : callable x (D,) -> scalar, the log-likelihood: the sum of the observed sites' log densities (each with
        its scale), ``numpyro.factor`` sites included.
    unravel : callable x (D,) -> {site: unconstrained value}.
    dim : D.
    obs_names : the observed sites.
    init : callable (key, n, strategy) -> (n, D) starting points: "prior" exact prior draws (NumPyro's
        ``init_to_sample``), "uniform" uniform in (−2, 2) in the unconstrained space (``init_to_uniform``).
    constrain : callable (x (n, D), model_kwargs) -> {site: (n, ...)}, every latent and deterministic site.
    """

    logprior: Callable
    loglik: Callable
    unravel: Callable
    dim: int
    obs_names: tuple
    init: Callable
    constrain: Callable


def split_density(model, model_args: tuple, model_kwargs: dict) -> SplitDensity:
    """Split the posterior of ``model(*model_args, **model_kwargs)`` into prior and likelihood (module docstring).

    Parameters
    ----------
    model : a NumPyro model.
    model_args, model_kwargs : its arguments (the data included).

    Returns
    -------
    SplitDensity

    Raises
    ------
    ValueError
        if the model has no observed site (nothing to temper), no latent site, or a discrete latent site (HMC
        needs gradients).
    """
    found = {}

    def prior_draw(key):
        """One prior draw of the latent sites, unconstrained (records the sites' kinds in ``found``)."""
        tr = handlers.trace(handlers.seed(model, key)).get_trace(*model_args, **model_kwargs)
        latent = {n: s for n, s in tr.items() if s["type"] == "sample" and not s.get("is_observed", False)}
        found["obs"] = tuple(n for n, s in tr.items() if s["type"] == "sample" and s.get("is_observed", False))
        found["discrete"] = [n for n, s in latent.items() if s["fn"].support.is_discrete]
        if found["discrete"]:
            return {}
        return {n: biject_to(s["fn"].support).inv(s["value"]) for n, s in latent.items()}

    # abstract evaluation: the site structure and shapes without running (or compiling) the model op by op
    shapes = jax.eval_shape(prior_draw, jax.random.PRNGKey(0))
    obs = found["obs"]
    if found["discrete"]:
        raise ValueError(f"sampler='smc' moves with HMC: the model has discrete latent sites {found['discrete']}")
    if not obs:
        raise ValueError("sampler='smc' tempers the likelihood: the model has no observed site (obs=) or "
                         "numpyro.factor")
    if not shapes:
        raise ValueError("sampler='smc' needs a latent site to sample: the model has none")
    flat0, unravel = ravel_pytree(jax.tree.map(lambda a: np.zeros(a.shape, a.dtype), shapes))
    prior_model = handlers.block(model, hide=list(obs))
    lik_model = _ScaleLatent(model, obs, 0.0)

    def logprior(x):
        return -potential_energy(prior_model, model_args, model_kwargs, unravel(x))

    def loglik(x):
        return -potential_energy(lik_model, model_args, model_kwargs, unravel(x))

    @partial(jax.jit, static_argnames=("n", "strategy"))
    def init(key, n, strategy="prior"):
        """(n, D) starting points: exact prior draws ("prior", NumPyro's init_to_sample) or uniform in (−2, 2) in
        the unconstrained space ("uniform", NumPyro's init_to_uniform)."""
        if strategy == "uniform":
            return jax.random.uniform(key, (n, flat0.size), flat0.dtype, -2.0, 2.0)
        return jax.vmap(lambda k: ravel_pytree(prior_draw(k))[0])(jax.random.split(key, n))

    def constrain(x, kwargs):
        return jax.vmap(lambda v: constrain_fn(model, model_args, kwargs, unravel(v), return_deterministic=True))(x)

    return SplitDensity(logprior, loglik, unravel, int(flat0.size), obs, init, constrain)


def tempered_smc(key, logprior: Callable, loglik: Callable, x0, *, target_ess: float = 0.5, num_mcmc_steps: int = 10,
                 num_steps: int = 16, target_accept: float = 0.8, max_steps: int = 1000,
                 progress: bool = False) -> dict:
    """Run C independent adaptive tempered SMC populations from prior draws to β = 1 (module docstring).

    Parameters
    ----------
    key : JAX PRNG key.
    logprior, loglik : callables x (D,) -> scalar (:class:`SplitDensity`).
    x0 : (C, n, D) prior draws: C populations of n particles.
    target_ess : fraction of n the effective sample size of each step's incremental weights is set to, in (0, 1).
    num_mcmc_steps : HMC transitions per particle and step.
    num_steps : L, the largest number of leapfrog steps per transition (drawn from ⌈L/2⌉..L every step).
    target_accept : the mean acceptance the step size is steered to.
    max_steps : the most tempering steps before the run is abandoned.
    progress : log each run's β at every tenth of the way on the ``bnnzoo`` logger (INFO; the number of steps is
        not known in advance, so there is no bar).

    Returns
    -------
    dict with "particles" (C, n, D) equally weighted at β = 1; "stats" {accept_prob, diverging, energy, lp,
    step_size, num_steps}: (C, n) arrays of the last step's mutations (acceptance averaged over its transitions,
    divergence if any, energy and log posterior of the final state); "log_z" (C,) each run's log evidence;
    "betas" (per run, the list of its β after each step); "ess" (per run, the effective sample size of the
    weights after each step);
    "step_size" (C,) and "acceptance" (C,) of the last step; "num_tempering_steps" (C,) steps each run needed to
    reach β = 1; "timing".

    Raises
    ------
    RuntimeError
        if some population has not reached β = 1 after ``max_steps`` steps.
    """
    import blackjax  # 0.4 s to import: kept off `import bnnzoo` (docs/contract.md, Imports)

    x0 = jnp.asarray(x0)
    C, n, D = x0.shape
    hmc = blackjax.mcmc.hmc.build_kernel()
    kernel = blackjax.adaptive_tempered_smc.build_kernel(logprior, loglik, hmc, blackjax.mcmc.hmc.init,
                                                         blackjax.smc.resampling.systematic, target_ess)
    L_max = int(num_steps)
    L_min = max(1, math.ceil(L_max / 2))

    @jax.jit
    def step(key, state, eps, im):
        k_step, k_L = jax.random.split(key)
        L = L_min + jax.random.randint(k_L, (), 0, L_max - L_min + 1)
        params = {"step_size": eps[None], "inverse_mass_matrix": im[None], "num_integration_steps": L[None]}
        new, info = kernel(k_step, state, num_mcmc_steps, params)
        hi = info.update_info                                        # leaves (n, num_mcmc_steps, ...)
        acc = jnp.mean(jnp.nan_to_num(hi.acceptance_rate), axis=-1)
        kinetic = 0.5 * jnp.sum(hi.momentum[:, -1] ** 2 * im, axis=-1)
        w = new.weights
        mean = w @ new.particles
        var = w @ (new.particles - mean) ** 2
        new_im = (n / (n + 5.0)) * var + 1e-3 * (5.0 / (n + 5.0))   # regularised as Stan does
        mean_acc = jnp.mean(acc)
        new_eps = eps * jnp.exp(mean_acc - target_accept)
        out = dict(acc=acc, div=jnp.any(hi.is_divergent, axis=-1), accepted=hi.is_accepted[:, -1],
                   energy=hi.energy[:, -1], kinetic=kinetic, increment=info.log_likelihood_increment,
                   ess=1.0 / jnp.sum(w ** 2), mean_acc=mean_acc, L=L)
        return new, new_eps, new_im, out

    log_posterior = jax.jit(jax.vmap(lambda x: logprior(x) + loglik(x)))
    t0 = time.perf_counter()
    runs = []
    for c, k_chain in enumerate(jax.random.split(key, C)):
        state = blackjax.adaptive_tempered_smc.init(x0[c])
        state = state._replace(tempering_param=jnp.asarray(0.0, x0.dtype))
        im = (n / (n + 5.0)) * jnp.var(x0[c], axis=0) + 1e-3 * (5.0 / (n + 5.0))
        eps = jnp.asarray(D ** -0.25, x0.dtype)
        log_z, betas, ess_path, shown, t = 0.0, [], [], 0, 0
        while True:                               # adaptive tempering to beta = 1
            k_chain, k_step = jax.random.split(k_chain)
            state, eps, im, out = step(k_step, state, eps, im)
            log_z += float(out["increment"])
            beta = float(state.tempering_param)
            betas.append(beta)
            ess_path.append(float(out["ess"]))
            t += 1
            if progress and (int(10 * beta) > shown or beta >= 1.0):     # a line at every tenth of the way
                shown = int(10 * beta)
                _logger.info("sample: smc run %d/%d: beta %.3g after %d steps (%.1f s)", c + 1, C, beta, t,
                             time.perf_counter() - t0)
            if beta >= 1.0:
                break
            if t >= max_steps:
                raise RuntimeError(f"sampler='smc': after max_steps={max_steps} tempering steps chain {c} is still at "
                                   f"beta={beta:.3g}; raise tempering['max_steps'] or lower target_ess")
        k_tune, k_last = jax.random.split(k_chain)   # two more steps at beta = 1: one tunes the step size there,
        state, eps, im, out = step(k_tune, state, eps, im)      # the last leaves equally weighted particles
        eps_used = eps
        state, eps, im, out = step(k_last, state, eps, im)
        lp = log_posterior(state.particles)
        energy = jnp.where(out["accepted"], out["energy"], -lp + out["kinetic"])
        runs.append(dict(particles=state.particles, acc=out["acc"], div=out["div"], energy=energy, lp=lp,
                         eps=float(eps_used), L=int(out["L"]), log_z=log_z, betas=betas, ess=ess_path,
                         mean_acc=float(out["mean_acc"])))
    stats = {"accept_prob": np.stack([np.asarray(r["acc"]) for r in runs]),
             "diverging": np.stack([np.asarray(r["div"]) for r in runs]),
             "energy": np.stack([np.asarray(r["energy"]) for r in runs]),
             "lp": np.stack([np.asarray(r["lp"]) for r in runs]),
             "step_size": np.stack([np.full(n, r["eps"]) for r in runs]),
             "num_steps": np.stack([np.full(n, r["L"]) for r in runs])}
    return {"particles": jnp.stack([r["particles"] for r in runs]), "stats": stats,
            "log_z": np.array([r["log_z"] for r in runs]), "betas": [r["betas"] for r in runs],
            "ess": [r["ess"] for r in runs], "step_size": np.array([r["eps"] for r in runs]),
            "acceptance": np.array([r["mean_acc"] for r in runs]),
            "num_tempering_steps": np.array([len(r["betas"]) for r in runs]),
            "timing": {"smc_s": round(time.perf_counter() - t0, 4)}}


def combine_log_z(log_z) -> tuple[float, float]:
    """log mean_c Ẑ_c of independent runs and its calibrated standard error (module docstring, Evidence).

    Parameters
    ----------
    log_z : (C,) the runs' log Ẑ_c, C >= 2.

    Returns
    -------
    (value, se) : se = sd(log Ẑ_c) / √C · √((C − 1) / (C − 3)) for C >= ``MIN_RUNS``, sd(log Ẑ_c) / √C below (whose
        z-scores have infinite variance: :func:`smc_evidence_trust` marks it not trustworthy); NaN for one run.
    """
    lz = np.asarray(log_z, float)
    m = lz.max()
    value = float(m + math.log(np.mean(np.exp(lz - m))))
    C = lz.size
    if C < 2:
        return value, float("nan")
    se = float(lz.std(ddof=1) / math.sqrt(C))
    return value, se * math.sqrt((C - 1) / (C - 3)) if C >= MIN_RUNS else se


def smc_evidence_trust(log_z) -> tuple[bool, str]:
    """Whether the evidence of independent SMC runs can be reported (module docstring, Evidence).

    Parameters
    ----------
    log_z : (C,) the runs' log Ẑ_c.

    Returns
    -------
    (trustworthy, reason) : reason "" when trustworthy, else one line: fewer than ``MIN_RUNS`` runs, a non-finite
        log Ẑ_c, or a spread sd(log Ẑ_c) above ``MAX_LOG_Z_SD``.
    """
    lz = np.asarray(log_z, float)
    if not np.all(np.isfinite(lz)):
        return False, "a run's log Z is not finite"
    if lz.size < MIN_RUNS:
        return False, (f"{lz.size} independent SMC runs (chains): their spread gives no error bar (need >= "
                       f"{MIN_RUNS})")
    s = float(lz.std(ddof=1))
    if s > MAX_LOG_Z_SD:
        return False, (f"the runs' log Z spread by sd {s:.2f} nats > {MAX_LOG_Z_SD:g}: biased low by about "
                       f"{s * s / 2:.2g} nats per run (Jensen); more particles or num_mcmc_steps")
    return True, ""


class LogEvidence(tuple):
    """A run's log evidence, as :func:`log_evidence` reads it: unpacks as ``value, se, method``, with the checks'
    outcome beside.

    Attributes
    ----------
    value : log p(Y | X) (natural log, the likelihood's normalising constant included).
    se : its Monte Carlo standard error.
    method : how it was computed.
    trustworthy : whether it passed the checks of its sampler (:func:`smc_evidence_trust`; a stored run of the
        parallel tempering of earlier versions: the checks it made then).
    reason : why it is not trustworthy ("" when it is).
    """

    def __new__(cls, value: float, se: float, method: str, trustworthy: bool, reason: str):
        obj = super().__new__(cls, (float(value), float(se), str(method)))
        obj.trustworthy, obj.reason = bool(trustworthy), str(reason)
        return obj

    def __getnewargs__(self):                       # pickling and copying
        return (*self, self.trustworthy, self.reason)

    value = property(lambda self: self[0])
    se = property(lambda self: self[1])
    method = property(lambda self: self[2])

    def __repr__(self) -> str:
        return (f"LogEvidence(value={self.value!r}, se={self.se!r}, method={self.method!r}, "
                f"trustworthy={self.trustworthy!r}, reason={self.reason!r})")

    def __str__(self) -> str:
        num = f"{self.value:.4g} ± {self.se:.2g}"
        return f"log evidence {num}" if self.trustworthy else f"log evidence not trustworthy: {self.reason} ({num})"


def log_evidence(idata) -> LogEvidence:
    """The log marginal likelihood log p(Y | X) that a run of ``sampler="smc"`` stored (or one
    of ``sampler="pt"``, the parallel tempering of earlier versions).

    Parameters
    ----------
    idata : a run made by :func:`bnnzoo.sample` (InferenceData / DataTree).

    Returns
    -------
    LogEvidence : unpacks as (value, se, method): the estimate, its Monte Carlo standard error and how it was
        computed; ``.trustworthy`` and ``.reason`` say whether it passed its checks, and ``str()`` of it says
        "not trustworthy: <reason>" when they failed.  A run stored before the checks existed reads as not
        trustworthy ("not checked").

    Raises
    ------
    ValueError
        if the run holds no evidence (a sampler other than "smc", or not made by :func:`bnnzoo.sample`).
    """
    return log_evidence_of(run_config(idata).get("engine", {}))


def log_evidence_of(engine: dict) -> LogEvidence:
    """:func:`log_evidence` from a run's engine provenance (``run_config(idata)["engine"]``).

    Raises
    ------
    ValueError
        if ``engine`` holds no evidence.
    """
    ev = engine.get("log_evidence") if isinstance(engine, dict) else None
    if not isinstance(ev, dict):
        raise ValueError("this run holds no log evidence: only sampler='smc' computes it")
    trust = ev.get("trustworthy")
    reason = str(ev.get("reason", "")) if trust is not None else "not checked (a run stored before the checks)"
    return LogEvidence(float(ev["value"]), float(ev["se"]), str(ev["method"]), bool(trust), reason)


def check_options(options, *, num_chains: int, thinning: int, init) -> dict:
    """The options of ``sampler="smc"`` (``tempering=``) with their defaults filled in, checked.

    Parameters
    ----------
    options : dict or None: the keys of :data:`SMC_OPTIONS`.
    num_chains, thinning, init : the run's settings (SMC needs two chains, thinning 1 and init "prior").

    Returns
    -------
    dict : every option.

    Raises
    ------
    ValueError
        on an unknown option or a bad value.
    """
    if options is not None and not isinstance(options, dict):
        raise ValueError(f"tempering must be a dict of options, got {options!r}")
    unknown = [k for k in (options or {}) if k not in SMC_OPTIONS]
    if unknown:
        raise ValueError(f"tempering: unknown option(s) {unknown} for sampler='smc'; valid: {list(SMC_OPTIONS)}")
    opts = dict(SMC_OPTIONS, **(options or {}))
    t = opts["target_ess"]
    if isinstance(t, bool) or not isinstance(t, (int, float, np.number)) or not 0 < t < 1:
        raise ValueError(f"tempering['target_ess'] must be a number in (0, 1), got {t!r}")
    check_int("tempering['num_mcmc_steps']", opts["num_mcmc_steps"], 1)
    check_int("tempering['max_steps']", opts["max_steps"], 1)
    if num_chains < 2:
        raise ValueError("sampler='smc' runs one independent SMC population per chain and takes the Monte Carlo "
                         f"error of log Z from their spread: num_chains must be >= 2 ({MIN_RUNS} or more for "
                         "an error bar that can be trusted)")
    if thinning != 1:
        raise ValueError(f"sampler='smc' draws independent particles: thinning must be 1, got {thinning}")
    if not (isinstance(init, str) and init == "prior"):
        raise ValueError("sampler='smc' starts from the prior: init must be 'prior', got "
                         + (repr(init) if isinstance(init, str) else "a dict of starting values"))
    return opts


def run_smc(spec, key):
    """Run ``sampler="smc"`` for :func:`bnnzoo.sample`.

    Parameters
    ----------
    spec : the run's checked :class:`~bnnzoo.inference.plan.RunSpec`: its model, task and model arguments, the
        chains' sizes (``spec.chains``: ``num_chains`` independent SMC runs of ``num_samples`` particles each, the
        kept draws per chain), the sampler's ``num_steps``, ``target_accept`` and ``tempering``
        (:func:`check_options`'s result; ``spec.sampler``), ``exclude`` and ``progress`` (``spec.recording``).
    key : JAX PRNG key of the run.

    Returns
    -------
    (samples {site: (chain, draw, ...)} with ``f_test`` when the task has a test set, fields {NumPyro extra-field
    name: (chain, draw)} for :func:`bnnzoo.inference.convert.sample_stats`, engine provenance dict)
    """
    sm, rec = spec.sampler, spec.recording
    fn, task, kw, options = spec.model, spec.task, spec.model_kwargs, sm.tempering
    num_chains, num_particles = spec.chains.num_chains, spec.chains.num_samples
    dens = split_density(fn, (task.X, task.Y), kw)
    post_kw = dict(kw, X_test=task.X_test) if task.X_test is not None else dict(kw)
    excluded = set(rec.exclude) | set(dens.obs_names)
    constrain = jax.jit(lambda x: {k: v for k, v in dens.constrain(x, post_kw).items() if k not in excluded})

    def post(x):                                  # (C, n, D) -> sites (C, n, ...)
        x = np.asarray(x)
        C, n = x.shape[:2]
        flat = constrain(x.reshape((C * n,) + x.shape[2:]))
        return {k: np.asarray(v).reshape((C, n) + v.shape[1:]) for k, v in flat.items()}

    L = DEFAULT_NUM_STEPS if sm.num_steps is None else int(sm.num_steps)
    target = 0.8 if sm.target_accept is None else float(sm.target_accept)
    target_ess, num_mcmc_steps = float(options["target_ess"]), int(options["num_mcmc_steps"])
    _, k_init, k_run = jax.random.split(key, 3)
    x0 = dens.init(k_init, num_chains * num_particles, "prior").reshape(num_chains, num_particles, dens.dim)
    res = tempered_smc(k_run, dens.logprior, dens.loglik, x0, target_ess=target_ess, num_mcmc_steps=num_mcmc_steps,
                       num_steps=L, target_accept=target, max_steps=int(options["max_steps"]),
                       progress=rec.progress)
    draws = post(res["particles"])
    s = res["stats"]
    fields = {"diverging": s["diverging"], "adapt_state.step_size": s["step_size"], "num_steps": s["num_steps"],
              "energy": s["energy"], "accept_prob": s["accept_prob"], "potential_energy": -s["lp"]}
    value, se = combine_log_z(res["log_z"])
    trust, why = smc_evidence_trust(res["log_z"])
    cfg = {"chain_method": "vectorized", "num_particles": num_particles, "target_ess": target_ess,
           "num_mcmc_steps": num_mcmc_steps, "num_steps": L, "target_accept": target,
           "num_tempering_steps": res["num_tempering_steps"].tolist(),
           "beta_path": [[round(float(b), 8) for b in row] for row in res["betas"]],
           "ess_min": [float(np.min(row)) for row in res["ess"]],
           "step_size": res["step_size"].tolist(), "acceptance": res["acceptance"].tolist(),
           "log_z_per_chain": res["log_z"].tolist(),
           "log_evidence": {"value": value, "se": se,
                            "method": f"adaptive tempered SMC (BlackJAX): log mean of {num_chains} independent runs' "
                                      f"evidence estimates ({num_particles} particles each); se from their spread "
                                      f"(Student's t, {num_chains - 1} degrees of freedom)",
                            "trustworthy": trust, "reason": why},
           "timing": res["timing"]}
    if not trust:                                 # said at sampling time too
        warnings.warn(f"log evidence not trustworthy: {why} ({value:.4g} ± {se:.2g})", RuntimeWarning,
                      stacklevel=user_stacklevel())
    return draws, fields, cfg
