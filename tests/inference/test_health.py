"""Sampler health before physics (bnnzoo.inference.health): injected sampler faults give "inconclusive", a run
that did not mix makes ``sample`` warn, a healthy run keeps its verdicts, a drifting run is "relaxing" and keeps
none (the rules of the gate case by case: test_health_gate.py).

Tiny linear nets (N = 10, P = 10) so that every run takes seconds; the faults are made with the sampler's own
settings (fixed tiny or huge HMC step sizes, 5 draws, T = 1e-8)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.diagnostics import diagnose, load_report
from bnnzoo.diagnostics.populations import outlier_counts
from bnnzoo.inference.health import (MAX_DRIFT_Z, MAX_RHAT, gate_verdicts, invariant_observables, outlier_mask,
                                    sampler_health)

TASK = dict(P=10, N0=12, y_neg=0.0)


def _sample(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return bnnzoo.sample("deep_linear", bnnzoo.toy_task(**TASK), progress=False, width=10, **kw)


def _all_inconclusive(rep):
    assert rep.verdicts, rep
    return all(str(v).startswith("inconclusive: ") for v in rep.verdicts.values())


def test_stuck_sampler_is_inconclusive():
    """HMC with step size 1e-6: the chains stay at their prior draws (between-chain R̂ ≫ 1.1) — never "broken"."""
    idata = _sample(sampler="hmc", step_size=1e-6, num_steps=5, num_chains=2, num_warmup=0, num_samples=120)
    rep = diagnose(idata, kernels=False)
    assert rep.health.status == "failed" and "stuck sampler" in rep.health.reason, rep.health
    assert rep.health.movement_min < 0.1
    assert _all_inconclusive(rep), rep.verdicts
    back = load_report(idata)                  # the health record is stored with the report
    assert back.health.status == "failed" and back.health.reasons == rep.health.reasons


def test_every_transition_diverged_is_inconclusive():
    idata = _sample(sampler="hmc", step_size=50.0, num_steps=5, num_chains=2, num_warmup=0, num_samples=120)
    rep = diagnose(idata, kernels=False)
    assert rep.health.divergence_rate == 1.0
    assert any("diverged" in r for r in rep.health.reasons), rep.health
    assert _all_inconclusive(rep), rep.verdicts


def test_one_chain_of_five_draws_is_inconclusive():
    idata = _sample(num_chains=1, num_warmup=50, num_samples=5)
    rep = diagnose(idata, kernels=False)
    assert any(r.startswith("too few draws: 5 per chain") for r in rep.health.reasons), rep.health
    assert _all_inconclusive(rep), rep.verdicts


def test_chains_that_do_not_mix_make_sample_warn():
    """T = 1e-8: the readout norms q_a stay where each chain started (R̂ > 1.1); sample() says so, at the user's
    line (not inside bnnzoo's workflow or sampler layers)."""
    with pytest.warns(RuntimeWarning, match="the chains did not mix") as caught:
        idata = bnnzoo.sample("deep_linear", bnnzoo.toy_task(**TASK), progress=False, width=10, temperature=1e-8,
                              num_chains=2, num_warmup=100, num_samples=120, max_tree_depth=6, sampler="nuts")
    mixed = [w for w in caught if "the chains did not mix" in str(w.message)]
    assert mixed and all(w.filename == __file__ for w in mixed), [(w.filename, w.lineno) for w in mixed]
    h = sampler_health(idata)
    assert h.status == "failed"
    assert max(h.rhat[f"q_a[{c}]"] for c in range(3)) > MAX_RHAT, h


def test_healthy_linear_run_keeps_its_verdicts():
    idata = _sample(num_chains=2, num_warmup=200, num_samples=200, seed=1)
    rep = diagnose(idata, kernels=False)
    assert rep.health.status == "equilibrated", rep.health
    assert "between-chain" in rep.health.evidence
    assert not any(str(v).startswith(("inconclusive", "relaxing")) for v in rep.verdicts.values()), rep.verdicts
    assert rep.verdicts["ergodicity[a]"] == "ergodic"
    assert max(rep.health.rhat.values()) <= MAX_RHAT


def _synthetic(drift: bool, C=2, D=300, N=20, m=3, seed=0):
    """A run from a known process: iid Gaussian readouts; with ``drift``, chain 0 starts with an extra outlier
    unit whose readout decays into the bulk over the first 60 % of the run (a relaxing chain)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(C, D, N, m))
    if drift:
        a[0, :, 0, 0] += 12.0 * np.clip(1 - np.arange(D) / (0.6 * D), 0, None)
    f = rng.normal(scale=0.1, size=(C, D, 8, m))
    d = 50
    lp = rng.normal(scale=np.sqrt(d / 2), size=(C, D))
    kinetic = rng.chisquare(d, size=(C, D)) / 2
    lead = ("chain", "draw")
    post = xr.Dataset({"a": (lead + ("neuron", "class"), a), "f": (lead + ("point", "class"), f),
                       "mse": (lead, (f ** 2).mean((2, 3)))})
    ss = xr.Dataset({"diverging": (lead, np.zeros((C, D), bool)), "energy": (lead, kinetic - lp), "lp": (lead, lp)})
    return azcompat.make_idata({"posterior": post, "sample_stats": ss,
                                "observed_data": xr.Dataset({"y": (("point", "class"), np.zeros((8, m)))})})


def test_synthetic_relaxing_run_says_relaxing():
    h = sampler_health(_synthetic(drift=True))
    assert h.status == "relaxing", h
    assert h.drift_z["q_a[0]"] > MAX_DRIFT_Z and h.drift_z["n_outliers"] > MAX_DRIFT_Z
    # a relaxing run keeps none of its verdicts (issue 31: frozen codes and broken ergodicity are what relaxation
    # looks like too)
    gated = gate_verdicts({"theory": "disagrees", "ergodicity[a]": "broken", "codes[z1]": "frozen"}, h)
    assert all(v == "relaxing: see the sampler health" for v in gated.values()), gated
    assert "n_outliers" in h.reason
    # the same process without the drift is at equilibrium, and its verdicts stand (population verdicts marked)
    h0 = sampler_health(_synthetic(drift=False))
    assert h0.status == "equilibrated", h0
    assert gate_verdicts({"theory": "disagrees", "codes[z1]": "frozen"}, h0) == {
        "theory": "disagrees", "codes[z1]": "frozen (populations not certified)"}


def test_a_creeping_sampler_is_failed_not_relaxing():
    """HMC with a fixed step of 0.01 and no warm-up moves the log density by thousandths of the kinetic energy's sd
    per draw: "failed" (step size), where it used to read "relaxing" (run longer); NUTS on the same net passes the
    check."""
    task = bnnzoo.toy_task(P=20, y_neg=0.5)
    kw = dict(width=10, num_chains=2, num_samples=150, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        creep = bnnzoo.sample("sigmoidal", task, sampler="hmc", step_size=1e-2, num_steps=5, num_warmup=0, **kw)
        nuts = bnnzoo.sample("sigmoidal", task, sampler="nuts", num_warmup=200, **kw)
    h = sampler_health(creep)
    assert h.status == "failed" and any("creeps" in r for r in h.reasons), h.reasons
    assert h.step_movement_min < 0.05
    assert sampler_health(nuts).step_movement_min > 0.2


def test_outlier_mask_is_the_one_rule_behind_the_outlier_counts():
    """N = 16 units, median norm 1: N^{1/4} = 2, so norms 2.01 and 5 are outliers and 1.99 is not; the per-class
    count (``outlier_counts``) and the gate's ``n_outliers`` read the same units."""
    norms = np.ones(16)
    norms[[3, 7, 11]] = [2.01, 5.0, 1.99]
    assert outlier_mask(norms).tolist() == [i in (3, 7) for i in range(16)]
    assert outlier_mask(np.stack([norms, 2 * norms])).sum(-1).tolist() == [2, 2]      # scale-free, per row
    a = np.zeros((1, 1, 16, 3))
    a[0, 0, :, 1] = norms                                  # every readout along class 1
    a[0, 0, 7] = [0.0, 0.0, -5.0]                          # the outlier of norm 5 points away from every class but 0
    assert outlier_counts(a)[0, 0].tolist() == [1, 1, 0]
    post = xr.Dataset({"a": (("chain", "draw", "neuron", "class"), a)})
    assert invariant_observables(post)["n_outliers"].tolist() == [[2.0]]
