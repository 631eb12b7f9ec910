"""Planted (teacher–student) tasks: the teacher is a prior draw, the targets its outputs plus the likelihood's noise."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import bnnzoo
from bnnzoo.models import get_entry
from bnnzoo.models.fcn import fcn_forward
from bnnzoo.tasks import planted_init, planted_task


def test_teacher_and_targets_follow_the_model():
    """Over 200 teachers (N = 50, P = 6, T = 0.5): the teacher's weights have the prior's variances (χ² at 1e-3),
    and the targets minus the teacher's output are the likelihood's noise, variance T/N (non-lazy)."""
    entry = get_entry("sigmoidal")
    base = bnnzoo.toy_task(P=6, N0=12, P_test=4)
    N, T = 50, 0.5
    w, a, resid = [], [], []
    for seed in range(200):
        t = planted_task(entry, base, seed=seed, width=N, temperature=T)
        w.append(t.teacher["W1"].ravel())
        a.append(t.teacher["a"].ravel())
        f = np.asarray(fcn_forward(t.X, t.teacher, width=N, activation="sigmoid"))
        resid.append((t.Y - f).ravel())
        assert t.Y_test.shape == (4, 3) and t.labels.shape == (6,)
    sa2 = entry.resolve(base.X, entry.kwargs(width=N))["sigma_a2"]
    for x, var in ((np.concatenate(w), 1.0), (np.concatenate(a), sa2), (np.concatenate(resid), T / N)):
        n = x.size
        chi2 = float(np.sum(x**2) / var)
        assert stats.chi2.sf(chi2, n) > 1e-3 and stats.chi2.cdf(chi2, n) > 1e-3, (var, np.mean(x**2))


def test_planted_task_keeps_inputs_and_labels_follow_the_summaries():
    base = bnnzoo.toy_task(P=8, N0=12)
    t = planted_task(get_entry("relu"), base, seed=3, width=10)
    np.testing.assert_array_equal(t.X, base.X)
    np.testing.assert_array_equal(t.labels, np.argmax(t.Y, axis=1))
    assert t.meta["planted"] and t.meta["teacher_seed"] == 3 and t.name == "planted_toy"
    again = planted_task(get_entry("relu"), base, seed=3, width=10)
    np.testing.assert_array_equal(t.Y, again.Y)
    init = planted_init(t, 3)
    assert init["W1"].shape == (3, 10, 12) and np.all(init["a"][2] == t.teacher["a"])


def test_a_plain_numpyro_model_can_be_planted():
    from bnnzoo.models.fcn import fcn

    base = bnnzoo.tasks.binary_toy_task(P=4, N0=6)
    t = planted_task(fcn, base, seed=0, width=3, activation="relu", sigma_a2=1.0)
    assert set(t.teacher) == {"W1", "a"} and t.Y.shape == (4, 1)
    assert np.all(t.labels == 0)


def test_bad_input_is_refused():
    base = bnnzoo.toy_task(P=4, N0=6)
    with pytest.raises(ValueError, match="model must be"):
        planted_task(3, base)
    with pytest.raises(ValueError, match="no teacher"):
        planted_init(base, 2)
    with pytest.raises(ValueError, match="num_chains"):
        planted_init(planted_task(get_entry("relu"), base, width=2), 0)
