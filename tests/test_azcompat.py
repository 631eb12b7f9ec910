"""The ArviZ adapter on whichever line is installed (0.x InferenceData or 1.x DataTree)."""

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from bnnzoo import azcompat  # noqa: E402


def _toy_idata():
    rng = np.random.default_rng(0)
    post = xr.Dataset({"a": (("chain", "draw", "neuron"), rng.standard_normal((2, 50, 3)))},
                      coords={"chain": [0, 1], "draw": np.arange(50), "neuron": [0, 1, 2]})
    return azcompat.make_idata({"posterior": post}, {"model": "toy", "seed": 3})


def test_make_get_set_groups_and_attrs(tmp_path):
    idata = _toy_idata()
    assert azcompat.is_idata(idata)
    assert azcompat.group_names(idata) == ["posterior"]
    assert azcompat.get_attrs(idata)["model"] == "toy"
    extra = xr.Dataset({"ratio": (("layer",), np.array([0.1, 0.9]))}, attrs={"verdict": "broken"})
    azcompat.set_groups(idata, {"diagnostics": extra})
    azcompat.set_groups(idata, {"diagnostics": extra.assign(ratio=extra.ratio * 2)})  # replace
    assert sorted(azcompat.group_names(idata)) == ["diagnostics", "posterior"]
    back = azcompat.from_netcdf(azcompat.to_netcdf(idata, tmp_path / "x.nc"))
    np.testing.assert_allclose(azcompat.get_group(back, "diagnostics")["ratio"], [0.2, 1.8])
    assert azcompat.get_group(back, "diagnostics").attrs["verdict"] == "broken"
    assert azcompat.get_attrs(back)["seed"] == 3


def test_netcdf_bytes_read_back_as_the_file(tmp_path):
    """The run serialised in memory (what the CLI writes with plain file I/O) reads back as the file to_netcdf
    writes: same groups, values and attributes."""
    idata = _toy_idata()
    azcompat.set_groups(idata, {"diagnostics": xr.Dataset({"r": (("layer",), np.array([0.5]))},
                                                          attrs={"verdict": "ergodic"})})
    (tmp_path / "b.nc").write_bytes(azcompat.to_netcdf_bytes(idata))
    back = azcompat.from_netcdf(tmp_path / "b.nc")
    ref = azcompat.from_netcdf(azcompat.to_netcdf(idata, tmp_path / "f.nc"))
    assert sorted(azcompat.group_names(back)) == sorted(azcompat.group_names(ref)) == ["diagnostics", "posterior"]
    for g in ("posterior", "diagnostics"):
        xr.testing.assert_identical(azcompat.get_group(back, g), azcompat.get_group(ref, g))
    assert azcompat.get_attrs(back)["model"] == "toy" and azcompat.get_attrs(back) == azcompat.get_attrs(ref)


def test_ess_rhat_and_plot(tmp_path):
    idata = _toy_idata()
    ess = azcompat.ess(idata, var_names=["a"])
    assert ess["a"].shape == (3,) and np.all(ess["a"].values > 20)
    rh = azcompat.rhat(idata, var_names=["a"])
    assert np.all(np.abs(rh["a"].values - 1) < 0.1)
    res = azcompat.plot_trace(idata, var_names=["a"], coords={"neuron": [0, 1]})
    azcompat.save_plot(res, tmp_path / "t.png")
    assert (tmp_path / "t.png").stat().st_size > 1000


def test_rhat_where_every_split_chain_is_constant():
    """Zero within-chain variance: R̂ = +inf where the split chains are constant and different (ArviZ alone gives
    about 1e16 or inf by chance of rounding), NaN where they all hold one value (0/0); an entry where two of the
    four chains move keeps ArviZ's own value (finite), in any order of the dims, and a run or a Dataset alike."""
    rng = np.random.default_rng(0)
    C, D = 4, 201
    x = np.empty((C, D, 6))
    x[..., 0] = np.array([3.0, 3.0, 4.0, 4.0])[:, None]               # constant, two values
    x[..., 1] = np.array([0.1, 0.2, 0.3, 0.7])[:, None]               # constant, four values
    x[..., 2] = 5.0                                                   # one value everywhere
    x[..., 3] = np.array([1.0, 1.0, 2.0, 2.0])[:, None]
    x[:2, :, 3] = rng.standard_normal((2, D))                         # two chains move
    x[..., 4] = rng.standard_normal((C, D))
    x[..., 5] = 1.0
    x[0, D // 2 + 1:, 5] = 2.0                                        # a step between the halves of chain 0
    x[:, D // 2, 5] = 9.0                                             # the middle draw, which the split leaves out
    ds = xr.Dataset({"x": (("chain", "draw", "e"), x)})
    r = azcompat.rhat(ds)["x"].values
    assert r[0] == np.inf and r[1] == np.inf and np.isnan(r[2]) and r[5] == np.inf, r
    arviz_own = azcompat._stat("rhat", ds, None)["x"].values
    assert np.isfinite(r[3]) and r[3] > 1.1 and r[3] == arviz_own[3], (r, arviz_own)
    assert abs(r[4] - 1) < 0.05 and r[4] == arviz_own[4], (r, arviz_own)
    turned = xr.Dataset({"x": (("e", "draw", "chain"), x.transpose(2, 1, 0))})
    np.testing.assert_array_equal(azcompat.rhat(turned)["x"].values, r)
    run = azcompat.make_idata({"posterior": ds}, {})
    np.testing.assert_array_equal(azcompat.rhat(run, var_names=["x"])["x"].values, r)


def test_large_variables_read_in_parallel_as_xarray_reads_them(tmp_path):
    """The variables from_netcdf inflates on every core (chunked, shuffle + deflate, no decoding) come back with the
    values, dtype, attributes and encoding xarray's own reader gives; those it leaves to xarray (an encoded bool, a
    small variable) are read by xarray."""
    rng = np.random.default_rng(0)
    shape = (2, 50, 130, 100)                           # 1.3 M values: above PARALLEL_READ_BYTES as float32
    big = rng.standard_normal(shape).astype(np.float32)
    big[0, 0, 0, :3] = np.nan                           # NaNs stay NaN (the _FillValue is NaN)
    post = xr.Dataset({"a": (("chain", "draw", "neuron", "point"), big),
                       "z": (("chain", "draw", "neuron", "point"), rng.standard_normal(shape)),
                       "k": (("chain", "draw", "neuron", "point"), rng.integers(-9, 9, shape)),
                       "on": (("chain", "draw", "neuron", "point"), rng.random(shape) > 0.5),
                       "small": (("chain", "draw"), rng.standard_normal((2, 50)))},
                      attrs={"note": "x"})
    path = azcompat.to_netcdf(azcompat.make_idata({"posterior": post}), tmp_path / "big.nc")
    if azcompat.AZ_MAJOR == 0:
        lazy = azcompat.az.from_netcdf(path, engine="h5netcdf")
        azcompat._read_chunks_in_parallel(path, {"posterior": lazy.posterior})
        kinds = {k: isinstance(lazy.posterior.variables[k]._data, np.ndarray) for k in lazy.posterior.data_vars}
        assert kinds == {"a": True, "z": True, "k": True, "on": False, "small": False}
        plain = azcompat.az.from_netcdf(path, engine="h5netcdf").load()
    else:
        plain = xr.open_datatree(path, engine="h5netcdf").load()
    back, ref = azcompat.get_group(azcompat.from_netcdf(path), "posterior"), azcompat.get_group(plain, "posterior")
    assert back.attrs == ref.attrs
    for k, v in ref.variables.items():
        got = back.variables[k]
        assert got.dtype == v.dtype and got.dims == v.dims and got.attrs == v.attrs
        assert got.encoding.keys() == v.encoding.keys()
        np.testing.assert_array_equal(got.values, v.values)
    np.testing.assert_array_equal(back["a"].values, big)
    np.testing.assert_array_equal(back["on"].values, post["on"].values)
