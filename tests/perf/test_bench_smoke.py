"""The sampling benchmark script runs end to end at tiny size and writes its table (slow: one subprocess per run)."""

import json
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
    assert "| sigmoid | 8 | ro+data |" in out.with_suffix(".md").read_text()
