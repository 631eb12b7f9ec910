"""NUTS (bnnzoo.sample) against the exact blocked Gibbs sampler of the one-hidden-layer linear net.

Permutation- and sign-invariant observables are compared by ESS-aware z-tests (bnnzoo.testing): the posterior-mean
output f, the learned kernel K1 = zᵀz/N and the readout second moment aᵀa/N.  The Gibbs chain's own Monte-Carlo
error enters the standard error.  A wrong likelihood scaling (T vs T/N), prior variance or readout prefactor moves
these means by many standard errors.
"""

import numpy as np
import pytest

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.inference.gibbs_linear import gibbs_linear
from bnnzoo.tasks import toy_task
from bnnzoo.testing import assert_mean_matches, gaussian_task, mcse_mean



SETTINGS = {
    "toy_m3_nonlazy_smallT": (lambda: toy_task(P=6, N0=8, y_neg=0.0), dict(width=6, temperature=0.05)),
    "gauss_m1_lazy_largeT": (lambda: gaussian_task(5, 4, 1, 1), dict(width=5, temperature=0.5, readout="lazy")),
    "gauss_m2_nonlazy_sa2": (lambda: gaussian_task(4, 6, 2, 2),
                             dict(width=4, temperature=0.2, sigma_a2=1.0, sigma_w2=0.5)),
}


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_nuts_matches_exact_gibbs(name):
    make, kw = SETTINGS[name]
    task = make()
    idata = bnnzoo.sample("deep_linear", task, num_chains=2, num_warmup=500, num_samples=1500, seed=3,
                          record=("z1",), progress=False, sampler="nuts", **kw)
    post = azcompat.get_group(idata, "posterior")
    N = kw["width"]
    z = post["z1"].values                                     # (chain, draw, neuron, point)
    a = post["a"].values                                      # (chain, draw, neuron, class)
    nuts = {"f": post["f"].values,
            "K1": np.einsum("cdnp,cdnq->cdpq", z, z) / N,
            "U": np.einsum("cdnk,cdnl->cdkl", a, a) / N}
    sa2 = bnnzoo.run_config(idata)["model_kwargs"]["sigma_a2"]
    g = gibbs_linear(task.X, task.Y, num_samples=20000, num_warmup=500, seed=11,
                     **dict(kw, sigma_a2=sa2))
    gibbs = {"f": g.f, "K1": g.K1, "U": g.U}
    for obs in ("f", "K1", "U"):
        truth, truth_se, _ = mcse_mean(gibbs[obs][None])
        assert_mean_matches(nuts[obs], truth, truth_se, name=f"{name}: {obs}")
