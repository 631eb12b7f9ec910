"""The ``curse_of_detail`` experiment (reproduce/curse_of_detail.py): argument errors, overwrite refusal, the NNGP
baselines against GP regression written out here, the P*/slope/collapse bookkeeping on synthetic alignment curves
with a known answer, and ``--size ci`` runs.  Also the ``sample_complexity`` experiment it takes ``crossing`` from:
its argument errors and its P* summary on synthetic curves.

Tolerances: the NNGP alignments against the independent formulas to 1e-8 (float64 linear algebra on the same
data); the synthetic sweep A_f = g(P/d) has P* = c·d exactly, so the fitted slope is 1 to 1e-9 and the collapse
spread 0 to 1e-12 (log-linear interpolation between grid points of one curve is exact in the crossing's position
along P/d).  Sampled alignments are checked against the sanity bound [−1, 1] (Cauchy–Schwarz: |A_f| ≤ |f̄|/|y|, so a
value outside needs a predictor larger than the target); specialist counts lie in [0, N1].  The sampling runs are
marked slow (a single sampled entry takes about a minute on the shared CPU, mostly compilation).
"""

from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pytest

from tests.reproduce.reproduce_scripts import load_script, run_script

PROG = "python -m reproduce curse_of_detail"


def _run(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return run_script("curse_of_detail", *args, timeout=timeout)


def _load(name="curse_of_detail"):
    return load_script(name)


@pytest.mark.parametrize("args,words", [
    (["--part", "attention"], ["--part", "three_layer, specialists, two_layer"]),
    (["--n-seeds", "0"], ["--n-seeds", ">= 1"]),
    (["--seed", "-1"], ["--seed", ">= 0"]),
    (["--name", "a/b"], ["--name", "plain file stem"]),
    (["--width-per-d", "0"], ["--width-per-d", "> 0"]),
    (["--warmup", "0"], ["--warmup", ">= 1"]),
    (["--samples", "0"], ["--samples", ">= 1"]),
    (["--start", "aligned"], ["--start aligned", "--part three_layer"]),
    (["--part", "three_layer", "--compare-with", "/nonexistent/x.json"], ["--compare-with", "existing result files"]),
])
def test_bad_argument_one_line_error(tmp_path, args, words):
    r = _run("--size", "ci", "--out", str(tmp_path), "--cache", str(tmp_path / "cache"), *args, timeout=300)
    assert r.returncode == 2
    assert r.stderr.startswith(f"{PROG}: error: ") and r.stderr.count("\n") == 1, r.stderr
    for w in words:
        assert w in r.stderr
    assert not list(tmp_path.iterdir())


def test_cache_that_is_a_file_is_refused(tmp_path):
    f = tmp_path / "cache"
    f.write_text("x")
    r = _run("--size", "ci", "--out", str(tmp_path / "out"), "--cache", str(f), timeout=300)
    assert r.returncode == 2 and "--cache" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_refuses_to_overwrite(tmp_path):
    old = tmp_path / "curse_of_detail_ci.json"
    old.write_text("old")
    r = _run("--size", "ci", "--out", str(tmp_path), "--cache", str(tmp_path / "cache"), timeout=300)
    assert r.returncode == 2 and "--overwrite" in r.stderr, r.stderr
    assert old.read_text() == "old"


def _gp_alignment(K, P, Y, Y_test, kappa):
    """A_f of the GP posterior mean k(x)ᵀ(K + κI)⁻¹y, written out (K over training + test inputs)."""
    f = K[P:, :P] @ np.linalg.solve(K[:P, :P] + kappa * np.eye(P), Y[:, 0])
    y = Y_test[:, 0]
    return float(f @ y / (y @ y))


def test_nngp_baselines_equal_gp_regression():
    """The experiment's NNGP alignments equal GP regression with kernels written out here (three-layer: also the
    NUTS sweep's own implementation, the ``sample_complexity`` experiment)."""
    from bnnzoo.tasks.hermite import hermite_task

    mod = _load()
    bench = _load("sample_complexity")
    task = hermite_task(d=6, P=48, P_test=300, seed=3)
    kappa = 0.05
    X = np.concatenate([task.X, task.X_test])
    d = X.shape[1]

    def erf_k(S):  # E[erf(u) erf(v)] for (u, v) ~ N(0, S)
        g = np.diag(S)
        return (2 / math.pi) * np.arcsin(2 * S / np.sqrt(np.outer(1 + 2 * g, 1 + 2 * g)))

    K3 = erf_k(erf_k(X @ X.T / d))
    a3 = _gp_alignment(K3, task.P, task.Y, task.Y_test, kappa)
    assert mod.nngp_alignment(task, "three_layer", kappa) == pytest.approx(a3, abs=1e-8)
    assert bench.nngp_three_layer_alignment(task, kappa) == pytest.approx(a3, abs=1e-8)

    # φ(z) = ½ + ½ erf(αz), α = √π/2: E[φ(u)φ(v)] = ¼ + ¼ E[erf(αu) erf(αv)], (αu, αv) ~ N(0, α² S)
    S1 = X @ X.T / d
    K2 = 0.25 + 0.25 * erf_k(math.pi / 4 * S1)
    a2 = _gp_alignment(K2, task.P, task.Y, task.Y_test, kappa)
    assert mod.nngp_alignment(task, "two_layer", kappa) == pytest.approx(a2, abs=1e-8)


def test_pstar_slope_and_collapse_on_synthetic_curves():
    """A_f = g(P/d) for every d and seed: P*(A) = c_A · d, so the slope is 1 and the curves collapse exactly."""
    mod = _load()
    g = lambda r: 1 - math.exp(-r / 10.0)  # noqa: E731  A = 0.25 at r = 10 ln(4/3), 0.5 at 10 ln 2
    runs, nngp = [], []
    for seed in (0, 1, 2):
        for d in (6, 8, 12, 16):
            for r in (2, 4, 8, 16):
                runs.append(dict(A=g(r), config=dict(d=d, P=r * d, seed=seed)))
            nngp.append(dict(d=d, seed=seed, P_star={"0.25": 2.0 * d ** 3, "0.5": 5.0 * d ** 3}))
    s = mod.pstar_summary(runs, nngp)
    for lv in ("0.25", "0.5"):
        assert s["slope"][lv]["mean"] == pytest.approx(1.0, abs=1e-9)
        assert s["slope"][lv]["pooled"] == pytest.approx(1.0, abs=1e-9)
        assert s["nngp_slope"][lv]["mean"] == pytest.approx(3.0, abs=1e-9)
    # log-linear interpolation between r = 2 and 4 (A = 0.25 lies there): exact in r, the same for every d
    r25 = mod.crossing([2, 4, 8, 16], [g(r) for r in (2, 4, 8, 16)], 0.25)
    assert s["per_d"]["0.25"]["8"]["over_d"] == pytest.approx(r25, rel=1e-12)
    assert all(v["spread"] == pytest.approx(0.0, abs=1e-12) for v in s["collapse"].values())


def test_pstar_summary_of_one_input_dimension():
    """A run at a single d (``--d 20``, one process per d) gets P* per seed and its mean, and no slope in d (it has
    one x value; the summary used to divide by zero there)."""
    mod = _load()
    g = lambda r: 1 - math.exp(-r / 10.0)  # noqa: E731
    runs = [dict(A=g(r), config=dict(d=20, P=r * 20, seed=seed)) for seed in (0, 1) for r in (2, 4, 8, 16)]
    nngp = [dict(d=20, seed=seed, P_star={"0.25": 2.0 * 20 ** 3, "0.5": 5.0 * 20 ** 3}) for seed in (0, 1)]
    s = mod.pstar_summary(runs, nngp)
    r25 = mod.crossing([2, 4, 8, 16], [g(r) for r in (2, 4, 8, 16)], 0.25)
    assert s["per_d"]["0.25"]["20"]["over_d"] == pytest.approx(r25, rel=1e-12)
    assert s["slope"]["0.25"]["pooled"] is None and s["slope"]["0.25"]["per_seed"] == [None, None]


def test_width_exponent_on_synthetic_counts():
    """Counts c · N^(1/3) (and c · N^(1/2)) give the exponent back exactly, per seed and for the seed means."""
    mod = _load()
    for expo in (1 / 3, 0.5):
        runs = [dict(specialists=(1 + seed) * N ** expo, specialists_chance=0.0027 * N, A=0.5, A_nngp=0.1,
                     q_star=1.0, config=dict(N1=N, d=8, seed=seed)) for seed in (0, 1) for N in (16, 32, 64, 128)]
        e = mod.width_summary(runs, expo)["exponent"]
        assert e["mean"] == pytest.approx(expo, abs=1e-9) and e["of_seed_means"] == pytest.approx(expo, abs=1e-9)
        assert all(v == pytest.approx(expo, abs=1e-9) for v in e["per_seed"])


def test_joint_fit_recovers_the_d_part_of_the_law():
    """Counts c_seed · (N/d)^e over three d and four N give b = e and c = −e back exactly, jointly and per seed; counts
    with no d dependence give c = 0; the summary carries every d (rows and exponent) and both joint fits."""
    mod = _load()
    for expo, dpow in ((1 / 3, -1 / 3), (0.5, -0.5), (1 / 3, 0.0)):
        runs = [dict(specialists=(1 + 0.1 * seed) * N ** expo * d ** dpow, specialists_chance=0.0027 * N, A=0.5,
                     A_nngp=0.1, q_star=1.0, health=dict(status="equilibrated", max_rhat=1.0),
                     config=dict(N1=N, d=d, seed=seed, P=12 * d))
                for seed in (0, 1, 2) for d in (4, 8, 16) for N in (16, 32, 64, 128)]
        ws = mod.width_summary(runs, expo)
        j = ws["joint"]
        assert j["b"] == pytest.approx(expo, abs=1e-9) and j["c"] == pytest.approx(dpow, abs=1e-9)
        assert all(v == pytest.approx(dpow, abs=1e-9) for v in j["per_seed_c"])
        j2 = ws["joint_without_smallest_d"]
        assert ws["smallest_d"] == 4 and j2["n_runs"] == 24 and j2["c"] == pytest.approx(dpow, abs=1e-9)
        assert sorted(ws["per_d"], key=int) == ["4", "8", "16"]
        assert all(w["exponent"]["mean"] == pytest.approx(expo, abs=1e-9) for w in ws["per_d"].values())
        assert all(sorted(w["rows"], key=int) == ["16", "32", "64", "128"] for w in ws["per_d"].values())
        assert j["n_runs"] == 36 and ws["theory"] == expo
    one = mod.width_summary([r for r in runs if r["config"]["d"] == 8], 1 / 3)
    assert "joint" not in one and one["rows"] and one["exponent"]["mean"] == pytest.approx(1 / 3, abs=1e-9)
    with pytest.raises(ValueError, match="--spec-d"):
        mod.run(["--size", "ci", "--spec-d", "4,4", "--out", "/nonexistent-dir"])


def test_sweep_extension():
    """Once a (d, seed) has its grid: P doubled while A_f < 0.25 everywhere (up to max_p_over_d), halved while
    A_f ≥ 0.25 at the smallest P (down to P/d = 1); nothing before the grid is complete or for other parts."""
    mod = _load()
    s = dict(mod.SIZES["cpu"], p_over_d=(4, 12), max_p_over_d=24)
    cfg = dict(model="three_layer", d=8, P=96, N1=32, seed=0)
    r = lambda P, A: dict(A=A, config=dict(cfg, P=P))  # noqa: E731
    assert mod._extension("three_layer", cfg, [r(96, 0.2)], s) is None  # P = 32 not run yet
    assert mod._extension("three_layer", cfg, [r(32, 0.1), r(96, 0.2)], s)["P"] == 192
    assert mod._extension("three_layer", cfg, [r(32, 0.1), r(96, 0.2), r(192, 0.2)], s) is None  # P/d 48 > 24
    assert mod._extension("three_layer", cfg, [r(32, 0.1), r(96, 0.3)], s) is None  # crossed in range
    assert mod._extension("three_layer", cfg, [r(32, 0.3), r(96, 0.5)], s)["P"] == 16
    assert mod._extension("three_layer", cfg, [r(8, 0.3), r(16, 0.3), r(32, 0.3), r(96, 0.5)], s) is None  # P < d
    assert mod._extension("specialists", cfg, [r(32, 0.1), r(96, 0.2)], s) is None


def _check_common(summary, part):
    for r in summary[part]:
        assert r["P_over_d"] == pytest.approx(r["config"]["P"] / r["config"]["d"], rel=1e-12)
        assert -1.0 <= r["A"] <= 1.0 and -1.0 <= r["A_nngp"] <= 1.0
        assert 0.0 <= r["specialists"] <= r["config"]["N1"]
        assert r["health"]["status"] in ("equilibrated", "relaxing", "failed", "unknown")
        assert len(r["A_chains"]) == 4


@pytest.mark.slow
def test_ci_two_layer_run(tmp_path):
    """``--size ci --part two_layer``: the stored NNGP alignment is GP regression with the sigmoid kernel (computed
    here), the specialist counts match their chance level's definition, every run stores its P/d."""
    from bnnzoo.tasks.hermite import hermite_task

    r = _run("--size", "ci", "--part", "two_layer", "--out", str(tmp_path), "--cache", str(tmp_path / "cache"))
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads((tmp_path / "curse_of_detail_ci.json").read_text())
    assert not (tmp_path / "curse_of_detail_ci.md").exists()
    _check_common(summary, "two_layer")
    _check_common(summary, "two_layer_widths")
    e = summary["two_layer"][0]
    c = e["config"]
    task = hermite_task(d=c["d"], P=c["P"], P_test=c["P_test"], seed=c["seed"])
    X = np.concatenate([task.X, task.X_test])
    S = math.pi / 4 * X @ X.T / c["d"]
    g = np.diag(S)
    K = 0.25 + 0.25 * (2 / math.pi) * np.arcsin(2 * S / np.sqrt(np.outer(1 + 2 * g, 1 + 2 * g)))
    assert e["A_nngp"] == pytest.approx(_gp_alignment(K, task.P, task.Y, task.Y_test, c["kappa"]), abs=1e-8)
    widths = summary["two_layer_widths_summary"]["rows"]
    assert sorted(int(n) for n in widths) == [8]
    for n, row in widths.items():
        assert row["chance"] == pytest.approx(int(n) * math.erfc(3 / math.sqrt(2)), rel=1e-12)


@pytest.mark.slow
def test_ci_full_run(tmp_path):
    """``--size ci``, every part: the three-layer NNGP alignment equals the NUTS sweep's implementation, and at the
    largest P of every d the BNN aligns better than the NNGP (feature learning)."""
    from bnnzoo.tasks.hermite import hermite_task

    bench = _load("sample_complexity")
    r = _run("--size", "ci", "--out", str(tmp_path), "--cache", str(tmp_path / "cache"), timeout=1800)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads((tmp_path / "curse_of_detail_ci.json").read_text())
    for part in ("three_layer", "specialists", "two_layer", "two_layer_widths"):
        _check_common(summary, part)
    for e in summary["three_layer"]:
        c = e["config"]
        task = hermite_task(d=c["d"], P=c["P"], P_test=c["P_test"], seed=c["seed"])
        assert e["A_nngp"] == pytest.approx(bench.nngp_three_layer_alignment(task, c["kappa"]), abs=1e-8)
    for d in {e["config"]["d"] for e in summary["three_layer"]}:
        top = max((e for e in summary["three_layer"] if e["config"]["d"] == d), key=lambda e: e["config"]["P"])
        assert top["A"] > top["A_nngp"]
    assert summary["three_layer_summary"]["nngp_slope"]["0.25"]["mean"] > 1.5


def test_proportional_width_plan():
    """--width-per-d: the three-layer P* sweep at N1 = N2 = alpha * d (the proportional limit), the others unchanged."""
    mod = _load()
    s = dict(mod.SIZES["cpu"], width_per_d=4.0)
    runs = mod.plan(["three_layer", "specialists"], s, [0])
    three = [c for part, c in runs if part == "three_layer"]
    assert {(c["d"], c["N1"], c["N2"]) for c in three} == {(6, 24, 24), (8, 32, 32), (12, 48, 48), (16, 64, 64)}
    assert all(c["N2"] == mod.SIZES["cpu"]["width"] for part, c in runs if part == "specialists")
    assert mod.three_width(mod.SIZES["cpu"], 12) == mod.SIZES["cpu"]["width"]


def test_aligned_init_plants_units_along_w_star():
    """The aligned start: the first ALIGNED_UNITS units of W1 have overlap exactly ±ALIGNED_OVERLAP with ŵ* (1e-5,
    float32), the other units and sites are unit-variance draws (their overlaps and entries are far below the
    planted size), the same seed gives the same start and another seed another one; bad arguments raise."""
    mod = _load()
    rng = np.random.default_rng(0)
    w = rng.standard_normal(12) * 3.0  # not normalised: aligned_init normalises
    init = mod.aligned_init(w, 48, 40, 4, seed=7)
    assert init["W1"].shape == (4, 48, 12) and init["W2"].shape == (4, 40, 48) and init["a"].shape == (4, 40, 1)
    ov = init["W1"] @ (w / np.linalg.norm(w))
    k, c = mod.ALIGNED_UNITS, mod.ALIGNED_OVERLAP
    np.testing.assert_allclose(np.abs(ov[:, :k]), c, atol=1e-5)
    assert np.abs(ov[:, k:]).max() < c  # N(0, 1) overlaps: P(|z| > 5) ≈ 6e-7 per unit
    assert len({tuple(np.sign(row)) for row in ov[:, :k]}) > 1  # signs drawn, not all equal
    assert abs(init["W2"].std() - 1.0) < 0.05 and abs(init["a"].std() - 1.0) < 0.15
    again, other = mod.aligned_init(w, 48, 40, 4, seed=7), mod.aligned_init(w, 48, 40, 4, seed=8)
    assert all(np.array_equal(init[n], again[n]) for n in init)
    assert not np.array_equal(init["W1"], other["W1"])
    for kw, word in ((dict(units=0), "units"), (dict(units=49), "units"), (dict(overlap=0.0), "overlap")):
        with pytest.raises(ValueError, match=word):
            mod.aligned_init(w, 48, 40, 4, seed=0, **kw)
    with pytest.raises(ValueError, match="w_star"):
        mod.aligned_init(np.zeros(12), 48, 40, 4, seed=0)


def test_aligned_start_plan_and_cache_keys():
    """--start aligned puts start="aligned" in the three-layer configs (so their cache entries differ from the
    prior-started ones), the prior start leaves the configs (and the existing caches' keys) as they were, and
    --start aligned with other parts is a one-line error."""
    mod = _load()
    s = dict(mod.SIZES["ci"])
    prior = [c for _, c in mod.plan(["three_layer"], s, [0])]
    aligned = [c for _, c in mod.plan(["three_layer"], dict(s, start="aligned"), [0])]
    assert all("start" not in c for c in prior) and all(c["start"] == "aligned" for c in aligned)
    assert [dict(c, start=None) for c in prior] == [dict(c, start=None) for c in aligned]
    assert not {mod._key(c) for c in prior} & {mod._key(c) for c in aligned}
    assert mod._key(prior[0]) == mod._key(dict(prior[0]))
    with pytest.raises(ValueError, match="--start aligned needs --part three_layer"):
        mod.run(["--size", "ci", "--start", "aligned", "--out", "/nonexistent-dir"])


def test_start_comparison_on_synthetic_sweeps():
    """Two families whose A_f differ by a known shift at matched (d, seed, P, N1) give that shift as every pair's
    difference (1e-12), the chain s.e. of each pair from the chains' spread written out here, unmatched runs left
    out, and P*(A = 0.25) of both families per seed and d."""
    mod = _load()
    g = lambda r: 1 - math.exp(-r / 10.0)  # noqa: E731
    chains = [0.0, 0.02, -0.02, 0.0]  # s.d. (ddof 1) √(0.0008/3), s.e. over 4 chains half that
    mk = lambda d, seed, r, shift: dict(  # noqa: E731
        A=g(r) + shift, A_chains=[g(r) + shift + c for c in chains], config=dict(d=d, P=r * d, N1=4 * d, seed=seed))
    ref = [mk(d, s, r, 0.0) for s in (0, 1) for d in (6, 8) for r in (2, 4, 8, 16)]
    runs = [mk(d, s, r, 0.01) for s in (0, 1) for d in (6, 8) for r in (2, 4, 8, 16)] + [mk(12, 0, 4, 0.0)]
    c = mod.start_comparison(runs, ref)
    assert c["n_pairs"] == 16
    assert all(p["diff"] == pytest.approx(0.01, abs=1e-12) for p in c["pairs"])
    se1 = math.sqrt(0.0008 / 3) / 2
    assert all(p["diff_se"] == pytest.approx(math.sqrt(2) * se1, rel=1e-9) for p in c["pairs"])
    assert c["mean_diff"] == pytest.approx(0.01, abs=1e-12) and c["max_abs_diff"] == pytest.approx(0.01, abs=1e-12)
    # A shifted up by 0.01 crosses 0.25 earlier: both P* per seed and d, the shifted one smaller
    assert sorted(c["P_star"]) == ["0", "1"] and all(sorted(v) == ["6", "8"] for v in c["P_star"].values())
    assert all(a < b for v in c["P_star"].values() for a, b in v.values())
    r25 = mod.crossing([2, 4, 8, 16], [g(r) for r in (2, 4, 8, 16)], 0.25)
    assert c["P_star"]["0"]["8"][1] == pytest.approx(8 * r25, rel=1e-12)


@pytest.mark.filterwarnings("ignore:.*divergent transitions:RuntimeWarning")
def test_aligned_start_reaches_the_sampler():
    """A CI-size three-layer run with one warm-up step and two draws (the step size not adapted: the draws stay at or
    near the start) holds the start it was given: from the aligned start every draw holds the planted specialists
    (count ≥ ALIGNED_UNITS − 0.5 of a chain mean; the 3σ threshold is 3, the planted overlap 5), from prior draws
    about the chance count N1 · 0.0027 (below 1), same seed and data."""
    mod = _load()
    cfg = dict(model="three_layer", d=4, P=32, N1=8, N2=8, seed=0, kappa=0.05, warmup=1, samples=2, P_test=100)
    prior = mod.run_entry(cfg)
    aligned = mod.run_entry(dict(cfg, start="aligned"))
    assert min(aligned["specialists_chains"]) >= mod.ALIGNED_UNITS - 0.5
    assert prior["specialists"] < 1.0
    with pytest.raises(ValueError, match="three-layer"):
        mod.run_entry(dict(cfg, model="two_layer", start="aligned"))


# ------------------------------------------------------------------------------------- the sample_complexity sweep
def test_crossing_is_the_sample_complexity_one():
    mod, sc = _load(), _load("sample_complexity")
    assert mod.crossing is sc.crossing
    assert sc.crossing([16, 64], [0.0, 0.5], 0.25) == pytest.approx(32.0, rel=1e-12)   # log-linear interpolation
    assert sc.crossing([16, 32], [0.1, 0.2], 0.25) is None                             # not crossed in range
    assert sc.crossing([16, 32], [0.3, 0.9], 0.25) == 16.0                             # crossed at the smallest P


@pytest.mark.parametrize("args,words", [
    (["--which", "mlp"], ["--which", "three_layer, attention"]),
    (["--d", "8", "8"], ["--d", "distinct"]),
    (["--L", "1"], ["--L", ">= 2"]),
    (["--levels", "1.5"], ["--levels", "(0, 1)"]),
    (["--kappa", "0"], ["--kappa", "> 0"]),
    (["--samples", "0"], ["--samples", ">= 1"]),
    (["--seed", "-1"], ["--seed", ">= 0"]),
])
def test_sample_complexity_bad_argument_one_line_error(tmp_path, args, words):
    r = run_script("sample_complexity", "--size", "ci", "--out", str(tmp_path), "--cache", str(tmp_path / "c"), *args,
                   timeout=300)
    assert r.returncode == 2
    assert r.stderr.startswith("python -m reproduce sample_complexity: error: ") and r.stderr.count("\n") == 1, \
        r.stderr
    for w in words:
        assert w in r.stderr
    assert not list(tmp_path.iterdir())


def test_sample_complexity_summary_on_synthetic_curves():
    """A_f = g(P/d) for the three-layer net gives P*/d the same at every d; attention A_f = g(P/√(L d³)) gives
    P*/√(L d³) the same at every (d, L) and a slope of P* in d of 3/2 at every L (log-linear interpolation is exact
    in the crossing's position along the rescaled axis when the grid points are the same multiples of it)."""
    sc = _load("sample_complexity")
    g = lambda r: 1 - math.exp(-r / 10.0)  # noqa: E731
    res = dict(three_layer=[dict(A=g(r), A_nngp=0.0, wall_s=1.0, config=dict(d=d, P=r * d))
                            for d in (8, 16) for r in (2, 4, 8, 16)],
               attention=[dict(A=g(r), wall_s=2.0, config=dict(d=d, L=L, P=r * math.sqrt(L * d ** 3)))
                          for d in (4, 16) for L in (2, 8) for r in (2, 4, 8, 16)])
    s = sc.summarize(res, (0.25, 0.5))
    r25 = sc.crossing([2, 4, 8, 16], [g(r) for r in (2, 4, 8, 16)], 0.25)
    assert [r["P_over_d"] for r in res["three_layer"][:4]] == [2, 4, 8, 16]
    for d in (8, 16):
        assert s["three_layer"][d]["P*/d@0.25"] == pytest.approx(r25, rel=1e-12)
        assert s["three_layer"][d]["P*_nngp@0.25"] is None
    for d in (4, 16):
        for L in (2, 8):
            assert s["attention"][d][L]["P*/sqrt(L d^3)@0.25"] == pytest.approx(r25, rel=1e-12)
    for L in (2, 8):
        e = s["attention_d_exponent"][L]["P*@0.25"]
        assert e["slope"] == pytest.approx(1.5, abs=1e-9) and e["d"] == [4, 16]
    assert s["sampling_s"] == pytest.approx(8 * 1.0 + 16 * 2.0)
