"""The faster exact samplers (bnnzoo.models.fcn_fast via ``sample(reparam=...)``) leave the posterior unchanged.

* Building blocks against closed forms (no MCMC): the readout marginal likelihood equals the multivariate normal
  log-density of the stacked outputs, in both the P-space and the N-space (Woodbury) form; the readout and first-layer
  conditional draws have the right mean and covariance and satisfy their constraints.
* Whole samplers against the exact blocked Gibbs oracle (linear net: f, K1 = zᵀz/N, U = aᵀa/N) and against baseline
  weight-space NUTS (sigmoidal and ReLU nets), by ESS-aware z-tests (bnnzoo.testing) with both chains' Monte-Carlo
  errors in the standard error.
"""

import math

import jax
import numpy as np
import pytest
from scipy.stats import multivariate_normal

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.inference.gibbs_linear import gibbs_linear
from bnnzoo.models.fcn_fast import data_space_basis, draw_first_layer, draw_readout, readout_marginal_loglik
from bnnzoo.tasks import toy_task
from bnnzoo.testing import assert_mean_matches, mcse_mean


@pytest.mark.parametrize("N, P", [(7, 4), (3, 6)])          # P <= N: P-space Cholesky; N < P: Woodbury
def test_readout_marginal_is_the_gaussian_marginal(N, P):
    rng = np.random.default_rng(0)
    feats = rng.standard_normal((N, P))
    Y = rng.standard_normal((P, 2))
    s2a, c, v = 0.7, 1.0 / N, 0.05
    K = v * np.eye(P) + s2a * c * c * feats.T @ feats
    truth = sum(multivariate_normal(np.zeros(P), K).logpdf(Y[:, r]) for r in range(2))
    got = float(readout_marginal_loglik(jax.numpy.asarray(feats, "float32"), jax.numpy.asarray(Y, "float32"),
                                        s2a, c, v))
    assert got == pytest.approx(truth, rel=2e-4, abs=2e-3)


@pytest.mark.parametrize("N, P", [(7, 4), (3, 6)])
def test_readout_marginal_gradient_matches_finite_differences(N, P):
    """The hand-written VJP against central differences of the closed-form Gaussian log-density (float64 scipy)."""
    rng = np.random.default_rng(5)
    feats = rng.standard_normal((N, P))
    Y = rng.standard_normal((P, 2))
    s2a, c, v = 0.7, 1.0 / N, 0.05

    def truth(F):
        K = v * np.eye(P) + s2a * c * c * F.T @ F
        return sum(multivariate_normal(np.zeros(P), K).logpdf(Y[:, r]) for r in range(2))

    h = 1e-5
    fd = np.zeros_like(feats)
    for idx in np.ndindex(*feats.shape):
        e = np.zeros_like(feats)
        e[idx] = h
        fd[idx] = (truth(feats + e) - truth(feats - e)) / (2 * h)
    got = np.asarray(jax.grad(readout_marginal_loglik)(jax.numpy.asarray(feats, "float32"),
                                                     jax.numpy.asarray(Y, "float32"), s2a, c, v))
    np.testing.assert_allclose(got, fd, rtol=2e-3, atol=2e-3 * np.abs(fd).max())
    # and under vmap (chains vectorised), as NUTS calls it
    batch = jax.numpy.asarray(np.stack([feats, 2 * feats]), "float32")
    g2 = np.asarray(jax.vmap(jax.grad(readout_marginal_loglik), in_axes=(0, None, None, None, None))(
        batch, jax.numpy.asarray(Y, "float32"), s2a, c, v))
    np.testing.assert_allclose(g2[0], got, rtol=1e-5, atol=1e-5 * np.abs(got).max())


@pytest.mark.parametrize("N, P", [(4, 6), (6, 3)])          # N <= P: Cholesky of A; P < N: Matheron's rule
def test_readout_conditional_draw_mean_and_covariance(N, P):
    rng = np.random.default_rng(1)
    feats = rng.standard_normal((N, P)).astype("float32")
    Y = rng.standard_normal((P, 1)).astype("float32")
    s2a, c, v = 0.5, 1.0 / N, 0.1
    prec = np.eye(N) / s2a + (c * c / v) * feats.astype(float) @ feats.T
    cov = np.linalg.inv(prec)
    mean = cov @ ((c / v) * feats.astype(float) @ Y[:, 0])
    keys = jax.random.split(jax.random.PRNGKey(0), 20000)
    draws = np.asarray(jax.vmap(lambda k: draw_readout(k, feats, Y, s2a, c, v))(keys))[:, :, 0]
    se = np.sqrt(np.diag(cov) / len(draws))
    assert np.all(np.abs(draws.mean(0) - mean) < 5 * se)
    np.testing.assert_allclose(np.cov(draws.T), cov, atol=0.05 * np.abs(cov).max())


def test_first_layer_conditional_draw():
    rng = np.random.default_rng(2)
    P, N0, N = 3, 5, 2
    X = rng.standard_normal((P, N0)).astype("float32")
    B, M = data_space_basis(X, 1.0)
    np.testing.assert_allclose(B @ B.T, X.astype(float) @ X.T / N0, rtol=1e-4, atol=1e-5)
    z1 = rng.standard_normal((N, P)).astype("float32")
    keys = jax.random.split(jax.random.PRNGKey(1), 20000)
    W = np.asarray(jax.vmap(lambda k: draw_first_layer(k, z1, X, M, 1.0))(keys))
    np.testing.assert_allclose(W @ X.T / math.sqrt(N0), np.broadcast_to(z1, W.shape[:1] + z1.shape), atol=2e-4)
    # conditional covariance of each row: I − Xᵀ(XXᵀ)⁻¹X (the projector off the span of the inputs)
    Xd = X.astype(float)
    proj = np.eye(N0) - Xd.T @ np.linalg.solve(Xd @ Xd.T, Xd)
    np.testing.assert_allclose(np.cov(W[:, 0, :].T), proj, atol=0.04)


def _fast_vs_gibbs(reparam, num_samples):
    task = toy_task(P=6, N0=8, y_neg=0.0)
    kw = dict(width=6, temperature=0.05)
    idata = bnnzoo.sample("deep_linear", task, num_chains=2, num_warmup=300, num_samples=num_samples, seed=3,
                          record=("z1",), progress=False, reparam=reparam, sampler="nuts",
                          **kw)
    post = azcompat.get_group(idata, "posterior")
    z, a = post["z1"].values, post["a"].values
    fast = {"f": post["f"].values, "K1": np.einsum("cdnp,cdnq->cdpq", z, z) / 6,
            "U": np.einsum("cdnk,cdnl->cdkl", a, a) / 6}
    sa2 = bnnzoo.run_config(idata)["model_kwargs"]["sigma_a2"]
    g = gibbs_linear(task.X, task.Y, num_samples=20000, num_warmup=500, seed=11, **dict(kw, sigma_a2=sa2))
    for obs, ref in (("f", g.f), ("K1", g.K1), ("U", g.U)):
        truth, truth_se, _ = mcse_mean(ref[None])
        assert_mean_matches(fast[obs], truth, truth_se, name=f"{reparam}: {obs}")
    # the first layer drawn back from its conditional reproduces the sampled preactivations
    W1 = post["W1"].values
    np.testing.assert_allclose(np.einsum("cdni,pi->cdnp", W1, task.X) / math.sqrt(task.N0), z, atol=2e-3)


@pytest.mark.slow
def test_readout_and_data_space_match_exact_gibbs():
    _fast_vs_gibbs(("readout", "data_space"), 800)


@pytest.mark.slow
def test_data_space_matches_exact_gibbs():
    _fast_vs_gibbs(("data_space",), 1500)


@pytest.mark.slow
@pytest.mark.parametrize("entry, y_neg", [("sigmoidal", 0.5), ("relu", -0.5)])
def test_fast_matches_baseline_nuts_nonlinear(entry, y_neg):
    """Readout integrated out + data-space first layer against plain weight-space NUTS, at a temperature where the
    baseline mixes (T = 0.3, N = 4, P = 6)."""
    task = toy_task(P=6, N0=8, y_neg=y_neg)
    kw = dict(width=4, temperature=0.3, num_chains=4, num_warmup=500, record=("z1",), progress=False,
              sampler="nuts")
    base = bnnzoo.sample(entry, task, num_samples=3000, seed=5, **kw)
    fast = bnnzoo.sample(entry, task, num_samples=1500, seed=6, reparam=("readout", "data_space"), **kw)

    def obs(idata):
        p = azcompat.get_group(idata, "posterior")
        z = p["z1"].values
        return {"f": p["f"].values, "q_a": p["q_a"].values, "K1": np.einsum("cdnp,cdnq->cdpq", z, z) / 4,
                "mse": p["mse"].values[..., None]}

    ob, of = obs(base), obs(fast)
    for k in ob:
        truth, truth_se, _ = mcse_mean(ob[k])
        assert_mean_matches(of[k], truth, truth_se, name=f"{entry}: {k}")
