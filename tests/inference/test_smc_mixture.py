"""Adaptive tempered SMC (``sampler="smc"``) on a planted metastable target, its options and its density split.

Known answer: a 12-dimensional Gaussian mixture likelihood with weights 0.7 / 0.3 on modes ±2.5·(1, …, 1) (16
posterior sds apart) under a broad N(0, 3²) prior, so the posterior is the same mixture with weights exactly 0.7 / 0.3
(both modes equally far from the prior's centre) and log Z in closed form; NUTS chains started from prior draws never
cross, SMC must put 70 % of its draws in the first mode.  And a planted population of frozen units that the
certification of plain NUTS chains must call metastable.
"""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import xarray as xr
from numpyro.infer.util import potential_energy
from scipy.special import logsumexp
from scipy.stats import norm

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.inference.smc import log_evidence, split_density
from bnnzoo.tasks import Task, toy_task

# ---- the planted mixture -----------------------------------------------------------------------------------------
D, S, DELTA, W = 12, 3.0, 2.5, 0.7
MUS = np.stack([DELTA * np.ones(D), -DELTA * np.ones(D)]).astype(np.float32)


def mixture(X, Y):
    """x ~ N(0, S² I); the observation Y[0] = 0 has likelihood W N(x; μ₁, I) + (1 − W) N(x; μ₂, I)."""
    with numpyro.plate("dim", D):
        x = numpyro.sample("x", dist.Normal(0.0, S))
    comps = dist.Normal(x[None, :] - MUS, 1.0).to_event(1)
    numpyro.sample("y", dist.MixtureSameFamily(dist.Categorical(probs=jnp.array([W, 1 - W])), comps), obs=Y[0])


MIX_TASK = Task(np.zeros((1, 1)), np.zeros((1, D)), name="mixture")
# Z = Σ_j w_j N(μ_j; 0, (1 + S²) I), and |μ₁| = |μ₂|
MIX_LOG_Z = -D / 2 * math.log(2 * math.pi * (1 + S ** 2)) - DELTA ** 2 * D / (2 * (1 + S ** 2))
MIX_KW = dict(num_chains=4, seed=3, progress=False, dims={"x": ["dim"]})


def first_mode(idata) -> np.ndarray:
    """(chain, draw) indicator of the mode at +δ (the nearer mode: the sign of the mean coordinate)."""
    x = azcompat.get_group(idata, "posterior")["x"].values
    return (x.mean(-1) > 0).astype(float)


@pytest.fixture(scope="module")
def smc_mix():
    return bnnzoo.sample(mixture, MIX_TASK, sampler="smc", num_warmup=0, num_samples=500, num_steps=8, **MIX_KW)


def test_plain_nuts_chains_lock_in_their_start_mode():
    """NUTS chains from prior draws never cross between the modes: each reports weight 0 or 1, at least 0.3 from
    the truth, whatever the split of the chains."""
    idata = bnnzoo.sample(mixture, MIX_TASK, sampler="nuts", num_warmup=100, num_samples=100, **MIX_KW)
    per_chain = first_mode(idata).mean(axis=1)
    assert np.all((per_chain == 0) | (per_chain == 1)), per_chain
    assert np.all(np.abs(per_chain - W) >= 0.3), per_chain


def test_smc_recovers_the_mode_weights_and_the_evidence(smc_mix):
    """Weights: the pooled 2000 particles within 0.06 of 0.7 (about 4 standard errors of 1000 effective particles,
    target_ess × particles), every independent run within 0.15.  log Z: within 4 of its standard errors (the
    spread of the runs) plus 0.1 nats for that spread's own uncertainty at four runs."""
    ind = first_mode(smc_mix)
    assert abs(ind.mean() - W) < 0.06, ind.mean(axis=1)
    assert np.all(np.abs(ind.mean(axis=1) - W) < 0.15), ind.mean(axis=1)
    value, se, method = log_evidence(smc_mix)
    assert "SMC" in method and se > 0
    assert abs(value - MIX_LOG_Z) < 4 * se + 0.1, (value, se, MIX_LOG_Z)


def test_split_density_is_the_model_density():
    """log prior + log-likelihood = −NumPyro's potential energy, and the log-likelihood is the mixture's."""
    dens = split_density(mixture, (MIX_TASK.X, MIX_TASK.Y), {})
    assert dens.obs_names == ("y",) and dens.dim == D
    x = np.asarray(dens.init(jax.random.PRNGKey(0), 3))
    lp, ll = jax.jit(jax.vmap(dens.logprior))(x), jax.jit(jax.vmap(dens.loglik))(x)
    pe = np.array([float(potential_energy(mixture, (MIX_TASK.X, MIX_TASK.Y), {}, {"x": xi})) for xi in x])
    np.testing.assert_allclose(np.asarray(lp + ll), -pe, rtol=1e-5)
    want = logsumexp([np.log(W) + norm.logpdf(x, MUS[0], 1).sum(-1),
                      np.log(1 - W) + norm.logpdf(x, MUS[1], 1).sum(-1)], axis=0)
    np.testing.assert_allclose(np.asarray(ll), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(lp), norm.logpdf(x, 0, S).sum(-1), rtol=1e-5)


@pytest.mark.parametrize("kw, match", [
    (dict(sampler="smc", num_chains=1), "num_chains must be >= 2"),
    (dict(sampler="smc", thinning=2), "thinning must be 1"),
    (dict(sampler="smc", init="uniform"), "init must be 'prior'"),
    (dict(sampler="smc", chunk_size=10), "drop \\['chunk_size'\\]"),
    (dict(sampler="nuts", tempering={"num_replicas": 4}), "tempering options apply"),
])
def test_bad_options_are_refused_before_compiling(kw, match):
    with pytest.raises(ValueError, match=match):
        bnnzoo.sample("sigmoidal", toy_task(P=12), width=6, progress=False, **dict(dict(num_chains=2), **kw))


def test_log_evidence_needs_a_tempering_run():
    ds = xr.Dataset({"x": (("chain", "draw"), np.zeros((1, 2)))})
    idata = azcompat.make_idata({"posterior": ds}, {"bnnzoo_config": json.dumps({"engine": {"timing": {}}})})
    with pytest.raises(ValueError, match="no log evidence"):
        log_evidence(idata)


# ---- a planted population of units -------------------------------------------------------------------------------
# U independent units, each with a broad N(0, 3²) prior and a likelihood factor that is a two-mode mixture, weights
# 0.7 / 0.3 at ±1.5, width 0.3: the posterior of every unit is that mixture with weights exactly 0.7 / 0.3 (modes
# equally far from the prior's centre), and the barrier between the modes (≈ 12 nats) freezes every unit of a plain
# HMC chain in the mode it starts in — a frozen population, as the hidden units of a network freeze on their codes.
UNITS, U_MU, U_SD = 8, 1.5, 0.3


def units(X, Y):
    with numpyro.plate("unit", UNITS):
        x = numpyro.sample("x", dist.Normal(0.0, S))
    lik = jnp.logaddexp(math.log(W) + dist.Normal(U_MU, U_SD).log_prob(x),
                        math.log(1 - W) + dist.Normal(-U_MU, U_SD).log_prob(x))
    numpyro.factor("lik", lik.sum())


UNIT_TASK = Task(np.zeros((1, 1)), np.zeros((1, 1)), name="units")
UNIT_KW = dict(num_chains=4, seed=5, progress=False, dims={"x": ["unit"]})


def fraction_up(idata) -> np.ndarray:
    """(chain, draw) fraction of the units in the mode at +1.5."""
    return (azcompat.get_group(idata, "posterior")["x"].values > 0).mean(-1)


def test_certify_flags_frozen_unit_populations():
    """Plain NUTS chains from two start families (prior draws; every unit in the 0.3 mode) keep their start
    populations, and the certification's comparison (fractions of UNITS units, measured scatter) calls them
    metastable (here by the scatter: every all-down chain holds 0, the prior chains scatter)."""
    from bnnzoo.diagnostics.populations import ObservableInfo
    from bnnzoo.workflows.certify import compare_families

    down = {"x": np.full((4, UNITS), -U_MU, np.float32)}
    info = {"up": ObservableInfo("fraction", UNITS)}
    fams = ["prior"] * 4 + ["down"] * 4
    nuts = [bnnzoo.sample(units, UNIT_TASK, sampler="nuts", num_warmup=50, num_samples=100, init=init, **UNIT_KW)
            for init in ("prior", down)]
    frac = np.concatenate([fraction_up(r) for r in nuts])
    assert np.all(frac.std(axis=1) == 0), "a unit of a plain chain changed mode"
    rec = compare_families({"up": frac}, fams, info=info)
    assert rec["agree"] is False and rec["disagreements"][0].startswith("up: "), rec
