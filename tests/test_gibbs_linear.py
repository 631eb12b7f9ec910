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
