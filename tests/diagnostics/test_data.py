"""bnnzoo.diagnostics._data: the effective sample size on synthetic chains with known answers."""

from __future__ import annotations

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
