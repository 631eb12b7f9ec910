"""reproduce/neural_collapse.py: the collapse numbers of planted features, the linear net at CI size against the exact
N → ∞ saddle point (centred class-mean Gram matrix, NC2, NC3), and the one-line errors (bad --nets, an existing
result without --overwrite)."""

import json

import numpy as np
import pytest

from .reproduce_scripts import load_script, run_script


def test_collapse_numbers_of_planted_features():
    mod = load_script("neural_collapse")
    rng = np.random.default_rng(0)
    N, labels = 30, np.repeat(np.arange(3), 4)
    Q, _ = np.linalg.qr(rng.standard_normal((N, 3)))
    mu = 3 * Q @ (np.eye(3) - 1 / 3)                  # class means on a simplex ETF, centred
    E = mod.class_average(labels, 3)
    d, G = mod.draw_numbers(mu[:, labels], mu, labels, E)     # collapsed features, readout = class means
    assert d["nc1"] == pytest.approx(0, abs=1e-12) and d["norm_spread"] == pytest.approx(0, abs=1e-12)
    assert d["cos_mean"] == pytest.approx(-0.5) and d["cos_etf_dev"] == pytest.approx(0, abs=1e-12)
    assert d["nc3"] == pytest.approx(1) and d["nc3_centred"] == pytest.approx(1)
    np.testing.assert_allclose(G, 9 / N * (np.eye(3) - 1 / 3), atol=1e-12)
    # per-neuron ratios: noise of variance 0.01 on every point and draw around fixed class means
    feats = mu[:, labels] + 0.1 * rng.standard_normal((2, 400, N, 12))
    r = mod.unit_ratios(feats, E)
    between = np.broadcast_to((mu ** 2).mean(1) - mu.mean(1) ** 2, (2, N))      # over classes, per unit
    np.testing.assert_allclose(r["posterior"], 0.01 / between, rtol=0.15)      # variance over draws
    np.testing.assert_allclose(r["class_mean"], 0.01 / 4 / between, rtol=0.2)  # of a mean of 4 points
    # one draw: within-class variance over 4 points 0.01·3/4; the draw's class means carry noise 0.01/4 · 2/3
    np.testing.assert_allclose(r["single_draw"], 0.01 * 3 / 4 / (between + 0.01 / 6), rtol=0.15)
    dead = np.zeros((1, 5, 2, 12))                                                # silent units: no ratio
    assert mod.ratio_stats(mod.unit_ratios(dead, E)["posterior"])["n_undefined"] == 2


def test_ci_linear_against_the_saddle_point(tmp_path):
    r = run_script("neural_collapse", "--size", "ci", "--nets", "linear", "--out", str(tmp_path), timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    out = tmp_path / "neural_collapse_ci.json"
    res = json.loads(out.read_text())
    assert list(res["results"]) == ["linear"] and res["settings"]["ratios"] == pytest.approx([1 / 3] * 3)
    e = res["results"]["linear"]
    th = e["theory"]
    # the exact theory's class means form a simplex ETF (balanced classes, y- = 0)
    assert th["etf_theory"]["norm_spread"] < 1e-8 and th["etf_theory"]["cos_etf_dev"] < 1e-8
    # N = 12 against N -> inf: the finite-width bias is O(1/N) ≈ 0.08 (measured 0.035-0.049 at seeds 0-2, Monte
    # Carlo s.e. 0.01); 0.1 ≈ 1.2/N. Leaving out the K0 part of K1 would move the theory by 13 %.
    assert th["gram_relative_error"] < 0.1, th["gram_relative_error"]
    assert abs(e["nc3"] - th["nc3_theory"]) < 0.05, (e["nc3"], th["nc3_theory"])        # measured 0.010-0.015
    assert e["gram_etf"]["cos_etf_dev"] < 0.05 and e["gram_etf"]["norm_spread"] < 0.05  # draw-averaged Gc: ETF
    # collapse of the population against the untrained net's features (NC1 0.0069-0.0075 against 0.68)
    assert e["nc1"] < 0.05 < 0.3 < e["prior"]["nc1"]
    assert e["units"]["single_draw"]["median"] > 0.2      # single units are not collapsed (measured 0.46)
    # an existing result is not replaced without --overwrite: one line on stderr, exit 2, the file kept
    before = out.read_text()
    r2 = run_script("neural_collapse", "--size", "ci", "--nets", "linear", "--out", str(tmp_path), timeout=300)
    assert r2.returncode == 2
    assert r2.stderr.startswith("python -m reproduce neural_collapse: error: ") and r2.stderr.count("\n") == 1
    assert "--overwrite" in r2.stderr and out.read_text() == before


def test_bad_nets_one_line_error(tmp_path):
    r = run_script("neural_collapse", "--size", "ci", "--nets", "tanh", "--out", str(tmp_path), timeout=300)
    assert r.returncode == 2
    assert r.stderr.startswith("python -m reproduce neural_collapse: error: --nets") and r.stderr.count("\n") == 1
    assert not list(tmp_path.iterdir())


def test_data_mean_centring_of_unequal_classes():
    """Class means on a simplex ETF about their unweighted mean, μ_c ∝ e_c − 1/3, with classes ½, ¼, ¼: centred on
    the data mean they are ∝ e_c − w (w the class fractions), whose Gram is δ_cd − w_c − w_d + |w|² (|w|² = 3/8):
    norms² 3/8, 7/8, 7/8, cosines −3/√21 (twice, with the large class) and −1/7 [derived here]."""
    mod = load_script("neural_collapse")
    rng = np.random.default_rng(1)
    N, labels = 20, np.repeat(np.arange(3), [8, 4, 4])
    Q, _ = np.linalg.qr(rng.standard_normal((N, 3)))
    mu = Q @ (np.eye(3) - 1 / 3)
    d, _ = mod.draw_numbers(mu[:, labels], mu, labels, mod.class_average(labels, 3))
    assert d["cos_mean"] == pytest.approx(-0.5) and d["norm_spread"] == pytest.approx(0, abs=1e-12)
    n = np.sqrt([3 / 8, 7 / 8, 7 / 8])
    assert d["norm_spread_data_mean"] == pytest.approx(n.std() / n.mean())
    cos = [-3 / np.sqrt(21), -3 / np.sqrt(21), -1 / 7]
    assert d["cos_mean_data_mean"] == pytest.approx(np.mean(cos))
    assert d["cos_etf_dev_data_mean"] == pytest.approx(max(abs(c + 0.5) for c in cos))


@pytest.mark.parametrize("ratios", ["0.5,0.5,0.5", "1", "0.5,a,0.25", "0.5,-0.25,0.75"])
def test_bad_ratios_one_line_error(tmp_path, ratios):
    r = run_script("neural_collapse", "--size", "ci", "--ratios", ratios, "--out", str(tmp_path), timeout=300)
    assert r.returncode == 2
    assert r.stderr.startswith("python -m reproduce neural_collapse: error: --ratios") and r.stderr.count("\n") == 1
    assert not list(tmp_path.iterdir())
