"""reproduce.depth (``python -m reproduce depth``) at ``--size ci``, in a subprocess, checked against things computed here.

* Codes: every layer's codes are among the 2^m = 8 binary patterns over the m = 3 classes, and the fractions of the
  units per code sum to 1 in every layer (over all units, and over the selective ones when there are any).
* Health: computed from 4 chains; the R̂ of every layer's mean squared preactivation q_z<l> is reported (from the
  thinned preactivations: the ci size thins them by 2, as the larger sizes do).
* The three-hidden-layer linear net (y− = 0, N = P = 20): the readout second moment U = aᵀa/N against the N → ∞,
  T → 0 theory of the deep linear net (``bnnzoo.theory.deep_linear``) within 5/N (finite-width correction, as for the
  one-layer net in test_reproduce.py) plus 3 Monte Carlo standard errors, i.e. ≈ 0.3.  At this setting the
  prior value U = σ_a² I is 0.58 away from the theory and the one-hidden-layer theory 1.04, so the check separates
  the depth-3 posterior from both; it does not separate the exact theory from the paper's leading order (0.13 away).
"""

from __future__ import annotations

import json
import subprocess
from itertools import product

import numpy as np
import pytest

from tests.reproduce.reproduce_scripts import load_script, run_script

NAME = "depth"
PATTERNS = {"".join(b) for b in product("01", repeat=3)}


def _run(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return run_script(NAME, *args, timeout=timeout)


def _check_layers(e: dict) -> None:
    assert len(e["layers"]) == e["depth"]
    for lc in e["layers"]:
        assert set(lc["fraction"]) <= PATTERNS, lc["fraction"]
        assert sum(lc["fraction"].values()) == pytest.approx(1.0, abs=1e-9)
        if lc["n_selective"]:
            assert sum(lc["selective_fraction"].values()) == pytest.approx(1.0, abs=1e-9)
        assert 0.0 <= lc["switching_rate"] <= 1.0
        assert lc["verdict"] in ("frozen", "switching") or (lc["verdict"] == "no selective units"
                                                            and not lc["n_selective"])
        assert sum(lc["per_draw_first_fifth"].values()) == pytest.approx(1.0, abs=1e-9)
    h = e["health"]
    assert h["n_chains"] == 4 and h["status"] in ("equilibrated", "relaxing", "failed")
    finite = {k: v for k, v in h["rhat"].items() if v is not None and np.isfinite(v)}
    if h["max_rhat"] is None and e["max_rhat_which"] is None:           # no R̂ is a number: the gate fails it
        assert h["status"] == "failed", h
    elif h["max_rhat"] is None:              # an R̂ of +inf (chains constant and different), written as null
        assert h["rhat"][e["max_rhat_which"]] is None and "constant and different" in h["reason"], h
    else:
        assert finite[e["max_rhat_which"]] == max(finite.values()) == pytest.approx(h["max_rhat"])
    assert sorted(e["rhat_q_z"]) == [f"q_z{l}" for l in range(1, e["depth"] + 1)]
    assert all(np.isfinite(v) and v > 0.9 for v in e["rhat_q_z"].values()), e["rhat_q_z"]
    sh = e["sharpening"]
    assert all(len(sh[k]) == e["depth"] for k in ("learned_fraction", "target_cka", "nc1"))
    assert all(0.0 <= x <= 1.0 + 1e-9 for x in sh["target_cka"])


@pytest.mark.parametrize("args,words", [
    (["--nets", "tanh3"], ["--nets", "sig3, relu3"]),
    (["--seed", "-2"], ["--seed", ">= 0"]),
    (["--chains", "1"], ["--chains", ">= 2"]),
    (["--sampler", "gibbs", "--nets", "sig3"], ["--sampler gibbs", "lin3"]),
])
def test_bad_argument_one_line_error(tmp_path, args, words):
    r = _run("--size", "ci", "--out", str(tmp_path), *args, timeout=300)
    assert r.returncode == 2
    assert r.stderr.startswith(f"python -m reproduce {NAME}: error: ") and r.stderr.count("\n") == 1, r.stderr
    for w in words:
        assert w in r.stderr
    assert not list(tmp_path.iterdir())


def test_refuses_to_overwrite(tmp_path):
    old = tmp_path / "depth_ci.json"
    old.write_text("old")
    r = _run("--size", "ci", "--out", str(tmp_path), timeout=300)
    assert r.returncode == 2 and "--overwrite" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert old.read_text() == "old"


def test_depth_ci_linear_three_layers_matches_theory(tmp_path):
    from bnnzoo.tasks import toy_task
    from bnnzoo.theory.deep_linear import deep_linear_zero_temperature

    r = _run("--size", "ci", "--nets", "lin3", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((tmp_path / "depth_ci.json").read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["depth_ci.json"]      # the JSON summary only
    assert s["planned"] == ["lin3"] and s["unfinished"] == [] and s["sampler"] == "snaper" and s["chains"] == 4
    (e,) = s["nets"]
    assert e["net"] == "lin3"
    _check_layers(e)
    task = toy_task(P=e["P"], N0=e["N0"], y_neg=e["y_neg"])
    th = deep_linear_zero_temperature(task.X, task.Y, depth=3, sigma_a2=e["sigma_a2"])
    U, se = np.array(e["U"]), np.array(e["U_se"])
    nrm = np.linalg.norm(th.U)
    err, err_se = np.linalg.norm(U - th.U) / nrm, np.sqrt(np.sum(se**2)) / nrm
    assert err <= 5.0 / e["N"] + 3 * err_se, (err, err_se)
    assert err == pytest.approx(e["U_relative_error"], rel=1e-9)
    # the learned part of the kernel grows toward the feature layer (theory: K_l − K0 = Y D_l Yᵀ with D_l growing)
    lf = e["sharpening"]["learned_fraction"]
    assert lf[0] < lf[1] < lf[2], lf


def test_depth_ci_linear_paper_targets_with_gibbs(tmp_path):
    """``lin3_paper`` (y− = −½, rank-deficient targets) and its variants with the exact Gibbs sampler at N = P = 20
    (≈ 1 s of sampling each): the finite-T theory recomputed here matches the file; along the null direction of Y
    the theory keeps the prior σ_a²; the readout second moment given the sampled feature kernels (an exact identity
    at any N, independent of the theory) matches the sampled U within 5 % of ‖U‖ (measured 0.5–1.4 %), and along
    the null direction within 0.02 (measured ≤ 0.005; σ_a² = 0.37)."""
    from bnnzoo.tasks import toy_task
    from bnnzoo.theory.deep_linear import deep_linear_saddle_point

    nets = ["lin3_paper", "lin3_paper_N2", "lin3_paper_T"]
    r = _run("--size", "ci", "--nets", ",".join(nets), "--sampler", "gibbs", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((tmp_path / "depth_ci.json").read_text())
    assert [e["net"] for e in s["nets"]] == nets and s["sampler"] == "gibbs"
    assert [e["N"] for e in s["nets"]] == [20, 40, 20] and s["nets"][2]["temperature"] == pytest.approx(0.001)
    for e in s["nets"]:
        _check_layers(e)
        task = toy_task(P=e["P"], N0=e["N0"], y_neg=e["y_neg"])
        th = deep_linear_saddle_point(task, depth=3, temperature=e["temperature"], sigma_a2=e["sigma_a2"])
        np.testing.assert_allclose(e["U_theory_finite_T"], th.U, rtol=1e-6, atol=1e-9)
        U = np.array(e["U"])
        assert np.linalg.norm(U - th.U) / np.linalg.norm(th.U) == pytest.approx(e["U_relative_error_finite_T"],
                                                                                rel=1e-6)
        rg = e["readout_given_kernel"]
        assert rg["null_U_theory"] == pytest.approx(e["sigma_a2"], rel=1e-6)
        assert rg["U_rao_blackwell_vs_sampled"] < 0.05
        assert abs(rg["null_U_rao_blackwell"] - rg["null_U"]) < 0.02
        assert 0 < rg["variance_term"] < e["sigma_a2"] and 0 < rg["n_pinned"] <= min(e["N"], e["P"])


@pytest.mark.slow
def test_depth_ci_all_default_nets(tmp_path):
    r = _run("--size", "ci", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((tmp_path / "depth_ci.json").read_text())
    assert [e["net"] for e in s["nets"]] == list(s["settings"]["nets"]) and s["unfinished"] == []
    for e in s["nets"]:
        _check_layers(e)


def test_depth_ci_relu_two_layers(tmp_path):
    """``relu2`` (two hidden ReLU layers, y− = −½, the second net the frozen first-layer codes are stated for) runs
    at N = P = 20 and reports both layers' codes, health and sharpening."""
    r = _run("--size", "ci", "--nets", "relu2", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    e, = json.loads((tmp_path / "depth_ci.json").read_text())["nets"]
    assert (e["net"], e["depth"], e["N"], e["P"]) == ("relu2", 2, 20, 20)
    _check_layers(e)


def test_feature_layer_inputs_have_the_prior_feature_kernel():
    """The inputs of ``sig1_fk`` / ``sig1_fs`` against the closed-form kernel of the paper's sigmoid
    φ = ½ + ½ erf(αz), α² = π/4, on orthogonal unit inputs: E[φ²] = ¼ + (1/(2π)) arcsin(2α²/(1 + 2α²)) and
    E[φ(z)φ(z')] = ¼ for independent z, z' (to 1e-9)."""
    import bnnzoo

    depth = load_script(NAME)
    entry = bnnzoo.get_entry("sigmoidal")
    task = entry.make_task(**dict(entry.task_defaults, P=12, N0=32, y_neg=0.5))
    a2 = np.pi / 4
    k0 = 0.25 + np.arcsin(2 * a2 / (1 + 2 * a2)) / (2 * np.pi)
    off = ~np.eye(12, dtype=bool)
    G = (lambda X: X @ X.T / X.shape[1])(depth.feature_layer_inputs(task, "feature_kernel").X)
    np.testing.assert_allclose(np.diag(G), k0, atol=1e-9)
    np.testing.assert_allclose(G[off], 0.25, atol=1e-9)
    G = (lambda X: X @ X.T / X.shape[1])(depth.feature_layer_inputs(task, "feature_scale").X)
    np.testing.assert_allclose(np.diag(G), k0, atol=1e-9)
    np.testing.assert_allclose(G[off], 0.0, atol=1e-9)


def test_chain_disagreement_ranks_chains_by_their_populations():
    # six chains whose training error is set by construction: chain k's outputs sit δ_k off every target, so its
    # mse is δ_k² at every draw (plus a small draw-to-draw wobble); the fraction of units on code 111 rises with δ_k
    # (ρ = 1), on 011 falls with it (ρ = −1); a code under 5 % and a code equal in every chain are not tested
    from scipy import stats

    mod = load_script("_common")
    rng = np.random.default_rng(0)
    C, D, P, m = 6, 40, 5, 3
    delta = np.array([0.10, 0.30, 0.20, 0.50, 0.40, 0.60])
    Y = rng.standard_normal((P, m))
    wobble = 0.01 * rng.standard_normal((C, D, 1, 1))
    f = Y + delta[:, None, None, None] + wobble
    up = (0.2 + delta).tolist()
    down = (0.8 - delta).tolist()
    layer = dict(layer=2, fraction={"111": 0.55, "011": 0.43, "100": 0.01, "101": 0.2},
                 per_chain={"111": up, "011": down, "100": [0.01] * C, "101": [0.2] * C})
    mse = np.mean((f - Y) ** 2, axis=(2, 3))
    out = mod.chain_disagreement(mse, [layer])
    np.testing.assert_allclose(out["mse_chain_mean"], mse.mean(1), rtol=1e-12)
    # independent draws: the batch-means s.e. is the plain s.d./√D up to the scatter of 10 batches (factor 2)
    ratio = np.array(out["mse_chain_se"]) / (mse.std(1, ddof=1) / np.sqrt(D))
    assert np.all((ratio > 0.5) & (ratio < 2.0)), ratio
    links = {k["code"]: k for k in out["links"]}
    assert set(links) == {"111", "011"}
    assert links["111"]["rho"] == pytest.approx(1.0) and links["011"]["rho"] == pytest.approx(-1.0)
    assert links["111"]["p"] == pytest.approx(stats.spearmanr(up, mse.mean(1)).pvalue) and links["111"]["p"] < 0.01


def test_outlier_stats_finds_planted_outliers_per_layer():
    # 3 chains × 40 draws × 16 units: unit-independent N(0, 1) outgoing weights and preactivations, except chain 0's
    # unit 5 (outgoing weights and preactivation ×10: an outlier), chain 1's unit 2 (outgoing ×10 only: not one, both
    # scales must stand out) and chain 2's unit 7 (preactivation ×10 only); the threshold is N^(1/4) = 2 × median
    depth = load_script(NAME)
    rng = np.random.default_rng(0)
    out = rng.standard_normal((3, 40, 16, 16))
    z = rng.standard_normal((3, 40, 16, 12))
    out[0, :, 5] *= 10
    z[0, :, 5] *= 10
    out[1, :, 2] *= 10
    z[2, :, 7] *= 10
    sel = np.zeros((3, 16), bool)
    sel[0, 5] = sel[1, 3] = True
    codes = np.full((3, 16), "000", dtype=object)
    codes[0, 5] = "010"
    st = depth.outlier_stats(out, z, sel, codes, feature_layer=False)
    assert st["n_outliers"] == 1 and st["per_chain"] == [1, 0, 0] and st["n_units"] == 48
    assert st["n_outgoing"] == 2 and st["n_preactivation"] == 2 and st["threshold_factor"] == pytest.approx(2.0)
    assert st["n_selective"] == 2 and st["n_selective_outliers"] == 1 and st["outlier_codes"] == ["010"]
    assert st["classes"] is None
    assert 8 < st["outgoing_over_bulk"][0] < 12 and 8 < st["preactivation_over_bulk"][0] < 12
    assert 8 < st["max_outgoing_over_bulk"] < 12 and 8 < st["max_preactivation_over_bulk"] < 12
