"""The log evidence a tempering run stores (``sampler="smc"``) against the MCMC-free value of the linear net.

:func:`bnnzoo.inference.smc.log_evidence` reads log Z from an adaptive tempered SMC run of the ``deep_linear``
entry; :func:`bnnzoo.theory.linear_evidence` computes it with the hidden weights integrated out exactly and the
readout's Gram matrix by importance sampling.  The model's arguments are read back from the run's provenance, so
both sides evaluate the same model.  Tolerance: max(3 × the combined standard error, an absolute floor).  The SMC
standard error comes from the spread of the per-chain estimates of log Z over a handful of chains, itself uncertain
by about 1/√(2(C − 1)) of its value, and log Ẑ of a finite SMC population is biased low by about Var(log Ẑ)/2; the
floor (0.25 nats at P = 4 with 256 particles, 0.15 nats at P = 12 with 1000) covers both at these sizes (the gaps
seen: 0.05–0.13 nats).  The default test runs the rich (non-lazy) net at P = 4; the lazy twin and the P = 12 run
are marked slow.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from scipy.stats import multivariate_normal

import bnnzoo
from bnnzoo.inference.convert import run_config
from bnnzoo.inference.smc import combine_log_z, log_evidence, smc_evidence_trust, split_density, tempered_smc
from bnnzoo.theory import linear_evidence


def smc_vs_theory(P, N0, width, temperature, num_chains, num_samples, num_mcmc_steps, floor, readout="nonlazy"):
    task = bnnzoo.toy_task(P=P, N0=N0, y_neg=0.0)
    idata = bnnzoo.sample("deep_linear" if readout == "nonlazy" else "deep_linear_lazy", task, width=width,
                          temperature=temperature, sampler="smc", num_chains=num_chains, num_warmup=0,
                          num_samples=num_samples, seed=0, progress=False,
                          tempering={"num_mcmc_steps": num_mcmc_steps})
    value, se, method = log_evidence(idata)
    ev = linear_evidence(task, **run_config(idata)["model_kwargs"])
    assert math.isfinite(value) and se > 0, (value, se, method)
    tol = max(3 * math.hypot(se, ev.se), floor)
    assert abs(value - ev.value) < tol, (f"SMC log Z {value:.4f} ± {se:.3g} ({method}) vs MCMC-free "
                                         f"{ev.value:.4f} ± {ev.se:.2g} (tolerance {tol:.3g})")


def test_smc_log_evidence_matches_the_linear_net_value():
    # 256 particles: with 128 the seeds 0, 1, 2 gave gaps of −0.287, −0.002, +0.124 nats (se 0.06–0.09), the first
    # a 3σ draw at the tolerance; with 256: −0.136, +0.008, +0.028 (se 0.05–0.07)
    smc_vs_theory(P=4, N0=4, width=3, temperature=0.2, num_chains=4, num_samples=256, num_mcmc_steps=5, floor=0.25)


@pytest.mark.slow
def test_smc_log_evidence_matches_the_lazy_linear_net_value():
    smc_vs_theory(P=4, N0=4, width=3, temperature=0.2, num_chains=4, num_samples=128, num_mcmc_steps=5, floor=0.25,
                  readout="lazy")


@pytest.mark.slow
def test_smc_log_evidence_matches_at_the_toy_task_size():
    smc_vs_theory(P=12, N0=12, width=8, temperature=0.05, num_chains=4, num_samples=1000, num_mcmc_steps=10,
                  floor=0.15)


def test_diagnose_reads_smc_particles_as_a_sample_not_a_time_series():
    """Per-unit verdicts that read the draws as a time series (ergodicity, symmetry, code switches) are "not tested"
    on an SMC run; the readout's branches are still counted from the particles."""
    from bnnzoo.diagnostics.report import NOT_A_TIME_SERIES

    idata = bnnzoo.sample("sigmoidal", bnnzoo.toy_task(P=8, y_neg=0.5), width=6, sampler="smc", num_chains=2,
                          num_warmup=0, num_samples=64, seed=0, progress=False, tempering={"num_mcmc_steps": 2})
    rep = bnnzoo.diagnose(idata, store=False)
    series = {k: v for k, v in rep.verdicts.items() if k.startswith(("ergodicity[", "symmetry[", "codes["))}
    assert series and all(v == NOT_A_TIME_SERIES for v in series.values()), rep.verdicts
    assert "branches" in rep.verdicts
    # two runs give no error bar: the evidence says so, in the report too
    ev = log_evidence(idata)
    assert not ev.trustworthy and "2 independent SMC runs" in ev.reason
    assert any(line.startswith("log evidence not trustworthy: 2 independent") for line in rep.health.summary())


# ---- the error bar of the evidence: calibrated z-scores ----------------------------------------------------------
def z_scores(log_z, exact) -> np.ndarray:
    """(estimate − exact) / se of :func:`combine_log_z` for every row of (repeat, run) log Ẑ."""
    out = [combine_log_z(row) for row in np.asarray(log_z)]
    return np.array([(v - exact) / se for v, se in out])


def test_smc_error_bar_is_calibrated_on_runs_of_the_lognormal_law():
    """The runs' log Ẑ_c drawn from their asymptotic law N(log Z − σ²/2, σ²) (Bérard, Del Moral & Doucet 2014),
    σ = 0.2, 4000 repeats of 4 runs: the z-scores have mean 0 ± 0.15 (the Jensen bias σ²/(2C) of log mean Ẑ_c
    shifts it by about −0.05) and sd 1 ± 0.1 (the sd's sampling error is about 0.03).  The plain s / √C (Student's t
    with 3 degrees of freedom) gives sd √3."""
    rng = np.random.default_rng(0)
    sigma = 0.2
    z = z_scores(-sigma ** 2 / 2 + sigma * rng.standard_normal((4000, 4)), 0.0)
    assert abs(z.mean()) < 0.15 and abs(z.std() - 1) < 0.1, (z.mean(), z.std())


def bayesian_linear_regression(X, Y):
    """y ~ N(X w, 0.5²), w ~ N(0, I): the evidence is N(y; 0, X Xᵀ + 0.25 I) exactly."""
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    numpyro.sample("y", dist.Normal(X @ w, 0.5).to_event(1), obs=Y)


@pytest.mark.slow
def test_smc_error_bar_is_calibrated_on_a_bayesian_linear_regression():
    """48 repeats of 4 independent SMC runs (64 particles, 5 HMC mutations) on a Bayesian linear regression (P = 10,
    d = 2) with the exact log evidence: the z-scores have mean 0 ± 0.45 (3 / √48) and sd in [0.65, 1.3] (the sd of
    48 z-scores of Student's t with 3 degrees of freedom, scaled to unit variance, falls there in most draws).
    Measured: mean 0.04, sd 0.81; with the former delta-method error sd(Ẑ_c) / (√C mean Ẑ_c), sd 1.43.  The runs'
    log Z spread by 0.23 nats, so the Jensen bias (about 0.03 nats per run) is small against the error.
    58 s on the 2-core development machine under load."""
    R, C, n = 48, 4, 64
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 2))
    y = X @ rng.standard_normal(2) + 0.5 * rng.standard_normal(10)
    exact = multivariate_normal(np.zeros(10), X @ X.T + 0.25 * np.eye(10)).logpdf(y)
    dens = split_density(bayesian_linear_regression, (jnp.asarray(X, jnp.float32), jnp.asarray(y, jnp.float32)), {})
    x0 = dens.init(jax.random.PRNGKey(1), R * C * n, "prior").reshape(R * C, n, dens.dim)
    res = tempered_smc(jax.random.PRNGKey(2), dens.logprior, dens.loglik, x0, num_mcmc_steps=5, num_steps=8)
    z = z_scores(res["log_z"].reshape(R, C), exact)
    assert abs(z.mean()) < 3 / math.sqrt(R) and 0.65 < z.std(ddof=1) < 1.3, (z.mean(), z.std(ddof=1))


def test_smc_evidence_trust():
    """Four runs that agree: trustworthy; two runs, or runs spread by more than 1 nat: not, with the reason."""
    assert smc_evidence_trust([-3.0, -3.1, -2.9, -3.05]) == (True, "")
    ok, why = smc_evidence_trust([-3.0, -3.1])
    assert not ok and "2 independent SMC runs" in why
    ok, why = smc_evidence_trust([-3.0, -5.0, -2.5, -4.0])
    assert not ok and "spread by sd" in why and "Jensen" in why


def test_health_judges_smc_by_its_own_diagnostics():
    """An SMC run of 4 × 128 particles: its evidence is trustworthy and its health rests on the runs' agreement and
    SMC's own diagnostics (no drift or E-BFMI read from particles); the same particles with a stage whose ESS
    collapsed to one particle are "failed"."""
    import json

    from bnnzoo import azcompat
    from bnnzoo.inference.health import sampler_health

    idata = bnnzoo.sample("deep_linear", bnnzoo.toy_task(P=4, N0=4, y_neg=0.0), width=3, temperature=0.2,
                          sampler="smc", num_chains=4, num_warmup=0, num_samples=128, seed=0, progress=False,
                          tempering={"num_mcmc_steps": 5})
    assert log_evidence(idata).trustworthy, log_evidence(idata)
    h = sampler_health(idata)
    assert h.status != "failed" and all(math.isnan(v) for v in h.drift_z.values()), h.summary()
    assert math.isnan(h.ebfmi_min) and "independent SMC runs" in h.evidence and "stage ESS" in h.evidence, h.evidence
    attrs = azcompat.get_attrs(idata)
    cfg = json.loads(attrs["bnnzoo_config"])
    cfg["engine"]["ess_min"][1] = 1.0
    groups = {k.strip('/'): v.copy() for k, v in azcompat.group_datasets(idata).items()}   # attrs not shared
    bad = azcompat.make_idata(groups, dict(attrs, bnnzoo_config=json.dumps(cfg)))
    h = sampler_health(bad)
    assert h.status == "failed" and "SMC weights collapsed: a stage of run 1" in h.reason, h.summary()
