"""bnnzoo.diagnostics.planted: chain-mean comparison (its false-alarm rate and stated power), the prediction interval
for a frozen planted population (its false-alarm rate on synthetic draws of a known law), and the planted check
on runs of the unit-wise sampler, whose chains from the prior must reach the populations of chains started at the
teacher (the teacher is an exact posterior draw)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import bnnzoo
from bnnzoo.diagnostics import planted_check
from bnnzoo.diagnostics.planted import FROZEN, POWER, WELCH, compare_chain_means, compare_planted, law_spread
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
    the check could have told a difference of 0.05 in the training error's relative size or in a code fraction.
    The unit-wise sampler changes codes every sweep, so the planted chains move: the code fractions, branch masses
    and training error are compared by their chain means (Welch), none as a frozen population."""
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
    moving = [k for k in res.observables if k.startswith(("code_fraction", "branch_mass", "mse"))]
    assert all(res.observables[k]["model"] == WELCH for k in moving), res.summary()


# ---- a frozen planted population: one draw of the law, judged by a prediction interval ----------------------------
MU, S = 0.12, 0.033            # the law of a code fraction per draw (the unit-wise sampler's, N = P = 100, T = 0.001)


def _frozen_planted(rng, C=8, draws=50):
    """Planted chains all frozen at one draw p ~ N(MU, S²) of the law, with a jitter of S / 100 per draw."""
    return rng.normal(MU, S) + 0.01 * S * rng.normal(size=(C, draws))


def _moving(rng, shift=0.0, C=8, draws=50):
    """Chains that move through the law N(MU + shift, S²): an independent draw every step."""
    return rng.normal(MU + shift, S, (C, draws))


def _frozen_chains(rng, shift=0.0, C=8, draws=50):
    """Chains each frozen at its own draw of the law N(MU + shift, S²) (jitter S / 100)."""
    return rng.normal(MU + shift, S, (C, 1)) + 0.01 * S * rng.normal(size=(C, draws))


@pytest.mark.parametrize("other, welch_alarms", [(_moving, 0.8), (_frozen_chains, 0.3)])
def test_frozen_planted_population_is_one_draw_of_the_law(other, welch_alarms):
    """Planted chains frozen at one draw of the law, against chains that sample the same law (moving through it, or
    each frozen at its own draw): at a two-sided 5 % level the prediction interval calls them different in 5 % of
    400 repetitions (± 3.3 %, three binomial sd; against frozen chains its t is exactly Student's with 7 degrees of
    freedom, against moving ones nearly normal), where Welch's chain means call far more of them different (about
    90 % and 46 % in 2000: the teacher's offset from the law's mean read as a difference; asserted above 80 % and
    30 %); an other group shifted by 5 sd of the law is told apart in at least 95 % of 200 (the expected share:
    99.9 % against moving chains, 98.0 % against frozen ones, the noncentral t with 7 degrees of freedom)."""
    rng = np.random.default_rng(2)
    q = 0.025
    res = [compare_planted(_frozen_planted(rng), other(rng), q) for _ in range(400)]
    assert all(r["model"] == FROZEN for r in res)
    alarms = np.mean([abs(r["t"]) > r["threshold"] for r in res])
    assert abs(alarms - 0.05) < 0.033, alarms
    assert np.mean([abs(r["welch"]["t"]) > r["welch"]["threshold"] for r in res]) > welch_alarms
    hits = np.mean([abs((r := compare_planted(_frozen_planted(rng), other(rng, 5 * S), q))["t"]) > r["threshold"]
                    for _ in range(200)])
    assert hits >= 0.95, hits


def test_moving_planted_chains_keep_welch():
    """Planted chains that move are compared by their chain means, with the numbers of :func:`compare_chain_means`
    unchanged: through the other group's law, and through a law half as wide (mixing among themselves: another
    law, as a lower temperature gives, not a frozen one); ``frozen_below=0`` gives Welch for frozen chains too.
    Planted chains that each keep a population of their own (sd 0.5 S between chains, 0.4 S within) are frozen."""
    rng = np.random.default_rng(3)
    b = _moving(rng, 0.3 * S)
    for a in (_moving(rng), MU + 0.5 * (_moving(rng) - MU)):
        r, w = compare_planted(a, b, 0.005), compare_chain_means(a, b, 0.005)
        assert r["model"] == WELCH and all(r[k] == w[k] for k in w), (r, w)
    f = _frozen_planted(rng)
    r, w = compare_planted(f, b, 0.005, frozen_below=0.0), compare_chain_means(f, b, 0.005)
    assert r["model"] == WELCH and all(r[k] == w[k] for k in w)
    kept = rng.normal(MU, S) + 0.5 * S * rng.normal(size=(8, 1)) + 0.4 * S * rng.normal(size=(8, 50))
    r = compare_planted(kept, b, 0.005)
    assert r["model"] == FROZEN and r["spread"]["planted_scatter"] > 4, r


def test_law_spread_of_frozen_and_moving_chains():
    """The per-draw sd is the law's whether the chains move through it or each hold one draw (400 chains of 50
    draws: within 10 %), and its degrees of freedom are those of the part that carries it."""
    rng = np.random.default_rng(4)
    s, dof = law_spread(_frozen_chains(rng, C=400))
    assert abs(s / S - 1) < 0.1 and abs(dof - 399) < 5, (s, dof)
    s, dof = law_spread(_moving(rng, C=400))
    assert abs(s / S - 1) < 0.1 and dof > 10_000, (s, dof)
