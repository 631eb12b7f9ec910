"""``bnnzoo.sample``: NUTS / fixed-step HMC on a zoo model, returned as ArviZ data with named dims and provenance."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
import math
import platform
import sys
import time
import warnings
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

import jax
import numpy as np
import numpyro
import xarray as xr
from numpyro.infer import HMC, MCMC, NUTS, Predictive
from numpyro.infer.initialization import init_to_sample, init_to_uniform

from .. import azcompat
from ..models.zoo import ZooEntry, get_entry
from ..tasks import Task

__all__ = ["sample", "run_config", "build_kernel", "SAMPLERS"]

SAMPLERS = ("nuts", "hmc", "gibbs", "chees", "snaper")
_CHEES_LIKE = ("chees", "snaper")            # one kernel (bnnzoo.inference.chees.ChEES), two trajectory criteria
MATMUL_PRECISIONS = ("highest", "float32", "high", "tensorfloat32", "default", "bfloat16", None)
_EXTRA_FIELDS = ("diverging", "num_steps", "accept_prob", "energy", "potential_energy", "adapt_state.step_size")


def _resolve_model(model) -> tuple[str, Callable, ZooEntry | None]:
    if isinstance(model, str):
        entry = get_entry(model)
        return entry.name, entry.model, entry
    if isinstance(model, ZooEntry):
        return model.name, model.model, model
    if callable(model):
        return getattr(model, "__qualname__", repr(model)), model, None
    raise ValueError(f"model must be a zoo entry name, a ZooEntry or a NumPyro model function, got {model!r}")


def _check_int(name, value, minimum):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def build_kernel(fn, *, sampler="nuts", step_size=None, num_steps=None, target_accept=None, max_tree_depth=10,
                 dense_mass=False, init="prior"):
    """NUTS, HMC or ChEES-HMC kernel for ``fn``.

    ``target_accept`` None means 0.8 for NUTS and HMC (NumPyro's mean acceptance), 0.651 for ChEES (the harmonic
    mean over chains, the optimum for HMC).

    A given ``step_size`` is used as is (no adaptation).  For HMC, ``num_steps`` leapfrog steps are taken per
    draw with ``trajectory_length=None``: NumPyro otherwise derives the number of steps from a trajectory
    length and the (adapted) step size, which silently changes the integrator the user asked for.
    """
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    if step_size is not None and not (np.isfinite(step_size) and step_size > 0):
        raise ValueError(f"step_size must be > 0, got {step_size!r}")
    if target_accept is None:
        target_accept = 0.651 if sampler in _CHEES_LIKE else 0.8
    if not 0 < target_accept < 1:
        raise ValueError(f"target_accept must lie in (0, 1), got {target_accept!r}")
    if init not in ("prior", "uniform"):
        raise ValueError(f"init must be 'prior' (a draw from the prior) or 'uniform' (NumPyro's default), got {init!r}")
    if sampler in _CHEES_LIKE:
        from .chees import ChEES

        if num_steps is not None or dense_mass:
            raise ValueError(f"sampler={sampler!r} tunes its own trajectory length and a diagonal mass: drop "
                             + ("num_steps" if num_steps is not None else "dense_mass"))
        _check_int("max_tree_depth", max_tree_depth, 1)
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
        _check_int("max_tree_depth", max_tree_depth, 1)
        return NUTS(fn, max_tree_depth=max_tree_depth, **common)
    if num_steps is None:
        raise ValueError("sampler='hmc' needs num_steps (leapfrog steps per draw)")
    _check_int("num_steps", num_steps, 1)
    return HMC(fn, num_steps=int(num_steps), trajectory_length=None, **common)


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return repr(v)


def _versions() -> dict:
    import bnnzoo

    return {"bnnzoo": bnnzoo.__version__, "jax": jax.__version__, "numpyro": numpyro.__version__,
            "arviz": azcompat.AZ_VERSION, "xarray": xr.__version__, "numpy": np.__version__,
            "python": platform.python_version(), "jax_backend": jax.default_backend(),
            "devices": ", ".join(str(d) for d in jax.devices())}


def _infer_dims(fn, X, Y, kw) -> dict[str, list[str]]:
    """Dims of the sample sites of an arbitrary model from its plates (deterministic sites get none)."""
    from numpyro import handlers

    tr = handlers.trace(handlers.seed(fn, 0)).get_trace(X, Y, **kw)
    dims = {}
    for name, site in tr.items():
        if site["type"] != "sample":
            continue
        shape = np.shape(site["value"])
        names = [f"{name}_dim_{i}" for i in range(len(shape))]
        for frame in site["cond_indep_stack"]:
            if -len(shape) <= frame.dim < 0:
                names[len(shape) + frame.dim] = frame.name
        dims[name] = names
    return dims


def _dataset(arrays: dict, dims: dict, lead: Sequence[str], lead_coords: dict) -> xr.Dataset:
    data_vars, coords = {}, dict(lead_coords)
    for name, arr in arrays.items():
        arr = np.asarray(arr)
        d = list(dims.get(name, []))
        extra = arr.ndim - len(lead)
        if len(d) != extra:
            d = d[-extra:] if len(d) > extra else [f"{name}_dim_{i}" for i in range(extra - len(d))] + d
        full = list(lead) + d
        data_vars[name] = (full, arr)
        for dim, n in zip(full, arr.shape):
            if dim not in coords:
                coords[dim] = np.arange(n)
    return xr.Dataset(data_vars, coords=coords)


REPARAMS = ("readout", "data_space")
_ENGINE_STAT_KEYS = {"diverging": "diverging", "num_steps": "num_steps", "accept_prob": "accept_prob",
                     "energy": "energy", "potential_energy": "potential_energy", "step_size": "adapt_state.step_size"}


def _check_engine_args(entry, chunk_size, exclude, site_thinning, reparam, warm_start, resume, store):
    if chunk_size is not None:
        _check_int("chunk_size", chunk_size, 1)
    _check_int("warm_start", warm_start, 0)
    if resume and store is None:
        raise ValueError("resume=True needs store= (the folder of the run to continue)")
    if isinstance(exclude, str) or (site_thinning is not None and not isinstance(site_thinning, dict)):
        raise ValueError("exclude must be a sequence of site names and site_thinning a dict {site: k}")
    for k, e in (site_thinning or {}).items():
        _check_int(f"site_thinning[{k!r}]", e, 1)
    reparam = () if reparam is None else (reparam,) if isinstance(reparam, str) else tuple(reparam)
    bad = [r for r in reparam if r not in REPARAMS]
    if bad:
        raise ValueError(f"reparam entries must be among {REPARAMS}, got {bad}")
    if reparam:
        from ..models.fcn import fcn

        if entry is None or entry.model is not fcn:
            raise ValueError("reparam applies to the fully-connected zoo entries (model bnnzoo.models.fcn) only")
    return reparam


def _nuts_stats(extra: dict) -> dict:
    num_steps_arr = extra["num_steps"].astype(int)
    return {
        "diverging": extra["diverging"].astype(bool),
        "step_size": extra["adapt_state.step_size"],
        "n_steps": num_steps_arr,
        "tree_depth": (np.floor(np.log2(np.maximum(num_steps_arr, 1))).astype(int) + 1),
        "energy": extra["energy"],
        "acceptance_rate": extra["accept_prob"],
        "lp": -extra["potential_energy"],
    }


def _check_gibbs_args(entry, kw, chunk_size, store, resume, site_thinning, reparam, warm_start, step_size, num_steps,
                      dense_mass):
    from ..models.fcn import fcn

    if entry is None or entry.model is not fcn or kw.get("activation") != "linear":
        raise ValueError("sampler='gibbs' (exact blocked Gibbs) is for the linear fully-connected nets only "
                         "(zoo entry 'deep_linear', or an fcn entry with activation='linear')")
    given = [n for n, v in (("chunk_size", chunk_size), ("store", store), ("resume", resume),
                            ("site_thinning", site_thinning), ("reparam", reparam), ("warm_start", warm_start),
                            ("step_size", step_size), ("num_steps", num_steps), ("dense_mass", dense_mass)) if v]
    if given:
        raise ValueError(f"sampler='gibbs' runs in memory without HMC settings; drop {given}")


def _engine_chunk_size(chunk_size, n_keep, store, site_thinning):
    if chunk_size is not None:
        return int(chunk_size)
    size = min(n_keep, 100) if store is not None else n_keep
    if site_thinning:
        lcm = math.lcm(*[int(e) for e in site_thinning.values()])
        size = max(lcm, size // lcm * lcm)
    return max(size, 1)


def _run_engine(name, fn, entry, kernel, task, kw, *, key_run, key_pred, num_chains, num_warmup, num_samples,
                thinning, chain_method, chunk_size, store, resume, exclude, site_thinning, reparam, warm_start, init,
                progress, seed, sampler_cfg):
    """Run the chunked driver (:mod:`bnnzoo.inference.engine`) for :func:`sample`."""
    from numpyro import handlers

    from .engine import RunStore, fingerprint, run_chunked

    X, Y = task.X, task.Y
    n_dev = jax.local_device_count()
    n_proc, proc = jax.process_count(), jax.process_index()
    init_keys = jax.random.split(key_run, num_chains) if num_chains > 1 else key_run
    chain0, n_local = 0, num_chains
    if n_proc > 1:                         # this process's share of the chains (bnnzoo.inference.distributed)
        from .distributed import local_chains

        chain0, n_local = local_chains(num_chains)
        if sampler_cfg["sampler"] in _CHEES_LIKE:  # coupled chains: every process initialises all of them, one
            chain_method = "sharded"               # program runs over all processes' devices (engine.run_chunked)
        else:
            init_keys = init_keys[chain0:chain0 + n_local] if n_local > 1 else init_keys[chain0]
        if store is not None:
            store = Path(store) / f"process_{proc}"
    if chain_method == "parallel":
        chain_method = "sharded"
    if chain_method == "sequential":
        raise ValueError("chain_method='sequential' is not available for chunked runs; use 'vectorized'")
    if chain_method == "sharded" and n_local % n_dev:
        raise ValueError(f"chain_method='sharded' needs the chains of each process ({n_local}) to be a multiple of "
                         f"the {n_dev} local devices")
    chunk_size = _engine_chunk_size(chunk_size, num_samples // thinning, store, site_thinning)
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

    init_params, ws_timing = None, {"warm_start_s": 0.0}
    if warm_start:
        from numpyro.infer.initialization import init_to_sample, init_to_uniform

        from .warmstart import warm_start_params

        n_init = len(init_keys) if init_keys.ndim == 2 else 1      # every chain's keys for coupled multi-process
        init_params = warm_start_params(kernel.model, (X, Y), kw, init_keys, n_init,
                                        init_to_sample if init == "prior" else init_to_uniform, int(warm_start),
                                        timing=ws_timing)

    run_store, manifest = None, None
    if store is not None:
        ident = dict(model=name, model_kwargs=_jsonable(kw), sampler=_jsonable(sampler_cfg), seed=seed,
                     num_chains=num_chains, num_warmup=num_warmup, num_samples=num_samples, thinning=thinning,
                     chunk_size=chunk_size, exclude=list(exclude), site_thinning=_jsonable(site_thinning or {}),
                     reparam=list(reparam), warm_start=int(warm_start), task=_jsonable(task.meta))
        if n_proc > 1:
            ident.update(process_index=proc, process_count=n_proc)
        arrays = [X, Y] + ([task.X_test] if task.X_test is not None else [])
        manifest = dict(ident, fingerprint=fingerprint(ident, arrays), versions=_versions())
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


def _thinned_dataset(res, site_dims) -> xr.Dataset:
    data, coords = {}, {"chain": np.arange(next(iter(res.thinned.values())).shape[0])}
    for k, arr in res.thinned.items():
        d = list(site_dims.get(k, []))[-(arr.ndim - 2):] if arr.ndim > 2 else []
        if len(d) != arr.ndim - 2:
            d = [f"{k}_dim_{i}" for i in range(arr.ndim - 2)]
        full = ["chain", f"draw_{k}"] + d
        data[k] = (full, arr)
        coords[f"draw_{k}"] = res.thinned_draws[k]
        for dim, n in zip(full[2:], arr.shape[2:]):
            coords.setdefault(dim, np.arange(n))
    return xr.Dataset(data, coords=coords)


TRAJECTORY_GROWTH_WARN = 2.0


def _check_trajectory_settled(sampler, warmup, engine_cfg):
    """Warn when ChEES / SNAPER's trajectory length was still growing as warm-up ended (the kept T, averaged over the
    last half, is then far below where the tuning was heading: the ReLU net at N = P = 100, seed 1, 300 warm-up
    iterations, ended at 2.9× its kept T of 33 steps per draw and mixed its readout 6× worse than seeds 0 and 2, whose
    ratios were 1.3 and 1.0; with 600 iterations it ended at 1.7× and kept 188 steps).  It can also mean a T that
    drifts without settling: on the 6-wide linear net of tests/perf/test_chees.py SNAPER's ratio is 2.5 / 1.7 / 2.1
    after 500 / 1000 / 2000 warm-up iterations, and its draws still match the exact Gibbs sampler.  The ratio is
    stored as ``run_config(idata)["engine"]["trajectory_growth"]``."""
    from .chees import trajectory_growth

    g = trajectory_growth(warmup["num_steps"], warmup["step_size"])
    engine_cfg["trajectory_growth"] = g
    if g > TRAJECTORY_GROWTH_WARN:
        warnings.warn(f"sampler={sampler!r}: the trajectory length had not settled when warm-up ended (its last 10 % "
                      f"ran at {g:.1f}x the length kept for sampling): check the ESS of the slow sites (readout "
                      f"weights); a longer warm-up (num_warmup) may give longer trajectories and better mixing",
                      RuntimeWarning, stacklevel=3)


def _warmup_datasets(res, site_dims) -> dict:
    w = res.warmup
    n_chain, n_step = w["num_steps"].shape
    lead, coords = ("chain", "draw"), {"chain": np.arange(n_chain), "draw": np.arange(n_step)}
    small = {k: v for k, v in w.items() if k not in _ENGINE_STAT_KEYS and k != "time"}
    steps = w["num_steps"].astype(int)
    stats = {"diverging": w["diverging"].astype(bool), "step_size": w["step_size"], "n_steps": steps,
             "tree_depth": np.floor(np.log2(np.maximum(steps, 1))).astype(int) + 1, "energy": w["energy"],
             "acceptance_rate": w["accept_prob"], "lp": -w["potential_energy"]}
    ss = _dataset(stats, {}, lead, coords)
    ss["time"] = (("draw",), w["time"])
    return {"warmup_posterior": _dataset(small, site_dims, lead, coords), "warmup_sample_stats": ss}


def _gibbs_warmup_datasets(info) -> dict:
    """Warm-up trace of the Gibbs chains: MSE per sweep, and seconds since each chain's start (chains run one after
    the other, so ``time`` is (chain, draw) here, not (draw,) as for the vectorised engine)."""
    mse = np.asarray(info["warmup_mse"])
    lead, coords = ("chain", "draw"), {"chain": np.arange(mse.shape[0]), "draw": np.arange(mse.shape[1])}
    ss = xr.Dataset({"time": (lead, np.asarray(info["warmup_time"]))}, coords=coords)
    return {"warmup_posterior": xr.Dataset({"mse": (lead, mse)}, coords=coords), "warmup_sample_stats": ss}


def _engine_loglik(fn, entry, samples, task, kw, n_chain, n_draw):
    from ..models.fcn import fcn, likelihood_variance

    if entry is not None and entry.model is fcn:
        if "f" not in samples:
            raise ValueError("log_likelihood=True needs the site 'f' recorded (do not exclude it)")
        sd = math.sqrt(likelihood_variance(kw.get("readout", "nonlazy"), kw["width"], kw["temperature"]))
        r = (task.Y - samples["f"]) / sd
        return -0.5 * r**2 - math.log(sd) - 0.5 * math.log(2 * math.pi)
    from numpyro.infer import log_likelihood as _loglik

    flat = {k: v.reshape((-1,) + v.shape[2:]) for k, v in samples.items()}
    return np.asarray(_loglik(fn, flat, task.X, task.Y, **kw)["y"]).reshape((n_chain, n_draw) + task.Y.shape)


def run_config(idata) -> dict:
    """The full provenance of a run made by :func:`sample` (model, its arguments, task, sampler, seed, versions)."""
    attrs = azcompat.get_attrs(idata)
    if "bnnzoo_config" not in attrs:
        raise ValueError("this InferenceData was not made by bnnzoo.sample (no 'bnnzoo_config' attribute)")
    return json.loads(attrs["bnnzoo_config"])


def sample(model, task: Task, *, num_chains: int = 4, num_warmup: int = 500, num_samples: int = 500,
           sampler: str = "nuts", seed: int = 0, thinning: int = 1, record: Sequence[str] = (),
           progress: bool = True, chain_method: str = "auto", step_size: float | None = None,
           num_steps: int | None = None, target_accept: float | None = None, max_tree_depth: int = 10,
           dense_mass: bool = False, init: str = "prior", log_likelihood: bool = False,
           dims: dict | None = None, chunk_size: int | None = None, store=None, resume: bool = False,
           exclude: Sequence[str] = (), site_thinning: dict | None = None, reparam: Sequence[str] | None = (),
           warm_start: int = 0, matmul_precision: str | None = "highest", **model_kwargs):
    """Sample the posterior of ``model`` on ``task`` and return ArviZ data (InferenceData on ArviZ 0.x, DataTree
    on 1.x).

    Parameters
    ----------
    model : a zoo entry name (``bnnzoo list``), a :class:`~bnnzoo.models.ZooEntry`, or any NumPyro model called
        as ``model(X, Y, **model_kwargs)``.
    task : the data (:class:`~bnnzoo.tasks.Task`).
    num_chains, num_warmup, num_samples, thinning : MCMC sizes (draws kept per chain = num_samples // thinning).
    sampler : "nuts" (adaptive) or "hmc" (fixed ``num_steps`` leapfrog steps; give ``step_size`` to fix it too), or
        "gibbs" for linear nets (``deep_linear``, any depth): the exact blocked Gibbs sampler
        (:func:`bnnzoo.inference.gibbs_linear.gibbs_linear`, every conditional Gaussian), same sites and dims;
        num_warmup counts sweeps, chains run one after the other in memory (no store / chunks / HMC settings).
        On the linear toy net at N = P = 100 it gives 19× NUTS's readout ESS per second (benchmarks/results.md).
        "chees": ChEES-HMC (:mod:`bnnzoo.inference.chees`), jittered HMC whose step size, trajectory length and
        diagonal mass are tuned across the chains during warm-up, then fixed: every chain takes the same number of
        leapfrog steps (no tree building, no chain waiting for another); needs num_chains >= 2 (4 or more
        advised), runs through the chunked driver, vectorised on one device or sharded over several.  At
        N = P = 100 it gives 7-35× NUTS's ESS per second of f and 3-17× of K1, but the readout weights barely mix
        (bulk ESS 10-48 of 8000 draws, benchmarks/results_chees.md): check their ESS before reading branches.
        "snaper": the same sampler with the trajectory length tuned by SNAPER's criterion, on the leading principal
        component of the whitened posterior (the slowest direction) rather than on all coordinates: longer
        trajectories, better-mixed readout weights (benchmarks/results_snaper.md).
    target_accept : NUTS/HMC: mean acceptance (default 0.8); ChEES: harmonic-mean acceptance (default 0.651).
    max_tree_depth : NUTS: at most 2**max_tree_depth leapfrog steps per draw; ChEES: the same cap per iteration.
    seed : PRNG seed; the same seed reproduces the run.
    record : extra sites to record, e.g. ("z",) for the preactivations of every layer (what the diagnostics read).
    progress : show a progress bar.
    chain_method : "auto" (one device: vectorised chains; several devices and enough of them: one chain per
        device), or NumPyro's "vectorized", "parallel", "sequential".
    init : "prior" (each chain starts from a prior draw) or "uniform" (NumPyro's default, uniform in (−2, 2)).
    log_likelihood : add the pointwise log-likelihood group (slow and large; off by default).
    dims : dims for the sites of a custom model (zoo entries know theirs).
    **model_kwargs : model arguments; they override the entry's defaults (e.g. width=, temperature=).

    Long runs, many chains, faster exact sampling (any of these runs the chunked driver
    :mod:`bnnzoo.inference.engine`, which gives the same draws as the plain path up to float rounding):

    chunk_size : kept draws per jitted chunk (device memory holds one chunk; default: all draws, or 100 with a
        store).
    store : a folder: every chunk is written there as NetCDF with a sampler-state checkpoint after it.
    resume : continue the run in ``store`` (killed or stopped); the result equals the uninterrupted run.
    exclude : sites not recorded at all (e.g. ("W1",) for a big first layer).
    site_thinning : {site: k}: record that site on every k-th kept draw only (group ``posterior_thinned``, dim
        ``draw_<site>`` holding the kept-draw indices); k must divide ``chunk_size``.
    chain_method : also "sharded": the chains split across all local devices, vectorised on each ("auto" picks
        it when there are several devices and num_chains is a multiple of their number but larger; for ChEES and
        SNAPER, whose chains share their tuning, whenever there are several devices and num_chains is a multiple of
        their number; their tuning then gathers the chains from the devices and equals the vectorised run's up to
        rounding, which the chains' dynamics can grow: float64 runs agree to 1e-14, float32 runs can become
        different, equally valid chains, see tests/perf/test_chains.py).
        Several processes (hosts) after ``jax.distributed.initialize`` (:mod:`bnnzoo.inference.distributed`): call
        ``sample`` with the same arguments in every process; the chains are split over the processes (not the
        Gibbs sampler; num_chains a multiple of the process count; ChEES/SNAPER always sharded over all processes'
        devices), a store gets one sub-folder per process, and every process returns the whole run, equal to the
        single-process run with the same seed (ChEES/SNAPER: up to rounding, see ``chain_method``).
    reparam : FCN zoo entries only: "readout" (readout integrated out, drawn from its Gaussian conditional) and/or
        "data_space" (first layer sampled as preactivations on the training inputs); the posterior is unchanged
        (:mod:`bnnzoo.models.fcn_fast`).
    warm_start : Adam steps on the potential energy from each chain's starting point before warm-up (0: off).
    matmul_precision : float32 matrix-product precision while sampling (``jax.default_matmul_precision``):
        "highest" (default: true float32) keeps the posterior exact on GPUs, whose JAX default rounds float32
        products to TensorFloat32 (10-bit mantissa), which perturbs the potential energy by O(1) at the paper's
        sizes (``benchmarks/bench_precision.py``); None leaves JAX's setting alone. No effect on CPU.

    Groups: ``posterior`` (named dims), ``sample_stats`` (diverging, step_size, tree_depth, n_steps, energy,
    acceptance_rate, lp), ``observed_data`` (y), ``constant_data`` (X, labels), and ``predictions`` (f on X_test)
    when the task has a test set.  Attributes carry the run's full provenance (see :func:`run_config`).
    """
    t_start = time.time()
    name, fn, entry = _resolve_model(model)
    if not isinstance(task, Task):
        raise ValueError(f"task must be a bnnzoo.tasks.Task, got {type(task).__name__}")
    _check_int("num_chains", num_chains, 1)
    _check_int("num_warmup", num_warmup, 0)
    _check_int("num_samples", num_samples, 1)
    _check_int("thinning", thinning, 1)
    _check_int("seed", seed, 0)
    if thinning > num_samples:
        raise ValueError(f"thinning={thinning} exceeds num_samples={num_samples}: no draw would be kept")
    if matmul_precision not in MATMUL_PRECISIONS:
        raise ValueError(f"matmul_precision must be one of {MATMUL_PRECISIONS}, got {matmul_precision!r}")
    kw = entry.kwargs(**model_kwargs) if entry is not None else dict(model_kwargs)
    if record:
        kw["record"] = tuple(record)
    if entry is not None and entry.resolve is not None:
        kw = entry.resolve(task.X, kw)
    X, Y = task.X, task.Y
    if entry is not None:
        entry.validate(X, Y, **kw)
    else:
        params = inspect.signature(fn).parameters
        unknown = [k for k in kw if k not in params and not any(
            p.kind == p.VAR_KEYWORD for p in params.values())]
        if unknown:
            raise ValueError(f"model {name} has no argument(s) {unknown}")
    n_dev = jax.local_device_count()
    if chain_method not in ("auto", "vectorized", "parallel", "sequential", "sharded"):
        raise ValueError(f"chain_method must be 'auto', 'vectorized', 'parallel', 'sequential' or 'sharded', "
                         f"got {chain_method!r}")
    reparam = _check_engine_args(entry, chunk_size, exclude, site_thinning, reparam, warm_start, resume, store)
    if sampler == "gibbs":
        _check_gibbs_args(entry, kw, chunk_size, store, resume, site_thinning, reparam, warm_start, step_size,
                          num_steps, dense_mass)
    if sampler in _CHEES_LIKE:
        if num_chains < 2:
            raise ValueError(f"sampler={sampler!r} tunes across chains: it needs num_chains >= 2 (4 or more advised)")
        if chain_method == "sequential":
            raise ValueError(f"sampler={sampler!r} advances all chains together (its tuning couples them): use "
                             f"chain_method 'auto', 'vectorized' or 'sharded', not 'sequential'")
    n_proc = jax.process_count()
    if n_proc > 1:
        from .distributed import check_sampler

        check_sampler(sampler, num_chains, n_proc)
    use_engine = bool(chunk_size is not None or store is not None or exclude or site_thinning or reparam
                      or warm_start or chain_method == "sharded" or sampler in _CHEES_LIKE or n_proc > 1
                      or (chain_method == "auto" and 1 < n_dev < num_chains and num_chains % n_dev == 0))
    precision = (jax.default_matmul_precision(matmul_precision) if matmul_precision is not None
                 else contextlib.nullcontext())
    with precision:                      # tracing happens inside: every jitted function gets this precision
        gibbs_stats = None
        sample_fn = fn
        if reparam:
            from ..models.fcn_fast import fcn_fast

            sample_fn = partial(fcn_fast, integrate_readout="readout" in reparam, data_space="data_space" in reparam)
        kernel = None
        if sampler != "gibbs":
            kernel = build_kernel(sample_fn, sampler=sampler, step_size=step_size, num_steps=num_steps,
                                  target_accept=target_accept, max_tree_depth=max_tree_depth, dense_mass=dense_mass,
                                  init=init)
        if chain_method == "auto":
            if use_engine:                 # with several processes: this process's chains on its own devices
                n_ch = num_chains // n_proc
                chain_method = "sharded" if n_dev > 1 and n_ch > 1 and n_ch % n_dev == 0 else "vectorized"
            else:
                chain_method = "parallel" if 1 < num_chains <= n_dev else "vectorized"
        site_dims = dims if dims is not None else (entry.dims(**kw) if entry is not None else _infer_dims(fn, X, Y, kw))

        key = jax.random.PRNGKey(seed)
        key_run, key_pred = jax.random.split(key)
        engine_cfg = None
        thinned_group = warmup_groups = None
        if sampler == "gibbs":
            from .gibbs_linear import gibbs_chains

            chain_method = "sequential"
            samples, gibbs_stats, gibbs_info = gibbs_chains(
                X, Y, num_chains=num_chains, num_warmup=num_warmup, num_samples=num_samples, thinning=thinning,
                seed=seed, X_test=task.X_test, exclude=exclude, progress=progress,
                **{k: v for k, v in kw.items() if k != "X_test"})
            f_test_engine = samples.pop("f_test", None)
            use_engine = True                                   # f_test comes with the draws, as from the engine
            engine_cfg = {"chain_method": chain_method, "timing": gibbs_info["timing"]}
            if num_warmup:
                warmup_groups = _gibbs_warmup_datasets(gibbs_info)
        elif use_engine:
            res, engine_cfg = _run_engine(
                name, fn, entry, kernel, task, kw, key_run=key_run, key_pred=key_pred, num_chains=num_chains,
                num_warmup=num_warmup, num_samples=num_samples, thinning=thinning, chain_method=chain_method,
                chunk_size=chunk_size, store=store, resume=resume, exclude=exclude, site_thinning=site_thinning,
                reparam=reparam, warm_start=warm_start, init=init, progress=progress, seed=seed,
                sampler_cfg=dict(sampler=sampler, step_size=step_size, num_steps=num_steps, target_accept=target_accept,
                                 max_tree_depth=max_tree_depth, dense_mass=dense_mass, init=init))
            chain_method = engine_cfg["chain_method"]
            samples = dict(res.samples)
            extra = {_ENGINE_STAT_KEYS[k]: v for k, v in res.stats.items()}
            f_test_engine = samples.pop("f_test", None)
            if res.thinned:
                thinned_group = _thinned_dataset(res, site_dims)
            if res.warmup:
                warmup_groups = _warmup_datasets(res, site_dims)
                if sampler in _CHEES_LIKE:
                    _check_trajectory_settled(sampler, res.warmup, engine_cfg)
        else:
            mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                        thinning=thinning, chain_method=chain_method, progress_bar=progress)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="There are not enough devices")
                mcmc.run(key_run, X, Y, extra_fields=_EXTRA_FIELDS, **kw)
            samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
            extra = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
        n_chain, n_draw = next(iter(samples.values())).shape[:2]
        lead_coords = {"chain": np.arange(n_chain), "draw": np.arange(n_draw)}
        lead = ("chain", "draw")

        posterior = _dataset({k: v for k, v in samples.items() if k != "y"}, site_dims, lead, lead_coords)
        stats = gibbs_stats if gibbs_stats is not None else _nuts_stats(extra)
        sample_stats = _dataset(stats, {}, lead, lead_coords)
        groups = {
            "posterior": posterior,
            "sample_stats": sample_stats,
            "observed_data": xr.Dataset({"y": (("point", "class"), Y)},
                                        coords={"point": np.arange(task.P), "class": np.arange(task.m)}),
            "constant_data": xr.Dataset({"X": (("point", "input"), X), "labels": (("point",), task.labels)},
                                        coords={"point": np.arange(task.P), "input": np.arange(task.N0)}),
        }
        if log_likelihood:
            if gibbs_stats is not None:
                from ..models.fcn import likelihood_variance

                v = likelihood_variance(kw.get("readout", "nonlazy"), kw["width"], kw["temperature"])
                ll = -0.5 * ((Y - samples["f"]) ** 2 / v + math.log(2 * math.pi * v))
            elif use_engine:
                ll = _engine_loglik(fn, entry, samples, task, kw, n_chain, n_draw)
            else:
                from numpyro.infer import log_likelihood as _loglik

                flat = mcmc.get_samples()
                ll = np.asarray(_loglik(fn, flat, X, Y, **kw)["y"]).reshape((n_chain, n_draw) + Y.shape)
            groups["log_likelihood"] = _dataset({"y": ll}, {"y": ["point", "class"]}, lead, lead_coords)
        if thinned_group is not None:
            groups["posterior_thinned"] = thinned_group
        if warmup_groups is not None:
            groups.update(warmup_groups)
        if task.X_test is not None and use_engine and f_test_engine is None:
            warnings.warn("the test-set output f_test was not recorded (excluded, or not computable): no predictions "
                          "group", RuntimeWarning, stacklevel=2)
        elif task.X_test is not None:
            if use_engine:
                f_test = f_test_engine
            else:
                pred = Predictive(fn, posterior_samples=mcmc.get_samples(), return_sites=["f_test"])
                f_test = np.asarray(pred(key_pred, X, Y, **dict(kw, X_test=task.X_test))["f_test"])
                f_test = f_test.reshape((n_chain, n_draw) + f_test.shape[1:])
            groups["predictions"] = _dataset({"f": f_test}, {"f": ["test_point", "class"]}, lead, lead_coords)
            const = {"X_test": (("test_point", "input"), task.X_test), "y_test": (("test_point", "class"), task.Y_test)}
            if task.labels_test is not None:
                const["labels_test"] = (("test_point",), task.labels_test)
            groups["predictions_constant_data"] = xr.Dataset(
                const, coords={"test_point": np.arange(task.X_test.shape[0]), "input": np.arange(task.N0),
                               "class": np.arange(task.m)})

    n_div = int(stats["diverging"].sum())
    sampler_cfg = dict(sampler=sampler, num_chains=num_chains, num_warmup=num_warmup, num_samples=num_samples,
                       thinning=thinning, chain_method=chain_method, step_size=step_size, num_steps=num_steps,
                       target_accept=target_accept, max_tree_depth=max_tree_depth, dense_mass=dense_mass,
                       init=init, matmul_precision=matmul_precision)
    config = dict(model=name, model_kwargs=_jsonable({k: v for k, v in kw.items()}), task=_jsonable(task.meta),
                  task_name=task.name, sampler=_jsonable(sampler_cfg), seed=seed, versions=_versions(),
                  record=list(record), divergences=n_div, wall_time_s=round(time.time() - t_start, 3),
                  created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    if engine_cfg is not None:
        config["engine"] = _jsonable(engine_cfg)
    attrs = {"bnnzoo_config": json.dumps(config), "model": name, "sampler": sampler, "seed": seed,
             "num_chains": num_chains, "num_warmup": num_warmup, "num_samples": num_samples,
             "thinning": thinning,
             "inference_library": {"gibbs": "bnnzoo.inference.gibbs_linear",
                                   "chees": "bnnzoo.inference.chees",
                                   "snaper": "bnnzoo.inference.chees"}.get(sampler, "numpyro"),
             "inference_library_version": config["versions"]["bnnzoo"] if sampler in ("gibbs",) + _CHEES_LIKE
             else numpyro.__version__,
             "bnnzoo_version": config["versions"]["bnnzoo"], "created_at": config["created_at"]}
    for k, v in kw.items():
        if isinstance(v, (int, float, str, np.integer, np.floating)) and not isinstance(v, bool):
            attrs[f"model_{k}"] = v
    if n_div:
        warnings.warn(f"{n_div} divergent transitions out of {n_chain * n_draw} draws: the posterior may be "
                      f"poorly explored; lower step_size or raise target_accept", RuntimeWarning, stacklevel=2)
    idata = azcompat.make_idata(groups, attrs)
    from ..diagnostics.health import warn_if_unhealthy    # chains that did not mix or move: warn, never silent

    warn_if_unhealthy(idata, stacklevel=3)
    return idata
