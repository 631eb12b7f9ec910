"""Kernels and richness: posterior-averaged kernels per layer, their learned low-rank part, CKA, D_LR and NC1
(docs/theory.md §7).

For layer l with preactivations z (N × n) on n inputs:

* feature kernel K_l = ⟨φ(z)ᵀ φ(z)⟩/N and preactivation kernel ⟨zᵀ z⟩/N, averaged over the posterior, on the
  training points (and on / with the test points when the run has a test set, recomputed from the weights);
* prior kernel K_l⁰: the same average under the prior at infinite width (the NNGP kernel of
  :func:`bnnzoo.theory.gp.nngp_kernel`; for activations without a closed form, one wide random network of
  ``prior_width`` neurons per layer, Monte Carlo error ≈ 1/√prior_width);
* learned part ΔK_l = K_l − K_l⁰: its leading eigenvalues, its size ‖ΔK‖_F/‖K‖_F and the share of ‖ΔK‖²_F in
  its m leading modes (``lowrank_fraction``: 1 = exactly rank ≤ m, as the linear theory's Y U⁻¹ Yᵀ);
* CKA(K, L) = HSIC(K, L)/√(HSIC(K, K) HSIC(L, L)), HSIC = tr(K H L H), between the input kernel K0, every layer
  and the target kernel YYᵀ; ``target_cka`` is each layer's CKA with YYᵀ;
* D_LR = 1 − ‖QᵀΦc‖²_F/(‖ΦcᵀΦc‖_F √rank) with Φc the centred features (n × N) of the layer and Q an orthonormal
  basis of the r leading directions of the centred network outputs, r = rank of the centred targets (C − 1 for
  one-hot targets; output noise directions are not counted), per draw then averaged (0 = richest; an isotropic lazy
  representation gives 1 − √(r/p), reported as ``d_lr_isotropic``);
* NC1 = tr(Σ_B⁺ Σ_W)/C on the layer's activations grouped by class, per draw then averaged.

Monte-Carlo standard errors: quantities of the averaged kernel use batch means (each chain cut into
``n_batches`` blocks of consecutive draws); per-draw quantities (D_LR, NC1) use sd/√ESS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._record import Record, array_field
from ..theory import gp as _gp
from ._data import RunData, mean_se, np_activation, run_data
from ._rundata import richness_from_projections

__all__ = ["KernelResult", "kernels_and_richness", "cka", "d_lr", "nc1", "prior_kernels", "hsic",
           "richness_from_projections"]


def hsic(K: np.ndarray, L: np.ndarray) -> float:
    """tr(K H L H) with H the centring matrix."""
    Kc = K - K.mean(0, keepdims=True) - K.mean(1, keepdims=True) + K.mean()
    return float(np.sum(Kc * L))


def cka(K: np.ndarray, L: np.ndarray) -> float:
    """Centred kernel alignment of two kernels on the same points (1 = identical up to scale)."""
    den = math.sqrt(max(hsic(K, K) * hsic(L, L), 0.0))
    return hsic(K, L) / den if den > 0 else float("nan")


def d_lr(features: np.ndarray, outputs: np.ndarray, rank: int | None = None, tol: float = 1e-8) -> float:
    """D_LR of features (n, p) given network outputs (n, C) (docs/theory.md §7).

    Q spans the ``rank`` leading singular directions of the centred outputs; ``rank=None`` keeps every direction
    above ``tol`` times the largest singular value.  Sampled outputs carry noise of size √(T/N) in directions the
    targets do not have (on one-hot targets the centred rank is C − 1, sampled outputs have rank C), and counting
    them moves a fully collapsed representation from 0 to 1 − √((C−1)/C); :func:`kernels_and_richness` therefore
    passes the rank of the centred targets.
    """
    Phi = features - features.mean(0, keepdims=True)
    F = outputs - outputs.mean(0, keepdims=True)
    U, s, _ = np.linalg.svd(F, full_matrices=False)
    r = int(np.sum(s > tol * max(s.max(initial=0.0), 1e-300)))
    if rank is not None:
        if rank < 1:
            raise ValueError(f"rank must be >= 1, got {rank}")
        r = min(r, int(rank))
    if r == 0:
        return float("nan")
    Q = U[:, :r]
    num = np.sum((Q.T @ Phi) ** 2)
    den = np.linalg.norm(Phi.T @ Phi) * math.sqrt(r)
    return float(1.0 - num / den) if den > 0 else float("nan")


def nc1(features: np.ndarray, labels: np.ndarray, tol: float = 1e-10) -> float:
    """NC1 = tr(Σ_B⁺ Σ_W)/C of features (n, p) grouped by ``labels`` (n,)."""
    labels = np.asarray(labels)
    classes = np.unique(labels)
    C = len(classes)
    means = np.stack([features[labels == c].mean(0) for c in classes])  # (C, p)
    M = (means - means.mean(0)).T  # (p, C); Σ_B = M Mᵀ / C
    resid = features - means[np.searchsorted(classes, labels)]  # (n, p); Σ_W = residᵀ resid / n
    U, s, _ = np.linalg.svd(M, full_matrices=False)
    keep = s > tol * max(s.max(initial=0.0), 1e-300)
    if not keep.any():
        return float("nan")
    U, s = U[:, keep], s[keep]
    proj = resid @ U  # (n, r)
    tr = C * np.sum(np.mean(proj**2, 0) / s**2)
    return float(tr / C)


def prior_kernels(X: np.ndarray, activation: str, depth: int, sigma_w2: float = 1.0, width: int = 4000,
                  seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Prior (infinite-width NNGP) feature and preactivation kernels of every layer on the inputs X (n, N0):
    returns (K_feature, K_pre), each (L, n, n).  Closed forms from :func:`bnnzoo.theory.gp.nngp_kernel` for the
    activations it knows; otherwise estimated with one random network of ``width`` neurons per layer."""
    if activation in _gp.NONLINEARITIES:
        Kf, Kz = [], []
        for l in range(1, depth + 1):
            kf, layers = _gp.nngp_kernel(X, nonlinearity=activation, depth=l, sigma_w2=sigma_w2,
                                         sigma_a2=1.0, return_layers=True)
            Kf.append(kf)
            Kz.append(layers[-1])
        return np.array(Kf), np.array(Kz)
    rng = np.random.default_rng(seed)
    phi = np_activation(activation)
    sw = math.sqrt(sigma_w2)
    N0 = X.shape[1]
    Kf, Kz = [], []
    h = X.T / math.sqrt(N0)  # (N0, n)
    for _ in range(depth):
        W = sw * rng.standard_normal((width, h.shape[0]))
        z = W @ h
        p = phi(z)
        Kz.append(z.T @ z / width)
        Kf.append(p.T @ p / width)
        h = p / math.sqrt(width)
    return np.array(Kf), np.array(Kz)


@dataclass(frozen=True, repr=False)
class KernelResult(Record):
    """Kernels and richness of every layer (see module docstring; per-layer arrays have dim ``layer`` = 1..L).

    K, K_pre, K_prior : (layer, point, point2) posterior feature / preactivation kernels and the prior feature kernel.
    learned_eigs : (layer, mode) leading eigenvalues of ΔK (largest ``|λ|`` first).
    learned_fraction, lowrank_fraction : (layer,) ‖ΔK‖_F/‖K‖_F and the share of ‖ΔK‖²_F in m modes.
    target_cka, target_cka_se : (layer,) CKA(K_l, YYᵀ).   cka_matrix : (kernel, kernel2) between ``kernel_names``.
    d_lr, d_lr_se, nc1, nc1_se : (layer,).   d_lr_isotropic : 1 − √(r/N), r the rank of the centred targets.
    K_test, K_train_test : (layer, test_point, test_point2), (layer, point, test_point) or None.
    """

    kernel_names: tuple
    d_lr_isotropic: float
    n_batches: int
    prior_width: int
    K: np.ndarray = array_field("layer", "point", "point2")
    K_pre: np.ndarray = array_field("layer", "point", "point2")
    K_prior: np.ndarray = array_field("layer", "point", "point2")
    learned_eigs: np.ndarray = array_field("layer", "mode")
    learned_fraction: np.ndarray = array_field("layer")
    lowrank_fraction: np.ndarray = array_field("layer")
    target_cka: np.ndarray = array_field("layer")
    target_cka_se: np.ndarray = array_field("layer")
    cka_matrix: np.ndarray = array_field("kernel", "kernel2")
    d_lr: np.ndarray = array_field("layer")
    d_lr_se: np.ndarray = array_field("layer")
    nc1: np.ndarray = array_field("layer")
    nc1_se: np.ndarray = array_field("layer")
    K_test: np.ndarray | None = array_field("layer", "test_point", "test_point2", default=None)
    K_train_test: np.ndarray | None = array_field("layer", "point", "test_point", default=None)

    def summary(self) -> list[str]:
        lines = []
        for i in range(len(self.d_lr)):
            if not np.isfinite(self.learned_fraction[i]):  # no prior kernel (unit layers of other entries)
                lines.append(f"{self.kernel_names[i + 1]}: CKA with YYᵀ {self.target_cka[i]:.3f} ± "
                             f"{self.target_cka_se[i]:.3f}, D_LR {self.d_lr[i]:.3f} ± {self.d_lr_se[i]:.3f} "
                             f"(isotropic {self.d_lr_isotropic:.2f}), NC1 {self.nc1[i]:.3g} ± {self.nc1_se[i]:.2g}")
                continue
            lines.append(f"layer {i + 1}: learned part ‖ΔK‖/‖K‖ = {self.learned_fraction[i]:.2f} "
                         f"({100 * self.lowrank_fraction[i]:.0f} % in {self._m} modes), CKA with YYᵀ "
                         f"{self.target_cka[i]:.3f} ± {self.target_cka_se[i]:.3f}, D_LR {self.d_lr[i]:.3f} ± "
                         f"{self.d_lr_se[i]:.3f} (isotropic {self.d_lr_isotropic:.2f}), NC1 {self.nc1[i]:.3g} ± "
                         f"{self.nc1_se[i]:.2g}")
        return lines

    @property
    def _m(self) -> int:
        return max(self.learned_eigs.shape[1] // 2, 1)


def kernels_and_richness(idata, n_batches: int = 10, max_draws: int = 100, prior_width: int = 4000,
                         seed: int = 0) -> KernelResult:
    """Posterior kernels of every layer and the richness measures of docs/theory.md §7 (module docstring)."""
    rd: RunData = run_data(idata)
    L, m = rd.depth, rd.m
    C, D = rd.n_chains, rd.n_draws
    phi = rd.phi
    Y = rd.Y
    target = Y @ Y.T
    K0 = rd.X @ rd.X.T / rd.X.shape[1]
    Kf_prior, _ = prior_kernels(rd.X, rd.activation, L, rd.sigma_w2, prior_width, seed)
    Ks, Kzs, tcka, tcka_se, eigs, lfrac, lrfrac = [], [], [], [], [], [], []
    dl, dl_se, nc, nc_se = [], [], [], []
    sub = np.unique(np.linspace(0, D - 1, min(max_draws, D)).astype(int))
    y_rank = max(int(np.linalg.matrix_rank(Y - Y.mean(0))), 1)
    n_used = 0
    for l in range(1, L + 1):
        Kb, w = rd.kernel_batches(l, n_batches)                 # (C·B, P, P) block means, draws per block
        Kzb, _ = rd.kernel_batches(l, n_batches, pre=True)
        n_used = len(w)
        K = np.tensordot(w / w.sum(), Kb, 1)
        Ks.append(K)
        Kzs.append(np.tensordot(w / w.sum(), Kzb, 1))
        tc_b = np.array([cka(k, target) for k in Kb])
        tcka.append(cka(K, target))
        tcka_se.append(float(tc_b.std(ddof=1) / math.sqrt(len(tc_b))) if len(tc_b) > 1 else float("nan"))
        dK = K - Kf_prior[l - 1]
        ev = np.linalg.eigvalsh(0.5 * (dK + dK.T))
        ev = ev[np.argsort(-np.abs(ev))]
        eigs.append(ev[:2 * m])
        tot = float(np.sum(ev**2))
        lrfrac.append(float(np.sum(ev[:m] ** 2) / tot) if tot > 0 else float("nan"))
        lfrac.append(float(np.linalg.norm(dK) / max(np.linalg.norm(K), 1e-300)))
        dvals, nvals = rd.per_draw("d_lr", l), rd.per_draw("nc1", l)      # from the recorded summaries, or:
        if dvals is None or nvals is None:
            f = phi(rd.z(l))
            if rd.f is not None:
                dvals = np.array([[d_lr(f[c, t].T, rd.f[c, t], rank=y_rank) for t in sub] for c in range(C)])
            else:
                dvals = np.full((C, len(sub)), np.nan)
            nvals = np.array([[nc1(f[c, t].T, rd.labels) for t in sub] for c in range(C)])
        for vals, mu_l, se_l in ((dvals, dl, dl_se), (nvals, nc, nc_se)):
            mu, se = mean_se(vals) if np.all(np.isfinite(vals)) else (np.nanmean(vals), np.nan)
            mu_l.append(float(mu))
            se_l.append(float(se))
    names = ("input",) + tuple(f"layer{l}" for l in range(1, L + 1)) + ("target",)
    allk = [K0] + Ks + [target]
    cm = np.array([[cka(a, b) for b in allk] for a in allk])
    K_test = K_tt = None
    if rd.X_test is not None and len(rd.weights) >= L:    # test kernels need the weights
        K_test, K_tt = [], []
        for l in range(1, L + 1):
            ft = phi(rd.z_test(l))
            f = phi(rd.z(l))
            N = ft.shape[2]
            K_test.append(np.einsum("cdnp,cdnq->pq", ft, ft, optimize=True) / (C * D * N))
            K_tt.append(np.einsum("cdnp,cdnq->pq", f, ft, optimize=True) / (C * D * N))
        K_test, K_tt = np.array(K_test), np.array(K_tt)
    return KernelResult(
        kernel_names=names, d_lr_isotropic=float(1 - math.sqrt(y_rank / rd.width)),
        n_batches=n_used // max(C, 1), prior_width=int(prior_width), K=np.array(Ks), K_pre=np.array(Kzs),
        K_prior=Kf_prior,
        learned_eigs=np.array(eigs), learned_fraction=np.array(lfrac), lowrank_fraction=np.array(lrfrac),
        target_cka=np.array(tcka), target_cka_se=np.array(tcka_se), cka_matrix=cm, d_lr=np.array(dl),
        d_lr_se=np.array(dl_se), nc1=np.array(nc), nc1_se=np.array(nc_se), K_test=K_test, K_train_test=K_tt)
