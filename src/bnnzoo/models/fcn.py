"""Fully-connected Bayesian networks (theory.md §1), as one plain NumPyro model function.

    z¹ = W¹ xᵀ / √N0,   zˡ = Wˡ φ(zˡ⁻¹) / √N  (l = 2..L),   f_r(x) = s_N Σ_i a_ir φ(z_i^L(x))

with readout prefactor s_N = 1/N (``readout="nonlazy"``, mean-field / rich) or 1/√N (``readout="lazy"``, NTK/GP).
Prior: hidden weights i.i.d. N(0, σ_w²), readout i.i.d. N(0, σ_a²).  Likelihood: Gaussian with variance T/N per
output entry (non-lazy: the paper's rescaled temperature T → T/N) or T (lazy).  Default σ_a² is the paper's rule
(non-lazy: 1/P for the sigmoid at any depth, P^{-1/L} otherwise; lazy: 1).

Sites (names users and diagnostics rely on; every axis is named by a plate):
    W1 (neuron, input), W2..WL (neuron, neuron_in), a (neuron, class), f (point, class), y (point, class, observed),
    mse () and q_a (class,) scalar order parameters, z1..zL (neuron, point) only when recorded,
    f_test (test_point, class) only when ``X_test`` is given.

``fcn.observables`` / zoo entries (:mod:`bnnzoo.models.zoo`) say which theory predicts which site.
"""

from __future__ import annotations

import math
from typing import Sequence

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from .activations import ACTIVATIONS, get_activation

__all__ = ["fcn", "default_sigma_a2", "likelihood_variance", "readout_scale", "fcn_dims", "check_fcn_args",
           "recorded_layers"]

READOUTS = ("nonlazy", "lazy")


def default_sigma_a2(activation: str, readout: str, P: int, depth: int) -> float:
    """The paper's readout prior variance (theory.md §1): σ_a² = 1/P for the sigmoid (any depth), P^{-1/L} for
    linear, ReLU and the other unbounded activations (softplus, ReLU², our choice: they grow like ReLU), 1 for a lazy
    readout."""
    if readout == "lazy":
        return 1.0
    if activation == "sigmoid":
        return 1.0 / P
    return float(P) ** (-1.0 / depth)


def readout_scale(readout: str, width: int) -> float:
    """Readout prefactor: 1/N (non-lazy) or 1/√N (lazy)."""
    return 1.0 / width if readout == "nonlazy" else 1.0 / math.sqrt(width)


def likelihood_variance(readout: str, width: int, temperature: float) -> float:
    """Variance of the Gaussian likelihood per output entry: T/N (non-lazy) or T (lazy)."""
    return temperature / width if readout == "nonlazy" else temperature


def recorded_layers(record: Sequence[str], depth: int) -> list[int]:
    """Layers whose preactivations are recorded: "z" means all, "z1".."zL" single layers."""
    layers = set()
    for r in record:
        if r == "z":
            layers.update(range(1, depth + 1))
        elif r.startswith("z") and r[1:].isdigit() and 1 <= int(r[1:]) <= depth:
            layers.add(int(r[1:]))
        else:
            raise ValueError(f"record: unknown entry {r!r}; use 'z' (all layers) or 'z1'..'z{depth}'")
    return sorted(layers)


def check_fcn_args(X, Y=None, *, width, depth=1, activation="linear", readout="nonlazy", temperature=0.01,
                   sigma_a2=None, sigma_w2=1.0, num_outputs=None, X_test=None, record=()):
    """Validate the arguments of :func:`fcn` with clear ``ValueError`` messages, before anything is compiled."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must have shape (P, N0), got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    if Y is not None:
        Y = np.asarray(Y)
        if Y.ndim != 2 or Y.shape[0] != X.shape[0]:
            raise ValueError(f"Y must have shape (P, m) with P = {X.shape[0]} (rows of X), got {Y.shape}")
        if not np.all(np.isfinite(Y)):
            raise ValueError("Y contains NaN or infinite values")
        if num_outputs is not None and num_outputs != Y.shape[1]:
            raise ValueError(f"num_outputs={num_outputs} disagrees with Y, which has {Y.shape[1]} columns")
    elif num_outputs is None or int(num_outputs) < 1:
        raise ValueError("with Y=None (prior / predictive) give num_outputs, the number of outputs m >= 1")
    if X_test is not None:
        X_test = np.asarray(X_test)
        if X_test.ndim != 2 or X_test.shape[1] != X.shape[1]:
            raise ValueError(f"X_test must have shape (P_test, {X.shape[1]}), got {X_test.shape}")
        if not np.all(np.isfinite(X_test)):
            raise ValueError("X_test contains NaN or infinite values")
    if not isinstance(width, (int, np.integer)) or width < 1:
        raise ValueError(f"width must be an integer >= 1, got {width!r}")
    if not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ValueError(f"depth must be an integer >= 1, got {depth!r}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
    if readout not in READOUTS:
        raise ValueError(f"readout must be 'nonlazy' (1/N) or 'lazy' (1/sqrt(N)), got {readout!r}")
    if not (np.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    if sigma_a2 is not None and not (np.isfinite(sigma_a2) and sigma_a2 > 0):
        raise ValueError(f"sigma_a2 must be > 0, got {sigma_a2!r}")
    if not (np.isfinite(sigma_w2) and sigma_w2 > 0):
        raise ValueError(f"sigma_w2 must be > 0, got {sigma_w2!r}")
    recorded_layers(record, depth)


def fcn_dims(depth: int, record: Sequence[str] = (), with_test: bool = False) -> dict[str, list[str]]:
    """Dims of every site of :func:`fcn` (for the ArviZ conversion)."""
    dims = {"W1": ["neuron", "input"], "a": ["neuron", "class"], "f": ["point", "class"],
            "y": ["point", "class"], "mse": [], "q_a": ["class"]}
    for l in range(2, depth + 1):
        dims[f"W{l}"] = ["neuron", "neuron_in"]
    for l in recorded_layers(record, depth):
        dims[f"z{l}"] = ["neuron", "point"]
    if with_test:
        dims["f_test"] = ["test_point", "class"]
    return dims


def _forward(X, Ws, a, phi, N0, width, scale):
    """Preactivations of every layer (list of (N, n_points)) and the output (n_points, m)."""
    zs = [Ws[0] @ X.T / math.sqrt(N0)]
    for W in Ws[1:]:
        zs.append(W @ phi(zs[-1]) / math.sqrt(width))
    f = scale * (phi(zs[-1]).T @ a)
    return zs, f


def fcn(X, Y=None, *, width: int, depth: int = 1, activation: str = "linear", readout: str = "nonlazy",
        temperature: float = 0.01, sigma_a2: float | None = None, sigma_w2: float = 1.0,
        num_outputs: int | None = None, X_test=None, record: Sequence[str] = ()):
    """Fully-connected Bayesian network with a Gaussian prior and tempered Gaussian (MSE) likelihood.

    Parameters
    ----------
    X : (P, N0) training inputs.  Y : (P, m) targets, or None for the prior / prior predictive (then give
        ``num_outputs``).
    width : N, the width of every hidden layer.  depth : L, the number of hidden layers.
    activation : "linear", "sigmoid" (the paper's erf sigmoid), "relu", "softplus" or "relu2".
    readout : "nonlazy" (1/N prefactor, likelihood variance T/N) or "lazy" (1/√N, variance T).
    temperature : T > 0 (rescaled temperature in the non-lazy regime).
    sigma_a2 : readout prior variance; None = the paper's rule :func:`default_sigma_a2` with P = len(X).
    sigma_w2 : hidden-weight prior variance.
    X_test : optional (P_test, N0) inputs; the network output there is recorded as the deterministic ``f_test``
        (no latent site is added, so passing X_test to MCMC does not change the posterior).
    record : preactivations to record as deterministic sites: "z" (all layers) or "z1".."zL".
    """
    P, N0 = X.shape
    m = Y.shape[1] if Y is not None else int(num_outputs)
    if Y is not None:
        assert Y.shape == (P, m), f"Y has shape {Y.shape}, expected {(P, m)}"
    phi = get_activation(activation)
    s2a = default_sigma_a2(activation, readout, P, depth) if sigma_a2 is None else sigma_a2
    scale = readout_scale(readout, width)
    noise_sd = math.sqrt(likelihood_variance(readout, width, temperature))
    sw = math.sqrt(sigma_w2)

    neuron = numpyro.plate("neuron", width, dim=-2)
    Ws = []
    with neuron:
        with numpyro.plate("input", N0, dim=-1):
            Ws.append(numpyro.sample("W1", dist.Normal(0.0, sw)))
        for l in range(2, depth + 1):
            with numpyro.plate("neuron_in", width, dim=-1):
                Ws.append(numpyro.sample(f"W{l}", dist.Normal(0.0, sw)))
        with numpyro.plate("class", m, dim=-1):
            a = numpyro.sample("a", dist.Normal(0.0, math.sqrt(s2a)))
    assert a.shape[-2:] == (width, m), f"a has shape {a.shape}"

    zs, f = _forward(X, Ws, a, phi, N0, width, scale)
    assert f.shape[-2:] == (P, m), f"f has shape {f.shape}"
    for l in recorded_layers(record, depth):
        numpyro.deterministic(f"z{l}", zs[l - 1])
    numpyro.deterministic("f", f)
    numpyro.deterministic("q_a", jnp.mean(a**2, axis=-2))
    if Y is not None:
        numpyro.deterministic("mse", jnp.mean((Y - f) ** 2))
    with numpyro.plate("point", P, dim=-2), numpyro.plate("class", m, dim=-1):
        numpyro.sample("y", dist.Normal(f, noise_sd), obs=Y)

    if X_test is not None:
        _, f_test = _forward(X_test, Ws, a, phi, N0, width, scale)
        numpyro.deterministic("f_test", f_test)
    return f
