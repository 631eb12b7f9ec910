"""reproduce.other_codes (``python -m reproduce other_codes``): argument errors, overwrite refusal, the outlier bookkeeping on synthetic readouts, and a
``--size ci`` run checked against theory computed here.

Tolerances: the binary linear net's readout second moment U against the exact N → ∞ saddle point within 5/N (the
finite-width correction, as in bnnzoo.diagnostics.compare) plus 3 Monte Carlo standard errors; code fractions sum
to 1 to float rounding.  The slow test asks the ReLU-like nets for at least m − 1 outliers in every chain (theory
page §3: m − 1 = 2 on the toy task; on the binary task, with m = 1, the ±1 targets need a positive and a negative
output, and the test asks for one outlier of each readout sign in every chain).
"""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from tests.reproduce.reproduce_scripts import load_script, run_script

NAME = "other_codes"


def _run(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return run_script(NAME, *args, timeout=timeout)


def _load():
    return load_script(NAME)


@pytest.mark.parametrize("args,words", [
    (["--parts", "ternary"], ["--parts", "binary, sparse"]),
    (["--parts", "binary", "--nets", "softplus"], ["--nets", "linear, sigmoidal, relu"]),
    (["--nets", "tanh"], ["--nets", "relu2"]),
    (["--seed", "-1"], ["--seed", ">= 0"]),
    (["--width", "4"], ["--width", ">= 8"]),
])
def test_bad_argument_one_line_error(tmp_path, args, words):
    r = _run("--size", "ci", "--out", str(tmp_path), *args, timeout=300)
    assert r.returncode == 2
    assert r.stderr.startswith(f"python -m reproduce {NAME}: error: ") and r.stderr.count("\n") == 1, r.stderr
    for w in words:
        assert w in r.stderr
    assert not list(tmp_path.iterdir())


def test_refuses_to_overwrite(tmp_path):
    old = tmp_path / "other_codes_ci.json"
    old.write_text("old")
    r = _run("--size", "ci", "--out", str(tmp_path), timeout=300)
    assert r.returncode == 2 and "--overwrite" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert old.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["other_codes_ci.json"]


class _RD:
    """The few RunData fields ``outliers`` reads."""

    def __init__(self, a, z):
        self.a, self._z = a, z

    def z(self, layer):
        return self._z

    @property
    def m(self):
        return self.a.shape[-1]

    @property
    def n_chains(self):
        return self.a.shape[0]

    @property
    def width(self):
        return self.a.shape[2]


def test_outliers_by_readout_sign_on_one_output():
    # 2 chains × 20 draws × 64 neurons, one output: chain 0 has a +30 and a −30 outlier, chain 1 two +30 ones;
    # bulk readouts and preactivations of order 1, outlier preactivations 30 (threshold N^{1/4} ≈ 2.8× bulk)
    rng = np.random.default_rng(1)
    C, D, N, P = 2, 20, 64, 10
    a = rng.standard_normal((C, D, N, 1))
    z = rng.standard_normal((C, D, N, P))
    for c, n, s in [(0, 3, 30.0), (0, 7, -30.0), (1, 5, 30.0), (1, 9, 30.0)]:
        a[c, :, n, 0] = s + rng.standard_normal(D)
        z[c, :, n] = 30.0 + rng.standard_normal((D, P))
    o = _load().outliers(_RD(a, z), 2)
    assert o["per_chain"] == [2, 2]
    assert o["per_chain_class"] == [[1, 1], [2, 0]]
    assert o["one_per_class"] is False
    assert 20 < o["readout_ratio"] < 40 and 20 < o["preactivation_ratio"] < 40


def test_binary_linear_ci_matches_exact_theory(tmp_path):
    from bnnzoo.tasks import binary_toy_task
    from bnnzoo.theory.linear import linear_saddle_point

    r = _run("--size", "ci", "--parts", "binary", "--nets", "linear", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other_codes_ci.json"]      # the JSON summary only
    (e,) = json.loads((tmp_path / "other_codes_ci.json").read_text())["nets"]
    assert e["health"]["n_chains"] == 4 and e["health"]["status"] == "equilibrated", e["health"]
    assert e["m"] == 1 and e["classes"] == 2 and e["y"] == [1.0, -1.0]
    task = binary_toy_task(P=e["P"], N0=e["N0"])
    U_th = linear_saddle_point(task.X, task.Y, temperature=e["temperature"], sigma_a2=e["sigma_a2"]).U
    U, se = np.array(e["U"]), np.array(e["U_se"])
    assert U.shape == (1, 1)
    err = abs(U[0, 0] - U_th[0, 0]) / abs(U_th[0, 0])
    assert err <= 5.0 / e["N"] + 3 * se[0, 0] / abs(U_th[0, 0]), (U, U_th, se)
    assert abs(sum(e["codes"]["fraction"].values()) - 1.0) < 1e-9
    assert set(e["codes"]["fraction"]) <= {"00", "01", "10", "11"}
    assert e["codes"]["n_selective"] == sum(e["codes"]["selective_per_chain"])
    assert e["coding_scheme"] == "analog" and e["ergodicity"]["verdict"] == "ergodic"
    # the posterior kernel (Fig. 1e) against the exact N -> inf kernel K1: O(1/N) at N = 16 (measured 0.033)
    k = e["kernel"]
    assert k["theory_relative_error"] < 5.0 / e["N"], k
    assert k["target_cka"] > k["prior_target_cka"] + 0.5       # learned class structure, far above the prior's
    assert k["block"][0][0] > 0 > k["block"][0][1]               # linear: +/- classes anti-correlated


@pytest.mark.slow
def test_relu_like_ci_outliers(tmp_path):
    r = _run("--size", "ci", "--nets", "relu,softplus,relu2", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    relu, softplus, relu2 = json.loads((tmp_path / "other_codes_ci.json").read_text())["nets"]
    for e in (relu, softplus, relu2):
        assert abs(sum(e["codes"]["fraction"].values()) - 1.0) < 1e-9
        assert e["coding_scheme"] == "sparse", e["net"]
    assert all(row[0] >= 1 and row[1] >= 1 for row in relu["outliers"]["per_chain_class"])
    for e in (softplus, relu2):
        assert min(e["outliers"]["per_chain"]) >= 2, e["net"]     # m − 1 with m = 3
