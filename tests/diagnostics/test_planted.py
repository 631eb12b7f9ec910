"""bnnzoo.diagnostics.planted: chain-mean comparison (its false-alarm rate and stated power) and the planted check
on runs of the unit-wise sampler, whose chains from the prior must reach the populations of chains started at the
teacher (the teacher is an exact posterior draw)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import bnnzoo
from bnnzoo.diagnostics import planted_check
from bnnzoo.diagnostics.planted import POWER, compare_chain_means
from bnnzoo.models import get_entry
from bnnzoo.tasks import planted_init, planted_task


def _groups(rng, n_a, n_b, shift=0.0, sd_b=1.0, draws=50):
    """Two groups of chains whose chain means scatter with sd 1 (a) and sd_b (b); draws scatter around them."""
    a = rng.normal(0.0, 1.0, (n_a, 1)) + 0.1 * rng.normal(size=(n_a, draws))
    b = shift + rng.normal(0.0, sd_b, (n_b, 1)) + 0.1 * rng.normal(size=(n_b, draws))
    return a, b


def test_false_alarm_rate_and_stated_power():
    """8 against 8 chains, unequal scatter: at a two-sided 5 % level equal means are called different in 5 % of
    4000 repetitions (± 1 %), and a shift by the stated detectable difference is found in about 80 % (± 6 %: Welch's
    degrees of freedom are estimated)."""
    rng = np.random.default_rng(0)
    q = 0.025
    alarms = [abs((r := compare_chain_means(*_groups(rng, 8, 8, sd_b=2.0), q))["t"]) > r["threshold"]
              for _ in range(4000)]
    assert abs(np.mean(alarms) - 0.05) < 0.01, np.mean(alarms)
    ref = compare_chain_means(*_groups(np.random.default_rng(1), 8, 8, sd_b=2.0), q)
    # the expected detectable difference: replace the one run's se by the true one (sd 1 and 2 over 8 chains)
    d = ref["detectable"] / np.hypot(ref["a"][1], ref["b"][1]) * np.sqrt((1 + 4) / 8)
    hits = [abs((r := compare_chain_means(*_groups(rng, 8, 8, shift=d, sd_b=2.0), q))["t"]) > r["threshold"]
            for _ in range(2000)]
    assert abs(np.mean(hits) - POWER) < 0.06, np.mean(hits)


def test_constant_observables_compare_by_their_values():
    same = compare_chain_means(np.zeros((3, 10)), np.zeros((4, 10)), 0.01)
    assert same["t"] == 0.0
    other = compare_chain_means(np.zeros((3, 10)), np.ones((4, 10)), 0.01)
    assert abs(other["t"]) > other["threshold"]


def _runs(name, task, kw, C, warmup, draws, seed, other_kw=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planted = bnnzoo.sample(name, task, sampler="units", num_chains=C, num_warmup=0, num_samples=draws,
                                init=planted_init(task, C), seed=seed, **kw)
        other = bnnzoo.sample(name, task, sampler="units", num_chains=C, num_warmup=warmup, num_samples=draws,
                              seed=seed + 1, **(other_kw or kw))
    return planted, other


def test_check_tells_chains_of_another_posterior():
    """The negative control: chains that sample the same net at T = 0.03 instead of 0.01 (another posterior, as a
    sampler with a wrong acceptance would) are told apart by their training error (N = P = 12, 4 chains each)."""
    kw = dict(width=12, temperature=0.01)
    task = planted_task(get_entry("sigmoidal"), bnnzoo.toy_task(P=12, N0=16), seed=0, **kw)
    planted, other = _runs("sigmoidal", task, kw, 4, 20, 40, seed=0, other_kw=dict(kw, temperature=0.03))
    res = planted_check(planted, other)
    assert not res.reached and any(d.startswith("mse") for d in res.differing), res.summary()
    with pytest.raises(ValueError, match="alpha"):
        planted_check(planted, other, alpha=1.5)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sigmoidal", "relu"])
def test_units_sampler_reaches_the_planted_populations(name):
    """Planted teacher–student task, N = P = 40, T = 0.01, 8 chains started at the teacher against 8 from the prior
    (150 warm-up sweeps): code fractions, branch masses, outliers and training error agree at family-wise 1 %, and
    the check could have told a difference of 0.05 in the training error's relative size or in a code fraction."""
    N = 40
    kw = dict(width=N, temperature=0.01)
    task = planted_task(get_entry(name), bnnzoo.toy_task(P=N), seed=1, **kw)
    planted, other = _runs(name, task, kw, 8, 150, 200, seed=3)
    res = planted_check(planted, other)
    assert res.reached, res.summary()
    mse = res.observables["mse"]
    assert mse["detectable"] < 0.05 * mse["planted"][0], mse
    codes = [o for k, o in res.observables.items() if k.startswith("code_fraction")]
    assert codes and max(o["detectable"] for o in codes) < 0.05, res.summary()
