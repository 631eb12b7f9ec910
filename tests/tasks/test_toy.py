"""Tasks: the paper's toy task, its binary variant and the class sizes."""

import numpy as np
import pytest

from bnnzoo.tasks import binary_toy_task, class_sizes, toy_task


def test_toy_task_is_orthogonal_with_paper_classes():
    t = toy_task(P=100, N0=120, y_pos=1.0, y_neg=0.5, P_test=8, seed=3)
    assert t.X.shape == (100, 120) and t.Y.shape == (100, 3)
    K = np.concatenate([t.X, t.X_test]) @ np.concatenate([t.X, t.X_test]).T / t.N0
    np.testing.assert_allclose(K, np.eye(108), atol=1e-10)
    assert np.bincount(t.labels).tolist() == [50, 25, 25]
    assert (t.labels[:50] == 0).all() and (t.labels[50:75] == 1).all()
    assert set(np.unique(t.Y)) == {0.5, 1.0}
    np.testing.assert_array_equal(t.Y.argmax(1), t.labels)
    np.testing.assert_allclose(t.K0, np.eye(100), atol=1e-10)


def test_binary_toy_task():
    t = binary_toy_task(P=10)
    assert t.Y.shape == (10, 1)
    assert t.Y[:5, 0].tolist() == [1.0] * 5 and t.Y[5:, 0].tolist() == [-1.0] * 5


def test_class_sizes_sum_and_errors():
    assert class_sizes(7, [0.5, 0.25, 0.25]) == [3, 2, 2]  # largest remainders 0.75, 0.75 win
    assert class_sizes(100, [0.5, 0.25, 0.25]) == [50, 25, 25]
    with pytest.raises(ValueError, match="ratios"):
        class_sizes(10, [0.5, -1])
    with pytest.raises(ValueError, match="too small"):
        class_sizes(2, [0.5, 0.25, 0.25])
    with pytest.raises(ValueError, match="N0"):
        toy_task(P=50, N0=40)
