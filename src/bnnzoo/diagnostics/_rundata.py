"""The numpy view of a run the fully-connected diagnostics read (:class:`RunData`), and the small helpers it needs.

A RunData is built from a :class:`~bnnzoo.diagnostics.run.Run` (:meth:`Run.fcn <bnnzoo.diagnostics.run.Run.fcn>`),
never the other way; tests build one by hand from known arrays.  Below :mod:`bnnzoo.diagnostics.run` and
:mod:`bnnzoo.diagnostics._data` (whose :func:`~bnnzoo.diagnostics._data.run_data` is the fully-connected
diagnostics' one conversion): both import it, it imports neither.  :func:`richness_from_projections` lives here because :meth:`RunData.per_draw` uses
it; :mod:`bnnzoo.diagnostics.kernels` re-exports it with the other richness measures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..models.activations import np_activation

__all__ = ["RunData", "batches", "class_means", "richness_from_projections"]


@dataclass
class RunData:
    """Numpy view of a run (leading axes chain, draw).

    a : (C, D, N, m) readout weights.   f : (C, D, P, m) training outputs or None.
    weights : [W1 (C, D, N, N0), W2.. (C, D, N, N)] hidden weights (may be empty if only z were stored).
    X : (P, N0), Y : (P, m), labels : (P,) training data.   X_test, Y_test, labels_test, f_test : test set or None.
    activation, depth, width, readout, temperature, sigma_a2, sigma_w2 : the model's settings.
    recorded_z : {layer: (C, D, N, P)} recorded preactivations.   summaries : {site: (C, D, ...)} the recorded
    per-draw summaries (:mod:`bnnzoo.models.summaries`: zbar1, hbar1, zsq1, kc_ff1, ..., kc_norm1, ...).
    kernel_means : {"K1": (C, B, P, P), "Kz1": ..., "K1_draws": draws per mean} the streamed kernel means.
    Every per-unit quantity is read from the summaries when they were recorded, else from z (recorded, or
    recomputed from the weights).
    config : :func:`bnnzoo.run_config` (empty dict for runs made elsewhere).
    """

    a: np.ndarray
    X: np.ndarray
    Y: np.ndarray
    labels: np.ndarray
    activation: str
    depth: int
    weights: list = field(default_factory=list)
    recorded_z: dict = field(default_factory=dict)
    f: np.ndarray | None = None
    summaries: dict = field(default_factory=dict)
    kernel_means: dict = field(default_factory=dict)
    X_test: np.ndarray | None = None
    Y_test: np.ndarray | None = None
    labels_test: np.ndarray | None = None
    f_test: np.ndarray | None = None
    readout: str = "nonlazy"
    temperature: float = float("nan")
    sigma_a2: float = float("nan")
    sigma_w2: float = 1.0
    config: dict = field(default_factory=dict)
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_chains(self) -> int:
        return self.a.shape[0]

    @property
    def n_draws(self) -> int:
        return self.a.shape[1]

    @property
    def width(self) -> int:
        return self.a.shape[2]

    @property
    def m(self) -> int:
        return self.a.shape[3]

    @property
    def P(self) -> int:
        return self.X.shape[0]

    @property
    def phi(self):
        return np_activation(self.activation)

    @property
    def task(self) -> dict:
        return dict(self.config.get("task", {}))

    @property
    def is_orthogonal_toy(self) -> bool:
        t = self.task
        if t.get("orthogonal"):
            return True
        K0 = self.X @ self.X.T / self.X.shape[1]
        return bool(np.allclose(K0, np.eye(self.P), atol=1e-6))

    def has_z(self, layer: int) -> bool:
        """Whether the preactivations of ``layer`` at every draw can be had (recorded, or the weights are)."""
        return layer in self.recorded_z or len(self.weights) >= self.depth

    def has_kernels(self, layer: int) -> bool:
        """Whether the kernels of ``layer`` can be had (streamed block means, or from z)."""
        return (f"K{layer}" in self.kernel_means and f"Kz{layer}" in self.kernel_means) or self.has_z(layer)

    def z(self, layer: int) -> np.ndarray:
        """Preactivations of hidden layer ``layer`` (1-based) on the training points, (C, D, N, P)."""
        if not 1 <= layer <= self.depth:
            raise ValueError(f"layer must be in 1..{self.depth}, got {layer}")
        if layer in self.recorded_z:
            return self.recorded_z[layer]
        return self._forward(self.X, "train")[layer - 1]

    def z_test(self, layer: int) -> np.ndarray:
        """Preactivations of layer ``layer`` on the test points, (C, D, N, P_test) (needs the weights)."""
        if self.X_test is None:
            raise ValueError("this run has no test set")
        return self._forward(self.X_test, "test")[layer - 1]

    def _forward(self, X, key):
        if key in self._cache:
            return self._cache[key]
        if len(self.weights) < self.depth:
            raise ValueError("the posterior holds neither the preactivations nor the hidden weights W1..WL; "
                             "sample with record=('z',), or without exclude= of the weights")
        N0 = X.shape[1]
        zs = [np.einsum("cdni,pi->cdnp", self.weights[0], X, optimize=True) / math.sqrt(N0)]
        for W in self.weights[1:]:
            zs.append(np.einsum("cdnj,cdjp->cdnp", W, self.phi(zs[-1]), optimize=True) / math.sqrt(self.width))
        self._cache[key] = zs
        return zs

    def class_means(self, layer: int, activated: bool = False) -> np.ndarray:
        """Per-class mean of the layer's preactivations (or activations if ``activated``), (C, D, N, m)."""
        site = f"{'hbar' if activated else 'zbar'}{layer}"
        if site in self.summaries:
            return self.summaries[site]
        key = ("cm", layer, activated)
        if key not in self._cache:
            z = self.z(layer)
            self._cache[key] = class_means(self.phi(z) if activated else z, self.labels, self.m)
        return self._cache[key]

    def unit_msq(self, layer: int) -> np.ndarray:
        """Every unit's mean of z² over the training points, (C, D, N)."""
        site = f"zsq{layer}"
        if site in self.summaries:
            return self.summaries[site]
        return np.mean(self.z(layer) ** 2, axis=-1)

    def per_draw(self, name: str, layer: int) -> np.ndarray | None:
        """``name`` ("d_lr", "nc1", "cka_y") of ``layer`` at every draw, (C, D), from the recorded projections of
        the centred kernel (:func:`~bnnzoo.diagnostics.kernels.richness_from_projections`); None when the run did
        not record them (or the outputs ``f``)."""
        sites = [f"{p}{layer}" for p in ("kc_ff", "kc_yy", "kc_mm", "kc_mw", "kc_norm")]
        if self.f is None or not all(s in self.summaries for s in sites):
            return None
        key = ("richness", layer)
        if key not in self._cache:
            rank = max(int(np.linalg.matrix_rank(self.Y - self.Y.mean(0))), 1)
            d, n, c = richness_from_projections(self.f, self.Y, *(self.summaries[s] for s in sites), rank=rank)
            self._cache[key] = {"d_lr": d, "nc1": n, "cka_y": c}
        return self._cache[key][name]

    def kernel_batches(self, layer: int, n_batches: int = 10, pre: bool = False):
        """The layer's feature kernel φ(z)ᵀφ(z)/N (or, ``pre``, zᵀz/N) averaged over blocks of consecutive draws:
        (blocks (C·B, P, P), weights (C·B,) the draws in each).  From the streamed kernel means when recorded,
        else from z in ``n_batches`` blocks per chain."""
        site = f"{'Kz' if pre else 'K'}{layer}"
        if site in self.kernel_means:
            Kb = self.kernel_means[site]
            C, B = Kb.shape[:2]
            return Kb.reshape((C * B,) + Kb.shape[2:]), np.full(C * B, float(self.kernel_means[site + "_draws"]))
        key = ("kb", layer, n_batches, pre)
        if key not in self._cache:
            z = self.z(layer)
            f = z if pre else self.phi(z)
            C, D, N, P = f.shape
            bt = batches(D, n_batches)
            Kb = np.array([[np.einsum("dnp,dnq->pq", f[c, a:b], f[c, a:b], optimize=True) / ((b - a) * N)
                            for a, b in bt] for c in range(C)]).reshape(-1, P, P)
            w = np.array([[b - a for a, b in bt] for _ in range(C)], float).reshape(-1)
            self._cache[key] = (Kb, w)
        return self._cache[key]


def batches(n_draws: int, n_batches: int) -> list[tuple[int, int]]:
    """``n_batches`` blocks of consecutive draws (fewer when there are fewer draws), as (start, stop) pairs."""
    edges = np.linspace(0, n_draws, min(n_batches, n_draws) + 1).astype(int)
    return [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def class_means(x: np.ndarray, labels: np.ndarray, m: int | None = None) -> np.ndarray:
    """Mean over the points of each class.

    Parameters
    ----------
    x : ndarray (..., P)
        Values at the P points (e.g. preactivations (chain, draw, neuron, point)).
    labels : ndarray (P,)
        Class of every point, integers 0..m − 1.
    m : int or None
        Number of classes (None: the largest label + 1); a class without points gets 0.

    Returns
    -------
    ndarray (..., m)
    """
    labels = np.asarray(labels)
    m = int(labels.max()) + 1 if m is None else m
    onehot = (labels[:, None] == np.arange(m)[None, :]).astype(x.dtype if x.dtype.kind == "f" else float)
    counts = onehot.sum(0)
    return (x @ onehot) / np.where(counts > 0, counts, 1)


def richness_from_projections(f, Y, kc_ff, kc_yy, kc_mm, kc_mw, kc_norm, rank: int, eps: float = 1.2e-7):
    """D_LR, NC1 and the CKA with YYᵀ of every draw from the projections of the centred kernel the model records
    (:mod:`bnnzoo.models.summaries`): the same numbers as :func:`~bnnzoo.diagnostics.kernels.d_lr` (with
    ``rank``), :func:`~bnnzoo.diagnostics.kernels.nc1` and :func:`~bnnzoo.diagnostics.kernels.cka` on the draw's
    activations.

    Parameters
    ----------
    f : (..., P, m) outputs.   Y : (P, m) targets.
    kc_ff, kc_yy, kc_mm, kc_mw : (..., m, m) Fcᵀ Kc Fc, Ycᵀ Kc Yc, N Acᵀ Kc Ac, N²/P Acᵀ Kc Bw Bwᵀ Kc Ac.
    kc_norm : (...) ‖Kc‖_F.   rank : the rank of the centred targets.
    eps : the relative precision the projections were computed in (float32's): the cut below which an eigenvalue
        of the m × m matrices counts as zero scales with it.

    Returns
    -------
    (d_lr, nc1, cka), each of shape (...).
    """
    f, Y = np.asarray(f, float), np.asarray(Y, float)
    kc_ff, kc_mm, kc_mw = (np.asarray(x, float) for x in (kc_ff, kc_mm, kc_mw))
    kc_yy, kc_norm = np.asarray(kc_yy, float), np.asarray(kc_norm, float)
    m = Y.shape[1]
    # D_LR: the leading directions of the centred outputs from the eigenpairs of Fcᵀ Fc (u_k = Fc v_k / s_k)
    Fc = f - f.mean(-2, keepdims=True)
    lam, V = np.linalg.eigh(np.swapaxes(Fc, -1, -2) @ Fc)
    lam, V = lam[..., ::-1], V[..., ::-1]
    s = np.sqrt(np.maximum(lam, 0.0))
    tol = max(1e-8, max(f.shape[-2:]) * eps) * np.max(s, -1, keepdims=True)
    keep = (s > tol) & (np.arange(m) < rank)
    quad = np.einsum("...ik,...ij,...jk->...k", V, kc_ff, V)
    num = np.sum(np.where(keep, quad / np.where(keep, lam, 1.0), 0.0), -1)
    r = keep.sum(-1)
    den = kc_norm * np.sqrt(r)
    dlr = np.where((den > 0) & (r > 0), 1.0 - num / np.where(den > 0, den, 1.0), np.nan)
    # NC1: Σ_k v_kᵀ S v_k / λ_k² over the non-zero eigenpairs of G = Mcᵀ Mc (kernels.nc1's sum)
    lam, V = np.linalg.eigh(kc_mm)
    keep = lam > 10 * m * eps * np.max(lam, -1, keepdims=True)
    proj = np.einsum("...ik,...ij,...jk->...k", V, kc_mw, V)
    nc = np.where(keep.any(-1), np.sum(np.where(keep, proj / np.where(keep, lam, 1.0) ** 2, 0.0), -1), np.nan)
    # CKA with YYᵀ: tr(Ycᵀ Kc Yc) / (‖Kc‖_F ‖Yc Ycᵀ‖_F)
    Yc = Y - Y.mean(0)
    ny = np.linalg.norm(Yc @ Yc.T)
    den = kc_norm * ny
    ck = np.where(den > 0, np.trace(kc_yy, axis1=-2, axis2=-1) / np.where(den > 0, den, 1.0), np.nan)
    return dlr, nc, ck
