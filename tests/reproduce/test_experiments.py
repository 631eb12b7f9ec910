"""Every experiment of ``reproduce/`` answers the same contract, checked in one parametrised test: it declares its
name, the claims it tests (rows of ``reproduce/claims.toml``) and its sizes; ``python -m reproduce NAME --help``
works; a bad argument is one line on stderr (exit 2) before anything compiles; an existing result file is never
replaced without ``--overwrite``."""

import importlib
import json
import sys

import pytest

from tests.reproduce.reproduce_scripts import ROOT, load_script

R = load_script("render")
PKG = importlib.import_module("reproduce")
MAIN = importlib.import_module("reproduce.__main__")
CLAIM_IDS = {c["id"] for c in R.load_claims()["claim"]}
# options without which an experiment refuses to start before it checks the common ones (a data folder)
REQUIRED = {"cifar10": ["--root", str(ROOT)]}


@pytest.mark.parametrize("name", PKG.EXPERIMENTS)
def test_experiment_declares_its_claims_and_sizes(name):
    mod = PKG.load(name)
    assert mod.NAME == name
    assert mod.CLAIMS and set(mod.CLAIMS) <= CLAIM_IDS, f"{name}: claims {set(mod.CLAIMS) - CLAIM_IDS} not on the page"
    assert set(mod.SIZES) == {"ci", "cpu", "paper"}
    assert callable(mod.run)
    assert (mod.__doc__ or "").strip(), f"{name}: no docstring"


@pytest.mark.parametrize("name", PKG.EXPERIMENTS)
def test_help_bad_arguments_and_overwrite(name, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        MAIN.main([name, "--help"])
    assert e.value.code == 0
    assert f"python -m reproduce {name}" in capsys.readouterr().out
    # a negative seed: one line naming --seed, exit 2, nothing compiled (jax not imported by the check)
    assert MAIN.main([name, "--size", "ci", "--seed", "-1", "--out", str(tmp_path)] + REQUIRED.get(name, [])) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--seed" in err, err
    # an existing result file is refused without --overwrite, before anything runs
    stem = "existing"
    (tmp_path / f"{stem}.json").write_text(json.dumps({"populations_certified": False}))
    for part in ("meanfield", "samples", "lockin"):  # experiments that write parts write <stem>.<part>.json
        (tmp_path / f"{stem}.{part}.json").write_text("{}")
    code = MAIN.main([name, "--size", "ci", "--out", str(tmp_path), "--name", stem] + REQUIRED.get(name, []))
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--overwrite" in err, err
    assert json.loads((tmp_path / f"{stem}.json").read_text()) == {"populations_certified": False}


def test_unknown_experiment_is_one_line(capsys):
    assert MAIN.main(["no_such"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "fig2_toy" in err


def test_bad_arguments_compile_nothing():
    """A bad argument is refused before jax is even imported (checked in a fresh process)."""
    import subprocess

    code = ("import sys; from reproduce.__main__ import main; "
            "rc = main(['fig2_toy', '--seed', '-1']); assert rc == 2; assert 'jax' not in sys.modules, 'jax imported'")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       env={"PYTHONPATH": f"{ROOT / 'src'}:{ROOT}", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr[-2000:]
