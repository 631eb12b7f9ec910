"""FCN model: validation, named sites/dims, and the prior against its analytic moments."""

import math

import jax
import numpy as np
import pytest
from numpyro.infer import MCMC, NUTS, Predictive

from bnnzoo.models import check_fcn_args, default_sigma_a2, fcn, fcn_dims, get_entry, list_entries
from bnnzoo.testing import assert_mean_matches
from bnnzoo.tasks import toy_task

ALPHA2 = math.pi / 4  # alpha^2 for the paper's sigmoid 1/2[1 + erf(alpha z)], alpha = sqrt(pi)/2


def second_moment(activation, q):
    """E[phi(z)^2] for z ~ N(0, q): closed forms (docs/theory.md §6), independent of the model code."""
    if activation == "linear":
        return q
    if activation == "relu":
        return q / 2
    if activation == "sigmoid":
        return 0.25 + 0.25 * (2 / math.pi) * math.asin(2 * ALPHA2 * q / (1 + 2 * ALPHA2 * q))
    raise ValueError(activation)


@pytest.mark.parametrize("bad, match", [
    (dict(width=0), "width"),
    (dict(width=2.5), "width"),
    (dict(depth=0), "depth"),
    (dict(activation="tanh"), "activation"),
    (dict(readout="ntk"), "readout"),
    (dict(temperature=0.0), "temperature"),
    (dict(temperature=float("nan")), "temperature"),
    (dict(sigma_a2=-1.0), "sigma_a2"),
    (dict(sigma_w2=0.0), "sigma_w2"),
    (dict(record=("h1",)), "record"),
    (dict(record=("z3",)), "record"),
])
def test_fcn_validation_names_the_argument(bad, match):
    t = toy_task(P=6, N0=8)
    kw = dict(width=4) | bad
    with pytest.raises(ValueError, match=match):
        check_fcn_args(t.X, t.Y, **kw)


def test_fcn_validation_data():
    t = toy_task(P=6, N0=8)
    with pytest.raises(ValueError, match="Y must have shape"):
        check_fcn_args(t.X, t.Y[:3], width=2)
    with pytest.raises(ValueError, match="NaN"):
        check_fcn_args(t.X * np.nan, t.Y, width=2)
    with pytest.raises(ValueError, match="num_outputs"):
        check_fcn_args(t.X, None, width=2)
    with pytest.raises(ValueError, match="X_test"):
        check_fcn_args(t.X, t.Y, width=2, X_test=np.ones((2, 3)))


def test_default_sigma_a2_is_the_papers_rule():
    assert default_sigma_a2("sigmoid", "nonlazy", 400, 3) == pytest.approx(1 / 400)
    assert default_sigma_a2("linear", "nonlazy", 400, 1) == pytest.approx(1 / 400)
    assert default_sigma_a2("relu", "nonlazy", 400, 2) == pytest.approx(1 / 20)
    assert default_sigma_a2("relu", "lazy", 400, 2) == 1.0


def test_zoo_entries_declare_observables():
    names = {e.name for e in list_entries()}
    assert {"deep_linear", "sigmoidal", "relu", "deep_linear_lazy", "sigmoidal_lazy", "relu_lazy"} <= names
    e = get_entry("sigmoidal")
    assert e.defaults["activation"] == "sigmoid" and e.task_defaults["y_neg"] == 0.5
    assert any(o.name == "a" and o.theory for o in e.observables)
    with pytest.raises(ValueError, match="known entries"):
        get_entry("nope")


def test_sites_shapes_and_dims():
    t = toy_task(P=6, N0=8)
    tr = jax.jit(lambda k: Predictive(fcn, num_samples=2)(k, t.X, t.Y, width=5, depth=3,
                                                           record=("z",), X_test=t.X[:2]))(jax.random.PRNGKey(0))
    dims = fcn_dims(3, ("z",), with_test=True)
    assert tr["W1"].shape == (2, 5, 8) and tr["W3"].shape == (2, 5, 5) and tr["a"].shape == (2, 5, 3)
    assert tr["z2"].shape == (2, 5, 6) and tr["f"].shape == (2, 6, 3) and tr["f_test"].shape == (2, 2, 3)
    for site in ("W1", "W2", "a", "f", "z1", "z3", "f_test", "q_a", "mse"):
        assert len(dims[site]) == tr[site].ndim - 1, site
    np.testing.assert_allclose(tr["f_test"], tr["f"][:, :2], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("activation, readout, depth", [
    ("linear", "nonlazy", 1), ("relu", "nonlazy", 1), ("sigmoid", "nonlazy", 1), ("sigmoid", "lazy", 1),
    ("linear", "lazy", 2),
])
def test_prior_moments_match_closed_form(activation, readout, depth):
    """With Y=None the model is the prior: weights, outputs and noisy targets have the analytic variances."""
    N, P, S = 20, 4, 20000
    t = toy_task(P=P, N0=10)
    s2a, s2w, T = 0.3, 1.7, 0.05
    draws = Predictive(fcn, num_samples=S)(jax.random.PRNGKey(1), t.X, None, num_outputs=2, width=N,
                                            depth=depth, activation=activation, readout=readout,
                                            temperature=T, sigma_a2=s2a, sigma_w2=s2w)
    np.testing.assert_allclose(np.var(draws["W1"]), s2w, rtol=0.01)
    np.testing.assert_allclose(np.var(draws["a"]), s2a, rtol=0.02)
    q = s2w * 1.0  # x.x/N0 = 1 on the toy task
    for _ in range(depth - 1):
        q = s2w * second_moment(activation, q)
    scale2 = 1 / N**2 if readout == "nonlazy" else 1 / N
    var_f = scale2 * N * s2a * second_moment(activation, q)
    noise = T / N if readout == "nonlazy" else T
    f = np.asarray(draws["f"])[:, 0, 0]
    y = np.asarray(draws["y"])[:, 0, 0]
    # sd of a sample variance of a (heavy-tailed) product variable: generous 6 % (~5 standard errors at S = 20000)
    np.testing.assert_allclose(np.mean(f), 0.0, atol=5 * math.sqrt(var_f / S))
    np.testing.assert_allclose(np.var(f), var_f, rtol=0.06)
    np.testing.assert_allclose(np.var(y), var_f + noise, rtol=0.06)


def test_nuts_samples_the_prior_when_Y_is_None():
    """NUTS on the model with Y=None explores the prior: E[a^2] = sigma_a^2 and E[W^2] = sigma_w^2 (ESS-aware)."""
    t = toy_task(P=3, N0=4)
    mc = MCMC(NUTS(fcn), num_warmup=300, num_samples=600, num_chains=2, chain_method="vectorized",
              progress_bar=False)
    mc.run(jax.random.PRNGKey(0), t.X, None, num_outputs=2, width=3, activation="sigmoid", temperature=0.1,
           sigma_a2=0.5, sigma_w2=2.0)
    s = mc.get_samples(group_by_chain=True)
    assert_mean_matches(np.asarray(s["a"]) ** 2, 0.5, name="E[a^2]")
    assert_mean_matches(np.asarray(s["W1"]) ** 2, 2.0, name="E[W^2]")
