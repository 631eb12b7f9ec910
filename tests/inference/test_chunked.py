"""The chunked driver (bnnzoo.inference.chunked) behind bnnzoo.sample: the same draws as the plain path, however the
run is cut; large sites left out or thinned; a warm start; wrong arguments fail early."""

import numpy as np
import pytest

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.inference import chunked
from bnnzoo.inference.chunked import plan_blocks
from bnnzoo.tasks import toy_task

KW = dict(num_chains=2, num_warmup=40, num_samples=30, seed=4, width=3, record=("z",), progress=False)


@pytest.fixture(scope="module")
def runs():
    t = toy_task(P=5, N0=9, y_neg=0.5, P_test=3)
    plain = bnnzoo.sample("sigmoidal", t, **KW)
    chunked = bnnzoo.sample("sigmoidal", t, chunk_size=10, exclude=("W1",), site_thinning={"z1": 5}, **KW)
    return t, plain, chunked


def test_chunked_equals_plain_run(runs):
    _, plain, chunked = runs
    pp, pc = azcompat.get_group(plain, "posterior"), azcompat.get_group(chunked, "posterior")
    assert "W1" in pp and "W1" not in pc and "z1" not in pc            # excluded / moved to posterior_thinned
    for v in ("a", "f", "mse", "q_a"):
        np.testing.assert_allclose(pc[v].values, pp[v].values, rtol=1e-5, atol=1e-6, err_msg=v)
    sp, sc = azcompat.get_group(plain, "sample_stats"), azcompat.get_group(chunked, "sample_stats")
    for v in sp.data_vars:
        np.testing.assert_allclose(sc[v].values, sp[v].values, rtol=1e-5, atol=1e-6, err_msg=v)
    np.testing.assert_allclose(azcompat.get_group(chunked, "predictions")["f"].values,
                               azcompat.get_group(plain, "predictions")["f"].values, rtol=1e-5, atol=1e-6)


def test_one_chain_of_fixed_length_hmc_runs_chunked_with_the_same_draws():
    """One chain of sampler="hmc" through the chunked driver (NumPyro's unbatched kernel returns its step count as a
    Python int, which once failed there) gives the plain run's draws."""
    t = bnnzoo.toy_task(P=6, N0=8)
    kw = dict(width=3, num_warmup=10, num_samples=10, progress=False, sampler="hmc", num_steps=5, num_chains=1)
    plain = bnnzoo.sample("deep_linear", t, **kw)
    chunked = bnnzoo.sample("deep_linear", t, chunk_size=5, **kw)
    np.testing.assert_array_equal(azcompat.get_group(chunked, "posterior")["a"].values,
                                  azcompat.get_group(plain, "posterior")["a"].values)
    assert (azcompat.get_group(chunked, "sample_stats")["n_steps"].values == 5).all()


def test_site_thinning_keeps_every_kth_draw(runs):
    _, plain, chunked = runs
    th = azcompat.get_group(chunked, "posterior_thinned")["z1"]
    assert th.dims == ("chain", "draw_z1", "neuron", "point")
    np.testing.assert_array_equal(th["draw_z1"].values, np.arange(4, 30, 5))
    np.testing.assert_allclose(th.values, azcompat.get_group(plain, "posterior")["z1"].values[:, 4::5], rtol=1e-5,
                               atol=1e-6)


def test_warmup_trace_recorded(runs):
    _, _, chunked = runs
    ws = azcompat.get_group(chunked, "warmup_sample_stats")
    assert ws.sizes["draw"] == 40 and np.all(np.diff(ws["time"].values) >= 0)
    assert azcompat.get_group(chunked, "warmup_posterior")["mse"].shape == (2, 40)


def test_plan_blocks_keeps_numpyro_draws():
    blocks = plan_blocks(num_warmup=25, num_samples=23, thinning=2, chunk_size=5)
    assert [b.kind for b in blocks] == ["warmup"] * 3 + ["draws"] * 3
    assert sum(b.steps for b in blocks) == 48 and [b.n_keep for b in blocks[3:]] == [5, 5, 1]
    assert blocks[3].pre == 1 and blocks[3].draw0 == 0 and blocks[5].draw0 == 10


@pytest.mark.parametrize("kw, match", [
    (dict(chunk_size=0), "chunk_size"), (dict(resume=True), "store"), (dict(reparam=("gibbs",)), "reparam"),
    (dict(chunk_size=10, site_thinning={"z1": 3}), "divide"), (dict(exclude=("nope",)), "unknown site"),
    (dict(chain_method="sequential", chunk_size=5), "sequential"),
])
def test_bad_long_run_arguments(kw, match):
    t = toy_task(P=5, N0=6)
    with pytest.raises(ValueError, match=match):
        bnnzoo.sample("relu", t, **dict(dict(num_warmup=2, num_samples=10, width=3, progress=False,
                                             record=("z",)), **kw))


def test_a_store_is_not_overwritten_or_resumed_by_another_run(tmp_path):
    """A store that holds a run is refused without resume, and a resume with other settings (here the seed) is
    refused as another run's; neither touches the stored draws."""
    t = toy_task(P=5, N0=6)
    kw = dict(num_warmup=10, num_samples=10, width=3, chunk_size=5, progress=False, store=tmp_path / "s")
    first = bnnzoo.sample("relu", t, seed=1, **kw)
    with pytest.raises(ValueError, match="already holds a run; pass resume=True"):
        bnnzoo.sample("relu", t, seed=1, **kw)
    with pytest.raises(ValueError, match="the store holds a run with seed=1, this call has seed=2"):
        bnnzoo.sample("relu", t, seed=2, resume=True, **kw)
    again = bnnzoo.sample("relu", t, seed=1, resume=True, **kw)
    a = azcompat.get_group(first, "posterior")["a"].values
    np.testing.assert_array_equal(azcompat.get_group(again, "posterior")["a"].values, a)


def test_reparam_only_for_fcn_entries():
    import numpyro
    import numpyro.distributions as dist

    def model(X, Y=None):
        numpyro.sample("w", dist.Normal(0, 1))

    with pytest.raises(ValueError, match="fully-connected"):
        bnnzoo.sample(model, toy_task(P=4, N0=5), num_samples=2, num_warmup=1, reparam=("readout",),
                      progress=False, sampler="nuts")
    # None means no reparametrisation, as () does
    idata = bnnzoo.sample(model, toy_task(P=4, N0=5), num_samples=2, num_warmup=1, reparam=None, num_chains=1,
                          progress=False, sampler="nuts")
    assert azcompat.get_group(idata, "posterior")["w"].shape == (1, 2)


def test_readout_alone_is_refused():
    """reparam=("readout",) alone was dropped (benchmarks/results/keep_drop.md): one line naming the valid choices,
    before anything compiles; the pair and "data_space" alone pass the check."""
    t = toy_task(P=4, N0=5)
    for reparam in (("readout",), "readout"):
        with pytest.raises(ValueError, match=r"'readout' only goes with 'data_space'; valid: \(\), "
                                             r"\('data_space',\), \('readout', 'data_space'\)") as e:
            bnnzoo.sample("deep_linear", t, width=3, num_chains=1, num_samples=2, num_warmup=1, reparam=reparam,
                          progress=False, sampler="nuts")
        assert "\n" not in str(e.value)
    for reparam in (("data_space",), ("readout", "data_space")):
        bnnzoo.inference.plan.make_spec(
            "deep_linear", t, model_kwargs=dict(width=3), num_chains=1, num_warmup=1, num_samples=2, sampler="nuts",
            seed=0, thinning=1, record=None, progress=False, chain_method="auto", step_size=None, num_steps=None,
            target_accept=None, max_tree_depth=10, dense_mass=False, init="prior", log_likelihood=False,
            posterior_predictive=False, prior_predictive=False, dims=None, chunk_size=None, store=None, resume=False,
            exclude=(), site_thinning=None, reparam=reparam, matmul_precision="highest", tempering=None)


def test_kernel_means_are_the_means_of_the_per_draw_kernels():
    """The default recording streams the kernels as block means summed in the loop (``site_means``); across chunk
    boundaries they equal the means of the same run's per-draw kernels, which record=("summaries", "kernels")
    keeps."""
    t = toy_task(P=5, N0=9, y_neg=0.5)
    kw = dict(KW, record=None, chunk_size=15)
    per_draw = bnnzoo.sample("sigmoidal", t, **dict(kw, record=("summaries", "kernels")))
    streamed = bnnzoo.sample("sigmoidal", t, **kw)
    K = azcompat.get_group(per_draw, "posterior")["K1"].values                 # (chain, draw, point, point_b)
    th = azcompat.get_group(streamed, "posterior_thinned")["K1"]
    assert th.attrs["bnnzoo_mean_of_draws"] == 3 and "K1" not in azcompat.get_group(streamed, "posterior")
    np.testing.assert_array_equal(th["draw_K1"].values, np.arange(2, 30, 3))
    np.testing.assert_allclose(th.values, K.reshape(2, 10, 3, 5, 5).mean(2), rtol=1e-5, atol=1e-6)
    cfg = bnnzoo.run_config(streamed)
    assert cfg["engine"]["site_means"] == {"K1": 3, "Kz1": 3} and cfg["model_kwargs"]["record"] == ["summaries",
                                                                                                    "kernels"]


def test_an_explicit_site_thinning_of_a_kernel_wins_over_its_mean():
    t = toy_task(P=5, N0=9)
    run = bnnzoo.sample("sigmoidal", t, **dict(KW, record=None, chunk_size=15, site_thinning={"K1": 5}))
    th = azcompat.get_group(run, "posterior_thinned")
    assert "bnnzoo_mean_of_draws" not in th["K1"].attrs and th.sizes["draw_K1"] == 6
    assert th["Kz1"].attrs["bnnzoo_mean_of_draws"] == 3


def test_progress_runs_blocks_in_pieces_with_the_same_draws(monkeypatch):
    """With progress, each block runs as several calls of the same program (here a piece per step or per kept-draw
    unit): the draws, stats, thinned and averaged sites, warm-up trace and predictions are bit for bit those of the
    run without progress (same seed), with thinning, a first block with unrecorded steps and a short last block."""
    pieces = []
    real = chunked._next_piece
    monkeypatch.setattr(chunked, "PIECE_SECONDS", 0.0)
    monkeypatch.setattr(chunked, "_next_piece", lambda *a: pieces.append(real(*a)) or pieces[-1])
    t = toy_task(P=5, N0=9, y_neg=0.5, P_test=3)
    kw = dict(KW, num_warmup=20, num_samples=63, thinning=2, chunk_size=12, record=("summaries", "z1"),
              site_thinning={"z1": 3})
    quiet = bnnzoo.sample("sigmoidal", t, **kw)
    assert not pieces
    shown = bnnzoo.sample("sigmoidal", t, **dict(kw, progress=True))
    assert len(pieces) == 20 + 4 + 4 + 2 and {p.n_keep for p in pieces if p.kind == "draws"} == {3, 4}, pieces
    assert bnnzoo.run_config(shown)["engine"]["site_means"], "the kernels are averaged in the loop"
    for group in ("posterior", "sample_stats", "posterior_thinned", "warmup_posterior", "warmup_sample_stats",
                  "predictions"):
        a, b = azcompat.get_group(quiet, group), azcompat.get_group(shown, group)
        assert set(a.data_vars) == set(b.data_vars), group
        for v in a.data_vars:
            if v != "time":
                np.testing.assert_array_equal(b[v].values, a[v].values, err_msg=f"{group}/{v}")
