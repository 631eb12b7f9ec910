"""bnnzoo.diagnostics.branches: readout branches, their number (BIC) and outliers, on synthetic arrays with known
answers (no NUTS sampling)."""

from __future__ import annotations

import math

import numpy as np

from bnnzoo.diagnostics import find_outliers, readout_branches
from bnnzoo.diagnostics.branches import cluster_bic
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
