"""Bayesian softmax attention head (theory.md §8; our documented choice of architecture).

A context of L tokens x_1..x_L ∈ ℝᵈ is one row of ``X`` (shape (P, L·d), token ℓ in columns ℓ·d..ℓ·d+d−1).  With H
heads of key dimension d_h and the first token as the query::

    q_h  = Q_h x_1,   k_hℓ = K_h x_ℓ,   v_hℓ = V_h x_ℓ                  Q_h, K_h, V_h ∈ ℝ^{d_h×d} ~ N(0, σ²/d)
    s_hℓ = β q_h·k_hℓ / √d_h,   α_hℓ = softmax_ℓ(s_hℓ)                  (scores; β = ``score_scale``)
    o_h  = Σ_ℓ α_hℓ v_hℓ                                               (head output, ℝ^{d_h})
    f    = c Σ_h a_hᵀ o_h                                              a_h ∈ ℝ^{d_h×m} ~ N(0, σ_a²)
    y | f ~ N(f, v)

    readout="standard":  c = 1/√(H d_h),  v = κ
    readout="meanfield": c = 1/(H d_h),   v = κ/(H d_h)   (rescaled temperature, as in the FCN core)

The σ²/d prior (the issue's choice) makes q, k, v entries O(σ) under the prior for |x|² ≈ d, so the scores are O(σ²)
at any d_h; β exposes the score temperature.  The exact equations of arXiv 2512.04165 were not available to us
(theory.md §8 is tagged unverified): a standard single-layer softmax attention with a linear readout is our choice.

Sites (every axis named by a plate):
    Q, K, V (head, key_dim, input), a (head, key_dim, class), f (point, class), y (point, class, observed), mse (),
    attn (head, point, token) only when recorded (record=("attn",)), f_test (test_point, class) with ``X_test``.
"""

from __future__ import annotations

import math
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ..tasks.attention_task import attention_task
from .zoo import Observable, UnitLayer, ZooEntry, lazy, register

__all__ = ["attention", "attention_dims", "check_attention_args", "attention_forward", "ATTENTION_READOUTS"]

ATTENTION_READOUTS = ("standard", "meanfield")


def _readout(readout, heads, key_dim, kappa):
    n = heads * key_dim
    if readout == "standard":
        return 1.0 / math.sqrt(n), float(kappa)
    return 1.0 / n, float(kappa) / n


def check_attention_args(X, Y=None, *, context_length, heads=2, key_dim=None, readout="standard", kappa=0.01,
                         sigma2=1.0, sigma_a2=1.0, score_scale=1.0, num_outputs=None, X_test=None, record=()):
    """Validate the arguments of :func:`attention` with clear ``ValueError`` messages."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must have shape (P, L*d), got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    if not isinstance(context_length, (int, np.integer)) or isinstance(context_length, bool) or context_length < 1:
        raise ValueError(f"context_length must be an integer >= 1, got {context_length!r}")
    if X.shape[1] % context_length:
        raise ValueError(f"X has {X.shape[1]} columns, not a multiple of context_length={context_length}")
    if Y is not None:
        Y = np.asarray(Y)
        if Y.ndim != 2 or Y.shape[0] != X.shape[0]:
            raise ValueError(f"Y must have shape (P, m) with P = {X.shape[0]}, got {Y.shape}")
        if not np.all(np.isfinite(Y)):
            raise ValueError("Y contains NaN or infinite values")
    elif num_outputs is None or int(num_outputs) < 1:
        raise ValueError("with Y=None (prior / predictive) give num_outputs >= 1")
    if X_test is not None:
        X_test = np.asarray(X_test)
        if X_test.ndim != 2 or X_test.shape[1] != X.shape[1]:
            raise ValueError(f"X_test must have shape (P_test, {X.shape[1]}), got {X_test.shape}")
    if not isinstance(heads, (int, np.integer)) or isinstance(heads, bool) or heads < 1:
        raise ValueError(f"heads must be an integer >= 1, got {heads!r}")
    if key_dim is not None and (not isinstance(key_dim, (int, np.integer)) or key_dim < 1):
        raise ValueError(f"key_dim must be an integer >= 1 or None (= token dimension d), got {key_dim!r}")
    if readout not in ATTENTION_READOUTS:
        raise ValueError(f"readout must be one of {ATTENTION_READOUTS}, got {readout!r}")
    for name, v in (("kappa", kappa), ("sigma2", sigma2), ("sigma_a2", sigma_a2), ("score_scale", score_scale)):
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be > 0, got {v!r}")
    for r in record:
        if r != "attn":
            raise ValueError(f"record: unknown entry {r!r}; use 'attn'")


def attention_dims(record: Sequence[str] = (), with_test: bool = False) -> dict[str, list[str]]:
    """Dims of every site of :func:`attention`."""
    w = ["head", "key_dim", "input"]
    dims = {"Q": w, "K": list(w), "V": list(w), "a": ["head", "key_dim", "class"], "f": ["point", "class"],
            "y": ["point", "class"], "mse": []}
    if "attn" in record:
        dims["attn"] = ["head", "point", "token"]
    if with_test:
        dims["f_test"] = ["test_point", "class"]
    return dims


def attention_forward(tokens, Q, K, V, a, *, readout="standard", score_scale=1.0, xp=jnp):
    """(f (n, m), attention weights (H, n, L)) for one draw; tokens (n, L, d); ``xp`` = jax.numpy or numpy."""
    H, dh, d = Q.shape
    c, _ = _readout(readout, H, dh, 1.0)
    q = xp.einsum("hkd,nd->hnk", Q, tokens[:, 0, :])  # (H, n, dh)
    k = xp.einsum("hkd,nld->hnlk", K, tokens)  # (H, n, L, dh)
    v = xp.einsum("hkd,nld->hnlk", V, tokens)
    s = score_scale * xp.einsum("hnk,hnlk->hnl", q, k) / math.sqrt(dh)
    if xp is jnp:
        alpha = jax.nn.softmax(s, axis=-1)
    else:
        e = np.exp(s - s.max(-1, keepdims=True))
        alpha = e / e.sum(-1, keepdims=True)
    o = xp.einsum("hnl,hnlk->hnk", alpha, v)  # (H, n, dh)
    f = c * xp.einsum("hnk,hkm->nm", o, a)
    return f, alpha


def attention(X, Y=None, *, context_length: int, heads: int = 2, key_dim: int | None = None,
              readout: str = "standard", kappa: float = 0.01, sigma2: float = 1.0, sigma_a2: float = 1.0,
              score_scale: float = 1.0, num_outputs: int | None = None, X_test=None, record: Sequence[str] = ()):
    """Softmax attention head with a linear readout (module docstring for the equations).

    Parameters
    ----------
    X : (P, L·d) flattened contexts.  Y : (P, m) targets or None (prior; give ``num_outputs``).
    context_length : L, tokens per context (d = X.shape[1] / L).
    heads : H.  key_dim : d_h (default d).
    readout : "standard" (1/√(H d_h), variance κ) or "meanfield" (1/(H d_h), variance κ/(H d_h)).
    kappa : κ > 0, ridge / temperature.  sigma2 : σ² in the N(0, σ²/d) prior of Q, K, V.
    sigma_a2 : readout prior variance.  score_scale : β, multiplies the scores q·k/√d_h.
    X_test : optional test contexts; f on them is recorded as ``f_test``.
    record : ("attn",) records the attention weights on the training contexts.
    """
    P, n = X.shape
    L = int(context_length)
    d = n // L
    dh = d if key_dim is None else int(key_dim)
    m = Y.shape[1] if Y is not None else int(num_outputs)
    if Y is not None:
        assert Y.shape == (P, m), f"Y has shape {Y.shape}, expected {(P, m)}"
    c, v = _readout(readout, heads, dh, kappa)
    sd = math.sqrt(sigma2 / d)

    with numpyro.plate("head", heads, dim=-3), numpyro.plate("key_dim", dh, dim=-2):
        with numpyro.plate("input", d, dim=-1):
            Q = numpyro.sample("Q", dist.Normal(0.0, sd))
            K = numpyro.sample("K", dist.Normal(0.0, sd))
            V = numpyro.sample("V", dist.Normal(0.0, sd))
        with numpyro.plate("class", m, dim=-1):
            a = numpyro.sample("a", dist.Normal(0.0, math.sqrt(sigma_a2)))
    assert Q.shape[-3:] == (heads, dh, d), f"Q has shape {Q.shape}"
    assert a.shape[-3:] == (heads, dh, m), f"a has shape {a.shape}"

    tokens = X.reshape(P, L, d)
    f, alpha = attention_forward(tokens, Q, K, V, a, readout=readout, score_scale=score_scale)
    assert f.shape == (P, m), f"f has shape {f.shape}"
    assert alpha.shape == (heads, P, L)
    if "attn" in record:
        numpyro.deterministic("attn", alpha)
    numpyro.deterministic("f", f)
    if Y is not None:
        numpyro.deterministic("mse", jnp.mean((Y - f) ** 2))
    with numpyro.plate("point", P, dim=-2), numpyro.plate("class", m, dim=-1):
        numpyro.sample("y", dist.Normal(f, math.sqrt(v)), obs=Y)

    if X_test is not None:
        ft, _ = attention_forward(X_test.reshape(X_test.shape[0], L, d), Q, K, V, a, readout=readout,
                                  score_scale=score_scale)
        numpyro.deterministic("f_test", ft)
    return f


# ---------------------------------------------------------------------------------------------------------- zoo
def _validate(X, Y=None, **kw):
    check_attention_args(X, Y, **kw)


def _dims(*, record=(), X_test=None, **_):
    return attention_dims(record, with_test=X_test is not None)


OBSERVABLES = (
    Observable("alignment", "A_f = <f, y>/<y, y> on the test contexts (predictions group) versus P for several "
               "context lengths L: diagnostics.alignment.alignment",
               "Rubin, Davidovich & Ringel (arXiv 2512.04165, theory.md §8): P* ∝ √(L d³) (reported, unverified)"),
    Observable("attn", "attention weights (head, point, token), recorded with record=('attn',)", ""),
    Observable("f", "network output on the training contexts (point, class)", ""),
    Observable("mse", "training mean squared error", ""),
)

def _resolve(X, kw):
    """key_dim=None means the token dimension d = X.shape[1] / context_length: store the value used."""
    kw = dict(kw)
    L = kw.get("context_length")
    if (kw.get("key_dim") is None and isinstance(L, (int, np.integer)) and not isinstance(L, bool) and L >= 1
            and X.shape[1] % L == 0):
        kw["key_dim"] = X.shape[1] // L
    return kw


def _forward(X, params, *, context_length, readout="standard", score_scale=1.0, **_):
    """f (point, class) of :func:`attention` for one draw ``params`` = {"Q", "K", "V", "a"}."""
    L = int(context_length)
    tokens = X.reshape(X.shape[0], L, X.shape[1] // L)
    return attention_forward(tokens, params["Q"], params["K"], params["V"], params["a"], readout=readout,
                             score_scale=score_scale)[0]


def _likelihood_variance(kw):
    if kw.get("key_dim") is None:
        raise ValueError("likelihood_variance needs key_dim (resolve the model keywords first)")
    return _readout(kw.get("readout", "standard"), kw["heads"], kw["key_dim"], kw["kappa"])[1]


register(ZooEntry(
    name="softmax_attention",
    model=attention,
    defaults=dict(context_length=4, heads=2, key_dim=None, readout="standard", kappa=0.01, sigma2=1.0,
                  sigma_a2=1.0, score_scale=1.0),
    task_defaults=dict(L=4, d=8, P=64, P_test=1000),
    make_task=attention_task,
    validate=_validate,
    dims=_dims,
    observables=OBSERVABLES,
    description="single-layer softmax attention head (query = first token, H heads, linear readout) on a cubic "
                "target that needs attention",
    reference="Rubin, Davidovich & Ringel, arXiv 2512.04165; theory.md §8",
    units=(UnitLayer("heads", "attn", "head", "attention heads: attention weights on the training contexts "
                     "(record 'attn')"),
           UnitLayer("head_readout", "a", "head", "attention heads: readout weights of their outputs")),
    diagnose=lazy(".diagnostics.observables:attention_observables"),
    resolve=_resolve,
    record=("attn",),
    forward=_forward,
    likelihood_variance=_likelihood_variance,
))
