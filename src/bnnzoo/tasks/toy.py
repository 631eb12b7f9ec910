"""The paper's toy task (van Meegen & Sompolinsky 2025, Methods): mutually orthogonal inputs, classes in blocks."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .base import Task

__all__ = ["toy_task", "binary_toy_task", "class_sizes"]


def class_sizes(P: int, ratios: Sequence[float]) -> list[int]:
    """Split P points into classes with the given ratios (largest-remainder rounding; sizes sum to P)."""
    r = np.asarray(ratios, dtype=float)
    if r.ndim != 1 or r.size < 1 or np.any(r <= 0):
        raise ValueError(f"ratios must be a non-empty list of positive numbers, got {list(ratios)}")
    r = r / r.sum()
    raw = r * P
    sizes = np.floor(raw).astype(int)
    for i in np.argsort(-(raw - sizes))[: P - sizes.sum()]:
        sizes[i] += 1
    if np.any(sizes == 0):
        raise ValueError(f"P={P} is too small for class ratios {list(ratios)}: a class would be empty")
    return sizes.tolist()


def _orthogonal_inputs(P: int, N0: int, rng: np.random.Generator) -> np.ndarray:
    if P > N0:
        raise ValueError(f"orthogonal inputs need P <= N0, got P={P}, N0={N0}")
    # Random orthonormal frame (Haar) scaled so that x_mu . x_nu / N0 = delta_mu_nu.
    A = rng.standard_normal((N0, P))
    Q, R = np.linalg.qr(A)
    Q = Q * np.sign(np.diag(R))
    return np.sqrt(N0) * Q.T  # (P, N0)


def toy_task(
    P: int = 100,
    N0: int | None = None,
    ratios: Sequence[float] = (0.5, 0.25, 0.25),
    y_pos: float = 1.0,
    y_neg: float = 0.5,
    P_test: int = 0,
    seed: int = 0,
) -> Task:
    """The paper's toy task: P orthogonal inputs (xᵀx/N0 = 1), classes in contiguous blocks, one-hot y+ / y− targets.

    Parameters
    ----------
    P : number of training points.
    N0 : input dimension (default P + 20, as in the paper's figures); must be >= P (+ P_test).
    ratios : class fractions; the default [1/2, 1/4, 1/4] puts the first half in class 0.
    y_pos, y_neg : target on the true class and on the others (paper: sigmoid 1 / 1/2, ReLU 1 / −1/2, linear 1 / 0).
    P_test : number of test points, orthogonal to the training inputs and to each other (needs N0 >= P + P_test),
        classes in the same ratios.  Orthogonal test points are the worst case for generalization; they exercise
        the predictive machinery.
    seed : random seed for the orthonormal frame.
    """
    if int(P) != P or P < 1:
        raise ValueError(f"P must be a positive integer, got {P}")
    N0 = int(P + 20) if N0 is None else int(N0)
    if P + P_test > N0:
        raise ValueError(f"orthogonal inputs need P + P_test <= N0, got P={P}, P_test={P_test}, N0={N0}")
    rng = np.random.default_rng(seed)
    X_all = _orthogonal_inputs(P + P_test, N0, rng)
    m = len(ratios)

    def targets(n):
        labels = np.repeat(np.arange(m), class_sizes(n, ratios))
        Y = np.full((n, m), float(y_neg))
        Y[np.arange(n), labels] = float(y_pos)
        return labels, Y

    labels, Y = targets(P)
    kw = {}
    if P_test:
        lt, Yt = targets(P_test)
        kw = dict(X_test=X_all[P:], Y_test=Yt, labels_test=lt)
    meta = dict(task="toy", P=P, N0=N0, ratios=list(map(float, ratios)), y_pos=y_pos, y_neg=y_neg,
                P_test=P_test, seed=seed, orthogonal=True)
    return Task(X=X_all[:P], Y=Y, labels=labels, name="toy", meta=meta, **kw)


def binary_toy_task(P: int = 100, N0: int | None = None, P_test: int = 0, seed: int = 0) -> Task:
    """The paper's Fig. 1 task: m = 1 output, targets ±1, classes p = 1/2 (first half +1)."""
    t = toy_task(P, N0, ratios=(0.5, 0.5), y_pos=1.0, y_neg=-1.0, P_test=P_test, seed=seed)
    Y = t.Y[:, :1]
    kw = {}
    if P_test:
        kw = dict(X_test=t.X_test, Y_test=t.Y_test[:, :1], labels_test=t.labels_test)
    meta = dict(t.meta, task="binary_toy", ratios=[0.5, 0.5], y_pos=1.0, y_neg=-1.0)
    return Task(X=t.X, Y=Y, labels=t.labels, name="binary_toy", meta=meta, **kw)
