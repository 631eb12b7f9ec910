"""ChEES-HMC (bnnzoo.inference.chees, ``sample(..., sampler="chees")``, and its SNAPER-criterion variant
``sampler="snaper"``) samples the posterior exactly: closed-form Gaussian and half-normal targets, the exact Gibbs
oracle of the linear net; SNAPER's principal component is the leading eigenvector of a known covariance; the state
survives a checkpoint."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.inference.chees import ChEES, halton, trajectory_growth
from bnnzoo.inference.chunked import run_chunked
from bnnzoo.inference.store import RunStore
from bnnzoo.inference.gibbs_linear import gibbs_linear
from bnnzoo.tasks import toy_task
from bnnzoo.testing import assert_mean_matches, mcse_mean

SCALES = np.geomspace(0.01, 10.0, 12)          # a thousandfold spread: the diagonal mass has to be learned
MEANS = np.linspace(-3.0, 3.0, 12)


def _target(X, Y=None, scales=None, means=None):
    numpyro.sample("w", dist.Normal(means, scales).to_event(1))
    numpyro.sample("s", dist.HalfNormal(2.0))          # a constrained site: the log-Jacobian enters U


def test_halton_points():
    np.testing.assert_allclose(np.asarray(halton(np.arange(1, 8))), [1 / 2, 1 / 4, 3 / 4, 1 / 8, 5 / 8, 3 / 8, 7 / 8])


@pytest.mark.parametrize("sampler", ["chees", "snaper"])
def test_closed_form_moments(sampler):
    t = toy_task(P=4, N0=5, ratios=(0.5, 0.5))
    idata = bnnzoo.sample(_target, t, sampler=sampler, num_chains=8, num_warmup=400, num_samples=500, seed=2,
                          progress=False, scales=SCALES, means=MEANS)
    post = azcompat.get_group(idata, "posterior")
    ss = azcompat.get_group(idata, "sample_stats")
    w, s = post["w"].values, post["s"].values
    assert_mean_matches(w, MEANS, name="E[w]")
    assert_mean_matches(((w - MEANS) / SCALES) ** 2, np.ones(12), name="Var[w]/σ²")
    assert_mean_matches(s, 2.0 * np.sqrt(2 / np.pi), name="E[s] (half-normal)")
    assert_mean_matches(s**2, 4.0, name="E[s²] (half-normal)")
    # tuned, then fixed: one step size for every chain and draw; no divergences; mass learned (few steps per draw)
    assert np.unique(ss["step_size"].values).size == 1
    assert int(ss["diverging"].values.sum()) == 0
    assert ss["n_steps"].values.mean() < 30, "the diagonal mass was not adapted (a 1000x scale spread needs it)"
    assert bnnzoo.run_config(idata)["engine"]["trajectory_growth"] < 2.0      # tuning settled: no warning
    _, _, ess = mcse_mean(w)
    assert ess.min() > 500                     # 4000 draws: far better than random-walk mixing would give


@pytest.mark.parametrize("sampler, reparam", [
    ("chees", ()), ("snaper", ()), pytest.param("chees", ("readout", "data_space"), marks=pytest.mark.slow),
    pytest.param("snaper", ("readout", "data_space"), marks=pytest.mark.slow)])
@pytest.mark.filterwarnings("ignore:.*the trajectory length had not settled")  # T drifts on this net
def test_matches_exact_gibbs_linear_net(sampler, reparam):
    """The one-hidden-layer linear net: f, K1 = zᵀz/N and aᵀa/N against the exact Gibbs sampler (weight space, and
    with the readout integrated out and the first layer sampled in data space)."""
    task = toy_task(P=6, N0=8, y_neg=0.0)
    kw = dict(width=6, temperature=0.05)
    idata = bnnzoo.sample("deep_linear", task, sampler=sampler, num_chains=4, num_warmup=500, num_samples=1000,
                          seed=3, record=("z1",), progress=False, reparam=reparam, **kw)
    post = azcompat.get_group(idata, "posterior")
    z, a, N = post["z1"].values, post["a"].values, kw["width"]
    ours = {"f": post["f"].values, "K1": np.einsum("cdnp,cdnq->cdpq", z, z) / N,
            "U": np.einsum("cdnk,cdnl->cdkl", a, a) / N}
    sa2 = bnnzoo.run_config(idata)["model_kwargs"]["sigma_a2"]
    g = gibbs_linear(task.X, task.Y, num_samples=20000, num_warmup=500, seed=11, **dict(kw, sigma_a2=sa2))
    for obs, ref in (("f", g.f), ("K1", g.K1), ("U", g.U)):
        truth, truth_se, _ = mcse_mean(ref[None])
        assert_mean_matches(ours[obs], truth, truth_se, name=f"{sampler} {reparam} vs Gibbs: {obs}")


def _correlated(X=None, Y=None, scale_tril=None):
    numpyro.sample("x", dist.MultivariateNormal(jnp.zeros(scale_tril.shape[0]), scale_tril=scale_tril))


def test_snaper_learns_the_principal_component():
    """A Gaussian with a known covariance Σ (eigenvalues e^0 … e^3, random rotation, scales spread 30-fold): after
    warm-up SNAPER's direction is the leading eigenvector of the whitened covariance M^{1/2} Σ M^{1/2} (M⁻¹ the
    kernel's own diagonal mass), |cos| > 0.95, and the run's moments match Σ."""
    rng = np.random.default_rng(0)
    D = 8
    q, r = np.linalg.qr(rng.normal(size=(D, D)))
    q *= np.sign(np.diag(r))
    scales = np.geomspace(0.1, 3.0, D)
    cov = scales[:, None] * ((q * np.exp(np.linspace(0.0, 3.0, D))) @ q.T) * scales[None, :]
    tril = jnp.asarray(np.linalg.cholesky(cov), jnp.float32)
    kernel = ChEES(_correlated, criterion="snaper")
    warm = 1000
    state = kernel.init(jax.random.split(jax.random.PRNGKey(1), 16), warm, None, (None, None), dict(scale_tril=tril))
    step = jax.jit(lambda s: kernel.sample(s, (None, None), dict(scale_tril=tril)))
    for _ in range(warm):
        state = step(state)
    ad = state.adapt_state
    s = 1.0 / np.sqrt(np.asarray(ad.inv_mass, float))
    white = s[:, None] * cov * s[None, :]
    lead = np.linalg.eigh(white)[1][:, -1]
    pc = np.asarray(ad.pc, float)
    cos = abs(pc @ lead) / np.linalg.norm(pc)
    assert cos > 0.95, f"SNAPER's principal component is off the leading eigenvector: |cos| = {cos:.3f}"
    draws = []
    for _ in range(500):
        state = step(state)
        draws.append(np.asarray(state.z["x"]))
    x = np.stack(draws, 1)                                   # (chain, draw, D)
    assert_mean_matches(x, np.zeros(D), name="E[x]")
    iu = np.triu_indices(D)
    prods = x[..., iu[0]] * x[..., iu[1]]
    assert_mean_matches(prods, cov[iu], name="E[x xᵀ] = Σ")


def test_checkpointed_state_resumes_bit_for_bit(tmp_path):
    """Stop after 3 blocks, resume from the saved state: the same draws as one uninterrupted run."""
    t = toy_task(P=5, N0=9, y_neg=0.5)
    kw = bnnzoo.models.get_entry("sigmoidal").kwargs(width=3, temperature=0.05)

    def run(store, **extra):
        kernel = ChEES(bnnzoo.models.fcn)
        post = lambda k: (lambda z, c, d, pp=k.postprocess_fn((t.X, t.Y), kw): jax.vmap(pp)(z))  # noqa: E731
        return run_chunked(kernel, model_args=(t.X, t.Y), model_kwargs=kw, make_post=post,
                           init_keys=jax.random.split(jax.random.PRNGKey(0), 4), num_chains=4, num_warmup=40,
                           num_samples=60, thinning=1, chunk_size=20, store=store, **extra)

    full = run(None)
    store = RunStore(tmp_path / "s")
    first = run(store, max_blocks=3)           # warm-up blocks of 20 (2) + the first chunk of draws
    assert first.samples["a"].shape[1] == 20
    rest = run(store, resume=True)
    assert rest.resumed_from_block == 2
    for k in ("a", "f", "W1"):
        np.testing.assert_array_equal(rest.samples[k], full.samples[k])
    np.testing.assert_array_equal(rest.stats["step_size"], full.stats["step_size"])
    # the warm-up trace comes back from the store, so the resumed run's trajectory-length check sees what the
    # uninterrupted run saw
    for k in ("num_steps", "step_size"):
        np.testing.assert_array_equal(rest.warmup[k], full.warmup[k])
    g = trajectory_growth(full.warmup["num_steps"], full.warmup["step_size"])
    assert np.isfinite(g) and trajectory_growth(rest.warmup["num_steps"], rest.warmup["step_size"]) == g


@pytest.mark.parametrize("kw, match", [
    (dict(num_chains=1), "num_chains >= 2"), (dict(chain_method="sequential"), "sequential"),
    (dict(num_steps=5), "num_steps"), (dict(dense_mass=True), "dense_mass"),
    (dict(sampler="snaper", num_chains=1), "num_chains >= 2"),
])
def test_bad_arguments_fail_before_compiling(kw, match):
    t = toy_task(P=5, N0=6)
    with pytest.raises(ValueError, match=match):
        bnnzoo.sample("relu", t, **dict(dict(sampler="chees", num_warmup=1, num_samples=5, progress=False), **kw))


def test_unknown_criterion_is_refused():
    with pytest.raises(ValueError, match="criterion must be one of"):
        ChEES(bnnzoo.models.fcn, criterion="esjd")


def test_trajectory_growth_reads_the_warmup_trace():
    """A synthetic warm-up trace, L_t = ⌈u_t T_t / ε⌉ as the kernel takes it: a settled T gives ≈ 1, a T still
    doubling every 50 iterations gives the ratio of its end to its geometric mean over the last half."""
    W, eps = 400, 0.01
    u = np.asarray(halton(np.arange(1, W + 1)), float)
    t = np.arange(W)
    for T, expect in ((np.full(W, 1.5), 1.0),
                      (0.1 * 2.0 ** (t / 50), 2.0 ** ((W - 20.5) / 50 - (W / 2 + W / 4 - 0.5) / 50))):
        n = np.ceil(u * T / eps)
        g = trajectory_growth(np.stack([n, n]), np.full((2, W), eps))
        np.testing.assert_allclose(g, expect, rtol=0.05)
    assert np.isnan(trajectory_growth(np.ones(10), np.ones(10)))


def test_unsettled_trajectory_warns():
    """bnnzoo.sample's check on the warm-up trace: a T growing sixteenfold every 150 iterations warns and stores the
    ratio; a settled one does neither."""
    from bnnzoo.inference.sampling import _check_trajectory_settled

    W = 300
    u = np.asarray(halton(np.arange(1, W + 1)), float)
    for T, warns in ((np.full(W, 2.0), False), (0.01 * 16.0 ** (np.arange(W) / 150), True)):
        trace = dict(num_steps=np.ceil(u * T / 0.01)[None], step_size=np.full((1, W), 0.01))
        cfg = {}
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            _check_trajectory_settled("snaper", trace, cfg)
        assert any("had not settled" in str(w.message) for w in rec) == warns
        assert (cfg["trajectory_growth"] > 2.0) == warns


@pytest.mark.parametrize("n", [1, 5, 7])
def test_unrolled_leapfrog_is_the_same_trajectory(n):
    """k leapfrog steps per loop iteration, the steps past n discarded: the same n-step trajectory as one step per
    iteration (bit for bit for this potential on a CPU; XLA may round an unrolled loop differently for others), and
    the discarded steps of an exploding trajectory do not leak NaNs."""
    A = jnp.asarray(np.diag(np.geomspace(0.5, 4.0, 6)), jnp.float32)
    vg = jax.vmap(jax.value_and_grad(lambda x: 0.5 * x @ A @ x + 0.1 * jnp.sum(x**4)))
    x = jax.random.normal(jax.random.PRNGKey(1), (3, 6))
    p = jax.random.normal(jax.random.PRNGKey(2), (3, 6))
    _, g = vg(x)
    ref = ChEES._leapfrog(vg, x, p, g, 0.3, jnp.ones(6), jnp.int32(n), 1)
    for k in (2, 3, 4):
        out = jax.jit(lambda n: ChEES._leapfrog(vg, x, p, g, 0.3, jnp.ones(6), n, k))(jnp.int32(n))
        for a, b in zip(ref, out):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # a step size past stability: the trajectory blows up; the discarded extra steps must not turn it into NaN
    big = [np.asarray(a) for a in ChEES._leapfrog(vg, x, p, g, 3.0, jnp.ones(6), jnp.int32(n), 1)]
    out = [np.asarray(a) for a in ChEES._leapfrog(vg, x, p, g, 3.0, jnp.ones(6), jnp.int32(n), 4)]
    for a, b in zip(big, out):
        np.testing.assert_array_equal(a, b)


def test_leapfrog_unroll_is_checked():
    with pytest.raises(ValueError, match="leapfrog_unroll must be an int >= 1"):
        ChEES(bnnzoo.models.fcn, leapfrog_unroll=0)
    assert ChEES(bnnzoo.models.fcn, leapfrog_unroll=3).leapfrog_unroll() == 3
