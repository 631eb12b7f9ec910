"""The entry contract through the shell: every registered entry samples with its defaults from ``bnnzoo sample``
(small sizes via ``--param``) and its run is diagnosed by ``bnnzoo diagnose --json``; the entry's ``forward`` and
``likelihood_variance`` agree with its model; and a network registered here, in the test, goes through
sample → NetCDF → diagnose → report like the built-in ones ("adding a network means one model file and one
registration")."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest
from numpyro import handlers

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.cli import build_task, main, task_model_keywords
from bnnzoo.models import ZOO, get_entry, list_entries

# small sizes: model keywords by model, task keywords by task builder (names an entry does not take are not passed)
SMALL_MODEL = {"fcn": dict(width=3), "three_layer": dict(width1=3, width2=3), "attention": dict(heads=1, key_dim=2),
               "gated": {}}
SMALL_TASK = {"toy_task": dict(P=6), "hermite_task": dict(d=4, P=6, P_test=5), "attention_task": dict(L=2, d=3, P=6,
              P_test=5), "xor_task": dict(hidden=2), "routing_task": dict(modules=3, hidden=2)}
ENTRIES = [e.name for e in list_entries()]
RESAMPLED = "sigmoidal"
"""The entry whose shell run is sampled again with ``--exclude ''`` (the hidden weights kept) and then predicted and
diagnosed: that path of the command line is the same for every entry that leaves weights out."""


def _small(entry) -> tuple[dict, dict]:
    return (SMALL_MODEL.get(entry.model.__name__, {}), SMALL_TASK.get(entry.make_task.__name__, {}))


def _params(entry) -> list[str]:
    model_kw, task_kw = _small(entry)
    out = []
    for where, kw in (("model", model_kw), ("task", task_kw)):
        for k, v in kw.items():
            out += ["--param", f"{where}.{k}={v!r}"]
    return out


@pytest.mark.parametrize("name", ENTRIES)
def test_shell_sample_then_diagnose(name, tmp_path, capsys):
    """`bnnzoo sample E --out r.nc` with the entry's own defaults (default --record included) → `bnnzoo diagnose
    r.nc --json` prints JSON."""
    entry = get_entry(name)
    out = tmp_path / "r.nc"
    assert main(["sample", name, *_params(entry), "--chains", "2", "--warmup", "10", "--samples", "4", "--quiet",
                 "--out", str(out)]) == 0, capsys.readouterr().err
    idata = azcompat.from_netcdf(out)
    cfg = bnnzoo.run_config(idata)
    assert cfg["model"] == name
    model_kw, task_kw = _small(entry)
    assert {k: cfg["model_kwargs"][k] for k in model_kw} == model_kw
    assert {k: cfg["task"][k] for k in task_kw} == task_kw
    assert tuple(cfg["record"])[:len(entry.record)] == entry.record     # (+ "kernels", streamed as block means)
    # every site the entry's dims name for these settings is in the run (the recorded ones included), but for those
    # the shell leaves out by default (the FCNs' hidden weights) and the kernels (group posterior_thinned)
    kw = dict(cfg["model_kwargs"], record=entry.record)
    post = azcompat.get_group(idata, "posterior")
    left_out = set(entry.unread_sites(cfg["model_kwargs"])) if entry.unread_sites is not None else set()
    assert set(cfg.get("engine", {}).get("exclude", [])) == left_out
    sites = set(entry.dims(**kw)) - {"y", "f_test"} - left_out
    assert sites <= set(post.data_vars), sites - set(post.data_vars)
    for site, dims in entry.dims(**kw).items():
        if site in post.data_vars:
            assert tuple(post[site].dims) == ("chain", "draw", *dims)
    capsys.readouterr()
    assert main(["diagnose", str(out), "--json"]) == 0, capsys.readouterr().err
    report = json.loads(capsys.readouterr().out)
    assert isinstance(report, dict) and report
    # predict leaves its input as it was, and the copy it returns is diagnosed like the run; a run without the
    # hidden weights says in one line how to keep them
    groups = azcompat.group_names(idata)
    X = np.asarray(azcompat.get_group(idata, "constant_data")["X"].values)
    if left_out:
        with pytest.raises(ValueError, match="--exclude ''"):
            bnnzoo.predict(idata, X[:3])
        if name != RESAMPLED:   # predict itself is checked for every entry in tests/inference/test_predictive.py
            return
        assert main(["sample", name, *_params(entry), "--chains", "2", "--warmup", "10", "--samples", "4", "--quiet",
                     "--exclude", "", "--out", str(out), "--overwrite"]) == 0, capsys.readouterr().err
        idata = azcompat.from_netcdf(out)
        assert {f"W{l}" for l in range(1, cfg["model_kwargs"].get("depth", 1) + 1)} <= set(
            azcompat.get_group(idata, "posterior").data_vars)
        groups = azcompat.group_names(idata)
    pred = bnnzoo.predict(idata, X[:3])
    assert azcompat.group_names(idata) == groups and pred is not idata
    assert azcompat.get_group(pred, "predictions")["f"].shape[2] == 3
    assert set(bnnzoo.diagnose(pred, store=False).verdicts) == set(report["verdicts"])


@pytest.mark.parametrize("name", ENTRIES)
def test_forward_and_likelihood_variance_match_the_model(name):
    """``entry.forward(X, params, **kw)`` gives the model's own ``f`` for a prior draw, and
    ``entry.likelihood_variance(kw)`` the variance of its likelihood site ``y`` (exact, float32 rounding)."""
    entry = get_entry(name)
    model_kw, task_kw = _small(entry)
    task = build_task(entry, dict(entry.task_defaults, **task_kw))
    kw = entry.kwargs(**model_kw)
    kw.update(task_model_keywords(entry, task, model_kw))
    if entry.resolve is not None:
        kw = entry.resolve(task.X, kw)
    tr = handlers.trace(handlers.seed(entry.model, jax.random.PRNGKey(1))).get_trace(task.X, task.Y, **kw)
    params = {k: s["value"] for k, s in tr.items() if s["type"] == "sample" and not s["is_observed"]}
    f = np.asarray(entry.forward(task.X, params, **kw))
    np.testing.assert_allclose(f, np.asarray(tr["f"]["value"]), rtol=1e-5, atol=1e-6)
    assert f.shape == task.Y.shape
    scale = np.asarray(tr["y"]["fn"].scale)
    np.testing.assert_allclose(scale**2, entry.likelihood_variance(kw), rtol=1e-6)


# ------------------------------------------------------------------------------------------- a new network
NEW = "tiny_softplus_net_for_test"


def _adding_an_entry_block() -> str:
    """The code block of docs/contract.md's "Adding an entry" section, as the page shows it."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "contract.md").read_text()
    block = page.split("<!-- adding-an-entry:begin -->", 1)[1].split("<!-- adding-an-entry:end -->", 1)[0]
    return block.strip().removeprefix("```python").removesuffix("```")


@pytest.fixture
def new_entry():
    """The registration of docs/contract.md ("Adding an entry"), run as written (removed from the zoo afterwards)."""
    namespace: dict = {}
    exec(compile(_adding_an_entry_block(), "docs/contract.md", "exec"), namespace)
    entry = namespace["entry"]
    assert entry.name == NEW
    yield entry
    ZOO.pop(NEW, None)


def test_a_network_registered_here_goes_through_the_whole_path(new_entry, tmp_path, capsys):
    assert main(["list"]) == 0 and NEW in capsys.readouterr().out
    out = tmp_path / "new.nc"
    assert main(["sample", NEW, "--chains", "2", "--warmup", "10", "--samples", "4", "--quiet", "--out",
                 str(out), "--log-likelihood", "--posterior-predictive", "--prior-predictive"]) == 0, \
        capsys.readouterr().err
    idata = azcompat.from_netcdf(out)
    for group in ("log_likelihood", "posterior_predictive", "prior", "prior_predictive"):   # every group asked for
        assert group in azcompat.group_names(idata), group
    assert bnnzoo.run_config(idata)["model"] == NEW
    post = azcompat.get_group(idata, "posterior")
    assert post["z2"].shape == (2, 4, 4, 6) and post["W2"].dims == ("chain", "draw", "neuron", "neuron_in")
    capsys.readouterr()
    assert main(["diagnose", str(out), "--json"]) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)
    res = bnnzoo.plots.write_report({NEW: idata}, tmp_path / "report", figures=False)
    assert (tmp_path / "report" / NEW / "report.json").is_file()
    assert json.loads((tmp_path / "report" / "summary.json").read_text())[NEW]
    assert res[NEW]["report"] is not None
    assert get_entry(NEW) is new_entry
