"""The ``attention_dim`` experiment (reproduce/attention_dim.py): command line, the P* analysis against exact power
laws, and a ``--size ci`` run.

* Bad arguments give one ``python -m reproduce attention_dim: error: ...`` line and write nothing; an existing result
  is not replaced without ``--overwrite`` (subprocesses, fast).
* A_f curves linear in log P through 0.25 at P* = 3 d^(k + δ_seed), δ = −0.05, 0, 0.05: log-linear interpolation is
  then exact, so the slope per seed is k + δ, their mean k and its s.e. 0.05/√3, for k = 1.5 and k = 1 (the analysis
  says whether 3/2 holds: z = (k − 3/2)/s.e.); the slope over the larger d (8, 12, 16) is k too.
* ``--size ci`` (slow: one 4-chain sampling run per d, under a minute): the result file exists (JSON only), every
  entry has 4 chain means and a health status, and the entries are the ones the settings ask for.
"""

from __future__ import annotations

import json
import math

import pytest

from tests.reproduce.reproduce_scripts import load_script, run_script

SCRIPT = "attention_dim"


@pytest.mark.parametrize("args,words", [
    (["--d", "1,4"], ["--d", ">= 2"]),
    (["--d", "4,4"], ["--d", "distinct"]),
    (["--L", "1"], ["--L", ">= 2"]),
    (["--seeds", "x"], ["--seeds", "integers"]),
    (["--seed", "-1"], ["--seed", ">= 0"]),
    (["--samples", "0"], ["--samples", ">= 1"]),
    (["--resume"], ["--resume", "does not exist"]),
])
def test_bad_argument_one_line_error(tmp_path, args, words):
    r = run_script(SCRIPT, "--size", "ci", "--out", str(tmp_path), *args, timeout=300)
    assert r.returncode == 2
    assert r.stderr.startswith(f"python -m reproduce {SCRIPT}: error: ") and r.stderr.count("\n") == 1, r.stderr
    for w in words:
        assert w in r.stderr
    assert not list(tmp_path.iterdir())


def test_refuses_to_overwrite(tmp_path):
    old = tmp_path / "attention_dim_ci.json"
    old.write_text("old")
    r = run_script(SCRIPT, "--size", "ci", "--out", str(tmp_path), timeout=300)
    assert r.returncode == 2 and "--overwrite" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert old.read_text() == "old"


def _summary(m, k: float) -> dict:
    s = dict(m.SIZES["cpu"])
    health = dict(status="equilibrated", max_rhat=1.0, divergences=0)
    entries = []
    for seed in (0, 1, 2):
        for d in s["d"]:
            ps = 3.0 * d ** (k + 0.05 * (seed - 1))
            for P in (8, 16, 32, 64, 128, 256, 512):
                a = 0.25 + 0.3 * math.log(P / ps)
                entries.append(dict(variant="fixed", L=s["L"], d=d, seed=seed, P=P, beta=1.0, A=a, A_sd=0.1,
                                    A_chains=[a] * 4, A_se_chains=0.0, rel_error=0.5, seconds=1.0, health=health))
    return dict(provenance=dict(command="x", size="cpu", seed=0, started="t", machine="m",
                                versions=dict(python="3", jax="0", numpyro="0", bnnzoo="0")),
                settings=s, entries=entries)


@pytest.mark.parametrize("k,holds", [(1.5, True), (1.0, False)])
def test_analysis_recovers_exact_exponents(k, holds):
    m = load_script(SCRIPT)
    summ = _summary(m, k)
    summ["analysis"] = a = m.analyse(summ)
    assert a["n_seeds"] == 3
    for seed, r in a["per_seed"].items():
        assert r["slope"] == pytest.approx(k + 0.05 * (int(seed) - 1), abs=1e-9)
    assert a["slope_mean"] == pytest.approx(k, abs=1e-9)
    assert a["slope_se"] == pytest.approx(0.05 / math.sqrt(3), rel=1e-6)
    assert a["upper_d"] == [8, 12, 16] and a["slope_upper_mean"] == pytest.approx(k, abs=1e-9)
    assert a["slope_z"] == pytest.approx((k - 1.5) / (0.05 / math.sqrt(3)), rel=1e-6)
    assert a["theory_holds"] is holds and a["theory_slope"] == 1.5
    assert a["health_counts"] == {"equilibrated": len(summ["entries"])}


@pytest.mark.slow
def test_ci_run(tmp_path):
    r = run_script(SCRIPT, "--size", "ci", "--out", str(tmp_path), timeout=1200)
    assert r.returncode == 0, r.stderr[-2000:]
    m = load_script(SCRIPT)
    s = json.loads((tmp_path / "attention_dim_ci.json").read_text())
    assert [p.name for p in tmp_path.iterdir()] == ["attention_dim_ci.json"]     # JSON only
    assert [e["d"] for e in s["entries"]] == list(m.SIZES["ci"]["d"])
    for e in s["entries"]:
        assert len(e["A_chains"]) == 4 and e["health"]["status"]
        assert e["A"] == pytest.approx(sum(e["A_chains"]) / 4, abs=1e-9)
