"""benchmarks/gpu_check.sh at CI size on the CPU: every part runs and the result file says what it measured."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_check_ci_size(tmp_path):
    out = tmp_path / "gc"
    env = dict(os.environ, SIZE="ci", OUT=str(out), PYTHON=sys.executable, JAX_PLATFORMS="cpu")
    res = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_check.sh")], capture_output=True, text=True,
                         env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    r = json.loads(out.with_suffix(".json").read_text())
    assert r["device"].startswith("cpu")
    # FLOPs per gradient by the matmul count, against the sigmoidal net's own count: forward X·W1ᵀ and φ(z)·a,
    # backward W1's gradient, the readout's gradient and the gradient through φ(z): 2PN(2N0 + 3m)
    N, P, N0, m = 20, 20, 40, 3
    assert r["ceiling"]["flops_per_grad"] == 2 * P * N * (2 * N0 + 3 * m)
    # 4 chains compiled with and without XLA's autotuning (a CPU has none to turn off: both run)
    assert [(row["chains"], row["autotune"]) for row in r["ceiling"]["rows"]] == [(1, True), (4, True), (4, False)]
    assert all(row["grads_per_s"] > 0 for row in r["ceiling"]["rows"])
    for s in r["samplers"]:
        assert "error" not in s, s
        assert s["init_s"] >= 0 and s["compile_s"] > 0 and s["sampling_s"] > 0 and s["grads_per_s"] > 0
        assert s["backend_compiles"] >= 1 and s["backend_compile_s"] > 0
    assert {s["sampler"] for s in r["samplers"]} == {"snaper", "nuts"}
    assert "error" not in r["cli"], r["cli"]
    assert r["cli"]["total_s"] > 0 and any("sampler health" in ln or "verdicts" in ln for ln in r["cli"]["verdicts"])
    assert any("wrote" in ln for ln in r["cli"]["sample_log"]), r["cli"]["sample_log"]
    assert r["cli"]["diagnose_timings"].startswith("— timings: health"), r["cli"]["diagnose_timings"]
    # part 4 at CI size: float64 against float32 ("highest"), same seed: q_a within 10 % (the chaotic trajectories
    # part after some steps; the GPU's TF32 runs were 42 % off).  A CPU computes TF32 / bfloat16 as float32: not run
    # there.
    prec = {r["precision"]: r for r in r["precision"]}
    assert set(prec) == {"float64", "highest"}
    assert all("error" not in p for p in prec.values()), prec
    assert prec["float64"]["dtype"] == "float64" and prec["highest"]["dtype"] == "float32"
    assert np.allclose(prec["float64"]["q_a"], prec["highest"]["q_a"], rtol=0.1)
    md = out.with_suffix(".md").read_text()
    assert "cpu" in md.splitlines()[0] and "## 3." in md and "## 4." in md
