"""``bnnzoo.sample``: NUTS / fixed-step HMC on a zoo model, returned as ArviZ data with named dims and provenance."""

from __future__ import annotations

import inspect
import json
import math
import platform
import sys
import time
import warnings
from datetime import datetime, timezone
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

SAMPLERS = ("nuts", "hmc")
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


def build_kernel(fn, *, sampler="nuts", step_size=None, num_steps=None, target_accept=0.8, max_tree_depth=10,
                 dense_mass=False, init="prior"):
    """NUTS or HMC kernel for ``fn``.

    A given ``step_size`` is used as is (no adaptation).  For HMC, ``num_steps`` leapfrog steps are taken per
    draw with ``trajectory_length=None``: NumPyro otherwise derives the number of steps from a trajectory
    length and the (adapted) step size, which silently changes the integrator the user asked for.
    """
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    if step_size is not None and not (np.isfinite(step_size) and step_size > 0):
        raise ValueError(f"step_size must be > 0, got {step_size!r}")
    if not 0 < target_accept < 1:
        raise ValueError(f"target_accept must lie in (0, 1), got {target_accept!r}")
    if init not in ("prior", "uniform"):
        raise ValueError(f"init must be 'prior' (a draw from the prior) or 'uniform' (NumPyro's default), got {init!r}")
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


def run_config(idata) -> dict:
    """The full provenance of a run made by :func:`sample` (model, its arguments, task, sampler, seed, versions)."""
    attrs = azcompat.get_attrs(idata)
    if "bnnzoo_config" not in attrs:
        raise ValueError("this InferenceData was not made by bnnzoo.sample (no 'bnnzoo_config' attribute)")
    return json.loads(attrs["bnnzoo_config"])


def sample(model, task: Task, *, num_chains: int = 4, num_warmup: int = 500, num_samples: int = 500,
           sampler: str = "nuts", seed: int = 0, thinning: int = 1, record: Sequence[str] = (),
           progress: bool = True, chain_method: str = "auto", step_size: float | None = None,
           num_steps: int | None = None, target_accept: float = 0.8, max_tree_depth: int = 10,
           dense_mass: bool = False, init: str = "prior", log_likelihood: bool = False,
           dims: dict | None = None, **model_kwargs):
    """Sample the posterior of ``model`` on ``task`` and return ArviZ data (InferenceData on ArviZ 0.x, DataTree
    on 1.x).

    Parameters
    ----------
    model : a zoo entry name (``bnnzoo list``), a :class:`~bnnzoo.models.ZooEntry`, or any NumPyro model called
        as ``model(X, Y, **model_kwargs)``.
    task : the data (:class:`~bnnzoo.tasks.Task`).
    num_chains, num_warmup, num_samples, thinning : MCMC sizes (draws kept per chain = num_samples // thinning).
    sampler : "nuts" (adaptive) or "hmc" (fixed ``num_steps`` leapfrog steps; give ``step_size`` to fix it too).
    seed : PRNG seed; the same seed reproduces the run.
    record : extra sites to record, e.g. ("z",) for the preactivations of every layer (what the diagnostics read).
    progress : show a progress bar.
    chain_method : "auto" (one device: vectorised chains; several devices and enough of them: one chain per
        device), or NumPyro's "vectorized", "parallel", "sequential".
    init : "prior" (each chain starts from a prior draw) or "uniform" (NumPyro's default, uniform in (−2, 2)).
    log_likelihood : add the pointwise log-likelihood group (slow and large; off by default).
    dims : dims for the sites of a custom model (zoo entries know theirs).
    **model_kwargs : model arguments; they override the entry's defaults (e.g. width=, temperature=).

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
    kernel = build_kernel(fn, sampler=sampler, step_size=step_size, num_steps=num_steps,
                          target_accept=target_accept, max_tree_depth=max_tree_depth, dense_mass=dense_mass,
                          init=init)
    n_dev = jax.local_device_count()
    if chain_method == "auto":
        chain_method = "parallel" if 1 < num_chains <= n_dev else "vectorized"
    if chain_method not in ("vectorized", "parallel", "sequential"):
        raise ValueError(f"chain_method must be 'auto', 'vectorized', 'parallel' or 'sequential', got {chain_method!r}")
    site_dims = dims if dims is not None else (entry.dims(**kw) if entry is not None else _infer_dims(fn, X, Y, kw))

    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                thinning=thinning, chain_method=chain_method, progress_bar=progress)
    key = jax.random.PRNGKey(seed)
    key_run, key_pred = jax.random.split(key)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="There are not enough devices")
        mcmc.run(key_run, X, Y, extra_fields=_EXTRA_FIELDS, **kw)
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    extra = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    n_chain, n_draw = next(iter(samples.values())).shape[:2]
    lead_coords = {"chain": np.arange(n_chain), "draw": np.arange(n_draw)}
    lead = ("chain", "draw")

    posterior = _dataset({k: v for k, v in samples.items() if k != "y"}, site_dims, lead, lead_coords)
    num_steps_arr = extra["num_steps"].astype(int)
    stats = {
        "diverging": extra["diverging"].astype(bool),
        "step_size": extra["adapt_state.step_size"],
        "n_steps": num_steps_arr,
        "tree_depth": (np.floor(np.log2(np.maximum(num_steps_arr, 1))).astype(int) + 1),
        "energy": extra["energy"],
        "acceptance_rate": extra["accept_prob"],
        "lp": -extra["potential_energy"],
    }
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
        from numpyro.infer import log_likelihood as _loglik

        flat = mcmc.get_samples()
        ll = np.asarray(_loglik(fn, flat, X, Y, **kw)["y"]).reshape((n_chain, n_draw) + Y.shape)
        groups["log_likelihood"] = _dataset({"y": ll}, {"y": ["point", "class"]}, lead, lead_coords)
    if task.X_test is not None:
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
                       init=init)
    config = dict(model=name, model_kwargs=_jsonable({k: v for k, v in kw.items()}), task=_jsonable(task.meta),
                  task_name=task.name, sampler=_jsonable(sampler_cfg), seed=seed, versions=_versions(),
                  record=list(record), divergences=n_div, wall_time_s=round(time.time() - t_start, 3),
                  created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    attrs = {"bnnzoo_config": json.dumps(config), "model": name, "sampler": sampler, "seed": seed,
             "num_chains": num_chains, "num_warmup": num_warmup, "num_samples": num_samples,
             "thinning": thinning, "inference_library": "numpyro", "inference_library_version": numpyro.__version__,
             "bnnzoo_version": config["versions"]["bnnzoo"], "created_at": config["created_at"]}
    for k, v in kw.items():
        if isinstance(v, (int, float, str, np.integer, np.floating)) and not isinstance(v, bool):
            attrs[f"model_{k}"] = v
    if n_div:
        warnings.warn(f"{n_div} divergent transitions out of {n_chain * n_draw} draws: the posterior may be "
                      f"poorly explored; lower step_size or raise target_accept", RuntimeWarning, stacklevel=2)
    return azcompat.make_idata(groups, attrs)
