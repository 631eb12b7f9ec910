"""``python -m reproduce certified``: the certified re-runs of the population rows (the sampling itself runs in
tests/inference/test_certify.py; here the experiment's command line and what its summary adds for the result page)."""

import json

import pytest

from tests.reproduce.reproduce_scripts import load_script, run_script


@pytest.mark.parametrize("args, match", [
    (["--rows", "nope"], "--rows must name rows among"),
    (["--chains", "1"], "--chains must be >= 2"),
    (["--width", "1"], "--width must be an integer >= 2"),
])
def test_bad_arguments_are_one_line_errors(tmp_path, args, match):
    r = run_script("certified", "--size", "ci", "--out", str(tmp_path), *args, timeout=300)
    assert r.returncode == 2 and match in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith("python -m reproduce certified: error: ")
    assert not list(tmp_path.iterdir())


def test_the_table_lists_every_held_observable_and_the_mean_field():
    """The table of a stored certification: the observables some family holds, in the page's order (codes before
    the training error), a code no family holds left out, and the mean field's code mass beside the first layer's
    code fractions (0 for a code the mean field lacks)."""
    mod = load_script("certified")
    cert = {"families": ["prior", "meanfield"], "agree": False,
            "disagreements": ["code_fraction[z1][100]: prior 0.183 ± 0.020 vs meanfield 0.019 ± 0.020"],
            "observables": {"mse": {"prior": [0.0025, 1e-5], "meanfield": [0.0023, 1e-5]},
                            "code_fraction[z1][100]": {"prior": [0.183, 0.02], "meanfield": [0.019, 0.02]},
                            "code_fraction[z1][111]": {"prior": [0.0, 0.0], "meanfield": [0.0, 0.0]},
                            "code_fraction[z1][010]": {"prior": [0.01, 0.01], "meanfield": [0.0, 0.0]}}}
    t = mod.observable_table(json.loads(json.dumps(cert)), {"100": 0.011, "011": 0.32})
    assert t["observables_shown"] == ["code_fraction[z1][010]", "code_fraction[z1][100]", "mse"]
    assert t["meanfield_by_observable"] == {"code_fraction[z1][010]": 0.0, "code_fraction[z1][100]": 0.011}
    assert "meanfield_by_observable" not in mod.observable_table(cert, None)
    assert set(mod.CLAIMS) >= {c for r in mod.ROWS.values() for c in r["claims"]}
