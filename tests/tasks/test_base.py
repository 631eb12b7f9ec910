"""Tasks: the Task container's validation and labels."""

import numpy as np
import pytest

from bnnzoo.tasks import Task


def test_task_validation():
    with pytest.raises(ValueError, match="X"):
        Task(X=np.ones(3), Y=np.ones((3, 1)), labels=np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        Task(X=np.full((3, 2), np.nan), Y=np.ones((3, 1)), labels=np.zeros(3))
    with pytest.raises(ValueError, match="rows"):
        Task(X=np.ones((3, 2)), Y=np.ones((4, 1)), labels=np.zeros(3))


def test_task_labels_optional():
    X = np.eye(4, 6)
    # one-hot y+ / y- targets: labels are the argmax
    Y = np.full((4, 3), -0.5)
    Y[[0, 1, 2, 3], [2, 0, 1, 2]] = 1.0
    assert Task(X=X, Y=Y).labels.tolist() == [2, 0, 1, 2]
    # regression targets (or one output): one group
    t = Task(X=X, Y=np.arange(4.0)[:, None], X_test=X[:2], Y_test=np.ones((2, 1)))
    assert t.labels.tolist() == [0, 0, 0, 0] and t.labels_test.tolist() == [0, 0]
    Yr = np.random.default_rng(0).standard_normal((4, 3))  # several real-valued outputs: not one-hot
    assert Task(X=X, Y=Yr).labels.tolist() == [0, 0, 0, 0]
    assert Task(X=X, Y=Y, labels=[2, 0, 1, 2]).labels.dtype.kind == "i"


def test_task_labels_validated():
    X, Y = np.eye(4, 6), np.ones((4, 3))
    with pytest.raises(ValueError, match=r"labels must be integers in 0\.\.2, got dtype float64"):
        Task(X=X, Y=Y, labels=np.zeros(4))
    with pytest.raises(ValueError, match=r"labels must be integers in 0\.\.2 \(m = 3 outputs\), got 3"):
        Task(X=X, Y=Y, labels=[0, 1, 2, 3])
    with pytest.raises(ValueError, match="labels must be integers"):
        Task(X=X, Y=Y, labels=[0, -1, 2, 2])
    with pytest.raises(ValueError, match="labels must be integers"):
        Task(X=X, Y=Y, labels=np.array([True, False, True, False]))
    with pytest.raises(ValueError, match=r"labels must have shape \(4,\)"):
        Task(X=X, Y=Y, labels=[0, 1, 2])
    with pytest.raises(ValueError, match="labels_test must be integers"):
        Task(X=X, Y=Y, labels=[0, 1, 2, 2], X_test=X[:2], Y_test=Y[:2], labels_test=[0, 5])
    with pytest.raises(ValueError, match="labels_test given without a test set"):
        Task(X=X, Y=Y, labels_test=[0, 1])
    # one output codes two groups by its sign: labels 0 and 1 are valid there, 2 is not
    assert Task(X=X, Y=np.ones((4, 1)), labels=[0, 1, 1, 0]).labels.tolist() == [0, 1, 1, 0]
    with pytest.raises(ValueError, match=r"0\.\.1"):
        Task(X=X, Y=np.ones((4, 1)), labels=[0, 1, 2, 0])
