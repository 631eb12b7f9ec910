"""``bnnzoo.sample``: the public call that samples a zoo model and returns ArviZ data with named dims and provenance.

The work is shared out: :mod:`bnnzoo.inference.plan` checks the arguments and decides the chain method and engine
once; NumPyro's ``MCMC`` or the chunked driver (:mod:`bnnzoo.inference.engine`) or the exact Gibbs sampler
(:mod:`bnnzoo.inference.gibbs_linear`) draws; :mod:`bnnzoo.inference.convert` turns the draws into ArviZ groups and
:mod:`bnnzoo.inference.predictive` adds the predictive groups.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import inspect
import json
import logging
import time
import warnings
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Callable, Sequence

import jax
import numpy as np
import numpyro
import xarray as xr
from numpyro.infer import HMC, MCMC, NUTS, Predictive
from numpyro.infer.initialization import init_to_sample, init_to_uniform

from .. import azcompat
from ..models.zoo import ZooEntry, get_entry
from ..tasks import Task
from .convert import (EXTRA_FIELDS, dataset, gibbs_warmup_datasets, infer_dims, jsonable, run_config, sample_stats,
                      thinned_dataset, versions, warmup_datasets)
from .plan import (CHEES_LIKE, MATMUL_PRECISIONS, REPARAMS, SAMPLERS, TEMPERING, RunPlan, check_int,
                   choose_sampler, engine_chunk_size, make_plan)
from .predictive import log_likelihood as _log_likelihood
from .predictive import posterior_predictive as _posterior_predictive
from .._log import interactive
from .predictive import prior_groups
from .initialize import fast_kernel

__all__ = ["sample", "run_config", "build_kernel", "init_params_from_values", "SAMPLERS", "REPARAMS",
           "MATMUL_PRECISIONS"]

_logger = logging.getLogger(__name__)


HEALTH_WARNINGS = contextvars.ContextVar("bnnzoo_health_warnings", default=True)
"""False while :mod:`bnnzoo.inference.certify` runs the start families: their health is judged on the whole run."""


def _init_summary(init):
    """``init`` as it goes into the provenance: the rule's name, or the sites a dict of starting values sets."""
    return init if isinstance(init, str) else {"values_for": sorted(init)}


def trace_latent_sites(fn, X, Y, kw: dict) -> dict:
    """{name: trace site} of the latent sites of ``fn(X, Y, **kw)`` with the data observed (their supports and shapes;
    :func:`bnnzoo.inference.predictive.latent_sites` gives the names alone)."""
    from numpyro import handlers

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
    from numpyro.distributions.transforms import biject_to

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


def _blackjax_version() -> str:
    import blackjax

    return blackjax.__version__


def _resolve_model(model) -> tuple[str, Callable, ZooEntry | None]:
    if isinstance(model, str):
        entry = get_entry(model)
        return entry.name, entry.model, entry
    if isinstance(model, ZooEntry):
        return model.name, model.model, model
    if callable(model):
        return getattr(model, "__qualname__", repr(model)), model, None
    raise ValueError(f"model must be a zoo entry name, a ZooEntry or a NumPyro model function, got {model!r}")


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
    init : "prior" (each chain starts from a prior draw), "uniform" (NumPyro's default), or a dict of starting values
        (given to the run as ``init_params``; the kernel then keeps "prior" as its own rule).

    Returns
    -------
    A NumPyro ``MCMCKernel``.

    Raises
    ------
    ValueError
        on a bad or inapplicable argument.
    """
    if sampler not in SAMPLERS or sampler == "gibbs" or sampler in TEMPERING:
        raise ValueError(f"sampler must be one of {[s for s in SAMPLERS if s != 'gibbs' and s not in TEMPERING]} "
                         f"(gibbs, pt and smc have no NumPyro kernel), got {sampler!r}")
    if step_size is not None and not (np.isfinite(step_size) and step_size > 0):
        raise ValueError(f"step_size must be > 0, got {step_size!r}")
    if target_accept is None:
        target_accept = 0.651 if sampler in CHEES_LIKE else 0.8
    if not 0 < target_accept < 1:
        raise ValueError(f"target_accept must lie in (0, 1), got {target_accept!r}")
    if isinstance(init, dict):   # the run starts from given values (init_params): the kernel's own rule goes unused
        init = "prior"
    if init not in ("prior", "uniform"):
        raise ValueError(f"init must be 'prior' (a draw from the prior) or 'uniform' (NumPyro's default), got {init!r}")
    if sampler in CHEES_LIKE:
        from .chees import ChEES

        if num_steps is not None or dense_mass:
            raise ValueError(f"sampler={sampler!r} tunes its own trajectory length and a diagonal mass: drop "
                             + ("num_steps" if num_steps is not None else "dense_mass"))
        check_int("max_tree_depth", max_tree_depth, 1)
        return ChEES(fn, step_size=step_size, max_leapfrog_steps=2 ** int(max_tree_depth), target_accept=target_accept,
                     init=init, criterion=sampler)
    common = dict(
        step_size=1.0 if step_size is None else float(step_size),
        adapt_step_size=step_size is None,
        dense_mass=dense_mass,
        target_accept_prob=target_accept,
        init_strategy=init_to_sample if init == "prior" else init_to_uniform,
    )
    if sampler == "nuts":
        if num_steps is not None:
            raise ValueError("num_steps applies to sampler='hmc' only (NUTS chooses its own trajectory length)")
        check_int("max_tree_depth", max_tree_depth, 1)
        return fast_kernel(NUTS)(fn, max_tree_depth=max_tree_depth, **common)
    if num_steps is None:
        raise ValueError("sampler='hmc' needs num_steps (leapfrog steps per draw, an integer >= 1)")
    check_int("num_steps", num_steps, 1)
    return fast_kernel(HMC)(fn, num_steps=int(num_steps), trajectory_length=None, **common)


def _run_engine(name, fn, entry, kernel, task, kw, *, key_run, key_pred, num_chains, num_warmup, num_samples,
                thinning, plan: RunPlan, chunk_size, store, resume, exclude, site_thinning, warm_start, init,
                progress, seed, sampler_cfg, init_params=None):
    """Run the chunked driver (:mod:`bnnzoo.inference.engine`) for :func:`sample`."""
    from numpyro import handlers

    from .chunked import run_chunked
    from .store import RunStore, fingerprint

    X, Y = task.X, task.Y
    n_dev = jax.local_device_count()
    n_proc, proc = jax.process_count(), jax.process_index()
    init_keys = jax.random.split(key_run, num_chains) if num_chains > 1 else key_run
    chain_method, reparam = plan.chain_method, plan.reparam
    chain0, n_local = 0, num_chains
    if n_proc > 1:                         # this process's share of the chains (bnnzoo.inference.distributed)
        from .distributed import local_chains

        chain0, n_local = local_chains(num_chains)
        if sampler_cfg["sampler"] not in CHEES_LIKE:  # coupled chains: every process initialises all of them, one
            init_keys = init_keys[chain0:chain0 + n_local] if n_local > 1 else init_keys[chain0]  # program runs
        if store is not None:                         # over all processes' devices (engine.run_chunked)
            store = Path(store) / f"process_{proc}"
    chunk_size = engine_chunk_size(chunk_size, num_samples // thinning, store, site_thinning)
    post_kw = dict(kw, X_test=task.X_test) if task.X_test is not None else dict(kw)

    if reparam:
        from ..models.fcn_fast import INTERNAL_SITES, fcn_fast

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
    if warm_start:
        from numpyro.infer.initialization import init_to_sample, init_to_uniform

        from .warmstart import warm_start_params

        n_init = len(init_keys) if init_keys.ndim == 2 else 1      # every chain's keys for coupled multi-process
        init_params = warm_start_params(kernel.model, (X, Y), kw, init_keys, n_init,
                                        init_to_sample if init == "prior" else init_to_uniform, int(warm_start),
                                        timing=ws_timing)

    run_store, manifest = None, None
    if store is not None:
        ident = dict(model=name, model_kwargs=jsonable(kw), sampler=jsonable(sampler_cfg), seed=seed,
                     num_chains=num_chains, num_warmup=num_warmup, num_samples=num_samples, thinning=thinning,
                     chunk_size=chunk_size, exclude=list(exclude), site_thinning=jsonable(site_thinning or {}),
                     reparam=list(reparam), warm_start=int(warm_start), task=jsonable(task.meta))
        if n_proc > 1:
            ident.update(process_index=proc, process_count=n_proc)
        arrays = [X, Y] + ([task.X_test] if task.X_test is not None else [])
        if isinstance(init, dict):         # the starting values are part of the run's identity
            arrays += [np.asarray(init[k]) for k in sorted(init)]
        manifest = dict(ident, fingerprint=fingerprint(ident, arrays), versions=versions())
        run_store = RunStore(store)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="There are not enough devices")
        res = run_chunked(kernel, model_args=(X, Y), model_kwargs=kw, make_post=make_post, init_keys=init_keys,
                          num_chains=n_local, chain_offset=chain0, num_warmup=num_warmup, num_samples=num_samples,
                          thinning=thinning, chunk_size=chunk_size, chain_method=chain_method, init_params=init_params,
                          exclude=exclude, site_thinning=site_thinning, store=run_store, resume=resume,
                          manifest=manifest, progress=progress)
    timing = dict(res.timing, **ws_timing)
    if n_proc > 1:                         # every process gets all chains, in chain order
        from .distributed import gather_chains

        warm_t = res.warmup.get("time")
        res = dataclasses.replace(
            res, samples=gather_chains(res.samples), stats=gather_chains(res.stats),
            thinned=gather_chains(res.thinned),
            warmup=dict(gather_chains({k: v for k, v in res.warmup.items() if k != "time"}),
                        **({} if warm_t is None else {"time": warm_t})))
    cfg = dict(chain_method=chain_method, chunk_size=chunk_size, store=None if store is None else str(store),
               exclude=list(exclude), site_thinning=dict(site_thinning or {}), reparam=list(reparam),
               warm_start=int(warm_start), n_devices=n_dev, resumed_from_block=res.resumed_from_block,
               n_processes=n_proc, process_index=proc,
               timing={k: round(v, 4) for k, v in timing.items()})
    return res, cfg


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
    from .chees import trajectory_growth

    g = trajectory_growth(warmup["num_steps"], warmup["step_size"])
    engine_cfg["trajectory_growth"] = g
    if g > TRAJECTORY_GROWTH_WARN:
        warnings.warn(f"sampler={sampler!r}: the trajectory length had not settled when warm-up ended (its last 10 % "
                      f"ran at {g:.1f}x the length kept for sampling): check the ESS of the slow sites (readout "
                      f"weights); a longer warm-up (num_warmup) may give longer trajectories and better mixing",
                      RuntimeWarning, stacklevel=3)


def _model_kwargs(name, fn, entry, task, model_kwargs, record) -> dict:
    kw = entry.kwargs(**model_kwargs) if entry is not None else dict(model_kwargs)
    if record:
        kw["record"] = tuple(record)
    if entry is not None and entry.resolve is not None:
        kw = entry.resolve(task.X, kw)
    if entry is not None:
        entry.validate(task.X, task.Y, **kw)
    else:
        params = inspect.signature(fn).parameters
        unknown = [k for k in kw if k not in params and not any(p.kind == p.VAR_KEYWORD for p in params.values())]
        if unknown:
            raise ValueError(f"model {name} has no argument(s) {unknown}")
    return kw


def sample(model, task: Task, *, num_chains: int = 4, num_warmup: int = 500, num_samples: int = 500,
           sampler: str = "auto", seed: int = 0, thinning: int = 1, record: str | Sequence[str] = (),
           progress: bool = True, chain_method: str = "auto", step_size: float | None = None,
           num_steps: int | None = None, target_accept: float | None = None, max_tree_depth: int = 10,
           dense_mass: bool = False, init: str | dict = "prior", log_likelihood: bool = False,
           posterior_predictive: bool = False, prior_predictive: bool = False,
           dims: dict | None = None, chunk_size: int | None = None, store=None, resume: bool = False,
           exclude: Sequence[str] = (), site_thinning: dict | None = None, reparam: Sequence[str] | None = (),
           warm_start: int = 0, matmul_precision: str | None = "highest",
           certify: bool | Sequence[str] = False, tempering: dict | None = None, **model_kwargs):
    """Sample the posterior of ``model`` on ``task`` and return it as ArviZ data.

    Parameters
    ----------
    model : str, ZooEntry or callable
        A zoo entry name (``bnnzoo list``), a :class:`~bnnzoo.models.ZooEntry`, or any NumPyro model called as
        ``model(X, Y, **model_kwargs)``.
    task : Task
        The data (:class:`~bnnzoo.tasks.Task`): X (point, input), Y (point, class), optional test set.
    num_chains, num_warmup, num_samples, thinning : int
        MCMC sizes (>= 1, >= 0, >= 1, >= 1); each chain keeps num_samples // thinning draws.
    sampler : str
        "auto" (default): the fastest sampler the performance benchmark found for the run at hand
        (:func:`bnnzoo.inference.plan.choose_sampler`: for two or more chains the entry's ``auto_sampler``,
        "snaper" on every entry but the attention head's "chees"; "nuts" for one chain, a sequential chain method,
        a dense mass or a ``max_tree_depth`` other than 10); the run's attributes name the sampler it picked.  Or
        one of the samplers the entry offers (``ZooEntry.samplers``): "nuts" (adaptive NUTS); "hmc" (fixed
        ``num_steps`` leapfrog steps, required; give ``step_size`` to fix the step too); "gibbs" (the exact blocked
        Gibbs sampler of the linear fully-connected nets, :mod:`bnnzoo.inference.gibbs_linear`: same sites and
        dims, ``num_warmup`` counts sweeps, chains one after the other in memory, no HMC settings or long-run
        options); "chees" (ChEES-HMC, :mod:`bnnzoo.inference.chees`: jittered HMC whose step size, trajectory length
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
        PRNG seed (>= 0).  The same seed gives the same draws with and without ``chunk_size`` / ``store`` and for
        "parallel" and "sharded"; other chain methods agree up to float rounding (:mod:`bnnzoo.inference.plan`).
    record : str or sequence of str
        Extra sites to record, e.g. "z" (or ("z",)) for the preactivations of every layer, "z1" for the first.
    progress : bool
        Report progress: a bar when stderr is a terminal, otherwise INFO lines on the ``bnnzoo`` logger.
    chain_method : str
        "auto": the chains split across the local devices ("sharded") when there are several and num_chains is a
        multiple of their number, otherwise batched on one device ("vectorized"); "vectorized"; "parallel" (run as
        "sharded"; "vectorized" on one device); "sharded" (num_chains a multiple of the device count);
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
    init : str or dict
        "prior" (each chain starts from a prior draw), "uniform" (NumPyro's default, uniform in (-2, 2)), or a
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
        Kept draws per jitted chunk of the chunked driver (:mod:`bnnzoo.inference.engine`; device memory holds one
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
    certify : bool or sequence of str
        True: run the model from every start family the entry declares (``ZooEntry.populations.families``:
        "prior", "annealed", "meanfield"), each with ``num_chains`` chains and the same settings, and compare
        their population observables (:mod:`bnnzoo.inference.certify`, which states the error model); a
        sequence names the families (two or more).  The run then holds all families' chains along ``chain`` (a
        ``family`` coordinate names each chain's family) and the comparison in the attribute
        ``bnnzoo_certification`` and in ``run_config(idata)["certification"]``.  Needs a zoo entry, two or more
        chains per family, ``init="prior"``, no ``warm_start``, ``reparam``, ``store`` or sampler "gibbs" /
        "smc".  False (default): one run, unchanged.
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
    call = dict(locals())                    # the arguments, for certify (model_kwargs passed on separately)
    call.pop("model_kwargs")
    t_start = time.time()
    name, fn, entry = _resolve_model(model)
    if not isinstance(task, Task):
        raise ValueError(f"task must be a bnnzoo.tasks.Task, got {type(task).__name__}")
    for flag, value in (("posterior_predictive", posterior_predictive), ("prior_predictive", prior_predictive)):
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{flag} must be True or False, got {value!r}")
    # record is checked first: a string would otherwise be split into letters by the model kwargs
    from .plan import normalize_record

    record = normalize_record(record)
    kw = _model_kwargs(name, fn, entry, task, model_kwargs, record)
    requested = sampler
    if isinstance(sampler, str) and isinstance(num_chains, (int, np.integer)):
        sampler = choose_sampler(sampler, entry, num_chains=int(num_chains), chain_method=chain_method,
                                 dense_mass=dense_mass is True, num_steps=num_steps, max_tree_depth=max_tree_depth)
        if requested == "auto":
            _logger.debug("sample: sampler 'auto' -> %r", sampler)
    plan = make_plan(entry, kw, sampler=sampler, num_chains=num_chains, num_warmup=num_warmup,
                     num_samples=num_samples, thinning=thinning, seed=seed, record=record, chain_method=chain_method,
                     step_size=step_size, num_steps=num_steps, target_accept=target_accept,
                     max_tree_depth=max_tree_depth, dense_mass=dense_mass, init=init, progress=progress,
                     log_likelihood=log_likelihood, chunk_size=chunk_size, store=store, resume=resume,
                     exclude=exclude, site_thinning=site_thinning, reparam=reparam, warm_start=warm_start,
                     matmul_precision=matmul_precision, n_devices=jax.local_device_count(),
                     n_processes=jax.process_count())
    tempering_opts = None
    if sampler in TEMPERING:
        from .tempering import check_options

        tempering_opts = check_options(sampler, tempering, num_chains=num_chains, thinning=thinning, init=init)
    elif tempering is not None:
        raise ValueError(f"tempering options apply to sampler='pt' or 'smc', not sampler={sampler!r}")
    if certify is not False:
        from .certify import certified_sample

        return certified_sample(entry, task, certify, call, model_kwargs)
    chain_method, use_engine = plan.chain_method, plan.use_engine
    X, Y = task.X, task.Y
    precision = (jax.default_matmul_precision(matmul_precision) if matmul_precision is not None
                 else contextlib.nullcontext())
    with precision:                      # tracing happens inside: every jitted function gets this precision
        gibbs_stats = None
        sample_fn = fn
        if plan.reparam:
            from ..models.fcn_fast import fcn_fast

            sample_fn = partial(fcn_fast, integrate_readout="readout" in plan.reparam,
                                data_space="data_space" in plan.reparam)
        kernel = None
        if sampler != "gibbs" and sampler not in TEMPERING:
            kernel = build_kernel(sample_fn, sampler=sampler, step_size=step_size, num_steps=num_steps,
                                  target_accept=target_accept, max_tree_depth=max_tree_depth, dense_mass=dense_mass,
                                  init=init)
        init_params = None
        if isinstance(init, dict):
            init_params = init_params_from_values(sample_fn, X, Y, kw, init, num_chains)
        site_dims = dims if dims is not None else (entry.dims(**kw) if entry is not None else infer_dims(fn, X, Y, kw))

        key = jax.random.PRNGKey(seed)
        key_run, key_pred = jax.random.split(key)
        engine_cfg = None
        thinned_group = warmup_groups = None
        if sampler == "gibbs":
            from .gibbs_linear import gibbs_chains

            samples, gibbs_stats, gibbs_info = gibbs_chains(
                X, Y, num_chains=num_chains, num_warmup=num_warmup, num_samples=num_samples, thinning=thinning,
                seed=seed, X_test=task.X_test, exclude=exclude, progress=progress,
                **{k: v for k, v in kw.items() if k != "X_test"})
            f_test_engine = samples.pop("f_test", None)
            engine_cfg = {"chain_method": chain_method, "timing": gibbs_info["timing"]}
            if num_warmup:
                warmup_groups = gibbs_warmup_datasets(gibbs_info)
        elif sampler in TEMPERING:             # bnnzoo.inference.tempering (pt) / .smc: draws with f_test
            from .tempering import run_tempering

            samples, fields, extra_stats, engine_cfg = run_tempering(
                sampler, fn, task, kw, key=key_run, num_chains=num_chains, num_warmup=num_warmup,
                num_samples=num_samples, thinning=thinning, init=init, num_steps=num_steps,
                target_accept=target_accept, chunk_size=chunk_size, exclude=exclude, progress=progress,
                options=tempering_opts, init_params=init_params)
            engine_cfg = dict(engine_cfg, options=tempering_opts)
            f_test_engine = samples.pop("f_test", None)
        elif use_engine:
            res, engine_cfg = _run_engine(
                name, fn, entry, kernel, task, kw, key_run=key_run, key_pred=key_pred, num_chains=num_chains,
                num_warmup=num_warmup, num_samples=num_samples, thinning=thinning, plan=plan,
                chunk_size=chunk_size, store=store, resume=resume, exclude=exclude, site_thinning=site_thinning,
                warm_start=warm_start, init=init, progress=progress, seed=seed, init_params=init_params,
                sampler_cfg=dict(sampler=sampler, step_size=step_size, num_steps=num_steps, target_accept=target_accept,
                                 max_tree_depth=max_tree_depth, dense_mass=dense_mass, init=_init_summary(init)))
            from .chunked import STAT_FIELDS

            samples = dict(res.samples)
            fields = {src: res.stats[stat] for src, stat in STAT_FIELDS.items()}
            f_test_engine = samples.pop("f_test", None)
            if res.thinned:
                thinned_group = thinned_dataset(res, site_dims)
            if res.warmup:
                warmup_groups = warmup_datasets(res, site_dims)
                if sampler in CHEES_LIKE:
                    _check_trajectory_settled(sampler, res.warmup, engine_cfg)
        else:
            # NumPyro's bar redraws itself with carriage returns: drawn on a terminal only, else two log lines
            bar = bool(progress) and interactive()
            log_lines = bool(progress) and not bar
            if log_lines:
                _logger.info("sample: %s, %d chains x (%d warm-up + %d sampling steps) ...", sampler, num_chains,
                             num_warmup, num_samples)
            t_run = time.perf_counter()
            mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                        thinning=thinning, chain_method=chain_method, progress_bar=bar)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="There are not enough devices")
                mcmc.run(key_run, X, Y, extra_fields=EXTRA_FIELDS, init_params=(
                    None if init_params is None else init_params if num_chains > 1
                    else jax.tree.map(lambda v: v[0], init_params)), **kw)
            if log_lines:
                _logger.info("sample: done (%.1f s)", time.perf_counter() - t_run)
            samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
            fields = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
        n_chain, n_draw = next(iter(samples.values())).shape[:2]
        lead_coords = {"chain": np.arange(n_chain), "draw": np.arange(n_draw)}
        lead = ("chain", "draw")

        posterior = dataset({k: v for k, v in samples.items() if k != "y"}, site_dims, lead, lead_coords)
        stats = gibbs_stats if gibbs_stats is not None else sample_stats(fields)
        if sampler in TEMPERING:
            stats.update(extra_stats)
        groups = {
            "posterior": posterior,
            "sample_stats": dataset(stats, {}, lead, lead_coords),
            "observed_data": xr.Dataset({"y": (("point", "class"), Y)},
                                        coords={"point": np.arange(task.P), "class": np.arange(task.m)}),
            "constant_data": xr.Dataset({"X": (("point", "input"), X), "labels": (("point",), task.labels)},
                                        coords={"point": np.arange(task.P), "input": np.arange(task.N0)}),
        }
        y_dims = {"y": ["point", "class"]}
        if log_likelihood:
            ll = _log_likelihood(fn, entry, samples, X, Y, kw)
            groups["log_likelihood"] = dataset({"y": ll}, y_dims, lead, lead_coords)
        if posterior_predictive:
            y_pp = _posterior_predictive(fn, entry, samples, X, kw, jax.random.fold_in(key_pred, 1 << 30), task.m)
            groups["posterior_predictive"] = dataset({"y": y_pp}, y_dims, lead, lead_coords)
        if prior_predictive:
            groups.update(prior_groups(fn, X, kw, jax.random.fold_in(key_pred, (1 << 30) + 1), n_chain, n_draw,
                                       task.m, site_dims, exclude=tuple(exclude)))
        if thinned_group is not None:
            groups["posterior_thinned"] = thinned_group
        if warmup_groups is not None:
            groups.update(warmup_groups)
        from_driver = use_engine or sampler == "gibbs"      # f_test comes with the draws
        if task.X_test is not None and from_driver and f_test_engine is None:
            warnings.warn("the test-set output f_test was not recorded (excluded, or not computable): no predictions "
                          "group", RuntimeWarning, stacklevel=2)
        elif task.X_test is not None:
            if from_driver:
                f_test = f_test_engine
            else:
                pred = Predictive(fn, posterior_samples=mcmc.get_samples(), return_sites=["f_test"])
                f_test = np.asarray(pred(key_pred, X, Y, **dict(kw, X_test=task.X_test))["f_test"])
                f_test = f_test.reshape((n_chain, n_draw) + f_test.shape[1:])
            groups["predictions"] = dataset({"f": f_test}, {"f": ["test_point", "class"]}, lead, lead_coords)
            const = {"X_test": (("test_point", "input"), task.X_test), "y_test": (("test_point", "class"), task.Y_test)}
            if task.labels_test is not None:
                const["labels_test"] = (("test_point",), task.labels_test)
            groups["predictions_constant_data"] = xr.Dataset(
                const, coords={"test_point": np.arange(task.X_test.shape[0]), "input": np.arange(task.N0),
                               "class": np.arange(task.m)})

    n_div = int(stats["diverging"].sum())
    sampler_cfg = dict(sampler=sampler, sampler_requested=requested, num_chains=num_chains, num_warmup=num_warmup, num_samples=num_samples,
                       thinning=thinning, chain_method=chain_method, step_size=step_size, num_steps=num_steps,
                       target_accept=target_accept, max_tree_depth=max_tree_depth, dense_mass=dense_mass,
                       init=_init_summary(init), matmul_precision=matmul_precision)
    config = dict(model=name, model_kwargs=jsonable({k: v for k, v in kw.items()}), task=jsonable(task.meta),
                  task_name=task.name, sampler=jsonable(sampler_cfg), seed=seed, versions=versions(),
                  record=list(record), divergences=n_div, wall_time_s=round(time.time() - t_start, 3),
                  created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    if engine_cfg is not None:
        config["engine"] = jsonable(engine_cfg)
    attrs = {"bnnzoo_config": json.dumps(config), "model": name, "sampler": sampler, "seed": seed,
             "num_chains": num_chains, "num_warmup": num_warmup, "num_samples": num_samples,
             "thinning": thinning,
             "inference_library": {"gibbs": "bnnzoo.inference.gibbs_linear",
                                   "chees": "bnnzoo.inference.chees",
                                   "snaper": "bnnzoo.inference.chees",
                                   "pt": "bnnzoo.inference.tempering",
                                   "smc": "blackjax"}.get(sampler, "numpyro"),
             "inference_library_version": config["versions"]["bnnzoo"] if sampler in ("gibbs", "pt") + CHEES_LIKE
             else _blackjax_version() if sampler == "smc" else numpyro.__version__,
             "bnnzoo_version": config["versions"]["bnnzoo"], "created_at": config["created_at"]}
    for k, v in kw.items():
        if isinstance(v, (int, float, str, np.integer, np.floating)) and not isinstance(v, bool):
            attrs[f"model_{k}"] = v
    if n_div:
        warnings.warn(f"{n_div} divergent transitions out of {n_chain * n_draw} draws: the posterior may be "
                      f"poorly explored; lower step_size or raise target_accept", RuntimeWarning, stacklevel=2)
    idata = azcompat.make_idata(groups, attrs)
    from .health import warn_if_unhealthy    # chains that did not mix or move: warn, never silent

    if HEALTH_WARNINGS.get():                # off for the parts of a certified run (judged together)
        warn_if_unhealthy(idata, stacklevel=3)
    return idata
