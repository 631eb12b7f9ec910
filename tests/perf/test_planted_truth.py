"""The planted-truth benchmark (benchmarks/planted_truth.py) at tiny size: the result files hold one row per
(net, sampler), the planted-vs-planted control reads "reached", the prior family's runs are recorded with their
check, and sampler="units" on the two-layer net is reported as not applicable; its device script at CI size
(slow)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "planted_truth.py"


def _run(*args, timeout=600):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env={**os.environ, "JAX_PLATFORMS": "cpu"})


def _check_row(r):
    assert "error" not in r, r.get("error")
    assert r["status"] in ("thermalised", "not thermalised")
    c = r["control"]
    assert c["reached"], c["differing"]                    # two planted families: the same law
    assert c["chains"] == {"planted": 4, "other": 4} and c["n_observables"] > 0
    assert c["power"]["mse"]["detectable"] > 0
    assert r["blocks"], r.get("stopped")                    # at least one prior run fitted the budget
    assert [b["warmup"] for b in r["blocks"]] == [r["w0"] * 2 ** k for k in range(len(r["blocks"]))]
    for b in r["blocks"]:
        assert b["wall_s"] > 0 and b["spent_s"] >= b["wall_s"] and b["worst"]["t"] is not None
        assert b["reached"] == (b["n_differing"] == 0)
    if r["status"] == "thermalised":
        assert r["blocks"][-1]["reached"] and r["warmup"] == r["blocks"][-1]["warmup"]
    else:
        assert not any(b["reached"] for b in r["blocks"]) and r["stopped"]


def test_planted_truth_tiny(tmp_path):
    out = tmp_path / "pt"
    res = _run("--nets", "sigmoidal,sigmoidal_d2", "--sizes", "8", "--samplers", "units", "--chains", "4",
               "--warmup", "units=5,snaper=10", "--draws", "units=20", "--budget", "60", "--out", str(out))
    assert res.returncode == 0, res.stderr[-2000:]
    data = json.loads(out.with_suffix(".json").read_text())
    rows = data["rows"]
    assert [(r["net"], r["sampler"]) for r in rows] == [("sigmoidal", "units"), ("sigmoidal_d2", "units")]
    _check_row(rows[0])
    assert rows[1]["status"] == "n/a" and "depth" in rows[1]["reason"]
    md = out.with_suffix(".md").read_text()
    assert md.startswith("# Ground truth on planted tasks") and "Command: `python benchmarks/planted_truth.py" in md
    assert "| sigmoidal (depth 1, y− = 0.5) | 8 | units |" in md
    assert "w0 + kept draws S: units 5 + 20 (" in md                 # a sampler not run is not listed
    d2 = next(ln for ln in md.splitlines() if ln.startswith("| sigmoidal_d2 (depth 2, y− = 0.5) | 8 | units |"))
    assert "| not run: sampler='units'" in d2


def test_planted_truth_refuses_bad_arguments(tmp_path):
    res = _run("--samplers", "units,gibbs", "--out", str(tmp_path / "x"), timeout=60)
    assert res.returncode == 2 and "--samplers" in res.stderr.splitlines()[-1]
    res = _run("--warmup", "snaper=10", "--out", str(tmp_path / "x"), timeout=60)
    assert res.returncode == 2 and "--warmup" in res.stderr.splitlines()[-1]
    assert not (tmp_path / "x.json").exists()


@pytest.mark.slow
def test_planted_truth_gpu_script_ci_size(tmp_path):
    """benchmarks/planted_truth_gpu.sh at SIZE=ci on the CPU: every net and sampler has its row, each control
    reads "reached", and a second call refuses to overwrite the result."""
    out = tmp_path / "gpu_ci"
    env = dict(os.environ, SIZE="ci", OUT=str(out), PYTHON=sys.executable, JAX_PLATFORMS="cpu")
    res = subprocess.run(["bash", str(ROOT / "benchmarks" / "planted_truth_gpu.sh")], capture_output=True,
                         text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    rows = json.loads(out.with_suffix(".json").read_text())["rows"]
    assert {(r["net"], r["sampler"]) for r in rows} == {(n, s) for n in ("sigmoidal", "relu", "sigmoidal_d2")
                                                        for s in ("snaper", "nuts", "units")}
    for r in rows:
        if r["net"] == "sigmoidal_d2" and r["sampler"] == "units":
            assert r["status"] == "n/a"
        elif r.get("status") != "n/a":                      # not cut by the deadline on a slow machine
            assert "error" not in r, r.get("error")
            assert r["control"]["reached"], (r["net"], r["sampler"], r["control"]["differing"])
    again = subprocess.run(["bash", str(ROOT / "benchmarks" / "planted_truth_gpu.sh")], capture_output=True,
                           text=True, env=env, timeout=60)
    assert again.returncode == 2 and "exists" in again.stderr
