"""NNGP kernels and GP predictor (bnnzoo.theory.gp) against Monte Carlo over random networks and direct algebra.

Tolerances: |MC − closed form| < 5 MC standard errors (+ 2/N · max|K| for depth ≥ 2, the O(1/N) finite-width bias of
the deeper layers; SE ≈ 0.3 % of the kernel scale here).
"""

import numpy as np
import pytest
from scipy import special

from bnnzoo.theory.gp import gp_generalization, gp_posterior, nngp_kernel, phi_kernel

PHI = {
    "linear": lambda z: z,
    "relu": lambda z: np.maximum(z, 0.0),
    "erf": special.erf,
    "sigmoid": lambda z: 0.5 * (1 + special.erf(np.sqrt(np.pi) / 2 * z)),
}


def inputs(seed=0, P=4, N0=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((P, N0)) * rng.uniform(0.5, 1.6, size=(P, 1))  # unequal norms, non-orthogonal
    X[3] = -0.7 * X[0] + 0.2 * X[3]  # a strongly anti-correlated pair
    return X


@pytest.mark.parametrize("name", sorted(PHI))
def test_one_layer_kernel_against_monte_carlo(name):
    """Depth 1 is exact at any width: 100 000 independent neurons z = W xᵀ/√N0, W ~ N(0, σ_w²)."""
    X = inputs()
    sw2, sa2, n = 1.7, 0.6, 100_000
    rng = np.random.default_rng(1)
    z = np.sqrt(sw2) * rng.standard_normal((n, X.shape[1])) @ X.T / np.sqrt(X.shape[1])  # (n, P)
    f = PHI[name](z)
    prods = sa2 * f[:, :, None] * f[:, None, :]
    mc, se = prods.mean(0), prods.std(0) / np.sqrt(n)
    K = nngp_kernel(X, nonlinearity=name, sigma_w2=sw2, sigma_a2=sa2)
    assert np.all(np.abs(mc - K) < 5 * se), f"{name}: max z {np.max(np.abs(mc - K) / se):.2f}"
    assert np.max(se) < 0.02 * np.max(np.abs(K))  # the test has power


@pytest.mark.parametrize("name,depth", [("relu", 2), ("sigmoid", 3), ("erf", 2), ("linear", 3)])
def test_deep_kernel_against_finite_networks(name, depth):
    """R = 100 random networks of width N = 20 000.  Given layer ℓ−1, the N preactivations of layer ℓ of a finite
    network are exactly i.i.d. N(0, σ_w² φ(z)ᵀφ(z)/N) (rows of W^ℓ are independent Gaussians), so each layer is drawn
    from that P × P covariance instead of multiplying an N × N weight matrix — the same random network, sampled
    cheaply.  Per-layer variances differ to exercise the σ_w² list."""
    X = inputs(seed=2)
    sw2 = [1.3, 0.8, 1.1][:depth]
    sa2, N, R = 0.9, 20_000, 100
    rng = np.random.default_rng(3)
    ests = []
    for _ in range(R):
        z = np.sqrt(sw2[0]) * rng.standard_normal((N, X.shape[1])) @ X.T / np.sqrt(X.shape[1])
        for ell in range(1, depth):
            f = PHI[name](z)
            C = sw2[ell] * f.T @ f / N
            Lc = np.linalg.cholesky(C + 1e-12 * np.eye(len(C)))
            z = rng.standard_normal((N, len(C))) @ Lc.T
        f = PHI[name](z)
        ests.append(sa2 * f.T @ f / N)
    ests = np.array(ests)
    mc, se = ests.mean(0), ests.std(0, ddof=1) / np.sqrt(R)
    K = nngp_kernel(X, nonlinearity=name, depth=depth, sigma_w2=sw2, sigma_a2=sa2)
    tol = 5 * se + 2.0 / N * np.max(np.abs(K))
    assert np.all(np.abs(mc - K) < tol), f"{name} L={depth}: max |Δ|/tol {np.max(np.abs(mc - K) / tol):.2f}"
    assert np.max(se) < 0.01 * np.max(np.abs(K))


def test_cross_kernel_and_layers_consistent():
    X = inputs(seed=4, P=5)
    full, layers = nngp_kernel(X, nonlinearity="relu", depth=3, sigma_w2=1.2, sigma_a2=0.5, return_layers=True)
    cross = nngp_kernel(X[:2], X[2:], nonlinearity="relu", depth=3, sigma_w2=1.2, sigma_a2=0.5)
    np.testing.assert_allclose(cross, full[:2, 2:], rtol=1e-12)
    np.testing.assert_allclose(layers[0], 1.2 * X @ X.T / X.shape[1], rtol=1e-12)
    assert len(layers) == 3 and np.linalg.eigvalsh(full)[0] > -1e-12
    # relu kernel of a point with itself: E[relu(u)²] = k/2
    np.testing.assert_allclose(phi_kernel("relu", 2.0, 2.0, 2.0), 1.0)


def test_gp_mean_equals_weight_space_regression():
    """Linear φ, depth 1: the GP is Bayesian linear regression f = σ_a σ_w x·β/√N0, β ~ N(0, I); the posterior mean
    computed in weight space, (XᵀX c + T I)⁻¹ c XᵀY with c = σ_a² σ_w²/N0 (an N0 × N0 solve), must agree."""
    rng = np.random.default_rng(5)
    X, Xt = rng.standard_normal((6, 4)), rng.standard_normal((3, 4))
    Y = rng.standard_normal((6, 2))
    T, sw2, sa2 = 0.3, 1.5, 0.8
    gp = gp_posterior(X, Y, Xt, nonlinearity="linear", temperature=T, sigma_w2=sw2, sigma_a2=sa2)
    c = sa2 * sw2 / 4
    A = c * X.T @ X + T * np.eye(4)  # precision × T of the weight vector w = √c β
    w_mean = np.linalg.solve(A, c * X.T @ Y)
    np.testing.assert_allclose(gp.mean, Xt @ w_mean, rtol=1e-10)
    w_cov = T * c * np.linalg.inv(A)
    np.testing.assert_allclose(gp.var, np.einsum("pi,ij,pj->p", Xt, w_cov, Xt), rtol=1e-10)


def test_gp_posterior_by_joint_conditioning_and_generalization():
    """Nonlinear kernel: the GP mean/variance equal Gaussian conditioning on the joint (train + test) covariance
    done through the joint precision matrix; class-wise errors checked by hand."""
    rng = np.random.default_rng(6)
    X, Xt = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    lab_t = np.array([0, 1, 2, 1])
    Y = np.eye(3)[rng.integers(0, 3, 5)]
    Yt = np.eye(3)[lab_t]
    T = 0.2
    gp = gp_posterior(X, Y, Xt, nonlinearity="sigmoid", depth=2, temperature=T, sigma_w2=1.3, Y_test=Yt,
                      labels_test=lab_t)
    Z = np.vstack([X, Xt])
    J = nngp_kernel(Z, nonlinearity="sigmoid", depth=2, sigma_w2=1.3)
    J[:5, :5] += T * np.eye(5)  # noisy observations y = f + ε
    Q = np.linalg.inv(J)  # joint precision of (y, f*)
    cov_t = np.linalg.inv(Q[5:, 5:])
    mean_t = -cov_t @ Q[5:, :5] @ Y
    np.testing.assert_allclose(gp.mean, mean_t, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(gp.var, np.diag(cov_t), rtol=1e-8)
    g = gp.generalization
    se = np.mean((mean_t - Yt) ** 2, 1)
    np.testing.assert_allclose(g.mse_per_class, [se[0], (se[1] + se[3]) / 2, se[2]], rtol=1e-8)
    wrong = (np.argmax(mean_t, 1) != lab_t).astype(float)
    np.testing.assert_allclose(g.class_error_per_class, [wrong[0], (wrong[1] + wrong[3]) / 2, wrong[2]])
    np.testing.assert_allclose(g.expected_mse, np.mean(se + np.diag(cov_t)), rtol=1e-8)
    ds = gp.to_dataset()
    assert ds["mean"].dims == ("test_point", "class") and "gen_mse_per_class" in ds
    # binary (m = 1): sign errors
    gb = gp_generalization(np.array([[0.5], [-0.2], [0.1]]), np.array([[1.0], [1.0], [-1.0]]))
    np.testing.assert_allclose(gb.class_error_per_class, [1.0, 0.5])
