"""Predictive groups: posterior / prior predictive from ``bnnzoo.sample``, ``bnnzoo.predict`` on new inputs, and the
ArviZ checks that read them (``plot_ppc`` / ``plot_ppc_dist``, LOO-PIT) on the installed ArviZ line (0.x or 1.x)."""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.models import get_entry, likelihood_variance
from bnnzoo.tasks import attention_task, hermite_task, toy_task, xor_task
from bnnzoo.tasks.gated_tasks import routing_spec, routing_task

# Every zoo entry at a tiny size: (task, model keyword overrides).
TINY = {
    "deep_linear": (lambda: toy_task(P=6, N0=10, P_test=3), dict(width=4)),
    "deep_linear_lazy": (lambda: toy_task(P=6, N0=10, P_test=3), dict(width=4)),
    "sigmoidal": (lambda: toy_task(P=6, N0=10, P_test=3, y_neg=0.5), dict(width=4)),
    "sigmoidal_lazy": (lambda: toy_task(P=6, N0=10, P_test=3, y_neg=0.5), dict(width=4)),
    "relu": (lambda: toy_task(P=6, N0=10, P_test=3, y_neg=-0.5), dict(width=4)),
    "relu_lazy": (lambda: toy_task(P=6, N0=10, P_test=3, y_neg=-0.5), dict(width=4)),
    "three_layer_erf": (lambda: hermite_task(d=4, P=8, P_test=5), dict(width1=4, width2=3)),
    "three_layer_erf_meanfield": (lambda: hermite_task(d=4, P=8, P_test=5), dict(width1=4, width2=3)),
    "softmax_attention": (lambda: attention_task(L=2, d=3, P=8, P_test=5), dict(context_length=2, heads=1)),
    "gdln_xor": (lambda: xor_task(hidden=4), dict()),
    "gdln_routing": (lambda: routing_task(hidden=4), dict(spec=routing_spec(hidden=4))),
}


def _run(name, **kw):
    make, over = TINY[name]
    task = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = bnnzoo.sample(name, task, num_chains=2, num_warmup=kw.pop("num_warmup", 30),
                              num_samples=kw.pop("num_samples", 40), seed=1, progress=False, **over, **kw)
    return task, idata


@pytest.fixture(scope="module")
def linear_run():
    return _run("deep_linear", num_warmup=100, num_samples=200, log_likelihood=True, posterior_predictive=True,
                prior_predictive=True)


def test_groups_and_named_dims(linear_run):
    task, idata = linear_run
    names = azcompat.group_names(idata)
    for g in ("posterior_predictive", "prior_predictive", "prior", "log_likelihood", "observed_data"):
        assert g in names, g
    for g in ("posterior_predictive", "prior_predictive"):
        y = azcompat.get_group(idata, g)["y"]
        assert y.dims == ("chain", "draw", "point", "class") and y.shape == (2, 200, task.P, task.m)
    prior = azcompat.get_group(idata, "prior")
    assert prior["a"].dims == ("chain", "draw", "neuron", "class") and "W1" in prior and "y" not in prior


def test_posterior_predictive_is_f_plus_likelihood_noise(linear_run):
    """y - f at every draw is N(0, v) with v the model's likelihood variance T/N (closed form, not the sampler)."""
    task, idata = linear_run
    cfg = bnnzoo.run_config(idata)["model_kwargs"]
    v = likelihood_variance(cfg["readout"], cfg["width"], cfg["temperature"])
    r = (azcompat.get_group(idata, "posterior_predictive")["y"] - azcompat.get_group(idata, "posterior")["f"]).values
    n = r.size                                    # 7200 independent noise draws
    assert abs(r.mean()) < 4 * np.sqrt(v / n)
    assert abs(r.var() / v - 1) < 4 * np.sqrt(2 / n)          # about 7 %


def test_prior_draws_have_the_prior_variances(linear_run):
    """W1 ~ N(0, sigma_w2), a ~ N(0, sigma_a2) entrywise, with the resolved sigma_a2 of the run's provenance; the
    prior predictive y is f + noise of variance v."""
    _, idata = linear_run
    cfg = bnnzoo.run_config(idata)["model_kwargs"]
    prior = azcompat.get_group(idata, "prior")
    for site, var in (("W1", cfg.get("sigma_w2", 1.0)), ("a", cfg["sigma_a2"])):
        x = prior[site].values
        assert abs(x.var() / var - 1) < 5 * np.sqrt(2 / x.size), site
    v = likelihood_variance(cfg["readout"], cfg["width"], cfg["temperature"])
    r = (azcompat.get_group(idata, "prior_predictive")["y"] - prior["f"]).values
    assert abs(r.var() / v - 1) < 4 * np.sqrt(2 / r.size)


def test_predict_reproduces_the_sampled_outputs(linear_run):
    """predict on the training inputs gives the posterior's own f, on the test inputs the sampled predictions."""
    task, idata = linear_run
    f_train = azcompat.get_group(idata, "posterior")["f"].values
    f_test = azcompat.get_group(idata, "predictions")["f"].values
    out = bnnzoo.predict(idata, task.X, seed=3)
    pred = azcompat.get_group(out, "predictions")
    assert pred["f"].dims == ("chain", "draw", "test_point", "class")
    np.testing.assert_allclose(pred["f"].values, f_train, rtol=1e-4, atol=1e-5)
    assert azcompat.get_group(out, "predictions_constant_data")["X_test"].shape == task.X.shape
    out = bnnzoo.predict(idata, task.X_test, seed=3)
    pred = azcompat.get_group(out, "predictions")
    np.testing.assert_allclose(pred["f"].values, f_test, rtol=1e-4, atol=1e-5)
    cfg = bnnzoo.run_config(idata)["model_kwargs"]
    v = likelihood_variance(cfg["readout"], cfg["width"], cfg["temperature"])
    r = (pred["y"] - pred["f"]).values
    assert abs(r.var() / v - 1) < 4 * np.sqrt(2 / r.size)


def test_diagnose_after_predict():
    """predict returns a new object and leaves the run as it was; its new inputs have no targets: diagnose of the
    copy still runs, and says why the test-set GP comparison was skipped."""
    task, idata = _run("deep_linear", num_warmup=50, num_samples=100)
    groups = azcompat.group_names(idata)
    X_test = azcompat.get_group(idata, "predictions_constant_data")["X_test"].values.copy()
    out = bnnzoo.predict(idata, task.X_test[:2], seed=0)
    assert out is not idata and azcompat.group_names(idata) == groups
    np.testing.assert_array_equal(azcompat.get_group(idata, "predictions_constant_data")["X_test"].values, X_test)
    assert "y_test" in azcompat.get_group(idata, "predictions_constant_data")
    rep = bnnzoo.diagnose(out, kernels=False)
    assert "no targets" in rep.theory.skipped["theory.gp.gp_posterior"]
    assert "theory" in rep.verdicts


def test_arviz_ppc_and_loo_pit(linear_run, tmp_path):
    _, idata = linear_run
    for group in ("posterior", "prior"):
        azcompat.save_plot(azcompat.plot_ppc(idata, group=group), tmp_path / f"ppc_{group}.png")
        assert (tmp_path / f"ppc_{group}.png").stat().st_size > 0
    pit = azcompat.loo_pit(idata)
    assert pit.shape == (6, 3) and np.all((pit.values >= 0) & (pit.values <= 1))
    azcompat.save_plot(azcompat.plot_loo_pit(idata), tmp_path / "loo_pit.png")


def test_predictive_groups_survive_netcdf(linear_run, tmp_path):
    _, idata = linear_run
    back = azcompat.from_netcdf(azcompat.to_netcdf(idata, tmp_path / "r.nc"))
    for g in ("posterior_predictive", "prior_predictive", "prior"):
        assert g in azcompat.group_names(back)
    out = bnnzoo.predict(back, np.zeros((2, 10)))
    assert azcompat.get_group(out, "predictions")["y"].shape == (2, 200, 2, 3)


def test_predict_names_an_edited_provenance_rather_than_missing_weights(linear_run, tmp_path):
    """A run file whose stored depth was edited: predict blamed the latent sites the edited model expects and the run
    never had; it now names the edited provenance (its checksum no longer matches) as the cause."""
    _, idata = linear_run
    back = azcompat.from_netcdf(azcompat.to_netcdf(idata, tmp_path / "r.nc"))
    cfg = json.loads(azcompat.get_attrs(back)["bnnzoo_config"])
    cfg["model_kwargs"]["depth"] = 2
    holders = [back] if azcompat.AZ_MAJOR >= 1 else []      # where each ArviZ line keeps the run's attributes
    for holder in holders + [azcompat.get_group(back, g) for g in azcompat.group_names(back)]:
        if "bnnzoo_config" in holder.attrs:
            holder.attrs["bnnzoo_config"] = json.dumps(cfg)
    assert json.loads(azcompat.get_attrs(back)["bnnzoo_config"])["model_kwargs"]["depth"] == 2
    with pytest.raises(ValueError, match=r"^idata: the run's provenance does not match its checksum .*W2"):
        bnnzoo.predict(back, np.zeros((2, 10)))


def test_predict_bad_input():
    _, idata = _run("deep_linear", num_warmup=0, num_samples=2, sampler="hmc", num_steps=1, step_size=0.01)
    with pytest.raises(ValueError, match="X_new must be a finite 2-d"):
        bnnzoo.predict(idata, np.zeros(4))
    with pytest.raises(ValueError, match="seed must be an integer"):
        bnnzoo.predict(idata, np.zeros((2, 10)), seed="1")
    with pytest.raises(ValueError, match="bool|True or False"):
        bnnzoo.sample("deep_linear", toy_task(P=6, N0=10, P_test=3), posterior_predictive="yes", width=4,
                      sampler="nuts")


@pytest.mark.parametrize("name", ["three_layer_erf"] + [
    pytest.param(n, marks=pytest.mark.slow) for n in sorted(TINY) if n != "three_layer_erf"])
def test_every_entry_has_predictive_groups(name):
    """A few fixed-step HMC draws per entry: the predictive groups exist with named dims, and predict on the
    training inputs gives back the posterior's f."""
    assert get_entry(name)                      # every tiny case is a registered entry
    task, idata = _run(name, num_warmup=0, num_samples=3, sampler="hmc", num_steps=2, step_size=1e-3,
                       posterior_predictive=True, prior_predictive=True)
    for g in ("posterior_predictive", "prior_predictive"):
        y = azcompat.get_group(idata, g)["y"]
        assert y.dims == ("chain", "draw", "point", "class") and y.shape == (2, 3) + task.Y.shape
    # a non-default gated spec travels in the provenance as its dict: predict needs it given neither way
    extra = {"spec": TINY[name][1]["spec"]} if "spec" in TINY[name][1] else {}
    for kw in ({}, extra):
        out = bnnzoo.predict(idata, task.X, **kw)
        np.testing.assert_allclose(azcompat.get_group(out, "predictions")["f"].values,
                                   azcompat.get_group(idata, "posterior")["f"].values, rtol=1e-4, atol=1e-5)


def test_a_gated_spec_travels_as_json_and_the_old_repr_still_reads(tmp_path):
    """The gated net's spec is written into the provenance as its dict (JSON) and read back with
    :func:`bnnzoo.inference.convert.parse_config`; a run file written the old way, with the spec as its repr
    ``"GatedSpec({...})"``, reads back to the same dict, so predict and the pathway diagnostics take it."""
    from bnnzoo.diagnostics.alignment import pathway_spectra
    from bnnzoo.diagnostics.run import read_run
    from bnnzoo.inference.convert import sealed

    spec = TINY["gdln_routing"][1]["spec"]
    task, idata = _run("gdln_routing", num_warmup=0, num_samples=3, sampler="hmc", num_steps=2, step_size=1e-3)
    attrs = azcompat.get_attrs(idata)
    cfg = json.loads(attrs["bnnzoo_config"])
    assert cfg["model_kwargs"]["spec"] == spec.to_dict()             # JSON, not a repr
    cfg["model_kwargs"]["spec"] = repr(spec)                         # the attribute as an older bnnzoo wrote it
    assert cfg["model_kwargs"]["spec"].startswith("GatedSpec({")
    post = azcompat.get_group(idata, "posterior")
    old_attrs = sealed(dict(attrs, bnnzoo_config=json.dumps(cfg)), post)
    groups = {g: azcompat.get_group(idata, g).copy() for g in azcompat.group_names(idata)}
    path = azcompat.to_netcdf(azcompat.make_idata(groups, attrs=old_attrs), tmp_path / "old.nc")
    old = azcompat.read_run_file(path)
    assert "GatedSpec({" in azcompat.get_attrs(old)["bnnzoo_config"]
    for run in (idata, old):
        assert bnnzoo.run_config(run)["model_kwargs"]["spec"] == spec.to_dict()
        assert read_run(run).model_kwargs["spec"] == spec.to_dict()
        out = bnnzoo.predict(run, task.X)
        np.testing.assert_allclose(azcompat.get_group(out, "predictions")["f"].values, post["f"].values,
                                   rtol=1e-4, atol=1e-5)
        assert {s.pathway for s in pathway_spectra(run)} == {p.name for p in spec.pathways}


def test_registered_entries_all_covered():
    shipped = {e.name for e in bnnzoo.list_entries() if e.model.__module__.startswith("bnnzoo.")}
    assert set(TINY) == shipped


def _user_guide_model():
    """``my_model`` of the user guide's "A model of your own", defined by running the page's code block as written
    (up to the call that samples it)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    page = (Path(__file__).resolve().parents[2] / "docs" / "user_guide.md").read_text()
    block = page.split("<!-- own-model:begin -->", 1)[1].split("<!-- own-model:end -->", 1)[0]
    code = block.strip().removeprefix("```python").split("\nidata = ", 1)[0]
    namespace = {"bnnzoo": bnnzoo, "numpyro": numpyro, "dist": dist, "jnp": jnp}
    exec(compile(code, "docs/user_guide.md", "exec"), namespace)
    return namespace["my_model"]


def test_a_model_of_ones_own_gets_every_group():
    """The user guide's own model (a wrapper of fcn that takes no num_outputs, run from the page's code block)
    gets the log-likelihood, posterior predictive and prior groups: the library calls it with the targets and the
    likelihood site drawn.  The posterior predictive draws scatter around f with the likelihood's sd √(T/N) at the
    sampled temperature (its mean absolute deviation √(2/π) sd within 20 %), and the log-likelihood is that
    Gaussian's density of the targets."""
    my_model, width = _user_guide_model(), 60         # the page's width
    task = toy_task(P=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = bnnzoo.sample(my_model, task, num_chains=2, num_warmup=20, num_samples=30, log_likelihood=True,
                              posterior_predictive=True, prior_predictive=True)
    assert {"log_likelihood", "posterior_predictive", "prior", "prior_predictive"} <= set(azcompat.group_names(idata))
    post = azcompat.get_group(idata, "posterior")
    f, T = post["f"].values, post["temperature"].values[..., None, None]
    y = azcompat.get_group(idata, "posterior_predictive")["y"].values
    sd = np.sqrt(T / width)
    assert y.shape == f.shape and not np.allclose(y, task.Y)
    ratio = np.mean(np.abs(y - f) / sd) / np.sqrt(2 / np.pi)
    assert abs(ratio - 1) < 0.2, ratio
    ll = azcompat.get_group(idata, "log_likelihood")["y"].values
    expect = -0.5 * ((task.Y - f) / sd) ** 2 - np.log(sd) - 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(ll, expect, rtol=1e-3, atol=1e-3)
    assert set(azcompat.get_group(idata, "prior").data_vars) >= {"W1", "a", "temperature", "sigma_a2"}
