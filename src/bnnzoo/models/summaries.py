"""Per-draw summaries of a fully-connected net's hidden layers, computed inside the model (on the device, in the
sampling loop): what the diagnostics read, without recording the preactivations (docs/theory.md §7).

For hidden layer l with preactivations z (N, P) on the training points, activations h = φ(z), class labels
argmax(Y) (all points one class when m = 1) and network outputs f (P, m):

* ``zbar{l}`` (neuron, class), ``hbar{l}`` (neuron, class): every unit's class means of z and of h — its code;
* ``zsq{l}`` (neuron,): every unit's mean of z² over the points — its scale (outliers, code selectivity);
* ``K{l}`` (point, point_b) = hᵀh/N and ``Kz{l}`` = zᵀz/N: the layer's kernels at this draw (recorded only as
  means over blocks of draws, see :func:`bnnzoo.sample`);
* ``d_lr{l}``, ``nc1_{l}``, ``cka_y{l}`` (scalars): D_LR with the outputs' leading directions, NC1 and the CKA of
  K with YYᵀ at this draw — the same definitions as :func:`bnnzoo.diagnostics.kernels.d_lr`,
  :func:`~bnnzoo.diagnostics.kernels.nc1` and :func:`~bnnzoo.diagnostics.kernels.cka`, written through the P × P
  kernel so that no N × N matrix is formed.
"""

from __future__ import annotations

import jax.numpy as jnp

__all__ = ["SUMMARY_SITES", "KERNEL_SITES", "summary_names", "kernel_names", "layer_summaries"]

SUMMARY_SITES = {"zbar": ["neuron", "class"], "hbar": ["neuron", "class"], "zsq": ["neuron"], "d_lr": [],
                 "nc1_": [], "cka_y": []}
"""Per-draw summary sites of each layer (name prefix → dims); the site is the prefix followed by the layer."""

KERNEL_SITES = {"K": ["point", "point_b"], "Kz": ["point", "point_b"]}
"""Kernel sites of each layer (prefix → dims)."""

_TOL = 1e-8       # relative singular-value cut of kernels.d_lr


def _rank_tol(dtype, n: int):
    """Relative cut below which a singular value counts as zero: numpy.linalg.matrix_rank's n·eps (float32 runs
    leave exact zeros at about eps relative, not 1e-16)."""
    return n * jnp.finfo(dtype).eps


def summary_names(depth: int) -> list[str]:
    """The summary site names of a net with ``depth`` hidden layers."""
    return [f"{p}{l}" for l in range(1, depth + 1) for p in SUMMARY_SITES]


def kernel_names(depth: int) -> list[str]:
    """The kernel site names of a net with ``depth`` hidden layers."""
    return [f"{p}{l}" for l in range(1, depth + 1) for p in KERNEL_SITES]


def _onehot(Y, m):
    P = Y.shape[0]
    if m == 1:
        return jnp.ones((P, 1), Y.dtype)
    return (jnp.argmax(Y, axis=1)[:, None] == jnp.arange(m)[None, :]).astype(Y.dtype)


def _centre(K):
    return K - K.mean(0, keepdims=True) - K.mean(1, keepdims=True) + K.mean()


def _cka(K, L):
    Kc = _centre(K)
    hkl, hkk, hll = jnp.sum(Kc * L), jnp.sum(Kc * K), jnp.sum(_centre(L) * L)
    den = jnp.sqrt(jnp.maximum(hkk * hll, 0.0))
    return jnp.where(den > 0, hkl / jnp.where(den > 0, den, 1.0), jnp.nan)


def _d_lr(K, f, Y):
    """D_LR = 1 − tr(Qᵀ HKH Q)/(‖HKH‖_F √r), Q the r leading left singular vectors of the centred outputs, r the
    rank of the centred targets (kernels.d_lr with rank=that rank)."""
    F = f - f.mean(0, keepdims=True)
    U, s, _ = jnp.linalg.svd(F, full_matrices=False)
    sy = jnp.linalg.svd(Y - Y.mean(0, keepdims=True), compute_uv=False)
    r_y = jnp.maximum(jnp.sum(sy > _rank_tol(sy.dtype, max(Y.shape)) * sy.max()), 1)
    keep = (s > jnp.maximum(_TOL, _rank_tol(s.dtype, max(f.shape))) * jnp.maximum(s.max(), 1e-30)) \
        & (jnp.arange(s.shape[0]) < r_y)
    r = jnp.sum(keep)
    Kc = _centre(K)
    num = jnp.sum(jnp.where(keep, jnp.einsum("pk,pq,qk->k", U, Kc, U), 0.0))
    den = jnp.linalg.norm(Kc) * jnp.sqrt(r.astype(K.dtype))
    return jnp.where((den > 0) & (r > 0), 1.0 - num / jnp.where(den > 0, den, 1.0), jnp.nan)


def _nc1(K, onehot, width):
    """NC1 of features h (N, P) from their centred kernel K: with the centred class means Mc = h Ac (N, C),
    G = Mcᵀ Mc = N Acᵀ K Ac (C × C) with eigenpairs (λ_k, v_k), and S = Mcᵀ Σ_W Mc = (N²/P) Acᵀ K Bw Bwᵀ K Ac
    (Bw = I − A onehotᵀ leaves each point's deviation from its class mean), NC1 = Σ_k v_kᵀ S v_k / λ_k² — the
    sum kernels.nc1 takes over the left singular vectors of Mc, without forming an N × N matrix."""
    P, m = onehot.shape
    counts = onehot.sum(0)
    present = counts > 0
    A = onehot / jnp.where(present, counts, 1.0)            # (P, m): class-mean operator
    nC = jnp.sum(present)
    Ac = (A - jnp.where(present, 1.0, 0.0)[None, :] * (A.sum(1, keepdims=True) / jnp.maximum(nC, 1))) \
        * present[None, :]                                  # centred over the present classes
    # within-class residual operator: h − class mean(h) = h (I − A onehotᵀ)
    Bw = jnp.eye(P, dtype=K.dtype) - A @ onehot.T
    G = width * Ac.T @ K @ Ac                               # Mcᵀ Mc
    S = (width ** 2 / P) * Ac.T @ K @ Bw @ Bw.T @ K @ Ac    # Mcᵀ Σ_W Mc
    lam, V = jnp.linalg.eigh(G)                             # λ = s² of Mc
    # eigenvalues of G carry an absolute error of about eps·λ_max: the zero mode of the centred means is cut there
    keep = lam > 10 * _rank_tol(lam.dtype, m) * jnp.maximum(lam.max(), 1e-30)
    proj = jnp.einsum("ik,ij,jk->k", V, S, V)               # v_kᵀ S v_k
    tr = jnp.sum(jnp.where(keep, proj / jnp.where(keep, lam, 1.0) ** 2, 0.0))
    return jnp.where(jnp.any(keep), tr, jnp.nan)


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
    m = Y.shape[1]
    onehot = _onehot(Y, m)
    counts = onehot.sum(0)
    A = onehot / jnp.where(counts > 0, counts, 1.0)
    # the centred kernel HKH from the centred activations: float32 loses HKH to cancellation when φ has a large
    # mean (the sigmoid); K itself is HKH plus its rank-two constant part
    mu = h.mean(-1, keepdims=True)
    hc = h - mu
    Kc = hc.T @ hc / width
    out = {f"zbar{layer}": z @ A, f"hbar{layer}": h @ A, f"zsq{layer}": jnp.mean(z**2, axis=-1),
           f"d_lr{layer}": _d_lr(Kc, f, Y), f"nc1_{layer}": _nc1(Kc, onehot, width),
           f"cka_y{layer}": _cka(Kc, Y @ Y.T)}
    if kernels:
        v = (hc.T @ mu)[:, 0] / width
        out[f"K{layer}"] = Kc + v[:, None] + v[None, :] + jnp.sum(mu**2) / width
        out[f"Kz{layer}"] = z.T @ z / width
    return out
