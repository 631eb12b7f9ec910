"""reproduce/critical_temperature.py: argument errors, overwrite refusal, the crossing interpolation on curves with
a known answer, the mean-field T_c of a ``--size ci`` run against a direct evaluation of the mean field on both sides
of it, and (slow) the sampled ``--size ci`` run against the mean field.

Tolerances.  Mean field: the solutions at the two ends of the script's bisection bracket, solved here from scratch
(the solver's own continuation from high T, not the script's path), must have a coding branch other than 111 with
mass > 10⁻³ below and no branch but 111 above; the bracket must be narrower than the size's tolerance, and the
script's exact (grid-free) ascent from the vanished modes must end on code 111.  Samples
(N = P = 16, 4 chains): far above T_c (T = 0.25 ≈ 5 T_c) every unit's modal code is 111 (mean field: one branch,
111; allowed: at most 5 % of the units off 111) and the readout is ergodic (ergodicity ratio > 0.9; 1 = every unit
explores the whole marginal); below T_c (T = 0.02) the fraction of units off 111 is within 0.15 of the mean-field mass
of the non-111 branches (finite-N and warm-up lock-in allowance, as in the notebooks' checks).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.reproduce.reproduce_scripts import load_script, run_script

ROOT = Path(__file__).resolve().parents[2]
SRC = str(ROOT / "src")
SCRIPT = ROOT / "reproduce" / "critical_temperature.py"
PROG = "critical_temperature.py"


def _run(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return run_script(SCRIPT, *args, timeout=timeout)


def _load():
    return load_script(SCRIPT, "reproduce_critical_temperature")


@pytest.mark.parametrize("args,words", [
    (["--parts", "theory"], ["--parts", "meanfield", "samples"]),
    (["--widths", "4"], ["--widths", "> 7"]),
    (["--widths", "20,x"], ["--widths", "integers"]),
    (["--temperatures", "0.01,-0.1"], ["--temperatures", "> 0"]),
    (["--temperatures", "0.05"], ["--temperatures", "at least 2"]),
    (["--warmup", "5"], ["--warmup", ">= 10"]),
    (["--samples", "5"], ["--samples", ">= 10"]),
    (["--seed", "-1"], ["--seed", ">= 0"]),
    (["--name", "a/b"], ["--name", "plain file stem"]),
])
def test_bad_argument_one_line_error(tmp_path, args, words):
    r = _run("--size", "ci", "--out", str(tmp_path), *args, timeout=300)
    assert r.returncode == 2
    assert r.stderr.startswith(f"{PROG}: error: ") and r.stderr.count("\n") == 1, r.stderr
    for w in words:
        assert w in r.stderr
    assert not list(tmp_path.iterdir())


def test_refuses_to_overwrite(tmp_path):
    old = tmp_path / "critical_temperature_ci.md"
    old.write_text("old")
    r = _run("--size", "ci", "--out", str(tmp_path), timeout=300)
    assert r.returncode == 2 and "--overwrite" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert old.read_text() == "old" and not (tmp_path / "critical_temperature_ci.json").exists()


def test_grid_not_bracketing_tc_is_an_error():
    """Both temperatures far above the mean-field T_c (≈ 0.05 at P = 16): the script says to add lower ones."""
    ct = _load()
    with pytest.raises(ValueError, match="does not bracket the mean-field T_c at P = 16: add temperatures below"):
        ct.critical_temperature(16, (0.2, 0.3), n_grid=ct.SETTINGS["ci"]["n_grid"])


def test_crossings_on_known_curves():
    ct = _load()
    # R falls linearly from 0.9 (T = 0.01) to 0 (T = 0.1): half (0.45) at T = 0.055, 80 % at 0.028, 20 % at 0.082
    T = [0.01, 0.04, 0.07, 0.1]
    R = [0.9 - 10 * (t - 0.01) for t in T]
    tr = ct.transition(T, R)
    assert tr["T_half"] == pytest.approx(0.055, abs=1e-12)
    assert tr["T_half_bracket"] == (0.04, 0.07)
    assert tr["width"] == pytest.approx(0.082 - 0.028, abs=1e-12)
    # a curve that never falls to half has no crossing; a rising one crosses where interpolated
    assert ct.transition(T, [0.9, 0.8, 0.7, 0.6])["T_half"] is None
    assert ct.rising_crossing([1.0, 2.0, 3.0], [0.1, 0.4, 0.9], 0.5) == pytest.approx(2.2)
    assert ct.mean_se([1.0, None, 3.0]) == (2.0, 1.0)


def _check_meanfield(ct, summary):
    s = summary["settings"]
    for P, m in summary["meanfield"].items():
        assert m["hi"] - m["lo"] <= s["bisect_tol"] + 1e-12 and m["lo"] < m["T_c"] < m["hi"]
        below = ct.mass_per_code(ct.meanfield(int(P), m["lo"], n_grid=s["n_grid"]))
        above = ct.mass_per_code(ct.meanfield(int(P), m["hi"], n_grid=s["n_grid"]))
        assert ct.redundant_mass(below) > 1e-3, below          # a coding branch other than 111 below T_c
        assert set(above) == {"111"} and above["111"] == pytest.approx(1.0, abs=1e-3), above   # none above
        # the script's own grid-free check: exact ascent from the vanished modes ends on 111 at the upper end
        assert m["hi_check"]["confirmed"] and len(m["hi_check"]["ascents"]) >= 1
        # the grid of the size brackets it and the curve is redundant at its lowest temperature
        assert m["curve"][0]["redundant_mass"] > 0.5


def test_ci_meanfield_tc_against_direct_evaluation(tmp_path):
    ct = _load()  # in this process: the mean field needs no sampler, and a second interpreter costs seconds
    assert ct.main(["--size", "ci", "--parts", "meanfield", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "critical_temperature_ci.json").read_text())
    assert set(summary["meanfield"]) == {"16"} and not summary["samples"]
    _check_meanfield(ct, summary)
    md = (tmp_path / "critical_temperature_ci.md").read_text()
    assert "## Mean field" in md and "](" not in md


@pytest.mark.slow
def test_ci_run_samples_against_meanfield(tmp_path):
    r = _run("--size", "ci", "--out", str(tmp_path), timeout=1200)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads((tmp_path / "critical_temperature_ci.json").read_text())
    ct = _load()
    _check_meanfield(ct, summary)
    es = sorted(summary["samples"], key=lambda e: e["T"])
    assert [e["T"] for e in es] == [0.02, 0.25] and all(e["N"] == 16 for e in es)
    Tc = summary["meanfield"]["16"]["T_c"]
    cold, hot = es
    assert cold["T"] < Tc < hot["T"]
    for e in es:
        assert len(e["R_per_chain"]) == 4 and e["health"]["n_chains"] == 4
        assert abs(sum(e["modal_codes"]["fraction"].values()) - 1) < 1e-9
    # far above T_c: one branch, code 111, in the mean field; the sampled units are on 111 and ergodic
    assert hot["meanfield_R"] == 0.0
    assert hot["R"] <= 0.05, hot["modal_codes"]["fraction"]
    assert hot["ergodicity"]["ratio"] > 0.9
    # below T_c: the redundant code, with the mean field's fraction of units off 111
    assert cold["meanfield_R"] > 0.5
    assert abs(cold["R"] - cold["meanfield_R"]) < 0.15, (cold["R"], cold["meanfield_R"])
    a = summary["analysis"]["16"]
    assert a["sampled"]["T_half"] is not None and cold["T"] < a["sampled"]["T_half"] < hot["T"]
    md = (tmp_path / "critical_temperature_ci.md").read_text()
    assert "## T_c versus N" in md and "](" not in md
