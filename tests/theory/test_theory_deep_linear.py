"""The paper's leading-order deep-linear theory (bnnzoo.theory.linear_leading_order, depth L ≥ 2) against the exact
deep Gibbs sampler at large width, with measured tolerances.

Reference points (σ_w² = 1, orthogonal toy task y+ = 1, y− = 0, relative Frobenius errors ‖A − B‖/‖B‖):

* The leading order is the large-P limit, but at depth L its corrections are O(σ_a²/U) = O(P^{-1/L}) for the paper's
  σ_a² = P^{-1/L} (O(P^{-2/3}) at L = 2 for σ_a² = 1/P), not O(1/P) as at L = 1 with σ_a² = 1/P.  At P = 40, L = 2,
  σ_a² = 1/P, N = 500, T = 0.01 it is off Gibbs by 3.6 % (U), 7.0 % (K1), 6.0 % (K2) — the test allows 5 % / 9 %;
  with the default σ_a² = P^{-1/2} (P = 20) by 10–15 %.  At small P it is far off: P = 8, σ_a² = 1: U 23 %,
  K1 26 %, K2 10 % (L = 2); U 21 %, K1 31 %, K3 27 % (L = 3) — the test asserts > 15 % there.
* These departures are finite-P effects, not sampler error: the derived N → ∞, T → 0 theory below (finite P) matches
  Gibbs to 0.2–0.7 % at N = 500 in every setting above and in m = 3 Gaussian-input and L = 3 checks (≈ 1 % at
  N = 250, ≈ 0.2 % at N = 1000: O(1/N); the T → 0 theory differs from the T = 0.01 one by ≤ 0.7 %); the test
  allows 2 %.  The leading order is the large-P limit of it: their gap falls like P^{-1/L} (checked
  deterministically).

Derived theory [derived here, exact as N → ∞ at fixed P, T → 0; σ_w² = 1]: the layer kernels K_l = z_lᵀz_l/N
concentrate; given K_{l−1} the rows of z_l are N i.i.d. N(0, K_{l−1}), so K_l costs the Wishart rate
(N/2)[tr(K_{l−1}⁻¹K_l) − log det(K_{l−1}⁻¹K_l) − P], and the top layer with the readout is the one-layer problem of
theory.md §4 with input kernel K_{L−1}.  Stationarity in each K_l gives K_{l+1} − K_l = K_l K_{l−1}⁻¹ (K_l − K_{l−1});
the top gives K_L − K_{L−1} = Y U⁻¹ Yᵀ with U² − σ_a² U = σ_a² Yᵀ K_{L−1}⁻¹ Y.  Every K_l − K0 = Y D_l Yᵀ lies in the
span of Y, which leaves an m × m problem (:func:`deep_linear_T0`).  The leading order drops the σ_a² U term and terms
of relative order 1/(B C_l).
"""

import numpy as np
import pytest
from scipy import optimize
from threadpoolctl import threadpool_limits

from bnnzoo.inference.gibbs_linear import gibbs_linear
from bnnzoo.tasks import toy_task
from bnnzoo.testing import mcse_mean
from bnnzoo.theory.linear import linear_leading_order, linear_saddle_point


def rel(a, b):
    """Relative Frobenius error of a against the reference b."""
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def _msqrt(A):
    w, V = np.linalg.eigh(0.5 * (A + A.T))
    return (V * np.sqrt(np.maximum(w, 0.0))) @ V.T


def deep_linear_T0(X, Y, depth, sigma_a2):
    """[derived] N → ∞, T → 0 theory of the depth-L linear net at finite P, σ_w² = 1 (module docstring).

    K_l = K0 + Y D_l Yᵀ; with C_l = D_l − D_{l−1} (D_0 = 0) and B = Yᵀ K0⁻¹ Y:
    C_{l+1} = (I + D_l B)(I + D_{l−1} B)⁻¹ C_l,  C_L = U⁻¹,  U² − σ_a² U = σ_a² (B⁻¹ + D_{L−1})⁻¹.
    Solved for C_1 (m × m) from the leading-order start.  Returns U (m, m) and K (L, P, P).
    """
    P, N0 = X.shape
    m, L, s = Y.shape[1], int(depth), float(sigma_a2)
    K0 = X @ X.T / N0
    B = Y.T @ np.linalg.solve(K0, Y)
    Bi, I = np.linalg.inv(B), np.eye(m)

    def U_top(D):
        return s / 2 * I + _msqrt(s**2 / 4 * I + s * np.linalg.inv(Bi + D))

    def layers(C1):  # D_0 .. D_{L-1} and C_1 .. C_L (C_L from the recursion)
        Ds, Cs = [np.zeros((m, m)), C1], [None, C1]
        for l in range(1, L):
            Cs.append((I + Ds[l] @ B) @ np.linalg.solve(I + Ds[l - 1] @ B, Cs[l]))
            Ds.append(Ds[l] + Cs[-1])
        return Ds[:L], Cs

    if L == 1:
        U = U_top(np.zeros((m, m)))
        return U, (K0 + Y @ np.linalg.inv(U) @ Y.T)[None]

    def resid(x):
        Ds, Cs = layers(x.reshape(m, m))
        return (Cs[L] - np.linalg.inv(U_top(Ds[L - 1]))).ravel()

    w, V = np.linalg.eigh(s**L * B)
    U_lo = (V * w ** (1.0 / (L + 1))) @ V.T
    C1 = s ** (L - 1) * np.linalg.matrix_power(np.linalg.inv(U_lo), L)
    sol = optimize.root(resid, C1.ravel(), tol=1e-13)
    assert np.abs(sol.fun).max() < 1e-10, sol.message
    Ds, _ = layers(sol.x.reshape(m, m))
    U = U_top(Ds[L - 1])
    Ks = [K0 + Y @ D @ Y.T for D in Ds[1:]] + [K0 + Y @ (Ds[L - 1] + np.linalg.inv(U)) @ Y.T]
    return U, np.array(Ks)


def gibbs_means(task, N, L, T, sa2, num_samples, seed=0):
    # one BLAS thread: the matrices are small, and on a busy 2-core machine multithreaded SVDs run ~10x slower
    with threadpool_limits(limits=1, user_api="blas"):
        g = gibbs_linear(task, width=N, depth=L, temperature=T, sigma_a2=sa2, num_samples=num_samples,
                         num_warmup=300, seed=seed)
    U, U_se, _ = mcse_mean(g.U[None])
    K, K_se, _ = mcse_mean(g.K[None])
    return g, U, K, np.linalg.norm(U_se) / np.linalg.norm(U), np.linalg.norm(K_se) / np.linalg.norm(K)


def test_derived_theory_reduces_to_one_layer_and_leading_order():
    """Helper sanity: L = 1 is the exact one-layer T → 0 saddle; the leading order is its large-P limit at every depth,
    with a gap falling like P^{-1/L} for σ_a² = P^{-1/L} (measured U gap at P = 40 → 400: L = 2 7.6 % → 2.4 %,
    L = 3 10.2 % → 4.6 %; ratios within 3 % of (1/10)^{1/L}, asserted within 10 %)."""
    task = toy_task(12, y_neg=0.0)
    U1, K1 = deep_linear_T0(task.X, task.Y, 1, 0.4)
    sp = linear_saddle_point(task.X, task.Y, temperature=0.0, sigma_a2=0.4)
    np.testing.assert_allclose(U1, sp.U, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(K1[0], sp.K1, rtol=1e-10, atol=1e-12)
    for L in (2, 3):
        gaps = {}
        for P in (40, 400):
            t = toy_task(P, y_neg=0.0)
            U, K = deep_linear_T0(t.X, t.Y, L, P ** (-1 / L))
            lo = linear_leading_order(t.X, t.Y, depth=L)
            gaps[P] = rel(lo.U, U)
            assert K.shape == lo.K.shape == (L, P, P)
        ratio = gaps[400] / gaps[40]
        assert abs(ratio / 10 ** (-1 / L) - 1) < 0.1, (L, gaps)


def test_leading_order_against_deep_gibbs_at_large_width():
    """L = 2, P = 40, σ_a² = 1/P, N = 500, T = 0.01 (≈ 16 s): the leading order's relative Frobenius error against
    Gibbs, measured 3.6 % (U), 7.0 % (K1), 6.0 % (K2) — asserted < 5 % / 9 % / 9 %, and > 2 % (the gap is real, not
    noise: Monte-Carlo error ≈ 0.25 %); the derived finite-P theory: 0.6 / 0.4 / 0.6 % — asserted < 2 %.
    The mean training output matches Y (the T → 0 predictor) to 0.6 % (O(T); asserted < 1.5 %)."""
    P, N, L, T = 40, 500, 2, 0.01
    sa2 = 1.0 / P
    task = toy_task(P, y_neg=0.0)
    lo = linear_leading_order(task.X, task.Y, depth=L, sigma_a2=sa2)
    U_ex, K_ex = deep_linear_T0(task.X, task.Y, L, sa2)
    g, U, K, U_se, K_se = gibbs_means(task, N, L, T, sa2, num_samples=1500)
    assert U_se < 0.006 and K_se < 0.006
    errs = [rel(lo.U, U)] + [rel(lo.K[l], K[l]) for l in range(L)]
    assert errs[0] < 0.05 and max(errs[1:]) < 0.09, errs
    assert min(errs) > 0.02, errs
    assert max([rel(U_ex, U)] + [rel(K_ex[l], K[l]) for l in range(L)]) < 0.02
    assert rel(g.f.mean(0), task.Y) < 0.015


@pytest.mark.parametrize("L", [2, 3])
def test_leading_order_departs_at_small_P(L):
    """P = 8, σ_a² = 1, N = 250, T = 0.01 (≈ 4 / 7 s): the leading order departs from Gibbs by U 23 %, K1 26 %,
    K2 10 % (L = 2) and U 21 %, K1 31 %, K2 2.1 %, K3 27 % (L = 3) — asserted > 15 % for U and the largest kernel
    error — while the derived finite-P theory stays within 0.6–1.2 % (O(1/N) at N = 250; asserted < 2 %)."""
    P, N, T, sa2 = 8, 250, 0.01, 1.0
    task = toy_task(P, y_neg=0.0)
    lo = linear_leading_order(task.X, task.Y, depth=L, sigma_a2=sa2)
    U_ex, K_ex = deep_linear_T0(task.X, task.Y, L, sa2)
    _, U, K, _, _ = gibbs_means(task, N, L, T, sa2, num_samples=2500)
    assert rel(lo.U, U) > 0.15 and max(rel(lo.K[l], K[l]) for l in range(L)) > 0.15
    assert max([rel(U_ex, U)] + [rel(K_ex[l], K[l]) for l in range(L)]) < 0.02
