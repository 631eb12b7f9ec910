"""The exact Gibbs sampler of the one-hidden-layer linear net against independent exact computations.

Oracles (none shares code with the sampler):
* m = 1: ``linear_exact_m1`` — the hidden weights integrated out in function space, leaving a 1-D quadrature over |a|².
* m = 2: importance sampling from the prior: a ~ N(0, σ_a²) gives S = aᵀa, weighted by the exact marginal likelihood
  N(vec Y | 0, c² σ_w² S ⊗ K0 + v I), with the Gaussian conditionals E[F | S, Y] and E[zᵀz/N | S, Y] (written here).
Gibbs errors are batch-means standard errors; a moment passes if |Gibbs − exact| < 4.5 combined standard errors.
"""

import numpy as np
import pytest

from bnnzoo.inference.gibbs_linear import gibbs_linear
from bnnzoo.theory.linear import linear_exact_m1

Z = 4.5  # z threshold per moment (about 10 moments per test: false-alarm rate < 1e-4)


def batch_se(x, n_batches=25):
    """Mean and batch-means standard error along axis 0."""
    n = (x.shape[0] // n_batches) * n_batches
    b = x[:n].reshape(n_batches, -1, *x.shape[1:]).mean(1)
    return x.mean(0), b.std(0, ddof=1) / np.sqrt(n_batches)


def importance_oracle(X, Y, N, T, sa2, sw2, readout, n=400_000, seed=0):
    """E[aᵀa/N], E[f], E[zᵀz/N] and their MC standard errors by prior importance sampling over S = aᵀa."""
    P, N0 = X.shape
    m = Y.shape[1]
    c2 = 1 / N**2 if readout == "nonlazy" else 1 / N
    v = T / N if readout == "nonlazy" else T
    K0 = X @ X.T / N0
    rng = np.random.default_rng(seed)
    a = np.sqrt(sa2) * rng.standard_normal((n, N, m))
    S = np.einsum("nir,nis->nrs", a, a)
    C = c2 * sw2 * np.einsum("nrs,pq->nrpsq", S, K0).reshape(n, m * P, m * P)
    Sig = C + v * np.eye(m * P)
    y = Y.T.reshape(-1)  # vec, class-major
    Si_y = np.linalg.solve(Sig, np.broadcast_to(y, (n, m * P))[..., None])[..., 0]
    logdet = np.linalg.slogdet(Sig)[1]
    logw = -0.5 * (logdet + Si_y @ y)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    ess = 1 / np.sum(w**2)
    Ef = np.einsum("nij,nj->ni", C, Si_y).reshape(n, m, P).transpose(0, 2, 1)
    Sinv = np.linalg.inv(Sig).reshape(n, m, P, m, P)
    outer = np.einsum("nrp,nsq->nrpsq", Si_y.reshape(n, m, P), Si_y.reshape(n, m, P))
    Mst = np.einsum("nrs,nrpsq->npq", S, outer - Sinv)
    K1 = sw2 * K0 + c2 * sw2**2 / N * np.einsum("pa,nab,bq->npq", K0, Mst, K0)
    out = {}
    for name, val in (("U", S / N), ("f", Ef), ("K1", K1)):
        mean = np.tensordot(w, val, axes=1)
        se = np.sqrt(np.tensordot(w**2, (val - mean) ** 2, axes=1))  # self-normalised IS standard error
        out[name] = (mean, se)
    return out, ess


def compare(g, oracle):
    for name in ("U", "f", "K1"):
        mg, sg = batch_se(getattr(g, name))
        mo, so = oracle[name]
        z = np.abs(mg - mo) / np.sqrt(sg**2 + so**2)
        assert np.all(z < Z), f"{name}: gibbs {mg.ravel()} exact {mo.ravel()} z {z.ravel()}"
        # the test has power: errors are small compared with the moments themselves
        assert np.max(np.sqrt(sg**2 + so**2)) < 0.05 * np.max(np.abs(mo)) + 1e-3, name


def tiny(P=2, N0=2, m=1, seed=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((P, N0)), rng.choice([-1.0, 1.0], size=(P, m)) + 0.3 * rng.standard_normal((P, m))


@pytest.mark.parametrize("readout,T,sa2,sw2", [("nonlazy", 0.3, 1.0, 1.0), ("lazy", 0.5, 0.7, 1.6)])
def test_gibbs_m1_tiny_against_quadrature(readout, T, sa2, sw2):
    X, Y = tiny()
    N = 2
    g = gibbs_linear(X, Y, width=N, temperature=T, sigma_a2=sa2, sigma_w2=sw2, readout=readout,
                     num_samples=20_000, num_warmup=500, seed=1)
    ex = linear_exact_m1(X, Y, width=N, temperature=T, sigma_a2=sa2, sigma_w2=sw2, readout=readout)
    compare(g, {"U": (ex.U, 0.0), "f": (ex.f_train, 0.0), "K1": (ex.K1, 0.0)})


@pytest.mark.parametrize("readout", ["nonlazy", "lazy"])
def test_gibbs_m2_against_importance_sampling(readout):
    X, Y = tiny(P=2, N0=3, m=2, seed=5)
    N, T, sa2, sw2 = 3, 0.6, 1.0, 1.2
    oracle, ess = importance_oracle(X, Y, N, T, sa2, sw2, readout, n=200_000)
    assert ess > 2000
    g = gibbs_linear(X, Y, width=N, temperature=T, sigma_a2=sa2, sigma_w2=sw2, readout=readout,
                     num_samples=20_000, num_warmup=500, seed=2)
    compare(g, oracle)


def test_gibbs_m1_wide_against_quadrature():
    """Wide net, small T (strongly constrained posterior): still exact."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 8))
    Y = rng.choice([-1.0, 1.0], size=(5, 1))
    g = gibbs_linear(X, Y, width=300, temperature=0.02, sigma_a2=1.0, num_samples=4000, num_warmup=200, seed=4)
    ex = linear_exact_m1(X, Y, width=300, temperature=0.02, sigma_a2=1.0)
    compare(g, {"U": (ex.U, 0.0), "f": (ex.f_train, 0.0), "K1": (ex.K1, 0.0)})


def test_gibbs_record_and_dataset():
    X, Y = tiny(P=3, N0=4, m=2)
    g = gibbs_linear(X, Y, width=5, temperature=0.1, num_samples=7, num_warmup=3, thin=2, seed=0, store_W=True)
    assert g.a.shape == (7, 5, 2) and g.f.shape == (7, 3, 2) and g.K1.shape == (7, 3, 3)
    assert g.U.shape == (7, 2, 2) and g.W.shape == (7, 5, 4)
    z = g.W @ X.T / 2.0  # √N0 = 2
    np.testing.assert_allclose(g.f, np.einsum("dip,dir->dpr", z, g.a) / 5, rtol=1e-12)
    np.testing.assert_allclose(g.K1, np.einsum("dip,diq->dpq", z, z) / 5, rtol=1e-12)
    ds = g.to_dataset()
    assert set(ds["K1"].dims) == {"draw", "point", "point2"} and ds.attrs["width"] == 5
    assert ds.attrs["sigma_a2"] == pytest.approx(1 / 3)  # default 1/P for the non-lazy readout
    again = gibbs_linear(X, Y, width=5, temperature=0.1, num_samples=7, num_warmup=3, thin=2, seed=0)
    np.testing.assert_array_equal(again.a, g.a)
    with pytest.raises(ValueError):
        gibbs_linear(X, Y, width=5, temperature=0.1, readout="other")


@pytest.mark.parametrize("depth,readout,sw2", [(2, "nonlazy", 1.0), (3, "lazy", 0.6)])
def test_deep_gibbs_flat_likelihood_gives_the_prior(depth, readout, sw2):
    """Huge T: the posterior is the prior, so E[aᵀa/N] = σ_a² I, E[K_l] = σ_w^{2l} K0 (z_l = W_l z_{l−1}/√N for l >= 2,
    as in the NumPyro model) and E[f] = 0 — exact truths, z-tested with ESS-aware errors."""
    from bnnzoo.testing import assert_mean_matches

    X, Y = tiny(P=3, N0=4, m=2, seed=7)
    N, sa2 = 6, 0.8  # N != N0 = 4: a layer scaled by √N0 instead of √N would show
    g = gibbs_linear(X, Y, width=N, depth=depth, temperature=1e9, sigma_a2=sa2, sigma_w2=sw2, readout=readout,
                     num_samples=6000, num_warmup=10, seed=5)
    K0 = X @ X.T / X.shape[1]
    assert_mean_matches(g.U[None], sa2 * np.eye(2), name="U")
    assert_mean_matches(g.f[None], 0.0, name="f")
    for l in range(depth):
        assert_mean_matches(g.K[None, :, l], sw2 ** (l + 1) * K0, name=f"K{l + 1}")


def test_deep_gibbs_record_init_and_errors():
    X, Y = tiny(P=3, N0=4, m=2)
    Xt = np.random.default_rng(9).standard_normal((2, 4))
    N, L = 5, 3
    g = gibbs_linear(X, Y, width=N, depth=L, temperature=0.1, num_samples=6, num_warmup=3, thin=2, seed=0,
                     store_W=True, X_test=Xt)
    assert g.depth == L and g.params["depth"] == L
    assert g.params["sigma_a2"] == pytest.approx(3 ** (-1 / 3))  # P^{-1/L}
    assert g.K.shape == (6, L, 3, 3) and g.K_test.shape == (6, L, 2, 2) and g.K_train_test.shape == (6, L, 3, 2)
    assert len(g.Ws) == L and g.Ws[0].shape == (6, N, 4) and g.Ws[1].shape == g.Ws[2].shape == (6, N, N)
    np.testing.assert_array_equal(g.K1, g.K[:, 0])
    np.testing.assert_array_equal(g.W, g.Ws[0])
    np.testing.assert_array_equal(g.K1_test, g.K_test[:, 0])
    # recompute every recorded quantity from the stored weights (forward pass of bnnzoo.models.fcn)
    z, zt = g.Ws[0] @ X.T / 2.0, g.Ws[0] @ Xt.T / 2.0  # √N0 = 2
    for l in range(L):
        if l > 0:
            z, zt = g.Ws[l] @ z / np.sqrt(N), g.Ws[l] @ zt / np.sqrt(N)
        np.testing.assert_allclose(g.K[:, l], np.einsum("dip,diq->dpq", z, z) / N, rtol=1e-10)
        np.testing.assert_allclose(g.K_test[:, l], np.einsum("dip,diq->dpq", zt, zt) / N, rtol=1e-10)
        np.testing.assert_allclose(g.K_train_test[:, l], np.einsum("dip,diq->dpq", z, zt) / N, rtol=1e-10)
    np.testing.assert_allclose(g.f, np.einsum("dip,dir->dpr", z, g.a) / N, rtol=1e-10)
    np.testing.assert_allclose(g.f_test, np.einsum("dip,dir->dpr", zt, g.a) / N, rtol=1e-10)
    ds = g.to_dataset()
    assert ds["K"].dims == ("draw", "layer", "point", "point2") and list(ds["layer"].values) == [1, 2, 3]
    assert ds["W3"].dims == ("draw", "neuron", "neuron_in") and ds.attrs["depth"] == L
    # init: the list of layer matrices; depth 1 still takes the bare matrix
    Ws0 = [np.ones((N, 4)), np.eye(N), np.eye(N)]
    again = gibbs_linear(X, Y, width=N, depth=L, temperature=0.1, num_samples=2, seed=1, init=(Ws0, np.ones((N, 2))))
    assert np.all(np.isfinite(again.f))
    gibbs_linear(X, Y, width=N, temperature=0.1, num_samples=2, init=(np.ones((N, 4)), np.ones((N, 2))))
    with pytest.raises(ValueError, match="init"):
        gibbs_linear(X, Y, width=N, depth=L, temperature=0.1, init=(Ws0[:2], np.ones((N, 2))))
    with pytest.raises(ValueError, match="init"):
        gibbs_linear(X, Y, width=N, depth=2, temperature=0.1, init=(np.ones((N, 4)), np.ones((N, 2))))
    for bad in (0, -1, 1.5, "2", True, None):
        with pytest.raises(ValueError, match="depth"):
            gibbs_linear(X, Y, width=N, depth=bad, temperature=0.1)
    # depth 1 is the one-layer sampler: same draws with or without the argument
    one = gibbs_linear(X, Y, width=N, temperature=0.1, num_samples=5, seed=4)
    np.testing.assert_array_equal(gibbs_linear(X, Y, width=N, depth=1, temperature=0.1, num_samples=5, seed=4).a,
                                  one.a)
    assert one.K.shape == (5, 1, 3, 3) and one.depth == 1


def test_sample_with_gibbs_gives_fcn_sites_from_the_exact_sampler():
    """``bnnzoo.sample(..., sampler="gibbs")``: chain c is gibbs_linear with seed SeedSequence([seed, c]) draw for draw,
    and the sites obey fcn's definitions (f = z_Lᵀa/N, z_l from the weights, q_a, mse, f_test)."""
    import bnnzoo
    from bnnzoo import azcompat

    task = bnnzoo.toy_task(P=8, y_neg=0.0, P_test=3, N0=16)
    idata = bnnzoo.sample("deep_linear", task, sampler="gibbs", num_chains=2, num_warmup=20, num_samples=30,
                          thinning=3, record=("z",), width=6, depth=2, progress=False)
    post = azcompat.get_group(idata, "posterior")
    assert post["a"].dims == ("chain", "draw", "neuron", "class") and post.sizes["draw"] == 10
    seed1 = int(np.random.SeedSequence([0, 1]).generate_state(1)[0])
    g = gibbs_linear(task, width=6, depth=2, temperature=0.01, num_samples=10, num_warmup=20, thin=3, seed=seed1,
                     store_W=True, X_test=task.X_test)
    np.testing.assert_allclose(post["a"].values[1], g.a, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(post["W2"].values[1], g.Ws[1], rtol=1e-6, atol=1e-7)
    z1 = np.einsum("cdni,pi->cdnp", post["W1"].values, task.X) / 4.0
    z2 = np.einsum("cdnk,cdkp->cdnp", post["W2"].values, z1) / np.sqrt(6)
    np.testing.assert_allclose(post["z1"].values, z1, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(post["z2"].values, z2, rtol=1e-4, atol=1e-5)
    f = np.einsum("cdnp,cdnk->cdpk", z2, post["a"].values) / 6
    np.testing.assert_allclose(post["f"].values, f, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(post["mse"].values, ((task.Y - f) ** 2).mean((-2, -1)), rtol=1e-4)
    np.testing.assert_allclose(post["q_a"].values, (post["a"].values ** 2).mean(-2), rtol=1e-5)
    pred = azcompat.get_group(idata, "predictions")
    np.testing.assert_allclose(pred["f"].values[1], g.f_test, rtol=1e-5, atol=1e-6)
    cfg = bnnzoo.run_config(idata)
    assert cfg["sampler"]["sampler"] == "gibbs" and cfg["model_kwargs"]["depth"] == 2
    assert azcompat.get_group(idata, "sample_stats")["n_steps"].values.max() == 3


def test_sample_with_gibbs_refuses_what_it_cannot_do():
    import bnnzoo

    task = bnnzoo.toy_task(P=8, y_neg=0.5)
    with pytest.raises(ValueError, match="linear fully-connected nets only"):
        bnnzoo.sample("sigmoidal", task, sampler="gibbs", num_chains=1, num_warmup=5, num_samples=5, width=4)
    with pytest.raises(ValueError, match="drop"):
        bnnzoo.sample("deep_linear", task, sampler="gibbs", num_chains=1, num_warmup=5, num_samples=5, width=4,
                      store="somewhere")
    with pytest.raises(ValueError, match="drop"):
        bnnzoo.sample("deep_linear", task, sampler="gibbs", num_chains=1, num_warmup=5, num_samples=5, width=4,
                      reparam=("readout", "data_space"))
