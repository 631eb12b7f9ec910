"""The task record every model and diagnostic accepts.

Convention used everywhere in bnnzoo: inputs are rows, ``X`` has shape ``(P, N0)`` (P training points of dimension
N0) and targets ``Y`` have shape ``(P, m)`` (m outputs / classes).  The input kernel of the paper, K0 = XᵀX/N0 with
the paper's column convention, is ``X @ X.T / N0`` here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Task", "check_array"]


def check_array(name: str, value: Any, ndim: int) -> np.ndarray:
    """Return ``value`` as a float64 array after checking its rank and that it is finite (clear ValueError if not)."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


@dataclass(frozen=True)
class Task:
    """A supervised data set: training inputs and targets, optional test set, labels and metadata.

    Attributes
    ----------
    X : (P, N0) training inputs, one row per point.
    Y : (P, m) training targets (one-hot with y+ / y− for classification tasks, ±1 for the binary task).
    labels : (P,) integer class of each training point.
    X_test, Y_test, labels_test : the same for the test set, or None.
    name : short identifier ("toy", "digits", ...).
    meta : the parameters the task was built with (stored in InferenceData attributes for provenance).
    """

    X: np.ndarray
    Y: np.ndarray
    labels: np.ndarray
    X_test: np.ndarray | None = None
    Y_test: np.ndarray | None = None
    labels_test: np.ndarray | None = None
    name: str = "task"
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        X = check_array("X", self.X, 2)
        Y = check_array("Y", self.Y, 2)
        if Y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} points but Y has {Y.shape[0]} rows")
        labels = np.asarray(self.labels)
        if labels.shape != (X.shape[0],):
            raise ValueError(f"labels must have shape ({X.shape[0]},), got {labels.shape}")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "Y", Y)
        object.__setattr__(self, "labels", labels.astype(int))
        if (self.X_test is None) != (self.Y_test is None):
            raise ValueError("give both X_test and Y_test, or neither")
        if self.X_test is not None:
            Xt = check_array("X_test", self.X_test, 2)
            Yt = check_array("Y_test", self.Y_test, 2)
            if Xt.shape[1] != X.shape[1]:
                raise ValueError(f"X_test has input dimension {Xt.shape[1]}, X has {X.shape[1]}")
            if Yt.shape != (Xt.shape[0], Y.shape[1]):
                raise ValueError(f"Y_test must have shape {(Xt.shape[0], Y.shape[1])}, got {Yt.shape}")
            object.__setattr__(self, "X_test", Xt)
            object.__setattr__(self, "Y_test", Yt)
            if self.labels_test is not None:
                object.__setattr__(self, "labels_test", np.asarray(self.labels_test).astype(int))

    @property
    def P(self) -> int:
        """Number of training points."""
        return self.X.shape[0]

    @property
    def N0(self) -> int:
        """Input dimension."""
        return self.X.shape[1]

    @property
    def m(self) -> int:
        """Number of outputs (classes)."""
        return self.Y.shape[1]

    @property
    def K0(self) -> np.ndarray:
        """Input kernel X Xᵀ / N0 on the training points, (P, P)."""
        return self.X @ self.X.T / self.N0

    def __repr__(self) -> str:
        test = f", P_test={self.X_test.shape[0]}" if self.X_test is not None else ""
        return f"Task({self.name!r}, P={self.P}, N0={self.N0}, m={self.m}{test})"
