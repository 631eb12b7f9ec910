"""Deep linear networks at finite P: the N → ∞ theory of every layer's kernel, at T → 0 and at finite T [derived].

Setting (rows convention, non-lazy readout): z_1 = W_1 xᵀ/√N0, z_l = W_l z_{l−1}/√N, f = z_Lᵀ a/N, W ~ N(0, σ_w²),
a ~ N(0, σ_a²), K0 = XXᵀ/N0, Y (P × m).  The paper's leading order (:func:`bnnzoo.theory.linear.linear_leading_order`)
is the large-P limit; its corrections are O(σ_a²/U) = O(P^{-1/L}) for σ_a² = P^{-1/L}, i.e. 5–30 % at the sizes a CPU
samples.  This module keeps P finite and takes N → ∞: at T → 0 (:func:`deep_linear_zero_temperature`) and at finite
rescaled T (:func:`deep_linear_saddle_point`).

Derivation (σ_w² = 1).  The layer kernels K_l = z_lᵀz_l/N concentrate as N → ∞.  Given K_{l−1}, the N rows of z_l
are i.i.d. N(0, K_{l−1}), so a value K_l of their empirical covariance costs the Wishart large-deviation rate
(N/2)[tr(K_{l−1}⁻¹K_l) − log det(K_{l−1}⁻¹K_l) − P].  The top layer with the readout is the one-layer problem of
docs/theory.md §4 with input kernel K_{L−1}: at T → 0, K_L − K_{L−1} = Y U⁻¹ Yᵀ with U² − σ_a² U = σ_a² Yᵀ K_{L−1}⁻¹ Y.
Stationarity of the rate in each intermediate K_l gives K_{l+1} − K_l = K_l K_{l−1}⁻¹ (K_l − K_{l−1}).  Every
K_l − K0 = Y D_l Yᵀ then lies in the span of Y: with C_l = D_l − D_{l−1} (D_0 = 0) and B = Yᵀ K0⁻¹ Y (m × m),

    C_{l+1} = (I + D_l B)(I + D_{l−1} B)⁻¹ C_l,   C_L = U⁻¹,   U² − σ_a² U = σ_a² (B⁻¹ + D_{L−1})⁻¹,

an m × m root-finding problem for C_1, started from the leading order (which drops the σ_a² U term and terms of
relative order 1/(B C_l)).  For σ_w² ≠ 1 the substitution a → σ_w^L a maps the net onto σ_w² = 1 with
σ_a² → σ_a² σ_w^{2L}; K_l scales back by σ_w^{2l} and U by σ_w^{−2L} (as in :mod:`bnnzoo.theory.linear`).

Checked in tests/theory/test_deep_linear.py (tolerances in docs/validation.md): depth 1 is the one-layer
T → 0 saddle point (:func:`~bnnzoo.theory.linear.linear_saddle_point`); the gap to the leading order falls like
P^{-1/L}; against the exact deep Gibbs sampler (:func:`bnnzoo.inference.gibbs_linear.gibbs_linear`) U and every K_l
agree to O(1/N).

Finite T (σ_w² = 1).  Integrating the readout out, each column of Y is Gaussian given the feature kernel, with
covariance (σ_a² K_L + T)/N: an O(N) term (N/2) tr Yᵀ(σ_a² K_L + T)⁻¹ Y in the rate (its log-determinant is O(1)).
The kernels therefore sit at the minimum of

    S = Σ_{l=1..L} [tr(K_{l−1}⁻¹K_l) − log det(K_{l−1}⁻¹K_l) − P] + tr Yᵀ(σ_a² K_L + T)⁻¹ Y.

Stationarity in an intermediate K_l gives K_{l+1} = K_l K_{l−1}⁻¹ K_l (the same rule as above), so
K_l = K0^{1/2} A^l K0^{1/2} for one symmetric positive A, and S(A) = L(tr A − log det A − P) +
tr Yᵀ(σ_a² K0^{1/2} A^L K0^{1/2} + T)⁻¹ Y.  Its stationarity, A^{−(L−1)} − A^{−L} = σ_a² K0^{1/2} Λ Λᵀ K0^{1/2} with
Λ = (σ_a² K_L + T)⁻¹ Y, makes A − I of rank ≤ rank Y, so A = I + Z Zᵀ with Z of P × rank Y; S is minimised over Z
(L-BFGS with the analytic gradient 2 (∂S/∂A) Z, started at the leading order).  Given K_L the readout is Gaussian
with mean σ_a² z_L Λ, so U = σ_a² I + σ_a⁴ Λᵀ K_L Λ and the mean training output is σ_a² K_L Λ = Y − TΛ.  S sees
Y only through YYᵀ: rank-deficient targets are allowed, and along a null direction v of Y, vᵀUv = σ_a².  At L = 1
this is the one-layer saddle point (Woodbury), at T = 0 the recursion above.  Checked in
tests/theory/test_deep_linear_saddle.py against both and against the exact deep Gibbs sampler at finite T.

At finite N the same integration gives, exactly for a given feature kernel,
E[aᵀa/N | K_L] = σ_a²(1 − tr(σ_a² K_L G)/N) I + σ_a⁴ Yᵀ G K_L G Y, G = (σ_a² K_L + T)⁻¹: every eigenvalue of σ_a² K_L
well above T pins one of the N directions of the readout, a correction of order P/N that the N → ∞ theory drops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import linalg, optimize

from ._common import as_xy, default_sigma_a2, json_attrs

__all__ = ["DeepLinearSaddle", "DeepLinearT0", "deep_linear_saddle_point", "deep_linear_zero_temperature"]


@dataclass(frozen=True)
class DeepLinearT0:
    """N → ∞, T → 0 theory of the depth-L linear net at finite P [derived] (module docstring).

    U : (m, m) posterior second moment of one neuron's readout E[a_i a_iᵀ] (sampler estimate: aᵀa/N).
    K : (L, P, P) posterior mean of each layer's kernel z_lᵀz_l/N.
    D : (L, m, m) K_l = σ_w^{2l} (K0 + Y D_l Yᵀ).
    f_train : (P, m) the mean training output, Y at T → 0.
    residual : largest ``|entry|`` of the root-finding residual for C_1.
    depth, sigma_a2, sigma_w2 : the inputs.
    """

    U: np.ndarray
    K: np.ndarray
    D: np.ndarray
    f_train: np.ndarray
    residual: float
    depth: int
    sigma_a2: float
    sigma_w2: float

    def to_dataset(self):
        """``xarray.Dataset`` with dims layer, point, point2, class, class2."""
        return xr.Dataset({"U": (("class", "class2"), self.U), "K": (("layer", "point", "point2"), self.K),
                           "D": (("layer", "class", "class2"), self.D),
                           "f_train": (("point", "class"), self.f_train)},
                          coords={"layer": np.arange(1, self.depth + 1)},
                          attrs=json_attrs(theory="deep_linear_zero_temperature", tag="derived", depth=self.depth,
                                           sigma_a2=self.sigma_a2, sigma_w2=self.sigma_w2, residual=self.residual))


def _msqrt(A: np.ndarray) -> np.ndarray:
    w, V = np.linalg.eigh(0.5 * (A + A.T))
    return (V * np.sqrt(np.maximum(w, 0.0))) @ V.T


def _checked(X, Y, depth, sigma_a2, sigma_w2):
    """The inputs of the deep linear theories, checked: (X, Y, K0 = XXᵀ/N0, L, σ_a², s = σ_a² σ_w^{2L})."""
    X, Y = as_xy(X, Y)
    P, N0 = X.shape
    L = int(depth)
    if L < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    if sigma_w2 <= 0:
        raise ValueError(f"sigma_w2 must be positive, got {sigma_w2}")
    sa2 = default_sigma_a2(P, L) if sigma_a2 is None else float(sigma_a2)
    if sa2 <= 0:
        raise ValueError(f"sigma_a2 must be positive, got {sigma_a2}")
    K0 = X @ X.T / N0
    if np.linalg.matrix_rank(K0) < P:
        raise ValueError(f"K0 = XXᵀ/N0 is singular (P = {P}, N0 = {N0}); the theory needs P <= N0 and inputs in "
                         "general position")
    return X, Y, K0, L, sa2, sa2 * sigma_w2**L              # σ_w² = 1 after a → σ_w^L a


def deep_linear_zero_temperature(X, Y=None, *, depth: int, sigma_a2: float | None = None,
                                 sigma_w2: float = 1.0, tol: float = 1e-10) -> DeepLinearT0:
    """Posterior U and layer kernels of the depth-L linear net with non-lazy readout, exact as N → ∞ and T → 0 at
    finite P [derived] (module docstring).

    X (P, N0) or a Task; Y (P, m).  sigma_a2 : readout prior variance (default: the paper's P^{-1/L}).
    K0 = XXᵀ/N0 must be invertible (P ≤ N0, inputs in general position).
    """
    X, Y, K0, L, sa2, s = _checked(X, Y, depth, sigma_a2, sigma_w2)
    P, m = Y.shape
    B = Y.T @ np.linalg.solve(K0, Y)
    Bi, I = np.linalg.inv(B), np.eye(m)

    def U_top(D):
        return s / 2 * I + _msqrt(s**2 / 4 * I + s * np.linalg.inv(Bi + D))

    def layers(C1):                                         # D_0 .. D_{L-1} and C_1 .. C_L
        Ds, Cs = [np.zeros((m, m)), C1], [None, C1]
        for l in range(1, L):
            Cs.append((I + Ds[l] @ B) @ np.linalg.solve(I + Ds[l - 1] @ B, Cs[l]))
            Ds.append(Ds[l] + Cs[-1])
        return Ds[:L], Cs

    residual = 0.0
    if L == 1:
        U = U_top(np.zeros((m, m)))
        Ds = [np.zeros((m, m))]
    else:
        def resid(x):
            Ds_, Cs_ = layers(x.reshape(m, m))
            return (Cs_[L] - np.linalg.inv(U_top(Ds_[L - 1]))).ravel()

        w, V = np.linalg.eigh(s**L * B)                     # leading-order start: U^{L+1} = s^L B
        U_lo = (V * w ** (1.0 / (L + 1))) @ V.T
        C1 = s ** (L - 1) * np.linalg.matrix_power(np.linalg.inv(U_lo), L)
        sol = optimize.root(resid, C1.ravel(), tol=1e-13)
        residual = float(np.abs(sol.fun).max())
        if not residual < tol:
            raise RuntimeError(f"deep_linear_zero_temperature: no solution for C_1 (residual {residual:.1e}, "
                               f"{sol.message})")
        Ds, _ = layers(sol.x.reshape(m, m))
        U = U_top(Ds[L - 1])
    D_all = [D for D in Ds[1:]] + [Ds[L - 1] + np.linalg.inv(U)]
    K = np.array([sigma_w2 ** (l + 1) * (K0 + Y @ D @ Y.T) for l, D in enumerate(D_all)])
    return DeepLinearT0(U=U / sigma_w2**L, K=K, D=np.array(D_all), f_train=Y.copy(), residual=residual, depth=L,
                        sigma_a2=sa2, sigma_w2=float(sigma_w2))


# ------------------------------------------------------------------------------------------ finite T
@dataclass(frozen=True)
class DeepLinearSaddle:
    """N → ∞ theory of the depth-L linear net at finite P and finite rescaled temperature T [derived] (module
    docstring of :mod:`bnnzoo.theory.deep_linear`, "Finite T").

    U : (m, m) posterior second moment of one neuron's readout E[a_i a_iᵀ] (sampler estimate: aᵀa/N).
    K : (L, P, P) posterior mean of each layer's kernel z_lᵀz_l/N.
    Lambda : (P, m) (Y − f_train)/T = (σ_a² K_L + T)⁻¹ Y (σ_w² = 1 units; at T = 0 the limit (σ_a² K_L)⁻¹ Y).
    f_train : (P, m) the mean training output σ_a² K_L Λ.
    action : the minimised rate S(A) per neuron (module docstring).
    residual : largest ``|entry|`` of the stationarity condition ∂S/∂A at the solution.
    depth, temperature, sigma_a2, sigma_w2 : the inputs.
    """

    U: np.ndarray
    K: np.ndarray
    Lambda: np.ndarray
    f_train: np.ndarray
    action: float
    residual: float
    depth: int
    temperature: float
    sigma_a2: float
    sigma_w2: float

    def to_dataset(self):
        """``xarray.Dataset`` with dims layer, point, point2, class, class2."""
        return xr.Dataset({"U": (("class", "class2"), self.U), "K": (("layer", "point", "point2"), self.K),
                           "Lambda": (("point", "class"), self.Lambda),
                           "f_train": (("point", "class"), self.f_train)},
                          coords={"layer": np.arange(1, self.depth + 1)},
                          attrs=json_attrs(theory="deep_linear_saddle_point", tag="derived", depth=self.depth,
                                           temperature=self.temperature, sigma_a2=self.sigma_a2,
                                           sigma_w2=self.sigma_w2, action=self.action, residual=self.residual))


def _action(Z: np.ndarray, M: np.ndarray, Y: np.ndarray, L: int, s: float, T: float):
    """S(A) = L (tr A − log det A − P) + tr Yᵀ (s M A^L M + T)⁻¹ Y at A = I + Z Zᵀ, its gradient in Z, the
    stationarity matrix E = ∂S/∂A, the eigendecomposition of A and G = (s M A^L M + T)⁻¹."""
    P = M.shape[0]
    alpha, V = np.linalg.eigh(np.eye(P) + Z @ Z.T)
    alpha = np.maximum(alpha, 1e-300)
    H = s * (M @ (V * alpha**L) @ V.T @ M) + T * np.eye(P)
    cf = linalg.cho_factor(H)
    GY = linalg.cho_solve(cf, Y)
    S = L * float(np.sum(alpha - 1.0 - np.log(alpha))) + float(np.sum(Y * GY))
    R = V.T @ (M @ GY)                                        # eigenbasis of A
    Qt = s * R @ R.T
    Phi = sum(np.outer(alpha**k, alpha ** (L - 1 - k)) for k in range(L))
    E = V @ (np.diag(L * (1.0 - 1.0 / alpha)) - Qt * Phi) @ V.T
    E = 0.5 * (E + E.T)
    return S, 2.0 * E @ Z, E, (alpha, V), GY


def deep_linear_saddle_point(X, Y=None, *, depth: int, temperature: float, sigma_a2: float | None = None,
                             sigma_w2: float = 1.0, tol: float = 1e-7) -> DeepLinearSaddle:
    """Posterior U and layer kernels of the depth-L linear net with non-lazy readout, exact as N → ∞ at finite P and
    finite rescaled temperature T [derived] (module docstring, "Finite T").

    Parameters
    ----------
    X : (P, N0) inputs, or a :class:`bnnzoo.tasks.Task` (then ``Y`` is omitted).
    Y : (P, m) targets; may be rank-deficient (the toy task at y− = −½, whose rows sum to zero).
    depth : L >= 1 hidden layers.
    temperature : rescaled T >= 0 (likelihood variance T/N per output entry); T = 0 is the T → 0 limit.
    sigma_a2 : readout prior variance (default: the paper's P^{-1/L}).
    sigma_w2 : hidden-weight prior variance (every layer).
    tol : largest accepted ``|entry|`` of the stationarity condition ∂S/∂A.

    Returns
    -------
    DeepLinearSaddle

    Raises
    ------
    ValueError
        depth < 1, T < 0, non-positive variances, or a singular K0 = XXᵀ/N0.
    RuntimeError
        The minimiser does not reach ``tol``.
    """
    if not float(temperature) >= 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    X, Y, K0, L, sa2, s = _checked(X, Y, depth, sigma_a2, sigma_w2)
    (P, m), T = Y.shape, float(temperature)
    M = _msqrt(K0)
    Mi = np.linalg.inv(M)
    # the kernels see Y only through YYᵀ: work with Ỹ (P × r), r = rank Y, ỸỸᵀ = YYᵀ
    uY, sv, _ = np.linalg.svd(Y, full_matrices=False)
    r = int(np.sum(sv > 1e-10 * max(sv[0] if sv.size else 0.0, 1e-300)))
    Yr = uY[:, :r] * sv[:r]
    if r == 0:
        Z0 = np.zeros((P, 1))
    else:                                                   # leading order: U^{L+1} = s^L B̃, D_1 = s^{L−1} U^{−L}
        Br = Yr.T @ np.linalg.solve(K0, Yr)
        w, V = np.linalg.eigh(s**L * Br)
        d1 = s ** (L - 1) * np.maximum(w, 1e-300) ** (-L / (L + 1))
        Z0 = Mi @ Yr @ V * np.sqrt(d1)
    shape = Z0.shape

    S0 = _action(Z0, M, Yr, L, s, T)[0]

    def fun(z):                                             # S − S(start): the minimiser's stopping rule is relative
        S, g, *_ = _action(z.reshape(shape), M, Yr, L, s, T)
        return S - S0, g.ravel()

    sol = optimize.minimize(fun, Z0.ravel(), jac=True, method="L-BFGS-B",
                            options=dict(maxiter=20000, maxcor=30, ftol=1e-16, gtol=1e-13))
    z = sol.x
    for _ in range(3):                                      # polish: BFGS from the L-BFGS point
        S, _, E, _, _ = _action(z.reshape(shape), M, Yr, L, s, T)
        if float(np.abs(E).max()) < tol:
            break
        z = optimize.minimize(fun, z, jac=True, method="BFGS", options=dict(gtol=1e-14, maxiter=5000)).x
    S, _, E, (alpha, V), _ = _action(z.reshape(shape), M, Yr, L, s, T)
    residual = float(np.abs(E).max())
    if not residual < tol:
        raise RuntimeError(f"deep_linear_saddle_point: no stationary point (residual {residual:.1e}, {sol.message})")
    K = np.array([M @ (V * alpha**l) @ V.T @ M for l in range(1, L + 1)])   # σ_w² = 1 units
    H = s * K[-1] + T * np.eye(P)
    Lam = np.linalg.solve(H, Y)                             # (s K_L + T)⁻¹ Y
    U = s * np.eye(m) + s**2 * Lam.T @ K[-1] @ Lam
    f_train = s * K[-1] @ Lam
    K = K * np.array([sigma_w2**l for l in range(1, L + 1)])[:, None, None]
    return DeepLinearSaddle(U=U / sigma_w2**L, K=K, Lambda=Lam, f_train=f_train, action=S, residual=residual,
                            depth=L, temperature=T, sigma_a2=sa2, sigma_w2=float(sigma_w2))
