"""Softmax attention head: the cubic task (normalisation, orthogonality to what frozen attention can express,
realisability to first order by two opposite heads), the forward pass against an explicit loop, the prior scale,
sampling into ArviZ with named dims and trace plots, and alignment rising with P."""

import math

import numpy as np
import pytest
from numpyro.infer import Predictive

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.diagnostics.alignment import alignment, alignment_from_arrays
from bnnzoo.models.attention import attention, attention_dims, attention_forward
from bnnzoo.tasks.attention_task import attention_target, attention_task, split_tokens

SAMPLE_KW = dict(num_chains=2, num_warmup=150, num_samples=100, progress=False, max_tree_depth=7, heads=2,
                 kappa=0.05)


def test_task_normalised_and_needs_attention():
    t = attention_task(L=3, d=5, P=200_000, P_test=0, seed=2)
    y = t.Y[:, 0]
    tok = split_tokens(t.X, 3)
    se = 1 / math.sqrt(len(y))
    assert abs(y.mean()) < 5 * se and abs(y.var() - 1) < 5 * np.std(y**2) * se
    wq, wk, wv = (np.array(t.meta[k]) for k in ("w_q", "w_k", "w_v"))
    np.testing.assert_allclose(np.array([wq, wk, wv]) @ np.array([wq, wk, wv]).T, np.eye(3), atol=1e-12)
    # frozen / uniform attention: f = mean over tokens of a linear value → orthogonal to y
    for u in (wq, wk, wv, np.ones(5) / math.sqrt(5)):
        g = tok.mean(axis=1) @ u
        assert abs(np.mean(y * g)) < 5 * se * np.std(y * g)
    # two opposite heads with small scores reproduce y to first order:  [o(+β) − o(−β)] ∝ y + O(β²)
    beta = 0.05
    Q = np.stack([wq[None], wq[None]]) * np.array([1, -1])[:, None, None]  # (2, 1, d), scores ±β q k_ℓ
    K = np.stack([wk[None], wk[None]]) * math.sqrt(beta)
    Q = Q * math.sqrt(beta)
    V = np.stack([wv[None], wv[None]])
    a = np.array([1.0, -1.0]).reshape(2, 1, 1)
    f, _ = attention_forward(tok[:20000], Q, K, V, a, xp=np)
    r = np.corrcoef(f[:, 0], y[:20000])[0, 1]
    assert r > 0.995


def test_forward_matches_explicit_loop():
    rng = np.random.default_rng(0)
    H, dh, d, L, n = 2, 3, 4, 5, 6
    Q, K, V = (rng.standard_normal((H, dh, d)) for _ in range(3))
    a = rng.standard_normal((H, dh, 2))
    tok = rng.standard_normal((n, L, d))
    f, alpha = attention_forward(tok, Q, K, V, a, score_scale=0.7, xp=np)
    f_loop = np.zeros((n, 2))
    for i in range(n):
        for h in range(H):
            q = Q[h] @ tok[i, 0]
            s = np.array([0.7 * q @ (K[h] @ tok[i, l]) / math.sqrt(dh) for l in range(L)])
            w = np.exp(s - s.max())
            w /= w.sum()
            np.testing.assert_allclose(alpha[h, i], w, atol=1e-12)
            o = sum(w[l] * (V[h] @ tok[i, l]) for l in range(L))
            f_loop[i] += o @ a[h] / math.sqrt(H * dh)
    np.testing.assert_allclose(f, f_loop, atol=1e-10)
    import jax.numpy as jnp

    fj, _ = attention_forward(jnp.asarray(tok), jnp.asarray(Q), jnp.asarray(K), jnp.asarray(V), jnp.asarray(a),
                              score_scale=0.7)
    np.testing.assert_allclose(np.asarray(fj), f, atol=1e-4)


def test_prior_output_variance():
    """Prior scale: with the scores switched off (score_scale → 0) attention is uniform, f = Σ_h a_hᵀ V_h x̄ / √(H d_h)
    with x̄ the mean token, and E[f²] = σ_a² σ² |x̄|²/d exactly (the σ²/d prior of V)."""
    import jax

    t = attention_task(L=4, d=6, P=3, P_test=0, seed=0)
    tok = split_tokens(t.X, 4)
    pred = Predictive(attention, num_samples=4000, return_sites=["f"])
    f = np.asarray(pred(jax.random.PRNGKey(0), t.X, None, num_outputs=1, context_length=4, heads=2, sigma2=1.0,
                        sigma_a2=2.0, score_scale=1e-6)["f"])[..., 0]
    expect = 2.0 * np.sum(tok.mean(axis=1) ** 2, axis=1) / 6  # σ_a² · σ²/d · |x̄|²  (uniform attention)
    se = np.std(f**2, axis=0) / math.sqrt(len(f))
    assert np.all(np.abs(np.mean(f**2, axis=0) - expect) < 5 * se), (np.mean(f**2, 0), expect)


@pytest.fixture(scope="module")
def run_large_P():
    task = attention_task(L=2, d=6, P=256, P_test=500, seed=1)
    return task, bnnzoo.sample("softmax_attention", task, seed=0, context_length=2, **SAMPLE_KW)


def test_sample_dims_and_trace_plot(run_large_P):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    task, idata = run_large_P
    post = azcompat.get_group(idata, "posterior")
    for site in ("Q", "K", "V"):
        assert list(post[site].dims) == ["chain", "draw", "head", "key_dim", "input"]
    assert list(post["a"].dims) == ["chain", "draw", "head", "key_dim", "class"]
    assert post["Q"].shape == (2, 100, 2, 6, 6)
    azcompat.plot_trace(idata, var_names=["Q", "mse"], coords={"head": [0], "key_dim": [0], "input": [0, 1]})
    plt.close("all")


def test_alignment_rises_with_P(run_large_P):
    task, idata = run_large_P
    small = attention_task(L=2, d=6, P=12, P_test=500, seed=1)
    A_small = alignment(bnnzoo.sample("softmax_attention", small, seed=0, context_length=2, **SAMPLE_KW))
    A_large = alignment(idata)
    assert A_small.mean_predictor < 0.3
    assert A_large.mean_predictor > A_small.mean_predictor + 0.3


def test_context_length_validation():
    t = attention_task(L=3, d=4, P=5, P_test=0)
    with pytest.raises(ValueError, match="multiple of context_length"):
        bnnzoo.sample("softmax_attention", t, context_length=5, num_warmup=1, num_samples=1, sampler="nuts")
    with pytest.raises(ValueError, match="L >= 2"):
        attention_target(np.zeros((2, 1, 4)), *np.eye(4)[:3])
