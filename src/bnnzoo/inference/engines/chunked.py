"""The chunked driver's engine (:mod:`bnnzoo.inference.chunked`): a NumPyro kernel run in jitted blocks, with the
long-run options (store and resume, excluded and thinned sites, streamed kernel means), sharded or several-process
chains and the reparametrised models' conditional draws."""

from __future__ import annotations

import dataclasses
import warnings
from functools import partial
from pathlib import Path

import jax
import numpy as np
from numpyro import handlers

from ...models.fcn_fast import INTERNAL_SITES, fcn_fast
from ..chees import ChEES, trajectory_growth
from ..chunked import STAT_FIELDS, engine_chunk_size, run_chunked
from ..convert import sample_stats, thinned_dataset, warmup_datasets
from ..distributed import gather_chains, local_chains
from ..store import RunStore
from ._base import Draws, store_manifest

TRAJECTORY_GROWTH_WARN = 2.0


def _make_post(spec, key_pred, post_kw):
    """``make_post`` of the driver: the kernel's own post-processing, or, for a reparametrised model
    (:mod:`bnnzoo.models.fcn_fast`), every kept draw's conditional sites drawn with a key of the seed, the draw
    index and the chain, so chunks and resumes leave them unchanged."""
    X, Y, reparam = spec.task.X, spec.task.Y, spec.sampler.reparam
    if not reparam:
        def make_post(k):
            pp = k.postprocess_fn((X, Y), post_kw)
            return lambda z, chain_ids, draw: jax.vmap(pp)(z)
        return make_post
    cond_fn = partial(fcn_fast, integrate_readout="readout" in reparam, data_space="data_space" in reparam,
                      conditional=True)

    def make_post(_kernel):
        def one(zc, cid, draw):
            k = jax.random.fold_in(jax.random.fold_in(key_pred, draw + 1), cid)
            tr = handlers.trace(handlers.seed(handlers.substitute(cond_fn, data=zc), k)).get_trace(X, Y, **post_kw)
            return {n: site["value"] for n, site in tr.items()
                    if site["type"] in ("sample", "deterministic") and not site.get("is_observed", False)
                    and n not in INTERNAL_SITES}

        return lambda z, chain_ids, draw: jax.vmap(one, in_axes=(0, 0, None))(z, chain_ids, draw)
    return make_post


def draw_chunked(spec, kernel, key_run, key_pred, init_params) -> Draws:
    """The chunked driver: every sampler with a NumPyro kernel when the plan says so (ChEES / SNAPER, sharded
    chains, the long-run options)."""
    s, c, r = spec.sampler, spec.chains, spec.recording
    task, kw, num_chains, thinning = spec.task, spec.model_kwargs, c.num_chains, c.thinning
    store, site_thinning, X, Y = spec.store.path, r.site_thinning, task.X, task.Y
    coupled = isinstance(kernel, ChEES)    # one program over every chain: every process initialises all of them
    sampler_cfg = dict(sampler=s.name, step_size=s.step_size, num_steps=s.num_steps, target_accept=s.target_accept,
                       max_tree_depth=s.max_tree_depth, dense_mass=s.dense_mass, init=s.init_summary())
    n_dev, n_proc, proc = jax.local_device_count(), jax.process_count(), jax.process_index()
    init_keys = jax.random.split(key_run, num_chains) if num_chains > 1 else key_run
    chain0, n_local = 0, num_chains
    if n_proc > 1:                         # this process's share of the chains (bnnzoo.inference.distributed)
        chain0, n_local = local_chains(num_chains)
        if not coupled:
            init_keys = init_keys[chain0:chain0 + n_local] if n_local > 1 else init_keys[chain0]
        if store is not None:
            store = Path(store) / f"process_{proc}"
    chunk_size = engine_chunk_size(spec.store.chunk_size, c.num_samples // thinning, store, site_thinning)
    post_kw = dict(kw, X_test=task.X_test) if task.X_test is not None else dict(kw)

    if init_params is not None and n_proc > 1 and not coupled:   # this process's chains
        init_params = jax.tree.map(lambda v: v[chain0:chain0 + n_local], init_params)
    if init_params is not None and np.ndim(init_keys) == 1:      # one chain: the kernel takes unbatched values
        init_params = jax.tree.map(lambda v: v[0], init_params)

    run_store, manifest = None, None
    if store is not None:
        extra = dict(process_index=proc, process_count=n_proc) if n_proc > 1 else {}
        manifest = store_manifest(spec, sampler_cfg, chunk_size, **extra)
        run_store = RunStore(store)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="There are not enough devices")
        res = run_chunked(kernel, model_args=(X, Y), model_kwargs=kw, make_post=_make_post(spec, key_pred, post_kw),
                          init_keys=init_keys, num_chains=n_local, chain_offset=chain0, num_warmup=c.num_warmup,
                          num_samples=c.num_samples, thinning=thinning, chunk_size=chunk_size,
                          chain_method=c.method, init_params=init_params, exclude=r.exclude,
                          site_thinning=site_thinning, site_means=r.site_means, store=run_store,
                          resume=spec.store.resume, manifest=manifest, progress=r.progress)
    if n_proc > 1:                         # every process gets all chains, in chain order
        warm_t = res.warmup.get("time")
        res = dataclasses.replace(
            res, samples=gather_chains(res.samples), stats=gather_chains(res.stats),
            thinned=gather_chains(res.thinned),
            warmup=dict(gather_chains({k: v for k, v in res.warmup.items() if k != "time"}),
                        **({} if warm_t is None else {"time": warm_t})))
    cfg = dict(chain_method=c.method, chunk_size=chunk_size,
               store=None if spec.store.path is None else str(spec.store.path), exclude=list(r.exclude),
               site_thinning=dict(site_thinning or {}), site_means=dict(r.site_means), reparam=list(s.reparam),
               n_devices=n_dev, resumed_from_block=res.resumed_from_block,
               n_processes=n_proc, process_index=proc, timing={k: round(v, 4) for k, v in res.timing.items()})
    if res.store_versions is not None:      # a resume under other library versions: both are on record
        cfg["store_versions"] = res.store_versions

    samples = dict(res.samples)
    f_test = samples.pop("f_test", None)
    warmup = None
    if res.warmup:
        warmup = warmup_datasets(res, r.dims)
        if coupled:
            _check_trajectory_settled(s.name, res.warmup, cfg)
    return Draws(samples=samples, stats=sample_stats({src: res.stats[stat] for src, stat in STAT_FIELDS.items()}),
                 f_test=f_test, engine=cfg,
                 thinned=thinned_dataset(res, r.dims, r.site_means) if res.thinned else None,
                 warmup=warmup)


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

