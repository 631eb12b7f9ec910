"""A cubic sequence task that needs attention (docs/theory.md §8; our documented choice).

A context is L ≥ 2 tokens x_1..x_L ∈ ℝᵈ, i.i.d. N(0, I_d), flattened into one row of ``X`` (shape (P, L·d), token ℓ
in columns ℓ·d .. ℓ·d + d − 1).  With three orthonormal teacher directions w_q, w_k, w_v, q = w_q·x_1 (the query
token), k_ℓ = w_k·x_ℓ, v_ℓ = w_v·x_ℓ and bars for averages over the L tokens, the target is

    y = q · Σ_ℓ (k_ℓ − k̄)(v_ℓ − v̄) / √(L − 1),          E[y] = 0,  E[y²] = 1

(q is independent of every k, v; Σ_ℓ (k_ℓ − k̄)(v_ℓ − v̄) is a sum of L − 1 independent products after a Helmert
rotation).  Why this target, and why it "needs attention": for softmax attention of the query token,
softmax(s) − softmax(−s) = (2/L)(s − s̄) + O(s³), so two heads with opposite scores s_ℓ = β q k_ℓ and a common value
direction w_v produce exactly (4β/L) q Σ_ℓ (k_ℓ − k̄) v_ℓ = (4β/L) q Σ_ℓ (k_ℓ − k̄)(v_ℓ − v̄) to first order in the
scores: the target is the leading, cubic, part of a two-head softmax attention with a rank-one query–key matrix —
realisable by the model of :mod:`bnnzoo.models.attention` with H ≥ 2 up to O(β²) corrections (gradient descent on
it reaches A_f ≈ 0.97–0.99 at P = 512, d = 8, L = 2 and 4).  y is a degree-3 polynomial orthogonal to every
polynomial of degree < 3, every term couples the query token with a context token through the w_k–w_v product,
and frozen (uniform) attention, i.e. a mean of token-wise linear values, has zero alignment with it.  A kernel on
ℝ^{L·d} needs P ∼ (L d)³ samples.  The reported sample complexity of a softmax attention head is P* ∝ √(L d³) (Rubin,
Davidovich & Ringel, arXiv 2512.04165 — their exact target was not available to us, docs/theory.md §8 unverified).

(A first version without the token-mean subtraction, y ∝ q Σ_ℓ k_ℓ v_ℓ, is *not* realisable by softmax attention at
small L — the −L k̄ v̄ part is missing — and gradient descent plateaus at A_f ≈ 0.43 on it at L = 2.)
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
    """y = (w_q·x_1) Σ_ℓ (k_ℓ − k̄)(v_ℓ − v̄)/√(L − 1) for tokens (P, L, d), k_ℓ = w_k·x_ℓ, v_ℓ = w_v·x_ℓ; returns (P,)."""
    tokens = np.asarray(tokens, dtype=float)
    L = tokens.shape[1]
    if L < 2:
        raise ValueError("the attention target needs a context of L >= 2 tokens")
    q = tokens[:, 0, :] @ w_q
    k = tokens @ w_k
    v = tokens @ w_v
    k = k - k.mean(axis=1, keepdims=True)
    v = v - v.mean(axis=1, keepdims=True)
    return q * np.sum(k * v, axis=1) / math.sqrt(L - 1)


def attention_task(L: int = 4, d: int = 8, P: int = 64, P_test: int = 1000, seed: int = 0) -> Task:
    """Gaussian contexts of L tokens in ℝᵈ with the cubic attention target (module docstring).

    The teacher directions are stored in ``task.meta`` (w_q, w_k, w_v as lists) together with ``context_length``
    and ``token_dim``; the attention model reads ``context_length`` from its own argument.
    """
    for name, v, lo in (("L", L, 2), ("d", d, 3), ("P", P, 1)):
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
                w_v=[float(v) for v in w_v], target="(w_q.x_1) sum_l (k_l - kbar)(v_l - vbar) / sqrt(L-1)")
    return Task(X=X, Y=Y, labels=np.zeros(int(P), dtype=int), name="attention_cubic", meta=meta, **kw)
