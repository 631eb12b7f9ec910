"""bnnzoo.diagnostics.ergodicity on synthetic arrays with known answers (no NUTS sampling)."""

from __future__ import annotations

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
