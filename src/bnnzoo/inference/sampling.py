"""``bnnzoo.sample``: the public call that samples a zoo model and returns ArviZ data with named dims and provenance.

``sample`` is a short composition: :func:`bnnzoo.inference.plan.make_spec` checks every argument once and returns
one frozen :class:`~bnnzoo.inference.plan.RunSpec`; one engine draws from it and returns a :class:`Draws` record
(the chunked driver :mod:`bnnzoo.inference.chunked`, NumPyro's ``MCMC``, the exact Gibbs sampler
:mod:`bnnzoo.inference.gibbs_linear`, or the tempering samplers :mod:`bnnzoo.inference.tempering` /
:mod:`bnnzoo.inference.smc`); :func:`inference_groups` turns the draws into ArviZ groups, one function per group
(:mod:`bnnzoo.inference.convert`, :mod:`bnnzoo.inference.predictive`).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
import time
import warnings
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Sequence

import jax
import numpy as np
import xarray as xr
from numpyro import handlers
from numpyro.distributions.transforms import biject_to
from numpyro.infer import HMC, MCMC, NUTS, Predictive

from .. import azcompat
from ..models.fcn_fast import INTERNAL_SITES, fcn_fast
from ..tasks import Task
from .chees import ChEES, trajectory_growth
from .chunked import STAT_FIELDS, run_chunked
from .convert import (EXTRA_FIELDS, constant_data_group, dataset, gibbs_warmup_datasets, jsonable, lead_coords,
                      observed_data_group, posterior_group, predictions_constant_data_group, predictions_group,
                      provenance, run_config, sealed, sample_stats, sample_stats_group, thinned_dataset, versions,
                      warmup_datasets)
from .plan import (CHEES_LIKE, MATMUL_PRECISIONS, REPARAMS, SAMPLERS, TEMPERING, RunSpec, check_int,
                   check_num_steps, default_num_chains, engine_chunk_size, init_strategy, make_spec)
from .predictive import log_likelihood as _log_likelihood
from .predictive import posterior_predictive as _posterior_predictive
from .._log import Progress, interactive
from .predictive import prior_groups
from .units import units_chains
from .gibbs_linear import gibbs_chains
from .initialize import fast_kernel
from .distributed import gather_chains, local_chains
from .health import warn_if_unhealthy
from .store import RunStore, fingerprint
from .tempering import run_tempering
from .warmstart import warm_start_params

__all__ = ["sample", "run_config", "build_kernel", "init_params_from_values", "SAMPLERS", "REPARAMS",
           "MATMUL_PRECISIONS"]

_logger = logging.getLogger(__name__)


HEALTH_WARNINGS = contextvars.ContextVar("bnnzoo_health_warnings", default=True)
"""False while :mod:`bnnzoo.workflows.certify` runs the start families: their health is judged on the whole run."""


@dataclass
class Draws:
    """What an engine hands to the conversion: the draws and their statistics.

    Attributes
    ----------
    samples : {site: (chain, draw, ...)} every recorded site (latent and deterministic), ``f_test`` taken out.
    stats : {name: (chain, draw)} the ``sample_stats`` arrays (:data:`bnnzoo.inference.convert.SAMPLE_STATS`).
    f_test : (chain, draw, test_point, class) the outputs on the test set, or None (no test set, or not recorded).
    engine : the engine's provenance (``run_config(idata)["engine"]``), or None (NumPyro's ``MCMC``).
    thinned : the ``posterior_thinned`` group, or None.
    warmup : the warm-up groups {name: Dataset}, or None.
    """

    samples: dict
    stats: dict
    f_test: np.ndarray | None = None
    engine: dict | None = None
    thinned: xr.Dataset | None = None
    warmup: dict | None = None


def trace_latent_sites(fn, X, Y, kw: dict) -> dict:
    """{name: trace site} of the latent sites of ``fn(X, Y, **kw)`` with the data observed (their supports and shapes;
    :func:`bnnzoo.inference.predictive.latent_sites` gives the names alone)."""
    tr = handlers.trace(handlers.seed(fn, jax.random.PRNGKey(0))).get_trace(X, Y, **kw)
    return {n: site for n, site in tr.items() if site["type"] == "sample" and not site.get("is_observed", False)}


def init_params_from_values(fn, X, Y, kw: dict, values: dict, num_chains: int) -> dict:
    """NumPyro's ``init_params`` (unconstrained, one row per chain) from starting values in the constrained space.

    Parameters
    ----------
    fn : the NumPyro model, called as ``fn(X, Y, **kw)``.
    X, Y, kw : its data and keyword arguments.
    values : {site name: array (chain, ...)}: a value for every latent (unobserved sample) site of the model.
    num_chains : the number of chains (the values' leading axis).

    Returns
    -------
    dict : {site: jax array (chain, ...)} mapped to the unconstrained space by each site's support bijection.

    Raises
    ------
    ValueError
        a latent site without a value, a name that is no latent site, or a value of the wrong shape.
    """
    latent = trace_latent_sites(fn, X, Y, kw)
    missing, unknown = sorted(set(latent) - set(values)), sorted(set(values) - set(latent))
    if missing or unknown:
        raise ValueError(f"init must give a value for every latent site of the model {sorted(latent)}"
                         + (f"; missing {missing}" if missing else "") + (f"; unknown {unknown}" if unknown else ""))
    out = {}
    for n, site in latent.items():
        v = np.asarray(values[n])
        want = (num_chains,) + tuple(np.shape(site["value"]))
        if v.shape != want:
            raise ValueError(f"init[{n!r}] must have shape (chain, ...) = {want}, got {v.shape}")
        out[n] = biject_to(site["fn"].support).inv(jax.numpy.asarray(v, dtype=jax.numpy.result_type(site["value"])))
    return out


def build_kernel(fn, *, sampler="nuts", step_size=None, num_steps=None, target_accept=None, max_tree_depth=10,
                 dense_mass=False, init="prior"):
    """The NUTS, HMC or ChEES-HMC kernel for the NumPyro model ``fn``.

    Parameters
    ----------
    fn : the NumPyro model.
    sampler : "nuts", "hmc", "chees" or "snaper" (see :func:`sample`).
    step_size : float > 0, used as is (no adaptation); None adapts it during warm-up.
    num_steps : int >= 1, HMC only: leapfrog steps per draw, taken with ``trajectory_length=None`` (NumPyro would
        otherwise derive the number of steps from a trajectory length and the adapted step size).
    target_accept : in (0, 1); None means 0.8 for NUTS and HMC (mean acceptance), 0.651 for ChEES / SNAPER (the
        harmonic mean over chains).
    max_tree_depth : int >= 1, NUTS: at most 2**max_tree_depth leapfrog steps per draw; ChEES: the same cap.
    dense_mass : NUTS / HMC: a dense mass matrix.
    init : "prior" (each chain starts from a prior draw), "uniform" (NumPyro's default), a NumPyro ``init_to_*``
        strategy, or a dict of starting values (given to the run as ``init_params``; the kernel then keeps "prior"
        as its own rule).

    Returns
    -------
    A NumPyro ``MCMCKernel``.

    Raises
    ------
    ValueError
        on a bad or inapplicable argument.
    """
    if sampler not in SAMPLERS or sampler in ("gibbs", "units") or sampler in TEMPERING:
        raise ValueError(f"sampler must be one of "
                         f"{[s for s in SAMPLERS if s not in ('gibbs', 'units') and s not in TEMPERING]} "
                         f"(gibbs, units, pt and smc have no NumPyro kernel), got {sampler!r}")
    if step_size is not None and not (np.isfinite(step_size) and step_size > 0):
        raise ValueError(f"step_size must be > 0, got {step_size!r}")
    if target_accept is None:
        target_accept = 0.651 if sampler in CHEES_LIKE else 0.8
    if not 0 < target_accept < 1:
        raise ValueError(f"target_accept must lie in (0, 1), got {target_accept!r}")
    if isinstance(init, dict):   # the run starts from given values (init_params): the kernel's own rule goes unused
        init = "prior"
    if not callable(init) and init not in ("prior", "uniform"):
        raise ValueError(f"init must be 'prior' (a draw from the prior), 'uniform' (NumPyro's default) or a NumPyro "
                         f"init_to_* strategy, got {init!r}")
    check_num_steps(sampler, num_steps)
    if sampler in CHEES_LIKE:
        if dense_mass:
            raise ValueError(f"sampler={sampler!r} tunes its own trajectory length and a diagonal mass: drop "
                             f"dense_mass")
        check_int("max_tree_depth", max_tree_depth, 1)
        return ChEES(fn, step_size=step_size, max_leapfrog_steps=2 ** int(max_tree_depth), target_accept=target_accept,
                     init=init, criterion=sampler)
    common = dict(
        step_size=1.0 if step_size is None else float(step_size),
        adapt_step_size=step_size is None,
        dense_mass=dense_mass,
        target_accept_prob=target_accept,
        init_strategy=init_strategy(init),
    )
    if sampler == "nuts":
        check_int("max_tree_depth", max_tree_depth, 1)
        return fast_kernel(NUTS)(fn, max_tree_depth=max_tree_depth, **common)
    return fast_kernel(HMC)(fn, num_steps=int(num_steps), trajectory_length=None, **common)


def _store_manifest(spec: RunSpec, sampler_cfg: dict, chunk_size: int, **extra) -> dict:
    """The identity of a run with a store (``run.json``): its settings, the task's provenance, ``extra``, and a
    fingerprint of those and of the data and starting values; a resume must match it."""
    task = spec.task
    ident = dict(model=spec.name, model_kwargs=jsonable(spec.model_kwargs), sampler=jsonable(sampler_cfg),
                 seed=spec.seed, num_chains=spec.num_chains, num_warmup=spec.num_warmup,
                 num_samples=spec.num_samples, thinning=spec.thinning, chunk_size=chunk_size,
                 exclude=list(spec.exclude), site_thinning=jsonable(spec.site_thinning or {}),
                 reparam=list(spec.reparam), warm_start=spec.warm_start,
                 **({"site_means": jsonable(spec.site_means)} if spec.site_means else {}),
                 task=jsonable(task.meta), **extra)
    arrays = [task.X, task.Y] + ([task.X_test] if task.X_test is not None else [])
    if isinstance(spec.init, dict):         # the starting values are part of the run's identity
        arrays += [np.asarray(spec.init[k]) for k in sorted(spec.init)]
    return dict(ident, fingerprint=fingerprint(ident, arrays), versions=versions())


def _draw_chunked(spec: RunSpec, kernel, key_run, key_pred, init_params) -> Draws:
    """The chunked driver (:mod:`bnnzoo.inference.chunked`): every sampler with a NumPyro kernel when the plan says
    so (ChEES / SNAPER, sharded chains, the long-run options)."""
    task, kw, num_chains, thinning = spec.task, spec.model_kwargs, spec.num_chains, spec.thinning
    store, exclude, site_thinning, init = spec.store, spec.exclude, spec.site_thinning, spec.init
    X, Y = task.X, task.Y
    sampler_cfg = dict(sampler=spec.sampler, step_size=spec.step_size, num_steps=spec.num_steps,
                       target_accept=spec.target_accept, max_tree_depth=spec.max_tree_depth,
                       dense_mass=spec.dense_mass, init=spec.init_summary())
    n_dev = jax.local_device_count()
    n_proc, proc = jax.process_count(), jax.process_index()
    init_keys = jax.random.split(key_run, num_chains) if num_chains > 1 else key_run
    chain_method, reparam = spec.chain_method, spec.reparam
    chain0, n_local = 0, num_chains
    if n_proc > 1:                         # this process's share of the chains (bnnzoo.inference.distributed)
        chain0, n_local = local_chains(num_chains)
        if sampler_cfg["sampler"] not in CHEES_LIKE:  # coupled chains: every process initialises all of them, one
            init_keys = init_keys[chain0:chain0 + n_local] if n_local > 1 else init_keys[chain0]  # program runs
        if store is not None:                         # over all processes' devices (chunked.run_chunked)
            store = Path(store) / f"process_{proc}"
    chunk_size = engine_chunk_size(spec.chunk_size, spec.num_samples // thinning, store, site_thinning)
    site_means = spec.site_means
    post_kw = dict(kw, X_test=task.X_test) if task.X_test is not None else dict(kw)

    if reparam:
        cond_fn = partial(fcn_fast, integrate_readout="readout" in reparam, data_space="data_space" in reparam,
                          conditional=True)

        def make_post(_kernel):
            def one(zc, cid, draw):
                k = jax.random.fold_in(jax.random.fold_in(key_pred, draw + 1), cid)
                tr = handlers.trace(handlers.seed(handlers.substitute(cond_fn, data=zc), k)).get_trace(
                    X, Y, **post_kw)
                return {n: site["value"] for n, site in tr.items()
                        if site["type"] in ("sample", "deterministic") and not site.get("is_observed", False)
                        and n not in INTERNAL_SITES}

            return lambda z, chain_ids, draw: jax.vmap(one, in_axes=(0, 0, None))(z, chain_ids, draw)
    else:
        def make_post(k):
            pp = k.postprocess_fn((X, Y), post_kw)
            return lambda z, chain_ids, draw: jax.vmap(pp)(z)

    ws_timing = {"warm_start_s": 0.0}
    if init_params is not None and n_proc > 1 and sampler_cfg["sampler"] not in CHEES_LIKE:   # this process's chains
        init_params = jax.tree.map(lambda v: v[chain0:chain0 + n_local], init_params)
    if init_params is not None and np.ndim(init_keys) == 1:      # one chain: the kernel takes unbatched values
        init_params = jax.tree.map(lambda v: v[0], init_params)
    if spec.warm_start:
        n_init = len(init_keys) if init_keys.ndim == 2 else 1      # every chain's keys for coupled multi-process
        init_params = warm_start_params(kernel.model, (X, Y), kw, init_keys, n_init,
                                        init_strategy(init), spec.warm_start,
                                        timing=ws_timing)

    run_store, manifest = None, None
    if store is not None:
        extra = dict(process_index=proc, process_count=n_proc) if n_proc > 1 else {}
        manifest = _store_manifest(spec, sampler_cfg, chunk_size, **extra)
        run_store = RunStore(store)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="There are not enough devices")
        res = run_chunked(kernel, model_args=(X, Y), model_kwargs=kw, make_post=make_post, init_keys=init_keys,
                          num_chains=n_local, chain_offset=chain0, num_warmup=spec.num_warmup,
                          num_samples=spec.num_samples, thinning=thinning, chunk_size=chunk_size,
                          chain_method=chain_method, init_params=init_params, exclude=exclude,
                          site_thinning=site_thinning, site_means=site_means, store=run_store, resume=spec.resume,
                          manifest=manifest,
                          progress=spec.progress)
    timing = dict(res.timing, **ws_timing)
    if n_proc > 1:                         # every process gets all chains, in chain order
        warm_t = res.warmup.get("time")
        res = dataclasses.replace(
            res, samples=gather_chains(res.samples), stats=gather_chains(res.stats),
            thinned=gather_chains(res.thinned),
            warmup=dict(gather_chains({k: v for k, v in res.warmup.items() if k != "time"}),
                        **({} if warm_t is None else {"time": warm_t})))
    cfg = dict(chain_method=chain_method, chunk_size=chunk_size, store=None if spec.store is None else str(spec.store),
               exclude=list(exclude), site_thinning=dict(site_thinning or {}), site_means=dict(site_means),
               reparam=list(reparam),
               warm_start=spec.warm_start, n_devices=n_dev, resumed_from_block=res.resumed_from_block,
               n_processes=n_proc, process_index=proc,
               timing={k: round(v, 4) for k, v in timing.items()})
    if res.store_versions is not None:      # a resume under other library versions: both are on record
        cfg["store_versions"] = res.store_versions

    samples = dict(res.samples)
    f_test = samples.pop("f_test", None)
    warmup = None
    if res.warmup:
        warmup = warmup_datasets(res, spec.site_dims)
        if spec.sampler in CHEES_LIKE:
            _check_trajectory_settled(spec.sampler, res.warmup, cfg)
    return Draws(samples=samples, stats=sample_stats({src: res.stats[stat] for src, stat in STAT_FIELDS.items()}),
                 f_test=f_test, engine=cfg,
                 thinned=thinned_dataset(res, spec.site_dims, spec.site_means) if res.thinned else None,
                 warmup=warmup)


def _draw_in_memory(spec: RunSpec, chains) -> Draws:
    """The samplers that run all chains in memory with their own loop: ``chains`` is
    :func:`bnnzoo.inference.gibbs_linear.gibbs_chains` (the exact blocked Gibbs sampler of the linear nets) or
    :func:`bnnzoo.inference.units.units_chains` (unit-wise moves with the readout integrated out); both return
    (samples, stats, info) with the kernels' block means in ``info``."""
    task = spec.task
    extra = {}
    if chains is units_chains:            # its own blocks: a store, resume, and starting values
        chunk = engine_chunk_size(spec.chunk_size, spec.num_samples // spec.thinning, spec.store, {})
        extra = dict(init=spec.init, chunk_size=chunk, resume=bool(spec.resume))
        if spec.store is not None:
            extra.update(store=RunStore(spec.store),
                         manifest=_store_manifest(spec, dict(sampler="units", init=spec.init_summary()), chunk))
    samples, stats, info = chains(
        task.X, task.Y, num_chains=spec.num_chains, num_warmup=spec.num_warmup, num_samples=spec.num_samples,
        thinning=spec.thinning, seed=spec.seed, X_test=task.X_test, exclude=spec.exclude, progress=spec.progress,
        kernel_means=spec.site_means, **extra, **{k: v for k, v in spec.model_kwargs.items() if k != "X_test"})
    f_test = samples.pop("f_test", None)
    kernels = SimpleNamespace(thinned=info["kernel_means"], thinned_draws=info["kernel_draws"])
    engine = {"chain_method": spec.chain_method, "timing": info["timing"]}
    if "kernel" in info:                                  # the units sampler's acceptance and proposal settings
        engine.update(units=info["kernel"], chunk_size=info["chunk_size"],
                      store=None if spec.store is None else str(spec.store),
                      resumed_from_block=info["resumed_from_block"])
    return Draws(samples=samples, stats=stats, f_test=f_test, engine=engine,
                 thinned=thinned_dataset(kernels, spec.site_dims, spec.site_means) if kernels.thinned else None,
                 warmup=gibbs_warmup_datasets(info) if spec.num_warmup else None)


def _draw_tempering(spec: RunSpec, key_run, init_params) -> Draws:
    """Parallel tempering or tempered SMC (:mod:`bnnzoo.inference.tempering`, :mod:`bnnzoo.inference.smc`)."""
    samples, fields, extra_stats, cfg = run_tempering(
        spec.sampler, spec.model, spec.task, spec.model_kwargs, key=key_run, num_chains=spec.num_chains,
        num_warmup=spec.num_warmup, num_samples=spec.num_samples, thinning=spec.thinning, init=spec.init,
        num_steps=spec.num_steps, target_accept=spec.target_accept, chunk_size=spec.chunk_size,
        exclude=spec.exclude, progress=spec.progress, options=spec.tempering, init_params=init_params)
    f_test = samples.pop("f_test", None)
    return Draws(samples=samples, stats=dict(sample_stats(fields), **extra_stats), f_test=f_test,
                 engine=dict(cfg, options=spec.tempering))


def _draw_mcmc(spec: RunSpec, kernel, key_run, key_pred, init_params) -> Draws:
    """NumPyro's ``MCMC`` (NUTS / HMC without the chunked driver's options); the test-set outputs by
    ``Predictive`` from the draws."""
    task, kw, C = spec.task, spec.model_kwargs, spec.num_chains
    # NumPyro's bar redraws itself with carriage returns: drawn on a terminal only; elsewhere its loop runs as one
    # program, so the log says when it starts and when it ends
    bar = bool(spec.progress) and interactive()
    steps = spec.num_warmup + spec.num_samples
    lines = Progress(steps, desc="sample", logger=_logger) if spec.progress and not bar else None
    mcmc = MCMC(kernel, num_warmup=spec.num_warmup, num_samples=spec.num_samples, num_chains=C,
                thinning=spec.thinning, chain_method=spec.chain_method, progress_bar=bar)
    try:
        if lines is not None:
            lines.stage(f"{spec.sampler}, {C} chain(s) in NumPyro's own loop (no count until it ends)")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="There are not enough devices")
            mcmc.run(key_run, task.X, task.Y, extra_fields=EXTRA_FIELDS, init_params=(
                None if init_params is None else init_params if C > 1
                else jax.tree.map(lambda v: v[0], init_params)), **kw)
        if lines is not None:
            lines.update(steps)
    finally:
        if lines is not None:
            lines.close()
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    fields = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    f_test = None
    if task.X_test is not None:
        pred = Predictive(spec.model, posterior_samples=mcmc.get_samples(), return_sites=["f_test"])
        f_test = np.asarray(pred(key_pred, task.X, task.Y, **dict(kw, X_test=task.X_test))["f_test"])
        f_test = f_test.reshape(next(iter(samples.values())).shape[:2] + f_test.shape[1:])
    return Draws(samples=samples, stats=sample_stats(fields), f_test=f_test)


def inference_groups(spec: RunSpec, draws: Draws, key_pred) -> dict:
    """The ArviZ groups of a run, one function per group (:mod:`bnnzoo.inference.convert`,
    :mod:`bnnzoo.inference.predictive`)."""
    task, kw = spec.task, spec.model_kwargs
    groups = {"posterior": posterior_group(spec, draws), "sample_stats": sample_stats_group(spec, draws),
              "observed_data": observed_data_group(spec), "constant_data": constant_data_group(spec)}
    lead, coords = lead_coords(draws)
    y_dims = {"y": ["point", "class"]}
    if spec.log_likelihood:
        ll = _log_likelihood(spec.model, spec.entry, draws.samples, task.X, task.Y, kw)
        groups["log_likelihood"] = dataset({"y": ll}, y_dims, lead, coords)
    if spec.posterior_predictive:
        y_pp = _posterior_predictive(spec.model, spec.entry, draws.samples, task.X, task.Y, kw,
                                     jax.random.fold_in(key_pred, 1 << 30))
        groups["posterior_predictive"] = dataset({"y": y_pp}, y_dims, lead, coords)
    if spec.prior_predictive:
        groups.update(prior_groups(spec.model, task.X, task.Y, kw, jax.random.fold_in(key_pred, (1 << 30) + 1),
                                   len(coords["chain"]), len(coords["draw"]), spec.site_dims, exclude=spec.exclude))
    if draws.thinned is not None:
        groups["posterior_thinned"] = draws.thinned
    if draws.warmup is not None:
        groups.update(draws.warmup)
    if task.X_test is not None and draws.f_test is None:
        warnings.warn("the test-set output f_test was not recorded (excluded, or not computable): no predictions "
                      "group", RuntimeWarning, stacklevel=3)
    elif task.X_test is not None:
        groups["predictions"] = predictions_group(spec, draws)
        groups["predictions_constant_data"] = predictions_constant_data_group(spec)
    return groups


TRAJECTORY_GROWTH_WARN = 2.0


def _check_trajectory_settled(sampler, warmup, engine_cfg):
    """Warn when ChEES / SNAPER's trajectory length was still growing as warm-up ended.

    The ratio of the trajectory length over the last 10 % of warm-up to the length kept for sampling
    (:func:`bnnzoo.inference.chees.trajectory_growth`) is stored as
    ``run_config(idata)["engine"]["trajectory_growth"]``;
    above :data:`TRAJECTORY_GROWTH_WARN` the tuning was still heading elsewhere (the kept length is then too short
    and the slow sites mix poorly) or the length drifts without settling, so a warning asks for a check of the slow
    sites' ESS.
    """
    g = trajectory_growth(warmup["num_steps"], warmup["step_size"])
    engine_cfg["trajectory_growth"] = g
    if g > TRAJECTORY_GROWTH_WARN:
        warnings.warn(f"sampler={sampler!r}: the trajectory length had not settled when warm-up ended (its last 10 % "
                      f"ran at {g:.1f}x the length kept for sampling): check the ESS of the slow sites (readout "
                      f"weights); a longer warm-up (num_warmup) may give longer trajectories and better mixing",
                      RuntimeWarning, stacklevel=3)


def sample(model, task: Task, *, num_chains: int | None = None, num_warmup: int = 500, num_samples: int = 500,
           sampler: str = "auto", seed: int = 0, thinning: int = 1, record: str | Sequence[str] | None = None,
           progress: bool = True, chain_method: str = "auto", step_size: float | None = None,
           num_steps: int | None = None, target_accept: float | None = None, max_tree_depth: int = 10,
           dense_mass: bool = False, init: str | dict = "prior", log_likelihood: bool = False,
           posterior_predictive: bool = False, prior_predictive: bool = False,
           dims: dict | None = None, chunk_size: int | None = None, store=None, resume: bool = False,
           exclude: Sequence[str] = (), site_thinning: dict | None = None, reparam: Sequence[str] | None = (),
           warm_start: int = 0, matmul_precision: str | None = "highest",
           tempering: dict | None = None, **model_kwargs):
    """Sample the posterior of ``model`` on ``task`` and return it as ArviZ data.

    :func:`bnnzoo.sample` is this function with ``certify`` (runs from several start families compared on their
    populations, :mod:`bnnzoo.workflows.certify`) added.

    Parameters
    ----------
    model : str, ZooEntry or callable
        A zoo entry name (``bnnzoo list``), a :class:`~bnnzoo.models.ZooEntry`, or any NumPyro model called as
        ``model(X, Y, **model_kwargs)``.
    task : Task
        The data (:class:`~bnnzoo.tasks.Task`): X (point, input), Y (point, class), optional test set.
    num_chains : int or None
        Chains; None: the device's default (:data:`~bnnzoo.inference.plan.DEFAULT_CHAINS`: 4 on a CPU, 64 on a
        GPU), logged when the run starts and recorded in the provenance (``num_chains_default``).
    num_warmup, num_samples, thinning : int
        MCMC sizes (>= 1, >= 0, >= 1, >= 1); each chain keeps num_samples // thinning draws.
    sampler : str
        "auto" (default): the fastest sampler the performance benchmark found for the run at hand
        (:func:`bnnzoo.inference.plan.choose_sampler`: for two or more chains the entry's ``auto_sampler``,
        "snaper" on every entry but the attention head's "chees"; "nuts" for one chain, a sequential chain method,
        a dense mass or a ``max_tree_depth`` other than 10; "units" for a certified run of the one-hidden-layer
        sigmoidal net on orthogonal inputs); the run's attributes name the sampler it picked.  Or
        one of the samplers the entry offers (``ZooEntry.samplers``): "nuts" (adaptive NUTS); "hmc" (fixed
        ``num_steps`` leapfrog steps, required; give ``step_size`` to fix the step too); "gibbs" (the exact blocked
        Gibbs sampler of the linear fully-connected nets, :mod:`bnnzoo.inference.gibbs_linear`: same sites and
        dims, ``num_warmup`` counts sweeps, chains one after the other in memory, no HMC settings or long-run
        options); "units" (unit-wise Metropolis–Hastings moves of one neuron's preactivations with the readout
        integrated out, :mod:`bnnzoo.inference.units`: exact for the one-hidden-layer fully-connected nets with the
        non-lazy readout on orthogonal inputs, any φ and m; moves units between codes; ``num_warmup`` counts sweeps,
        chains batched in memory from prior starts or given ``W1``, no HMC settings or long-run options; sample_stats
        ``acceptance_rate`` and ``code_change_rate`` per sweep); "chees" (ChEES-HMC, :mod:`bnnzoo.inference.chees`: jittered HMC whose step size, trajectory length
        and diagonal mass are tuned across the chains during warm-up, then fixed; needs num_chains >= 2, runs
        through the chunked driver; its readout weights can mix slowly: check their ESS before reading branches);
        "snaper" (the same sampler with the trajectory length tuned on the leading
        principal component of the whitened posterior, its slowest direction).  The docs compare their speed.
        Tempering samplers (:mod:`bnnzoo.inference.tempering`, :mod:`bnnzoo.inference.smc`; options in
        ``tempering``; in memory on one device, no ``step_size``, ``dense_mass``, ``max_tree_depth``, long-run
        options or ``warm_start``): "pt" (non-reversible parallel tempering over the likelihood temperature, the
        cold replica's draws kept, the ladder adapted during warm-up; ``chunk_size`` sets its jitted chunks);
        "smc" (BlackJAX's adaptive tempered SMC from the prior with HMC mutations: each chain is an independent
        SMC run whose ``num_samples`` particles are its draws; ``num_warmup`` is not used, ``thinning`` must be 1,
        ``init`` "prior", two or more chains).  Both store the log evidence with its Monte Carlo error in
        ``run_config(idata)["engine"]["log_evidence"]`` (:func:`bnnzoo.inference.tempering.log_evidence`).
    seed : int
        PRNG seed (>= 0).  The same seed gives the same draws with and without ``chunk_size`` / ``store``; the chain
        methods agree up to float rounding (:mod:`bnnzoo.inference.plan`).
    record : str, sequence of str, or None
        Extra sites to record; None: the entry's default (``ZooEntry.record``; the fully-connected nets:
        "summaries", every unit's class means and mean square and what each draw's D_LR / NC1 / target CKA need, of
        every layer, plus, through the chunked driver, the kernels ``K``/``Kz`` as means over blocks of draws in
        ``posterior_thinned``, :data:`~bnnzoo.inference.plan.KERNEL_BATCHES`), () for nothing extra.  "z" (or
        ("z",)) adds the preactivations of every layer (neuron, point) at every draw, "z1" those of the first:
        memory grows as N·P per draw.
    progress : bool
        Report progress: a bar when stderr is a terminal, otherwise INFO lines on the ``bnnzoo`` logger.
    chain_method : str
        "auto": the chains split across the local devices ("sharded") when there are several and num_chains is a
        multiple of their number, otherwise batched on one device ("vectorized"); "vectorized"; "sharded" (num_chains a multiple of the device count);
        "sequential" (NumPyro, one chain after the other; not with the long-run options).
    step_size : float or None
        Fixed leapfrog step (no adaptation); None adapts it.
    num_steps : int or None
        HMC: leapfrog steps per draw (required); "pt" / "smc": the most leapfrog steps per HMC transition, each
        iteration drawing from num_steps/2..num_steps (default 16).
    target_accept : float or None
        NUTS / HMC: mean acceptance (default 0.8); ChEES / SNAPER: harmonic-mean acceptance (default 0.651); "pt":
        mean acceptance of each replica (default 0.651); "smc": of the mutations (default 0.8: their step size is
        set once per tempering step, not averaged over a warm-up, so it keeps a margin against divergences).
    max_tree_depth : int
        NUTS: at most 2**max_tree_depth leapfrog steps per draw; ChEES / SNAPER: the same cap per iteration.
    dense_mass : bool
        NUTS / HMC: adapt a dense mass matrix.
    init : str, callable or dict
        "prior" (each chain starts from a prior draw), "uniform" (NumPyro's default, uniform in (-2, 2)), one of
        NumPyro's ``init_to_*`` strategies (e.g. ``numpyro.infer.init_to_median()``; HMC samplers only), or a
        dict {site name: array (chain, ...)} giving every latent site's starting value for each chain, in the
        constrained space (the values a posterior draw holds); not with sampler="gibbs", ``reparam`` or
        ``warm_start``.
    log_likelihood : bool
        Add the pointwise log-likelihood group ``log_likelihood`` {y: (chain, draw, point, class)} (large).
    posterior_predictive : bool
        Add ``posterior_predictive`` {y: (chain, draw, point, class)}: y drawn from the likelihood at each
        posterior draw (for ``az.plot_ppc`` / ``plot_ppc_dist`` and, with ``log_likelihood``, LOO-PIT; see
        :mod:`bnnzoo.azcompat`).
    prior_predictive : bool
        Add ``prior`` (every site, num_chains × kept draws independent prior draws) and ``prior_predictive``
        {y: (chain, draw, point, class)}.
    dims : dict or None
        Dims of the sites of a custom model (zoo entries know theirs; plates name them otherwise).
    chunk_size : int or None
        Kept draws per jitted chunk of the chunked driver (:mod:`bnnzoo.inference.chunked`; device memory holds one
        chunk).  Default: all draws, or 100 with a store.
    store : path or None
        A folder: every chunk is written there as NetCDF with a sampler-state checkpoint after it.
    resume : bool
        Continue the run in ``store``; the result equals the uninterrupted run.
    exclude : sequence of str
        Sites not recorded at all (e.g. ("W1",) for a big first layer).
    site_thinning : dict or None
        {site: k}: record that site on every k-th kept draw only (group ``posterior_thinned``, dim
        ``draw_<site>`` holding the kept-draw indices); k must divide ``chunk_size``.
    reparam : sequence of str
        Reparametrisations the entry offers (``ZooEntry.reparams``): "readout" (readout integrated out, drawn from
        its Gaussian conditional) and/or "data_space" (first layer sampled as preactivations on the training
        inputs); the posterior is unchanged (:mod:`bnnzoo.models.fcn_fast`).
    warm_start : int
        Adam steps on the potential energy from each chain's starting point before warm-up (0: off).
    matmul_precision : str or None
        float32 matrix-product precision while sampling (``jax.default_matmul_precision``): "highest" (default:
        true float32) keeps the posterior exact on GPUs, whose JAX default rounds float32 products to
        TensorFloat32; None leaves JAX's setting alone.  No effect on CPU.
    tempering : dict or None
        Options of sampler="pt": ``num_replicas`` (12), ``beta_min`` (None: 1 / sd of the log-likelihood over prior
        draws, at most 0.1), ``adapt_ladder`` (True), ``num_prior_draws`` (1000, for β_min and the evidence's β → 0
        end); of sampler="smc": ``target_ess`` (0.5), ``num_mcmc_steps`` (10 HMC transitions per particle and
        step), ``max_steps`` (1000 tempering steps at most).  None: the defaults.
    **model_kwargs
        Model arguments; they override the entry's defaults (e.g. width=, temperature=).

    Several processes (hosts) after ``jax.distributed.initialize`` (:mod:`bnnzoo.inference.distributed`): call
    ``sample`` with the same arguments in every process; the chains are split over the processes (not the Gibbs
    sampler; num_chains a multiple of the process count; ChEES / SNAPER always sharded over all processes'
    devices), a store gets one sub-folder per process, and every process returns the whole run.

    Returns
    -------
    InferenceData (ArviZ 0.x) or DataTree (ArviZ 1.x)
        Groups ``posterior`` (named dims), ``sample_stats`` (diverging, step_size, n_steps, tree_depth, energy,
        acceptance_rate, lp), ``observed_data`` (y), ``constant_data`` (X, labels), ``predictions`` (f on X_test)
        and ``predictions_constant_data`` when the task has a test set, the optional groups above, and warm-up
        groups from the chunked driver.  Attributes carry the run's full provenance (:func:`run_config`).

    Raises
    ------
    ValueError
        On any bad argument, before anything compiles.
    """
    chains_default = None
    if num_chains is None:
        num_chains, chains_default = default_num_chains()
    call = dict(locals())                    # the arguments (model_kwargs passed on separately)
    call.pop("chains_default")
    call.pop("model_kwargs")
    t_start = time.time()
    spec = make_spec(model, task, model_kwargs=model_kwargs,
                     **{k: v for k, v in call.items() if k not in ("model", "task")})
    if chains_default is not None:        # stated once the arguments checked out
        spec = dataclasses.replace(spec, chains_default=chains_default)
        _logger.info("%d chains: the default on %s (num_chains= to change)", num_chains, chains_default)
    precision = (jax.default_matmul_precision(matmul_precision) if matmul_precision is not None
                 else contextlib.nullcontext())
    key_run, key_pred = jax.random.split(jax.random.PRNGKey(seed))
    with precision:                      # tracing happens inside: every jitted function gets this precision
        model_fn = spec.model
        if spec.reparam:
            model_fn = partial(fcn_fast, integrate_readout="readout" in spec.reparam,
                               data_space="data_space" in spec.reparam)
        init_params = (init_params_from_values(model_fn, task.X, task.Y, spec.model_kwargs, init, num_chains)
                       if isinstance(init, dict) else None)
        if spec.sampler == "gibbs":
            draws = _draw_in_memory(spec, gibbs_chains)
        elif spec.sampler == "units":
            draws = _draw_in_memory(spec, units_chains)
        elif spec.sampler in TEMPERING:
            draws = _draw_tempering(spec, key_run, init_params)
        else:
            kernel = build_kernel(model_fn, sampler=spec.sampler, step_size=step_size, num_steps=num_steps,
                                  target_accept=target_accept, max_tree_depth=max_tree_depth,
                                  dense_mass=dense_mass, init=init)
            draws = (_draw_chunked(spec, kernel, key_run, key_pred, init_params) if spec.use_engine
                     else _draw_mcmc(spec, kernel, key_run, key_pred, init_params))
        groups = inference_groups(spec, draws, key_pred)
    n_div = int(draws.stats["diverging"].sum())
    if n_div:
        warnings.warn(f"{n_div} divergent transitions out of {draws.stats['diverging'].size} draws: the posterior "
                      f"may be poorly explored; lower step_size or raise target_accept", RuntimeWarning, stacklevel=2)
    idata = azcompat.make_idata(groups, sealed(provenance(spec, draws, wall_time_s=time.time() - t_start),
                                               groups["posterior"]))

    # chains that did not mix or move: warn, never silent
    if HEALTH_WARNINGS.get():                # off for the parts of a certified run (judged together)
        warn_if_unhealthy(idata, store=True)
    return idata
