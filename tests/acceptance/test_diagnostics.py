"""Acceptance tests of the diagnostics on real sampled runs (docs/theory.md §3; issue 4), each on two seeds.

CI size: toy task, N = P = 100, T = 0.01, NUTS with 200 warm-up + 200 draws; the linear net by the exact Gibbs
sampler, 1000 draws (see tests/conftest.py).  Every verdict is its own test.
"""

from __future__ import annotations

import numpy as np
import pytest

SEEDS = (0, 1)  # the same as conftest.SEEDS
seeds = pytest.mark.parametrize("seed", SEEDS)


# ------------------------------------------------------------------------------------------------------- linear
@pytest.mark.nets("linear")
@seeds
def test_linear_is_ergodic(report, seed):
    _, rep = report("linear", seed)
    for v in ("a", "z1"):
        r = rep.ergodicity[v]
        assert r.verdict == "ergodic", r
        assert r.ratio > 0.75, r
        assert r.rhat < 1.2, r


@pytest.mark.nets("linear")
@seeds
def test_linear_code_is_analog(report, seed):
    _, rep = report("linear", seed)
    assert rep.coding_scheme == "analog", rep.branches
    assert rep.branches.n_branches == 1
    assert rep.branches.outliers.n_outliers == 0
    assert rep.codes["z1"].kind == "analog"
    # a continuous gradient of strengths, not a few levels
    q10, q50, q90 = rep.codes["z1"].strength_quantiles
    assert q90 / q10 > 2


@pytest.mark.nets("linear")
@seeds
def test_linear_symmetry_restored(report, seed):
    _, rep = report("linear", seed)
    for v in ("a", "z1"):
        assert rep.symmetry[v].verdict == "restored", rep.symmetry[v]
    assert rep.codes["z1"].verdict == "switching"


@pytest.mark.nets("linear")
@seeds
def test_linear_matches_saddle_point(report, seed):
    _, rep = report("linear", seed)
    th = rep.theory
    assert "theory.linear.linear_saddle_point" in th.theories
    for q in ("U", "K1", "f_train", "f_test"):
        assert th[q].within, th[q]
        assert th[q].difference < 0.05, th[q]
    assert th["f_test_vs_GP"].within, th["f_test_vs_GP"]


# ------------------------------------------------------------------------------------------------------ sigmoid
@pytest.mark.nets("sigmoid")
@seeds
def test_sigmoid_ergodicity_broken(report, seed):
    _, rep = report("sigmoid", seed)
    for v in ("a", "z1"):
        r = rep.ergodicity[v]
        assert r.verdict == "broken" and r.confidence == "clear", r
        assert r.ratio < 0.15, r
    assert rep.symmetry["a"].verdict == "broken"
    assert rep.symmetry["z1"].verdict == "broken"


@pytest.mark.nets("sigmoid")
@seeds
def test_sigmoid_four_codes_with_theory_masses(report, seed):
    _, rep = report("sigmoid", seed)
    assert rep.coding_scheme == "redundant"
    codes = rep.codes["z1"]
    assert codes.verdict == "frozen", codes
    assert set(codes.codes(min_fraction=0.02)) == {"011", "101", "110", "111"}, codes.scheme
    th = rep.theory
    assert "theory.meanfield.single_neuron_meanfield" in th.theories, th
    assert th["codes"].within, th["codes"]
    for k in ("011", "101", "110", "111"):
        a = th[f"mass[{k}]"]
        assert abs(a.difference) < 0.1, a
    # 111 is the rare code (theory 0.09)
    assert th["mass[111]"].sampled < 0.2
    # branch centres (units that stay in their code) and U = E[a aᵀ] agree too
    for k in ("011", "101", "110", "111"):
        assert th[f"centre[{k}]"].difference < 0.15, th[f"centre[{k}]"]
    assert th["U"].within, th["U"]
    assert th.all_within, th
    # the readout branches as the theory counts them: the modes of the readout density, one per mean-field branch
    # (the codes agreement's prediction is the mean field's number of branches; BIC components gave 5 at seed 1)
    assert rep.branches.n_branches == th["codes"].predicted == 4, rep.branches
    assert sorted(rep.branches.codes) == sorted(codes.codes(min_fraction=0.02)), rep.branches


# --------------------------------------------------------------------------------------------------------- ReLU
@pytest.mark.nets("relu")
@seeds
def test_relu_ergodicity_broken(report, seed):
    _, rep = report("relu", seed)
    assert rep.ergodicity["a"].verdict == "broken", rep.ergodicity["a"]
    assert rep.symmetry["a"].verdict == "broken", rep.symmetry["a"]
    # the outliers' codes are frozen
    assert rep.codes["z1"].verdict == "frozen", rep.codes["z1"]


@pytest.mark.nets("relu")
@seeds
def test_relu_three_outliers_one_per_class(report, seed):
    _, rep = report("relu", seed)
    o = rep.branches.outliers
    assert rep.coding_scheme == "sparse"
    assert o.per_chain == (3,), o
    assert o.one_per_class, o
    # of order √N: far above the threshold N^{1/4} × bulk
    ratio = np.median(o.readout_scale[o.is_outlier.astype(bool)]) / o.bulk_readout
    assert ratio > 10, o


# ------------------------------------------------------------------------------------------- two-layer sigmoid
@pytest.mark.nets("sigmoid2")
@seeds
def test_two_layer_first_layer_switches_feature_layer_frozen(report, seed):
    _, rep = report("sigmoid2", seed)
    c1, c2 = rep.codes["z1"], rep.codes["z2"]
    assert c1.verdict == "switching", c1
    assert c1.code_memory < 0.3 and c1.turnover > 0.5, c1
    assert c1.scheme_stable, c1  # the population scheme persists (paper Fig. 5)
    assert c2.verdict == "frozen", c2
    assert c2.code_memory > 0.9 and c2.switching_rate < 0.01, c2
    assert rep.symmetry["z1"].verdict == "restored"
    assert rep.symmetry["z2"].verdict == "broken"


@pytest.mark.nets("sigmoid2")
def test_two_layer_learned_kernel_grows_with_depth(report):
    _, rep = report("sigmoid2", 0)
    k = rep.kernels
    assert k.learned_fraction[1] > k.learned_fraction[0]
    assert k.target_cka[1] > k.target_cka[0]
    assert k.nc1[1] < k.nc1[0]
    # rich (1/N readout) feature layer: collapsed onto the targets' span, D_LR near 0 (an isotropic representation
    # would give 1 − √(2/N) ≈ 0.86); the first layer is richer than isotropic but less collapsed
    assert k.d_lr[1] < 0.1, k.d_lr
    assert k.d_lr[1] < k.d_lr[0] < k.d_lr_isotropic, (k.d_lr, k.d_lr_isotropic)
