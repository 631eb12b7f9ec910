"""Analytic theory of Bayesian *linear* networks (docs/theory.md §4).

Conventions (bnnzoo rows convention): ``X`` is (P, N0), ``Y`` is (P, m); K0 = X Xᵀ/N0 (P × P);
k0(x*) = X x*/N0; hidden prior N(0, σ_w²), readout prior N(0, σ_a²); non-lazy readout f = zᵀa/N with likelihood
variance T/N; lazy readout f = zᵀa/√N with variance T.  Matrices that docs/theory.md writes m × P (Λ, F) are stored
*transposed*, as (P, m) arrays, like every other per-point quantity in bnnzoo: ``Lambda = Λᵀ``, ``f_train = Fᵀ``.

Three levels of theory:

1. :func:`linear_leading_order` — the paper's leading order in large P, any depth L, T → 0 [paper]::

       U^{L+1} = σ_a^{2L} Yᵀ K0⁻¹ Y,   K_ℓ = K0 + σ_a^{2(L−ℓ)} Y U^{−(L−ℓ+1)} Yᵀ,   E[z^L | a] = Y U⁻¹ a,
       f(x) = Yᵀ K0⁻¹ k0(x),           K_ℓ(x, x') = k0(x, x') + σ_a^{2(L−ℓ)} f(x)ᵀ U^{−(L−ℓ+1)} f(x').

   For σ_w² ≠ 1 the substitution a → σ_w^L a maps the net onto σ_w² = 1 with σ_a² → σ_a² σ_w^{2L}; the returned U and
   kernels are mapped back (K_ℓ scales by σ_w^{2ℓ}, U by σ_w^{−2L}; E[z^L | a] = Y U⁻¹ a is invariant).

2. :func:`linear_saddle_point` — one hidden layer, exact as N → ∞ at finite P and finite rescaled T [derived].
   Each neuron is an independent Gaussian problem p(a, h) ∝ N(a|0, σ_a² I) N(h|0, K) exp(aᵀ Λ h), K = σ_w² K0; hence::

       U⁻¹ = I/σ_a² − Λ K Λᵀ,   F = E[a hᵀ] = U Λ K = Yᵀ − T Λ,   K1 = E[h hᵀ] = K + K Λᵀ U Λ K,
       f(x*) = U Λ k(x*),       K1(x*, x*') = k(x*, x*') + k(x*)ᵀ Λᵀ U Λ k(x*'),   k = σ_w² k0.

   Λ solves the Sylvester equation U Λ K + T Λ = Yᵀ (solved in the eigenbases of U and K), and U the symmetric
   residual U⁻¹ − I/σ_a² + Λ K Λᵀ = 0 by Newton's method, starting from the T → 0 closed form
   U = σ_a²/2 + (σ_a⁴/4 + σ_a² Yᵀ K⁻¹ Y)^{1/2} (the root of U² − σ_a² U = σ_a² Yᵀ K⁻¹ Y; the paper's leading order
   drops the σ_a² U term).  The solution is unique: it is the maximum of the strictly concave
   Φ(Λ) = tr(Λ Y) − (T/2) tr(Λ Λᵀ) + ½ log det(I − σ_a² Λ K Λᵀ) (Φ's gradient vanishes exactly at F = Yᵀ − TΛ),
   which is maximised directly when Newton in U fails (singular or ill-conditioned K0).
   U is the posterior second moment of one neuron's readout, E[a_i a_iᵀ] (m × m) — what a sampler estimates as aᵀa/N.
   Lazy readout: the per-neuron tilt is O(N^{-1/2}) and the theory is the GP limit: U = σ_a² I, K1 = K,
   f_train = σ_a² K (σ_a² K + T I)⁻¹ Y, Lambda = (Y − f_train)/T, f(x*) = σ_a² k(x*)ᵀ (σ_a² K + T I)⁻¹ Y (corrections
   O(1/N)).

3. :func:`linear_exact_m1` — the exact finite-N posterior moments for m = 1 output (any N, P, T) by 1-D quadrature
   [derived]: integrating the hidden weights out, F | a ~ N(0, c² σ_w² ``|a|²`` K0), so the posterior depends on a only
   through r = ``|a|²``, with density ∝ r^{N/2−1} e^{−r/(2σ_a²)} N(Y | 0, c² σ_w² r K0 + v I), c the readout scale and v
   the likelihood variance; E[F | r] and E[zᵀz/N | r] are Gaussian conditionals.  An oracle for samplers and for the
   N → ∞ limit of :func:`linear_saddle_point`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import optimize

from ._common import as_test, as_xy, check_readout, default_sigma_a2, json_attrs, sym_fun

__all__ = [
    "LinearLeadingOrder",
    "LinearSaddlePoint",
    "LinearExactM1",
    "linear_leading_order",
    "linear_saddle_point",
    "linear_exact_m1",
]


def _solve_psd(K: np.ndarray, B: np.ndarray, what: str = "K0") -> np.ndarray:
    """K⁻¹ B for a symmetric positive definite K, with a clear error when K is (numerically) singular."""
    w = np.linalg.eigvalsh(K)
    if w[0] <= 1e-10 * max(w[-1], 1e-300):
        raise ValueError(f"{what} is singular (smallest eigenvalue {w[0]:.3g}); the T → 0 theory needs P <= N0 and "
                         f"linearly independent inputs — use a finite temperature")
    return np.linalg.solve(K, B)


# ------------------------------------------------------------------------------------------------------ leading order
@dataclass(frozen=True)
class LinearLeadingOrder:
    """Leading order in large P of the deep linear network at T → 0 [paper] (see module docstring).

    Attributes
    ----------
    U : (m, m) readout covariance, P(a) = N(0, U).
    K : (L, P, P) preactivation kernels of layers ℓ = 1..L on the training points.
    feature_map : (P, m) matrix Y U⁻¹: E[z^L_i | a_i] = feature_map @ a_i for a neuron of the feature layer.
    f_test : (P*, m) mean predictor Yᵀ K0⁻¹ k0(x*) as rows, or None.
    K_test : (L, P*, P*) test kernels, or None.   K_train_test : (L, P, P*) train–test kernels, or None.
    depth, sigma_a2, sigma_w2 : the inputs.
    """

    U: np.ndarray
    K: np.ndarray
    feature_map: np.ndarray
    f_test: np.ndarray | None
    K_test: np.ndarray | None
    K_train_test: np.ndarray | None
    depth: int
    sigma_a2: float
    sigma_w2: float

    def feature_mean(self, a: np.ndarray) -> np.ndarray:
        """E[z^L | a] = Y U⁻¹ a for readout weights ``a`` of shape (..., m); returns (..., P)."""
        return np.asarray(a) @ self.feature_map.T

    def to_dataset(self):
        """``xarray.Dataset`` with dims layer, point, point2, class, class2, test_point, test_point2."""
        data = {"U": (("class", "class2"), self.U), "K": (("layer", "point", "point2"), self.K),
                "feature_map": (("point", "class"), self.feature_map)}
        if self.f_test is not None:
            data["f_test"] = (("test_point", "class"), self.f_test)
            data["K_test"] = (("layer", "test_point", "test_point2"), self.K_test)
            data["K_train_test"] = (("layer", "point", "test_point"), self.K_train_test)
        return xr.Dataset(data, coords={"layer": np.arange(1, self.depth + 1)},
                          attrs=json_attrs(theory="linear_leading_order", tag="paper", depth=self.depth,
                                           sigma_a2=self.sigma_a2, sigma_w2=self.sigma_w2))


def linear_leading_order(X, Y=None, *, depth: int = 1, sigma_a2: float | None = None, sigma_w2: float = 1.0,
                         X_test=None) -> LinearLeadingOrder:
    """The paper's leading-order (large P, T → 0) theory of a depth-L linear network with non-lazy readout.

    ``sigma_a2`` defaults to P^{-1/L}.  Needs K0 invertible (P <= N0) and Yᵀ K0⁻¹ Y invertible.
    """
    X, Y = as_xy(X, Y)
    P, N0 = X.shape
    L = int(depth)
    if L < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    sa2 = default_sigma_a2(P, L, "linear") if sigma_a2 is None else float(sigma_a2)
    sw2 = float(sigma_w2)
    K0 = X @ X.T / N0
    B = Y.T @ _solve_psd(K0, Y)
    # σ_w = 1 problem with ã = σ_w^L a.
    sa2t = sa2 * sw2**L
    Ut = sym_fun(sa2t**L * B, lambda w: np.maximum(w, 0.0) ** (1.0 / (L + 1)))
    if np.linalg.eigvalsh(Ut)[0] <= 0:
        raise ValueError("Yᵀ K0⁻¹ Y is singular: U is not invertible")
    Ks = []
    for ell in range(1, L + 1):
        p = L - ell + 1
        Kt = K0 + sa2t ** (L - ell) * Y @ sym_fun(Ut, lambda w: w ** (-p)) @ Y.T
        Ks.append(sw2**ell * Kt)
    U = Ut / sw2**L
    feature_map = Y @ np.linalg.inv(U)
    f_test = K_test = K_tt = None
    Xt = as_test(X_test, N0)
    if Xt is not None:
        k0 = X @ Xt.T / N0  # (P, P*)
        f_test = k0.T @ _solve_psd(K0, Y)  # (P*, m)
        k00 = Xt @ Xt.T / N0
        K_test, K_tt = [], []
        for ell in range(1, L + 1):
            Mp = sa2t ** (L - ell) * sym_fun(Ut, lambda w: w ** (-(L - ell + 1)))
            K_test.append(sw2**ell * (k00 + f_test @ Mp @ f_test.T))
            K_tt.append(sw2**ell * (k0 + Y @ Mp @ f_test.T))
        K_test, K_tt = np.array(K_test), np.array(K_tt)
    return LinearLeadingOrder(U=U, K=np.array(Ks), feature_map=feature_map, f_test=f_test, K_test=K_test,
                              K_train_test=K_tt, depth=L, sigma_a2=sa2, sigma_w2=sw2)


# ------------------------------------------------------------------------------------------ exact one-layer saddle
@dataclass(frozen=True)
class LinearSaddlePoint:
    """Exact N → ∞ theory of the one-hidden-layer linear network at finite P and T [derived] (module docstring).

    Attributes
    ----------
    U : (m, m) posterior second moment of one neuron's readout E[a_i a_iᵀ] (sampler estimate: aᵀa/N).
    Lambda : (P, m) the conjugate field Λᵀ (docs/theory.md's Λ is m × P).
    f_train : (P, m) posterior-mean training output Fᵀ = Y − T Λᵀ.
    K1 : (P, P) posterior mean of the hidden kernel zᵀz/N.
    f_test : (P*, m) posterior-mean predictor on X_test, or None.
    K1_test : (P*, P*) and K1_train_test : (P, P*) hidden kernel on / with the test points, or None.
    U_leading_order : (m, m) the paper's leading-order U (U² = σ_a² Yᵀ K⁻¹ Y) for comparison, or None when
        K0 is singular or for the lazy readout.
    residual : max ``|σ_a² U⁻¹ − I + σ_a² Λ K Λᵀ|`` at the solution (0 for the closed forms).
    temperature, sigma_a2, sigma_w2, readout : the inputs.
    """

    U: np.ndarray
    Lambda: np.ndarray
    f_train: np.ndarray
    K1: np.ndarray
    f_test: np.ndarray | None
    K1_test: np.ndarray | None
    K1_train_test: np.ndarray | None
    U_leading_order: np.ndarray | None
    residual: float
    temperature: float
    sigma_a2: float
    sigma_w2: float
    readout: str

    def to_dataset(self):
        """``xarray.Dataset`` with dims point, point2, class, class2, test_point, test_point2."""
        data = {"U": (("class", "class2"), self.U), "Lambda": (("point", "class"), self.Lambda),
                "f_train": (("point", "class"), self.f_train), "K1": (("point", "point2"), self.K1)}
        if self.U_leading_order is not None:
            data["U_leading_order"] = (("class", "class2"), self.U_leading_order)
        if self.f_test is not None:
            data["f_test"] = (("test_point", "class"), self.f_test)
            data["K1_test"] = (("test_point", "test_point2"), self.K1_test)
            data["K1_train_test"] = (("point", "test_point"), self.K1_train_test)
        return xr.Dataset(data, attrs=json_attrs(theory="linear_saddle_point", tag="derived",
                                                 temperature=self.temperature, sigma_a2=self.sigma_a2,
                                                 sigma_w2=self.sigma_w2, readout=self.readout,
                                                 residual=self.residual))


def _sylvester_lambda(U: np.ndarray, kw: np.ndarray, kV: np.ndarray, YtV: np.ndarray, T: float) -> np.ndarray:
    """Λ (m × P) solving U Λ K + T Λ = Yᵀ, with K = kV diag(kw) kVᵀ and YtV = Yᵀ kV."""
    uw, uV = np.linalg.eigh(0.5 * (U + U.T))
    Lt = (uV.T @ YtV) / (uw[:, None] * kw[None, :] + T)
    return uV @ Lt @ kV.T


def _saddle_U(kw: np.ndarray, YtV: np.ndarray, sa2: float, T: float, U_start, tol: float) -> np.ndarray:
    """Solve U⁻¹ = I/σ_a² − Λ(U) K Λ(U)ᵀ at T > 0 in the eigenbasis of K (eigenvalues kw, Ỹᵀ = YtV).

    1. Newton iteration on the symmetric residual in U (m(m+1)/2 unknowns), from the T → 0 solution when known.
    2. If that fails: the saddle point is the maximum of the strictly concave function
       Φ(Λ) = tr(Λ Ỹ) − (T/2) tr(Λ Λᵀ) + ½ log det(I − σ_a² Λ diag(k) Λᵀ)
       (its gradient Ỹᵀ − TΛ − U Λ diag(k) vanishes exactly at F = Yᵀ − TΛ), found by trust-region Newton–CG from
       Λ = 0; then U = (I/σ_a² − Λ diag(k) Λᵀ)⁻¹ is polished by step 1.
    """
    m = YtV.shape[0]
    iu = np.triu_indices(m)
    pos = kw > 1e-12 * max(kw.max(), 1e-300)
    k, Yp = kw[pos], YtV[:, pos]

    def unpack(x):
        Um = np.zeros((m, m))
        Um[iu] = x
        return Um + np.triu(Um, 1).T

    def resid(x):
        Um = unpack(x)
        uw, uV = np.linalg.eigh(Um)
        if uw[0] <= 0:
            return np.full(len(x), 1e3)
        Lt = (uV.T @ Yp) / (uw[:, None] * k[None, :] + T)  # Λ in the eigenbases of U (rows) and K (columns)
        R = sa2 * (uV / uw) @ uV.T - np.eye(m) + sa2 * uV @ ((Lt * k) @ Lt.T) @ uV.T
        return R[iu]

    def newton(U_init):
        sol = optimize.root(resid, U_init[iu], method="hybr", options={"xtol": 1e-15})
        ok = np.all(np.isfinite(sol.x)) and np.max(np.abs(resid(sol.x))) < tol
        return unpack(sol.x), ok

    if U_start is not None:
        U, ok = newton(U_start)
        if ok:
            return U

    def neg_phi(x):
        L = x.reshape(m, -1)
        w = np.linalg.eigvalsh(np.eye(m) - sa2 * (L * k) @ L.T)
        if w[0] <= 0:
            return np.inf
        return -(np.sum(L * Yp) - 0.5 * T * np.sum(L * L) + 0.5 * np.sum(np.log(w)))

    def Umat(L):
        return np.linalg.inv(np.eye(m) / sa2 - (L * k) @ L.T)

    def grad(x):
        L = x.reshape(m, -1)
        return (-Yp + T * L + (Umat(L) @ L) * k).ravel()

    def hessp(x, p):
        L, D = x.reshape(m, -1), p.reshape(m, -1)
        U_ = Umat(L)
        dU = U_ @ ((D * k) @ L.T + (L * k) @ D.T) @ U_
        return (T * D + (dU @ L) * k + (U_ @ D) * k).ravel()

    sol = optimize.minimize(neg_phi, np.zeros(Yp.size), jac=grad, hessp=hessp, method="trust-ncg",
                            options={"gtol": 1e-12 * max(np.max(np.abs(Yp)), 1.0), "maxiter": 2000})
    U, ok = newton(Umat(sol.x.reshape(m, -1)))
    if not ok:
        raise RuntimeError(f"linear_saddle_point: no solution at T={T} (residual {np.max(np.abs(resid(U[iu]))):.3g})")
    return U


def linear_saddle_point(X, Y=None, *, temperature: float, sigma_a2: float | None = None, sigma_w2: float = 1.0,
                        readout: str = "nonlazy", X_test=None, tol: float = 1e-9) -> LinearSaddlePoint:
    """Exact N → ∞ saddle point of the one-hidden-layer linear net at finite P and rescaled temperature T.

    ``temperature=0`` gives the closed form (needs K0 invertible).  ``sigma_a2`` defaults to 1/P (non-lazy) or 1
    (lazy).  Raises RuntimeError if the solver does not reach ``tol`` on the dimensionless residual
    max ``|σ_a² U⁻¹ − I + σ_a² Λ K Λᵀ|`` (reported as ``residual``).
    """
    X, Y = as_xy(X, Y)
    readout = check_readout(readout)
    P, N0 = X.shape
    m = Y.shape[1]
    T = float(temperature)
    if T < 0:
        raise ValueError(f"temperature must be >= 0, got {T}")
    sa2 = default_sigma_a2(P, 1, "linear", readout) if sigma_a2 is None else float(sigma_a2)
    sw2 = float(sigma_w2)
    K = sw2 * X @ X.T / N0
    kw, kV = np.linalg.eigh(K)
    kw = np.where(kw > 1e-12 * max(kw[-1], 1e-300), kw, 0.0)  # round-off eigenvalues of a singular K0 are zero
    K = (kV * kw) @ kV.T
    YtV = Y.T @ kV
    Xt = as_test(X_test, N0)
    k = sw2 * X @ Xt.T / N0 if Xt is not None else None
    U_lo = None
    residual = 0.0

    if readout == "lazy":
        U = sa2 * np.eye(m)
        if T == 0:
            alpha = _solve_psd(K, Y, "K0") / sa2  # (σ_a² K)⁻¹ Y
        else:
            alpha = np.linalg.solve(sa2 * K + T * np.eye(P), Y)  # (P, m)
        f_train = sa2 * K @ alpha
        Lam = alpha  # (Y − f_train)/T = (σ_a² K + T)⁻¹ Y
        K1 = K.copy()
        f_test = sa2 * k.T @ alpha if k is not None else None
        K1_test = sw2 * Xt @ Xt.T / N0 if k is not None else None
        K1_tt = k.copy() if k is not None else None
    else:
        B0 = None
        if kw[0] > 1e-10 * max(kw[-1], 1e-300):
            B0 = YtV @ (YtV / kw).T  # Yᵀ K⁻¹ Y
            U0 = sym_fun(sa2 * B0 + 0.25 * sa2**2 * np.eye(m), np.sqrt) + 0.5 * sa2 * np.eye(m)
            U_lo = sym_fun(sa2 * B0, lambda w: np.sqrt(np.maximum(w, 0.0)))
        elif T == 0:
            _solve_psd(K, Y, "K0")  # raises the informative error
        if T == 0:
            U = U0
            LamT = np.linalg.solve(U, Y.T) @ np.linalg.inv(K)  # Λ = U⁻¹ Yᵀ K⁻¹ (m × P)
        else:
            U = _saddle_U(kw, YtV, sa2, T, U0 if B0 is not None else None, tol)
            LamT = _sylvester_lambda(U, kw, kV, YtV, T)
            Lt = LamT @ kV
            residual = float(np.max(np.abs(sa2 * np.linalg.inv(U) - np.eye(m) + sa2 * (Lt * kw) @ Lt.T)))
        Lam = LamT.T  # (P, m)
        f_train = (U @ LamT @ K).T
        KL = K @ Lam  # (P, m) = K Λᵀ
        K1 = K + KL @ U @ KL.T
        if k is not None:
            kL = k.T @ Lam  # (P*, m)
            f_test = kL @ U
            K1_test = sw2 * Xt @ Xt.T / N0 + kL @ U @ kL.T
            K1_tt = k + KL @ U @ kL.T
        else:
            f_test = K1_test = K1_tt = None
    return LinearSaddlePoint(U=U, Lambda=Lam, f_train=f_train, K1=K1, f_test=f_test, K1_test=K1_test,
                             K1_train_test=K1_tt, U_leading_order=U_lo, residual=residual, temperature=T,
                             sigma_a2=sa2, sigma_w2=sw2, readout=readout)


# ------------------------------------------------------------------------------------------ exact finite N, m = 1
@dataclass(frozen=True)
class LinearExactM1:
    """Exact finite-width posterior moments of the one-hidden-layer linear net with one output [derived].

    Attributes
    ----------
    U : (1, 1) E[aᵀa/N].   f_train : (P, 1) E[f] on the training inputs.   K1 : (P, P) E[zᵀz/N].
    width, temperature, sigma_a2, sigma_w2, readout : the inputs.
    """

    U: np.ndarray
    f_train: np.ndarray
    K1: np.ndarray
    width: int
    temperature: float
    sigma_a2: float
    sigma_w2: float
    readout: str

    def to_dataset(self):
        """``xarray.Dataset`` with dims point, point2, class, class2."""
        return xr.Dataset({"U": (("class", "class2"), self.U), "f_train": (("point", "class"), self.f_train),
                           "K1": (("point", "point2"), self.K1)},
                          attrs=json_attrs(theory="linear_exact_m1", tag="derived", width=self.width,
                                           temperature=self.temperature, sigma_a2=self.sigma_a2,
                                           sigma_w2=self.sigma_w2, readout=self.readout))


def linear_exact_m1(X, Y=None, *, width: int, temperature: float, sigma_a2: float | None = None,
                    sigma_w2: float = 1.0, readout: str = "nonlazy", num_nodes: int = 4001) -> LinearExactM1:
    """Exact finite-N posterior moments E[aᵀa/N], E[f], E[zᵀz/N] for m = 1 by quadrature over r = ``|a|²``.

    With K0 = Q diag(κ) Qᵀ, ỹ = QᵀY, g_j = c² σ_w² r κ_j, s_j = g_j + v:
    log p(r) = (N/2 − 1) log r − r/(2σ_a²) − ½ Σ_j [log s_j + ỹ_j²/s_j];
    E[F | r] = Q (g/s ∘ ỹ);  E[zᵀz/N | r] = σ_w² K0 + (c² σ_w⁴ r/N) K0 S⁻¹ (Y Yᵀ S⁻¹ − I) K0.
    The integral over t = log r uses ``num_nodes`` trapezoid nodes over ±40 curvature widths around the mode.
    """
    X, Y = as_xy(X, Y)
    readout = check_readout(readout)
    if Y.shape[1] != 1:
        raise NotImplementedError("linear_exact_m1 needs m = 1 output (the posterior then depends on |a|² only); "
                                  "for m > 1 use bnnzoo.inference.gibbs_linear")
    P, N0 = X.shape
    N, T = int(width), float(temperature)
    if N < 1 or T <= 0:
        raise ValueError("need width >= 1 and temperature > 0")
    sa2 = default_sigma_a2(P, 1, "linear", readout) if sigma_a2 is None else float(sigma_a2)
    sw2 = float(sigma_w2)
    c2 = 1.0 / N**2 if readout == "nonlazy" else 1.0 / N
    v = T / N if readout == "nonlazy" else T
    kap, Q = np.linalg.eigh(X @ X.T / N0)
    kap = np.maximum(kap, 0.0)
    yt = Q.T @ Y[:, 0]

    def logp(t):  # density of t = log r (includes the Jacobian r)
        t = np.atleast_1d(t)
        r = np.exp(t)
        s = c2 * sw2 * np.outer(r, kap) + v
        return (N / 2) * t - r / (2 * sa2) - 0.5 * np.sum(np.log(s) + yt**2 / s, axis=1)

    t0 = np.log(N * sa2)
    res = optimize.minimize_scalar(lambda t: -logp(t)[0], bracket=(t0 - 1, t0 + 1))
    tm = res.x
    h = 1e-3
    curv = -(logp(tm + h)[0] - 2 * logp(tm)[0] + logp(tm - h)[0]) / h**2
    width_t = 1.0 / np.sqrt(max(curv, 1e-12))
    t = np.linspace(tm - 40 * width_t, tm + 40 * width_t, int(num_nodes))
    lp = logp(t)
    w = np.exp(lp - lp.max())
    w /= w.sum()
    r = np.exp(t)
    g = c2 * sw2 * np.outer(r, kap)  # (nodes, P)
    s = g + v
    EU = np.sum(w * r) / N
    Ef = Q @ (np.sum(w[:, None] * g / s, axis=0) * yt)
    # E[K1] in the eigenbasis: σ_w² diag(κ) + (c² σ_w⁴ r / N) [diag(κ/s) ỹỹᵀ diag(κ/s) − diag(κ²/s)]
    coef = c2 * sw2**2 * r / N
    ks = kap[None, :] / s  # (nodes, P)
    M_outer = np.einsum("n,ni,nj->ij", w * coef, ks * yt, ks * yt)
    M_diag = np.sum((w * coef)[:, None] * kap[None, :] ** 2 / s, axis=0)
    K1t = sw2 * np.diag(kap) + M_outer - np.diag(M_diag)
    K1 = Q @ K1t @ Q.T
    return LinearExactM1(U=np.array([[EU]]), f_train=Ef[:, None], K1=K1, width=N, temperature=T, sigma_a2=sa2,
                         sigma_w2=sw2, readout=readout)
