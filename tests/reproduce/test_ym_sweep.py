"""``python -m reproduce ym_sweep`` runs at ``--size ci`` and refuses to overwrite (its mean-field search is tested in
tests/theory/test_schemes.py)."""

import json

from bnnzoo.theory.schemes import scheme_name

from tests.reproduce.reproduce_scripts import load_script, run_script


def test_script_runs_at_ci_size_and_refuses_to_overwrite(tmp_path):
    args = ("--size", "ci", "--part", "meanfield", "--out", str(tmp_path))
    res = run_script("ym_sweep", *args, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads((tmp_path / "ym_sweep.meanfield.json").read_text())
    assert out["meta"]["complete"] and all(len(p["solutions"]) == 1 for p in out["sweeps"])
    assert out["provenance"]["command"].startswith("python -m reproduce ym_sweep") and not out["populations_certified"]
    # the numbers the page shows are in the summary: the scheme of every solution and the counts of the search
    a = out["analysis"]
    assert a["points"] == len(out["sweeps"]) == a["points_one_solution"] and a["points_several_solutions"] == 0
    assert a["converged"] == sum(p["n_converged"] for p in out["sweeps"]) <= a["starts"]
    schemes = {scheme_name(s["mass_by_code"], 1e-3) for p in out["sweeps"] for s in p["solutions"]}
    assert set(a["schemes"]) == schemes == {s["scheme"] for p in out["sweeps"] for s in p["solutions"]}
    assert [x.name for x in tmp_path.iterdir()] == ["ym_sweep.meanfield.json"]
    again = run_script("ym_sweep", *args, timeout=60)
    assert again.returncode == 2 and again.stderr.startswith("python -m reproduce ym_sweep: error:")
    assert "--overwrite" in again.stderr and "Traceback" not in again.stderr


def test_bad_part_is_a_one_line_error(tmp_path):
    res = run_script("ym_sweep", "--size", "ci", "--part", "theory", "--out", str(tmp_path), timeout=60)
    assert res.returncode == 2 and "--part must be" in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert not list(tmp_path.iterdir())


def test_page_numbers_of_the_samples_and_lockin_parts():
    """The comparisons the page states, on stored-like summaries with known answers."""
    mod = load_script("ym_sweep")
    run = dict(N=60, chains=2, warmup=1000, health="equilibrated", rhat={"mse": 1.2, "q_a": float("nan")},
               code_switches_per_draw=1e-4, fraction_per_chain={"100": [0.15, 0.2]},
               code100_along_run=[[0.1, 0.15, 0.15], [0.2, 0.2, 0.2]])
    sm = dict(runs=[dict(y_neg=0.1, fraction={"100": 0.18, "011": 0.82}, fraction_se={"100": 0.02, "011": 0.02},
                         meanfield_mass={"100": 0.011, "011": 0.989}, health="metastable"),
                    dict(y_neg=0.5, fraction={"011": 0.7, "111": 0.3}, fraction_se={"011": 0.02, "111": 0.02},
                         meanfield_mass={"011": 0.75, "111": 0.25}, health="equilibrated")])
    a = mod.analyse_samples(sm)
    assert a["worst_high_y"]["code"] in ("011", "111") and abs(a["worst_high_y"]["deviation"] - 0.05) < 1e-12
    assert a["lowest_y"] == dict(y_neg=0.1, code100=0.18, code100_se=0.02, code100_meanfield=0.011,
                                 health="metastable")
    lk = mod.analyse_lockin(dict(runs=[dict(run, start="prior")]))
    assert lk["runs"][0]["code100_units_per_chain"] == [9, 12] and lk["prior_max_rhat"] == 1.2
    assert lk["runs"][0]["code100_start_mid_end"] == [[0.1, 0.15, 0.15], [0.2, 0.2, 0.2]]
    law = dict(P=60, N=60, q=[0.1, 0.17, 0.25], delta_f=[0.01, 0.02, 0.04])
    mf = mod.analyse_meanfield(dict(sweeps=[], law=[law]))
    assert mf["laws"][0]["q_ref"] == 0.17 and abs(mf["laws"][0]["N_delta_f_at_q_ref"] - 1.2) < 1e-12
