"""bnnzoo._record: a diagnostics record survives NetCDF and JSON."""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from bnnzoo._record import record_from_dataset
from bnnzoo.diagnostics import ergodicity
from bnnzoo.diagnostics.ergodicity import ErgodicityResult
from tests._helpers import rng


def test_record_round_trip_through_netcdf(tmp_path):
    r = ergodicity(rng().standard_normal((1, 50, 20, 3)), "a")
    ds = r.to_dataset()
    path = tmp_path / "r.nc"
    ds.to_netcdf(path, engine="h5netcdf")
    back = record_from_dataset(xr.open_dataset(path, engine="h5netcdf").load())
    assert isinstance(back, ErgodicityResult) and repr(back) == repr(r)
    np.testing.assert_allclose(back.ratio_per_neuron, r.ratio_per_neuron)
    d = r.to_dict()
    assert d["verdict"] == r.verdict and "ratio_per_neuron" not in d
    json.dumps(r.to_dict(arrays=True), allow_nan=False)
