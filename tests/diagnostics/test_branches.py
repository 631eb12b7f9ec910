"""bnnzoo.diagnostics.branches: readout branches, their number (BIC) and outliers, on synthetic arrays with known
answers (no NUTS sampling)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bnnzoo.diagnostics import find_outliers, readout_branches
from bnnzoo.diagnostics.branches import cluster_bic, mixture_modes
from tests._helpers import rng


def _three_branches(n=400, seed=0):
    r = rng(seed)
    centres = np.array([[1.6, -0.3, 1.5], [-0.3, 1.5, 1.5], [1.0, 1.2, 1.2]])
    masses = np.array([0.5, 0.3, 0.2])
    lab = r.choice(3, size=n, p=masses)
    abar = centres[lab] + 0.05 * r.standard_normal((n, 3))
    a = abar[None, None] + 0.2 * r.standard_normal((1, 30, n, 3))  # (chain, draw, neuron, class)
    return a, lab, centres, masses


def test_cluster_bic_picks_the_number_of_branches():
    a, lab, centres, masses = _three_branches()
    k, labels, bic, ks, sil = cluster_bic(a.mean(1)[0])
    assert k == 3 and sil > 0.7
    k1, *_ = cluster_bic(rng().standard_normal((300, 3)))
    assert k1 == 1


def test_readout_branches_masses_and_centres():
    a, lab, centres, masses = _three_branches()
    b = readout_branches(a)
    assert b.n_branches == 3
    order = [int(np.argmin(np.linalg.norm(b.centres - c, axis=1))) for c in centres]
    assert sorted(order) == [0, 1, 2]
    np.testing.assert_allclose(b.masses[order], masses, atol=0.06)
    np.testing.assert_allclose(b.centres[order], centres, atol=0.05)
    assert np.all(b.mass_se < 0.03)
    assert b.outliers.n_outliers == 0


def test_find_outliers_counts_and_classes():
    r = rng()
    C, D, N, m, P = 2, 40, 100, 3, 30
    a = 0.1 * r.standard_normal((C, D, N, m))
    z = r.standard_normal((C, D, N, P))
    for c in range(C):
        for k in range(m):  # one O(√N) outlier per class
            a[c, :, 10 * k + c, :] = -0.5
            a[c, :, 10 * k + c, k] = 0.1 * math.sqrt(N) * 3
            z[c, :, 10 * k + c, :] *= math.sqrt(N)
    o = find_outliers(a, z)
    assert o.n_outliers == 6 and o.per_chain == (3, 3) and o.one_per_class
    assert sorted(o.classes) == [0, 0, 1, 1, 2, 2]
    # the bulk alone has none
    assert find_outliers(0.1 * r.standard_normal((1, 40, 100, 3))).n_outliers == 0


@pytest.mark.parametrize("gap, n_modes", [(1.8, 1), (2.2, 2)])
def test_mixture_modes_of_two_gaussians(gap, n_modes):
    """Two equal-weight Gaussians of unit variance are bimodal exactly when their means are more than 2 apart: at a
    gap of 1.8 one mode at the midpoint, at 2.2 two, each within 0.3 of its own mean (closed form: the modes solve
    x = μ₂ − gap/(1 + e^{gap·(x − μ̄)}), here ±0.75 from the midpoint)."""
    means = np.array([[0.0, 0.0], [gap, 0.0]])
    modes, basin = mixture_modes(np.array([0.5, 0.5]), means, np.stack([np.eye(2)] * 2))
    assert len(modes) == n_modes and len(set(basin.tolist())) == n_modes
    if n_modes == 1:
        np.testing.assert_allclose(modes[0], [gap / 2, 0.0], atol=1e-6)
    else:
        np.testing.assert_allclose(np.sort(np.abs(modes[:, 0] - gap / 2)), [0.75, 0.75], atol=0.05)


def test_branches_are_modes_not_mixture_components():
    """Three branches (readouts jittering around three centres, skewed along one axis) and 15 % of the units
    hopping between branches 0 and 1 halfway through the run: the units' time averages fill the segment between
    those branches, and a BIC mixture of them has more than three components; the readout density has three modes,
    within 0.15 of the centres shifted by the skew's mean (0.3 along axis 2), and every frozen unit is on its own."""
    r = rng(5)
    C, D, N, m = 2, 60, 200, 3
    centres = np.array([[1.6, -0.3, 1.5], [-0.3, 1.5, 1.5], [1.6, 1.5, -0.3]])
    lab = r.choice(3, size=(C, N), p=[0.4, 0.35, 0.25])
    hop = r.random((C, N)) < 0.15
    lab[hop] = 0
    branch = np.broadcast_to(lab[:, None, :], (C, D, N)).copy()
    branch[:, D // 2:][np.broadcast_to(hop[:, None, :], (C, D - D // 2, N))] = 1   # 0 → 1 at half the run
    skew = np.zeros(m)
    skew[2] = 0.3
    a = centres[branch] + 0.12 * r.standard_normal((C, D, N, m)) + skew * r.exponential(1.0, (C, D, N, 1))
    k_old, *_ = cluster_bic(a.mean(1).reshape(-1, m))
    assert k_old > 3                               # the time averages of the hopping units form their own cluster
    b = readout_branches(a)
    assert b.n_branches == 3 and b.n_components >= 3
    order = [int(np.argmin(np.linalg.norm(b.modes - c - skew, axis=1))) for c in centres]
    assert sorted(order) == [0, 1, 2]
    np.testing.assert_allclose(b.modes[order], centres + skew, atol=0.15)
    frozen = ~hop.reshape(-1)
    got = np.asarray(b.labels).reshape(-1)[frozen]
    assert np.all(np.array(order)[lab.reshape(-1)[frozen]] == got)
