"""The task record every model and diagnostic accepts.

Convention used everywhere in bnnzoo: inputs are rows, ``X`` has shape ``(P, N0)`` (P training points of dimension
N0) and targets ``Y`` have shape ``(P, m)`` (m outputs / classes).  The input kernel of the paper, K0 = XᵀX/N0 with
the paper's column convention, is ``X @ X.T / N0`` here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Task", "check_array", "check_labels", "MAX_MAGNITUDE"]

MAX_MAGNITUDE = 1e15
"""Largest magnitude of an input or target value: the models compute in float32 by default, where squares of
larger values, summed over the points, overflow."""


def check_array(name: str, value: Any, ndim: int) -> np.ndarray:
    """Return ``value`` as a float64 array after checking that it is real and numeric, its rank, that it is finite
    and that its magnitudes fit float32 arithmetic (JAX's default: squares of values beyond 1e15, summed over the
    points, overflow); a clear ValueError naming ``name`` if not."""
    if np.iscomplexobj(value):
        raise ValueError(f"{name} must be real; it is complex (its imaginary part would be dropped)")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a numeric array, got {type(value).__name__} of "
                         f"{np.asarray(value).dtype}") from None
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    big = float(np.max(np.abs(arr)))
    if big > MAX_MAGNITUDE:
        raise ValueError(f"{name} holds values up to {big:.3g} in magnitude; they must stay below "
                         f"{MAX_MAGNITUDE:.0e} (float32 arithmetic overflows): rescale the data")
    return arr


def _one_hot_labels(Y: np.ndarray) -> np.ndarray | None:
    """argmax of one-hot targets (m >= 2 columns, exactly two distinct values y+ > y−, one y+ per row), else None."""
    if Y.shape[1] < 2:
        return None
    values = np.unique(Y)
    if values.size != 2:
        return None
    if not np.all(np.sum(Y == values[1], axis=1) == 1):
        return None
    return np.argmax(Y, axis=1)


def check_labels(name: str, labels, n: int, m: int) -> np.ndarray:
    """Return ``labels`` as an int array after checking it: shape (n,), integers in 0..max(m, 2) − 1.

    One output (m = 1) codes two groups by its sign, so labels 0 and 1 are allowed there.

    Raises
    ------
    ValueError
        Wrong shape, a non-integer dtype (floats, booleans, strings) or a label out of range.
    """
    arr = np.asarray(labels)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) (one label per point), got {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be integers in 0..{max(m, 2) - 1}, got dtype {arr.dtype}")
    top = max(m, 2) - 1
    if n and (arr.min() < 0 or arr.max() > top):
        bad = arr[(arr < 0) | (arr > top)][0]
        raise ValueError(f"{name} must be integers in 0..{top} (m = {m} outputs), got {bad}")
    return arr.astype(int)


@dataclass(frozen=True)
class Task:
    """A supervised data set: training inputs and targets, optional test set, labels and metadata.

    Attributes
    ----------
    X : (P, N0) training inputs, one row per point.
    Y : (P, m) training targets (one-hot with y+ / y− for classification tasks, ±1 for the binary task).
    labels : (P,) integer group (class) of each training point, in 0..max(m, 2) − 1.  Optional: left out, it is
        the argmax of one-hot targets (m >= 2 columns holding two values y+ > y−, one y+ per row), otherwise 0 for
        every point (one group, e.g. a regression task).
    X_test, Y_test, labels_test : the same for the test set, or None (``labels_test`` defaults as ``labels``).
    name : short identifier ("toy", "digits", ...).
    meta : the parameters the task was built with (stored in InferenceData attributes for provenance).
    teacher : {site: array} the latent sites of the network that generated ``Y`` on a planted task
        (:func:`bnnzoo.tasks.planted_task`: an exact posterior draw), or None.

    Raises
    ------
    ValueError
        Arrays of the wrong rank, empty, NaN/inf, mismatched lengths; labels that are not integers in range.
    """

    X: np.ndarray
    Y: np.ndarray
    labels: np.ndarray | None = None
    X_test: np.ndarray | None = None
    Y_test: np.ndarray | None = None
    labels_test: np.ndarray | None = None
    name: str = "task"
    meta: dict = field(default_factory=dict)
    teacher: dict | None = None

    def __post_init__(self):
        X = check_array("X", self.X, 2)
        Y = check_array("Y", self.Y, 2)
        if Y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} points but Y has {Y.shape[0]} rows")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "Y", Y)
        object.__setattr__(self, "labels", self._labels("labels", self.labels, Y))
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
            object.__setattr__(self, "labels_test", self._labels("labels_test", self.labels_test, Yt))
        elif self.labels_test is not None:
            raise ValueError("labels_test given without a test set (X_test, Y_test)")

    @staticmethod
    def _labels(name, labels, Y):
        if labels is None:
            oh = _one_hot_labels(Y)
            return oh if oh is not None else np.zeros(Y.shape[0], dtype=int)
        return check_labels(name, labels, Y.shape[0], Y.shape[1])

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
