"""Linear theory (bnnzoo.theory.linear) against independent computations.

* N → ∞ saddle point vs the exact finite-N posterior (m = 1 quadrature at N = 10⁷: deterministic, tight).
* Saddle point vs the exact Gibbs sampler at N = 1000 (m = 3, Gaussian and orthogonal inputs, small and large T,
  lazy and non-lazy): |Gibbs − theory| < 4 batch-means SE + 5/N · max|theory| (the 5/N allows for the O(1/N) finite-width
  correction, measured at ≤ 2/N relative by the quadrature for these sizes).
* The paper's leading-order U (U² = σ_a² Yᵀ K0⁻¹ Y) departs from the exact U by ≈ 20 % at σ_a² = 1, P = 5 and the
  Gibbs sampler sides with the exact form; the departure vanishes like 1/P at σ_a² = 1/P.
"""

import numpy as np
import pytest

from bnnzoo.inference.gibbs_linear import gibbs_linear
from bnnzoo.tasks import toy_task
from bnnzoo.theory.linear import linear_exact_m1, linear_leading_order, linear_saddle_point


def batch_se(x, n_batches=25):
    n = (x.shape[0] // n_batches) * n_batches
    b = x[:n].reshape(n_batches, -1, *x.shape[1:]).mean(1)
    return x.mean(0), b.std(0, ddof=1) / np.sqrt(n_batches)


def gaussian_data(P=6, N0=10, m=3, y_neg=-0.5, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((P, N0))  # non-orthogonal inputs
    Y = np.full((P, m), y_neg)
    Y[np.arange(P), np.arange(P) % m] = 1.0
    return X, Y, rng.standard_normal((3, N0))


def assert_agree(name, draws, theory, N):
    mean, se = batch_se(draws)
    tol = 4 * se + 5.0 / N * np.max(np.abs(theory))
    err = np.abs(mean - theory)
    assert np.all(err < tol), f"{name}: max |gibbs − theory| {err.max():.3g}, tol {tol.min():.3g}"


@pytest.mark.parametrize("readout", ["nonlazy", "lazy"])
@pytest.mark.parametrize("T", [0.01, 1.0])
def test_saddle_is_large_width_limit_of_exact_m1(readout, T):
    X, Y, _ = gaussian_data(P=5, N0=8, m=1)
    Y = Y * 1.3 - 0.2
    sp = linear_saddle_point(X, Y, temperature=T, sigma_a2=0.8, sigma_w2=1.3, readout=readout)
    ex = linear_exact_m1(X, Y, width=10**7, temperature=T, sigma_a2=0.8, sigma_w2=1.3, readout=readout)
    for a, b in ((sp.U, ex.U), (sp.f_train, ex.f_train), (sp.K1, ex.K1)):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5 * np.max(np.abs(b)))
    # and it is *not* the finite-N answer at small N (the comparison can fail)
    small = linear_exact_m1(X, Y, width=20, temperature=T, sigma_a2=0.8, sigma_w2=1.3, readout=readout)
    assert np.max(np.abs(small.U - sp.U)) > 1e-3


SETTINGS = [
    # (data, T, sigma_a2, sigma_w2, readout)
    ("gauss", 0.01, 1 / 6, 1.0, "nonlazy"),
    ("gauss", 2.0, 1.0, 0.7, "nonlazy"),
    ("toy", 0.05, 1.0, 1.0, "nonlazy"),
    ("gauss", 0.5, 1.0, 1.0, "lazy"),
]


@pytest.mark.parametrize("data,T,sa2,sw2,readout", SETTINGS)
def test_saddle_point_against_gibbs_m3(data, T, sa2, sw2, readout):
    if data == "gauss":
        X, Y, Xt = gaussian_data()
    else:
        task = toy_task(8, N0=12, y_neg=0.0, P_test=3)
        X, Y, Xt = task.X, task.Y, task.X_test
    N = 1000
    sp = linear_saddle_point(X, Y, temperature=T, sigma_a2=sa2, sigma_w2=sw2, readout=readout, X_test=Xt)
    assert sp.residual < 1e-10
    g = gibbs_linear(X, Y, width=N, temperature=T, sigma_a2=sa2, sigma_w2=sw2, readout=readout,
                     num_samples=2500, num_warmup=200, seed=3, X_test=Xt)
    assert_agree("U", g.U, sp.U, N)
    assert_agree("f", g.f, sp.f_train, N)
    assert_agree("K1", g.K1, sp.K1, N)
    assert_agree("f_test", g.f_test, sp.f_test, N)
    assert_agree("K1_test", g.K1_test, sp.K1_test, N)
    assert_agree("K1_train_test", g.K1_train_test, sp.K1_train_test, N)


def test_leading_order_departs_from_exact_by_twenty_percent():
    """docs/theory.md §4: at σ_a² = 1, P = 5 (orthogonal, y = ±1) U_exact = ½ + √(¼ + 5) = 2.79, U_paper = √5 = 2.24."""
    task = toy_task(5, N0=8, ratios=(0.6, 0.4))
    X, Y = task.X, np.where(task.labels == 0, 1.0, -1.0)[:, None]
    exact0 = linear_saddle_point(X, Y, temperature=0.0, sigma_a2=1.0)
    np.testing.assert_allclose(exact0.U, 0.5 + np.sqrt(5.25), rtol=1e-12)
    np.testing.assert_allclose(exact0.U_leading_order, np.sqrt(5.0), rtol=1e-12)
    lo = linear_leading_order(X, Y, sigma_a2=1.0)
    np.testing.assert_allclose(lo.U, np.sqrt(5.0), rtol=1e-12)
    assert 0.19 < (exact0.U - lo.U)[0, 0] / exact0.U[0, 0] < 0.21
    # the root finder at tiny T meets the closed form
    np.testing.assert_allclose(linear_saddle_point(X, Y, temperature=1e-9, sigma_a2=1.0).U, exact0.U, rtol=1e-6)
    # Gibbs at T = 0.01 agrees with the exact theory at that T and rejects the leading order by > 20 SE
    T, N = 0.01, 1000
    sp = linear_saddle_point(X, Y, temperature=T, sigma_a2=1.0)
    g = gibbs_linear(X, Y, width=N, temperature=T, sigma_a2=1.0, num_samples=2000, num_warmup=200, seed=0)
    assert_agree("U", g.U, sp.U, N)
    mean, se = batch_se(g.U)
    assert abs(mean[0, 0] - lo.U[0, 0]) > 20 * se[0, 0] and abs(mean[0, 0] - lo.U[0, 0]) / mean[0, 0] > 0.15


def test_leading_order_converges_to_exact_at_large_P():
    """With σ_a² = 1/P the σ_a² U term is O(1/P): relative gap < 1/P at P = 400, > 15 % at P = 5, σ_a² = 1."""
    task = toy_task(400, y_neg=0.0)
    sp = linear_saddle_point(task.X, task.Y, temperature=0.0)  # default σ_a² = 1/P
    lo = linear_leading_order(task.X, task.Y)
    gap = np.linalg.norm(lo.U - sp.U) / np.linalg.norm(sp.U)
    assert gap < 1 / 400
    np.testing.assert_allclose(lo.K[0], sp.K1, atol=2.0 / 400 * np.max(np.abs(sp.K1)))


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_leading_order_deep_formulas(depth):
    X, Y, Xt = gaussian_data(P=6, N0=9, m=3, y_neg=0.0)
    sa2, sw2 = 0.3, 1.4
    lo = linear_leading_order(X, Y, depth=depth, sigma_a2=sa2, sigma_w2=sw2, X_test=np.vstack([X, Xt]))
    K0 = X @ X.T / 9
    B = Y.T @ np.linalg.solve(K0, Y)
    # U^{L+1} = σ_a^{2L} Yᵀ K0⁻¹ Y, written for the σ_w = 1 net (a → σ_w^L a)
    Ut = lo.U * sw2**depth
    np.testing.assert_allclose(np.linalg.matrix_power(Ut, depth + 1), (sa2 * sw2**depth) ** depth * B, rtol=1e-9)
    # feature layer: K_L = σ_w^{2L} K0 + E_a[(Y U⁻¹ a)(Y U⁻¹ a)ᵀ], a ~ N(0, U): the mean part is the learned term
    np.testing.assert_allclose(lo.K[-1], sw2**depth * K0 + lo.feature_map @ lo.U @ lo.feature_map.T, rtol=1e-9)
    # test formulas evaluated at the training inputs reproduce the training quantities, f(x_μ) = y_μ
    np.testing.assert_allclose(lo.f_test[:6], Y, atol=1e-9)
    np.testing.assert_allclose(lo.K_test[:, :6, :6], lo.K, atol=1e-9)
    np.testing.assert_allclose(lo.K_train_test[:, :, :6], lo.K, atol=1e-9)
    # learned part grows toward the feature layer for σ_a² U ≪ 1 ... kernels are symmetric PSD
    for K in lo.K:
        assert np.linalg.eigvalsh(K)[0] > -1e-10
    ds = lo.to_dataset()
    assert ds["K"].dims == ("layer", "point", "point2") and ds.attrs["depth"] == depth


def test_records_and_errors(tmp_path):
    X, Y, Xt = gaussian_data()
    sp = linear_saddle_point(X, Y, temperature=0.1, X_test=Xt)
    ds = sp.to_dataset()
    ds.to_netcdf(tmp_path / "sp.nc", engine="h5netcdf")  # attrs are JSON/NetCDF scalars
    assert ds["Lambda"].dims == ("point", "class") and ds["K1_test"].dims == ("test_point", "test_point2")
    assert ds.attrs["sigma_a2"] == pytest.approx(1 / 6)
    np.testing.assert_allclose(sp.f_train, Y - 0.1 * sp.Lambda, atol=1e-10)  # F = Yᵀ − TΛ
    Xbig = np.random.default_rng(0).standard_normal((12, 5))  # P > N0: K0 singular
    Ybig = np.ones((12, 1))
    with pytest.raises(ValueError, match="singular"):
        linear_saddle_point(Xbig, Ybig, temperature=0.0)
    assert linear_saddle_point(Xbig, Ybig, temperature=0.5).residual < 1e-10  # finite T is fine
    with pytest.raises(NotImplementedError):
        linear_exact_m1(X, Y, width=10, temperature=0.1)


def test_saddle_solvers_agree_on_random_problems():
    """The Newton root in U and the concave maximisation over Λ (the fallback) give the same U; random shapes
    including P > N0 (singular K0), T from 1e-4 to 10, σ_a² from 0.01 to 10: relative difference < 1e-9."""
    from bnnzoo.theory.linear import _saddle_U

    rng = np.random.default_rng(7)
    for _ in range(25):
        P, N0, m = rng.integers(2, 20), rng.integers(2, 25), rng.integers(1, 5)
        X, Y = rng.standard_normal((P, N0)), rng.standard_normal((P, m)) * rng.uniform(0.1, 5)
        T, sa2 = 10 ** rng.uniform(-4, 1), 10 ** rng.uniform(-2, 1)
        sp = linear_saddle_point(X, Y, temperature=T, sigma_a2=sa2)
        assert sp.residual < 1e-9
        kw, kV = np.linalg.eigh(X @ X.T / N0)
        kw = np.where(kw > 1e-12 * kw[-1], kw, 0.0)
        U_concave = _saddle_U(kw, Y.T @ kV, sa2, T, None, 1e-9)
        np.testing.assert_allclose(U_concave, sp.U, rtol=1e-9, atol=1e-9 * np.abs(sp.U).max())
