"""The sampling benchmark script runs end to end at tiny size and writes its table (slow: one subprocess per run)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_sampling_quick(tmp_path):
    out = tmp_path / "bench"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_sampling.py"), "--quick", "--activations",
                          "sigmoid", "--methods", "baseline,ro+data", "--out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    data = json.loads(out.with_suffix(".json").read_text())
    assert [r["method"] for r in data["runs"]] == ["baseline", "ro+data"]
    assert all("error" not in r and r["ess_s_a"] > 0 and r["overhead"] > 0 for r in data["runs"])
    assert all(r["ess_wc_a"] > 0 and 0 <= r["rhat_frac_a"] <= 1 for r in data["runs"])
    assert "| sigmoid | 8 | ro+data |" in out.with_suffix(".md").read_text()


@pytest.mark.slow
def test_bench_overhead_quick(tmp_path):
    out = tmp_path / "overhead"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_overhead.py"), "--quick", "--activations",
                          "sigmoid", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    runs = json.loads(out.with_suffix(".json").read_text())["runs"]
    assert [r["param"] for r in runs] == ["weight space", "ro+data"]
    for r in runs:
        assert "error" not in r and r["grad_us"] > 0 and r["step_us"] > 0 and r["mean_L"] >= 1
        # bookkeeping of the table (record is the residual, so these hold by construction): the JSON fields agree
        assert r["fixed_us"] + r["record_us"] + r["mean_L"] * r["step_us"] == pytest.approx(r["per_draw_us"])
        assert r["overhead_run"] == pytest.approx(r["per_draw_us"] / (r["mean_L"] * r["grad_us"]))
    assert "| sigmoid | 8 | ro+data |" in out.with_suffix(".md").read_text()


def test_bench_leapfrog_loop_ci(tmp_path):
    """The trajectory-loop benchmark at CI size on a CPU: every variant but the GPU-only one compiles and runs."""
    out = tmp_path / "ll"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_leapfrog_loop.py"), "--size", "ci",
                          "--out", str(out)], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert res.returncode == 0, res.stderr[-2000:]
    rows = json.loads(out.with_suffix(".json").read_text())["rows"]
    assert [r["variant"] for r in rows] == ["unroll 1", "unroll 2", "unroll 4", "unroll 8", "static trip count"]
    assert all("error" not in r and r["grads_per_s"] > 0 for r in rows)
    assert "| unroll 2 |" in out.with_suffix(".md").read_text()


@pytest.mark.slow
def test_demo_sigmoidal_units_tiny(tmp_path):
    """The demo's sigmoidal net with sampler='units' and two start families at N = P = 20: one JSON row with the
    health, the families' verdict, their code fractions and the mean field's masses (which sum to 1 here)."""
    out = tmp_path / "rows.jsonl"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "demo_sigmoidal_units.py"), "--size", "20",
                          "--warmup", "5", "--samples", "10", "--chains", "2", "--out", str(out)],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert res.returncode == 0, res.stderr[-2000:]
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["families"] == ["prior", "meanfield"] and row["size"] == 20
    assert row["health"] in ("equilibrated", "relaxing", "metastable", "failed")
    assert isinstance(row["agree"], bool) and row["wall_s"] > 0
    assert set(row["code_fractions"]) == {"prior", "meanfield"}
    assert sum(row["meanfield"].values()) == pytest.approx(1.0, abs=0.01)


def test_family_power_runs_and_writes_its_three_tables(tmp_path):
    """benchmarks/family_power.py at 4 repeats: its three tables, and the permutation test's attainable-p line."""
    out = tmp_path / "family_power"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "family_power.py"), "--reps", "4", "--out",
                          str(out)], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert res.returncode == 0, res.stderr[-2000:]
    text = out.with_suffix(".md").read_text()
    assert text.count("## ") == 3 and "| 0 | 4 |" in text and "| 3.5 | 4 |" in text, text
    assert "2/C(8,4) = 0.0286" in text and "| 8 | 10 % vs 0 % | 2 | 8 | 0.00125 |" in text, text


@pytest.mark.slow
def test_units_own_tiny(tmp_path):
    """The own-readout step benchmark at N = P = 8: one row per run, counts within their bounds, and a bad run
    spec refused with one line."""
    out = tmp_path / "own"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "units_own.py"), "--runs", "sig_half:off,relu:on",
                          "--size", "8", "--chains", "2", "--sweeps", "3,5", "--out", str(out)],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert res.returncode == 0, res.stderr[-2000:]
    rows = json.loads(out.with_suffix(".json").read_text())["rows"]
    assert [(r["net"], r["own"]) for r in rows] == [("sig_half", False), ("relu", True)]
    for r in rows:
        assert 0 <= r["never_moved"] <= r["units"] == 16 and 0 <= r["stuck_on_one_class"] <= r["stuck_units"] <= 16
        assert 0 < r["acceptance"] <= 1 and r["s_per_sweep"] > 0
    assert "| relu | on |" in out.with_suffix(".md").read_text()
    bad = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "units_own.py"), "--runs", "sig:on"],
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode != 0 and "--runs" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_units_pairs_and_relu_diagnosis_tiny(tmp_path):
    """The pair-rotation benchmark and the ReLU diagnosis at N = P = 8: one row per run with counts within their
    bounds, the diagnosis' three tables, and a bad run spec refused with one line."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    out = tmp_path / "pairs"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "units_pairs.py"), "--runs", "relu:0,relu:1",
                          "--size", "8", "--chains", "2", "--sweeps", "3,5", "--out", str(out)],
                         capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    rows = json.loads(out.with_suffix(".json").read_text())["rows"]
    assert [(r["net"], r["pairs"]) for r in rows] == [("relu", 0.0), ("relu", 1.0)]
    assert rows[0]["pair_acceptance"] is None and 0 <= rows[1]["pair_acceptance"] <= 1
    for r in rows:
        assert 0 < r["acceptance"] <= 1 and r["s_per_sweep"] > 0 and 0 <= r["outlier_count_changes"] <= 1
    assert "| relu | 1 |" in out.with_suffix(".md").read_text()
    bad = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "units_pairs.py"), "--runs", "relu:x"],
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode != 0 and "--runs" in bad.stderr and "Traceback" not in bad.stderr
    diag = tmp_path / "diag"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "units_relu_diagnose.py"), "--size", "8",
                          "--chains", "2", "--sweeps", "3,5", "--pairs", "1", "--out", str(diag)],
                         capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    text = diag.with_suffix(".md").read_text()
    tables = sum(line.startswith("|---") for line in text.splitlines())
    assert "| outliers |" in text and "| bulk |" in text and tables == 3



@pytest.mark.slow
def test_units_cost_tiny(tmp_path):
    """The units sampler's cost benchmark at N = P = 10: a positive cost per chain-sweep, the projection equal to
    chain-sweeps × cost / cores, and SNAPER's row with its time per draw and steps."""
    out = tmp_path / "cost"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "units_cost.py"), "--sizes", "10", "--chains", "2",
                          "--sweeps", "50", "--snaper-sizes", "10", "--snaper-warmup", "5", "--snaper-samples", "5",
                          "--out", str(out)], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert res.returncode == 0, res.stderr[-2000:]
    units, snaper = json.loads(out.with_suffix(".json").read_text())["rows"]
    assert "error" not in units and units["s_per_chain_sweep"] > 0
    assert snaper["sampler"] == "snaper" and snaper["s_per_chain_draw"] > 0 and snaper["steps_per_draw"] >= 1
    md = out.with_suffix(".md").read_text()
    minutes = units["s_per_chain_sweep"] * 3 * 8 * 450 / 2 / 60       # S4's setting on 2 cores
    assert f"| 10 | 2 | {units['s_per_chain_sweep']:.3f} |" in md and f"{minutes:.1f} min" in md
    assert "| 10 | " + f"{snaper['s_per_chain_draw']:.3f}" in md


@pytest.mark.slow
def test_units_certify_cores_tiny(tmp_path):
    """One start family per core at N = P = 10: both families' runs kept, combined into one run whose families are
    those asked for, the verdict, the agreement, the per-family code 111 and the mean field's written to the page;
    a second run with the same stem is refused, and so is a family of one chain; a run past its timeout and a run
    whose family fails stop every family and leave no page and no result line behind.  The stem carries a dot (as
    a temperature in it does): the page and the JSON keep its whole name."""
    out, core = tmp_path / "ucc_T0.01", min(os.sched_getaffinity(0))     # both families on one of this test's cores
    cmd = [sys.executable, str(ROOT / "benchmarks" / "units_certify_cores.py"), "--size", "10", "--chains", "2",
           "--sweeps", "3,5", "--cores", f"{core},{core}", "--out", str(out)]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(Path(f"{out}.json").read_text())
    assert [c["family"] for c in got["children"]] == ["prior", "meanfield"]
    assert set(got["result"]["observable"]) == {"prior", "meanfield"} and 0 < got["result"]["meanfield"] < 1
    assert all((tmp_path / f"ucc_T0.01_{f}.nc").exists() for f in ("prior", "meanfield"))
    r, md = got["result"], Path(f"{out}.md").read_text()
    assert f"| 10 | {got['total_s']:.0f} s |" in md and f"| {r['status']}" in md and f"| {r['agree']} |" in md
    assert all(f"{f} {v[0]:.4f} ± {v[1]:.4f}" in md for f, v in r["observable"].items())
    assert f"| {r['meanfield']:.4f} |" in md and not list(tmp_path.glob("ucc_T0.01_*.out"))
    assert not (tmp_path / "ucc_T0.json").exists()
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert again.returncode == 2 and "choose another stem" in again.stderr
    one = subprocess.run(cmd[:5] + ["1"] + cmd[6:-1] + [str(tmp_path / "one")], capture_output=True, text=True,
                         timeout=60, env=env)
    assert one.returncode == 2 and "--chains must be >= 2" in one.stderr
    late = subprocess.run(cmd[:-1] + [str(tmp_path / "late"), "--timeout", "1"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert late.returncode == 1 and "ran past --timeout 1 s; the other families were stopped" in late.stderr
    bad = subprocess.run(cmd[:-1] + [str(tmp_path / "bad"), "--temperature", "-1"], capture_output=True, text=True,
                         timeout=300, env=env)
    assert bad.returncode == 1 and re.search(r"family (prior|meanfield) failed \(exit code 1", bad.stderr), bad.stderr
    for stem in ("late", "bad"):          # nothing of a stopped run but a finished family's .nc file
        assert not [p.name for p in tmp_path.glob(f"{stem}*") if not p.name.endswith(".nc")]


@pytest.mark.slow
def test_drift_calibration_tiny(tmp_path):
    """The drift test on windows of a tiny run: one row per invariant observable, (samples − window) / step + 1
    windows, the calibrated count 2·Φ(−3) per chain (4 chains: 0.0108), the first tenth's excess of the outlier count
    per chain, and the whole run's |z| the largest per-chain value the gate reads; a second run with the same stem is
    refused."""
    out = tmp_path / "dc_T0.01"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "drift_calibration.py"), "--width", "10", "--warmup", "10",
           "--samples", "40", "--window", "20", "--step", "10", "--chains", "2", "--out", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(Path(f"{out}.json").read_text())
    rows = {r["observable"]: r for r in got["observables"]}
    assert set(rows) == {"mse", "q_a[0]", "q_a[1]", "q_a[2]", "n_outliers", "q_z1"}
    for r in rows.values():
        assert r["windows"] == 3 and [w["start"] for w in r["per_window"]] == [0, 10, 20]
        assert r["max_z"] == max(max(w["z"]) for w in r["per_window"]) and len(r["per_window"][0]["z"]) == 4
        assert r["expected_above_3"] == pytest.approx(0.0108, abs=5e-5)
    n = rows["n_outliers"]
    assert len(n["first_tenth_excess"]) == 4 and n["later_windows"] == 4 * 9
    md = Path(f"{out}.md").read_text()
    assert f"| n_outliers | 3 | {n['max_z']:.2f} |" in md and "Outlier count: modal count" in md
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "choose another stem" in again.stderr
