"""The command line's model/task settings: ``--param NAME=VALUE`` routing and provenance, one-line errors,
``--version``, ``--help`` defaults and the compact ``bnnzoo list -v``."""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.cli import (build_parser, build_task, main, param_names, parse_params, route_params, run_demo,
                        task_model_keywords)
from bnnzoo.models import get_entry, list_entries

SRC = str(Path(bnnzoo.__file__).resolve().parents[1])


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("bnnzoo: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def test_values_are_python_literals_else_strings():
    got = parse_params(["width=8", "temperature=1e-2", "ratios=(0.5, 0.5)", "activation=relu", "sigma_a2=None",
                        "model.depth=2", "name= a b "])
    assert got == {"width": 8, "temperature": 0.01, "ratios": (0.5, 0.5), "activation": "relu", "sigma_a2": None,
                   "model.depth": 2, "name": "a b"}
    assert isinstance(got["width"], int) and isinstance(got["temperature"], float)
    with pytest.raises(ValueError, match="NAME=VALUE"):
        parse_params(["width"])
    with pytest.raises(ValueError, match="given twice"):
        parse_params(["width=1", "width=2"])


def test_params_route_by_signature():
    relu = get_entry("relu")
    model_kw, task_kw = route_params(relu, {"width": 3, "activation": "sigmoid", "P": 6, "task.seed": 2})
    assert model_kw == {"width": 3, "activation": "sigmoid"} and task_kw == {"P": 6, "seed": 2}
    # every entry: every name its model or task builder takes is settable, and goes where it belongs
    for e in list_entries():
        model_names, task_names = param_names(e)
        assert model_names and task_names
        assert not {"X", "Y", "X_test", "num_outputs", "record"} & set(model_names)
        m, t = route_params(e, {f"model.{n}": 1 for n in model_names} | {f"task.{n}": 1 for n in task_names})
        assert set(m) == set(model_names) and set(t) == set(task_names)
    # unknown names: the error lists what the entry takes
    with pytest.raises(ValueError, match=r"'three_layer_erf' takes model keywords width1, width2.*task keywords d, P"):
        route_params(get_entry("three_layer_erf"), {"width": 3})
    with pytest.raises(ValueError, match="has no task keyword 'width'"):
        route_params(relu, {"task.width": 3})
    # a name both the model and the task builder take: ask for the prefix; the prefixed forms work
    def toy_with_width(P=4, width=1):
        return relu.make_task(P=P)

    both = dataclasses.replace(relu, name="both", make_task=toy_with_width)
    with pytest.raises(ValueError, match=r"write model.width= or task.width="):
        route_params(both, {"width": 3})
    assert route_params(both, {"model.width": 3, "task.width": 5}) == ({"width": 3}, {"width": 5})
    # a model taking **kwargs gets every name its task builder does not take (never the data or record)
    def open_model(X, Y=None, **kw):
        return None

    opened = dataclasses.replace(relu, name="open", model=open_model)
    assert route_params(opened, {"anything": 1, "P": 4}) == ({"anything": 1}, {"P": 4})
    with pytest.raises(ValueError, match="--param record"):
        route_params(opened, {"record": "z"})


def test_task_keywords_are_recorded_and_model_keywords_follow_the_task():
    att = get_entry("softmax_attention")
    task = build_task(att, dict(att.task_defaults, L=2, d=3, P=5, P_test=2, seed=4))
    assert task.X.shape == (5, 6) and task.meta["seed"] == 4
    # the context length is fixed by the task: it follows the task unless set explicitly
    assert task_model_keywords(att, task, {}) == {"context_length": 2}
    assert task_model_keywords(att, task, {"context_length": 3}) == {}
    xor = get_entry("gdln_xor")
    task = build_task(xor, {"hidden": 3})
    spec = task_model_keywords(xor, task, {})["spec"]
    assert dict(spec["nodes"])["ha"] == 3
    relu = get_entry("relu")
    assert task_model_keywords(relu, build_task(relu, {"P": 4}), {}) == {}
    with pytest.raises(ValueError, match="toy_task"):
        build_task(relu, {"P": 4, "N0": [1]})       # a TypeError inside the builder becomes a one-line error


def test_sample_with_params_records_them(tmp_path, capsys):
    out = tmp_path / "r.nc"
    assert main(["sample", "relu", "--param", "width=3", "--param", "P=6", "--param", "activation=sigmoid",
                 "--param", "seed=2", "--param", "sigma_w2=0.5", "--temperature", "0.05", "--chains", "1",
                 "--warmup", "5", "--samples", "3", "--quiet", "--out", str(out)]) == 0
    cfg = bnnzoo.run_config(azcompat.from_netcdf(out))
    mk = cfg["model_kwargs"]
    assert (mk["width"], mk["activation"], mk["sigma_w2"], mk["temperature"]) == (3, "sigmoid", 0.5, 0.05)
    assert mk["sigma_a2"] == pytest.approx(1 / 6)           # the paper's rule for the sigmoid, resolved with P=6
    assert mk["record"] == ["summaries", "kernels"]         # the entry's default, kernels streamed as block means
    assert (cfg["task"]["P"], cfg["task"]["seed"], cfg["task"]["y_neg"]) == (6, 2, -0.5)
    capsys.readouterr()


@pytest.mark.parametrize("argv, words", [
    (["--param", "bogus=1"], ["--param bogus", "width, depth", "P, N0"]),
    (["--param", "width"], ["NAME=VALUE"]),
    (["--width", "3", "--param", "width=4"], ["width is set twice"]),
    (["--param", "width1=3"], ["width1"]),
    (["--param", "P=abc"], ["task builder toy_task", "abc"]),
    (["--param", "activation=tanh"], ["activation must be one of"]),
    (["--param", "P=1e400"], ["--param P must be a finite number"]),
    (["--param", "temperature=1e999"], ["--param temperature must be a finite number"]),
])
def test_param_errors_are_one_line(tmp_path, capsys, argv, words):
    out = tmp_path / "r.nc"
    assert main(["sample", "relu", *argv, "--quiet", "--out", str(out)]) == 2
    err = _one_line_error(capsys)
    for w in words:
        assert w in err
    assert not out.exists()


def test_no_traceback_from_a_real_process(tmp_path):
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""), JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-m", "bnnzoo.cli", "sample", "three_layer_erf", "--param", "width=3",
                        "--out", str(tmp_path / "r.nc")], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 2
    assert r.stderr.startswith("bnnzoo: error: --param width:") and r.stderr.count("\n") == 1, r.stderr
    assert "width1, width2" in r.stderr


def test_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"bnnzoo {version('bnnzoo')}"


def test_help_shows_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["sample", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for d in ("4 on a CPU, 64 on a GPU", "(default: 300)", "(default: auto)", "(default: highest)"):
        assert d in text
    assert "(default: None)" not in text and "(default: False)" not in text
    assert "--param NAME=VALUE" in text
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    assert "(default: bnnzoo_demo)" in " ".join(capsys.readouterr().out.split())


def test_demo_flags_default_to_run_demos_defaults():
    # `bnnzoo demo` and run_demo(...) must run the same demo when nothing is given
    defaults = {k: v.default for k, v in inspect.signature(run_demo).parameters.items()
                if v.default is not inspect.Parameter.empty}
    flags = vars(build_parser().parse_args(["demo"]))
    shared = set(defaults) & set(flags)
    assert {"width", "P", "chains", "warmup", "relu_size", "relu_warmup", "sigmoidal_size", "sigmoidal_warmup",
            "samples", "sampler", "sigmoidal_temperature", "seed"} <= shared
    assert {k: flags[k] for k in shared} == {k: defaults[k] for k in shared}


def test_list_verbose_is_compact(capsys):
    assert main(["list", "-v"]) == 0
    out = capsys.readouterr().out
    assert "object at 0x" not in out and "GatedSpec({" not in out
    for e in list_entries():
        assert f"   {e.name}: {e.description}" in out
    # observables shared by several entries (the lazy twins, the two gated tasks) are printed once
    lines = out.splitlines()
    for e in list_entries():
        for o in e.observables:
            line = f"     - {o.name}: {o.description}" + (f"  [theory: {o.theory}]" if o.theory else "")
            assert lines.count(line) == len({x.observables for x in list_entries() if o in x.observables}), line
    assert out.count("z1..zL: preactivations") == 1
    assert main(["list"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(list_entries())


@pytest.mark.nets("relu")
def test_cli_diagnose_json(sampled, tmp_path, capsys):
    from bnnzoo.cli import main

    rc = main(["diagnose", sampled("relu", 0), "--json", "--figures", str(tmp_path / "figs")])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["coding_scheme"] == "sparse"
    assert out["ergodicity"]["a"]["verdict"] == "broken"
    # the report's verdict is the result gated by the run's health: a relaxing run (this one's fourth outlier merges
    # into the bulk early in the kept draws) keeps no per-unit verdict (issue 31)
    status = out["health"]["status"]
    gated = {"equilibrated": "broken", "relaxing": "relaxing: ", "failed": "inconclusive: "}[status]
    assert out["verdicts"]["ergodicity[a]"].startswith(gated), (status, out["verdicts"])
    assert (tmp_path / "figs" / "fig2_codes.png").exists()


@pytest.mark.parametrize("flag", ["--samples", "--warmup", "--relu-size", "--width", "--sigmoidal-size",
                                  "--sigmoidal-warmup"])
def test_demo_refuses_a_non_positive_size_before_sampling(tmp_path, capsys, flag):
    out = tmp_path / "demo"
    assert main(["demo", flag, "0", "--quiet", "--out", str(out)]) == 2
    err = _one_line_error(capsys)
    assert f"{flag} must be a positive integer" in err
    assert not any(out.iterdir()) if out.exists() else True


def test_demo_refuses_a_single_chain(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--chains", "1", "--quiet", "--out", str(out)]) == 2
    assert "--chains must be >= 2" in _one_line_error(capsys)
    assert not out.exists() or not any(out.iterdir())


def test_demo_refuses_a_non_positive_sigmoidal_temperature(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--sigmoidal-temperature", "0", "--quiet", "--out", str(out)]) == 2
    assert "--sigmoidal-temperature must be > 0" in _one_line_error(capsys)
    assert not out.exists() or not any(out.iterdir())


def test_a_warning_during_a_command_is_one_line_without_python_source(capsys, monkeypatch):
    """A warning raised while a command runs reaches the shell as one line ``warning: ...`` (it printed the Python
    file, line number and source line of the warning)."""
    import warnings

    import bnnzoo.cli as cli

    def warns(args):
        warnings.warn("the chains did not\nmix", RuntimeWarning)
        return 0

    monkeypatch.setattr(cli, "_cmd_list", warns)
    assert main(["list"]) == 0
    assert capsys.readouterr().err.splitlines() == ["warning: the chains did not mix"]


def test_a_bad_cache_variable_is_one_line_in_the_shell(tmp_path):
    """BNNZOO_COMPILATION_CACHE naming a file: ``bnnzoo list`` runs, with one line on stderr and no Python source
    (the warning is given when bnnzoo is imported, before the command can format it)."""
    afile = tmp_path / "afile"
    afile.write_text("")
    r = subprocess.run([sys.executable, "-m", "bnnzoo.cli", "list"], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=SRC, BNNZOO_COMPILATION_CACHE=str(afile)))
    assert r.returncode == 0 and "sigmoidal" in r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "BNNZOO_COMPILATION_CACHE=" in lines[0] and "running without it" in lines[0], r.stderr
    assert "_from_environment" not in r.stderr


def test_a_read_only_file_system_is_named_as_such(tmp_path, capsys, monkeypatch):
    """--out in a folder that cannot be written because its file system is mounted read-only says so (it said
    'permission denied'); a real read-only mount needs root, so the OS's answers are stood in for."""
    class ReadOnly:
        f_flag = os.ST_RDONLY

    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    monkeypatch.setattr(os, "statvfs", lambda path: ReadOnly())
    assert main(["sample", "deep_linear", "--out", str(tmp_path / "r.nc")]) == 2
    err = _one_line_error(capsys)
    assert f"--out: cannot write in {tmp_path} (a read-only file system)" in err
