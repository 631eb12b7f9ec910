"""The model's potential and its chains' starting points without running the model op by op.

NumPyro's ``initialize_model`` traces the model eagerly and searches for valid starting points in an eager loop, so
every primitive of the model and of its gradient is dispatched, and compiled, one at a time: on 2 CPU cores that
was most of the fixed cost of a small ``bnnzoo.sample`` call (docs' Benchmarks page, "Fixed cost").  Here the
model's structure comes from an abstract evaluation (``jax.eval_shape``: shapes and supports, nothing computed)
and the starting points from NumPyro's own ``find_valid_initial_params`` inside the caller's jitted program, all
chains at once.  The same keys give the same starting points as ``initialize_model``, to the bit.

Models this path does not cover (``param`` / ``mutable`` sites, discrete latent sites, supports that depend on
other values, subsampled plates) return None from :func:`model_functions`; the caller then uses
``initialize_model``.
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import jax
import numpy as np
from numpyro import handlers
from numpyro.distributions.transforms import biject_to
from numpyro.infer.hmc import hmc
from numpyro.infer.initialization import init_to_sample, init_to_uniform
from numpyro.infer.util import find_valid_initial_params, get_potential_fn

from .compilation import compile_cached

__all__ = ["ModelFunctions", "model_functions", "initial_params", "fast_kernel"]


class ModelFunctions(NamedTuple):
    """What a kernel needs of a model, as NumPyro's ``initialize_model`` gives it (``dynamic_args=True``).

    Attributes
    ----------
    potential_gen : callable ``(*model_args, **model_kwargs) -> (params -> potential energy)``.
    postprocess_gen : callable ``(*model_args, **model_kwargs) -> (params -> constrained sites)``: the latent
        sites in their support and, when the model has any, its deterministic sites.
    prototype : {site: zeros of the unconstrained site's shape} for one chain.
    inv_transforms : {site: the transform from the unconstrained space to the site's support}.
    """

    potential_gen: Callable
    postprocess_gen: Callable
    prototype: dict
    inv_transforms: dict


def init_strategy(init):
    """The NumPyro init strategy for ``init`` of :func:`bnnzoo.sample`: "prior" → ``init_to_sample``, "uniform" →
    ``init_to_uniform``, an ``init_to_*`` strategy itself; a dict of starting values → ``init_to_sample`` (the
    given values replace what it draws)."""
    if callable(init):
        return init
    return init_to_uniform if init == "uniform" else init_to_sample


def _static_support(support) -> bool:
    """True when the support's bounds are plain numbers (no value of the model decides them)."""
    for name in ("lower_bound", "upper_bound"):
        if hasattr(support, name) and not isinstance(getattr(support, name), (int, float)):
            return False
    return True


def model_functions(model, model_args: tuple, model_kwargs: dict) -> ModelFunctions | None:
    """The potential, the postprocessing and the site shapes of ``model(*model_args, **model_kwargs)``, found by
    an abstract evaluation of one prior draw.

    Parameters
    ----------
    model : a NumPyro model.
    model_args, model_kwargs : its arguments.

    Returns
    -------
    ModelFunctions, or None for a model outside this path (module docstring).
    """
    found: dict = {}

    def draw(key):
        tr = handlers.trace(handlers.seed(model, key)).get_trace(*model_args, **model_kwargs)
        found["trace"] = {n: dict(type=s["type"], fn=s.get("fn"), observed=s.get("is_observed", False),
                                  subsampled=(s["type"] == "plate" and s["args"][1] not in (None, s["args"][0])))
                          for n, s in tr.items()}
        return {n: s["value"] for n, s in tr.items() if s["type"] == "sample" and not s.get("is_observed", False)}

    shapes = jax.eval_shape(draw, jax.random.PRNGKey(0))
    sites = found["trace"]
    latent = {n: s for n, s in sites.items() if s["type"] == "sample" and not s["observed"]}
    if not latent or any(s["type"] in ("param", "mutable") or s["subsampled"] for s in sites.values()):
        return None
    if any(s["fn"].support.is_discrete or not _static_support(s["fn"].support) for s in latent.values()):
        return None
    inv_transforms = {n: biject_to(s["fn"].support) for n, s in latent.items()}
    prototype = {n: np.zeros(inv_transforms[n].inverse_shape(shapes[n].shape), shapes[n].dtype) for n in latent}
    replay = any(s["type"] == "deterministic" for s in sites.values())
    pe_gen, pp_gen = get_potential_fn(handlers.seed(model, rng_seed=0), inv_transforms, replay_model=replay,
                                      dynamic_args=True, model_args=model_args, model_kwargs=model_kwargs)
    return ModelFunctions(pe_gen, pp_gen, prototype, inv_transforms)


def initial_params(fns: ModelFunctions, model, keys, init_strategy, model_args: tuple, model_kwargs: dict):
    """Starting points of all chains, unconstrained: NumPyro's ``find_valid_initial_params`` over the chains' keys
    (up to 100 tries per chain for a finite potential and gradient); traceable, so it runs inside a jitted program.

    Parameters
    ----------
    fns : :func:`model_functions` of ``model``.
    model : the NumPyro model.
    keys : (chain, 2) PRNG keys.
    init_strategy : a NumPyro ``init_to_*`` strategy.
    model_args, model_kwargs : the model's arguments.

    Returns
    -------
    (params, is_valid) : {site: (chain, ...)} and a (chain,) bool array, False where no try was valid.
    """
    (params, _, _), ok = find_valid_initial_params(keys, model, init_strategy=init_strategy, model_args=model_args,
                                                   model_kwargs=model_kwargs, prototype_params=fns.prototype)
    return params, ok


class _FastInit:
    """NumPyro's HMC / NUTS with the initialisation of :mod:`bnnzoo.inference.initialize`: the model's functions from
    an abstract evaluation and the whole of ``init`` (starting points, step-size and mass-matrix state of every
    chain) as one jitted program.  Sampling is NumPyro's, unchanged."""

    def _init_state(self, rng_key, model_args, model_kwargs, init_params):
        fns = self._fast_fns
        if init_params is None:
            keys = rng_key if rng_key.ndim == 2 else rng_key[None]
            init_params, self._fast_ok = initial_params(fns, self._model, keys, self._init_strategy, model_args,
                                                        model_kwargs)
            if rng_key.ndim != 2:
                init_params = jax.tree.map(lambda v: v[0], init_params)
        if self._init_fn is None:
            self._init_fn, self._sample_fn = hmc(potential_fn_gen=fns.potential_gen, kinetic_fn=self._kinetic_fn,
                                                 algo=self._algo)
        self._potential_fn_gen, self._postprocess_fn = fns.potential_gen, fns.postprocess_gen
        self._inv_transforms, self._dynamic_support = fns.inv_transforms, False
        return init_params

    def init(self, rng_key, num_warmup, init_params=None, model_args=(), model_kwargs={}):  # noqa: B006 (NumPyro's)
        self._fast_fns = None if self._model is None else model_functions(self._model, model_args, model_kwargs)
        if self._fast_fns is None or self._forward_mode_differentiation:
            return super().init(rng_key, num_warmup, init_params, model_args, model_kwargs)

        def run(k, p):
            self._fast_ok = None
            state = super(_FastInit, self).init(k, num_warmup, p, model_args, model_kwargs)
            return state, (True if self._fast_ok is None else self._fast_ok)

        # the model's arguments enter as constants: the warm-up adaptation keeps closures over them after init
        state, ok = compile_cached(jax.jit(run).lower(rng_key, init_params))(rng_key, init_params)
        _check_valid(ok)
        return state


def _check_valid(ok):
    """Raise when a chain found no valid starting point (NumPyro raises RuntimeError there too)."""
    ok = np.atleast_1d(np.asarray(ok))
    if not ok.all():
        raise RuntimeError(f"no valid starting point (finite potential and gradient) in 100 prior draws for "
                           f"chain(s) {np.flatnonzero(~ok).tolist()}: check the model and its data")


@functools.cache
def fast_kernel(cls):
    """``cls`` (NumPyro's ``HMC`` or ``NUTS``) with the jitted initialisation of this module."""
    return type(f"{cls.__name__}", (_FastInit, cls), {"__module__": __name__,
                                                        "__doc__": f"NumPyro's {cls.__name__}, initialised in one "
                                                                   f"jitted program (bnnzoo.inference.initialize)."})
