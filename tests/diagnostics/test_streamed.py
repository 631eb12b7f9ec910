"""Streamed summaries against full recording (issue 33): the same run — same seed, so the same chains, since
recorded sites do not enter the potential — recorded in full (every preactivation and the weights, no summaries)
and with the defaults (the summaries, the kernels as block means, the hidden weights left out) gives the same
verdicts and the same report numbers; the same for the exact Gibbs sampler of the linear net, which computes its
summaries and kernel means from its draws after each chain.  Tolerance: relative 1e-4 (float32 summaries against float64 NumPy from z;
the kernel means cover the same blocks of draws as the diagnostics' batch means)."""

import math

import numpy as np
import pytest

import bnnzoo
from bnnzoo import azcompat

RTOL = 1e-4


def _close(x, y) -> bool:
    if isinstance(x, bool) or isinstance(y, bool) or not isinstance(x, (int, float)) or not isinstance(y, (int, float)):
        return x == y
    if math.isnan(x) and math.isnan(y):
        return True
    return abs(x - y) <= RTOL * max(abs(x), abs(y), 1e-8)


def _same_numbers(a: dict, b: dict) -> list:
    bad = []
    for k in set(a) | set(b):
        x, y = a.get(k), b.get(k)
        if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)) and len(x) == len(y):
            if not all(_close(u, v) for u, v in zip(x, y)):
                bad.append((k, x, y))
        elif isinstance(x, dict) and isinstance(y, dict):
            bad += _same_numbers(x, y)
        elif not _close(x, y):
            bad.append((k, x, y))
    return bad


@pytest.fixture(scope="module", params=[("sigmoidal", 1, "auto"), ("relu", 2, "auto"), ("deep_linear", 1, "gibbs")],
                ids=["sigmoidal", "relu-L2", "linear-gibbs"])
def pair(request):
    name, depth, sampler = request.param
    task = bnnzoo.toy_task(P=24, y_neg=0.5 if name == "sigmoidal" else -0.5)
    kw = dict(width=24, depth=depth, num_chains=4, num_warmup=120, num_samples=60, seed=3, progress=False,
              sampler=sampler)
    full = bnnzoo.sample(name, task, record="z", **kw)
    streamed = bnnzoo.sample(name, task, exclude=tuple(f"W{l}" for l in range(1, depth + 1)), **kw)
    return full, streamed, depth


def test_the_same_chains_recorded_both_ways(pair):
    full, streamed, depth = pair
    np.testing.assert_array_equal(full.posterior["a"].values, streamed.posterior["a"].values)
    assert "z1" in full.posterior and "zbar1" not in full.posterior and "W1" in full.posterior
    assert "z1" not in streamed.posterior and "W1" not in streamed.posterior
    assert {f"zbar{depth}", f"hbar{depth}", f"zsq{depth}", f"kc_mm{depth}"} <= set(streamed.posterior.data_vars)
    th = azcompat.get_group(streamed, "posterior_thinned")
    e = th[f"K{depth}"].attrs["bnnzoo_mean_of_draws"]
    assert th.sizes[f"draw_K{depth}"] * e == 60 and e == 6     # 10 means of 6 draws per chain


def test_the_same_verdicts_and_numbers(pair):
    full, streamed, depth = pair
    rf, rs = bnnzoo.diagnose(full), bnnzoo.diagnose(streamed)
    assert rf.verdicts == rs.verdicts
    assert not _same_numbers(rf.numbers, rs.numbers), _same_numbers(rf.numbers, rs.numbers)
    np.testing.assert_allclose(rs.kernels.K, rf.kernels.K, rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(rs.kernels.d_lr, rf.kernels.d_lr, rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(rs.kernels.nc1, rf.kernels.nc1, rtol=RTOL, atol=1e-6)
    if rf.theory is not None:
        for a, b in zip(rf.theory.agreements, rs.theory.agreements):
            assert a.quantity == b.quantity and a.within == b.within and _close(a.sampled, b.sampled), (a, b)


def test_order_parameters_and_populations_from_the_summaries(pair):
    from bnnzoo.diagnostics import order_parameters
    from bnnzoo.diagnostics.populations import population_observables

    full, streamed, depth = pair
    of, os_ = order_parameters(full), order_parameters(streamed)
    for k in of.data_vars:
        np.testing.assert_allclose(os_[k].values, of[k].values, rtol=RTOL, atol=1e-6, err_msg=k)
    pf, ps = population_observables(full), population_observables(streamed)
    linear = azcompat.get_attrs(full).get("model_activation") == "linear"     # analog units: no codes
    assert set(pf) == set(ps) and (linear or any(k.startswith("code_fraction[z1]") for k in ps)), \
        (sorted(pf), ps.skipped)
    for k in pf:
        np.testing.assert_allclose(ps[k], pf[k], rtol=RTOL, atol=1e-6, err_msg=k)
