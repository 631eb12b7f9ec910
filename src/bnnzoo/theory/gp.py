"""Gaussian-process (lazy readout, infinite width) baselines: NNGP kernels, GP predictor, generalization
(docs/theory.md §6) [standard].

FCN scalings of bnnzoo (rows convention, X is (P, N0)):

    K¹(x, x')      = σ_w,1² x·x'/N0                       first-layer preactivation kernel
    K^{ℓ+1}(x, x') = σ_w,ℓ+1² E[φ(u) φ(v)],  (u, v) ~ N(0, K^ℓ on {x, x'})
    K_f(x, x')     = σ_a² E[φ(u) φ(v)] under K^L           the output kernel of the lazy readout f = Σ_i a_i φ(z_i)/√N

σ_w² may be one number or one per layer.  Closed forms of E[φ(u)φ(v)] for (u, v) with variances k11, k22 and
covariance k12:

* linear:  k12.
* relu (arc-cosine):  √(k11 k22)/(2π) · (sin θ + (π − θ) cos θ),  cos θ = k12/√(k11 k22).
* erf, φ = erf(z):  (2/π) arcsin(2 k12 / √((1 + 2 k11)(1 + 2 k22))).
* sigmoid, φ = ½[1 + erf(α z)], α = √π/2:  ¼ + ¼ · (2/π) arcsin(2α² k12 / √((1 + 2α² k11)(1 + 2α² k22))).

GP predictor with likelihood variance T (the lazy readout's temperature): mean k(x)ᵀ(K + T I)⁻¹ Y, variance
k(x, x) − k(x)ᵀ(K + T I)⁻¹ k(x) (the same for every output).  For the non-lazy readout the N → ∞ limit is *not* this
GP (the readout's prior variance vanishes); for linear nets the mean predictor nevertheless coincides at T → 0
(docs/theory.md §3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import linalg

from ._common import as_test, as_xy, json_attrs

__all__ = ["NONLINEARITIES", "phi_kernel", "nngp_kernel", "GPGeneralization", "GPPosterior", "gp_generalization",
           "gp_posterior"]

NONLINEARITIES = ("linear", "relu", "erf", "sigmoid")
_ALPHA2 = np.pi / 4  # α² for the sigmoid, α = √π/2


def _erf_kernel(k12, k11, k22, alpha2):
    den = np.sqrt((1 + 2 * alpha2 * k11) * (1 + 2 * alpha2 * k22))
    return (2 / np.pi) * np.arcsin(np.clip(2 * alpha2 * k12 / den, -1.0, 1.0))


def phi_kernel(nonlinearity: str, k12, k11, k22):
    """E[φ(u) φ(v)] for (u, v) ~ N(0, [[k11, k12], [k12, k22]]) in closed form (arrays broadcast)."""
    k12, k11, k22 = (np.asarray(k, dtype=float) for k in (k12, k11, k22))
    if nonlinearity == "linear":
        return k12 + 0 * (k11 + k22)
    if nonlinearity == "relu":
        norm = np.sqrt(k11 * k22)
        safe = np.where(norm > 0, norm, 1.0)
        cos = np.clip(k12 / safe, -1.0, 1.0)
        theta = np.arccos(cos)
        return np.where(norm > 0, norm / (2 * np.pi) * (np.sin(theta) + (np.pi - theta) * cos), 0.0)
    if nonlinearity == "erf":
        return _erf_kernel(k12, k11, k22, 1.0)
    if nonlinearity == "sigmoid":
        return 0.25 + 0.25 * _erf_kernel(k12, k11, k22, _ALPHA2)
    raise ValueError(f"nonlinearity must be one of {NONLINEARITIES}, got {nonlinearity!r}")


def _layer_variances(sigma_w2, depth):
    sw = np.atleast_1d(np.asarray(sigma_w2, dtype=float))
    if sw.size == 1:
        sw = np.full(depth, sw[0])
    if sw.shape != (depth,) or np.any(sw <= 0):
        raise ValueError(f"sigma_w2 must be a positive number or {depth} positive numbers, got {sigma_w2}")
    return sw


def nngp_kernel(X1, X2=None, *, nonlinearity: str, depth: int = 1, sigma_w2=1.0, sigma_a2: float = 1.0,
                return_layers: bool = False):
    """NNGP output kernel K_f(X1, X2) of a depth-L FCN with lazy readout (module docstring for the recursion).

    Parameters
    ----------
    X1 : (P1, N0), X2 : (P2, N0) or None (= X1).
    nonlinearity : one of "linear", "relu", "erf", "sigmoid".     depth : L >= 1 hidden layers.
    sigma_w2 : hidden-weight prior variance, a number or one per layer.     sigma_a2 : readout prior variance.
    return_layers : also return the preactivation kernels [K¹, ..., K^L] (each P1 × P2).

    Returns
    -------
    K_f (P1, P2), or (K_f, layers) with ``return_layers``.
    """
    X1 = np.asarray(X1, dtype=float)
    X2 = X1 if X2 is None else np.asarray(X2, dtype=float)
    if X1.ndim != 2 or X2.ndim != 2 or X1.shape[1] != X2.shape[1]:
        raise ValueError(f"X1 and X2 must be (P, N0) with the same N0, got {X1.shape} and {X2.shape}")
    if nonlinearity not in NONLINEARITIES:
        raise ValueError(f"nonlinearity must be one of {NONLINEARITIES}, got {nonlinearity!r}")
    L = int(depth)
    if L < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    sw = _layer_variances(sigma_w2, L)
    N0 = X1.shape[1]
    k12 = sw[0] * X1 @ X2.T / N0
    d1 = sw[0] * np.sum(X1**2, 1) / N0
    d2 = sw[0] * np.sum(X2**2, 1) / N0
    layers = [k12]
    for ell in range(1, L):
        k12 = sw[ell] * phi_kernel(nonlinearity, k12, d1[:, None], d2[None, :])
        d1 = sw[ell] * phi_kernel(nonlinearity, d1, d1, d1)
        d2 = sw[ell] * phi_kernel(nonlinearity, d2, d2, d2)
        layers.append(k12)
    Kf = float(sigma_a2) * phi_kernel(nonlinearity, k12, d1[:, None], d2[None, :])
    return (Kf, layers) if return_layers else Kf


def _nngp_diag(X, nonlinearity, depth, sigma_w2, sigma_a2):
    sw = _layer_variances(sigma_w2, depth)
    d = sw[0] * np.sum(X**2, 1) / X.shape[1]
    for ell in range(1, depth):
        d = sw[ell] * phi_kernel(nonlinearity, d, d, d)
    return float(sigma_a2) * phi_kernel(nonlinearity, d, d, d)


@dataclass(frozen=True)
class GPGeneralization:
    """Class-wise generalization error of a predictor on labelled test points.

    Attributes
    ----------
    mse_per_class : (C,) mean over the test points of class c and over the m outputs of (f − y)².
    class_error_per_class : (C,) fraction of test points of class c whose argmax_r f_r is not c (m > 1), or whose
        sign differs from the target's (m = 1).
    expected_mse_per_class : (C,) mse_per_class plus the mean predictive variance on class c: the error of a
        posterior draw of f rather than of its mean (NaN when no variance was given).
    count_per_class : (C,) number of test points per class.
    mse, class_error, expected_mse : the same over all test points.
    """

    mse_per_class: np.ndarray
    class_error_per_class: np.ndarray
    expected_mse_per_class: np.ndarray
    count_per_class: np.ndarray
    mse: float
    class_error: float
    expected_mse: float

    def to_dataset(self):
        """``xarray.Dataset`` with dim class."""
        return xr.Dataset({"mse_per_class": (("class",), self.mse_per_class),
                           "class_error_per_class": (("class",), self.class_error_per_class),
                           "expected_mse_per_class": (("class",), self.expected_mse_per_class),
                           "count_per_class": (("class",), self.count_per_class)},
                          attrs=json_attrs(theory="gp_generalization", mse=self.mse, class_error=self.class_error,
                                           expected_mse=self.expected_mse))


def gp_generalization(mean, Y_test, labels_test=None, var=None) -> GPGeneralization:
    """Generalization error of predictions ``mean`` (P*, m) against targets ``Y_test`` (P*, m), per class.

    ``labels_test`` defaults to argmax of Y_test (m > 1) or (Y_test > 0) (m = 1); ``var`` (P*,) is the predictive
    variance per output, added to the squared error for ``expected_mse``.
    """
    mean = np.asarray(mean, dtype=float)
    Y = np.asarray(Y_test, dtype=float)
    if mean.shape != Y.shape or mean.ndim != 2:
        raise ValueError(f"mean and Y_test must both be (P*, m), got {mean.shape} and {Y.shape}")
    m = Y.shape[1]
    if labels_test is None:
        labels_test = np.argmax(Y, 1) if m > 1 else (Y[:, 0] > 0).astype(int)
    lab = np.asarray(labels_test).astype(int)
    se = np.mean((mean - Y) ** 2, axis=1)
    if m > 1:
        wrong = np.argmax(mean, 1) != lab
    else:
        wrong = np.sign(mean[:, 0]) != np.sign(Y[:, 0])
    v = np.full(len(Y), np.nan) if var is None else np.asarray(var, dtype=float)
    classes = np.arange(max(lab.max() + 1, m if m > 1 else 2))
    cnt = np.array([np.sum(lab == c) for c in classes])

    def per(x):
        return np.array([x[lab == c].mean() if n else np.nan for c, n in zip(classes, cnt)])

    return GPGeneralization(mse_per_class=per(se), class_error_per_class=per(wrong.astype(float)),
                            expected_mse_per_class=per(se + v), count_per_class=cnt, mse=float(se.mean()),
                            class_error=float(wrong.mean()), expected_mse=float(np.mean(se + v)))


@dataclass(frozen=True)
class GPPosterior:
    """NNGP posterior on test inputs.

    Attributes
    ----------
    mean : (P*, m) k(x)ᵀ(K + T I)⁻¹ Y.     var : (P*,) k(x, x) − k(x)ᵀ(K + T I)⁻¹ k(x), per output.
    f_train : (P, m) posterior mean on the training inputs, K (K + T I)⁻¹ Y.
    K : (P, P) output kernel on the training inputs.
    generalization : :class:`GPGeneralization` when Y_test was given, else None.
    nonlinearity, depth, temperature, sigma_a2 : the inputs; sigma_w2 : per-layer variances.
    """

    mean: np.ndarray
    var: np.ndarray
    f_train: np.ndarray
    K: np.ndarray
    generalization: GPGeneralization | None
    nonlinearity: str
    depth: int
    temperature: float
    sigma_w2: tuple
    sigma_a2: float

    def to_dataset(self):
        """``xarray.Dataset`` with dims test_point, class, point, point2 (+ the generalization variables)."""
        ds = xr.Dataset({"mean": (("test_point", "class"), self.mean), "var": (("test_point",), self.var),
                         "f_train": (("point", "class"), self.f_train), "K": (("point", "point2"), self.K)},
                        attrs=json_attrs(theory="gp_posterior", tag="standard", nonlinearity=self.nonlinearity,
                                         depth=self.depth, temperature=self.temperature, sigma_a2=self.sigma_a2,
                                         sigma_w2=", ".join(f"{s:g}" for s in self.sigma_w2)))
        if self.generalization is not None:
            g = self.generalization.to_dataset()
            ds = ds.merge(g.rename({k: f"gen_{k}" for k in g.data_vars}))
            ds.attrs.update({f"gen_{k}": v for k, v in g.attrs.items() if k != "theory"})
        return ds


def gp_posterior(X, Y=None, X_test=None, *, nonlinearity: str, depth: int = 1, temperature: float,
                 sigma_w2=1.0, sigma_a2: float = 1.0, Y_test=None, labels_test=None) -> GPPosterior:
    """NNGP posterior mean and variance on ``X_test`` with likelihood variance T, and its generalization error.

    ``X, Y`` arrays or a Task (then X_test / Y_test / labels_test default to the task's test set).
    """
    if Y is None and hasattr(X, "X_test"):
        task = X
        X_test = task.X_test if X_test is None else X_test
        if Y_test is None and task.Y_test is not None:
            Y_test, labels_test = task.Y_test, task.labels_test
    X, Y = as_xy(X, Y)
    Xt = as_test(X_test, X.shape[1])
    if Xt is None:
        raise ValueError("gp_posterior needs test inputs X_test")
    T = float(temperature)
    if T < 0:
        raise ValueError(f"temperature must be >= 0, got {T}")
    kw = dict(nonlinearity=nonlinearity, depth=depth, sigma_w2=sigma_w2, sigma_a2=sigma_a2)
    K = nngp_kernel(X, **kw)
    k = nngp_kernel(X, Xt, **kw)  # (P, P*)
    kss = _nngp_diag(Xt, nonlinearity, int(depth), sigma_w2, sigma_a2)
    try:
        cf = linalg.cho_factor(K + T * np.eye(len(K)), lower=True)
    except linalg.LinAlgError:
        raise ValueError("K + T I is not positive definite: use T > 0") from None
    alpha = linalg.cho_solve(cf, Y)
    mean = k.T @ alpha
    var = kss - np.sum(k * linalg.cho_solve(cf, k), axis=0)
    gen = None
    if Y_test is not None:
        gen = gp_generalization(mean, Y_test, labels_test, var)
    return GPPosterior(mean=mean, var=var, f_train=K @ alpha, K=K, generalization=gen, nonlinearity=nonlinearity,
                       depth=int(depth), temperature=T, sigma_w2=tuple(_layer_variances(sigma_w2, int(depth))),
                       sigma_a2=float(sigma_a2))
