"""reproduce.readout_scaling: the readout sizes from planted draws, the linear net against the exact saddle point at
CI size (the σ_a² rule keeps its readout flat in P, the control with σ_a² fixed grows), and argument errors."""

import json

import numpy as np
import pytest

from .reproduce_scripts import load_script, run_script

NAME = "readout_scaling"


def test_readout_sizes_of_planted_draws():
    mod = load_script(NAME)
    a = np.ones((2, 5, 4, 3))                     # chain 0: every |a| = 1
    a[1] *= 2.0                                   # chain 1: every |a| = 2
    a[1, :, 0] = 10.0                             # ... but one outlier unit
    r = mod.readout_sizes(a)
    np.testing.assert_allclose(r["q_a_chains"], [1.0, (3 * 4 + 100) / 4])   # tr(aᵀa)/(N m), mean over draws
    np.testing.assert_allclose(r["bulk_chains"], [1.0, 2.0])                 # the median unit ignores the outlier


@pytest.mark.parametrize("args,words", [
    (["--nets", "tanh"], ["--nets", "linear, sigmoidal"]),
    (["--seed", "-1"], ["--seed", ">= 0"]),
])
def test_bad_argument_one_line_error(tmp_path, args, words):
    r = run_script(NAME, "--size", "ci", "--out", str(tmp_path), *args, timeout=300)
    assert r.returncode == 2
    assert r.stderr.startswith(f"python -m reproduce {NAME}: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert all(w in r.stderr for w in words)
    assert not list(tmp_path.iterdir())


def test_ci_linear_against_the_saddle_point(tmp_path):
    r = run_script(NAME, "--size", "ci", "--nets", "linear,linear_fixed", "--out", str(tmp_path), timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads((tmp_path / "readout_scaling_ci.json").read_text())
    for net in ("linear", "linear_fixed"):
        for e in res["results"][net]:
            # N = 10 against N -> inf: the O(1/N) finite-width correction (measured 0.07-0.11)
            assert e["U_relative_error"] < 0.2, (net, e["P"], e["U_relative_error"])
            assert abs(e["q_a"] - e["q_a_theory"]) / e["q_a_theory"] < 0.2
    an = res["analysis"]
    assert abs(an["linear"]["slope_theory"]) < 0.1 < an["linear_fixed"]["slope_theory"]   # the rule keeps U flat
    assert an["linear_fixed"]["slope_q_a"] > an["linear"]["slope_q_a"] + 0.2
    # the JSON summary only, one section per net with one entry per P
    assert sorted(p.name for p in tmp_path.iterdir()) == ["readout_scaling_ci.json"]
    assert list(res["results"]) == ["linear", "linear_fixed"] and list(an) == ["linear", "linear_fixed"]
    assert all([e["P"] for e in res["results"][net]] == [10, 20] for net in res["results"])
    assert {e["sigma_a2_rule"] for e in res["results"]["linear_fixed"]} == {"fixed"}
