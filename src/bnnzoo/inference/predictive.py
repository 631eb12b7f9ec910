"""Predictive groups: the pointwise log-likelihood, ``posterior_predictive`` and ``prior_predictive`` (+ ``prior``)
for :func:`bnnzoo.sample`, and :func:`predict` (``predictions`` on new inputs) for a finished run.

Every zoo model ends in a Gaussian likelihood ``y ~ Normal(f, v)`` on its output ``f``.  When the zoo entry
declares its likelihood variance (``ZooEntry.likelihood_variance``) and ``f`` was recorded, ``y`` is drawn as
``f + sqrt(v) ε``; otherwise the model itself is run by ``numpyro.infer.Predictive`` with ``Y=None`` at each
posterior draw, which needs the draws of every latent site.
"""

from __future__ import annotations

import math

import jax
import numpy as np
from numpyro.primitives import Messenger

from .. import azcompat
from .convert import dataset, run_config

__all__ = ["latent_sites", "log_likelihood", "posterior_predictive", "prior_groups", "predict"]


def _takes_num_outputs(fn) -> bool:
    import inspect

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
    from numpyro import handlers

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
    from numpyro.infer import log_likelihood as _loglik

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
    from numpyro.infer import Predictive

    model, Y_arg, kw = generative(fn, kw, Y)
    names = _need_latents(model, X, kw, samples, "posterior_predictive=True", Y=Y_arg)
    y = np.asarray(Predictive(model, posterior_samples=_flat(samples, names), return_sites=["y"])(
        key, X, Y_arg, **kw)["y"])
    return y.reshape((n_chain, n_draw) + y.shape[1:])


def prior_groups(fn, X, Y, kw: dict, key, num_chains: int, num_draws: int, site_dims: dict, exclude=()) -> dict:
    """The ``prior`` (every site but ``y`` and the ``exclude``-d ones) and ``prior_predictive`` (``y``) groups:
    ``num_chains × num_draws`` independent prior draws of the model with ``y`` drawn (:func:`generative`; ``Y``
    the training targets)."""
    from numpyro.infer import Predictive

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


def predict(idata, X_new, *, seed: int = 0, model=None, **model_kwargs):
    """A copy of a run made by :func:`bnnzoo.sample` with the ``predictions`` group (``f`` and ``y`` on new inputs);
    the run itself is left as it was.

    At every posterior draw the network's output ``f`` on ``X_new`` is computed and ``y`` drawn from the
    likelihood around it, with the run's model and model arguments (from its provenance, see
    :func:`bnnzoo.run_config`).  In the copy, an existing ``predictions`` / ``predictions_constant_data`` group (the
    task's test set) is replaced: the new inputs have no targets, so test-set comparisons that need them are not
    made on the copy.

    Parameters
    ----------
    idata : a run of :func:`bnnzoo.sample` (InferenceData on ArviZ 0.x, DataTree on 1.x) whose posterior holds
        every latent site.
    X_new : array (test_point, input), the new inputs, shaped like the run's training inputs.
    seed : int >= 0, seed of the likelihood noise in ``y``.
    model : the NumPyro model of the run when it is not a zoo entry (a function ``model(X, Y, **kwargs)``).
    **model_kwargs : override model arguments of the run (needed for arguments stored only as their repr).

    Returns
    -------
    A new InferenceData / DataTree sharing the run's other groups, with ``predictions`` {f, y: (chain, draw,
    test_point, class)} and ``predictions_constant_data`` {X_test: (test_point, input)}.

    Raises
    ------
    ValueError
        if ``idata`` is not a bnnzoo run, the model cannot be found, ``seed`` is not an integer >= 0, ``X_new`` does
        not fit the model, or a latent site is missing from the posterior.
    """
    from numpyro.infer import Predictive

    from ..models.zoo import ZOO
    from .plan import check_int

    check_int("seed", seed, 0)
    cfg = run_config(idata)
    entry = ZOO.get(cfg["model"])
    if model is None:
        if entry is None:
            raise ValueError(f"the run's model {cfg['model']!r} is not a zoo entry: pass model= (its NumPyro function)")
        fn = entry.model
    else:
        fn = model.model if hasattr(model, "model") else model
        entry = model if hasattr(model, "model") else None
    kw = _stored_kwargs(entry, {k: v for k, v in cfg["model_kwargs"].items() if k not in model_kwargs})
    kw.update(model_kwargs)
    X_new = np.asarray(X_new)
    if X_new.ndim != 2 or not np.issubdtype(X_new.dtype, np.number) or not np.isfinite(X_new).all():
        raise ValueError(f"X_new must be a finite 2-d numeric array (test_point, input), got shape {X_new.shape}")
    post = azcompat.get_group(idata, "posterior")
    samples = {k: post[k].values for k in post.data_vars}
    if "f" in samples:
        kw = without_y(fn, kw, samples["f"].shape[-1])
    if entry is not None:
        entry.validate(X_new, None, **kw)
    names = _need_latents(fn, X_new, kw, samples, "predict")
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
