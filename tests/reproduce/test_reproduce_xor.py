"""The ``gated_xor`` experiment (reproduce/gated_xor.py) at ``--size ci`` in a subprocess: the sampled pathway posteriors of the XoR net against
the exact finite-width posterior of the one-hidden-layer linear net on each pathway's two examples
(``bnnzoo.theory.linear_exact_m1``), within 4 Monte Carlo standard errors, at a width (4) where that value differs
from the N → ∞ one by 0.1, so the test tells the two apart; the posterior-mean outputs within 0.05 of the XoR targets
(the exact E[f] is ±0.988 at T = 0.01).  One-line errors and the refusal to overwrite a result are checked too."""

from __future__ import annotations

import json
import subprocess

from tests.reproduce.reproduce_scripts import run_script

SCRIPT = "gated_xor"


def _run(*args: str) -> subprocess.CompletedProcess:
    return run_script(SCRIPT, *args)


def test_bad_arguments_and_overwrite(tmp_path):
    r = _run("--seed", "-1", "--out", str(tmp_path))
    assert r.returncode == 2
    assert r.stderr.strip() == "python -m reproduce gated_xor: error: --seed must be >= 0, got -1"
    (tmp_path / "gated_xor_ci.json").write_text("keep")
    r = _run("--size", "ci", "--out", str(tmp_path))
    assert r.returncode == 2 and "--overwrite" in r.stderr and (tmp_path / "gated_xor_ci.json").read_text() == "keep"


def test_ci_pathways_match_the_exact_linear_posterior(tmp_path):
    r = _run("--size", "ci", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert [p.name for p in tmp_path.iterdir()] == ["gated_xor_ci.json"]     # JSON only
    res = json.loads((tmp_path / "gated_xor_ci.json").read_text())["result"]
    assert res["health"]["status"] == "equilibrated", res["health"]
    for name, p in res["pathways"].items():
        assert p["U_max_abs_z"] < 4 and p["f_max_abs_z"] < 4, (name, p)
        assert abs(p["U_exact"] - p["U_infinite_width"]) > 0.05      # the finite-width value is the one tested
    assert res["max_output_error"] < 0.05
