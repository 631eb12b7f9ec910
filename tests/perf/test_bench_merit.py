"""The figures-of-merit benchmark (benchmarks/bench_merit.py) runs end to end at tiny size: its table and JSON hold
every column, with finite numbers, for NUTS and BlackJAX's MAMS (smoke only: no timing is asserted)."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("blackjax", reason="the MAMS rows need blackjax (the test extra installs it)")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_merit.py"


def _run(*args, timeout=600):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


def test_bench_merit_quick(tmp_path):
    out = tmp_path / "merit"
    res = _run("--quick", "--nets", "sigmoidal", "--samplers", "nuts,mams", "--out", str(out))
    assert res.returncode == 0, res.stderr[-2000:]
    data = json.loads(out.with_suffix(".json").read_text())
    runs = data["runs"]
    assert [(r["net"], r["sampler"]) for r in runs] == [("sigmoidal", "nuts"), ("sigmoidal", "mams")]
    for r in runs:
        assert "error" not in r, r.get("error")
        for key in ("mse", "q_a", "f", "f_min", "K", "min_obs"):      # (a), per wall and per sampling second
            for group in ("ess_s_wall", "ess_s_sampling"):
                v = r[group][key]
                assert v is not None and math.isfinite(v) and v > 0, (r["sampler"], group, key, v)
        for key in ("a_within_ess_s_wall", "a_within_ess_s_sampling", "grads_per_s_per_chain", "grads_per_draw"):
            assert math.isfinite(r[key]) and r[key] > 0, (r["sampler"], key)             # (b), (e)
        assert 0 <= r["a_rhat_frac"] <= 1 and 0 <= r["acceptance"] <= 1
        # 30 draws per chain is below the health check's minimum: no run can be equilibrated, so no (d)
        assert r["health"] == "failed" and r["t_equilibrated_s"] is None
        t = r["timing"]
        assert t["total_s"] >= t["sampling_s"] > 0
    assert data["meta"]["load_start"] and data["meta"]["load_end"] and data["meta"]["versions"]["blackjax"]
    md = out.with_suffix(".md").read_text()
    for header in ("| net | sampler | health | (d) s | compile s | mse | q_a | f | f min | K | n_out | min obs |",
                   "| net | sampler | sampling s | warm-up s |", "| net | sampler | (b) a within ESS/s |"):
        assert header in md
    assert "| sigmoidal 10 | mams | failed | not equilibrated |" in md
    assert "×)" in md                                   # MAMS's ratios to NUTS
    assert "no GPU: (e) not measured" in md or "FLOP frac" in md


def test_bench_merit_refuses_to_overwrite(tmp_path):
    out = tmp_path / "merit"
    out.with_suffix(".md").write_text("keep me")
    res = _run("--quick", "--nets", "sigmoidal", "--out", str(out), timeout=120)
    assert res.returncode == 2 and "--out" in res.stderr and "--overwrite" in res.stderr
    assert "Traceback" not in res.stderr
    assert out.with_suffix(".md").read_text() == "keep me"
    res = _run("--nets", "lenet", "--out", str(tmp_path / "x"), timeout=120)
    assert res.returncode == 2 and "--nets" in res.stderr and "deep_linear" in res.stderr
