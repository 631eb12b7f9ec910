"""bnnzoo.sample: ArviZ groups, named dims, provenance, NetCDF round trip, trace plots, samplers, errors."""

import json
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import numpyro  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
import pytest  # noqa: E402

import bnnzoo  # noqa: E402
import jax  # noqa: E402
from bnnzoo.inference import plan  # noqa: E402
from bnnzoo import azcompat  # noqa: E402
from bnnzoo.tasks import toy_task  # noqa: E402


@pytest.fixture(scope="module")
def small_run():
    t = toy_task(P=12, N0=16, y_neg=0.5, P_test=3)
    idata = bnnzoo.sample("sigmoidal", t, num_chains=2, num_warmup=60, num_samples=40, seed=1, width=8,
                          record=("z",), progress=False, sampler="nuts")
    return t, idata


def test_groups_dims_and_coords(small_run):
    t, idata = small_run
    assert {"posterior", "sample_stats", "observed_data", "constant_data", "predictions",
            "predictions_constant_data"} <= set(azcompat.group_names(idata))
    post = azcompat.get_group(idata, "posterior")
    assert post["a"].dims == ("chain", "draw", "neuron", "class")
    assert post["W1"].dims == ("chain", "draw", "neuron", "input")
    assert post["f"].dims == ("chain", "draw", "point", "class")
    assert post["z1"].dims == ("chain", "draw", "neuron", "point")
    assert post.sizes["chain"] == 2 and post.sizes["draw"] == 40 and post.sizes["neuron"] == 8
    ss = azcompat.get_group(idata, "sample_stats")
    for v in ("diverging", "step_size", "tree_depth", "n_steps", "energy", "acceptance_rate", "lp"):
        assert ss[v].dims == ("chain", "draw"), v
    assert ss["diverging"].dtype == bool
    np.testing.assert_array_equal(azcompat.get_group(idata, "observed_data")["y"], t.Y)
    np.testing.assert_allclose(azcompat.get_group(idata, "constant_data")["X"], t.X)
    assert azcompat.get_group(idata, "predictions")["f"].dims == ("chain", "draw", "test_point", "class")
    assert "log_likelihood" not in azcompat.group_names(idata)


def test_predictions_are_the_network_on_test_inputs(small_run):
    """Recompute f on X_test from the stored weights (independent NumPy forward pass)."""
    t, idata = small_run
    post = azcompat.get_group(idata, "posterior")
    W, a = post["W1"].values, post["a"].values
    from scipy.special import erf

    z = np.einsum("cdni,pi->cdnp", W, t.X_test) / np.sqrt(t.N0)
    phi = 0.5 * (1 + erf(np.sqrt(np.pi) / 2 * z))
    f = np.einsum("cdnp,cdnk->cdpk", phi, a) / W.shape[2]
    np.testing.assert_allclose(azcompat.get_group(idata, "predictions")["f"].values, f, rtol=2e-4, atol=2e-5)


def test_provenance_attributes(small_run):
    _, idata = small_run
    cfg = bnnzoo.run_config(idata)
    assert cfg["model"] == "sigmoidal" and cfg["seed"] == 1
    assert cfg["model_kwargs"]["width"] == 8 and cfg["model_kwargs"]["sigma_a2"] == pytest.approx(1 / 12)
    assert cfg["task"]["y_neg"] == 0.5 and cfg["sampler"]["num_warmup"] == 60
    assert {"bnnzoo", "jax", "numpyro", "arviz", "python"} <= set(cfg["versions"])


def test_netcdf_round_trip_keeps_everything(small_run, tmp_path):
    _, idata = small_run
    path = azcompat.to_netcdf(idata, tmp_path / "run.nc")
    back = azcompat.from_netcdf(path)
    assert set(azcompat.group_names(back)) == set(azcompat.group_names(idata))
    for g in azcompat.group_names(idata):
        a, b = azcompat.get_group(idata, g), azcompat.get_group(back, g)
        assert set(a.data_vars) == set(b.data_vars), g
        for v in a.data_vars:
            np.testing.assert_array_equal(a[v].values, b[v].values)
            assert a[v].dims == b[v].dims
    assert bnnzoo.run_config(back) == bnnzoo.run_config(idata)
    assert azcompat.get_attrs(back)["model_activation"] == "sigmoid"


def test_plot_trace_with_coords(small_run, tmp_path):
    _, idata = small_run
    azcompat.plot_trace(idata, var_names=["a"], coords={"neuron": [0, 1]})
    plt.savefig(tmp_path / "trace.png")
    plt.close("all")
    assert (tmp_path / "trace.png").stat().st_size > 1000
    # the user's own call, as in the README, works on the installed ArviZ line
    import arviz as az

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if azcompat.AZ_MAJOR == 0:
            axes = az.plot_trace(idata, var_names=["a"], coords={"neuron": [0, 1]})
            assert axes.shape[1] == 2
        else:
            az.plot_trace(idata, var_names=["a"], coords={"neuron": [0, 1]})
            az.plot_trace_dist(idata, var_names=["a"], coords={"neuron": [0, 1]})
    plt.close("all")


def test_same_seed_same_draws():
    t = toy_task(P=5, N0=6)
    runs = [bnnzoo.sample("deep_linear", t, num_chains=1, num_warmup=100, num_samples=10, seed=7, width=3,
                          progress=False, sampler="nuts") for _ in range(2)]
    np.testing.assert_array_equal(*(azcompat.get_group(r, "posterior")["a"].values for r in runs))


def test_fixed_step_hmc_keeps_step_size_and_steps():
    t = toy_task(P=5, N0=6)
    idata = bnnzoo.sample("deep_linear", t, sampler="hmc", step_size=0.003, num_steps=7, num_chains=2,
                          num_warmup=20, num_samples=15, width=3, progress=False)
    ss = azcompat.get_group(idata, "sample_stats")
    np.testing.assert_allclose(ss["step_size"].values, 0.003, rtol=1e-6)
    assert (ss["n_steps"].values == 7).all()


def test_divergences_warn():
    t = toy_task(P=5, N0=6)
    with pytest.warns(RuntimeWarning, match="divergent"):
        bnnzoo.sample("sigmoidal", t, sampler="hmc", step_size=5.0, num_steps=20, num_chains=1, num_warmup=5,
                      num_samples=20, width=3, temperature=1e-4, progress=False)


@pytest.mark.parametrize("kw, match", [
    (dict(num_chains=0), "num_chains"), (dict(num_samples=0), "num_samples"), (dict(thinning=0), "thinning"),
    (dict(sampler="mala"), "sampler"), (dict(sampler="hmc"), "num_steps"), (dict(width=-1), "width"),
    (dict(temperature=-1.0), "temperature"), (dict(chain_method="gpu"), "chain_method"),
    (dict(chain_method="parallel"), r"chain_method must be one of \('auto', 'vectorized', 'sequential', 'sharded'\)"),
    (dict(num_samples=5, thinning=10), "thinning"), (dict(step_size=0.0), "step_size"),
    (dict(num_chains=True), "num_chains must be an integer"), (dict(num_warmup="10"), "num_warmup must be an integer"),
    (dict(num_samples=5.0), "num_samples must be an integer"), (dict(seed=False), "seed must be an integer"),
    (dict(seed="0"), "seed must be an integer"), (dict(thinning=True), "thinning must be an integer"),
    (dict(record=3), "record must be a site name"), (dict(record=["z1", 2]), "record must be a site name"),
    (dict(sampler="hmc", num_steps=True), "num_steps must be an integer"), (dict(step_size="0.1"), "step_size"),
    (dict(log_likelihood="yes"), "log_likelihood must be True or False"),
])
def test_bad_arguments_fail_before_compiling(kw, match):
    t = toy_task(P=5, N0=6)
    with pytest.raises(ValueError, match=match):
        bnnzoo.sample("relu", t, **dict(dict(num_warmup=1, num_samples=5, progress=False), **kw))


@pytest.mark.parametrize("kw, match", [
    (dict(num_chains=10**7), r"num_chains=10000000, 500 kept draws of \d+ recorded numbers and \d+ parameters"),
    (dict(width=10**7), r"num_chains=4, .* parameters \(width=10000000\)"),
    (dict(num_chains=10**7, sampler="nuts", record=("z",)), r"num_chains=10000000, "),
])
def test_absurd_sizes_are_refused_before_compiling(monkeypatch, kw, match):
    """Chains or widths whose states and kept draws alone cannot fit the machine's memory (here 16 GiB)
    are refused with one line naming them and the GiB needed, before anything is traced at their size or compiled;
    a normal size passes the same check."""
    monkeypatch.setattr(plan, "_physical_memory", lambda: 16 * 2**30)
    compiled = []
    monkeypatch.setattr(jax.stages.Lowered, "compile", lambda *a, **k: compiled.append(a))
    t = toy_task(P=6, N0=8)
    with pytest.raises(ValueError, match=match + r".* GiB, more than 80% of this machine's 16 GiB") as e:
        bnnzoo.sample("deep_linear", t, **dict(dict(progress=False), **kw))
    assert "\n" not in str(e.value) and not compiled
    fn = bnnzoo.get_entry("deep_linear").model
    plan.check_memory(fn, t, dict(width=1000, depth=1), num_chains=64, n_keep=1000)       # about 2.6 GiB


def test_removed_sampler_pt_names_the_valid_samplers():
    """Parallel tempering was removed (benchmarks/results/keep_drop.md): asking for it is one line naming every
    valid sampler, before anything compiles."""
    with pytest.raises(ValueError, match=r"sampler must be 'auto' or one of \(") as e:
        bnnzoo.sample("sigmoidal", toy_task(P=5, N0=6), sampler="pt", num_chains=2, progress=False)
    msg = str(e.value)
    assert "\n" not in msg and "'pt'" in msg and all(repr(s) in msg for s in bnnzoo.inference.SAMPLERS), msg


def test_record_takes_a_string_or_a_list():
    t = toy_task(P=5, N0=6)
    for record in ("z1", ["z1"], ("z1",)):
        idata = bnnzoo.sample("relu", t, record=record, sampler="hmc", num_steps=1, step_size=0.01, num_chains=1,
                              num_warmup=0, num_samples=2, width=3, progress=False)
        post = azcompat.get_group(idata, "posterior")
        assert post["z1"].dims == ("chain", "draw", "neuron", "point")
        assert bnnzoo.run_config(idata)["record"] == ["z1"]


def test_custom_numpyro_model_dims_from_plates():
    """Any NumPyro model of (X, Y) works; its plates name the dims."""
    def linreg(X, Y=None, *, noise=0.1):
        with numpyro.plate("feature", X.shape[1]):
            w = numpyro.sample("w", dist.Normal(0, 1))
        with numpyro.plate("point", X.shape[0]):
            numpyro.sample("obs", dist.Normal(X @ w, noise), obs=None if Y is None else Y[:, 0])

    t = toy_task(P=4, N0=5, ratios=(0.5, 0.5))
    idata = bnnzoo.sample(linreg, t, num_chains=1, num_warmup=50, num_samples=50, progress=False, noise=0.5)
    assert azcompat.get_group(idata, "posterior")["w"].dims == ("chain", "draw", "feature")
    with pytest.raises(ValueError, match="no argument"):
        bnnzoo.sample(linreg, t, num_warmup=1, num_samples=2, progress=False, width=3, sampler="nuts")


def test_cli_list_and_sample(tmp_path, capsys):
    from bnnzoo.cli import main

    assert main(["list"]) == 0
    assert "sigmoidal" in capsys.readouterr().out
    out = tmp_path / "r.nc"
    assert main(["sample", "relu", "--width", "4", "--P", "6", "--chains", "1", "--warmup", "10", "--samples", "5",
                 "--quiet", "--out", str(out)]) == 0
    back = azcompat.from_netcdf(out)
    assert bnnzoo.run_config(back)["model_kwargs"]["width"] == 4
    refused = tmp_path / "refused.nc"      # the refusals below name their flag (an existing --out is refused first)
    assert main(["sample", "relu", "--width", "0", "--out", str(refused)]) == 2
    assert "width must be" in capsys.readouterr().err
    # flags an entry does not take: a clear error naming the flag, not a TypeError traceback
    assert main(["sample", "three_layer_erf", "--y-neg", "0.5", "--out", str(refused)]) == 2
    assert "--y-neg does not apply to 'three_layer_erf'" in capsys.readouterr().err
    assert main(["sample", "gdln_xor", "--width", "8", "--out", str(refused)]) == 2
    assert "--width does not apply" in capsys.readouterr().err
    assert main(["diagnose", str(tmp_path / "missing.nc")]) == 2
    assert "there is no file" in capsys.readouterr().err
    assert main(["sample", "relu", "--coordinator", "localhost:1234", "--out", str(refused)]) == 2   # before any JAX
    assert "go together, with --distributed" in capsys.readouterr().err
    # the exact Gibbs sampler for linear nets, and its clear refusal elsewhere
    out_g = tmp_path / "gibbs.nc"                             # a new file: ArviZ 1.x keeps `out` open (lazy load)
    assert main(["sample", "deep_linear", "--sampler", "gibbs", "--width", "4", "--P", "6", "--chains", "2",
                 "--warmup", "10", "--samples", "5", "--quiet", "--out", str(out_g)]) == 0
    back = azcompat.from_netcdf(out_g)
    assert bnnzoo.run_config(back)["sampler"]["sampler"] == "gibbs"
    gp = azcompat.get_group(back, "posterior")        # the default record: the summaries and kernel means, not z, W1
    assert gp["zbar1"].shape == (2, 5, 4, 3) and gp["kc_norm1"].shape == (2, 5) and "z1" not in gp and "W1" not in gp
    assert azcompat.get_group(back, "posterior_thinned")["K1"].shape == (2, 5, 6, 6)      # 5 means of one draw
    assert main(["sample", "relu", "--sampler", "gibbs", "--out", str(refused)]) == 2
    assert "linear fully-connected nets only" in capsys.readouterr().err
    out_c = tmp_path / "chees.nc"
    assert main(["sample", "relu", "--sampler", "chees", "--width", "4", "--P", "6", "--chains", "2", "--warmup",
                 "20", "--samples", "5", "--quiet", "--out", str(out_c)]) == 0
    assert bnnzoo.run_config(azcompat.from_netcdf(out_c))["sampler"]["sampler"] == "chees"
    assert main(["sample", "relu", "--sampler", "chees", "--chains", "1", "--out", str(refused)]) == 2
    assert "num_chains >= 2" in capsys.readouterr().err
    assert not refused.exists()


def test_matmul_precision_is_set_while_tracing_and_recorded():
    """Models are traced under the requested float32 matmul precision ("highest" by default: GPUs otherwise round
    products to TensorFloat32 and sample a perturbed density, benchmarks/bench_precision.py); None leaves JAX's own
    setting; a bad value fails before compiling."""
    import jax

    seen = []

    def linreg(X, Y=None):
        seen.append(jax.config.jax_default_matmul_precision)
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        numpyro.sample("obs", dist.Normal(X @ w, 0.5).to_event(1), obs=None if Y is None else Y[:, 0])

    t = toy_task(P=4, N0=5, ratios=(0.5, 0.5))
    before = jax.config.jax_default_matmul_precision
    idata = bnnzoo.sample(linreg, t, num_chains=1, num_warmup=5, num_samples=5, progress=False, sampler="nuts")
    assert seen and set(seen) == {"highest"}
    assert bnnzoo.run_config(idata)["sampler"]["matmul_precision"] == "highest"
    assert jax.config.jax_default_matmul_precision == before          # restored afterwards
    seen.clear()
    bnnzoo.sample(linreg, t, num_chains=1, num_warmup=5, num_samples=5, progress=False, matmul_precision=None)
    assert set(seen) == {before}
    seen.clear()
    bnnzoo.sample(linreg, t, num_chains=1, num_warmup=5, num_samples=5, progress=False, matmul_precision="bfloat16")
    assert set(seen) == {"bfloat16"}
    seen.clear()
    with pytest.raises(ValueError, match="matmul_precision"):
        bnnzoo.sample(linreg, t, num_samples=2, progress=False, matmul_precision="tf32", sampler="nuts")
    assert seen == []                                                   # refused before tracing


def test_auto_sampler_rule():
    """sampler="auto" (the default) picks SNAPER for >= 2 chains and NUTS where SNAPER cannot run or NUTS settings
    are given; names pass through; num_steps with "auto" is refused."""
    from bnnzoo.inference.plan import choose_sampler
    from bnnzoo.models import get_entry

    e = get_entry("relu")
    assert choose_sampler("auto", e, num_chains=4) == "snaper"
    assert choose_sampler("auto", get_entry("softmax_attention"), num_chains=4) == "chees"
    assert choose_sampler("auto", get_entry("softmax_attention"), num_chains=1) == "nuts"
    from bnnzoo.models import list_entries
    for entry in list_entries():
        assert entry.auto_sampler in entry.samplers, entry.name
    assert choose_sampler("auto", None, num_chains=2) == "snaper"
    assert choose_sampler("auto", e, num_chains=1) == "nuts"
    assert choose_sampler("auto", e, num_chains=4, chain_method="sequential") == "nuts"
    assert choose_sampler("auto", e, num_chains=4, dense_mass=True) == "nuts"
    assert choose_sampler("auto", e, num_chains=4, max_tree_depth=7) == "nuts"
    for name in ("nuts", "hmc", "chees", "gibbs"):
        assert choose_sampler(name, e, num_chains=4) == name
    with pytest.raises(ValueError, match="num_steps applies to sampler=.hmc. or .smc. only, not .auto."):
        choose_sampler("auto", e, num_chains=4, num_steps=3)


def test_auto_sampler_recorded():
    """The default run records the sampler "auto" picked and that "auto" was asked for."""
    t = toy_task(P=6, N0=8, y_neg=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = bnnzoo.sample("sigmoidal", t, num_chains=2, num_warmup=10, num_samples=10, width=3, progress=False)
    cfg = bnnzoo.run_config(idata)
    assert cfg["sampler"]["sampler"] == "snaper" and cfg["sampler"]["sampler_requested"] == "auto"
    assert azcompat.get_group(idata, "posterior").attrs["sampler"] == "snaper"
