"""Single-neuron mean field (bnnzoo.theory.meanfield) against independent computations.

* activation moments (Gauss–Hermite / closed forms) vs a dense trapezoid rule in h;
* linear φ: the mean field is Gaussian and must reproduce linear_saddle_point's U and F on the orthogonal task;
* sigmoid, P = 40 (docs/theory.md §5 check): the branches, masses and codes quoted there, and an importance-sampling
  re-evaluation of the self-consistency equations with an independently tabulated M(s);
* ReLU: the bulk equations lose normalisability at low T (outliers), reported in the result, not hidden.
"""

import numpy as np
import pytest
from scipy import integrate, interpolate, special

from bnnzoo.tasks import toy_task
from bnnzoo.theory.linear import linear_saddle_point
from bnnzoo.theory.meanfield import activation_moments, single_neuron_meanfield, single_neuron_meanfield_classes

SIG = lambda h: 0.5 * (1 + special.erf(np.sqrt(np.pi) / 2 * h))  # noqa: E731
RELU = lambda h: np.maximum(h, 0.0)  # noqa: E731


def trapezoid_moments(s, phi, var=1.0):
    """log M, m1, m2 by Simpson's rule over h ∈ [−30σ, 30σ], a node at the ReLU kink h = 0 (independent of the
    library's Gauss–Hermite / closed forms)."""
    h = np.linspace(-30, 30, 12001) * np.sqrt(var)
    logw = -0.5 * h**2 / var
    e = np.asarray(s)[:, None] * phi(h)[None, :] + logw
    mx = e.max(1, keepdims=True)
    p = np.exp(e - mx)
    Z = integrate.simpson(p, x=h, axis=1)
    logM = np.log(Z / np.sqrt(2 * np.pi * var)) + mx[:, 0]
    m1 = integrate.simpson(p * phi(h), x=h, axis=1) / Z
    m2 = integrate.simpson(p * phi(h) ** 2, x=h, axis=1) / Z - m1**2
    return logM, m1, m2


@pytest.mark.parametrize("name,phi,var", [("sigmoid", SIG, 1.0), ("relu", RELU, 1.3), ("linear", lambda h: h, 0.7)])
def test_activation_moments(name, phi, var):
    s = np.linspace(-8, 8, 41) if name != "linear" else np.linspace(-3, 3, 13)
    got = activation_moments(s, name, var)
    ref = trapezoid_moments(s, phi, var)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("T", [0.0, 0.3])
def test_linear_meanfield_reproduces_linear_theory(T):
    task = toy_task(40, y_neg=0.0)
    mf = single_neuron_meanfield(task, nonlinearity="linear", temperature=T, sigma_a2=1.0)
    sp = linear_saddle_point(task, temperature=T, sigma_a2=1.0)
    assert mf.status == "ok" and mf.grid_change < 1e-6
    np.testing.assert_allclose(mf.U, sp.U, rtol=1e-5, atol=1e-6)
    F_sp = np.array([sp.f_train[task.labels == c][0] for c in range(3)])
    np.testing.assert_allclose(mf.F, F_sp, atol=1e-6)
    assert len(mf.branch_mass) == 1 and mf.branch_mass[0] == pytest.approx(1.0, abs=1e-6)
    for r in range(3):  # Gaussian marginals N(0, U_rr)
        g, p = mf.marginal(r)
        ref = np.exp(-0.5 * g**2 / sp.U[r, r]) / np.sqrt(2 * np.pi * sp.U[r, r])
        np.testing.assert_allclose(p, ref, atol=1e-5 * ref.max())


@pytest.fixture(scope="module")
def sigmoid40():
    """docs/theory.md §5 check: P = 40, sigmoid, ratios [1/2, 1/4, 1/4], y+ = 1, y− = 1/2, σ_a² = 1/P, T → 0."""
    task = toy_task(40, y_pos=1.0, y_neg=0.5)
    return task, single_neuron_meanfield(task, nonlinearity="sigmoid")


def test_sigmoid_P40_branches(sigmoid40):
    _, mf = sigmoid40
    assert mf.status == "ok" and mf.sigma_a2 == pytest.approx(1 / 40)
    assert mf.residual < 1e-9 and mf.grid_change < 1e-6
    assert mf.branch_code == ("011", "101", "110", "111")
    # docs/theory.md quotes, in the units of a itself (no rescaling): masses 0.32 / 0.31 / 0.31 / 0.06
    np.testing.assert_allclose(mf.branch_mass, [0.32, 0.31, 0.31, 0.06], atol=0.01)
    # modes (−0.4, 1.6, 1.6), (1.73, −0.4, 1.6), (1.73, 1.6, −0.4): we get (−0.415, 1.621, 1.621), ...
    quoted = np.array([[-0.4, 1.6, 1.6], [1.73, -0.4, 1.6], [1.73, 1.6, -0.4]])
    np.testing.assert_allclose(mf.branch_mode[:3], quoted, atol=0.03)
    # the 1-1-1 branch quoted at (1.07, 1.33, 1.33) is its basin mean; its mode is (1.125, 1.335, 1.335)
    np.testing.assert_allclose(mf.branch_mean[3], [1.07, 1.33, 1.33], atol=0.01)
    np.testing.assert_allclose(mf.branch_mode[3], [1.125, 1.335, 1.335], atol=0.01)
    assert mf.unassigned_mass < 1e-3
    # densities normalised; 1-D marginals are the density's projections
    dx = mf.grid[1] - mf.grid[0]
    assert mf.density.sum() * dx**3 == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(mf.marginals.sum(1) * dx, 1.0, atol=1e-12)


def test_sigmoid_P40_importance_sampling(sigmoid40):
    """Re-evaluate E[a m1(λ_cᵀa)] (must equal y_c), U and the branch masses by importance sampling from a Gaussian
    mixture, with M(s) tabulated by an independent trapezoid rule.  Tolerance 5 IS standard errors + 2e-3."""
    task, mf = sigmoid40
    s_nodes = np.linspace(-40, 40, 1601)
    lM, m1, _ = trapezoid_moments(s_nodes, SIG)
    logM = interpolate.CubicSpline(s_nodes, lM)
    M1 = interpolate.CubicSpline(s_nodes, m1)
    rng = np.random.default_rng(0)
    centres = np.vstack([mf.branch_mode, np.zeros(3)])
    sds = np.array([0.3] * len(mf.branch_mode) + [2.0])
    n = 100_000
    comp = rng.integers(0, len(centres), n)
    a = centres[comp] + sds[comp, None] * rng.standard_normal((n, 3))
    logq = special.logsumexp(-0.5 * np.sum((a[:, None, :] - centres) ** 2, -1) / sds**2 - 3 * np.log(sds), axis=1)
    S = a @ mf.lam.T  # (n, C)
    logp = -0.5 * np.sum(a**2, 1) / mf.sigma_a2 + logM(S) @ mf.class_sizes
    lw = logp - logq
    w = np.exp(lw - lw.max())
    w /= w.sum()
    assert 1 / np.sum(w**2) > 3000  # effective sample size

    def check(vals, target, name):
        mean = w @ vals
        se = np.sqrt(w**2 @ (vals - mean) ** 2)
        assert np.all(np.abs(mean - target) < 5 * se + 2e-3), f"{name}: IS {mean} vs {target} (se {se})"

    targets = np.array([task.Y[task.labels == c][0] for c in range(3)])
    for c in range(3):
        check(a * M1(S[:, c])[:, None], targets[c], f"E[a m1(s_{c})]")
    check(np.einsum("nr,ns->nrs", a, a).reshape(n, 9), mf.U.ravel(), "U")
    # basin of attraction of each sample: gradient ascent on the independently tabulated log p, then nearest mode
    live = w > 1e-12  # samples that carry weight
    x = a[live].copy()
    for _ in range(120):
        x += 0.7 * mf.sigma_a2 * (-x / mf.sigma_a2 + (np.interp(x @ mf.lam.T, s_nodes, m1) * mf.class_sizes) @ mf.lam)
    d2 = np.sum((x[:, None, :] - mf.branch_mode) ** 2, -1)
    assert np.max(np.min(d2, axis=1)) < 1e-3  # every sample climbed to one of the reported modes
    nearest = np.full(n, -1)
    nearest[live] = np.argmin(d2, axis=1)
    for b in range(4):
        check((nearest == b).astype(float), mf.branch_mass[b], f"mass {mf.branch_code[b]}")


def test_relu_outliers_reported():
    task = toy_task(40, y_neg=-0.5)
    cold = single_neuron_meanfield(task, nonlinearity="relu")  # T → 0, σ_a² = 1/P
    assert not cold.normalizable and "outlier" in cold.status and np.all(np.isnan(cold.U))
    hot = single_neuron_meanfield(task, nonlinearity="relu", temperature=3.0, check_grid=False)
    assert hot.normalizable and hot.status == "ok" and hot.residual < 1e-9
    targets = np.array([task.Y[task.labels == c][0] for c in range(3)])
    np.testing.assert_allclose(hot.F + 3.0 * hot.lam, targets, atol=1e-9)  # F = Y − TΛ


def test_binary_sigmoid_and_dataset(tmp_path):
    mf = single_neuron_meanfield_classes([[1.0], [-1.0]], [20, 20], nonlinearity="sigmoid", sigma_a2=1 / 40,
                                         temperature=0.05)
    assert mf.status == "ok" and mf.residual < 1e-9
    dx = mf.grid[1] - mf.grid[0]
    assert mf.density.sum() * dx == pytest.approx(1.0, abs=1e-12)
    assert mf.branch_mass.sum() + mf.unassigned_mass == pytest.approx(1.0, abs=1e-9)
    ds = mf.to_dataset()
    assert ds["density"].dims == ("a0",) and ds["lam"].dims == ("data_class", "class")
    ds.to_netcdf(tmp_path / "mf.nc", engine="h5netcdf")
    with pytest.raises(ValueError, match="orthogonal"):
        single_neuron_meanfield(np.random.default_rng(0).standard_normal((6, 8)), np.ones((6, 1)))
