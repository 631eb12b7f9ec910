"""Predictive groups: the pointwise log-likelihood, ``posterior_predictive`` and ``prior_predictive`` (+ ``prior``)
for :func:`bnnzoo.sample`, and :func:`predict` (``predictions`` on new inputs) for a finished run.

Every zoo model ends in a Gaussian likelihood ``y ~ Normal(f, v)`` on its output ``f``.  When the zoo entry
declares its likelihood variance (``ZooEntry.likelihood_variance``) and ``f`` was recorded, ``y`` is drawn as
``f + sqrt(v) ε``; otherwise the model itself is run by ``numpyro.infer.Predictive`` with ``Y=None`` at each
posterior draw, which needs the draws of every latent site.
"""

from __future__ import annotations

import inspect
import math
import os

import jax
import numpy as np
from numpyro import handlers
from numpyro.infer import Predictive
from numpyro.infer import log_likelihood as _loglik
from numpyro.primitives import Messenger

from .. import azcompat
from ..models.zoo import ZOO
from .convert import check_provenance, dataset, run_config
from .plan import check_int

__all__ = ["latent_sites", "log_likelihood", "posterior_predictive", "prior_groups", "predict"]


def _takes_num_outputs(fn) -> bool:
    params = inspect.signature(fn).parameters
    return "num_outputs" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def without_y(fn, kw: dict, num_outputs: int) -> dict:
    """``kw`` for calling ``fn`` with ``Y=None``: ``num_outputs`` added when ``fn`` takes it and it is not given."""
    takes = _takes_num_outputs(fn)
    return dict(kw, num_outputs=int(num_outputs)) if takes and kw.get("num_outputs") is None else dict(kw)


class _Unobserved(Messenger):
    """The likelihood site ``y`` drawn instead of observed: ``fn(X, Y)`` then knows the targets' shape (a model of
    one's own that takes no ``num_outputs`` cannot run with ``Y=None``) while ``y`` is sampled as with ``Y=None``."""

    def process_message(self, msg):
        if msg["type"] == "sample" and msg["name"] == "y" and msg.get("is_observed", False):
            msg["is_observed"] = False
            msg["value"] = None


def generative(fn, kw: dict, Y):
    """``(model, Y_arg, kw)`` that run ``fn`` with its likelihood site ``y`` drawn: ``fn`` itself with ``Y=None`` and
    ``num_outputs`` (every zoo model, and models taking ``num_outputs`` or ``**kwargs``), else ``fn`` with the targets
    ``Y`` passed and ``y`` unobserved (:class:`_Unobserved`)."""
    if _takes_num_outputs(fn) or kw.get("num_outputs") is not None:
        return fn, None, without_y(fn, kw, np.shape(Y)[1])
    return _Unobserved(fn), np.asarray(Y), dict(kw)


def latent_sites(fn, X, kw, Y=None) -> list[str]:
    """Names of the latent sample sites of ``fn(X, None, **kw)`` (its likelihood site ``y`` left out); with ``Y``
    given, of ``fn(X, Y, **kw)``."""

    tr = handlers.trace(handlers.seed(fn, 0)).get_trace(X, Y, **kw)
    return [n for n, s in tr.items() if s["type"] == "sample" and not s.get("is_observed", False) and n != "y"]


def _flat(samples: dict, names) -> dict:
    return {k: np.reshape(samples[k], (-1,) + np.shape(samples[k])[2:]) for k in names}


def _need_latents(fn, X, kw, samples, what: str, Y=None) -> list[str]:
    names = latent_sites(fn, X, kw, Y)
    missing = [k for k in names if k not in samples]
    if missing:
        raise ValueError(f"{what} needs the draws of every latent site of the model; missing {missing}: the run left "
                         f"them out (exclude=, or the hidden weights `bnnzoo sample` leaves out by default) or "
                         f"reparametrised them; sample again keeping them (bnnzoo.sample without exclude=, "
                         f"`bnnzoo sample --exclude ''`)")
    return names


def _noise_sd(entry, kw, samples) -> float | None:
    lv = getattr(entry, "likelihood_variance", None) if entry is not None else None
    if lv is None or "f" not in samples:
        return None
    return math.sqrt(float(lv(kw)))


def log_likelihood(fn, entry, samples: dict, X, Y, kw: dict) -> np.ndarray:
    """Pointwise log-likelihood of the observed ``Y`` at every draw: (chain, draw, point, class)."""
    n_chain, n_draw = next(iter(samples.values())).shape[:2]
    sd = _noise_sd(entry, kw, samples)
    if sd is not None:
        r = (np.asarray(Y) - samples["f"]) / sd
        return -0.5 * r**2 - math.log(sd) - 0.5 * math.log(2 * math.pi)

    names = _need_latents(fn, X, kw, samples, "log_likelihood=True", Y=Y)
    ll = np.asarray(_loglik(fn, _flat(samples, names), X, Y, **kw)["y"])
    return ll.reshape((n_chain, n_draw) + np.shape(Y))


def posterior_predictive(fn, entry, samples: dict, X, Y, kw: dict, key) -> np.ndarray:
    """``y`` drawn from the likelihood at every posterior draw: (chain, draw, point, class); ``Y`` the training
    targets (their shape, and the call of a model that cannot run with ``Y=None``: :func:`generative`)."""
    n_chain, n_draw = next(iter(samples.values())).shape[:2]
    sd = _noise_sd(entry, kw, samples)
    if sd is not None:
        f = np.asarray(samples["f"])
        return f + sd * np.asarray(jax.random.normal(key, f.shape, dtype=f.dtype))

    model, Y_arg, kw = generative(fn, kw, Y)
    names = _need_latents(model, X, kw, samples, "posterior_predictive=True", Y=Y_arg)
    y = np.asarray(Predictive(model, posterior_samples=_flat(samples, names), return_sites=["y"])(
        key, X, Y_arg, **kw)["y"])
    return y.reshape((n_chain, n_draw) + y.shape[1:])


def prior_groups(fn, X, Y, kw: dict, key, num_chains: int, num_draws: int, site_dims: dict, exclude=()) -> dict:
    """The ``prior`` (every site but ``y`` and the ``exclude``-d ones) and ``prior_predictive`` (``y``) groups:
    ``num_chains × num_draws`` independent prior draws of the model with ``y`` drawn (:func:`generative`; ``Y``
    the training targets)."""

    model, Y_arg, kw = generative(fn, kw, Y)
    out = Predictive(model, num_samples=num_chains * num_draws)(key, X, Y_arg, **kw)
    arrays = {k: np.asarray(v).reshape((num_chains, num_draws) + np.shape(v)[1:]) for k, v in out.items()
              if k not in exclude}
    lead, coords = ("chain", "draw"), {"chain": np.arange(num_chains), "draw": np.arange(num_draws)}
    y = arrays.pop("y")
    return {"prior": dataset(arrays, site_dims, lead, coords),
            "prior_predictive": dataset({"y": y}, {"y": ["point", "class"]}, lead, coords)}


def _stored_kwargs(entry, stored: dict) -> dict:
    """The model keyword arguments of a run from its provenance (JSON: lists back to tuples; a value stored as its
    repr is taken from the entry's defaults when it is the default's repr)."""
    kw = {}
    for k, v in stored.items():
        if entry is not None and k in entry.defaults and isinstance(v, str) \
                and not isinstance(entry.defaults[k], str):
            if v != repr(entry.defaults[k]):
                raise ValueError(f"the run's model argument {k!r} was stored as its repr only; pass {k}= to predict")
            v = entry.defaults[k]
        kw[k] = tuple(v) if isinstance(v, list) else v
    return kw


def _run_of(idata):
    """The run ``idata`` as given (InferenceData / DataTree), or read from the NetCDF file it names.

    Parameters
    ----------
    idata : InferenceData, DataTree, str or os.PathLike
        A run of :func:`bnnzoo.sample`, or the path of the NetCDF file ``bnnzoo sample --out`` or
        :func:`bnnzoo.azcompat.to_netcdf` wrote.

    Returns
    -------
    InferenceData or DataTree
        The run (read from the file for a path).

    Raises
    ------
    ValueError
        A path that does not exist, is a folder, is empty, or is not a readable NetCDF file; anything else that is
        not an InferenceData / DataTree.
    """
    if isinstance(idata, (str, os.PathLike)):
        return azcompat.read_run_file(idata, "idata")
    if not azcompat.is_idata(idata):
        raise ValueError(f"idata must be a run of bnnzoo.sample (ArviZ InferenceData or DataTree) or the path of its "
                         f"NetCDF file, got {type(idata).__name__}")
    return idata


def _check_model_keywords(fn, given) -> None:
    """Refuse, with one line listing the valid names, keywords that the model ``fn`` does not take.

    Parameters
    ----------
    fn : callable
        The run's NumPyro model ``fn(X, Y, **kwargs)``; one that takes ``**kwargs`` accepts every name.
    given : iterable of str
        The keyword names passed to :func:`predict` besides ``seed`` and ``model``.

    Raises
    ------
    ValueError
        A name ``fn`` does not take (its data arguments ``X``, ``Y`` and ``X_test`` are not settable either).
    """
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):          # a callable without a signature: the model itself will say
        return
    if any(q.kind is inspect.Parameter.VAR_KEYWORD for q in params):
        return
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    valid = [q.name for q in params[2:] if q.kind in kinds and q.name != "X_test"]   # the first two: X, Y
    bad = sorted(set(given) - set(valid))
    if bad:
        name = getattr(fn, "__name__", "model")
        takes = f"the model arguments of {name}: {', '.join(valid)}" if valid else f"no arguments of {name}"
        raise ValueError(f"predict got unknown keyword(s) {', '.join(map(repr, bad))}; besides seed= and model= it "
                         f"takes {takes}")


def _input_dim(idata) -> int | None:
    """The number of input columns of the run's model: the columns of its training inputs (``constant_data``
    ``X``), or None when the run does not store them."""
    if "constant_data" not in azcompat.group_names(idata):
        return None
    const = azcompat.get_group(idata, "constant_data")
    return int(const["X"].shape[-1]) if "X" in const and const["X"].ndim == 2 else None


def check_new_inputs(X_new, n_inputs: int | None) -> np.ndarray:
    """Check new inputs for :func:`predict` before anything compiles.

    Parameters
    ----------
    X_new : array_like, shape (test_point, input)
        The new inputs.
    n_inputs : int or None
        The number of input columns the run's model takes (the training inputs' columns); None: not checked.

    Returns
    -------
    numpy.ndarray, shape (test_point, input)
        ``X_new`` as an array.

    Raises
    ------
    ValueError
        One line naming ``X_new`` and what it must be: not a 2-d array of real numbers, no rows, a number of
        columns other than ``n_inputs``, a NaN or ±inf, or a value beyond the largest number of the float type the
        model computes in (float32 unless JAX's 64-bit mode is on), which would become inf there.
    """
    cols = f" with {n_inputs} columns" if n_inputs is not None else ""
    if isinstance(X_new, (str, bytes)):
        raise ValueError(f"X_new must be a finite 2-d numeric array (test_point, input){cols}, got a string")
    try:
        X = np.asarray(X_new)
    except Exception:  # noqa: BLE001  ragged lists and the like
        raise ValueError(f"X_new must be a finite 2-d numeric array (test_point, input){cols}, got "
                         f"{type(X_new).__name__}") from None
    if X.ndim != 2:
        raise ValueError(f"X_new must be a finite 2-d numeric array (test_point, input){cols}, got shape {X.shape}")
    if X.dtype.kind not in "iuf":
        raise ValueError(f"X_new must hold real numbers (integers or floats), got dtype {X.dtype}")
    if X.shape[0] == 0:
        raise ValueError(f"X_new has no rows: give at least one test point, shape (n >= 1, "
                         f"{n_inputs if n_inputs is not None else X.shape[1]})")
    if n_inputs is not None and X.shape[1] != n_inputs:
        raise ValueError(f"X_new has {X.shape[1]} columns; the run's model takes {n_inputs} (its training inputs' "
                         f"columns): give shape (n, {n_inputs})")
    if X.dtype.kind == "f":
        bad = ~np.isfinite(X)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError(f"X_new must be finite: X_new[{i}, {j}] is {X[i, j]}")
        dtype = jax.dtypes.canonicalize_dtype(np.float64)        # float32 unless JAX's 64-bit mode is on
        top = np.finfo(dtype).max
        if np.finfo(X.dtype).max > top:
            big = np.abs(X) > top
            if big.any():
                i, j = np.argwhere(big)[0]
                raise ValueError(f"X_new must be finite in {np.dtype(dtype).name}, the model's float type: "
                                 f"X_new[{i}, {j}] = {X[i, j]:g} is beyond its largest number {top:.3g}")
    return X


def predict(idata, X_new, *, seed: int = 0, model=None, **model_kwargs):
    """A copy of a run made by :func:`bnnzoo.sample` with the ``predictions`` group (``f`` and ``y`` on new inputs);
    the run itself is left as it was.

    At every posterior draw the network's output ``f`` on ``X_new`` is computed and ``y`` drawn from the
    likelihood around it, with the run's model and model arguments (from its provenance, see
    :func:`bnnzoo.run_config`).  In the copy, an existing ``predictions`` / ``predictions_constant_data`` group (the
    task's test set) is replaced: the new inputs have no targets, so test-set comparisons that need them are not
    made on the copy.  Every argument is checked before anything compiles.

    Parameters
    ----------
    idata : InferenceData, DataTree, str or os.PathLike
        A run of :func:`bnnzoo.sample` (InferenceData on ArviZ 0.x, DataTree on 1.x) whose posterior holds every
        latent site, or the path of its NetCDF file.
    X_new : array_like, shape (test_point, input)
        The new inputs: real numbers, finite in the model's float type (float32 unless JAX's 64-bit mode is on),
        at least one row, as many columns as the run's training inputs.
    seed : int
        Seed (>= 0) of the likelihood noise in ``y``.
    model : callable or ZooEntry, optional
        The NumPyro model of the run when it is not a zoo entry (a function ``model(X, Y, **kwargs)``).
    **model_kwargs
        Override model arguments of the run (needed for arguments stored only as their repr); only names the
        model takes.

    Returns
    -------
    InferenceData or DataTree
        A new object sharing the run's other groups, with ``predictions`` {f, y: (chain, draw, test_point, class)}
        and ``predictions_constant_data`` {X_test: (test_point, input)}.

    Raises
    ------
    ValueError
        One line naming the argument: ``idata`` neither a run nor the path of a readable run file (a missing file,
        a folder, a file that is not NetCDF, a NetCDF file not written by :func:`bnnzoo.sample`), the model not
        found, ``model`` not callable, ``seed`` not an integer >= 0, a keyword the model does not take, ``X_new``
        not 2-d, not numeric, without rows, with the wrong number of columns, or with a NaN, ±inf or a value
        beyond the model's float type, other model arguments that do not fit, or a latent site missing from the
        posterior.
    """


    check_int("seed", seed, 0)
    idata = _run_of(idata)
    try:
        cfg = run_config(idata)
    except ValueError:
        raise ValueError("idata was not made by bnnzoo.sample (its attributes hold no 'bnnzoo_config'): give a run "
                         "of bnnzoo.sample or the path of its NetCDF file") from None
    entry = ZOO.get(cfg["model"])
    if model is None:
        if entry is None:
            raise ValueError(f"the run's model {cfg['model']!r} is not a zoo entry: pass model= (its NumPyro function)")
        fn = entry.model
    else:
        if not callable(getattr(model, "model", model)):
            raise ValueError(f"model must be the run's NumPyro model function or its zoo entry, got "
                             f"{type(model).__name__}")
        fn = model.model if hasattr(model, "model") else model
        entry = model if hasattr(model, "model") else None
    _check_model_keywords(fn, model_kwargs)
    X_new = check_new_inputs(X_new, _input_dim(idata))
    kw = _stored_kwargs(entry, {k: v for k, v in cfg["model_kwargs"].items() if k not in model_kwargs})
    kw.update(model_kwargs)
    post = azcompat.get_group(idata, "posterior")
    samples = {k: post[k].values for k in post.data_vars}
    if "f" in samples:
        kw = without_y(fn, kw, samples["f"].shape[-1])
    try:
        if entry is not None:
            entry.validate(X_new, None, **kw)
        names = _need_latents(fn, X_new, kw, samples, "predict")
    except ValueError as err:
        doubt = check_provenance(idata)      # an edited provenance is the likelier cause: say it first
        if doubt is None:
            raise
        raise ValueError(f"idata: {doubt}, so the model it names does not fit its draws ({err})") from None
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    out = Predictive(fn, posterior_samples=_flat(samples, names), return_sites=["f", "y"])(
        jax.random.PRNGKey(seed), X_new, None, **kw)
    arrays = {k: np.asarray(out[k]).reshape((n_chain, n_draw) + np.shape(out[k])[1:]) for k in ("f", "y")}
    lead, coords = ("chain", "draw"), {"chain": post["chain"].values, "draw": post["draw"].values}
    pred = dataset(arrays, {"f": ["test_point", "class"], "y": ["test_point", "class"]}, lead, coords)
    const = dataset({"X_test": X_new}, {"X_test": ["test_point", "input"]}, (), {})
    attrs = azcompat.get_attrs(idata)
    pred.attrs.update(attrs)
    const.attrs.update(attrs)
    return azcompat.set_groups(azcompat.shallow_copy(idata), {"predictions": pred, "predictions_constant_data": const})
