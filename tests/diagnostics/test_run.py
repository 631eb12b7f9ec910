"""A run read once (bnnzoo.diagnostics.run) and a model of one's own through sample → diagnose(entry=) → report."""

from __future__ import annotations

import json
import warnings

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import init_to_median

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.diagnostics.run import read_run
from bnnzoo.models import fcn

WIDTH = 8


def my_model(X, Y=None):
    """A user's model: the sigmoidal zoo net with priors on its temperature and readout variance."""
    T = numpyro.sample("temperature", dist.LogNormal(jnp.log(0.02), 0.1))
    s2 = numpyro.sample("sigma_a2", dist.LogNormal(0.0, 0.1))
    return fcn(X, Y, width=WIDTH, activation="sigmoid", temperature=T, sigma_a2=s2, record=("z",))


@pytest.fixture(scope="module")
def own_run():
    task = bnnzoo.toy_task(P=12, y_neg=0.5, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return bnnzoo.sample(my_model, task, num_chains=2, num_warmup=40, num_samples=40, progress=False, seed=1)


def test_a_models_own_sites_keep_the_zoos_dims(own_run):
    post = azcompat.get_group(own_run, "posterior")
    assert post["f"].dims == ("chain", "draw", "point", "class")
    assert post["q_a"].dims == ("chain", "draw", "class")
    assert post["z1"].dims == ("chain", "draw", "neuron", "point")
    assert post["temperature"].dims == ("chain", "draw")
    assert "diagnostics_health" in azcompat.group_names(own_run)      # sample stored its health


def test_hyperparameters_with_priors_are_read_from_the_posterior(own_run):
    run = read_run(own_run, entry="sigmoidal")
    post = azcompat.get_group(own_run, "posterior")
    for k in ("temperature", "sigma_a2"):
        assert run.from_posterior[k] == pytest.approx(float(np.median(post[k].values)))
        assert run.model_kwargs[k] == run.from_posterior[k]
    rd = run.fcn()
    assert (rd.width, rd.depth, rd.activation) == (WIDTH, 1, "sigmoid")
    assert rd.temperature == pytest.approx(float(np.median(post["temperature"].values)))
    assert run.health.n_draws == 40                                     # the stored health, read back
    # a keyword given to read_run wins over the posterior's median
    assert read_run(own_run, entry="sigmoidal", model_kwargs={"temperature": 0.5}).model_kwargs["temperature"] == 0.5


def test_own_model_through_diagnose_and_write_report(own_run, tmp_path):
    rep = bnnzoo.diagnose(own_run, entry="sigmoidal", store=False)
    assert {"ergodicity[a]", "ergodicity[z1]", "codes[z1]", "branches", "theory"} <= set(rep.verdicts)
    assert "posterior medians" in rep.run and "as sigmoidal" in rep.run
    assert set(rep.numbers["hyperparameters_from_posterior"]) == {"temperature", "sigma_a2"}
    assert rep.theory is not None and "theory.meanfield.single_neuron_meanfield" in rep.theory.theories
    assert not any("nan" in ln.split() for ln in rep.summary())
    res = bnnzoo.plots.write_report({"mine": own_run}, tmp_path / "report", entry="sigmoidal")
    assert json.loads((tmp_path / "report" / "mine" / "report.json").read_text())["verdicts"]["branches"]
    assert (tmp_path / "report" / "mine" / "fig4_readout.png").is_file()
    assert res["mine"]["report"] is not None
    # without entry=: the health, and one verdict saying what was not tested
    bare = bnnzoo.diagnose(own_run, store=False)
    assert list(bare.verdicts) == ["units"] and bare.verdicts["units"].startswith("not tested")
    assert bare.health is not None


def test_init_takes_numpyros_strategies():
    task = bnnzoo.toy_task(P=8, y_neg=0.5, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        idata = bnnzoo.sample("sigmoidal", task, width=4, num_chains=2, num_warmup=5, num_samples=5,
                              progress=False, init=init_to_median(num_samples=5))
    assert bnnzoo.run_config(idata)["sampler"]["init"] == "init_to_median"
    with pytest.raises(ValueError, match="init_to_"):
        bnnzoo.sample("sigmoidal", task, width=4, num_chains=2, num_warmup=5, num_samples=5, init=lambda site: None)
    with pytest.raises(ValueError, match="init=init_to_median applies to the HMC samplers"):
        bnnzoo.sample("sigmoidal", task, width=4, num_chains=2, num_warmup=5, num_samples=5, sampler="smc",
                      init=init_to_median())


def test_cli_diagnoses_a_models_own_run_as_an_entry(own_run, tmp_path, capsys):
    from bnnzoo.cli import main

    path = tmp_path / "mine.nc"
    azcompat.to_netcdf(own_run, path)
    assert main(["diagnose", str(path), "--entry", "sigmoidal", "--json", "--no-kernels"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["config"]["entry"] == "sigmoidal" and "branches" in out["verdicts"]
    assert main(["diagnose", str(path), "--entry", "no_such_net"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bnnzoo: error: --entry: unknown zoo entry 'no_such_net'")


def test_run_data_of_a_models_own_run_takes_its_hyperparameters_from_the_posterior(own_run):
    from bnnzoo.diagnostics import run_data

    post = azcompat.get_group(own_run, "posterior")
    rd = run_data(own_run, activation="sigmoid")
    assert rd.temperature == pytest.approx(float(np.median(post["temperature"].values)))
    assert rd.sigma_a2 == pytest.approx(float(np.median(post["sigma_a2"].values)))
    assert (rd.width, rd.depth) == (WIDTH, 1)
    with pytest.raises(ValueError, match="pass activation=, or diagnose it as a zoo entry"):
        run_data(own_run)


def test_a_stored_health_whose_values_changed_is_judged_again(own_run):
    """The stored health carries a checksum of the values it judged: read back unchanged it is used as stored; a
    copy of the run whose readout draws were scaled after sampling (its stored group kept) is judged again."""
    stored = read_run(own_run, entry="sigmoidal").health
    assert stored.values_checksum and stored.values_checksum == bnnzoo.inference.health.values_checksum(
        bnnzoo.inference.health.judged_values(azcompat.get_group(own_run, "posterior"),
                                              azcompat.get_group(own_run, "observed_data")["y"].values))
    groups = {g: azcompat.get_group(own_run, g) for g in azcompat.group_names(own_run)}
    groups["posterior"] = groups["posterior"].assign(a=groups["posterior"]["a"] * 1.5)
    edited = azcompat.make_idata(groups, azcompat.get_attrs(own_run))
    assert "diagnostics_health" in azcompat.group_names(edited)
    again = read_run(edited, entry="sigmoidal").health            # judged again: the edited values' checksum
    assert again.values_checksum == bnnzoo.inference.health.values_checksum(
        bnnzoo.inference.health.judged_values(groups["posterior"], groups["observed_data"]["y"].values))
    assert again.values_checksum != stored.values_checksum


def test_entry_never_relabels_a_zoo_run_as_another_entry(tmp_path, capsys):
    """A run sampled as one zoo entry is not diagnosed as another (its numbers would carry the other's name): the
    library raises, the CLI prints one line; the run's own entry is accepted."""
    from bnnzoo.cli import main

    idata = bnnzoo.sample("sigmoidal", bnnzoo.toy_task(P=8), width=4, num_chains=2, num_warmup=5, num_samples=5,
                          progress=False)
    with pytest.raises(ValueError, match="sampled as the zoo entry 'sigmoidal'"):
        read_run(idata, entry="relu")
    assert read_run(idata, entry="sigmoidal").entry.name == "sigmoidal"
    path = tmp_path / "run.nc"
    azcompat.to_netcdf(idata, path)
    capsys.readouterr()
    assert main(["diagnose", str(path), "--entry", "relu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sampled as the zoo entry 'sigmoidal'" in err[0], err


def test_a_run_without_labels_takes_them_from_its_one_hot_targets(own_run):
    """A run converted by ``az.from_numpyro`` has no ``labels`` in its constant data: the classes come from the
    one-hot targets, as a Task makes them (they were all 0: one class, every code 'n/a')."""
    groups = {g: azcompat.get_group(own_run, g) for g in azcompat.group_names(own_run)}
    assert "labels" in groups["constant_data"]
    groups["constant_data"] = groups["constant_data"].drop_vars("labels")
    converted = azcompat.make_idata(groups, azcompat.get_attrs(own_run))
    labels = read_run(converted, entry="sigmoidal").labels
    np.testing.assert_array_equal(labels, read_run(own_run, entry="sigmoidal").labels)
    assert len(set(labels.tolist())) == 3


def test_a_draw_that_is_not_finite_is_refused_in_one_line(own_run):
    """One NaN draw: diagnose says which variable and how many draws, before any diagnostic (it was scikit-learn's
    GaussianMixture message from the branch clustering)."""
    post = azcompat.get_group(own_run, "posterior")
    a = post["a"].values.copy()
    a[1, 7, 2, 0] = np.nan
    groups = {g: azcompat.get_group(own_run, g) for g in azcompat.group_names(own_run)}
    groups["posterior"] = post.assign(a=(post["a"].dims, a))
    broken = azcompat.make_idata(groups, azcompat.get_attrs(own_run))
    with pytest.raises(ValueError, match=r"^idata: the posterior variable 'a' is not finite \(NaN or inf\) on 1 of "
                                         r"80 draws") as e:
        bnnzoo.diagnose(broken, entry="sigmoidal", store=False)
    assert "\n" not in str(e.value)
