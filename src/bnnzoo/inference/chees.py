"""ChEES-HMC: jittered HMC tuned across many chains (Hoffman, Radul & Sountsov, AISTATS 2021), as a NumPyro kernel
whose state holds every chain; ``bnnzoo.sample(..., sampler="chees")`` and ``sampler="snaper"`` run it.

NUTS builds each trajectory in a data-dependent loop, so vectorised chains wait for the longest tree of the batch.
Here every chain takes the same number of leapfrog steps in an iteration: after warm-up a diagonal mass matrix M, a
step size ε and a trajectory length T are fixed, and iteration t draws p ~ N(0, M) per chain, takes
L_t = ⌈u_t T / ε⌉ leapfrog steps (u_t the t-th point of the base-2 Halton sequence, the same for every chain and
independent of the state) and accepts by the Metropolis test. Each iteration is an HMC transition that leaves the
posterior invariant, so the chains sample it exactly.

Warm-up couples the chains only through the tuning, which they share:

* M⁻¹: the variance of the positions over windows ending at ``MASS_WINDOW_ENDS`` of warm-up, regularised towards
  10⁻³ as Stan does. The first window pools the chains (they have barely left their starting points, so a chain's
  own variance is far too small); the later windows average each chain's own variance, because the chains of a
  network sit in different readout branches and the variance across chains would measure the distance between
  branches rather than the posterior's width.
* ε: dual averaging (Hoffman & Gelman 2014) of the harmonic mean of the chains' acceptance probabilities towards
  ``TARGET_ACCEPT`` = 0.651, the optimum for HMC (Beskos et al. 2013), restarted after each mass update.
* T: Adam steps up the ChEES criterion E[(‖x' − E x'‖² − ‖x − E x‖²)²] / 4 in the whitened coordinates
  M^{1/2} x, weighted by the acceptance probabilities; the kept T is exp of the mean log T over the second half of
  warm-up.
* T with ``criterion="snaper"``: the same steps up the SNAPER criterion (Sountsov & Hoffman 2022), the ChEES
  criterion projected on the leading principal component of the whitened posterior (learned by CCIPCA across the
  chains). ChEES sums over all coordinates, so in a network the many fast hidden-weight directions choose T; SNAPER
  tunes T on the slowest direction, the readout weights and their branches. Unlike the paper's default, the
  criterion is not divided by a power of T, which chose trajectories too short for the readout.

At least 2 chains are required and 4 or more advised, since the tuning's means and variances are estimated across
them. The chains can be split over devices (``chain_method="sharded"``) and processes: the chunked engine runs the
kernel under ``jax.shard_map`` with ``chain_axis`` set, and the tuning all-gathers the chains so every device
computes the vectorised kernel's tuning. What the two criteria gain over NUTS, and how stable the tuning is between
seeds, is measured on the documentation's Benchmarks page.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.flatten_util import ravel_pytree
from numpyro.infer.mcmc import MCMCKernel
from numpyro.infer.util import initialize_model

from .compilation import compile_cached
from .initialize import _check_valid, init_strategy, initial_params, model_functions

__all__ = ["ChEES", "CheesState", "CheesAdaptState", "halton", "trajectory_growth"]

TARGET_ACCEPT = 0.651
MASS_WINDOW_ENDS = (0.10, 0.25, 0.50)          # fractions of warm-up at which M⁻¹ is re-estimated
_MASS_START = 0.03                              # the first window starts after the initial transient
_DA_GAMMA, _DA_T0, _DA_KAPPA = 0.05, 10.0, 0.75
_ADAM_RATE, _ADAM_B2, _LOG_T_CLIP = 0.05, 0.95, 0.35
_DIVERGENCE = 1000.0
CRITERIA = ("chees", "snaper")
_PC_FACTOR = 8


class CheesAdaptState(NamedTuple):
    """Tuning state: ``step_size`` has the chain axis (it is recorded per draw); the rest is shared by the chains."""
    step_size: jax.Array          # (chain,) the ε of the next iteration (equal for all chains)
    log_step_avg: jax.Array       # dual-averaging state: averaged log ε, H̄, μ, its iteration count
    hbar: jax.Array
    mu: jax.Array
    da_t: jax.Array
    log_T: jax.Array              # log trajectory length, its Adam second moment and step count
    adam_v: jax.Array
    adam_t: jax.Array
    log_T_sum: jax.Array          # Σ log T and the count over the last half of warm-up (the final T)
    log_T_n: jax.Array
    inv_mass: jax.Array           # (D,) diagonal M⁻¹
    w_n: jax.Array                # per-chain Welford accumulators of the positions over the current mass window:
    w_mean: jax.Array             # the count (shared), the (chain, D) means and sums of squared deviations
    w_m2: jax.Array
    pc: jax.Array                 # (D,) SNAPER: running mean of the unnormalised principal component (whitened coords)
    pc_n: jax.Array               # its count


class CheesState(NamedTuple):
    i: jax.Array                  # iteration (shared scalar)
    z: dict                       # unconstrained positions, (chain, ...) per site
    grad: jax.Array               # (chain, D) ∇U at z
    potential_energy: jax.Array   # (chain,)
    energy: jax.Array             # (chain,) Hamiltonian at the end of the iteration
    accept_prob: jax.Array        # (chain,)
    diverging: jax.Array          # (chain,)
    num_steps: jax.Array          # (chain,) leapfrog steps of this iteration
    adapt_state: CheesAdaptState
    rng_key: jax.Array            # (chain, 2)


def halton(i):
    """The i-th point of the base-2 Halton (van der Corput) sequence.

    Parameters
    ----------
    i : int or jax.Array of int
        Index (or indices) i ≥ 1.

    Returns
    -------
    jax.Array
        The points, in (0, 1), with the shape of ``i``.
    """
    i = jnp.asarray(i, jnp.uint32)
    k = jnp.arange(32, dtype=jnp.uint32)
    bits = (i[..., None] >> k) & jnp.uint32(1)
    return jnp.sum(bits.astype(jnp.float32) * jnp.exp2(-(k.astype(jnp.float32) + 1.0)), axis=-1)


def trajectory_growth(num_steps, step_size) -> float:
    """How far the trajectory length was still growing when warm-up ended.

    T is read off the recorded warm-up trace, T_t ≈ L_t ε_t / u_t (L_t = ⌈u_t T_t / ε_t⌉ leapfrog steps, u_t the
    Halton jitter).

    Parameters
    ----------
    num_steps, step_size : array_like, shape (chain, warm-up iteration) or (warm-up iteration,)
        Leapfrog steps and step size of every warm-up iteration (every chain shares them).

    Returns
    -------
    float
        The median T over the last 10 % of warm-up divided by the T kept for sampling (exp of the mean log T over the
        second half): about 1 for a tuning that had settled; NaN for fewer than 20 warm-up iterations.
    """
    n = np.asarray(num_steps, float).reshape(-1, np.shape(num_steps)[-1])[0]
    eps = np.asarray(step_size, float).reshape(-1, np.shape(step_size)[-1])[0]
    W = n.size
    if W < 20:
        return float("nan")
    u = np.asarray(halton(np.arange(1, W + 1)), float)
    log_T = np.log(np.maximum(n * eps, 1e-30) / u)
    return float(np.exp(np.median(log_T[W - max(2, W // 10):]) - np.mean(log_T[W // 2:])))


def _window_bounds(num_warmup: int):
    """Mass-window boundaries [start, end1, end2, end3] (iteration indices); windows shorter than 10 are dropped."""
    ends = [int(f * num_warmup) for f in MASS_WINDOW_ENDS]
    start = int(_MASS_START * num_warmup)
    bounds = [start]
    for e in ends:
        if e - bounds[-1] >= 10:
            bounds.append(e)
    return bounds


LEAPFROG_UNROLL = 1
"""Leapfrog steps per iteration of the trajectory loop (``ChEES(leapfrog_unroll=None)``).  Each iteration of a loop
whose trip count is traced has a fixed cost (on a GPU the host waits for the loop's condition), which k steps per
iteration divide by k (``benchmarks/bench_leapfrog_loop.py``); XLA compiles the unrolled loop differently, so the
draws may differ by rounding, which grows along a trajectory."""


class ChEES(MCMCKernel):
    """ChEES-HMC on the unconstrained sites of a NumPyro ``model``; state and steps are batched over all chains.

    Parameters
    ----------
    model : callable
        The NumPyro model.
    step_size : float or None, default None
        A fixed step size ε (no step-size tuning); None tunes it during warm-up.
    max_leapfrog_steps : int, default 1000
        Cap on the leapfrog steps of one iteration (and so on T / ε); at least 1.
    target_accept : float, default 0.651
        Harmonic-mean acceptance probability the step size is tuned towards, in (0, 1).
    init : {"prior", "uniform"}, default "prior"
        Initial positions: a prior draw per chain, or NumPyro's uniform initialisation in (−2, 2).
    criterion : {"chees", "snaper"}, default "chees"
        The trajectory-length criterion.
    leapfrog_unroll : int or None, default None
        Leapfrog steps per iteration of the compiled trajectory loop (≥ 1); the steps past the trajectory's end in
        the last iteration are computed and discarded, so the trajectory is the same up to rounding (see
        ``LEAPFROG_UNROLL``). None: ``LEAPFROG_UNROLL``.

    Raises
    ------
    ValueError
        If ``criterion``, ``max_leapfrog_steps``, ``target_accept`` or ``leapfrog_unroll`` is out of range.
    """

    sample_field = "z"

    def __init__(self, model, *, step_size: float | None = None, max_leapfrog_steps: int = 1000,
                 target_accept: float = TARGET_ACCEPT, init: str = "prior", criterion: str = "chees",
                 leapfrog_unroll: int | None = None):
        if criterion not in CRITERIA:
            raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
        self._criterion = criterion
        if max_leapfrog_steps < 1:
            raise ValueError(f"max_leapfrog_steps must be >= 1, got {max_leapfrog_steps}")
        if not 0 < target_accept < 1:
            raise ValueError(f"target_accept must lie in (0, 1), got {target_accept!r}")
        if leapfrog_unroll is not None and (not isinstance(leapfrog_unroll, int) or leapfrog_unroll < 1):
            raise ValueError(f"leapfrog_unroll must be an int >= 1 or None, got {leapfrog_unroll!r}")
        self._unroll = leapfrog_unroll
        self._model = model
        self._fixed_step = None if step_size is None else float(step_size)
        self._max_steps = int(max_leapfrog_steps)
        self._target = float(target_accept)
        self._init_strategy = init_strategy(init)
        self._pe_gen = self._pp_gen = self._unravel = None
        self._num_warmup = 0
        self._bounds: list[int] = []
        # the name of the mesh axis when the chains are split over devices by ``jax.shard_map`` (set by the chunked
        # engine): the tuning then gathers every chain's inputs onto every device and sums over the chains there in
        # the vectorised run's order, so a sharded run computes the vectorised run's tuning -- up to rounding (XLA
        # compiles the gathered arithmetic into a different program; float64: equal to 1e-14, tests/perf/test_chains.py)
        self.chain_axis = None

    @property
    def model(self):
        return self._model

    @staticmethod
    def chain_axes(state: CheesState) -> CheesState:
        """Which leaves of ``state`` have the chain axis first (True) and which the chains share (False: the
        iteration count and the tuning).  The chunked engine shards the former over the devices and replicates the
        latter (``chain_method="sharded"``; see ``chain_axis``)."""
        ad = state.adapt_state
        shared = jax.tree.map(lambda _: False, ad)
        return CheesState(
            i=False, z=jax.tree.map(lambda _: True, state.z), grad=True, potential_energy=True, energy=True,
            accept_prob=True, diverging=True, num_steps=True, rng_key=True,
            adapt_state=shared._replace(step_size=True, w_mean=True, w_m2=True))

    def postprocess_fn(self, model_args, model_kwargs):
        return self._pp_gen(*model_args, **model_kwargs)

    # ---------------------------------------------------------------------------------------------------------------
    def init(self, rng_key, num_warmup, init_params, model_args, model_kwargs):
        rng_key = jnp.asarray(rng_key)
        if rng_key.ndim != 2 or rng_key.shape[0] < 2:
            raise ValueError("sampler='chees' tunes across chains: it needs num_chains >= 2 (4 or more advised)")
        C = rng_key.shape[0]
        self._num_warmup = int(num_warmup)
        self._bounds = _window_bounds(self._num_warmup)
        fns = model_functions(self._model, model_args, model_kwargs)
        if fns is None:           # a model outside the fast path (bnnzoo.inference.initialize): NumPyro's own
            keys = jax.vmap(lambda k: jax.random.split(k, 3))(rng_key)
            info, pe_gen, pp_gen, _ = initialize_model(keys[:, 0], self._model, init_strategy=self._init_strategy,
                                                       dynamic_args=True, model_args=model_args,
                                                       model_kwargs=model_kwargs)
            self._pe_gen, self._pp_gen = pe_gen, pp_gen
            z = info.z if init_params is None else init_params
            _, self._unravel = ravel_pytree(jax.tree.map(lambda v: v[0], z))
            return self._start(rng_key, z, model_args, model_kwargs)
        self._pe_gen, self._pp_gen = fns.potential_gen, fns.postprocess_gen
        _, self._unravel = ravel_pytree(fns.prototype)

        # one program for every chain: the starting points, their potential and gradient, the first step size
        # (the model's arguments enter as constants, as in the sampling program: a model may compute shapes from
        # its data, e.g. the data-space reparametrisation from the rank of X)
        def start(rng_key, init_params):
            z, ok = (initial_params(fns, self._model, jax.vmap(lambda k: jax.random.split(k, 3))(rng_key)[:, 0],
                                    self._init_strategy, model_args, model_kwargs) if init_params is None
                     else (init_params, jnp.ones((C,), bool)))
            return self._start(rng_key, z, model_args, model_kwargs), ok

        state, ok = compile_cached(jax.jit(start).lower(rng_key, init_params))(rng_key, init_params)
        _check_valid(ok)
        return state

    def _start(self, rng_key, z, model_args, model_kwargs):
        """The initial state from the chains' starting points ``z`` (unconstrained, chain first)."""
        C = rng_key.shape[0]
        keys = jax.vmap(lambda k: jax.random.split(k, 3))(rng_key)
        x = jax.vmap(lambda t: ravel_pytree(t)[0])(z)
        D = x.shape[1]
        vg = self._value_and_grad(model_args, model_kwargs)
        u, g = vg(x)
        inv_mass = jnp.ones((D,), x.dtype)
        eps = (jnp.asarray(self._fixed_step, x.dtype) if self._fixed_step is not None
               else self._initial_step_size(vg, x, u, g, inv_mass, keys[0, 1]))
        f = lambda v: jnp.asarray(v, x.dtype)  # noqa: E731
        ad = CheesAdaptState(
            step_size=jnp.full((C,), eps, x.dtype), log_step_avg=f(0.0), hbar=f(0.0), mu=jnp.log(10.0 * eps),
            da_t=f(0.0), log_T=jnp.log(eps), adam_v=f(0.0), adam_t=f(0.0), log_T_sum=f(0.0), log_T_n=f(0.0),
            inv_mass=inv_mass, w_n=f(0.0), w_mean=jnp.zeros((C, D), x.dtype), w_m2=jnp.zeros((C, D), x.dtype),
            pc=jax.random.normal(keys[0, 1], (D,), x.dtype), pc_n=f(1.0))
        return CheesState(i=jnp.asarray(0, jnp.int32), z=z, grad=g, potential_energy=u, energy=u,
                          accept_prob=jnp.zeros((C,), x.dtype), diverging=jnp.zeros((C,), bool),
                          num_steps=jnp.zeros((C,), jnp.int32), adapt_state=ad, rng_key=keys[:, 2])

    def _value_and_grad(self, model_args, model_kwargs):
        pe = self._pe_gen(*model_args, **model_kwargs)
        unravel = self._unravel
        return jax.vmap(jax.value_and_grad(lambda x: pe(unravel(x))))

    @staticmethod
    def _leapfrog(vg, x, p, g, eps, inv_mass, n, unroll=1):
        """``n`` leapfrog steps (traced), ``unroll`` of them per loop iteration (the steps past ``n`` discarded)."""
        def one(c):
            x, p, g, _u = c
            p = p - 0.5 * eps * g
            x = x + eps * inv_mass * p
            u, g = vg(x)
            return x, p - 0.5 * eps * g, g, u

        init = (x, p, g, jnp.zeros(x.shape[0], x.dtype))
        if unroll == 1:
            return lax.fori_loop(0, n, lambda _, c: one(c), init)

        def body(i, c):
            for j in range(unroll):
                live = i * unroll + j < n
                c = jax.tree.map(lambda new, old: jnp.where(live, new, old), one(c), c)
            return c

        return lax.fori_loop(0, (n + unroll - 1) // unroll, body, init)

    def leapfrog_unroll(self) -> int:
        """The leapfrog steps per loop iteration this kernel compiles (see ``leapfrog_unroll``)."""
        return LEAPFROG_UNROLL if self._unroll is None else self._unroll

    def _initial_step_size(self, vg, x, u, g, inv_mass, key):
        """The largest ε = 2^-k (k ≥ 0) at which one leapfrog step's harmonic-mean acceptance is ≥ 1/2."""
        p = jax.random.normal(key, x.shape, x.dtype) / jnp.sqrt(inv_mass)

        def accept(eps):
            x1, p1, _, u1 = self._leapfrog(vg, x, p, g, eps, inv_mass, 1)
            dh = (u1 + 0.5 * jnp.sum(inv_mass * p1**2, -1)) - (u + 0.5 * jnp.sum(inv_mass * p**2, -1))
            a = jnp.exp(-jnp.clip(jnp.nan_to_num(dh, nan=jnp.inf), 0.0, 50.0))
            return 1.0 / jnp.mean(1.0 / jnp.maximum(a, 1e-10))

        eps = lax.while_loop(lambda e: (accept(e) < 0.5) & (e > 1e-12), lambda e: 0.5 * e,
                             jnp.asarray(1.0, x.dtype))
        return eps

    # ---------------------------------------------------------------------------------------------------------------
    def sample(self, state, model_args, model_kwargs):
        vg = self._value_and_grad(model_args, model_kwargs)
        ad = state.adapt_state
        x = jax.vmap(lambda t: ravel_pytree(t)[0])(state.z)
        C, D = x.shape
        keys = jax.vmap(lambda k: jax.random.split(k, 3))(state.rng_key)
        eps = ad.step_size[0]
        T = jnp.exp(ad.log_T)
        u_t = halton(state.i + 1)
        n = jnp.clip(jnp.ceil(u_t * T / eps), 1, self._max_steps).astype(jnp.int32)

        p0 = jax.vmap(lambda k: jax.random.normal(k, (D,), x.dtype))(keys[:, 0]) / jnp.sqrt(ad.inv_mass)
        x1, p1, g1, u1 = self._leapfrog(vg, x, p0, state.grad, eps, ad.inv_mass, n, self.leapfrog_unroll())
        kin = lambda p: 0.5 * jnp.sum(ad.inv_mass * p**2, -1)  # noqa: E731
        h0, h1 = state.potential_energy + kin(p0), u1 + kin(p1)
        dh = jnp.nan_to_num(h1 - h0, nan=jnp.inf)
        alpha = jnp.exp(-jnp.clip(dh, 0.0, None))
        diverging = dh > _DIVERGENCE
        acc = jax.vmap(lambda k: jax.random.uniform(k, (), x.dtype))(keys[:, 1]) < alpha
        x_new = jnp.where(acc[:, None], x1, x)
        g_new = jnp.where(acc[:, None], g1, state.grad)
        u_new = jnp.where(acc, u1, state.potential_energy)
        energy = jnp.where(acc, h1, h0)

        warm = state.i < self._num_warmup
        ad_new = lax.cond(warm, lambda: self._adapt(state.i, ad, x, x1, p1, alpha, diverging, u_t, x_new),
                          lambda: ad)
        return CheesState(i=state.i + 1, z=jax.vmap(self._unravel)(x_new), grad=g_new, potential_energy=u_new,
                          energy=energy, accept_prob=alpha, diverging=diverging, num_steps=jnp.full((C,), n),
                          adapt_state=ad_new, rng_key=keys[:, 2])

    @staticmethod
    def _principal_component(i, ad, y):
        """One CCIPCA step (Weng et al. 2003) on the chain-centred whitened states y (chain, D): the running mean of
        E[(yᶜ·v̂) yᶜ], v̂ the current estimate normalised, over a window of i / 8 iterations (Sountsov & Hoffman's
        reference code).  Its direction tends to the leading eigenvector of the whitened covariance; only the
        direction is used."""
        yc = y - jnp.mean(y, 0)
        act = yc @ (ad.pc / (jnp.linalg.norm(ad.pc) + 1e-20))
        new = jnp.mean(act[:, None] * yc, 0)
        pc_n = jnp.minimum(ad.pc_n + 1.0, jnp.maximum(1.0, jnp.floor(i / _PC_FACTOR)))
        return ad.pc + (new - ad.pc) / (pc_n + 1.0), pc_n

    def _adapt(self, i, ad, x0, x1, p1, alpha, diverging, u_t, x_new):
        dtype = x0.dtype
        c_local = x0.shape[0]
        if self.chain_axis is not None:                 # this device's chains only: gather all of them
            x0, x1, p1, alpha, diverging, x_new, w_mean, w_m2 = jax.tree.map(
                lambda v: lax.all_gather(v, self.chain_axis, tiled=True),
                (x0, x1, p1, alpha, diverging, x_new, ad.w_mean, ad.w_m2))
            ad = ad._replace(w_mean=w_mean, w_m2=w_m2)
        ok = ~diverging & jnp.all(jnp.isfinite(x1), -1)
        w = jnp.where(ok, alpha, 0.0)
        n_ok = jnp.sum(ok)

        # step size: dual averaging of the harmonic-mean acceptance
        hm = jnp.where(n_ok > 0, n_ok / jnp.sum(jnp.where(ok, 1.0 / jnp.maximum(alpha, 1e-10), 0.0)), 0.0)
        t = ad.da_t + 1.0
        hbar = (1.0 - 1.0 / (t + _DA_T0)) * ad.hbar + (self._target - hm) / (t + _DA_T0)
        log_eps = ad.mu - jnp.sqrt(t) / _DA_GAMMA * hbar
        wt = t ** (-_DA_KAPPA)
        log_step_avg = wt * log_eps + (1.0 - wt) * ad.log_step_avg
        if self._fixed_step is not None:
            log_eps = log_step_avg = jnp.log(ad.step_size[0])

        # trajectory length: Adam up the ChEES criterion, in whitened coordinates y = M^{1/2} x
        s = 1.0 / jnp.sqrt(ad.inv_mass)
        y0, y1 = x0 * s, jnp.where(ok[:, None], x1 * s, 0.0)
        y0c = y0 - jnp.mean(y0, 0)
        y1c = y1 - jnp.sum(w[:, None] * y1, 0) / (jnp.sum(w) + 1e-20)
        vel = p1 * jnp.sqrt(ad.inv_mass)                                  # dy/dt at the proposal
        if self._criterion == "chees":
            g_c = u_t * jnp.exp(ad.log_T) * (jnp.sum(y1c**2, -1) - jnp.sum(y0c**2, -1)) * jnp.sum(y1c * vel, -1)
        else:
            d = ad.pc / (jnp.linalg.norm(ad.pc) + 1e-20)                  # the slow direction, unit norm
            q0, q1 = y0c @ d, y1c @ d
            g_c = u_t * jnp.exp(ad.log_T) * (q1**2 - q0**2) * q1 * (vel @ d)
        grad = jnp.sum(jnp.where(ok, w * g_c, 0.0)) / (jnp.sum(w) + 1e-20)
        pc, pc_n = self._principal_component(i, ad, x_new * s) if self._criterion == "snaper" else (ad.pc, ad.pc_n)
        adam_t = ad.adam_t + 1.0
        v = _ADAM_B2 * ad.adam_v + (1.0 - _ADAM_B2) * grad**2
        step = jnp.clip(_ADAM_RATE * grad / (jnp.sqrt(v / (1.0 - _ADAM_B2**adam_t)) + 1e-8),
                        -_LOG_T_CLIP, _LOG_T_CLIP)
        good = jnp.isfinite(step)
        log_T = jnp.where(good, ad.log_T + jnp.where(good, step, 0.0), ad.log_T)
        v = jnp.where(good, v, ad.adam_v)
        eps_next = jnp.exp(log_eps)
        log_T = jnp.clip(log_T, log_eps, log_eps + np.log(self._max_steps))
        late = i >= self._num_warmup // 2
        log_T_sum = ad.log_T_sum + jnp.where(late, log_T, 0.0)
        log_T_n = ad.log_T_n + jnp.where(late, 1.0, 0.0)

        # diagonal mass: Welford per chain inside a window, M⁻¹ updated at the window's end
        bounds = jnp.asarray(self._bounds, jnp.int32)
        in_window = (i >= bounds[0]) & (i < bounds[-1]) if len(self._bounds) > 1 else jnp.asarray(False)
        # (each chain its own Welford: chains sitting in different modes -- readout branches -- must not inflate M⁻¹
        # by the distance between the modes; the first window pools them, see the module docstring)
        n_b = ad.w_n + 1.0
        delta = x_new - ad.w_mean
        mean_b = ad.w_mean + delta / n_b
        m2_b = ad.w_m2 + delta * (x_new - mean_b)
        w_n = jnp.where(in_window, n_b, ad.w_n)
        w_mean = jnp.where(in_window, mean_b, ad.w_mean)
        w_m2 = jnp.where(in_window, m2_b, ad.w_m2)
        window_end = in_window & jnp.any(bounds[1:] == i + 1) if len(self._bounds) > 1 else jnp.asarray(False)
        first = i + 1 == bounds[1] if len(self._bounds) > 1 else jnp.asarray(False)
        between = w_n * jnp.sum((w_mean - jnp.mean(w_mean, 0)) ** 2, 0)
        var = jnp.where(first, (jnp.sum(w_m2, 0) + between) / jnp.maximum(w_n * x_new.shape[0] - 1.0, 1.0),
                        jnp.mean(w_m2, 0) / jnp.maximum(w_n - 1.0, 1.0))
        w_n_eff = w_n * x_new.shape[0]                           # draws behind the estimate, all chains
        new_inv_mass = (w_n_eff / (w_n_eff + 5.0)) * var + 1e-3 * (5.0 / (w_n_eff + 5.0))
        inv_mass = jnp.where(window_end, new_inv_mass, ad.inv_mass)

        # at the end of a window: restart the accumulators and the dual averaging (new geometry)
        z0 = jnp.zeros((), dtype)
        last = i + 1 == self._num_warmup
        final_eps = jnp.exp(log_step_avg)
        eps_out = jnp.where(last, final_eps, eps_next)
        log_T_out = jnp.where(last, jnp.clip(log_T_sum / jnp.maximum(log_T_n, 1.0), jnp.log(final_eps),
                                              jnp.log(final_eps) + np.log(self._max_steps)), log_T)
        if self.chain_axis is not None:                 # back to this device's chains
            first_chain = lax.axis_index(self.chain_axis) * c_local
            w_mean, w_m2 = (lax.dynamic_slice_in_dim(v, first_chain, c_local) for v in (w_mean, w_m2))
        return CheesAdaptState(
            step_size=jnp.full_like(ad.step_size, eps_out),
            log_step_avg=jnp.where(window_end, z0, log_step_avg), hbar=jnp.where(window_end, z0, hbar),
            mu=jnp.where(window_end, jnp.log(10.0 * eps_next), ad.mu), da_t=jnp.where(window_end, z0, t),
            log_T=log_T_out, adam_v=v, adam_t=adam_t, log_T_sum=log_T_sum, log_T_n=log_T_n, inv_mass=inv_mass,
            w_n=jnp.where(window_end, z0, w_n), w_mean=jnp.where(window_end, jnp.zeros_like(w_mean), w_mean),
            w_m2=jnp.where(window_end, jnp.zeros_like(w_m2), w_m2), pc=pc, pc_n=pc_n)

