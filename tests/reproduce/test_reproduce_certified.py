"""reproduce/certified.py: the certified re-runs of the population rows (the sampling itself runs in
tests/inference/test_certify.py; here the script's command line and its result page)."""

import json

import pytest

from tests.reproduce.reproduce_scripts import load_script, run_script


@pytest.mark.parametrize("args, match", [
    (["--rows", "nope"], "--rows must name rows among"),
    (["--chains", "1"], "--chains must be >= 2"),
    (["--replicas", "8"], "--replicas needs --sampler pt"),
    (["--width", "1"], "--width must be an integer >= 2"),
])
def test_bad_arguments_are_one_line_errors(tmp_path, args, match):
    r = run_script("certified.py", "--size", "ci", "--out", str(tmp_path), *args, timeout=300)
    assert r.returncode == 2 and match in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not list(tmp_path.iterdir())


def test_the_result_page_lists_every_family_and_the_mean_field():
    """The markdown of a stored result: the health, the families' agreement, one column per family and the mean
    field's code masses beside the first layer's code fractions; codes no family holds are left out."""
    mod = load_script("certified.py")
    cert = {"families": ["prior", "meanfield"], "agree": False,
            "disagreements": ["code_fraction[z1][100]: prior 0.183 ± 0.020 vs meanfield 0.019 ± 0.020"],
            "observables": {"code_fraction[z1][100]": {"prior": [0.183, 0.02], "meanfield": [0.019, 0.02]},
                            "code_fraction[z1][111]": {"prior": [0.0, 0.0], "meanfield": [0.0, 0.0]},
                            "mse": {"prior": [0.0025, 1e-5], "meanfield": [0.0023, 1e-5]}}}
    res = {"size": "ci", "sampler": "auto", "chains": 4, "replicas": None,
           "provenance": {"command": "python reproduce/certified.py", "size": "ci", "seed": 0, "started": "now",
                          "machine": "cpu", "versions": {"python": "3", "jax": "0", "numpyro": "0", "bnnzoo": "0"}},
           "rows": {"ym01": {"settings": {"N": 60, "warmup": 500, "samples": 300, "thin": 1}, "seconds": 1.0,
                             "result": {"health": {"status": "metastable", "reason": cert["disagreements"][0],
                                                   "max_rhat": 3.4, "n_chains": 8, "divergences": 0},
                                        "certification": cert, "meanfield_codes": {"100": 0.011, "011": 0.32}}}}}
    md = mod.markdown(json.loads(json.dumps(res)))
    assert "**Health: metastable**" in md and "**disagree**" in md
    assert "| code_fraction[z1][100] | 0.183 ± 0.02 | 0.019 ± 0.02 | 0.011 |" in md
    assert "code_fraction[z1][111]" not in md and "| mse |" in md
