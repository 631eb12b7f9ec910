"""bnnzoo.diagnostics.ergodicity on synthetic arrays with known answers (no NUTS sampling)."""

from __future__ import annotations

import importlib
import numpy as np
from scipy import stats

from bnnzoo.diagnostics import ergodicity, rhat_neurons
from tests._helpers import rng


def test_rhat_neurons():
    assert abs(rhat_neurons(rng().standard_normal((400, 50))) - 1) < 0.02
    frozen = rng().standard_normal((400, 50)) + 3 * rng(1).standard_normal(50)
    assert rhat_neurons(frozen) > 1.5


def test_ergodicity_ergodic_and_broken():
    r = rng()
    iid = r.standard_normal((2, 300, 80, 3))
    e = ergodicity(iid, "x")
    assert e.verdict == "ergodic" and e.ratio > 0.95 and e.rhat < 1.05
    offsets = 3 * r.standard_normal((2, 1, 80, 3))
    b = ergodicity(iid + offsets, "x")
    assert b.verdict == "broken" and b.confidence == "clear"
    assert abs(b.ratio - 1 / (1 + 9)) < 0.04
    assert b.ks_distance > 2 * b.ks_split
    # variance ratio is the share of the marginal a neuron covers: offsets of variance 1 give 1/2
    half = ergodicity(iid + r.standard_normal((2, 1, 80, 3)), "x")
    assert abs(half.ratio - 0.5) < 0.1 and half.confidence == "marginal"
    assert half.ratio_per_neuron.shape == (2, 80) and half.ratio_per_feature.shape == (3,)


def test_ks_2samp_rows_is_scipys_statistic_ties_included():
    """The per-neuron split KS statistic is computed for all neurons at once; it equals scipy.stats.ks_2samp's
    statistic row by row (float64 rounding), also when values tie within and across the two halves."""
    from scipy import stats

    from bnnzoo.diagnostics.ergodicity import ks_2samp_rows

    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(40, 30)), rng.normal(0.4, 1.0, size=(40, 33))
    for x, y in ((a, b), (np.round(a, 1), np.round(b, 1))):
        want = np.array([stats.ks_2samp(x[i], y[i]).statistic for i in range(len(x))])
        np.testing.assert_allclose(ks_2samp_rows(x, y), want, rtol=0, atol=1e-12)


def test_ks_2samp_rows_equals_the_stable_sort_bit_for_bit():
    """Rows without ties take the faster unstable sort (their order is unique), rows with ties or NaNs the stable
    one: the statistic is bit for bit that of a stable sort of every row (the running sum's rounding kept)."""
    from bnnzoo.diagnostics.ergodicity import ks_2samp_rows

    def stable(a, b):
        n, m = a.shape[1], b.shape[1]
        allv = np.concatenate([a, b], axis=1)
        order = np.argsort(allv, axis=1, kind="stable")
        vals = np.take_along_axis(allv, order, axis=1)
        diff = np.cumsum(np.where(order < n, 1.0 / n, -1.0 / m), axis=1)
        last = np.ones_like(vals, bool)
        last[:, :-1] = vals[:, 1:] != vals[:, :-1]
        return np.max(np.where(last, np.abs(diff), 0.0), axis=1)

    g = rng()
    for trial in range(12):
        a, b = g.normal(size=(50, 7 + trial)), g.normal(0.3, 1.0, size=(50, 11))
        if trial % 3 == 1:                       # ties in some rows, within and across the halves
            a[::2], b[::2] = np.round(a[::2], 1), np.round(b[::2], 1)
        if trial % 3 == 2:
            a[3, :2] = np.nan
        np.testing.assert_array_equal(ks_2samp_rows(a, b), stable(a, b))


def test_ergodicity_numbers_from_one_sort_per_chain_and_feature():
    """The R̂ and KS distances come from one sort of each (chain, feature) trajectory set: exactly the numbers of
    rhat_neurons and of the KS distance to the sorted pool, with ties, with an odd number of draws, and with
    the two halves too short for an R̂, and for values float32 holds exactly (whose ranks are sorted in float32)."""
    erg = importlib.import_module("bnnzoo.diagnostics.ergodicity")
    g = rng()
    for D, N, ties, f32 in [(40, 12, False, False), (40, 12, True, False), (41, 9, True, False), (4, 7, False, False),
                            (5, 3, True, False), (40, 12, False, True), (40, 12, True, True)]:
        x = g.standard_normal((3, D, N, 2)).cumsum(1) * 0.3 + g.standard_normal((3, 1, N, 2))
        x = np.round(x, 1) if ties else x
        x = x.astype(np.float32).astype(float) if f32 else x
        r = erg.ergodicity(x, n_boot=5)
        h = D // 2
        split = np.concatenate([erg.ks_2samp_rows(x[c, :h, :, k].T, x[c, D - h:, :, k].T)
                                for c in range(3) for k in range(2)])
        assert r.ks_split == float(np.median(split))
        rh, ks = [], []
        for c in range(3):
            for k in range(2):
                xs = x[c, :, :, k]
                rh.append(rhat_neurons(xs))
                v, pool = np.sort(xs, axis=0), np.sort(xs.ravel())
                Fr, Fl = np.searchsorted(pool, v, "right") / pool.size, np.searchsorted(pool, v, "left") / pool.size
                j = (np.arange(1, D + 1) / D)[:, None]
                ks.append(np.maximum(np.max(np.abs(j - Fr), 0), np.max(np.abs(j - 1.0 / D - Fl), 0)))
        rh = np.array(rh).reshape(3, 2)
        assert np.array_equal(r.rhat_per_feature, np.nanmedian(rh, axis=0), equal_nan=True)
        assert r.ks_distance == float(np.median(np.concatenate(ks)))


def test_pool_ranks_and_variance_ratio():
    """The pool ranks (any sort) are the lowest and highest rank of each entry, ties included; variance_ratio is
    ergodicity's ratio, the same number (the bulk's ratio in the report is computed by it)."""
    erg = importlib.import_module("bnnzoo.diagnostics.ergodicity")
    g = rng(3)
    x = np.round(g.standard_normal((30, 8)), 1)
    lo, hi = erg._pool_ranks(x)
    assert np.array_equal(lo, stats.rankdata(x, method="min").reshape(x.shape))
    assert np.array_equal(hi, stats.rankdata(x, method="max").reshape(x.shape))
    for shape in [(3, 40, 12, 2), (2, 9, 5)]:
        y = g.standard_normal(shape).cumsum(1) + g.standard_normal(shape[:1] + (1,) + shape[2:])
        assert erg.variance_ratio(y) == ergodicity(y, n_boot=0).ratio
