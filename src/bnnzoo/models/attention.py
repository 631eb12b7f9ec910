"""Bayesian softmax attention head (docs/theory.md §8; our documented choice of architecture).

A context of L tokens x_1..x_L ∈ ℝᵈ is one row of ``X`` (shape (P, L·d), token ℓ in columns ℓ·d..ℓ·d+d−1).  With H
heads of key dimension d_h and the first token as the query::

    q_h  = Q_h x_1,   k_hℓ = K_h x_ℓ,   v_hℓ = V_h x_ℓ                  Q_h, K_h, V_h ∈ ℝ^{d_h×d} ~ N(0, σ²/d)
    s_hℓ = β q_h·k_hℓ / √d_h,   α_hℓ = softmax_ℓ(s_hℓ)                  (scores; β = ``score_scale``)
    o_h  = Σ_ℓ α_hℓ v_hℓ                                               (head output, ℝ^{d_h})
    f    = c Σ_h a_hᵀ o_h                                              a_h ∈ ℝ^{d_h×m} ~ N(0, σ_a²)
    y | f ~ N(f, v)

    readout="standard":  c = 1/√(H d_h),  v = κ
    readout="meanfield": c = 1/(H d_h),   v = κ/(H d_h)   (rescaled temperature, as in the FCN core)

The σ²/d prior makes q, k, v entries O(σ) under the prior for ``|x|²`` ≈ d, so the scores are O(σ²) at any d_h;
β exposes the score temperature.  The exact equations of arXiv 2512.04165 were not available to us (docs/theory.md
§8 is tagged unverified): a standard single-layer softmax attention with a linear readout is our choice.

Sites (every axis named by a plate)::

    Q, K, V (head, key_dim, input), a (head, key_dim, class), f (point, class), y (point, class, observed), mse (),
    attn (head, point, token) only when recorded (record=("attn",)), f_test (test_point, class) with ``X_test``.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ..tasks.attention_task import attention_task
from .zoo import Observable, PopulationSpec, UnitLayer, ZooEntry, register
from ._checks import (check_bool, check_data, check_int, check_positive, check_record, check_targets_and_test,
                      sqrt)

__all__ = ["attention", "attention_dims", "check_attention_args", "attention_forward", "attention_prior_variances",
           "ATTENTION_READOUTS"]

ATTENTION_READOUTS = ("standard", "meanfield")


def _readout(readout, heads, key_dim, kappa):
    """(readout prefactor c, likelihood variance v); ``kappa`` may be traced."""
    n = heads * key_dim
    if readout == "standard":
        return 1.0 / math.sqrt(n), kappa
    return 1.0 / n, kappa / n


def check_attention_args(X, Y=None, *, context_length, heads=2, key_dim=None, readout="standard", kappa=0.01,
                         sigma2=1.0, sigma_a2=1.0, score_scale=1.0, num_outputs=None, X_test=None, record=(),
                         likelihood=True):
    """Validate the arguments of :func:`attention` before anything compiles.

    :func:`bnnzoo.sample` and :func:`attention` itself call it (same messages); traced hyperparameters are not
    inspected.

    Raises
    ------
    ValueError
        One line naming the argument and its valid values (shapes, NaN/inf, booleans or strings where numbers are
        expected, sizes, names, Y=None without ``num_outputs``).
    """
    X = check_data("X", X, "(P, L*d)")
    check_int("context_length", context_length, 1)
    if X.shape[1] % context_length:
        raise ValueError(f"X has {X.shape[1]} columns, not a multiple of context_length={context_length}")
    check_targets_and_test(X, Y, num_outputs, X_test)
    check_int("heads", heads, 1)
    if key_dim is not None:
        if isinstance(key_dim, (bool, np.bool_)) or not isinstance(key_dim, (int, np.integer)) or key_dim < 1:
            raise ValueError(f"key_dim must be an integer >= 1 or None (= token dimension d), got {key_dim!r}")
    if not isinstance(readout, str) or readout not in ATTENTION_READOUTS:
        raise ValueError(f"readout must be one of {ATTENTION_READOUTS}, got {readout!r}")
    for name, v in (("kappa", kappa), ("sigma2", sigma2), ("sigma_a2", sigma_a2), ("score_scale", score_scale)):
        check_positive(name, v)
    check_bool("likelihood", likelihood)
    check_record(record, "'attn'", lambda r: r == "attn")


def attention_dims(record: Sequence[str] | str = (), with_test: bool = False) -> dict[str, list[str]]:
    """Dims of every site of :func:`attention`."""
    record = (record,) if isinstance(record, str) else tuple(record)
    w = ["head", "key_dim", "input"]
    dims = {"Q": w, "K": list(w), "V": list(w), "a": ["head", "key_dim", "class"], "f": ["point", "class"],
            "y": ["point", "class"], "mse": []}
    if "attn" in record:
        dims["attn"] = ["head", "point", "token"]
    if with_test:
        dims["f_test"] = ["test_point", "class"]
    return dims


def attention_prior_variances(X=None, *, context_length=None, sigma2=1.0, sigma_a2=1.0, **_model_kwargs):
    """Prior variance of every weight site of :func:`attention`: σ²/d for Q, K, V and σ_a² for a.

    Parameters
    ----------
    X : (P, L·d) training contexts: the token dimension d = X.shape[1] / context_length sets the Q, K, V variance.
    context_length, sigma2, sigma_a2 : the model's keywords (others are ignored).

    Raises
    ------
    ValueError
        ``X`` or ``context_length`` missing.
    """
    if X is None or context_length is None:
        raise ValueError("the attention prior variance sigma2/d needs the token dimension: pass X (the training "
                         "contexts) and context_length")
    d = np.shape(X)[1] // int(context_length)
    v = float(sigma2) / d
    return {"Q": v, "K": v, "V": v, "a": float(sigma_a2)}


def _heads(tokens, Q, K, V, a, readout, score_scale, xp):
    """(f (..., n, m), attention weights (..., H, n, L)); leading batch axes of the weights allowed."""
    H, dh = Q.shape[-3], Q.shape[-2]
    c, _ = _readout(readout, H, dh, 1.0)
    q = xp.einsum("...hkd,nd->...hnk", Q, tokens[:, 0, :])  # (H, n, dh)
    k = xp.einsum("...hkd,nld->...hnlk", K, tokens)  # (H, n, L, dh)
    v = xp.einsum("...hkd,nld->...hnlk", V, tokens)
    s = score_scale * xp.einsum("...hnk,...hnlk->...hnl", q, k) / math.sqrt(dh)
    if xp is jnp:
        alpha = jax.nn.softmax(s, axis=-1)
    else:
        e = np.exp(s - s.max(-1, keepdims=True))
        alpha = e / e.sum(-1, keepdims=True)
    o = xp.einsum("...hnl,...hnlk->...hnk", alpha, v)  # (H, n, dh)
    f = c * xp.einsum("...hnk,...hkm->...nm", o, a)
    return f, alpha


def attention_forward(X, params, K=None, V=None, a=None, *, context_length=None, readout="standard",
                      score_scale=1.0, xp=jnp, **_model_kwargs):
    """The output f of :func:`attention` without prior or likelihood, for given weights.

    Parameters
    ----------
    X : (n, L·d) flattened contexts (as the model takes them).
    params : {"Q", "K", "V": (..., H, d_h, d), "a": (..., H, d_h, m)} (leading batch axes allowed).
        Also accepted, for post-hoc analysis: ``attention_forward(tokens, Q, K, V, a, ...)`` with tokens (n, L, d)
        and the arrays positionally; the call then returns ``(f, alpha)`` with the attention weights alpha
        (H, n, L).
    context_length : L (required with ``params``).
    readout, score_scale : as in :func:`attention`.
    xp : jax.numpy (default) or numpy.
    **_model_kwargs : the model's other keywords (kappa, sigma2, ...) are accepted and ignored.

    Returns
    -------
    f : (..., n, m) array (or ``(f, alpha)`` in the positional form).

    Raises
    ------
    ValueError
        Missing weights or context_length, shapes that do not fit, unknown readout.
    """
    if not isinstance(readout, str) or readout not in ATTENTION_READOUTS:
        raise ValueError(f"readout must be one of {ATTENTION_READOUTS}, got {readout!r}")
    if not isinstance(params, Mapping):
        return _heads(X, params, K, V, a, readout, score_scale, xp)
    missing = [k for k in ("Q", "K", "V", "a") if k not in params]
    if missing:
        raise ValueError(f"params must hold the weights 'Q', 'K', 'V' and 'a'; missing {missing}")
    if context_length is None:
        raise ValueError("context_length is required: L, the number of tokens per context")
    check_int("context_length", context_length, 1)
    X = check_data("X", X, "(n, L*d)")
    L = int(context_length)
    if X.shape[1] % L or params["Q"].shape[-1] != X.shape[1] // L:
        raise ValueError(f"X with {X.shape[1]} columns and context_length={L} does not fit Q of shape "
                         f"{params['Q'].shape} (expected (..., H, d_h, d) with d = columns / L)")
    tokens = X.reshape(X.shape[0], L, X.shape[1] // L)
    return _heads(tokens, params["Q"], params["K"], params["V"], params["a"], readout, score_scale, xp)[0]


def attention(X, Y=None, *, context_length: int, heads: int = 2, key_dim: int | None = None,
              readout: str = "standard", kappa: float = 0.01, sigma2: float = 1.0, sigma_a2: float = 1.0,
              score_scale: float = 1.0, num_outputs: int | None = None, X_test=None, record: Sequence[str] = (),
              likelihood: bool = True):
    """Softmax attention head with a linear readout (module docstring for the equations).

    A plain NumPyro model (MCMC, SVI with AutoNormal / AutoDelta, ``Predictive``, effect handlers).  kappa, sigma2,
    sigma_a2 and score_scale may be traced values (a prior on them in an enclosing model).  Inside another model call
    it within ``numpyro.handlers.scope(prefix=...)`` with ``likelihood=False``, or evaluate given weights with
    :func:`attention_forward`.

    GPU precision: JAX rounds float32 matrix products on GPUs to TensorFloat32 by default; :func:`bnnzoo.sample`
    samples under ``jax.default_matmul_precision("highest")``.  Calling this model yourself on a GPU, wrap the run
    in ``with jax.default_matmul_precision("highest"):`` to keep the potential energy exact.

    Parameters
    ----------
    X : (P, L·d) flattened contexts.
    Y : (P, m) targets or None (prior; give ``num_outputs``).
    context_length : L, tokens per context (d = X.shape[1] / L).
    heads : H (integer >= 1).
    key_dim : d_h (default d).
    readout : "standard" (1/√(H d_h), variance κ) or "meanfield" (1/(H d_h), variance κ/(H d_h)).
    kappa : κ > 0, ridge / temperature.
    sigma2 : σ² > 0 in the N(0, σ²/d) prior of Q, K, V.
    sigma_a2 : readout prior variance > 0.
    score_scale : β > 0, multiplies the scores q·k/√d_h.
    num_outputs : m; required when Y is None.
    X_test : optional test contexts; f on them is recorded as ``f_test``.
    record : ("attn",) records the attention weights on the training contexts.
    likelihood : False leaves out the observation site ``y`` (and ``mse``).

    Returns
    -------
    f : (P, m) output on X.

    Raises
    ------
    ValueError
        Bad arguments (:func:`check_attention_args`), before anything is traced.
    """
    check_attention_args(X, Y, context_length=context_length, heads=heads, key_dim=key_dim, readout=readout,
                         kappa=kappa, sigma2=sigma2, sigma_a2=sigma_a2, score_scale=score_scale,
                         num_outputs=num_outputs, X_test=X_test, record=record, likelihood=likelihood)
    record = (record,) if isinstance(record, str) else tuple(record)
    X = X if hasattr(X, "shape") else np.asarray(X)
    Y = Y if Y is None or hasattr(Y, "shape") else np.asarray(Y)
    X_test = X_test if X_test is None or hasattr(X_test, "shape") else np.asarray(X_test)
    P, n = X.shape
    L = int(context_length)
    d = n // L
    dh = d if key_dim is None else int(key_dim)
    m = Y.shape[1] if Y is not None else int(num_outputs)
    c, v = _readout(readout, heads, dh, kappa)
    sd = sqrt(sigma2 / d)

    with numpyro.plate("head", heads, dim=-3), numpyro.plate("key_dim", dh, dim=-2):
        with numpyro.plate("input", d, dim=-1):
            Q = numpyro.sample("Q", dist.Normal(0.0, sd))
            K = numpyro.sample("K", dist.Normal(0.0, sd))
            V = numpyro.sample("V", dist.Normal(0.0, sd))
        with numpyro.plate("class", m, dim=-1):
            a = numpyro.sample("a", dist.Normal(0.0, sqrt(sigma_a2)))
    assert Q.shape[-3:] == (heads, dh, d), f"Q has shape {Q.shape}"
    assert a.shape[-3:] == (heads, dh, m), f"a has shape {a.shape}"

    tokens = X.reshape(P, L, d)
    f, alpha = _heads(tokens, Q, K, V, a, readout, score_scale, jnp)
    assert f.shape[-2:] == (P, m), f"f has shape {f.shape}"
    assert alpha.shape[-3:] == (heads, P, L)
    if "attn" in record:
        numpyro.deterministic("attn", alpha)
    numpyro.deterministic("f", f)
    if likelihood:
        if Y is not None:
            numpyro.deterministic("mse", jnp.mean((Y - f) ** 2))
        with numpyro.plate("point", P, dim=-2), numpyro.plate("class", m, dim=-1):
            numpyro.sample("y", dist.Normal(f, sqrt(v)), obs=Y)

    if X_test is not None:
        ft, _ = _heads(X_test.reshape(X_test.shape[0], L, d), Q, K, V, a, readout, score_scale, jnp)
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
               "Rubin, Davidovich & Ringel (arXiv 2512.04165, docs/theory.md §8): P* ∝ √(L d³) (reported, unverified)"),
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
    prior_variances=attention_prior_variances,
    description="single-layer softmax attention head (query = first token, H heads, linear readout) on a cubic "
                "target that needs attention",
    reference="Rubin, Davidovich & Ringel, arXiv 2512.04165; docs/theory.md §8",
    units=(UnitLayer("heads", "attn", "head", "attention heads: attention weights on the training contexts "
                     "(record 'attn')"),
           UnitLayer("head_readout", "a", "head", "attention heads: readout weights of their outputs")),
    analysis="attention",
    resolve=_resolve,
    record=("attn",),
    forward=_forward,
    likelihood_variance=_likelihood_variance,
    auto_sampler="chees",          # SNAPER's tuned trajectory mixes the readout norm q_a slowly here
    populations=PopulationSpec(("alignment", "specialist_heads", "mse"), ("prior", "annealed"), "kappa",
                               "no meanfield start: bnnzoo.theory has no mean field of softmax attention"),
))
