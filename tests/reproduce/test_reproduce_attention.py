"""The ``attention_context`` experiment (reproduce/attention_context.py): command line, the first-order analysis
against the model, and a ``--size ci`` run.

* Bad arguments give one ``python -m reproduce attention_context: error: ...`` line and write nothing; an existing
  result is not replaced without ``--overwrite`` (subprocesses, fast).
* The first-order formula of the module docstring, checked through the model's own ``attention_forward`` with
  hand-built two-head teacher weights: the relative error of f against the target is O(u²) in the score amplitude u
  (below 3 % at u = 0.1, and falling by 4 ± 0.6 when u halves), the teacher's alignment is within 3 % of 1, the exact
  target's is 1 to 10⁻¹², and the weight product G = L √d_h/(2cβ√(L − 1)) is the closed form for both variants
  (β = 1, β = √L) — numpy only, seconds.
* Under the prior the token-mean (uniform attention) part of f has second moment 1/L (Monte Carlo, 20 %).
* The P* bracket search and the log-linear crossing on hand-made curves (exact values); the analysis of exact power
  laws (slopes, Δ, γ = 2Δ and what follows from them).
* ``--size ci`` (slow: one 4-chain sampling run per context length, over a minute on a loaded 2-core machine): the
  result file exists (JSON only), every entry has 4 chain means and a health status, A_f of a net at P = 16 (about
  half of P*(0.25) ≈ 30 at d = 4, L = 2) is below 0.5 in magnitude, and the stored first-order check equals the one
  computed here.
"""

from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pytest

from tests.reproduce.reproduce_scripts import load_script, run_script

SCRIPT = "attention_context"


def _module():
    return load_script(SCRIPT)


def _run(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return run_script(SCRIPT, *args, timeout=timeout)


@pytest.mark.parametrize("args,words", [
    (["--variants", "fixed,cubic"], ["--variants", "sqrtL"]),
    (["--L", "1,4"], ["--L", ">= 2"]),
    (["--L", "4,4"], ["--L", "distinct"]),
    (["--seeds", "x"], ["--seeds", "integers"]),
    (["--samples", "0"], ["--samples", ">= 1"]),
    (["--seed", "-1"], ["--seed", ">= 0"]),
    (["--resume"], ["--resume", "does not exist"]),
])
def test_bad_argument_one_line_error(tmp_path, args, words):
    r = _run("--size", "ci", "--out", str(tmp_path), *args, timeout=300)
    assert r.returncode == 2
    assert r.stderr.startswith(f"python -m reproduce {SCRIPT}: error: ") and r.stderr.count("\n") == 1, r.stderr
    for w in words:
        assert w in r.stderr
    assert not list(tmp_path.iterdir())


def test_refuses_to_overwrite(tmp_path):
    old = tmp_path / "attention_context_ci.json"
    old.write_text("old")
    r = _run("--size", "ci", "--out", str(tmp_path), timeout=300)
    assert r.returncode == 2 and "--overwrite" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert old.read_text() == "old"


@pytest.mark.parametrize("variant", ["fixed", "sqrtL"])
@pytest.mark.parametrize("L", [2, 5, 16])
def test_first_order_formula_matches_the_model(variant, L):
    m = _module()
    d = 4
    c = m.first_order_check(variant, L, d, n=2000, u=0.1)
    beta = 1.0 if variant == "fixed" else math.sqrt(L)
    assert c["beta"] == pytest.approx(beta, rel=1e-12)
    # closed form: G = L √d_h / (2 c β √(L-1)) with c = 1/√(2 d_h)
    assert c["G"] == pytest.approx(L * math.sqrt(d) * math.sqrt(2 * d) / (2 * beta * math.sqrt(L - 1)), rel=1e-12)
    assert c["rel_error"] < 0.03, c                          # first order holds at u = 0.1
    assert c["ratio"] == pytest.approx(4.0, abs=0.6), c      # the error is O(u²)
    assert c["A_teacher"] == pytest.approx(1.0, abs=0.03), c
    assert c["A_target"] == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("L", [2, 8])
def test_prior_token_mean_part_is_one_over_L(L):
    # f(β → 0) = c Σ_h a_hᵀ V_h x̄ has E[f²] = E|x̄|²/d = 1/L (σ² = σ_a² = 1); 20 % is about 4 Monte Carlo s.e.
    m = _module()
    q = m.prior_parts("fixed", L, 4)
    assert q["var_mean_part_theory"] == 1.0 / L
    assert q["var_mean_part"] == pytest.approx(1.0 / L, rel=0.2), q
    assert q["var_rest"] > 0.0 and q["var_total"] > q["var_mean_part"]


def test_crossing_and_bracket_search():
    m = _module()
    # log-linear interpolation: A = 0 at P = 16, 0.5 at P = 64 -> 0.25 reached at P = 32
    assert m.crossing([16, 64], [0.0, 0.5]) == (pytest.approx(32.0, rel=1e-12), "")
    assert m.crossing([64, 16], [0.5, 0.0])[0] == pytest.approx(32.0, rel=1e-12)
    assert m.crossing([16, 32], [0.3, 0.9]) == (16.0, "<")
    assert m.crossing([16, 32], [0.1, 0.2]) == (32.0, ">")
    ladder = [8, 16, 32, 64]
    assert m.next_P({32: 0.1}, ladder) == 64
    assert m.next_P({32: 0.6}, ladder) == 16
    assert m.next_P({32: 0.1, 64: 0.6}, ladder) is None
    assert m.next_P({64: 0.1}, ladder) is None                 # ladder ends
    fine = [8, 11, 16, 23, 32, 45, 64]
    assert m.next_P({16: 0.1}, fine, stride=2) == 32
    assert m.next_P({16: 0.1, 32: 0.4}, fine, stride=2) == 23   # refine between the bracketing points
    assert m.next_P({16: 0.1, 23: 0.2, 32: 0.4}, fine, stride=2) is None
    assert m.next_P({11: 0.3}, fine, stride=2) == 8             # clipped at the ladder's end
    assert m.next_P({45: 0.1}, fine, stride=2) == 64
    assert m.start_P(ladder, 40.0, 32) == 32 and m.start_P(ladder, 50.0, 32) == 64
    assert m.start_P(ladder, None, 16) == 16
    # the slope of an exact power law P* = 10 L^0.5 is 0.5 with zero residual
    b, se = m._slope([2, 4, 8, 16], [10 * L**0.5 for L in (2, 4, 8, 16)])
    assert b == pytest.approx(0.5, abs=1e-12) and se == pytest.approx(0.0, abs=1e-9)


@pytest.mark.slow
def test_ci_run(tmp_path):
    r = _run("--size", "ci", "--out", str(tmp_path), timeout=1200)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((tmp_path / "attention_context_ci.json").read_text())
    assert [p.name for p in tmp_path.iterdir()] == ["attention_context_ci.json"]     # JSON only
    assert s["analysis"]["health_counts"] and sum(s["analysis"]["health_counts"].values()) == len(s["entries"])
    assert [e["L"] for e in s["entries"]] == [2, 3]
    for e in s["entries"]:
        assert len(e["A_chains"]) == 4 and e["health"]["status"]
        assert e["A"] == pytest.approx(np.mean(e["A_chains"]), abs=1e-9)
        assert abs(e["A"]) < 0.5, e                              # P = 16 is below the crossing
    m = _module()
    for c in s["first_order"]:
        ref = m.first_order_check(c["variant"], c["L"], s["settings"]["d"])
        assert c["rel_error"] == pytest.approx(ref["rel_error"], rel=1e-9)
        assert c["A_target"] == pytest.approx(1.0, abs=1e-12)


def test_analysis_recovers_known_exponents():
    # A_f linear in log P through 0.25 at P* = 30 L^0.5 (β = 1) and 20 L^0 (β = √L): log-linear interpolation is then
    # exact, so the slopes are 0.5 and 0 and Δ = 0.5 (γ = 1) to rounding; a score scale β ∝ L^0 gives √L then.
    m = _module()
    s = dict(m.SIZES["cpu"])
    health = dict(status="equilibrated", max_rhat=1.0, divergences=0)
    entries = []
    for seed in (0, 1, 2):
        for v, (p0, b) in (("fixed", (30.0, 0.5)), ("sqrtL", (20.0, 0.0))):
            for L in s["L"]:
                ps = p0 * L**b * (1.0 + 0.01 * seed)
                for P in (8, 16, 32, 64, 128):
                    a = 0.25 + 0.3 * math.log(P / ps)
                    entries.append(dict(variant=v, L=L, seed=seed, P=P, beta=m.score_scale(v, L), A=a, A_sd=0.1,
                                        A_chains=[a] * 4, A_se_chains=0.0, rel_error=0.5, seconds=1.0, health=health))
    summ = dict(provenance=dict(command="x", size="cpu", seed=0, started="t", machine="m",
                                versions=dict(python="3", jax="0", numpyro="0", bnnzoo="0")),
                settings=s, first_order=[], prior_parts=[], entries=entries)
    summ["analysis"] = a = m.analyse(summ)
    assert a["variants"]["fixed"]["slope_mean"] == pytest.approx(0.5, abs=1e-9)
    assert a["variants"]["sqrtL"]["slope_mean"] == pytest.approx(0.0, abs=1e-9)
    dl = a["delta_fixed_minus_sqrtL"]
    assert dl["mean"] == pytest.approx(0.5, abs=1e-9)
    assert dl["gamma"] == pytest.approx(1.0, abs=1e-9)
    assert dl["beta_exponent_for_sqrt_L"] == pytest.approx(0.0, abs=1e-9)
    assert dl["contradicts_first_order"] is False
    for v in ("fixed", "sqrtL"):
        for L, b in a["variants"][v]["by_L"].items():
            assert b["beta"] == m.score_scale(v, L) and b["G"] == m.required_product(L, b["beta"], s["d"])
            assert (b["n_entries"], b["n_equilibrated"]) == (15, 15)
    assert a["health_counts"] == {"equilibrated": len(entries)} and a["theory_slope"] == 0.5
