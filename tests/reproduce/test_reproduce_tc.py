"""``python -m reproduce critical_temperature``: argument errors, overwrite refusal, the crossing interpolation on
curves with a known answer, the mean-field T_c of a ``--size ci`` run against a direct evaluation of the mean field
on both sides of it, and (slow) the sampled ``--size ci`` run against the mean field.

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

import pytest

from bnnzoo.theory.critical_temperature import redundant_mass, toy_meanfield
from bnnzoo.theory.schemes import mass_per_code
from tests.reproduce.reproduce_scripts import load_script, run_script

NAME = "critical_temperature"
PROG = f"python -m reproduce {NAME}"


def _run(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return run_script(NAME, *args, timeout=timeout)


def _load():
    return load_script(NAME)


def _masses(r) -> dict:
    return mass_per_code(r.branch_code, r.branch_mass)


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
    old = tmp_path / "critical_temperature_ci.json"
    old.write_text("old")
    r = _run("--size", "ci", "--out", str(tmp_path), timeout=300)
    assert r.returncode == 2 and "--overwrite" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert old.read_text() == "old" and [x.name for x in tmp_path.iterdir()] == [old.name]


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


def _check_meanfield(summary):
    s = summary["settings"]
    for P, m in summary["meanfield"].items():
        assert m["hi"] - m["lo"] <= s["bisect_tol"] + 1e-12 and m["lo"] < m["T_c"] < m["hi"]
        below, above = (_masses(toy_meanfield(int(P), T, y_neg=s["y_neg"], n_grid=s["n_grid"]))
                        for T in (m["lo"], m["hi"]))
        assert redundant_mass(below) > 1e-3, below          # a coding branch other than 111 below T_c
        assert set(above) == {"111"} and above["111"] == pytest.approx(1.0, abs=1e-3), above   # none above
        # the script's own grid-free check: exact ascent from the vanished modes ends on 111 at the upper end
        assert m["hi_check"]["confirmed"] and len(m["hi_check"]["ascents"]) >= 1
        # the grid of the size brackets it and the curve is redundant at its lowest temperature
        assert m["curve"][0]["redundant_mass"] > 0.5


def test_ci_meanfield_tc_against_direct_evaluation(tmp_path):
    ct = _load()  # in this process: the mean field needs no sampler, and a second interpreter costs seconds
    assert ct.run(["--size", "ci", "--parts", "meanfield", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "critical_temperature_ci.json").read_text())
    assert set(summary["meanfield"]) == {"16"} and not summary["samples"] and summary["missing"] == []
    assert summary["provenance"]["command"].startswith(PROG) and summary["populations_certified"] is False
    _check_meanfield(summary)
    assert [x.name for x in tmp_path.iterdir()] == ["critical_temperature_ci.json"]


@pytest.mark.slow
def test_ci_run_samples_against_meanfield(tmp_path):
    r = _run("--size", "ci", "--out", str(tmp_path), timeout=1200)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads((tmp_path / "critical_temperature_ci.json").read_text())
    _check_meanfield(summary)
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
    # the numbers the page shows beside the stored ones: T / T_c per entry, the sampled / mean-field T_½ ratio
    for e in es:
        assert e["T_over_Tc"] == pytest.approx(e["T"] / Tc, rel=1e-12)
    if a["meanfield"]["T_half"]:
        assert a["T_half_ratio"] == pytest.approx(a["sampled"]["T_half"] / a["meanfield"]["T_half"], rel=1e-12)
    assert summary["missing"] == []
