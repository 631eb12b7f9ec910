"""bnnzoo.diagnostics.codes: code ids, coding schemes, frozen and switching codes, on synthetic arrays with known
answers (no NUTS sampling)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bnnzoo.diagnostics import RunData, code_string, neural_codes
from bnnzoo.diagnostics._data import class_means
from bnnzoo.diagnostics.codes import _sum_classes, code_ids, code_memory, code_strings, selectivity
from bnnzoo.tasks import toy_task
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


def test_class_loops_give_the_numbers_of_the_broadcast_forms():
    """code_ids, the selectivity's between-class sum and the code strength loop over the classes (a broadcast over
    the short class axis is slow): bit for bit the numbers of the broadcast forms, rounding included."""
    g = rng()
    zb = g.normal(size=(3, 40, 25, 3))
    zb[0, 0, 0] = [1.0, 1.2e-16, 1.2e-16]      # (x0 + x1) + x2 differs from x0 + (x1 + x2) here
    counts = np.array([7.0, 0.0, 5.0])
    np.testing.assert_array_equal(code_ids(zb), ((zb > 0) * (1 << np.arange(3))).sum(-1))
    for w in (np.ones(3), counts):
        present = w > 0
        want = np.sum(w[present] * zb[..., present] ** 2, axis=-1)
        got = _sum_classes((w[c] * zb[..., c] ** 2 for c in np.flatnonzero(present)), zb.shape[:-1])
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.sqrt(_sum_classes((zb[..., c] * zb[..., c] for c in range(3)), zb.shape[:-1])),
                                  np.linalg.norm(zb, axis=-1))
    np.testing.assert_array_equal(_sum_classes((), (2, 3)), np.zeros((2, 3)))
    ids = g.integers(0, 8, size=(4, 9))
    np.testing.assert_array_equal(code_strings(ids, 3), np.vectorize(lambda k: code_string(k, 3))(ids))


def test_selectivity_statistic_follows_its_null():
    """A task-agnostic unit (P i.i.d. N(0, q) preactivations) has F ~ F(m, P − m) at every draw, whatever q: over
    20 000 such units the fraction above the F(3, 27) 90 % quantile is 0.1 within 4 binomial standard errors
    (0.0085), and the cut is the closed-form F(3, 27) quantile at 1 − 0.05/(2 n)."""
    r = rng(3)
    P, m, n = 30, 3, 20000
    labels = np.repeat(np.arange(m), [15, 7, 8])
    z = 5.0 * r.standard_normal((1, 1, n, P))            # scale q = 25: F does not depend on it
    cm = class_means(z, labels, m)
    f, thr = selectivity(cm, np.mean(z**2, -1), np.bincount(labels))
    assert f.shape == (1, n)
    assert abs(np.mean(f > stats.f.isf(0.1, m, P - m)) - 0.1) < 4 * np.sqrt(0.09 / n)
    assert thr == pytest.approx(stats.f.isf(0.05 / (2 * n), m, P - m), rel=1e-12)
    np.testing.assert_allclose(selectivity(cm / 5, np.mean((z / 5) ** 2, -1), np.bincount(labels))[0], f, rtol=1e-9)


def test_codes_at_small_P_have_their_selective_units():
    """N = P = 30 on the toy task's classes (15 / 7 / 8 points): units with class means ±1.2 and a within-class
    scatter of 1 (the sigmoidal net's picture at this size) are all selective — a cut at 3·√(q/P_min) = 1.77 with
    q = 1.2² + 1 passed 0–3 of 120 — while 120 task-agnostic units of the same scale are not (family-wise error
    ≤ 5 %)."""
    r = rng(4)
    C, D, N, m = 4, 40, 30, 3
    task = toy_task(P=30)
    labels, P = task.labels, task.P
    codes = ["011", "101", "110", "111"]
    bits = np.array([[int(ch) for ch in codes[i % 4]] for i in range(N)])       # (N, m)
    mean = 1.2 * (2 * bits - 1)[:, labels]                                      # (N, P)
    z = mean[None, None] + r.standard_normal((C, D, N, P))
    rd = RunData(a=np.zeros((C, D, N, m)), X=task.X, Y=task.Y, labels=labels, activation="sigmoid", depth=1,
                 recorded_z={1: z})
    cr = neural_codes(rd)
    assert cr.n_selective == C * N, (cr.n_selective, cr.selectivity_threshold)
    assert cr.scheme == {"011": 32, "101": 32, "110": 28, "111": 28}
    noise = np.sqrt(1 + 1.2**2) * r.standard_normal((C, D, N, P))
    rd0 = RunData(a=np.zeros((C, D, N, m)), X=task.X, Y=task.Y, labels=labels, activation="sigmoid", depth=1,
                  recorded_z={1: noise})
    c0 = neural_codes(rd0)
    assert c0.n_selective == 0 and c0.verdict == "no selective units"
