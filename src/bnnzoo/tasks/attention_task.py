"""A cubic sequence task that needs attention (theory.md §8; our documented choice).

A context is L tokens x_1..x_L ∈ ℝᵈ, i.i.d. N(0, I_d), flattened into one row of ``X`` (shape (P, L·d), token ℓ
in columns ℓ·d .. ℓ·d + d − 1).  With three orthonormal teacher directions w_q, w_k, w_v the target is

    y = (1/√L) Σ_{ℓ=1..L} (w_q·x_1) (w_k·x_ℓ) (w_v·x_ℓ),          E[y] = 0,  E[y²] = 1.

Why this target "needs attention": expanding softmax attention of the query token x_1 to first order in the scores,
Σ_ℓ softmax(s)_ℓ v_ℓ ≈ (1/L) Σ_ℓ v_ℓ + (1/L) Σ_ℓ (s_ℓ − s̄) v_ℓ, the second term with scores s_ℓ ∝ (w_q·x_1)(w_k·x_ℓ)
(a rank-one query–key matrix) and values v_ℓ ∝ w_v·x_ℓ is the target.  Every term is a product of a query-token
feature with a *pair* of features of the same context token, so y is orthogonal (under the input measure) to every
function that is a sum of single-token functions and to every polynomial of degree < 3: a mean-pooled token-wise
readout, or attention with frozen (uniform) weights, has zero alignment with y; a kernel on ℝ^{L·d} needs
P ∼ (L d)³ samples.  The reported sample complexity of a softmax attention head is P* ∝ √(L d³) (Rubin, Davidovich &
Ringel, arXiv 2512.04165 — exact target not available to us, theory.md §8 unverified).
"""

from __future__ import annotations

import math

import numpy as np

from .base import Task

__all__ = ["attention_task", "attention_target", "split_tokens"]


def split_tokens(X, context_length: int) -> np.ndarray:
    """(P, L·d) rows → (P, L, d) tokens."""
    X = np.asarray(X)
    P, n = X.shape
    if n % context_length:
        raise ValueError(f"X has {n} columns, not a multiple of context_length={context_length}")
    return X.reshape(P, context_length, n // context_length)


def attention_target(tokens, w_q, w_k, w_v) -> np.ndarray:
    """y = (1/√L) Σ_ℓ (w_q·x_1)(w_k·x_ℓ)(w_v·x_ℓ) for tokens (P, L, d); returns (P,)."""
    tokens = np.asarray(tokens, dtype=float)
    L = tokens.shape[1]
    q = tokens[:, 0, :] @ w_q
    return q * np.sum((tokens @ w_k) * (tokens @ w_v), axis=1) / math.sqrt(L)


def attention_task(L: int = 4, d: int = 8, P: int = 64, P_test: int = 1000, seed: int = 0) -> Task:
    """Gaussian contexts of L tokens in ℝᵈ with the cubic attention target (module docstring).

    The teacher directions are stored in ``task.meta`` (w_q, w_k, w_v as lists) together with ``context_length``
    and ``token_dim``; the attention model reads ``context_length`` from its own argument.
    """
    for name, v, lo in (("L", L, 1), ("d", d, 3), ("P", P, 1)):
        if int(v) != v or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    if int(P_test) != P_test or P_test < 0:
        raise ValueError(f"P_test must be an integer >= 0, got {P_test!r}")
    rng = np.random.default_rng(seed)
    Q, R = np.linalg.qr(rng.standard_normal((int(d), 3)))
    Q = Q * np.sign(np.diag(R))
    w_q, w_k, w_v = Q.T

    def make(n):
        tok = rng.standard_normal((int(n), int(L), int(d)))
        return tok.reshape(int(n), int(L) * int(d)), attention_target(tok, w_q, w_k, w_v)[:, None]

    X, Y = make(P)
    kw = {}
    if P_test:
        Xt, Yt = make(P_test)
        kw = dict(X_test=Xt, Y_test=Yt, labels_test=np.zeros(int(P_test), dtype=int))
    meta = dict(task="attention_cubic", context_length=int(L), token_dim=int(d), P=int(P), P_test=int(P_test),
                seed=int(seed), w_q=[float(v) for v in w_q], w_k=[float(v) for v in w_k],
                w_v=[float(v) for v in w_v], target="(1/sqrt L) sum_l (w_q.x_1)(w_k.x_l)(w_v.x_l)")
    return Task(X=X, Y=Y, labels=np.zeros(int(P), dtype=int), name="attention_cubic", meta=meta, **kw)
