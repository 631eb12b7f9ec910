"""bnnzoo.diagnostics.symmetry on synthetic arrays with known answers (no NUTS sampling)."""

from __future__ import annotations

from bnnzoo.diagnostics import identity_correlation
from tests._helpers import rng


def test_identity_correlation():
    r = rng()
    iid = r.standard_normal((2, 200, 100, 3))
    _, rho0, se0 = identity_correlation(iid)
    assert abs(rho0) < 0.1 and se0 < 0.1
    _, rho1, _ = identity_correlation(iid + 3 * r.standard_normal((2, 1, 100, 3)))
    assert rho1 > 0.9
