"""Draws into ArviZ groups: named dims, the one table of sampler statistics, the run's provenance.

Every sampler path of :func:`bnnzoo.sample` (NumPyro's ``MCMC``, the chunked driver, the exact Gibbs sampler) hands
its draws here as ``{site: (chain, draw, ...)}`` arrays; :data:`SAMPLE_STATS` is the single table that says which
sampler field becomes which ``sample_stats`` variable.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import json
import platform
from datetime import datetime, timezone
from typing import Sequence

import jax
import numpy as np
import numpyro
import xarray as xr
from numpyro import handlers

from .. import azcompat
from ..models.fcn import fcn_dims
from ..models.zoo import list_entries
from .chunked import STAT_FIELDS

__all__ = ["SAMPLE_STATS", "EXTRA_FIELDS", "sample_stats", "dataset", "thinned_dataset", "warmup_datasets",
           "gibbs_warmup_datasets", "infer_dims", "jsonable", "versions", "bnnzoo_version", "run_config",
           "parse_config", "posterior_group", "sample_stats_group", "observed_data_group", "constant_data_group",
           "predictions_group", "predictions_constant_data_group", "lead_coords", "provenance", "provenance_checksum",
           "check_provenance", "sealed"]

# sample_stats name -> (NumPyro extra field / engine state field, conversion).  NumPyro's extra fields and the
# chunked driver's state fields carry the same names (chunked.STAT_FIELDS keys), so one table serves both.
SAMPLE_STATS = {
    "diverging": ("diverging", lambda x: np.asarray(x).astype(bool)),
    "step_size": ("adapt_state.step_size", np.asarray),
    "n_steps": ("num_steps", lambda x: np.asarray(x).astype(int)),
    "tree_depth": ("num_steps", lambda x: np.floor(np.log2(np.maximum(np.asarray(x).astype(int), 1))).astype(int) + 1),
    "energy": ("energy", np.asarray),
    "acceptance_rate": ("accept_prob", np.asarray),
    "lp": ("potential_energy", lambda x: -np.asarray(x)),
}
EXTRA_FIELDS = tuple(dict.fromkeys(src for src, _ in SAMPLE_STATS.values()))   # what NumPyro's MCMC must collect


def sample_stats(fields: dict) -> dict:
    """The ``sample_stats`` arrays from sampler fields named as NumPyro's extra fields (see :data:`SAMPLE_STATS`)."""
    return {name: conv(fields[src]) for name, (src, conv) in SAMPLE_STATS.items()}


def bnnzoo_version() -> str:
    """The installed bnnzoo's version (package metadata; "unknown" when bnnzoo runs from a source tree)."""
    try:
        return importlib.metadata.version("bnnzoo")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def jsonable(v):
    """``v`` with numpy scalars turned into Python numbers, a typed spec (anything with ``to_dict``, e.g.
    :class:`~bnnzoo.tasks.gated_tasks.GatedSpec`) into its dict, and anything else unknown into its repr."""
    if hasattr(v, "to_dict"):
        return jsonable(v.to_dict())
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return repr(v)


def versions() -> dict:
    """Versions of bnnzoo and the libraries it ran on, with the JAX backend and devices."""
    return {"bnnzoo": bnnzoo_version(), "jax": jax.__version__, "numpyro": numpyro.__version__,
            "arviz": azcompat.AZ_VERSION, "xarray": xr.__version__, "numpy": np.__version__,
            "python": platform.python_version(), "jax_backend": jax.default_backend(),
            "devices": ", ".join(str(d) for d in jax.devices())}


def known_dims() -> dict[str, list[str]]:
    """The dims the zoo gives its sites ({site: dims}): the fully-connected nets' (up to ten layers, every
    preactivation recorded) first, then every other entry's sites of other names."""
    known = fcn_dims(10, ("z",), with_test=True)
    for entry in list_entries():
        try:
            for k, v in entry.dims(**dict(entry.defaults, record=entry.record)).items():
                known.setdefault(k, list(v))
        except (TypeError, ValueError):
            continue
    return known


def infer_dims(fn, X, Y, kw) -> dict[str, list[str]]:
    """Dims of the sample and deterministic sites of an arbitrary model: from its plates, and for the axes no
    plate names, the zoo's dims of a site of the same name and rank (:func:`known_dims`: ``f`` (point, class),
    ``q_a`` (class), ``a`` (neuron, class), ...); ``<site>_dim_<i>`` otherwise."""
    tr = handlers.trace(handlers.seed(fn, 0)).get_trace(X, Y, **kw)
    known = known_dims()
    dims = {}
    for name, site in tr.items():
        if site["type"] not in ("sample", "deterministic"):
            continue
        shape = np.shape(site["value"])
        names = [f"{name}_dim_{i}" for i in range(len(shape))]
        if name in known and len(known[name]) == len(shape):
            names = list(known[name])
        for frame in site.get("cond_indep_stack", ()):
            if -len(shape) <= frame.dim < 0:
                names[len(shape) + frame.dim] = frame.name
        dims[name] = names
    return dims


def dataset(arrays: dict, dims: dict, lead: Sequence[str], lead_coords: dict) -> xr.Dataset:
    """A Dataset of ``arrays`` whose leading axes are ``lead`` and the rest named by ``dims[site]`` (the last
    ones when fewer names than axes; ``<site>_dim_i`` for unnamed axes)."""
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


def thinned_dataset(res, site_dims, site_means=None) -> xr.Dataset:
    """The ``posterior_thinned`` group: each site on its own kept draws (dim ``draw_<site>``); a site in
    ``site_means`` ({site: e}) holds means of e consecutive kept draws, at the index of each mean's last draw,
    and says so in its attribute ``bnnzoo_mean_of_draws``."""
    data, coords = {}, {"chain": np.arange(next(iter(res.thinned.values())).shape[0])}
    for k, arr in res.thinned.items():
        d = list(site_dims.get(k, []))[-(arr.ndim - 2):] if arr.ndim > 2 else []
        if len(d) != arr.ndim - 2:
            d = [f"{k}_dim_{i}" for i in range(arr.ndim - 2)]
        full = ["chain", f"draw_{k}"] + d
        data[k] = (full, arr, {"bnnzoo_mean_of_draws": int(site_means[k])} if k in (site_means or {}) else {})
        coords[f"draw_{k}"] = res.thinned_draws[k]
        for dim, n in zip(full[2:], arr.shape[2:]):
            coords.setdefault(dim, np.arange(n))
    return xr.Dataset(data, coords=coords)


def warmup_datasets(res, site_dims) -> dict:
    """``warmup_posterior`` (the small sites) and ``warmup_sample_stats`` (with ``time``) of a chunked run."""
    w = res.warmup
    n_chain, n_step = w["num_steps"].shape
    lead, coords = ("chain", "draw"), {"chain": np.arange(n_chain), "draw": np.arange(n_step)}
    small = {k: v for k, v in w.items() if k not in STAT_FIELDS.values() and k != "time"}
    fields = {src: w[name] for src, name in STAT_FIELDS.items()}
    ss = dataset(sample_stats(fields), {}, lead, coords)
    ss["time"] = (("draw",), w["time"])
    return {"warmup_posterior": dataset(small, site_dims, lead, coords), "warmup_sample_stats": ss}


def gibbs_warmup_datasets(info) -> dict:
    """Warm-up trace of the Gibbs chains or the unit-wise sampler: MSE per sweep, and seconds since each chain's
    start (Gibbs chains run one after the other, so ``time`` is (chain, draw) there; the unit-wise sampler batches its
    chains, so (draw,) as for the vectorised engine), and the acceptance rate per sweep when ``info`` has
    ``warmup_acceptance``."""
    mse = np.asarray(info["warmup_mse"])
    lead, coords = ("chain", "draw"), {"chain": np.arange(mse.shape[0]), "draw": np.arange(mse.shape[1])}
    t = np.asarray(info["warmup_time"])
    ss = xr.Dataset({"time": (lead if t.ndim == 2 else ("draw",), t)}, coords=coords)
    if "warmup_acceptance" in info:
        ss["acceptance_rate"] = (lead, np.asarray(info["warmup_acceptance"]))
    return {"warmup_posterior": xr.Dataset({"mse": (lead, mse)}, coords=coords), "warmup_sample_stats": ss}


def run_config(idata) -> dict:
    """The full provenance of a run made by :func:`bnnzoo.sample` (model, its arguments, task, sampler, seed,
    versions).

    Raises
    ------
    ValueError
        if ``idata`` was not made by :func:`bnnzoo.sample`.
    """
    attrs = azcompat.get_attrs(idata)
    if "bnnzoo_config" not in attrs:
        raise ValueError("this InferenceData was not made by bnnzoo.sample (no 'bnnzoo_config' attribute)")
    return parse_config(attrs["bnnzoo_config"])


def parse_config(text) -> dict:
    """The provenance ``bnnzoo_config`` (JSON text; a ValueError if not) as a dict, read back in this one place: a
    typed spec is stored as its dict (:func:`jsonable`), and the repr ``"GatedSpec({...})"`` that an older bnnzoo
    stored reads back as that dict too."""
    config = json.loads(text)
    kw = config.get("model_kwargs") if isinstance(config, dict) else None
    for k, v in (kw.items() if isinstance(kw, dict) else ()):
        if isinstance(v, str) and v.startswith("GatedSpec({") and v.endswith("})"):
            kw[k] = ast.literal_eval(v[len("GatedSpec("):-1])
    return config


# ------------------------------------------------------------------------------------------------ one function per group
# (the predictive groups: bnnzoo.inference.predictive)

def lead_coords(draws) -> tuple[tuple, dict]:
    """("chain", "draw") and their coordinates for the draws of a :class:`~bnnzoo.inference.engines.Draws`."""
    n_chain, n_draw = next(iter(draws.samples.values())).shape[:2]
    return ("chain", "draw"), {"chain": np.arange(n_chain), "draw": np.arange(n_draw)}


def posterior_group(spec, draws) -> xr.Dataset:
    """``posterior``: every recorded site but the observations, with the entry's (or the given) dims."""
    lead, coords = lead_coords(draws)
    return dataset({k: v for k, v in draws.samples.items() if k != "y"}, spec.recording.dims, lead, coords)


def sample_stats_group(spec, draws) -> xr.Dataset:
    """``sample_stats``: the sampler statistics (:data:`SAMPLE_STATS`, and an engine's own)."""
    lead, coords = lead_coords(draws)
    return dataset(draws.stats, {}, lead, coords)


def observed_data_group(spec) -> xr.Dataset:
    """``observed_data``: the targets y (point, class)."""
    t = spec.task
    return xr.Dataset({"y": (("point", "class"), t.Y)}, coords={"point": np.arange(t.P), "class": np.arange(t.m)})


def constant_data_group(spec) -> xr.Dataset:
    """``constant_data``: the inputs X (point, input) and the class labels."""
    t = spec.task
    return xr.Dataset({"X": (("point", "input"), t.X), "labels": (("point",), t.labels)},
                      coords={"point": np.arange(t.P), "input": np.arange(t.N0)})


def predictions_group(spec, draws) -> xr.Dataset:
    """``predictions``: the network outputs f (test_point, class) on the test set."""
    lead, coords = lead_coords(draws)
    return dataset({"f": draws.f_test}, {"f": ["test_point", "class"]}, lead, coords)


def predictions_constant_data_group(spec) -> xr.Dataset:
    """``predictions_constant_data``: the test inputs, targets and labels."""
    t = spec.task
    const = {"X_test": (("test_point", "input"), t.X_test), "y_test": (("test_point", "class"), t.Y_test)}
    if t.labels_test is not None:
        const["labels_test"] = (("test_point",), t.labels_test)
    return xr.Dataset(const, coords={"test_point": np.arange(t.X_test.shape[0]), "input": np.arange(t.N0),
                                     "class": np.arange(t.m)})


_CHECKED_ATTRS = ("model", "sampler", "seed", "num_chains", "num_warmup", "num_samples", "thinning")


def provenance_checksum(attrs: dict, posterior) -> str:
    """SHA-256 of a run's provenance: its ``bnnzoo_*`` attributes (the checksum's own excepted), the flat ones
    ArviZ shows (model, sampler, sizes, the scalar model arguments ``model_*``) and the name, dims and dtype of
    every posterior variable.  Stored as the attribute ``bnnzoo_checksum``; :func:`check_provenance` recomputes it."""
    keys = sorted(k for k in attrs if (k.startswith(("bnnzoo_", "model_")) or k in _CHECKED_ATTRS)
                  and k not in ("bnnzoo_checksum", "bnnzoo_version"))
    h = hashlib.sha256()
    for k in keys:
        h.update(f"{k}={attrs[k]}\n".encode())
    if posterior is not None:
        for name in sorted(posterior.data_vars):
            v = posterior[name]
            h.update(f"{name}:{v.dims}:{v.shape}:{v.dtype}\n".encode())
    return h.hexdigest()


def check_provenance(idata) -> str | None:
    """None when the run's provenance matches its checksum (or carries none: made elsewhere, or by an older
    bnnzoo); otherwise a one-line message for a warning: its attributes were edited after it was written, so the
    model settings they state (activation, temperature, ...) may not be the ones its draws came from."""
    post = azcompat.get_group(idata, "posterior") if "posterior" in azcompat.group_names(idata) else None
    return provenance_doubt(azcompat.get_attrs(idata), post)


def provenance_doubt(attrs: dict, posterior) -> str | None:
    """:func:`check_provenance` on a run's attributes and posterior group, already read."""
    want = attrs.get("bnnzoo_checksum")
    if want is None or provenance_checksum(attrs, posterior) == str(want):
        return None
    return ("the run's provenance does not match its checksum (its attributes were edited after it was written): "
            "the model settings it states may not be the ones its draws came from")


def provenance(spec, draws, wall_time_s: float, library: str = "numpyro") -> dict:
    """The run's attributes: ``bnnzoo_config`` (the full provenance as JSON, read by :func:`run_config`) and the
    flat attributes ArviZ shows (model, sampler, sizes, libraries, the scalar model arguments).  ``library`` is the
    library that drew (the engine's ``Engine.library``): NumPyro, a bnnzoo module (bnnzoo's version) or another
    package (its installed version, read without importing it)."""
    n_div = int(np.asarray(draws.stats["diverging"]).sum())
    c = spec.chains
    config = dict(model=spec.name, model_kwargs=jsonable(dict(spec.model_kwargs)), task=jsonable(spec.task.meta),
                  task_name=spec.task.name, sampler=jsonable(spec.sampler_config()), seed=c.seed,
                  versions=versions(), record=list(spec.recording.record), divergences=n_div,
                  wall_time_s=round(wall_time_s, 3),
                  created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    if draws.engine is not None:
        config["engine"] = jsonable(draws.engine)
    if library.startswith("bnnzoo"):
        lib_version = config["versions"]["bnnzoo"]
    elif library == "numpyro":
        lib_version = numpyro.__version__
    else:                                 # e.g. blackjax: its version without importing it here (0.4 s)
        lib_version = importlib.metadata.version(library)
    attrs = {"bnnzoo_config": json.dumps(config), "model": spec.name, "sampler": spec.sampler.name, "seed": c.seed,
             "num_chains": c.num_chains, "num_warmup": c.num_warmup, "num_samples": c.num_samples,
             "thinning": c.thinning, "inference_library": library,
             "inference_library_version": lib_version, "bnnzoo_version": config["versions"]["bnnzoo"],
             "created_at": config["created_at"]}
    for k, v in spec.model_kwargs.items():
        if isinstance(v, (int, float, str, np.integer, np.floating)) and not isinstance(v, bool):
            attrs[f"model_{k}"] = v
    return attrs


def sealed(attrs: dict, posterior) -> dict:
    """``attrs`` with their ``bnnzoo_checksum`` (:func:`provenance_checksum`) set for ``posterior``."""
    return dict(attrs, bnnzoo_checksum=provenance_checksum(attrs, posterior))
