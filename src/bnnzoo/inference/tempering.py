"""Non-reversible parallel tempering over the likelihood temperature; ``bnnzoo.sample(..., sampler="pt")`` runs it.

A posterior whose chains lock into metastable states (the populations of units of a network, the modes of a mixture)
is sampled by running K replicas of every chain at once, replica k at inverse temperature β_k of the likelihood,

    π_β(θ) ∝ p(θ) p(Y | θ)^β,    β_min = β_0 < β_1 < … < β_{K−1} = 1,

and exchanging the states of neighbouring replicas (docs/theory.md §10).  β = 1 is the model's own posterior (its
``temperature`` argument is left as it is); at small β the likelihood is flattened and a replica moves freely between
the states that the cold replica cannot leave.  The cold replica's draws are the run.

* Prior and likelihood of any NumPyro model are split by site: the observed sample sites (``obs=``, which includes
  ``numpyro.factor``) are the likelihood, every other sample site and the Jacobian of the unconstraining transforms
  the prior (:class:`SplitDensity`).  β is a traced argument, so one compiled program serves every replica.
* Local moves: BlackJAX's HMC kernel (``blackjax.mcmc.hmc.build_kernel``, whose kernel takes the log density at call
  time, so every replica gets its own β inside ``jax.vmap``), with a step size per replica from dual averaging towards
  ``target_accept`` (Hoffman & Gelman 2014), a diagonal inverse mass per replica from the positions over warm-up
  windows (each chain's variance over time, averaged over the chains: the variance across chains would measure the
  distance between the states the chains sit in, not the width of one), and a number of leapfrog steps drawn every
  iteration uniformly from ⌈L/2⌉..L (the jitter breaks the periodic orbits of a fixed trajectory length).
* Swaps: the deterministic even-odd scheme ("DEO", Syed, Bouchard-Côté, Deligiannidis & Doucet, JRSS B 2022):
  iteration t proposes to swap the pairs (k, k+1) with k ≡ t (mod 2), each accepted with probability
  min(1, exp((β_{k+1} − β_k)(ℓ_k − ℓ_{k+1}))), ℓ the log-likelihood.  Non-reversible swaps carry a state from the
  hottest to the coldest replica in O(K) iterations instead of O(K²).
* Ladder: geometric from β_min to 1, then re-spaced during warm-up so the swap rejection rates r_k are equal: the
  communication barrier Λ(β) = Σ_{β_k < β} r_k is interpolated (monotone cubic, in log β) and the new β_k solve
  Λ(β_k) = k Λ / (K − 1) (Syed et al. 2022, §5).  The rejection rates are the mean swap rejection probabilities of all
  pairs at every iteration (not only the pairs attempted), over rounds of doubling length.  Λ also says how many
  replicas the posterior needs: about 2Λ + 1 (their §4); fewer leave rejection rates near 1.
* Evidence: log Z = ∫₀¹ E_β[ℓ] dβ (thermodynamic integration), the trapezoid rule over the ladder with its cubic
  Hermite correction Σ_k h_k²/12 (V_k − V_{k+1}), h_k = β_{k+1} − β_k, V = Var_β(ℓ) = dE_β[ℓ]/dβ, measured at
  every replica too (error O(h⁴); the plain trapezoid's O(h²) error is large on a ladder of a dozen replicas),
  plus the piece from β = 0 to β_min, log E_prior[exp(β_min ℓ)], estimated by importance sampling from independent
  prior draws; the Monte Carlo error from each replica's effective sample size (the replicas' estimates treated as
  independent).
  The stepping-stone estimate Σ_k log E_{β_k}[exp((β_{k+1} − β_k) ℓ)] and the bracket that the monotonicity of
  E_β[ℓ] in β gives (left and right Riemann sums) are stored beside it.
* The evidence is checked before it is reported (:func:`pt_evidence_trust`): it is marked not trustworthy, with the
  reason, when a chain made no round trip of the replicas (the ladder never carried a state from the prior end to
  the posterior and back, so the replicas' E_β[ℓ] need not be those of equilibrium), when the value lies outside
  its bracket by more than 3 Monte Carlo standard errors of the bracket (the Hermite correction Σ h²/12 ΔV is then
  not small: a ladder too coarse for the curvature of E_β[ℓ]), or when it differs from the stepping-stone estimate
  by more than 3 combined standard errors.  :func:`log_evidence` returns the flag and the reason, and
  :func:`bnnzoo.sample` warns when it is not trustworthy.

β_min (``tempering={"beta_min": ...}``) defaults to 1 / sd(ℓ) over prior draws (at most 0.1): the likelihood then
changes the hottest replica's log density by about one unit across the prior, so that replica is nearly the prior.

What a run made by ``bnnzoo.sample(..., sampler="pt")`` holds besides the usual groups: ``sample_stats`` of the cold
replica per (chain, draw) (energy, lp, acceptance_rate, step_size, diverging, n_steps as for the other samplers, and
``swap_acceptance``, the mean swap acceptance probability of the neighbour pairs at that draw), and in
``run_config(idata)["engine"]``: ``ladder`` (final β_k), ``initial_ladder``, ``swap_rejection`` (per pair, over
sampling), ``barrier`` (Λ), ``suggested_num_replicas`` (⌈2Λ⌉ + 1), ``round_trips`` (per chain, over sampling),
``step_size`` (per replica), ``mean_loglik`` (E_β[ℓ] per replica), ``beta_min`` and ``beta_min_rule``, ``options``,
and ``log_evidence`` = {"value", "se", "method", "bracket", "bracket_se", "stepping_stone", "trustworthy",
"reason"}, read by :func:`log_evidence`.
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
import xarray as xr
from jax.flatten_util import ravel_pytree
from numpyro import handlers
from numpyro.distributions.transforms import biject_to
from numpyro.infer.util import constrain_fn, potential_energy
from numpyro.primitives import Messenger
from scipy.interpolate import PchipInterpolator

from .. import azcompat
from .._log import Progress, user_stacklevel
from ..models._checks import check_int
from .convert import run_config
from .smc import MIN_RUNS, run_smc_chains

__all__ = ["SplitDensity", "split_density", "PTResult", "parallel_tempering", "geometric_ladder", "respace_ladder",
           "thermodynamic_integration", "pt_evidence_trust", "LogEvidence", "log_evidence", "log_evidence_of",
           "check_options", "run_tempering", "PT_OPTIONS",
           "SMC_OPTIONS", "DEFAULT_NUM_STEPS"]

_logger = logging.getLogger(__name__)

DEFAULT_NUM_STEPS = 16          # largest leapfrog count per iteration (pt) / per mutation step (smc)
PT_OPTIONS = {"num_replicas": 12, "beta_min": None, "adapt_ladder": True, "num_prior_draws": 1000}
SMC_OPTIONS = {"target_ess": 0.5, "num_mcmc_steps": 10, "max_steps": 1000}
_BETA_MIN_CAP = 0.1             # the automatic β_min never exceeds this: the hottest replica stays near the prior
_LADDER_ROUNDS = (0.0375, 0.075, 0.15, 0.3, 0.6)   # warm-up fractions ending the ladder rounds (doubling lengths)
_MASS_START = 0.05                                 # the first mass window starts after the initial transient
_MASS_ENDS = (0.15, 0.3, 0.6, 0.8)                 # warm-up fractions at which the inverse mass is re-estimated
_REJECTION_FLOOR = 1e-6         # keeps the estimated barrier strictly increasing, so it can be inverted
EVIDENCE_TOLERANCE = 3.0        # standard errors: the bracket and stepping-stone checks of the PT evidence


# ----------------------------------------------------------------------------------------------------------------
# prior and likelihood of a NumPyro model, in unconstrained coordinates
# ----------------------------------------------------------------------------------------------------------------

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
        raise ValueError(f"sampler='pt' / 'smc' move with HMC: the model has discrete latent sites {found['discrete']}")
    if not obs:
        raise ValueError("sampler='pt' / 'smc' temper the likelihood: the model has no observed site (obs=) or "
                         "numpyro.factor")
    if not shapes:
        raise ValueError("sampler='pt' / 'smc' need a latent site to sample: the model has none")
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


# ----------------------------------------------------------------------------------------------------------------
# the ladder
# ----------------------------------------------------------------------------------------------------------------

def geometric_ladder(num_replicas: int, beta_min: float) -> np.ndarray:
    """β_k = β_min^{1 − k/(K−1)}, k = 0..K−1: geometric from β_min to 1.

    Parameters
    ----------
    num_replicas : K >= 2.
    beta_min : β_0 in (0, 1).

    Returns
    -------
    (K,) increasing array, last entry exactly 1.
    """
    k = np.arange(num_replicas) / (num_replicas - 1)
    beta = np.exp(np.log(beta_min) * (1.0 - k))
    beta[-1] = 1.0
    return beta


def respace_ladder(beta, rejection) -> tuple[np.ndarray, float]:
    """Re-space a ladder so that every neighbouring pair has the same swap rejection rate (Syed et al. 2022, §5).

    Λ(β_k) = Σ_{j<k} r_j is interpolated by a monotone cubic (PCHIP) in log β and inverted at k Λ / (K − 1); the
    end points stay where they are.

    Parameters
    ----------
    beta : (K,) increasing inverse temperatures.
    rejection : (K−1,) swap rejection rates of the pairs (β_k, β_{k+1}), in [0, 1].

    Returns
    -------
    (new ladder (K,), Λ = Σ r_k, the estimated global communication barrier)
    """
    beta = np.asarray(beta, float)
    r = np.clip(np.nan_to_num(np.asarray(rejection, float), nan=1.0), _REJECTION_FLOOR, 1.0)
    lam = np.concatenate([[0.0], np.cumsum(r)])
    K = beta.size
    targets = lam[-1] * np.arange(K) / (K - 1)
    new = np.exp(PchipInterpolator(lam, np.log(beta))(targets))
    new[0], new[-1] = beta[0], 1.0
    new = np.maximum.accumulate(new)
    return new, float(np.sum(np.clip(np.nan_to_num(np.asarray(rejection, float), nan=1.0), 0.0, 1.0)))


# ----------------------------------------------------------------------------------------------------------------
# the sampler
# ----------------------------------------------------------------------------------------------------------------

class PTState(NamedTuple):
    """State of K replicas × C chains (slot k holds inverse temperature β_k)."""
    x: jax.Array              # (K, C, D) positions
    logdensity: jax.Array     # (K, C) log π_{β_k} (unnormalised)
    grad: jax.Array           # (K, C, D) its gradient
    ell: jax.Array            # (K, C) log-likelihood
    perm: jax.Array           # (K, C) identity of the replica in each slot (for round trips)
    phase: jax.Array          # (K, C) per identity: 0 not yet at the hot end, 1 left the hot end, 2 then reached β = 1
    round_trips: jax.Array    # (C,)
    i: jax.Array              # iteration (DEO parity)
    step_size: jax.Array      # (K,)
    da: tuple                 # dual-averaging state, leaves (K,)
    inv_mass: jax.Array       # (K, D)
    w_n: jax.Array            # Welford count (iterations in the current mass window)
    w_mean: jax.Array         # (K, C, D)
    w_m2: jax.Array           # (K, C, D)
    alpha_sum: jax.Array      # (K−1, C) summed swap acceptance probabilities of all pairs
    alpha_n: jax.Array        # iterations summed
    key: jax.Array


class PTResult(NamedTuple):
    """What :func:`parallel_tempering` returns.

    Attributes
    ----------
    draws : whatever ``post`` returned per chunk, concatenated on the draw axis ({name: (chain, draw, ...)}).
    stats : {energy, lp, accept_prob, diverging, step_size, num_steps, swap_acceptance}: (chain, draw) arrays of the
        cold replica (``swap_acceptance``: the mean over the K − 1 neighbour pairs of the swap acceptance
        probability at that draw).
    ladder : (K,) final inverse temperatures.
    initial_ladder : (K,) the geometric ladder warm-up started from.
    rejection : (K−1,) swap rejection rates over the sampling phase.
    barrier : Λ, the sum of ``rejection``.
    round_trips : (C,) round trips (hottest → coldest → hottest replica) per chain during sampling.
    step_size : (K,) final step size per replica.
    loglik : (K, C, draw) log-likelihood of every replica at the kept draws (for thermodynamic integration).
    timing : {"warmup_s", "sampling_s"}.
    """
    draws: dict
    stats: dict
    ladder: np.ndarray
    initial_ladder: np.ndarray
    rejection: np.ndarray
    barrier: float
    round_trips: np.ndarray
    step_size: np.ndarray
    loglik: np.ndarray
    timing: dict


def _warmup_events(num_warmup: int, adapt_ladder: bool):
    """(boundaries, ladder updates, mass updates, mass window start) as iteration counts of warm-up."""
    W = num_warmup
    ladder = sorted({int(round(f * W)) for f in _LADDER_ROUNDS} - {0}) if adapt_ladder else []
    mass = sorted({int(round(f * W)) for f in _MASS_ENDS} - {0})
    start = int(round(_MASS_START * W))
    mass = [m for m in mass if m > start + 1]
    bounds = sorted(set(ladder) | set(mass) | {start, W} - {0})
    return bounds, set(ladder), set(mass), start


def parallel_tempering(key, logprior: Callable, loglik: Callable, x0, *, num_warmup: int, num_samples: int,
                       thinning: int = 1, ladder=None, adapt_ladder: bool = True, inv_mass=None,
                       target_accept: float = 0.651, num_steps: int = DEFAULT_NUM_STEPS, chunk_size: int | None = None,
                       post: Callable | None = None, progress: bool = False) -> PTResult:
    """Run non-reversible parallel tempering (module docstring) on a density given as prior × likelihood.

    Parameters
    ----------
    key : JAX PRNG key.
    logprior, loglik : callables x (D,) -> scalar (:class:`SplitDensity`).
    x0 : (K, C, D) starting positions of K replicas × C chains.
    num_warmup : iterations of warm-up (step size, mass and ladder tuned), >= 0.
    num_samples : iterations after warm-up; every ``thinning``-th is kept.
    thinning : int >= 1.
    ladder : (K,) increasing inverse temperatures ending at 1 (default: geometric from 1e-3).
    adapt_ladder : re-space the ladder during warm-up from the swap rejection rates.
    inv_mass : (D,) or (K, D) initial diagonal inverse mass (default ones).
    target_accept : the mean HMC acceptance each replica's step size is tuned to, in (0, 1).
    num_steps : L >= 1, the largest number of leapfrog steps per iteration (drawn from ⌈L/2⌉..L).
    chunk_size : kept draws per jitted chunk (default: a tenth of the run).
    post : callable x (C, n, D) -> {name: (C, n, ...)} applied to each chunk of the cold replica's draws (default:
        ``{"x": x}``).
    progress : log progress on the ``bnnzoo`` logger (a bar on a terminal).

    Returns
    -------
    PTResult

    Raises
    ------
    ValueError
        fewer than 2 replicas, or a ladder that is not increasing in (0, 1] with last entry 1.
    """
    import blackjax  # 0.4 s to import: kept off `import bnnzoo` (docs/contract.md, Imports)

    x0 = jnp.asarray(x0)
    K, C, D = x0.shape
    if K < 2:
        raise ValueError(f"parallel tempering needs at least 2 replicas, got {K}")
    beta0 = geometric_ladder(K, 1e-3) if ladder is None else np.asarray(ladder, float)
    if beta0.shape != (K,) or not np.all(np.diff(beta0) > 0) or beta0[0] <= 0 or beta0[-1] != 1.0:
        raise ValueError(f"ladder must be {K} increasing inverse temperatures in (0, 1] ending at 1, got {beta0}")
    n_keep = num_samples // thinning
    chunk = int(chunk_size) if chunk_size else max(1, math.ceil(max(num_warmup, n_keep) / 10))
    post = post if post is not None else (lambda x: {"x": x})
    da_init, da_update, da_final = blackjax.adaptation.step_size.dual_averaging_adaptation(target_accept)
    hmc = blackjax.mcmc.hmc.build_kernel()
    L_max = int(num_steps)
    L_min = max(1, math.ceil(L_max / 2))

    def logdens(beta):
        return lambda x: logprior(x) + beta * loglik(x)

    def value_and_grad_at(x, beta):          # x (K, C, D), beta (K,)
        f = lambda xs, b: jax.vmap(jax.value_and_grad(logdens(b)))(xs)
        return jax.vmap(f)(x, beta)

    ell_of = jax.vmap(jax.vmap(loglik))

    def iteration(state: PTState, beta, adapt, accumulate, count):
        key, k_swap, k_hmc, k_L = jax.random.split(state.key, 4)
        # DEO swaps, from the log-likelihoods of the current states
        log_a = (beta[1:] - beta[:-1])[:, None] * (state.ell[:-1] - state.ell[1:])
        alpha = jnp.exp(jnp.minimum(jnp.nan_to_num(log_a, nan=-jnp.inf), 0.0))           # (K−1, C)
        attempt = (jnp.arange(K - 1) % 2) == (state.i % 2)
        acc = attempt[:, None] & (jax.random.uniform(k_swap, alpha.shape) < alpha)
        zero = jnp.zeros((1, C), bool)
        src = (jnp.arange(K)[:, None] + jnp.concatenate([acc, zero]).astype(jnp.int32)
               - jnp.concatenate([zero, acc]).astype(jnp.int32))

        def take(a):
            return jnp.take_along_axis(a, src.reshape(src.shape + (1,) * (a.ndim - 2)), axis=0)

        x, perm = take(state.x), take(state.perm)
        ld, grad = jax.lax.cond(jnp.any(acc), lambda: value_and_grad_at(x, beta),
                                lambda: (state.logdensity, state.grad))
        # round trips of the replicas' identities: hot end (slot 0) -> cold end (slot K−1) -> hot end
        cols = jnp.arange(C)
        hot, cold = perm[0], perm[K - 1]
        trips = state.round_trips + (count & (state.phase[hot, cols] == 2)).astype(jnp.int32)
        phase = state.phase.at[hot, cols].set(1)
        phase = phase.at[cold, cols].set(jnp.where(phase[cold, cols] == 1, 2, phase[cold, cols]))
        # local HMC moves, one β per slot
        L = L_min + jax.random.randint(k_L, (), 0, L_max - L_min + 1)
        keys = jax.random.split(k_hmc, K * C).reshape(K, C, -1)

        def slot(keys_k, x_k, ld_k, g_k, b, eps, im):
            def chain(kc, xc, lc, gc):
                return hmc(kc, blackjax.mcmc.hmc.HMCState(xc, lc, gc), logdens(b), eps, im, L)
            return jax.vmap(chain)(keys_k, x_k, ld_k, g_k)

        new, info = jax.vmap(slot)(keys, x, ld, grad, beta, state.step_size, state.inv_mass)
        ell_new = ell_of(new.position)
        kinetic0 = 0.5 * jnp.sum(info.momentum ** 2 * state.inv_mass[:, None, :], axis=-1)
        energy = jnp.where(info.is_accepted, info.energy, -new.logdensity + kinetic0)
        # adaptation: step size per replica (dual averaging on the mean acceptance over chains), mass windows
        mean_acc = jnp.mean(jnp.nan_to_num(info.acceptance_rate), axis=1)
        da_new = jax.vmap(da_update)(state.da, mean_acc)
        da = jax.tree.map(lambda n, o: jnp.where(adapt, n, o), da_new, state.da)
        step_size = jnp.where(adapt, jnp.exp(da.log_step_size), state.step_size)
        n1 = state.w_n + 1.0
        delta = new.position - state.w_mean
        w_mean = jnp.where(accumulate, state.w_mean + delta / n1, state.w_mean)
        w_m2 = jnp.where(accumulate, state.w_m2 + delta * (new.position - w_mean), state.w_m2)
        w_n = jnp.where(accumulate, n1, state.w_n)
        out = dict(x=new.position[K - 1], energy=energy[K - 1], lp=new.logdensity[K - 1],
                   accept_prob=info.acceptance_rate[K - 1], diverging=info.is_divergent[K - 1],
                   step_size=jnp.broadcast_to(state.step_size[K - 1], (C,)), num_steps=jnp.broadcast_to(L, (C,)),
                   swap_acceptance=jnp.mean(alpha, axis=0), ell=ell_new)
        state = PTState(new.position, new.logdensity, new.logdensity_grad, ell_new, perm, phase, trips, state.i + 1,
                        step_size, da, state.inv_mass, w_n, w_mean, w_m2, state.alpha_sum + alpha,
                        state.alpha_n + 1.0, key)
        return state, out

    def kept_draw(state, beta, adapt, accumulate, count, thin):
        state, out = iteration(state, beta, adapt, accumulate, count)
        if thin > 1:
            state, _ = jax.lax.scan(lambda s, _: (iteration(s, beta, adapt, accumulate, count)[0], None),
                                    state, None, length=thin - 1)
        return state, out

    @partial(jax.jit, static_argnames=("thin",))
    def run_chunk(state, beta, adapt, accumulate, count, n_active, thin):
        shapes = jax.eval_shape(lambda s: iteration(s, beta, adapt, accumulate, count)[1], state)
        template = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

        def body(s, j):
            return jax.lax.cond(j < n_active, lambda: kept_draw(s, beta, adapt, accumulate, count, thin),
                                lambda: (s, template))

        return jax.lax.scan(body, state, jnp.arange(chunk))

    # host-side steps between chunks, each one compiled program (no eager op-by-op dispatch)
    @jax.jit
    def initial_state(x0, beta, im, key):
        ld, grad = value_and_grad_at(x0, beta)
        eps0 = jnp.full((K,), 0.5 * D ** -0.25, x0.dtype)
        z = partial(jnp.zeros, dtype=x0.dtype)
        return PTState(x0, ld, grad, ell_of(x0), jnp.broadcast_to(jnp.arange(K, dtype=jnp.int32)[:, None], (K, C)),
                       jnp.zeros((K, C), jnp.int32), jnp.zeros((C,), jnp.int32), jnp.asarray(0, jnp.int32), eps0,
                       jax.vmap(da_init)(eps0), jnp.broadcast_to(im, (K, D)), z(()), z((K, C, D)), z((K, C, D)),
                       z((K - 1, C)), z(()), key)

    @jax.jit
    def new_ladder(state, beta):           # states stay, their log densities follow the new β; rates restart
        ld, grad = value_and_grad_at(state.x, beta)
        return state._replace(logdensity=ld, grad=grad, alpha_sum=jnp.zeros_like(state.alpha_sum),
                              alpha_n=jnp.zeros_like(state.alpha_n))

    @jax.jit
    def new_mass(state):                   # each chain's variance over the window, averaged over chains
        n = state.w_n
        var = jnp.mean(state.w_m2 / (n - 1.0), axis=1)
        n_eff = n * C
        im = (n_eff / (n_eff + 5.0)) * var + 1e-3 * (5.0 / (n_eff + 5.0))     # regularised as Stan does
        return state._replace(inv_mass=im, w_n=jnp.zeros_like(n), w_mean=jnp.zeros_like(state.w_mean),
                              w_m2=jnp.zeros_like(state.w_m2))

    @jax.jit
    def restart_step_size(state):
        return state._replace(da=jax.vmap(da_init)(state.step_size))

    @jax.jit
    def end_warmup(state, tuned):
        step = jnp.where(tuned, jax.vmap(da_final)(state.da), state.step_size)
        return state._replace(step_size=step, alpha_sum=jnp.zeros_like(state.alpha_sum),
                              alpha_n=jnp.zeros_like(state.alpha_n), round_trips=jnp.zeros_like(state.round_trips))

    key, k_init = jax.random.split(key)
    beta = jnp.asarray(beta0, x0.dtype)
    im = jnp.ones((D,), x0.dtype) if inv_mass is None else jnp.asarray(inv_mass, x0.dtype)
    state = initial_state(x0, beta, im, k_init)

    def run(state, n, adapt, accumulate, count, thin, bar, collect):
        outs = []
        done = 0
        while done < n:
            m = min(chunk, n - done)
            state, out = run_chunk(state, beta, adapt, accumulate, count, m, thin)
            if collect:                       # whole chunks through post: one compiled shape
                out = {k: np.asarray(v) for k, v in out.items()}
                drawn = {k: np.asarray(v)[:, :m] for k, v in post(np.swapaxes(out.pop("x"), 0, 1)).items()}
                outs.append((drawn, {k: v[:m] for k, v in out.items()}))
            else:
                jax.block_until_ready(state.x)
            done += m
            if bar is not None:
                bar.update(m * thin)
        return state, outs

    bar = Progress(num_warmup + n_keep * thinning, desc="sample: pt", logger=_logger) if progress else None
    if bar is not None:
        bar.phase("warm-up")
    t0 = time.perf_counter()
    bounds, ladder_at, mass_at, mass_start = _warmup_events(num_warmup, adapt_ladder)
    prev = 0
    for b in bounds:
        accumulate = prev >= mass_start and b <= max(mass_at, default=0)
        state, _ = run(state, b - prev, True, accumulate, False, 1, bar, False)
        restart = False
        if b in ladder_at:
            rej = 1.0 - np.asarray(state.alpha_sum).mean(axis=1) / max(float(state.alpha_n), 1.0)
            beta = jnp.asarray(respace_ladder(np.asarray(beta), rej)[0], x0.dtype)
            state = new_ladder(state, beta)
            restart = True
        if b in mass_at and float(state.w_n) > 1:
            state = new_mass(state)
            restart = True
        if restart:
            state = restart_step_size(state)
        prev = b
    state = end_warmup(state, num_warmup > 0)
    t_warm = time.perf_counter() - t0
    t1 = time.perf_counter()
    if bar is not None:
        bar.phase("sampling")
    state, outs = run(state, n_keep, False, False, True, thinning, bar, True)
    if bar is not None:
        bar.close()
    t_samp = time.perf_counter() - t1
    draws = {k: np.concatenate([o[0][k] for o in outs], axis=1) for k in outs[0][0]}
    raw = {k: np.concatenate([o[1][k] for o in outs], axis=0) for k in outs[0][1]}
    ell = np.moveaxis(raw.pop("ell"), 0, -1)                                  # (K, C, draw)
    stats = {k: np.swapaxes(v, 0, 1) for k, v in raw.items()}                # (C, draw)
    rej = 1.0 - np.asarray(state.alpha_sum).mean(axis=1) / max(float(state.alpha_n), 1.0)
    return PTResult(draws, stats, np.asarray(beta, float), np.asarray(beta0, float), rej, float(np.sum(rej)),
                    np.asarray(state.round_trips), np.asarray(state.step_size, float), ell,
                    {"warmup_s": round(t_warm, 4), "sampling_s": round(t_samp, 4)})


# ----------------------------------------------------------------------------------------------------------------
# evidence
# ----------------------------------------------------------------------------------------------------------------

def _mcse_mean(trace) -> tuple[float, float]:
    """(mean, Monte Carlo standard error) of a (chain, draw) trace, the error from ArviZ's ESS of the mean."""
    t = np.asarray(trace, float)
    sd = float(t.std(ddof=1)) if t.size > 1 else float("nan")
    ess = float("nan")
    if t.shape[-1] >= 4 and sd > 0:
        ess = float(np.asarray(azcompat.ess(xr.Dataset({"x": (("chain", "draw"), t)}), method="mean")["x"]))
    if not np.isfinite(ess) or ess <= 0:
        ess = float(t.size)
    return float(t.mean()), sd / math.sqrt(ess) if sd > 0 else 0.0


def _log_mean_exp(w) -> tuple[float, float]:
    """(log mean exp(w), its delta-method standard error for independent w)."""
    w = np.asarray(w, float).ravel()
    m = w.max()
    e = np.exp(w - m)
    mean = e.mean()
    se = e.std(ddof=1) / (math.sqrt(e.size) * mean) if e.size > 1 else float("nan")
    return float(m + math.log(mean)), float(se)


def thermodynamic_integration(ladder, loglik, prior_loglik) -> dict:
    """Log evidence from a tempering ladder (module docstring).

    Parameters
    ----------
    ladder : (K,) increasing inverse temperatures, the last 1.
    loglik : (K, chain, draw) log-likelihood of each replica's draws.
    prior_loglik : (M,) log-likelihood at independent prior draws (the piece from β = 0 to β_0).

    Returns
    -------
    dict with "value" (the corrected trapezoid rule), "se" (its Monte Carlo standard error), "method",
    "trapezoid" (the plain trapezoid rule), "bracket" ([left, right] Riemann sums: log Z lies between them up to
    Monte Carlo error, since E_β[ℓ] increases with β), "bracket_se" (the Monte Carlo standard error of the plain
    trapezoid rule, that of the bracket's midpoint), "stepping_stone" ({"value", "se"}; the se treats the
    weights' autocorrelation as that of ℓ), "mean_loglik" and "var_loglik" (K,), and "end" ({"value", "se"}, the
    β = 0 → β_0 piece).
    """
    beta = np.asarray(ladder, float)
    ell = np.asarray(loglik, float)
    K = beta.size
    end, end_se = _log_mean_exp(beta[0] * np.asarray(prior_loglik, float))
    means, ses = zip(*[_mcse_mean(ell[k]) for k in range(K)])
    means, ses = np.asarray(means), np.asarray(ses)
    var, var_se = zip(*[_mcse_mean((ell[k] - means[k]) ** 2) for k in range(K)])
    var, var_se = np.asarray(var), np.asarray(var_se)
    db = np.diff(beta)
    w = np.zeros(K)
    w[:-1] += db / 2
    w[1:] += db / 2
    c = np.zeros(K)                                # Hermite correction weights: Σ h²/12 (V_k − V_{k+1})
    c[:-1] += db ** 2 / 12
    c[1:] -= db ** 2 / 12
    trapezoid = end + float(np.sum(w * means))
    value = trapezoid + float(np.sum(c * var))
    se_trapezoid = math.sqrt(end_se ** 2 + float(np.sum((w * ses) ** 2)))
    se = math.sqrt(se_trapezoid ** 2 + float(np.sum((c * var_se) ** 2)))
    lower = end + float(np.sum(db * means[:-1]))
    upper = end + float(np.sum(db * means[1:]))
    ss, ss_var = end, end_se ** 2
    for k in range(K - 1):
        lw = db[k] * ell[k]
        v, s = _log_mean_exp(lw)
        frac = _mcse_mean(ell[k])[1] / max(float(ell[k].std(ddof=1)), 1e-300) if ell[k].size > 1 else 1.0
        ss += v
        ss_var += (s * frac * math.sqrt(ell[k].size)) ** 2 if np.isfinite(s) else 0.0
    return {"value": value, "se": se,
            "method": f"thermodynamic integration: trapezoid with Hermite correction over {K} replicas, beta -> 0 "
                      f"end by importance sampling from {np.size(prior_loglik)} prior draws",
            "trapezoid": trapezoid, "bracket": [lower, upper], "bracket_se": se_trapezoid,
            "stepping_stone": {"value": float(ss), "se": math.sqrt(ss_var)},
            "mean_loglik": means.tolist(), "var_loglik": var.tolist(), "end": {"value": end, "se": end_se}}


def pt_evidence_trust(ev: dict, round_trips) -> tuple[bool, str]:
    """Whether a parallel-tempering evidence can be reported (module docstring, the checks).

    Parameters
    ----------
    ev : :func:`thermodynamic_integration`'s result ("value", "se", "bracket", "bracket_se", "stepping_stone").
    round_trips : (C,) round trips of the replicas per chain during sampling.

    Returns
    -------
    (trustworthy, reason) : reason "" when trustworthy, else one line naming every check that failed.
    """
    why = []
    trips = np.asarray(round_trips, int)
    if trips.size == 0 or np.any(trips == 0):
        why.append(f"{int(np.sum(trips == 0))} of {trips.size} chains made no round trip of the replicas (more "
                   f"replicas or a longer run)")
    value, se = float(ev["value"]), float(ev["se"])
    lo, hi = ev["bracket"]
    tol = EVIDENCE_TOLERANCE * float(ev.get("bracket_se", se))
    if not math.isfinite(value) or not lo - tol <= value <= hi + tol:
        why.append(f"{value:.4g} outside its own bracket [{lo:.4g}, {hi:.4g}] (a ladder too coarse)")
    ss, ss_se = float(ev["stepping_stone"]["value"]), float(ev["stepping_stone"]["se"])
    comb = math.hypot(se, ss_se)
    if not abs(value - ss) <= EVIDENCE_TOLERANCE * comb:
        why.append(f"stepping-stone gives {ss:.4g} ± {ss_se:.2g}, {abs(value - ss) / comb:.1f} combined s.e. away")
    return not why, "; ".join(why)


class LogEvidence(tuple):
    """A run's log evidence, as :func:`log_evidence` reads it: unpacks as ``value, se, method``, with the checks'
    outcome beside.

    Attributes
    ----------
    value : log p(Y | X) (natural log, the likelihood's normalising constant included).
    se : its Monte Carlo standard error.
    method : how it was computed.
    trustworthy : whether it passed the checks of its sampler (:func:`pt_evidence_trust`,
        :func:`bnnzoo.inference.smc.smc_evidence_trust`).
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
    """The log marginal likelihood log p(Y | X) that a tempering run stored (``sampler="pt"`` or ``"smc"``).

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
        if the run holds no evidence (a sampler other than "pt" or "smc", or not made by :func:`bnnzoo.sample`).
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
        raise ValueError("this run holds no log evidence: only sampler='pt' and sampler='smc' compute it")
    trust = ev.get("trustworthy")
    reason = str(ev.get("reason", "")) if trust is not None else "not checked (a run stored before the checks)"
    return LogEvidence(float(ev["value"]), float(ev["se"]), str(ev["method"]), bool(trust), reason)


# ----------------------------------------------------------------------------------------------------------------
# bnnzoo.sample's side
# ----------------------------------------------------------------------------------------------------------------

def check_options(sampler: str, options, *, num_chains: int, thinning: int, init) -> dict:
    """The tempering options of ``sampler`` ("pt" or "smc") with their defaults filled in, checked.

    Parameters
    ----------
    sampler : "pt" or "smc".
    options : dict or None: for "pt" the keys of :data:`PT_OPTIONS`, for "smc" those of :data:`SMC_OPTIONS`.
    num_chains, thinning, init : the run's settings (SMC needs two chains, thinning 1 and init "prior").

    Returns
    -------
    dict : every option of the sampler.

    Raises
    ------
    ValueError
        on an unknown option or a bad value.
    """
    if options is not None and not isinstance(options, dict):
        raise ValueError(f"tempering must be a dict of options, got {options!r}")
    defaults = PT_OPTIONS if sampler == "pt" else SMC_OPTIONS
    unknown = [k for k in (options or {}) if k not in defaults]
    if unknown:
        raise ValueError(f"tempering: unknown option(s) {unknown} for sampler={sampler!r}; valid: {list(defaults)}")
    opts = dict(defaults, **(options or {}))
    if sampler == "pt":
        check_int("tempering['num_replicas']", opts["num_replicas"], 2)
        check_int("tempering['num_prior_draws']", opts["num_prior_draws"], 2)
        b = opts["beta_min"]
        if b is not None and (isinstance(b, bool) or not isinstance(b, (int, float, np.number))
                              or not 0 < b < 1):
            raise ValueError(f"tempering['beta_min'] must be a number in (0, 1) or None (automatic), got {b!r}")
        if not isinstance(opts["adapt_ladder"], (bool, np.bool_)):
            raise ValueError(f"tempering['adapt_ladder'] must be True or False, got {opts['adapt_ladder']!r}")
    else:
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


def run_tempering(spec, key, init_params: dict | None = None):
    """Run ``spec.sampler.name`` ("pt" or "smc") for :func:`bnnzoo.sample`.

    Parameters
    ----------
    spec : the run's checked :class:`~bnnzoo.inference.plan.RunSpec`: its model, task and model arguments, the
        chains' sizes (``spec.chains``), the sampler's ``init``, ``num_steps``, ``target_accept`` and ``tempering``
        (:func:`check_options`'s result; ``spec.sampler``), ``exclude`` and ``progress`` (``spec.recording``) and
        ``chunk_size`` (``spec.store``).
    key : JAX PRNG key of the run.
    init_params : {site: (chain, ...)} unconstrained starting values (``init`` given as a dict): every replica of
        chain c starts from row c.

    Returns
    -------
    (samples {site: (chain, draw, ...)} with ``f_test`` when the task has a test set, fields {NumPyro extra-field
    name: (chain, draw)} for :func:`bnnzoo.inference.convert.sample_stats`, extra sample_stats {name: (chain, draw)},
    engine provenance dict)
    """
    sm, c = spec.sampler, spec.chains
    sampler, fn, task, kw, options = sm.name, spec.model, spec.task, spec.model_kwargs, sm.tempering
    num_chains, num_warmup, num_samples, thinning = c.num_chains, c.num_warmup, c.num_samples, c.thinning
    init, num_steps, target_accept, progress = sm.init, sm.num_steps, sm.target_accept, spec.recording.progress
    X, Y = task.X, task.Y
    dens = split_density(fn, (X, Y), kw)
    post_kw = dict(kw, X_test=task.X_test) if task.X_test is not None else dict(kw)
    excluded = set(spec.recording.exclude) | set(dens.obs_names)
    constrain = jax.jit(lambda x: {k: v for k, v in dens.constrain(x, post_kw).items() if k not in excluded})

    def post(x):                                  # (C, n, D) -> sites (C, n, ...)
        x = np.asarray(x)
        C, n = x.shape[:2]
        flat = constrain(x.reshape((C * n,) + x.shape[2:]))
        return {k: np.asarray(v).reshape((C, n) + v.shape[1:]) for k, v in flat.items()}

    L = DEFAULT_NUM_STEPS if num_steps is None else int(num_steps)
    target = (0.8 if sampler == "smc" else 0.651) if target_accept is None else float(target_accept)
    k_prior, k_init, k_run = jax.random.split(key, 3)
    if sampler == "smc":
        out = run_smc_chains(dens, post, key=k_run, k_init=k_init, num_chains=num_chains,
                             num_particles=num_samples, target_ess=float(options["target_ess"]),
                             num_mcmc_steps=int(options["num_mcmc_steps"]), max_steps=int(options["max_steps"]),
                             num_steps=L, target_accept=target, progress=progress)
        _warn_untrustworthy(out[3]["log_evidence"])
        return out
    K = int(options["num_replicas"])
    M = int(options["num_prior_draws"])
    draws = np.asarray(dens.init(k_prior, M + K * num_chains, "prior"))     # one compiled draw for both uses
    prior_x, start_x = draws[:M], draws[M:]
    prior_ell = np.asarray(jax.jit(lambda x: jax.lax.map(dens.loglik, x, batch_size=min(M, 256)))(prior_x), float)
    prior_var = np.var(prior_x, axis=0)
    beta_min = options["beta_min"]
    rule = "given"
    if beta_min is None:
        sd = float(np.std(prior_ell[np.isfinite(prior_ell)])) if np.isfinite(prior_ell).any() else float("nan")
        beta_min = min(_BETA_MIN_CAP, 1.0 / sd) if np.isfinite(sd) and sd > 0 else _BETA_MIN_CAP
        rule = f"1 / sd of the log-likelihood over {M} prior draws (at most {_BETA_MIN_CAP})"
    if init_params is not None:                # every replica of chain c starts from the given values
        start = np.asarray(jax.vmap(lambda p: ravel_pytree(p)[0])(init_params), prior_x.dtype)     # (C, D)
        x0 = np.broadcast_to(start, (K,) + start.shape)
    elif init == "prior":
        x0 = start_x.reshape(K, num_chains, dens.dim)
    else:
        x0 = np.asarray(dens.init(k_init, K * num_chains, init)).reshape(K, num_chains, dens.dim)
    res = parallel_tempering(k_run, dens.logprior, dens.loglik, x0, num_warmup=num_warmup, num_samples=num_samples,
                             thinning=thinning, ladder=geometric_ladder(K, float(beta_min)),
                             adapt_ladder=bool(options["adapt_ladder"]),
                             inv_mass=np.maximum(prior_var, 1e-8), target_accept=target, num_steps=L,
                             chunk_size=spec.store.chunk_size, post=post, progress=progress)
    ev = thermodynamic_integration(res.ladder, res.loglik, prior_ell)
    trust, why = pt_evidence_trust(ev, res.round_trips)
    s = res.stats
    fields = {"diverging": s["diverging"], "adapt_state.step_size": s["step_size"], "num_steps": s["num_steps"],
              "energy": s["energy"], "accept_prob": s["accept_prob"], "potential_energy": -s["lp"]}
    cfg = {"chain_method": "vectorized", "num_replicas": K, "beta_min": float(beta_min), "beta_min_rule": rule,
           "adapt_ladder": bool(options["adapt_ladder"]), "num_steps": L, "target_accept": target,
           "ladder": res.ladder.tolist(), "initial_ladder": res.initial_ladder.tolist(),
           "swap_rejection": res.rejection.tolist(), "barrier": res.barrier,
           "suggested_num_replicas": int(math.ceil(2 * res.barrier)) + 1,
           "round_trips": res.round_trips.tolist(), "step_size": res.step_size.tolist(),
           "log_evidence": {"value": ev["value"], "se": ev["se"], "method": ev["method"], "bracket": ev["bracket"],
                            "bracket_se": ev["bracket_se"], "stepping_stone": ev["stepping_stone"],
                            "trustworthy": trust, "reason": why},
           "mean_loglik": ev["mean_loglik"], "num_prior_draws": M, "timing": res.timing}
    _warn_untrustworthy(cfg["log_evidence"])
    return res.draws, fields, {"swap_acceptance": s["swap_acceptance"]}, cfg


def _warn_untrustworthy(ev: dict) -> None:
    """RuntimeWarning at sampling time when the run's evidence failed its checks."""
    if not ev["trustworthy"]:
        warnings.warn(f"log evidence not trustworthy: {ev['reason']} ({ev['value']:.4g} ± {ev['se']:.2g})",
                      RuntimeWarning, stacklevel=user_stacklevel())
