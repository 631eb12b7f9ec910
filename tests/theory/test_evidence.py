"""Log evidence of the one-hidden-layer linear net (bnnzoo.theory.evidence) against independent computations.

* Brute-force quadrature at the tiniest sizes (P = N0 = 2, N = 1 or 2, m = 1 or 2): a Gauss–Hermite product rule
  over every hidden weight W with the readout a integrated out exactly — the other order of integration than the
  module's (W out, then the readout's Gram matrix).  The reference's own error is taken as δ, its change when the
  nodes per axis drop by a quarter (required < 1e-4, between 1e-8 and 5e-5 here); tolerance 2δ + 1e-6 + 4 × the
  s.e. (the s.e. is ~1e-15 for the m = 1 quadrature, ~2e-3 for importance sampling).
* Plain Monte Carlo over every weight of the NumPyro model itself (prior draws from ``Predictive``, likelihood from
  ``numpyro.infer.log_likelihood``: the model's own variances, scalings and normalising constant), 1e6 draws:
  |difference| ≤ 4 × the combined s.e. (delta method; a two-sided 4σ band, false-alarm rate 6e-5 — the seeds are
  fixed, so the outcome is deterministic).
* Lazy readout, N → ∞: the GP evidence Σ_r log N(Y_r; 0, σ_a² σ_w² K0 + T I), with the first correction derived in
  closed form, log Z_N − log Z_GP = c/N + O(1/N²) (``gp_correction``): tolerance 30/N² (m = 1, exact quadrature;
  the remainder is ≈ 12/N² at these settings) and 4 s.e. + 100/N² (m = 3; remainder ≈ 58/N²), both shrinking with N.
* Non-lazy readout, large N: the posterior mean of aᵀa/N approaches the saddle point U
  (:func:`bnnzoo.theory.linear.linear_saddle_point`) to O(1/N): tolerance 2/N relative (≈ 0.8/N measured).
"""

import math

import jax
import numpy as np
import pytest
from numpyro.infer import Predictive, log_likelihood
from scipy.stats import multivariate_normal

from bnnzoo.models.fcn import fcn
from bnnzoo.tasks import toy_task
from bnnzoo.theory import LinearEvidence, linear_evidence, linear_exact_m1, linear_saddle_point


def gauss_hermite_reference(X, Y, *, width, readout, temperature, sigma_a2, sigma_w2, nodes):
    """log p(Y | X) by a Gauss–Hermite product rule over the N × N0 hidden weights; given W, each class column
    Y_r ~ N(0, c² σ_a² zᵀz + v I) with z = W Xᵀ/√N0 (the readout integrated out)."""
    P, N0 = X.shape
    N = width
    c2 = 1.0 / N**2 if readout == "nonlazy" else 1.0 / N
    v = temperature / N if readout == "nonlazy" else temperature
    x, w = np.polynomial.hermite.hermgauss(nodes)
    grids = np.meshgrid(*([x] * (N * N0)), indexing="ij")
    W = math.sqrt(2 * sigma_w2) * np.stack([g.ravel() for g in grids], -1).reshape(-1, N, N0)
    logw = sum(np.log(m).ravel() for m in np.meshgrid(*([w] * (N * N0)), indexing="ij")) \
        - 0.5 * N * N0 * math.log(math.pi)
    z = W @ X.T / math.sqrt(N0)  # (n, N, P)
    C = c2 * sigma_a2 * np.swapaxes(z, 1, 2) @ z + v * np.eye(P)
    _, logdet = np.linalg.slogdet(C)
    sol = np.linalg.solve(C, np.broadcast_to(Y, (len(C),) + Y.shape))
    ll = -0.5 * np.sum(Y * sol, axis=(1, 2)) - 0.5 * Y.shape[1] * (logdet + P * math.log(2 * math.pi))
    tot = logw + ll
    mx = tot.max()
    return float(mx + math.log(np.sum(np.exp(tot - mx))))


def tiny_data(m, seed=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((2, 2)), rng.standard_normal((2, m))


@pytest.mark.parametrize("width,m,readout,T,nodes", [(1, 1, "nonlazy", 0.3, 160), (1, 2, "lazy", 0.3, 160),
                                                     (2, 1, "lazy", 1.0, 32), (2, 2, "nonlazy", 1.0, 32)])
def test_matches_brute_force_quadrature_over_every_hidden_weight(width, m, readout, T, nodes):
    X, Y = tiny_data(m)
    kw = dict(width=width, readout=readout, temperature=T, sigma_a2=0.7, sigma_w2=1.3)
    ref = gauss_hermite_reference(X, Y, nodes=nodes, **kw)
    coarse = gauss_hermite_reference(X, Y, nodes=3 * nodes // 4, **kw)
    ref_err = abs(ref - coarse)
    assert ref_err < 1e-4, f"the reference itself has not converged: {ref} vs {coarse}"
    ev = linear_evidence(X, Y, **kw)
    assert isinstance(ev, LinearEvidence)
    assert ev.method == ("quadrature" if m == 1 else "importance")
    tol = 2 * ref_err + 1e-6 + 4 * ev.se
    assert abs(ev.value - ref) < tol, f"{ev.value} vs brute force {ref} (tolerance {tol:.2g})"
    if m == 1:  # the importance sampler on the same problem
        imp = linear_evidence(X, Y, method="importance", **kw)
        assert abs(imp.value - ref) < 2 * ref_err + 1e-6 + 4 * imp.se


def test_default_sigma_a2_is_the_models_rule():
    X, Y = tiny_data(1)
    P = X.shape[0]
    for readout, s2a in (("nonlazy", 1.0 / P), ("lazy", 1.0)):
        ev = linear_evidence(X, Y, width=1, readout=readout, temperature=0.3)
        assert ev.sigma_a2 == s2a
        ref = gauss_hermite_reference(X, Y, width=1, readout=readout, temperature=0.3, sigma_a2=s2a, sigma_w2=1.0,
                                      nodes=160)
        assert abs(ev.value - ref) < 1e-5


def model_monte_carlo(X, Y, kw, n=1_000_000, seed=0):
    """log mean over prior draws of the model's own likelihood, its delta-method s.e."""
    m = Y.shape[1]
    prior = Predictive(fcn, num_samples=n, return_sites=["W1", "a"], parallel=True)(
        jax.random.PRNGKey(seed), X, None, num_outputs=m, **kw)
    ll = np.asarray(log_likelihood(fcn, prior, X, Y, **kw)["y"], dtype=np.float64).sum(axis=(1, 2))
    w = np.exp(ll - ll.max())
    return float(ll.max() + math.log(w.mean())), float(w.std() / (w.mean() * math.sqrt(n)))


@pytest.mark.parametrize("m,kw", [
    (2, dict(width=2, readout="nonlazy", temperature=1.0, sigma_a2=0.8, sigma_w2=1.3)),
    (1, dict(width=3, readout="lazy", temperature=0.5)),
])
def test_matches_plain_monte_carlo_of_the_numpyro_model(m, kw):
    X, Y = tiny_data(m, seed=4)
    ref, ref_se = model_monte_carlo(X, Y, kw)
    ev = linear_evidence(X, Y, **kw)
    tol = 4 * math.hypot(ref_se, ev.se)
    assert abs(ev.value - ref) < tol, f"{ev.value} ± {ev.se} vs model Monte Carlo {ref} ± {ref_se}"


def gp_log_evidence(X, Y, sigma_a2, sigma_w2, T):
    K = sigma_a2 * sigma_w2 * X @ X.T / X.shape[1] + T * np.eye(len(X))
    return sum(multivariate_normal(np.zeros(len(X)), K).logpdf(Y[:, r]) for r in range(Y.shape[1]))


def gp_correction(Y, gamma, T):
    """c in log Z_N − log Z_GP = c/N + O(1/N²) for the lazy linear net on inputs with K0 = I, γ = σ_a² σ_w².

    With A = N σ_a² (I + E), E[E] = 0, E[E_rs E_tu] = (δ_rt δ_su + δ_ru δ_st)/N, and C = c0 I + γE, c0 = γ + T:
    log p(Y | A) = ℓ0 + tr(G E) + Q(E) + O(E³), G = −(P/2)(γ/c0) I + (γ/2c0²) YᵀY,
    Q(E) = (P/4)(γ/c0)² tr E² − (γ²/2c0³) tr(E² YᵀY), so c = N E[Q] + N E[tr(GE)²]/2
    = (P/4)(γ/c0)² m(m + 1) − (γ²/2c0³)(m + 1) tr YᵀY + tr G².
    """
    P, m = Y.shape
    c0 = gamma + T
    B = Y.T @ Y
    G = -0.5 * P * (gamma / c0) * np.eye(m) + 0.5 * (gamma / c0**2) * B
    return (0.25 * P * (gamma / c0) ** 2 * m * (m + 1) - 0.5 * gamma**2 / c0**3 * (m + 1) * np.trace(B)
            + np.trace(G @ G))


def test_lazy_wide_limit_is_the_gp_evidence():
    task = toy_task(P=6, y_neg=0.0)  # K0 = I
    T = 0.1
    # m = 1, deterministic quadrature: the remainder after the 1/N term is O(1/N^2)
    Y1 = task.Y[:, :1]
    z1, c1 = gp_log_evidence(task.X, Y1, 1.0, 1.0, T), gp_correction(Y1, 1.0, T)
    for N in (100, 1000, 10_000):
        d = linear_evidence(task.X, Y1, width=N, readout="lazy", temperature=T).value - z1
        assert abs(d - c1 / N) < 30 / N**2, f"N={N}: log Z_N − log Z_GP = {d:.3g}, expected {c1 / N:.3g}"
    assert abs(d) < 3e-4  # and the limit itself
    # m = 3 through the importance sampler
    z3, c3 = gp_log_evidence(task.X, task.Y, 1.0, 1.0, T), gp_correction(task.Y, 1.0, T)
    for N in (100, 1000):
        ev = linear_evidence(task, width=N, readout="lazy", temperature=T)
        d = ev.value - z3
        assert abs(d - c3 / N) < 4 * ev.se + 100 / N**2, f"N={N}: {d:.4g} ± {ev.se:.2g}, expected {c3 / N:.4g}"


def test_nonlazy_posterior_gram_approaches_the_saddle_point():
    task = toy_task(P=6, y_neg=0.0)
    N, T = 1000, 0.1
    ev = linear_evidence(task, width=N, temperature=T)
    sp = linear_saddle_point(task, temperature=T)
    assert np.max(np.abs(ev.U - sp.U)) < 2.0 / N * np.max(np.abs(sp.U))
    # and for m = 1 the quadrature's U is the exact finite-N moment of linear_exact_m1
    Y1 = task.Y[:, :1]
    q = linear_evidence(task.X, Y1, width=7, temperature=T)
    np.testing.assert_allclose(q.U, linear_exact_m1(task.X, Y1, width=7, temperature=T).U, rtol=1e-6)


@pytest.mark.parametrize("kw,match", [
    (dict(width=0), "width"),
    (dict(width=2.5), "width"),
    (dict(width=2, depth=2), "depth"),
    (dict(width=2, activation="relu"), "activation"),
    (dict(width=2, readout="ntk"), "readout"),
    (dict(width=2, temperature=0.0), "temperature"),
    (dict(width=2, sigma_a2=-1.0), "sigma_a2"),
    (dict(width=2, sigma_w2=float("nan")), "sigma_w2"),
    (dict(width=2, likelihood=False), "likelihood"),
    (dict(width=2, num_outputs=3), "num_outputs"),
    (dict(width=2, record=("q",)), "record"),
    (dict(width=2, method="exact"), "method"),
    (dict(width=2, num_draws=10), "num_draws"),
    (dict(width=2, num_nodes=5), "num_nodes"),
    (dict(width=2, seed=-1), "seed"),
])
def test_bad_arguments_are_refused_in_one_line(kw, match):
    X, Y = tiny_data(1)
    with pytest.raises(ValueError, match=match) as err:
        linear_evidence(X, Y, **kw)
    assert "\n" not in str(err.value)


def test_bad_data_and_method_combinations_are_refused():
    X, Y = tiny_data(2)
    with pytest.raises(ValueError, match="Y is required"):
        linear_evidence(X, width=2)
    with pytest.raises(ValueError, match="Y must have shape"):
        linear_evidence(X, Y[:1], width=2)
    with pytest.raises(ValueError, match="quadrature"):
        linear_evidence(X, Y, width=2, method="quadrature")
    ev = linear_evidence(X, Y, width=2, temperature=1.0, num_draws=2000)
    assert LinearEvidence.from_dataset(ev.to_dataset()).value == ev.value
    # the model's other keywords are accepted and leave the evidence unchanged
    same = linear_evidence(X, Y, width=2, temperature=1.0, num_draws=2000, num_outputs=2, X_test=X, record=("z1",))
    assert same.value == ev.value
