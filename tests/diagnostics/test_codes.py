"""bnnzoo.diagnostics.codes: code ids, coding schemes, frozen and switching codes, on synthetic arrays with known
answers (no NUTS sampling)."""

from __future__ import annotations

import numpy as np
import pytest

from bnnzoo.diagnostics import RunData, code_string, neural_codes
from bnnzoo.diagnostics.codes import code_ids, code_memory
from tests._helpers import rng


def _toy_rundata(z, activation="sigmoid", m=3):
    C, D, N, P = z.shape
    labels = np.repeat(np.arange(m), P // m)
    Y = np.full((P, m), 0.5)
    Y[np.arange(P), labels] = 1.0
    return RunData(a=np.zeros((C, D, N, m)), X=np.eye(P), Y=Y, labels=labels, activation=activation, depth=1,
                   recorded_z={1: z})


def test_code_ids_and_strings():
    assert code_string(6, 3) == "011" and code_string(1, 3) == "100"
    assert code_ids(np.array([[-1.0, 2.0, 0.5]]))[0] == 6


def test_frozen_codes_give_the_scheme():
    r = rng()
    C, D, N, P, m = 1, 60, 40, 60, 3
    scheme = ["011"] * 12 + ["101"] * 12 + ["110"] * 12 + ["111"] * 4
    bits = np.array([[int(ch) for ch in s] for s in scheme])  # (N, m)
    labels = np.repeat(np.arange(m), P // m)
    mean = 1.5 * (2 * bits - 1)[:, labels]  # (N, P)
    z = mean[None, None] + 0.3 * r.standard_normal((C, D, N, P))
    cr = neural_codes(_toy_rundata(z))
    assert cr.scheme == {"011": 12, "101": 12, "110": 12, "111": 4}
    assert cr.verdict == "frozen" and cr.code_memory == pytest.approx(1.0) and cr.switching_rate == 0
    assert cr.n_selective == N and cr.scheme_stable and cr.scheme_drift < 1e-12
    assert cr.codes(min_fraction=0.2) == ["011", "101", "110"]


def test_switching_codes_with_a_stable_scheme():
    r = rng(1)
    C, D, N, P, m = 1, 200, 200, 60, 3
    labels = np.repeat(np.arange(m), P // m)
    choices = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0], [1, 0, 0]])
    pick = r.integers(0, 4, size=(D, N))  # every neuron redraws its code at every draw
    mean = 1.5 * (2 * choices[pick] - 1)[..., labels]  # (D, N, P)
    z = mean[None] + 0.3 * r.standard_normal((C, D, N, P))
    cr = neural_codes(_toy_rundata(z))
    assert cr.verdict == "switching" and abs(cr.code_memory) < 0.05 and cr.switching_rate > 0.6
    assert cr.scheme_stable and cr.scheme_drift < 0.08
    assert code_memory(cr.ids, 8) == pytest.approx(cr.code_memory)


def test_task_agnostic_neurons_are_not_selective():
    r = rng(2)
    z = r.standard_normal((1, 50, 30, 60))  # pure noise: class means O(1/√P_c)
    z[0, :, 0, :20] += 8.0  # one strongly coded neuron: on for class 0, off for the others
    z[0, :, 0, 20:] -= 8.0
    cr = neural_codes(_toy_rundata(z, activation="relu"))
    assert cr.n_selective == 1 and cr.scheme == {"100": 1} and cr.verdict == "frozen"
