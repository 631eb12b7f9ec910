"""bnnzoo.diagnostics.units: unit layers (trajectories, clusters) on known arrays (no NUTS sampling)."""

from __future__ import annotations

import numpy as np
import pytest


def test_unit_layers_on_known_arrays():
    """Two frozen groups of units (offsets ±2, noise sd 0.3): two clusters of mass ½, ergodicity broken (the time
    variance 0.09 against the pooled 4.09 gives r ≈ 0.02), symmetry broken, codes frozen with half the units on;
    a gated-off point (identically 0) is dropped from the features."""
    import xarray as xr

    from bnnzoo.diagnostics import ergodicity, symmetry_of, unit_clusters, unit_trajectories
    from bnnzoo.diagnostics.codes import codes_from_preactivations
    from bnnzoo.models.zoo import UnitLayer

    rng = np.random.default_rng(0)
    C, D, U, P = 2, 40, 10, 12     # 11 points on: the selectivity cut 3·√(q/P) ≈ 1.7 < 2
    off = np.where(np.arange(U) < U // 2, 2.0, -2.0)
    h = off[None, None, :, None] + 0.3 * rng.standard_normal((C, D, U, P))
    h[..., -1] = 0.0
    post = xr.Dataset({"h": (("chain", "draw", "unit", "point"), h)})
    t = unit_trajectories(post, UnitLayer("h", "h", "unit"))
    assert t.features.shape == (C, D, U, P - 1) and t.values.shape == (C, D, U, P)
    r = ergodicity(t.features, variable="h")
    assert r.verdict == "broken" and r.ratio == pytest.approx(0.09 / 4.09, abs=0.01)
    assert symmetry_of(t.features, "h").verdict == "broken"
    cl = unit_clusters(t.features, "h")
    assert cl.n_clusters == 2 and np.allclose(cl.masses, 0.5)
    cr = codes_from_preactivations(t.values, np.zeros(P, int), 1)
    assert cr.verdict == "frozen" and cr.scheme == {"1": C * U // 2, "0": C * U // 2}
    with pytest.raises(ValueError, match="no site 'z'"):
        unit_trajectories(post, UnitLayer("z", "z", "unit"))
    with pytest.raises(ValueError, match="no dim 'neuron'"):
        unit_trajectories(post, UnitLayer("h", "h", "neuron"))
