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
    # the report's section timings (health last: its checksum runs on a second thread during the analysis)
    timings = r["cli"]["diagnose_timings"]
    assert timings.startswith("— timings: units") and timings.endswith(" s"), timings
    assert all(f"{k} " in timings for k in ("health", "ergodicity", "symmetry", "kernels", "observables")), timings
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


def test_trace_summary_counts_stream_kernels_only(tmp_path, monkeypatch):
    """Part 5's reading of a profiler trace: kernels on the device's streams (not the 'XLA Ops' line, which repeats
    them), matrix products apart, busy time against the span; a trace without a device process says so."""
    import gzip
    import importlib

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    gc = importlib.import_module("gpu_check")
    M = lambda pid, tid, kind, name: dict(ph="M", pid=pid, tid=tid, name=kind, args=dict(name=name))  # noqa: E731
    X = lambda pid, tid, name, ts, dur: dict(ph="X", pid=pid, tid=tid, name=name, ts=ts, dur=dur)  # noqa: E731
    ev = [M(1, None, "process_name", "/host:CPU"), M(2, None, "process_name", "/device:GPU:0"),
          M(2, 7, "thread_name", "Stream #7(Compute)"), M(2, 9, "thread_name", "XLA Ops"),
          M(2, 8, "thread_name", "XLA Modules"),
          X(1, 3, "PjitFunction", 0, 5000),
          X(2, 7, "sm90_xmma_gemm_f32f32", 100, 300), X(2, 7, "loop_add_fusion", 400, 100),
          X(2, 7, "sm90_xmma_gemm_f32f32", 900, 300), X(2, 7, "MemcpyD2D", 2000, 100),
          X(2, 9, "dot.1", 100, 300), X(2, 9, "fusion.3", 400, 100), X(2, 9, "dot.1", 900, 300),
          X(2, 9, "copy.7", 2000, 100),
          X(2, 8, "jit_start", 50, 1200), X(2, 8, "jit_run", 1900, 300)]
    path = tmp_path / "perfetto_trace.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump(dict(traceEvents=ev), fh)
    s = gc.trace_summary(str(path))
    assert s["device_events"] == 4 and s["busy_ms"] == 0.8 and s["gemm_ms"] == 0.6 and s["span_ms"] == 2.0
    assert s["kernels"][0] == ["sm90_xmma_gemm_f32f32", 0.6, 2]
    assert s["threads"]["/device:GPU:0 / XLA Ops"] == [0.8, 4]
    assert s["executions"] == [dict(program="jit_start", index=0, span_ms=1.2, busy_ms=0.7, memcpy_ms=0.0),
                               dict(program="jit_run", index=1, span_ms=0.3, busy_ms=0.1, memcpy_ms=0.1)]
    assert s["longest_execution_ops"][0] == ["dot.1 · sm90_xmma_gemm_f32f32", 0.6, 2]
    with gzip.open(path, "wt") as fh:
        json.dump(dict(traceEvents=ev[:1] + ev[5:6]), fh)
    assert gc.trace_summary(str(path)) == {"device_events": 0}
