"""Three-layer erf network on the He₃ task: task normalisation, prior against the closed-form NNGP kernel, sampling
into ArviZ with named dims and trace plots, alignment rising with P, and the overlap diagnostics on a constructed
posterior whose answer is known."""

import math

import numpy as np
import pytest
import xarray as xr
from numpyro.infer import Predictive

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.diagnostics.alignment import (alignment, first_layer_overlaps, second_layer_overlaps,
                                          SPECIALIST_PRIOR_FRACTION)
from bnnzoo.models.three_layer import three_layer, three_layer_dims
from bnnzoo.tasks.hermite import he3, hermite_task

SAMPLE_KW = dict(num_chains=2, num_warmup=150, num_samples=100, progress=False, max_tree_depth=7,
                 dims=three_layer_dims(with_test=True), width1=16, width2=16, kappa=0.05)


def test_hermite_task_normalised():
    t = hermite_task(d=5, P=200_000, P_test=10, seed=3)
    w = np.array(t.meta["w_star"])
    assert abs(np.linalg.norm(w) - 1) < 1e-12
    y = t.Y[:, 0]
    z = t.X @ w
    se = 1 / math.sqrt(len(y))
    assert abs(y.mean()) < 5 * se and abs(y.var() - 1) < 5 * np.std(y**2) * se
    for g in (z, z**2 - 1):  # He₃ ⟂ polynomials of degree < 3
        assert abs(np.mean(y * g)) < 5 * se * math.sqrt(np.mean((y * g) ** 2))
    np.testing.assert_allclose(he3(np.array([0.0, 1.0, 2.0])), np.array([0, -2, 2]) / math.sqrt(6))


def _erf_kernel(S11, S22, S12):
    return (2 / math.pi) * np.arcsin(2 * S12 / np.sqrt((1 + 2 * S11) * (1 + 2 * S22)))


def test_prior_matches_nngp_kernel():
    """Prior covariance of f at three inputs vs the closed-form three-layer erf NNGP (docs/theory.md §6), standard readout:
    K = σ_a² E[erf erf](σ₂² E[erf erf](σ₁² x·x'/d)).  Finite widths N1 = N2 = 128 bias it by O(1/N) ≈ 1 %; the
    Monte-Carlo error over 4000 prior draws is ≈ 2 %; tolerance 5 MC standard errors + 0.01."""
    rng = np.random.default_rng(0)
    d = 6
    X = rng.standard_normal((3, d))
    X[2] = 0.5 * X[0] + 0.3 * X[2]
    s1, s2, sa = 1.3, 0.8, 1.5
    S = s1 * X @ X.T / d
    S = s2 * _erf_kernel(np.diag(S)[:, None], np.diag(S)[None], S)
    K = sa * _erf_kernel(np.diag(S)[:, None], np.diag(S)[None], S)
    import jax

    fs = []
    for k in range(4):
        pred = Predictive(three_layer, num_samples=1000, return_sites=["f"])
        fs.append(np.asarray(pred(jax.random.PRNGKey(k), X, None, num_outputs=1, width1=128, width2=128,
                                  sigma_w1=s1, sigma_w2=s2, sigma_a2=sa)["f"])[..., 0])
    f = np.concatenate(fs)
    prods = f[:, :, None] * f[:, None, :]
    emp, se = prods.mean(0), prods.std(0) / math.sqrt(len(f))
    assert np.all(np.abs(emp - K) < 5 * se + 0.01), (emp, K, se)
    # mean-field readout: the prior output variance is K / N2
    pred = Predictive(three_layer, num_samples=2000, return_sites=["f"])
    fm = np.asarray(pred(jax.random.PRNGKey(9), X, None, num_outputs=1, width1=128, width2=128, readout="meanfield",
                         sigma_w1=s1, sigma_w2=s2, sigma_a2=sa)["f"])[..., 0]
    assert abs(np.mean(fm[:, 0] ** 2) * 128 / K[0, 0] - 1) < 0.15


@pytest.fixture(scope="module")
def run_large_P():
    task = hermite_task(d=6, P=192, P_test=500, seed=1)
    return task, bnnzoo.sample("three_layer_erf", task, seed=0, **SAMPLE_KW)


def test_sample_dims_provenance_and_trace_plot(run_large_P):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    task, idata = run_large_P
    post = azcompat.get_group(idata, "posterior")
    assert list(post["W1"].dims) == ["chain", "draw", "neuron1", "input"]
    assert list(post["W2"].dims) == ["chain", "draw", "neuron2", "neuron1"]
    assert list(post["a"].dims) == ["chain", "draw", "neuron2", "class"]
    assert post["W1"].shape == (2, 100, 16, 6)
    assert "predictions" in azcompat.group_names(idata)
    cfg = bnnzoo.run_config(idata)
    assert cfg["model"] == "three_layer_erf" and cfg["model_kwargs"]["width1"] == 16
    azcompat.plot_trace(idata, var_names=["W1", "mse"], coords={"neuron1": [0, 1], "input": [0]})
    plt.close("all")


def test_alignment_rises_with_P(run_large_P):
    """Small sweep at d = 6: A_f at P = 6 is near 0, at P = 192 it is well above (0.75 when written)."""
    task, idata = run_large_P
    small = hermite_task(d=6, P=6, P_test=500, seed=1)
    A_small = alignment(bnnzoo.sample("three_layer_erf", small, seed=0, **SAMPLE_KW))
    A_large = alignment(idata)
    assert A_small.mean_predictor < 0.3
    assert A_large.mean_predictor > A_small.mean_predictor + 0.3
    # the per-draw alignments agree with the mean predictor's (A is linear in f)
    assert abs(A_large.draws.mean() - A_large.mean_predictor) < 1e-6
    ov = first_layer_overlaps(idata, task.meta["w_star"])
    assert ov.overlaps.shape == (2, 100, 16) and ov.threshold == 3.0
    s2 = second_layer_overlaps(idata, task.meta["w_star"], max_test=300)
    assert s2.r3.shape == (2, 100, 16) and np.all(np.abs(s2.r3) <= 1 + 1e-9)


def test_overlap_diagnostics_on_constructed_posterior():
    """W1 with neuron 0 = 4 w* (a specialist) and the rest orthogonal to w*; linear φ and W2 = 1 make every h²_k
    proportional to Σ_j W1_j·x, so r1 = corr(h², w*·x) and r3 = corr(h², He₃) are known."""
    rng = np.random.default_rng(0)
    d, N1, N2 = 5, 4, 3
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    B = rng.standard_normal((N1, d))
    B -= np.outer(B @ w, w)  # orthogonal to w*
    W1 = 0.1 * B
    W1[0] = 4 * w
    W2 = np.ones((N2, N1))
    Xt = rng.standard_normal((4000, d))
    post = xr.Dataset({"W1": (("chain", "draw", "neuron1", "input"), W1[None, None]),
                       "W2": (("chain", "draw", "neuron2", "neuron1"), W2[None, None])})
    idata = azcompat.make_idata({"posterior": post})
    ov = first_layer_overlaps(idata, w, sigma_w1=1.0)
    np.testing.assert_allclose(ov.overlaps[0, 0], [4, 0, 0, 0], atol=1e-12)
    assert ov.n_specialists[0, 0] == 1 and ov.chance == pytest.approx(N1 * SPECIALIST_PRIOR_FRACTION)
    s2 = second_layer_overlaps(idata, w, X_test=Xt, activation="linear", max_test=len(Xt))
    h = Xt @ W1.sum(0)
    r1 = np.corrcoef(h, Xt @ w)[0, 1]
    np.testing.assert_allclose(s2.r1[0, 0], r1, rtol=1e-6)
    assert np.all(np.abs(s2.r3) < 0.1)  # He₃ ⟂ linear functions (finite-sample noise ~ 1/√4000)
    # alignment of a known predictor: f = 0.5 y → A = 0.5
    y = he3(Xt @ w)[:, None]
    from bnnzoo.diagnostics.alignment import alignment_from_arrays

    assert alignment_from_arrays(0.5 * y, y).mean_predictor == pytest.approx(0.5)
