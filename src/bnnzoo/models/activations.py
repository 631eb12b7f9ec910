"""Elementwise nonlinearities of the zoo (the theory page §1): one table in JAX for the models, the same functions in
float64 NumPy for post-hoc analysis of draws.

``ACTIVATIONS`` are the fully-connected nets' φ; the three-layer net also takes ``"erf"`` (φ(z) = erf(z), its
default).  :func:`get_activation` / :func:`np_activation` look a name up in both.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from scipy import special

__all__ = ["ACTIVATIONS", "NP_ACTIVATIONS", "get_activation", "np_activation", "sigmoid_erf"]

_ALPHA = math.sqrt(math.pi) / 2.0


def sigmoid_erf(z):
    """The paper's sigmoid φ(z) = ½[1 + erf(√π z / 2)] (slope ½ at 0, like the logistic function)."""
    return 0.5 * (1.0 + jax.scipy.special.erf(_ALPHA * z))


ACTIVATIONS = {
    "linear": lambda z: z,
    "sigmoid": sigmoid_erf,
    "relu": lambda z: jnp.maximum(z, 0.0),
    "softplus": jax.nn.softplus,
    "relu2": lambda z: jnp.maximum(z, 0.0) ** 2,
}

_EXTRA = {"erf": jax.scipy.special.erf}

NP_ACTIVATIONS = {
    "linear": lambda z: z,
    "sigmoid": lambda z: 0.5 * (1.0 + special.erf(_ALPHA * z)),
    "relu": lambda z: np.maximum(z, 0.0),
    "softplus": lambda z: np.logaddexp(0.0, z),
    "relu2": lambda z: np.maximum(z, 0.0) ** 2,
    "erf": special.erf,
}
"""The same functions as :data:`ACTIVATIONS` (and "erf") in NumPy."""


def get_activation(name: str, extra: bool = False):
    """The JAX activation called ``name`` (one of :data:`ACTIVATIONS`; with ``extra`` also "erf")."""
    table = {**ACTIVATIONS, **_EXTRA} if extra else ACTIVATIONS
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"activation must be one of {sorted(table)}, got {name!r}") from None


def np_activation(name: str):
    """The NumPy version of the activation called ``name`` (one of :data:`NP_ACTIVATIONS`)."""
    try:
        return NP_ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"activation must be one of {sorted(NP_ACTIVATIONS)}, got {name!r}") from None
