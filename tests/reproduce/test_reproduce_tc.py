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
of the non-111 branches (finite-N and warm-up lock-in allowance, as in the notebooks' checks).  ``--from-certified``
on made-up certified summaries: the fraction off 111 per family and pooled, against the summaries' numbers exactly;
the scatter s.e. of T_½ against linear error propagation (5 %: the Monte Carlo error of 4000 curves is ≈ 1 %); the
mean-field mass off 111 at each temperature against a direct evaluation (10⁻³); the mass off 111 a run recorded
against a stand-in mean field of exactly known masses (a difference of 10⁻⁹ passes, 10⁻⁴ is refused).
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


def _certified_summary(N: int, T: float, f111: dict, certified: bool = True) -> dict:
    """A result summary of ``reproduce/certified.py`` row sig1 (the fields ``--from-certified`` reads) whose
    families hold the 111 fractions ``f111`` {family: (mean, s.e.)}, the rest on 011."""
    obs = {"code_fraction[z1][111]": {f: list(v) for f, v in f111.items()},
           "code_fraction[z1][011]": {f: [1 - v[0], v[1]] for f, v in f111.items()},
           "branch_mass[+++]": {f: [0.9, 0.01] for f in f111}, "branch_mass[-++]": {f: [0.0, 0.0] for f in f111}}
    health = dict(status="equilibrated", reason="", criterion="R̂", max_rhat=1.01)
    cert = dict(families=list(f111), agree=True, disagreements=[], observables=obs,
                ensemble=dict(populations_rhat={"code_fraction[z1][111]": 1.02}))
    return dict(populations_certified=certified, temperature=T, chains=8, sampler="units",
                rows={"sig1": dict(settings=dict(N=N, warmup=10, samples=20, thin=1), seconds=1.0,
                                   row=dict(y_neg=0.5), result=dict(health=health, certification=cert))})


def test_from_certified_reads_the_families_and_t_half_scatter():
    ct = _load()
    # R_draw = 1 − the 111 fraction: per family, and the families' mean with s.e. √Σ s.e.² / F
    d = _certified_summary(16, 0.03, {"prior": (0.2, 0.03), "annealed": (0.3, 0.04)})
    e = ct.certified_entry(d, "x")
    assert e["R_draw_per_family"] == {"prior": [0.8, 0.03], "annealed": [0.7, 0.04]}
    assert e["R_draw"] == pytest.approx(0.75) and e["R_draw_se"] == pytest.approx(0.025)
    assert e["per_draw"] == {"011": pytest.approx(0.75), "111": pytest.approx(0.25)}
    assert e["readout_orthants"] == {"+++": pytest.approx(0.9)}          # an orthant no family holds is left out
    assert (e["N"], e["T"], e["agree"], e["health"]["rhat_111"]) == (16, 0.03, True, 1.02)
    with pytest.raises(ValueError, match="--from-certified"):
        ct.certified_entry(_certified_summary(16, 0.03, {"prior": (0.2, 0.03)}, certified=False), "x")
    # T_½ of R = 0.9, 0.6, 0.3, 0 at T = 0.01 … 0.1 is 0.055 (bracket 0.04–0.07); with noise of s.e. σ at
    # T = 0.04 alone, linear propagation gives s.e. ΔT (½ R₀ − R₂) / (R₁ − R₂)² σ = 0.03 · 0.15 / 0.09 σ = 0.05 σ
    T, R = [0.01, 0.04, 0.07, 0.1], [0.9, 0.6, 0.3, 0.0]
    sc = ct.t_half_scatter(T, R, [0.0, 1e-3, 0.0, 0.0])
    assert sc["crossing_fraction"] == 1.0
    assert sc["T_half_se"] == pytest.approx(0.05e-3, rel=0.05)      # 4000 curves: ≈ 1 % relative s.e.
    assert ct.t_half_scatter(T, R, [0.0] * 4)["T_half_se"] == pytest.approx(0.0, abs=1e-12)


def test_from_certified_refuses_what_finite_size_refuses():
    # the shared reader (reproduce._common.certified_sig1): not equilibrated, one family, families that disagree
    ct = _load()
    d = _certified_summary(16, 0.03, {"prior": (0.2, 0.03), "annealed": (0.3, 0.04)})
    d["rows"]["sig1"]["result"]["health"]["status"] = "relaxing"
    with pytest.raises(ValueError, match=r"^--from-certified: bad has health 'relaxing'"):
        ct.certified_entry(d, "bad")
    with pytest.raises(ValueError, match=r"^--from-certified: one has families \['prior'\] with agree True"):
        ct.certified_entry(_certified_summary(16, 0.03, {"prior": (0.2, 0.03)}), "one")
    d = _certified_summary(16, 0.03, {"prior": (0.2, 0.03), "annealed": (0.3, 0.04)})
    d["rows"]["sig1"]["result"]["certification"]["agree"] = False
    with pytest.raises(ValueError, match=r"^--from-certified: split has families .* with agree False") as e:
        ct.certified_entry(d, "split")
    assert "\n" not in str(e.value)


def test_from_certified_refuses_the_options_it_would_ignore(tmp_path):
    ct = _load()
    with pytest.raises(ValueError, match="^--from-certified reads stored runs and ignores --widths, --temperatures; "
                                         "leave them out$"):
        ct.run(["--out", str(tmp_path), "--from-certified", "x", "--widths", "16", "--temperatures", "0.1"])
    with pytest.raises(ValueError, match="ignores --seed; leave it out"):
        ct.run(["--out", str(tmp_path), "--from-certified", "x", "--seed", "3"])
    assert list(tmp_path.iterdir()) == []


def test_from_certified_checks_the_recorded_meanfield(monkeypatch):
    ct = _load()
    # a stand-in mean field (exact masses) on the solver's default grid: the mass off 111 a run recorded is checked
    # against it (allowed 10⁻⁶), and only the recomputed one is written
    curve = [dict(T=0.03, masses={"011": 0.25, "111": 0.75}), dict(T=0.2, masses={"111": 1.0})]
    monkeypatch.setattr(ct, "meanfield_critical_temperature",
                        lambda P, temps, **kw: dict(T_c=0.1, T_c_err=1e-3, curve=curve))

    def entry(recorded_111: float) -> dict:
        d = _certified_summary(16, 0.03, {"prior": (0.2, 0.03), "annealed": (0.3, 0.04)})
        d["rows"]["sig1"]["result"]["meanfield_codes"] = {"011": 1 - recorded_111, "111": recorded_111}
        return ct.certified_entry(d, "run_a")

    assert entry(0.75)["meanfield_R_of_run"] == pytest.approx(0.25, abs=1e-15)
    got = ct.from_certified([entry(0.75 + 1e-9)], 8e-3)["entries"][0]
    assert got["meanfield_R"] == 0.25 and "meanfield_R_of_run" not in got
    with pytest.raises(ValueError, match=r"run_a recorded the mean-field mass off 111 0\.2499.*gives 0\.25\b"):
        ct.from_certified([entry(0.7501)], 8e-3)
    # on another grid than the runs' (n_grid set) the two are not comparable: no check, nothing written either
    got = ct.from_certified([entry(0.7501)], 8e-3, n_grid=25)["entries"][0]
    assert got["meanfield_R"] == 0.25 and "meanfield_R_of_run" not in got


def test_from_certified_against_direct_meanfield(tmp_path):
    ct = _load()
    for T, f in ((0.02, 0.1), (0.25, 0.9)):
        (tmp_path / f"certified_units_sig1_n16_T{T}.json").write_text(
            json.dumps(_certified_summary(16, T, {"prior": (f, 0.01), "annealed": (f, 0.01)})))
    assert ct.run(["--size", "ci", "--out", str(tmp_path), "--from-certified", "certified_units_sig1_n16_T*"]) == 0
    summary = json.loads((tmp_path / "certified_critical_temperature.json").read_text())
    assert summary["populations_certified"] is True
    m = summary["meanfield"]["16"]
    for e in summary["entries"]:
        direct = redundant_mass(_masses(toy_meanfield(16, e["T"], n_grid=25)))
        assert e["meanfield_R"] == pytest.approx(direct, abs=1e-3)
        assert e["R_minus_meanfield"] == pytest.approx(e["R_draw"] - e["meanfield_R"], abs=1e-12)
    a = summary["analysis"]["16"]
    assert m["lo"] < a["T_c_meanfield"] < m["hi"] and a["all_equilibrated"] and a["all_agree"]
    assert 0.02 < a["sampled"]["T_half"] < 0.25 and [x["T"] for x in a["above_Tc"]] == [0.25]
    # the same stem again is refused
    with pytest.raises(ValueError, match="--overwrite"):
        ct.run(["--size", "ci", "--out", str(tmp_path), "--from-certified", "certified_units_sig1_n16_T*"])
