"""Single-index Hermite task (docs/theory.md §8): Gaussian inputs x ∈ ℝᵈ, target y = He₃(w*·x), He₃ normalised.

    x ~ N(0, I_d),   |w*| = 1,   z = w*·x ~ N(0, 1),   y = He₃(z) = (z³ − 3z)/√6,   E[y] = 0, E[y²] = 1.

He₃ is orthogonal (under the Gaussian measure) to every polynomial of degree < 3 in z, so a learner must resolve a
cubic feature of the hidden direction w*: a kernel on ℝᵈ needs P ∼ d³ samples, a feature-learning net P ∼ d
(Rubin, Davidovich & Ringel, arXiv 2512.04165, as summarised in docs/theory.md §8).
"""

from __future__ import annotations

import math

import numpy as np

from .base import Task

__all__ = ["hermite_task", "he3", "he1"]


def he3(z):
    """Normalised probabilists' Hermite polynomial He₃(z)/√3! = (z³ − 3z)/√6 (unit variance under N(0, 1))."""
    z = np.asarray(z, dtype=float)
    return (z**3 - 3.0 * z) / math.sqrt(6.0)


def he1(z):
    """He₁(z) = z, the linear feature (for the second-layer overlaps)."""
    return np.asarray(z, dtype=float)


def hermite_task(d: int = 16, P: int = 64, P_test: int = 1000, w_star=None, noise_std: float = 0.0,
                 seed: int = 0) -> Task:
    """Gaussian inputs with the normalised He₃ single-index target.

    Parameters
    ----------
    d : input dimension.  P : training points.  P_test : test points (the alignment A_f is measured there).
    w_star : teacher direction (normalised to ``|w*| = 1``); default a random unit vector drawn with ``seed``.
    noise_std : optional label noise on the training targets (test targets stay clean).
    seed : seed of ``np.random.default_rng`` for w*, inputs and noise.

    The teacher direction is stored in ``task.meta["w_star"]`` (a list, JSON-able) and is what
    :func:`bnnzoo.diagnostics.alignment.first_layer_overlaps` reads.  ``labels`` are all 0 (regression).
    """
    if int(d) != d or d < 1:
        raise ValueError(f"d must be a positive integer, got {d!r}")
    if int(P) != P or P < 1:
        raise ValueError(f"P must be a positive integer, got {P!r}")
    if int(P_test) != P_test or P_test < 0:
        raise ValueError(f"P_test must be an integer >= 0, got {P_test!r}")
    if not (np.isfinite(noise_std) and noise_std >= 0):
        raise ValueError(f"noise_std must be >= 0, got {noise_std!r}")
    rng = np.random.default_rng(seed)
    if w_star is None:
        w = rng.standard_normal(int(d))
    else:
        w = np.asarray(w_star, dtype=float).ravel()
        if w.shape != (d,):
            raise ValueError(f"w_star must have {d} entries, got shape {np.shape(w_star)}")
    norm = np.linalg.norm(w)
    if not norm > 0:
        raise ValueError("w_star must be non-zero")
    w = w / norm
    X = rng.standard_normal((int(P), int(d)))
    Y = he3(X @ w)[:, None]
    if noise_std:
        Y = Y + noise_std * rng.standard_normal(Y.shape)
    kw = {}
    if P_test:
        Xt = rng.standard_normal((int(P_test), int(d)))
        kw = dict(X_test=Xt, Y_test=he3(Xt @ w)[:, None], labels_test=np.zeros(int(P_test), dtype=int))
    meta = dict(task="hermite3", d=int(d), P=int(P), P_test=int(P_test), noise_std=float(noise_std), seed=int(seed),
                w_star=[float(v) for v in w], target="He3(w*.x) = (z^3 - 3z)/sqrt(6)")
    return Task(X=X, Y=Y, labels=np.zeros(int(P), dtype=int), name="hermite3", meta=meta, **kw)
