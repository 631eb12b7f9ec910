"""Elementwise nonlinearities of the zoo (docs/theory.md §1), in JAX."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

__all__ = ["ACTIVATIONS", "get_activation", "sigmoid_erf"]

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


def get_activation(name: str):
    """Return the activation function called ``name`` (one of :data:`ACTIVATIONS`)."""
    try:
        return ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {name!r}") from None
