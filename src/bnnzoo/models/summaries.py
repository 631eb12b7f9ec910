"""Per-draw summaries of a fully-connected net's hidden layers, computed inside the model (on the device, in the
sampling loop): what the diagnostics read, without recording the preactivations (docs/theory.md §7).

For hidden layer l with preactivations z (N, P) on the training points, activations h = φ(z), class labels
argmax(Y) (all points one class when m = 1), network outputs f (P, m) and the centred feature kernel
Kc = H hᵀh H / N (H the centring over the points):

* ``zbar{l}`` (neuron, class), ``hbar{l}`` (neuron, class): every unit's class means of z and of h — its code;
* ``zsq{l}`` (neuron,): every unit's mean of z² over the points — its scale (outliers, code selectivity);
* ``kc_ff{l}``, ``kc_yy{l}``, ``kc_mm{l}``, ``kc_mw{l}`` (class, class_b) and ``kc_norm{l}`` (): Kc seen from the
  centred outputs Fc (Fcᵀ Kc Fc), from the centred targets (Ycᵀ Kc Yc), from the centred class means
  (N Acᵀ Kc Ac, Ac the centred class-mean operator) and from the within-class deviations (N²/P Acᵀ Kc Bw Bwᵀ Kc Ac),
  and ‖Kc‖_F: m × m numbers from which :mod:`bnnzoo.diagnostics.kernels` gets the draw's D_LR, NC1 and CKA with
  YYᵀ exactly as from the activations (``richness_from_projections``).  Only matrix products run in the loop: no
  SVD or eigendecomposition is compiled into it;
* ``K{l}`` (point, point_b) = hᵀh/N and ``Kz{l}`` = zᵀz/N: the layer's kernels at this draw (recorded only as
  means over blocks of draws, see :func:`bnnzoo.sample`).
"""

from __future__ import annotations

import jax.numpy as jnp

import numpy as np

__all__ = ["SUMMARY_SITES", "KERNEL_SITES", "summary_names", "kernel_names", "layer_summaries", "summary_labels"]

SUMMARY_SITES = {"zbar": ["neuron", "class"], "hbar": ["neuron", "class"], "zsq": ["neuron"],
                 "kc_ff": ["class", "class_b"], "kc_yy": ["class", "class_b"], "kc_mm": ["class", "class_b"],
                 "kc_mw": ["class", "class_b"], "kc_norm": []}
"""Per-draw summary sites of each layer (name prefix → dims); the site is the prefix followed by the layer."""

KERNEL_SITES = {"K": ["point", "point_b"], "Kz": ["point", "point_b"]}
"""Kernel sites of each layer (prefix → dims)."""


def summary_names(depth: int) -> list[str]:
    """The summary site names of a net with ``depth`` hidden layers."""
    return [f"{p}{l}" for l in range(1, depth + 1) for p in SUMMARY_SITES]


def kernel_names(depth: int) -> list[str]:
    """The kernel site names of a net with ``depth`` hidden layers."""
    return [f"{p}{l}" for l in range(1, depth + 1) for p in KERNEL_SITES]


def summary_labels(Y) -> np.ndarray:
    """The classes the summaries are computed for, (P,): argmax of the targets, all 0 when m = 1.  A run whose own
    labels differ cannot read its class means from the summaries."""
    Y = np.asarray(Y)
    return np.argmax(Y, axis=1) if Y.shape[1] > 1 else np.zeros(len(Y), int)


def class_operators(Y):
    """(onehot (P, m), A (P, m) the class-mean operator, Ac (P, m) the same centred over the present classes,
    Bw (P, P) the within-class deviation operator: h Bw = h − class mean of h at each point)."""
    P, m = Y.shape
    onehot = (jnp.ones((P, 1), Y.dtype) if m == 1 else
              (jnp.argmax(Y, axis=1)[:, None] == jnp.arange(m)[None, :]).astype(Y.dtype))
    counts = onehot.sum(0)
    present = (counts > 0).astype(Y.dtype)
    A = onehot / jnp.where(counts > 0, counts, 1.0)
    Ac = (A - present[None, :] * A.sum(1, keepdims=True) / jnp.maximum(present.sum(), 1.0)) * present[None, :]
    Bw = jnp.eye(P, dtype=Y.dtype) - A @ onehot.T
    return onehot, A, Ac, Bw


def layer_summaries(z, h, f, Y, layer: int, width: int, kernels: bool = False) -> dict:
    """The summary sites of one hidden layer (module docstring) at one draw.

    Parameters
    ----------
    z, h : (N, P) preactivations and activations of the layer on the training points.
    f : (P, m) network outputs.   Y : (P, m) targets (their argmax gives the classes).
    layer : the layer's number (1-based), appended to the site names.
    width : N.   kernels : also return ``K{layer}`` and ``Kz{layer}``.

    Returns
    -------
    dict
        {site name: array}.
    """
    Y = jnp.asarray(Y, dtype=f.dtype)     # float32 under JAX's default (a float64 NumPy Y would warn)
    P = Y.shape[0]
    _, A, Ac, Bw = class_operators(Y)
    # the centred kernel from the centred activations: float32 loses H K H to cancellation when φ has a large
    # mean (the sigmoid); K itself is Kc plus its rank-two constant part
    mu = h.mean(-1, keepdims=True)
    hc = h - mu
    Kc = hc.T @ hc / width
    Fc = f - f.mean(0, keepdims=True)
    Yc = Y - Y.mean(0, keepdims=True)
    KA = Kc @ Ac
    W = Bw.T @ KA
    out = {f"zbar{layer}": z @ A, f"hbar{layer}": h @ A, f"zsq{layer}": jnp.mean(z**2, axis=-1),
           f"kc_ff{layer}": Fc.T @ Kc @ Fc, f"kc_yy{layer}": Yc.T @ Kc @ Yc, f"kc_mm{layer}": width * Ac.T @ KA,
           f"kc_mw{layer}": (width**2 / P) * W.T @ W, f"kc_norm{layer}": jnp.sqrt(jnp.sum(Kc**2))}
    if kernels:
        v = (hc.T @ mu)[:, 0] / width
        out[f"K{layer}"] = Kc + v[:, None] + v[None, :] + jnp.sum(mu**2) / width
        out[f"Kz{layer}"] = z.T @ z / width
    return out
