"""``python -m reproduce finite_size --from-certified``: certified runs of row sig1 at several N = P read against the
mean field the runs recorded, on made-up certified summaries with exactly known numbers.

Checked exactly (to rounding, 1e-12): the per-family and pooled code fractions (the families' plain mean, s.e.
√Σ s.e.² / F), the 111 excess over the mean field, N × excess and the total-variation distance; an excess exactly c/N
gives the log–log slope −1 with every point and with any one left out, and a point planted off c/N is the one left
out.  Refused with a one-line error naming ``--from-certified``: a run that is not certified, not equilibrated by the
present criterion, whose families disagree, at another y−, at another temperature than the others, at a width
another run has, or whose recorded mean field differs from the solve here by more than 10⁻⁶.  The written file is marked certified and carries the record that
``tests/reproduce/test_result_files.py`` requires of a file that reads certified runs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.reproduce.reproduce_scripts import load_script, run_script
from tests.reproduce.test_result_files import certification_gaps

NAME = "finite_size"
RESULTS = Path(__file__).resolve().parents[2] / "reproduce" / "results"
MF = {"011": 0.3, "101": 0.3, "110": 0.3, "111": 0.1}


def _certified_summary(N: int, f111: dict, T: float = 0.01, mf: dict | None = None, certified: bool = True,
                       status: str = "equilibrated", agree: bool = True, y_neg: float = 0.5) -> dict:
    """A result summary of ``reproduce/certified.py`` row sig1 (the fields ``--from-certified`` reads) whose
    families hold the 111 fractions ``f111`` {family: (mean, s.e.)}; the rest of each family's units split evenly
    over 011, 101, 110 (same s.e.), and prior carries 0.003 on 100, taken from its 011."""
    obs = {"code_fraction[z1][111]": {f: list(v) for f, v in f111.items()}}
    for c in ("011", "101", "110"):
        obs[f"code_fraction[z1][{c}]"] = {f: [(1 - v[0]) / 3, v[1]] for f, v in f111.items()}
    obs["code_fraction[z1][100]"] = {f: [0.003 if f == "prior" else 0.0, 0.001] for f in f111}
    obs["code_fraction[z1][011]"]["prior"][0] -= 0.003
    health = dict(status=status, reason="", criterion="R̂: populations mix within chains", max_rhat=1.01)
    cert = dict(families=list(f111), agree=agree, disagreements=[] if agree else ["code_fraction[z1][111]"],
                observables=obs, ensemble=dict(populations_rhat={"code_fraction[z1][111]": 1.02}),
                detectable={"code_fraction[z1][111]": {"prior|annealed": 0.01, "prior|meanfield": 0.02}})
    return dict(populations_certified=certified, temperature=T, chains=8, sampler="units",
                rows={"sig1": dict(settings=dict(N=N, warmup=10, samples=20, thin=1), seconds=1.0,
                                   row=dict(y_neg=y_neg),
                                   result=dict(health=health, certification=cert,
                                               meanfield_codes=dict(MF if mf is None else mf)))})


def test_one_width_per_family_pooled_excess_and_tv():
    fs = load_script(NAME)
    e = fs.certified_entry(_certified_summary(40, {"prior": (0.2, 0.03), "annealed": (0.3, 0.04)}), "run_a")
    assert (e["run"], e["N"], e["P"], e["T"], e["agree"]) == ("run_a", 40, 40, 0.01, True)
    assert e["health"]["rhat_111"] == 1.02 and e["detectable_111"] == 0.02
    w = fs.certified_width(e)
    c = w["codes"]
    assert c["111"]["per_family"] == {"prior": [0.2, 0.03], "annealed": [0.3, 0.04]}
    # pooled: the plain mean 0.25, s.e. √(0.03² + 0.04²) / 2 = 0.025
    assert c["111"]["pooled"] == pytest.approx([0.25, 0.025], abs=1e-12)
    assert c["011"]["pooled"][0] == pytest.approx((0.8 / 3 - 0.003 + 0.7 / 3) / 2, abs=1e-12)
    assert w["other_codes"] == pytest.approx(0.0015, abs=1e-12)             # code 100: prior 0.003, annealed 0
    assert w["excess_111"] == pytest.approx(0.15, abs=1e-12) and w["excess_111_se"] == pytest.approx(0.025)
    assert w["excess_111_z"] == pytest.approx(6.0) and w["N_excess_111"] == pytest.approx(6.0)
    assert w["N_excess_111_se"] == pytest.approx(1.0)
    assert w["excess_111_per_family"] == {"prior": [pytest.approx(0.1), 0.03], "annealed": [pytest.approx(0.2), 0.04]}
    # TV: 111 +0.15; 011 0.25 − 0.0015 − 0.3; 101 and 110 0.25 − 0.3 each; 100 +0.0015 → ½ (0.15 + 0.0515 + 0.1 +
    # 0.0015) = 0.1515
    assert w["tv_to_meanfield"] == pytest.approx(0.1515, abs=1e-12)


def test_excess_exactly_c_over_n_has_slope_minus_one():
    fs = load_script(NAME)
    # 111 fraction = mean field + 0.6 / N in every family, s.e. a fixed share of the excess
    es = [fs.certified_entry(_certified_summary(N, {f: (0.1 + 0.6 / N, 0.05 * 0.6 / N) for f in
                                                    ("prior", "annealed", "meanfield")}), f"n{N}")
          for N in (30, 60, 100)]
    out = fs.from_certified(es)
    a = out["analysis"]
    assert a["N"] == [30, 60, 100] and a["T"] == 0.01 and a["all_equilibrated"] and a["all_agree"]
    assert all(v == pytest.approx(0.6, abs=1e-12) for v in a["N_excess_111"].values())
    f = a["excess_fit"]
    assert f["slope"] == pytest.approx(-1.0, abs=1e-12) and f["z_vs_minus_one"] == pytest.approx(0.0, abs=1e-9)
    assert f["without"]["slope"] == pytest.approx(-1.0, abs=1e-12) and f["without"]["N"] in (30, 60, 100)
    assert [x[0] for x in f["left_out"]] == [30, 60, 100]
    # the entries keep what the result-file check compares and leave the per-family tables to the widths
    assert [e["run"] for e in out["entries"]] == ["n30", "n60", "n100"] and "per_family" not in out["entries"][0]
    # a point planted off c/N (at the largest of five widths, twice the excess; every s.e. the same share of its
    # excess, so the points weigh alike) is the most influential; without it the slope is −1
    planted = [fs.certified_entry(_certified_summary(N, {f: ((0.1 + (1.2 if N == 200 else 0.6) / N),
                                                             0.05 * (1.2 if N == 200 else 0.6) / N)
                                                         for f in ("prior", "annealed")}), f"p{N}")
               for N in (20, 30, 60, 100, 200)]
    f = fs.from_certified(planted)["analysis"]["excess_fit"]
    assert f["without"]["N"] == 200 and f["without"]["slope"] == pytest.approx(-1.0, abs=1e-12)
    assert f["slope"] > -0.85
    # two widths: the slope through them; an excess below the mean field: no log–log fit, said so
    two = fs.from_certified(es[:2])["analysis"]["excess_fit"]
    assert two["slope"] == pytest.approx(-1.0, abs=1e-12) and two["se"] is None and "two widths" in two["reason"]
    below = fs.certified_entry(_certified_summary(200, {"prior": (0.09, 0.001), "annealed": (0.09, 0.001)}), "b")
    f = fs.from_certified(es + [below])["analysis"]["excess_fit"]
    assert f["slope"] is None and "excess <= 0" in f["reason"]


@pytest.mark.parametrize("kw,words", [
    (dict(certified=False), "is not a certified run of row sig1"),
    (dict(status="relaxing"), "health 'relaxing'"),
    (dict(agree=False), "agree False"),
    (dict(y_neg=0.1), "y- = 0.1"),
])
def test_refuses_runs_that_are_not_certified_equilibrated(kw, words):
    fs = load_script(NAME)
    with pytest.raises(ValueError, match="--from-certified") as e:
        fs.certified_entry(_certified_summary(30, {"prior": (0.2, 0.01), "annealed": (0.2, 0.01)}, **kw), "bad")
    assert words in str(e.value) and "bad" in str(e.value) and "\n" not in str(e.value)


def test_refuses_a_record_of_an_earlier_gate_and_mixed_temperatures_or_widths():
    fs = load_script(NAME)
    d = _certified_summary(30, {"prior": (0.2, 0.01), "annealed": (0.2, 0.01)})
    del d["rows"]["sig1"]["result"]["health"]["criterion"]
    with pytest.raises(ValueError, match="no named criterion"):
        fs.certified_entry(d, "old")
    a = fs.certified_entry(_certified_summary(30, {"prior": (0.2, 0.01), "annealed": (0.2, 0.01)}), "a")
    b = fs.certified_entry(_certified_summary(60, {"prior": (0.2, 0.01), "annealed": (0.2, 0.01)}, T=0.03), "b")
    with pytest.raises(ValueError, match=r"share one temperature, got T = \[0\.01, 0\.03\] \(a, b\)"):
        fs.from_certified([a, b])
    with pytest.raises(ValueError, match="share a width"):
        fs.from_certified([a, dict(a, run="a2")])


def test_refuses_a_run_whose_recorded_meanfield_disagrees_with_the_solve(monkeypatch):
    fs = load_script(NAME)
    # a stand-in solve (the made-up runs' mass off 111 is 0.9): within 10⁻⁶ passes, 10⁻⁴ off is refused
    monkeypatch.setattr(fs, "solved_meanfield_R", lambda P, T: 0.9)
    ok = fs.certified_entry(_certified_summary(30, {"prior": (0.2, 0.01), "annealed": (0.2, 0.01)}), "ok")
    fs.check_recorded_meanfield([ok])
    off = fs.certified_entry(_certified_summary(30, {"prior": (0.2, 0.01), "annealed": (0.2, 0.01)},
                                                mf=dict(MF, **{"011": 0.3001, "111": 0.0999})), "off")
    with pytest.raises(ValueError, match=r"--from-certified: off recorded the mean-field mass off 111 0\.9001"):
        fs.check_recorded_meanfield([ok, off])


@pytest.mark.slow
def test_solved_meanfield_matches_what_a_stored_certified_run_recorded():
    # the mass off 111 that the stored certified run at N = P = 30, T = 0.01 recorded, and the solve here
    d = json.loads((RESULTS / "certified_units_sig1_n30_T0.01.json").read_text())
    recorded = d["rows"]["sig1"]["result"]["meanfield_codes"]
    fs = load_script(NAME)
    assert 1.0 - recorded["111"] == pytest.approx(fs.solved_meanfield_R(30, 0.01), abs=1e-6)


def test_run_writes_a_certified_file_the_result_check_accepts(tmp_path, monkeypatch):
    fs = load_script(NAME)
    monkeypatch.setattr(fs, "solved_meanfield_R", lambda P, T: 0.9)       # the made-up runs' mass off 111
    runs = {}
    for N in (30, 60, 100):
        stem = f"certified_units_sig1_n{N}_T0.01"
        runs[stem] = _certified_summary(N, {f: (0.1 + 0.6 / N, 0.002) for f in ("prior", "annealed", "meanfield")})
        (tmp_path / f"{stem}.json").write_text(json.dumps(runs[stem]))
    assert fs.run(["--out", str(tmp_path), "--from-certified", "certified_units_sig1_n*_T0.01"]) == 0
    s = json.loads((tmp_path / "certified_finite_size.json").read_text())
    assert s["populations_certified"] is True and s["settings"]["runs"] == sorted(runs)
    assert s["provenance"]["command"].startswith("python -m reproduce finite_size --out")
    assert certification_gaps(s, runs) == []
    assert s["widths"]["100"]["N_excess_111"] == pytest.approx(0.6, abs=1e-12)
    assert s["widths"]["60"]["codes"]["111"]["meanfield"] == 0.1
    assert s["analysis"]["excess_fit"]["slope"] == pytest.approx(-1.0, abs=1e-12)
    assert math.isfinite(s["analysis"]["excess_fit"]["se"])
    with pytest.raises(ValueError, match="--overwrite"):
        fs.run(["--out", str(tmp_path), "--from-certified", "certified_units_sig1_n*_T0.01"])


def test_a_non_certified_input_is_a_one_line_error(tmp_path):
    (tmp_path / "plain.json").write_text(json.dumps(_certified_summary(30, {"prior": (0.2, 0.01),
                                                                            "annealed": (0.2, 0.01)},
                                                                       certified=False)))
    r = run_script(NAME, "--out", str(tmp_path), "--from-certified", "plain", timeout=300)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"python -m reproduce {NAME}: error: --from-certified: plain is not a certified run")
    assert [p.name for p in tmp_path.iterdir()] == ["plain.json"]


def test_from_certified_refuses_the_options_it_would_ignore(tmp_path):
    fs = load_script(NAME)
    for extra, named in ((["--widths", "30"], "--widths"), (["--parts=relu"], "--parts"),
                         (["--relu-warmup", "5", "--size", "ci"], "--size, --relu-warmup")):
        with pytest.raises(ValueError, match=f"^--from-certified reads stored runs and ignores {named}; leave"):
            fs.run(["--out", str(tmp_path), "--from-certified", "x", *extra])
    r = run_script(NAME, "--out", str(tmp_path), "--from-certified", "x", "--combine", "a.json", "--parts", "relu",
                   timeout=300)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr == (f"python -m reproduce {NAME}: error: --from-certified reads stored runs and ignores --parts, "
                        "--combine; leave them out\n")
    assert list(tmp_path.iterdir()) == []


def _relu_summary(N: int, out_rms: float, bulk_rms: float, status: str = "equilibrated", agree: bool = True,
                  sizes: bool = True, T: float = 0.01) -> dict:
    """A result summary of ``reproduce/certified.py`` row relu: prior and annealed families with one outlier per
    class, outlier RMS |a| ``out_rms`` (prior) and 1.1 × it (annealed), s.e. 0.1 and 0.2, bulk ``bulk_rms``."""
    health = dict(status=status, reason="", criterion="R̂: populations mix within chains", max_rhat=1.01)
    obs = {f"outliers[{c}]": {"prior": [1.0, 0.0], "annealed": [1.0, 0.01]} for c in range(3)}
    cert = dict(families=["prior", "annealed"], agree=agree, disagreements=[], observables=obs)
    res = dict(health=health, certification=cert)
    if sizes:
        res["outlier_sizes"] = {f: dict(outlier_rms_a=[k * out_rms, se], bulk_rms_a=[bulk_rms, 0.01],
                                        ratio=[k * out_rms / bulk_rms, 0.1])
                                for f, k, se in (("prior", 1.0, 0.1), ("annealed", 1.1, 0.2))}
    return dict(populations_certified=True, temperature=T, chains=8, sampler="units",
                rows={"relu": dict(settings=dict(N=N, warmup=10, samples=20, thin=1), seconds=1.0,
                                   row=dict(y_neg=-0.5), result=res)})


def test_relu_outlier_sizes_pooled_and_their_sqrt_n_law(tmp_path):
    """Outlier sizes exactly 0.8 √N (prior) and 0.88 √N (annealed): pooled 0.84 √N with s.e. √(0.1² + 0.2²) / 2,
    the log–log slope ½ with every point and without the most influential one, the bulk's slope 0; two widths give
    the two-point slope; the file is written certified; refusals name --from-certified."""
    fs = load_script(NAME)
    e = fs.relu_certified_entry(_relu_summary(100, 8.0, 0.3), "r100")
    assert e["pooled"]["outlier_rms_a"] == pytest.approx([8.4, math.sqrt(0.05) / 2], abs=1e-12)
    assert e["outliers"]["annealed"] == [[1.0, 0.01]] * 3
    runs = {}
    for N in (100, 200, 300):
        stem = f"certified_units_relu_n{N}_radial"
        runs[stem] = _relu_summary(N, 0.8 * math.sqrt(N), 0.3)
        (tmp_path / f"{stem}.json").write_text(json.dumps(runs[stem]))
    assert fs.run(["--out", str(tmp_path), "--from-certified", "certified_units_relu_n*_radial"]) == 0
    s = json.loads((tmp_path / "certified_finite_size_relu.json").read_text())
    assert s["populations_certified"] is True and s["settings"]["runs"] == sorted(runs)
    assert certification_gaps(s, runs) == []
    f = s["analysis"]["outlier_rms_a_fit"]
    assert f["slope"] == pytest.approx(0.5, abs=1e-9) and f["without"]["slope"] == pytest.approx(0.5, abs=1e-9)
    assert s["analysis"]["bulk_rms_a_fit"]["slope"] == pytest.approx(0.0, abs=1e-9)
    es = [fs.relu_certified_entry(runs[st], st) for st in sorted(runs)[:2]]
    two = fs.relu_from_certified(es)["analysis"]["outlier_rms_a_fit"]
    assert two["slope"] == pytest.approx(0.5, abs=1e-9) and two["without"] is None and two["n"] == 2
    for bad, match in ((_relu_summary(100, 8.0, 0.3, status="relaxing"), "health 'relaxing'"),
                       (_relu_summary(100, 8.0, 0.3, agree=False), "agree False"),
                       (_relu_summary(100, 8.0, 0.3, sizes=False), "no outlier sizes")):
        with pytest.raises(ValueError, match=f"--from-certified: bad .*{match}"):
            fs.relu_certified_entry(bad, "bad")
    with pytest.raises(ValueError, match="two or more runs of different N"):
        fs.relu_from_certified(es[:1])
    (tmp_path / "sig.json").write_text(json.dumps(_certified_summary(30, {"prior": (0.2, 0.01),
                                                                          "annealed": (0.2, 0.01)})))
    with pytest.raises(ValueError, match="must all be of one row"):
        fs.run(["--out", str(tmp_path), "--from-certified", "sig,certified_units_relu_n100_radial", "--name", "x"])
