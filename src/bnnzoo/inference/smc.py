"""Adaptive tempered SMC from the prior with HMC mutations; ``bnnzoo.sample(..., sampler="smc")`` runs it.

The sequential Monte Carlo itself is BlackJAX's (``blackjax.adaptive_tempered_smc``: Del Moral, Doucet & Jasra 2006;
docs/theory.md §10): a population of particles drawn from the prior is moved along π_β ∝ p(θ) p(Y | θ)^β from β = 0
to β = 1, each step choosing the next β so the effective sample size of the incremental weights is ``target_ess``
of the particles, resampling (systematic) and mutating every particle by ``num_mcmc_steps`` HMC transitions
(``blackjax.mcmc.hmc``).  Its weights give the log evidence, log Ẑ = Σ_t log mean_i exp((β_t − β_{t−1}) ℓ(θ_i)).

What bnnzoo adds is the tuning of the mutations between steps and the mapping onto a run:

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
:func:`bnnzoo.inference.tempering.log_evidence`.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["tempered_smc", "combine_log_z", "smc_evidence_trust", "run_smc_chains", "MIN_RUNS", "MAX_LOG_Z_SD"]

_logger = logging.getLogger(__name__)

MIN_RUNS = 4            # independent runs needed for a finite-variance error from their spread (Student's t, C − 1 dof)
MAX_LOG_Z_SD = 1.0      # nats: a larger spread of the runs' log Z makes the Jensen bias s²/2 comparable to the error


def tempered_smc(key, logprior: Callable, loglik: Callable, x0, *, target_ess: float = 0.5, num_mcmc_steps: int = 10,
                 num_steps: int = 16, target_accept: float = 0.8, max_steps: int = 1000,
                 progress: bool = False) -> dict:
    """Run C independent adaptive tempered SMC populations from prior draws to β = 1 (module docstring).

    Parameters
    ----------
    key : JAX PRNG key.
    logprior, loglik : callables x (D,) -> scalar (:class:`bnnzoo.inference.tempering.SplitDensity`).
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


def run_smc_chains(dens, post: Callable, *, key, k_init, num_chains: int, num_particles: int, target_ess: float,
                   num_mcmc_steps: int, max_steps: int, num_steps: int, target_accept: float, progress: bool):
    """``sampler="smc"`` for :func:`bnnzoo.sample` (called by :func:`bnnzoo.inference.tempering.run_tempering`).

    Parameters
    ----------
    dens : :class:`bnnzoo.inference.tempering.SplitDensity` of the model.
    post : callable x (C, n, D) -> {site: (C, n, ...)}.
    key, k_init : PRNG keys of the run and of the prior draws.
    num_chains : C independent SMC runs; num_particles : n particles each (the kept draws per chain).
    target_ess, num_mcmc_steps, max_steps, num_steps, target_accept, progress : see :func:`tempered_smc`.

    Returns
    -------
    (samples, fields, extra sample_stats, engine provenance) as
    :func:`bnnzoo.inference.tempering.run_tempering` describes.
    """
    x0 = dens.init(k_init, num_chains * num_particles, "prior").reshape(num_chains, num_particles, dens.dim)
    res = tempered_smc(key, dens.logprior, dens.loglik, x0, target_ess=target_ess, num_mcmc_steps=num_mcmc_steps,
                       num_steps=num_steps, target_accept=target_accept, max_steps=max_steps, progress=progress)
    draws = post(res["particles"])
    s = res["stats"]
    fields = {"diverging": s["diverging"], "adapt_state.step_size": s["step_size"], "num_steps": s["num_steps"],
              "energy": s["energy"], "accept_prob": s["accept_prob"], "potential_energy": -s["lp"]}
    value, se = combine_log_z(res["log_z"])
    trust, why = smc_evidence_trust(res["log_z"])
    cfg = {"chain_method": "vectorized", "num_particles": num_particles, "target_ess": target_ess,
           "num_mcmc_steps": num_mcmc_steps, "num_steps": num_steps, "target_accept": target_accept,
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
    return draws, fields, {}, cfg
