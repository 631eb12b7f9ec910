"""``bnnzoo predict``, the ``bnnzoo sample`` flags for the optional ArviZ groups, and :func:`bnnzoo.predict` checking
its inputs before anything compiles (issue 49, item 7).

One tiny run of the linear net by the exact Gibbs sampler (NumPy, nothing compiled for the draws) is sampled once for
the module through the command line, with every optional group; the predictions are computed once per test that
needs them."""

from __future__ import annotations

import fcntl
import math

import numpy as np
import pytest

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.cli import build_parser, main, out_lock_path
from bnnzoo.models import likelihood_variance

N0 = 10
SAMPLE = ["sample", "deep_linear", "--width", "3", "--P", "4", "--N0", str(N0), "--P-test", "4", "--chains", "2",
          "--warmup", "0", "--samples", "3", "--sampler", "gibbs", "--exclude", "", "--quiet"]
GROUPS = ("log_likelihood", "posterior_predictive", "prior", "prior_predictive")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The run file: `bnnzoo sample` with --log-likelihood, --posterior-predictive and --prior-predictive."""
    path = tmp_path_factory.mktemp("predict") / "run.nc"
    assert main(SAMPLE + ["--log-likelihood", "--posterior-predictive", "--prior-predictive", "--out", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def idata(run):
    return azcompat.from_netcdf(run)


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("bnnzoo: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def _npy(path, X) -> str:
    np.save(path, X)
    return str(path)


def test_sample_flags_add_the_groups(idata):
    """Each flag adds its group with named dims; the log-likelihood is the Gaussian likelihood's density of the
    training targets around each draw's f (variance T/N from the run's provenance), the posterior predictive y
    scatters around f; left out, the flags ask for nothing."""
    names = azcompat.group_names(idata)
    assert set(GROUPS) <= set(names), names
    post = azcompat.get_group(idata, "posterior")
    Y = azcompat.get_group(idata, "observed_data")["y"].values
    for g in ("log_likelihood", "posterior_predictive", "prior_predictive"):
        y = azcompat.get_group(idata, g)["y"]
        assert y.dims == ("chain", "draw", "point", "class") and y.shape == (2, 3) + Y.shape, g
    assert {"W1", "a", "f"} <= set(azcompat.get_group(idata, "prior").data_vars)
    cfg = bnnzoo.run_config(idata)["model_kwargs"]
    v = likelihood_variance(cfg["readout"], cfg["width"], cfg["temperature"])
    f = post["f"].values
    expect = -0.5 * (Y - f) ** 2 / v - 0.5 * math.log(2 * math.pi * v)
    np.testing.assert_allclose(azcompat.get_group(idata, "log_likelihood")["y"].values, expect, rtol=1e-5)
    assert not np.allclose(azcompat.get_group(idata, "posterior_predictive")["y"].values, f)
    args = build_parser().parse_args(SAMPLE + ["--out", "r.nc"])
    assert not (args.log_likelihood or args.posterior_predictive or args.prior_predictive)


def test_predict_writes_what_bnnzoo_predict_returns(run, tmp_path, capsys):
    """`bnnzoo predict` writes the run with the predictions on the new inputs: the same numbers as bnnzoo.predict
    (here given the run's path) with the same seed, named dims, no temporary file or lock left."""
    X = np.random.default_rng(0).normal(size=(5, N0))
    out = tmp_path / "pred.nc"
    assert main(["predict", str(run), "--x", _npy(tmp_path / "x.npy", X), "--out", str(out), "--seed", "3"]) == 0
    assert f"wrote {out}" in capsys.readouterr().err
    got = azcompat.from_netcdf(out)
    want = bnnzoo.predict(run, X, seed=3)
    pred, ref = azcompat.get_group(got, "predictions"), azcompat.get_group(want, "predictions")
    for k in ("f", "y"):
        assert pred[k].dims == ("chain", "draw", "test_point", "class") and pred[k].shape == (2, 3, 5, 3)
        np.testing.assert_array_equal(pred[k].values, ref[k].values)
    np.testing.assert_array_equal(azcompat.get_group(got, "predictions_constant_data")["X_test"].values, X)
    np.testing.assert_array_equal(azcompat.get_group(got, "posterior")["a"].values,
                                  azcompat.get_group(azcompat.from_netcdf(run), "posterior")["a"].values)
    assert bnnzoo.run_config(got) == bnnzoo.run_config(want)
    assert not list(tmp_path.glob(".pred.nc*")) and not out_lock_path(out).exists()


def test_predict_refuses_an_existing_or_held_out(run, tmp_path, capsys):
    """An existing --out is refused without --overwrite; while another run holds --out (its lock, as a `bnnzoo
    sample` or `bnnzoo predict` writing it holds it) a second write is refused at once, even with --overwrite; once
    free, --overwrite replaces the file."""
    x = _npy(tmp_path / "x.npy", np.ones((2, N0)))
    out = tmp_path / "pred.nc"
    out.write_bytes(b"earlier predictions")
    argv = ["predict", str(run), "--x", x, "--out", str(out)]
    assert main(argv) == 2
    assert "exists; pass --overwrite to replace it" in _one_line_error(capsys)
    lock = out_lock_path(out)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as fh:                         # what a run writing --out holds
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert main(argv + ["--overwrite"]) == 2
        assert "is being written by another bnnzoo run" in _one_line_error(capsys)
    assert out.read_bytes() == b"earlier predictions"
    lock.unlink()
    assert main(argv + ["--overwrite"]) == 0
    assert azcompat.get_group(azcompat.from_netcdf(out), "predictions")["f"].shape == (2, 3, 2, 3)
    assert not lock.exists() and not list(tmp_path.glob(".pred.nc*"))


def _without_W1(idata, path):
    post = azcompat.get_group(idata, "posterior").drop_vars("W1")
    azcompat.to_netcdf(azcompat.set_groups(azcompat.shallow_copy(idata), {"posterior": post}), path)
    return str(path)


@pytest.mark.parametrize("case, words", [
    ("no_run", ["run file: there is no file"]),
    ("run_not_netcdf", ["run file", "not a readable NetCDF run"]),
    ("run_without_W1", ["run file", "missing ['W1']", "--exclude ''"]),
    ("no_x", ["--x: there is no file", "numpy.save"]),
    ("x_not_npy", ["--x:", "is not a .npy file"]),
    ("x_npz", ["--x:", ".npz archive"]),
    ("columns", ["--x", "X_new has 7 columns; the run's model takes 10"]),
    ("no_rows", ["--x", "X_new has no rows"]),
    ("nan", ["--x", "X_new must be finite: X_new[1, 2] is nan"]),
    ("inf", ["--x", "X_new must be finite: X_new[0, 0] is -inf"]),
    ("overflow", ["--x", "beyond its largest number"]),
    ("one_d", ["--x", "2-d", "got shape (10,)"]),
    ("out_is_run", ["--out:", "is the run file RUN itself"]),
    ("seed", ["--seed must be >= 0"]),
])
def test_predict_cli_errors_are_one_line(run, idata, tmp_path, capsys, case, words):
    """Each bad input: exit status 2, one line naming the argument, nothing written."""
    good = np.ones((2, N0))
    bad_x = {"columns": np.ones((2, 7)), "no_rows": np.ones((0, N0)), "one_d": np.ones(N0),
             "nan": np.where(np.arange(2 * N0).reshape(2, N0) == 12, np.nan, 1.0),
             "inf": np.full((2, N0), -np.inf), "overflow": np.full((2, N0), 1e300)}
    x = _npy(tmp_path / "x.npy", bad_x.get(case, good))
    out = tmp_path / "pred.nc"
    r = str(run)
    extra = []
    if case == "no_run":
        r = str(tmp_path / "nosuch.nc")
    elif case == "run_not_netcdf":
        r = x
    elif case == "run_without_W1":
        r = _without_W1(idata, tmp_path / "thin.nc")
    elif case == "no_x":
        x = str(tmp_path / "nosuch.npy")
    elif case == "x_not_npy":
        x = r
    elif case == "x_npz":
        np.savez(tmp_path / "x.npz", a=good)
        x = str(tmp_path / "x.npz")
    elif case == "out_is_run":
        out, extra = run, ["--overwrite"]
    elif case == "seed":
        extra = ["--seed", "-1"]
    before = run.read_bytes() if case == "out_is_run" else None
    assert main(["predict", r, "--x", x, "--out", str(out), *extra]) == 2
    err = _one_line_error(capsys)
    for w in words:
        assert w in err, (w, err)
    if case == "out_is_run":
        assert run.read_bytes() == before
    else:
        assert not out.exists()


@pytest.fixture()
def nothing_compiles(monkeypatch):
    """bnnzoo.predict computes through numpyro.infer.Predictive (imported when called): make reaching it fail."""
    import numpyro.infer

    def refuse(*a, **k):
        raise AssertionError("predict went on to compute")

    monkeypatch.setattr(numpyro.infer, "Predictive", refuse)


@pytest.mark.parametrize("X, kw, pattern", [
    (np.ones((2, 7)), {}, r"^X_new has 7 columns; the run's model takes 10 .*give shape \(n, 10\)$"),
    (np.ones((0, N0)), {}, r"^X_new has no rows: give at least one test point, shape \(n >= 1, 10\)$"),
    (np.full((2, N0), np.nan), {}, r"^X_new must be finite: X_new\[0, 0\] is nan$"),
    (np.full((2, N0), np.inf), {}, r"^X_new must be finite: X_new\[0, 0\] is inf$"),
    (np.full((2, N0), 1e300), {}, r"^X_new must be finite in float32.*1e\+300 is beyond its largest number 3.4e\+38$"),
    (np.ones((2, N0), complex), {}, r"^X_new must hold real numbers"),
    (np.ones((2, N0)), {"bogus": 1}, r"^predict got unknown keyword\(s\) 'bogus'; besides seed= and model= it takes "
                                     r"the model arguments of fcn: width, depth, activation"),
    (np.ones((2, N0)), {"sed": 1}, r"unknown keyword\(s\) 'sed'"),
    (np.ones((2, N0)), {"X_test": np.ones((2, N0))}, r"unknown keyword\(s\) 'X_test'"),
])
def test_predict_checks_its_inputs_first(idata, nothing_compiles, X, kw, pattern):
    with pytest.raises(ValueError, match=pattern) as e:
        bnnzoo.predict(idata, X, **kw)
    assert "\n" not in str(e.value)


def test_predict_checks_the_run_it_is_given(idata, tmp_path, nothing_compiles):
    """A path that does not exist, a folder, a file that is not NetCDF, a NetCDF file not written by bnnzoo.sample,
    and an object that is not a run: one-line ValueErrors naming idata."""
    X = np.ones((2, N0))
    np.save(tmp_path / "x.npy", X)
    post = azcompat.get_group(idata, "posterior")[["a"]].copy()
    post.attrs = {}                                    # an ArviZ run of someone else's: no bnnzoo provenance
    other_path = tmp_path / "other.nc"
    azcompat.to_netcdf(azcompat.make_idata({"posterior": post}), other_path)
    cases = [(tmp_path / "nosuch.nc", r"^idata: there is no file .*nosuch\.nc"),
             (tmp_path, r"^idata: .* is a folder"),
             (str(tmp_path / "x.npy"), r"^idata: .*x\.npy is not a readable NetCDF run"),
             (other_path, r"^idata was not made by bnnzoo\.sample"),
             (None, r"^idata must be a run of bnnzoo\.sample .* got NoneType$")]
    for given, pattern in cases:
        with pytest.raises(ValueError, match=pattern) as e:
            bnnzoo.predict(given, X)
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="^model must be the run's NumPyro model function"):
        bnnzoo.predict(idata, X, model=3)
