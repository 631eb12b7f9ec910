"""NUTS (bnnzoo.sample) against the exact blocked Gibbs sampler of the *deep* (L = 2, 3) linear net.

Same machinery as test_exact_oracle.py (this folder): permutation- and sign-invariant observables — the posterior-mean output
f, the readout second moment U = aᵀa/N and the kernel K_l = z_lᵀz_l/N of every hidden layer — are z-tested with
ESS-aware standard errors (bnnzoo.testing), the Gibbs chain's own Monte-Carlo error included, Bonferroni-corrected per
observable.  The settings cover depth 2 and 3, m = 1 and 3 outputs, σ_w² ≠ 1 (enters every layer), a lazy readout.

Power: the same z-test rejects a Gibbs chain one layer too shallow and one with σ_a² 1.3 × too large (asserted: the
worst observable's |z| exceeds its Bonferroni threshold by > 1).  Measured (NUTS 2 × 1500 draws; Gibbs 20 000 draws,
wrong chains 5000): correct chain max |z| 2.1 / 2.7 / 2.3 (toy L = 2, Gaussian L = 3, lazy L = 2; thresholds 3.3–4.2);
depth L − 1: 31 / 5.9 / 13; σ_a² × 1.3: 18 / 19 / 21.  Mutated samplers were rejected too (measured once on a toy
L = 3 setting, P = 6, N = 6, T = 0.1: effective readouts multiplied in the wrong order max |z| 72; layer inputs
z_{l−1} not refreshed after redrawing W_{l−1}: 287).
Each setting takes 12–21 s on a busy 2-core CPU (NUTS dominates).
"""

import numpy as np
import pytest
from scipy.stats import norm

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.inference.gibbs_linear import gibbs_linear
from bnnzoo.tasks import toy_task
from bnnzoo.testing import assert_mean_matches, gaussian_task, mcse_mean, z_test



SETTINGS = {
    "toy_m3_nonlazy_L2": (lambda: toy_task(P=6, N0=8, y_neg=0.0), dict(width=8, temperature=0.05, depth=2)),
    "gauss_m1_nonlazy_L3_sw2": (lambda: gaussian_task(5, 8, 1, 1),
                                dict(width=6, temperature=0.5, depth=3, sigma_w2=0.7)),
    "gauss_m2_lazy_L2": (lambda: gaussian_task(4, 6, 2, 2),
                         dict(width=6, temperature=0.3, depth=2, readout="lazy")),
}


def _gibbs_observables(task, kw, num_samples, seed=11):
    g = gibbs_linear(task.X, task.Y, num_samples=num_samples, num_warmup=500, seed=seed, **kw)
    obs = {"f": g.f, "U": g.U}
    obs.update({f"K{l + 1}": g.K[:, l] for l in range(g.depth)})
    return obs


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_nuts_matches_exact_deep_gibbs(name):
    make, kw = SETTINGS[name]
    task = make()
    L, N = kw["depth"], kw["width"]
    idata = bnnzoo.sample("deep_linear", task, num_chains=2, num_warmup=500, num_samples=1500, seed=3,
                          record=("z",), progress=False, sampler="nuts", **kw)
    post = azcompat.get_group(idata, "posterior")
    a = post["a"].values                                      # (chain, draw, neuron, class)
    nuts = {"f": post["f"].values, "U": np.einsum("cdnk,cdnl->cdkl", a, a) / N}
    for l in range(1, L + 1):
        z = post[f"z{l}"].values                              # (chain, draw, neuron, point)
        nuts[f"K{l}"] = np.einsum("cdnp,cdnq->cdpq", z, z) / N
    cfg = bnnzoo.run_config(idata)["model_kwargs"]
    assert cfg["depth"] == L
    sa2 = cfg["sigma_a2"]
    np.testing.assert_allclose(sa2, 1.0 if kw.get("readout") == "lazy" else len(task.X) ** (-1 / L))

    gibbs = _gibbs_observables(task, dict(kw, sigma_a2=sa2), 20000)
    assert set(gibbs) == set(nuts)
    for obs in nuts:
        truth, truth_se, _ = mcse_mean(gibbs[obs][None])
        assert_mean_matches(nuts[obs], truth, truth_se, name=f"{name}: {obs}")

    # power: a chain one layer too shallow, and one with σ_a² 1.3 × too large, are rejected by a wide margin
    for wrong in (dict(kw, sigma_a2=sa2, depth=L - 1), dict(kw, sigma_a2=1.3 * sa2)):
        g = _gibbs_observables(task, wrong, 5000)
        excess = []
        for obs in set(g) & set(nuts):
            truth, truth_se, _ = mcse_mean(g[obs][None])
            res = z_test(nuts[obs], truth, truth_se)
            excess.append(res.max_abs_z - norm.isf(1e-3 / (2 * res.z.size)))
        assert max(excess) > 1.0, f"{name}: wrong chain {wrong} not rejected (max |z| − threshold {max(excess):.2f})"
