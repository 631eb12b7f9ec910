"""bnnzoo.diagnostics._data: the effective sample size on synthetic chains with known answers."""

from __future__ import annotations

import importlib

import numpy as np

from bnnzoo.diagnostics._data import ess
from tests._helpers import rng


def test_ess_iid_and_ar1():
    x = rng().standard_normal((2, 2000, 1))
    assert 3000 < ess(x)[0] < 5000
    rho, n = 0.8, 4000
    e = rng(1).standard_normal((2, n))
    y = np.zeros_like(e)
    for t in range(1, n):
        y[:, t] = rho * y[:, t - 1] + e[:, t]
    expected = 2 * n * (1 - rho) / (1 + rho)
    assert abs(ess(y[..., None])[0] / expected - 1) < 0.3


def test_ess_in_blocks_is_one_pass():
    """A (chain, draw, series) array of more than ESS_BLOCK chains × series is taken in blocks: the same numbers,
    bit for bit, as one pass over all series (and, to rounding, as each series alone)."""
    data = importlib.import_module("bnnzoo.diagnostics._data")
    x = rng(2).standard_normal((4, 60, 700)).cumsum(1)
    x[:, :, :5] = np.round(x[:, :, :5])                    # ties and repeated values
    assert x.shape[0] * x.shape[2] > data.ESS_BLOCK
    one = data._ess_block(np.moveaxis(x, (0, 1), (-2, -1)))
    assert np.array_equal(ess(x), one)
    np.testing.assert_allclose(ess(x)[[0, 333, 699]], [ess(x[:, :, [i]])[0] for i in (0, 333, 699)], rtol=1e-12)
    single = x[:1]                                         # one chain, as the per-neuron ESS of ergodicity
    assert np.array_equal(ess(single), data._ess_block(np.moveaxis(single, (0, 1), (-2, -1))))
