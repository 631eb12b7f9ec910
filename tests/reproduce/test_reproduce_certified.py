"""``python -m reproduce certified``: the certified re-runs of the population rows (the sampling itself runs in
tests/inference/test_certify.py; here the experiment's command line and what its summary adds for the result page)."""

import json

import numpy as np
import pytest
import xarray as xr

from bnnzoo import azcompat, get_entry
from bnnzoo.inference.plan import units_serve
from bnnzoo.inference.units import check_units
from tests.reproduce.reproduce_scripts import load_script, run_script


@pytest.mark.parametrize("args, match", [
    (["--rows", "nope"], "--rows must name rows among"),
    (["--chains", "1"], "--chains must be >= 2"),
    (["--width", "1"], "--width must be an integer >= 2"),
    (["--rows", "sig_bin", "--y-neg", "0.5"], "--y-neg must not be given with the binary-task rows"),
    (["--rows", "sig1", "--from-runs", "prior=a.nc"], "--from-runs needs two or more families"),
    (["--rows", "sig1", "--from-runs", "prior=a.nc,meanfield=b.nc", "--chains", "4"],
     "--from-runs reads stored runs and ignores --chains"),
    (["--rows", "sig1,ym01", "--from-runs", "prior=a.nc,meanfield=b.nc"], "--from-runs reads the runs of one row"),
    (["--rows", "sig1", "--from-runs", "prior=nowhere.nc,meanfield=b.nc"], "--from-runs: the 'prior' run nowhere.nc"),
])
def test_bad_arguments_are_one_line_errors(tmp_path, args, match):
    size = [] if "--from-runs" in args else ["--size", "ci"]
    r = run_script("certified", *size, "--out", str(tmp_path), *args, timeout=300)
    assert r.returncode == 2 and match in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith("python -m reproduce certified: error: ")
    assert not list(tmp_path.iterdir())


def test_from_runs_judges_families_sampled_apart_as_certify_does(tmp_path):
    """The prior and mean-field families of a small sigmoidal net, sampled apart with the seeds and starts certify
    gives them and stored as NetCDF files: ``--from-runs`` writes the row that ``sample(..., certify=["prior",
    "meanfield"])`` gives in one call (health, families, every observable), with the runs' settings; runs of
    another row's task are refused, naming what differs."""
    import bnnzoo
    from bnnzoo.workflows.certify import meanfield_start

    mod, entry, N = load_script("certified"), get_entry("sigmoidal"), 8
    task = entry.make_task(**dict(entry.task_defaults, P=N, N0=N + 20, y_neg=0.5))
    kw = dict(width=N, temperature=0.01, num_chains=2, num_warmup=6, num_samples=10, sampler="units",
              record=("z",), progress=False)
    start, _ = meanfield_start(entry, task, dict(width=N, temperature=0.01), 2, 2)
    paths = {}
    for fam, seed, init in (("prior", 0, "prior"), ("meanfield", 2, start)):
        paths[fam] = tmp_path / f"{fam}.nc"
        azcompat.to_netcdf(bnnzoo.sample(entry, task, seed=seed, init=init, **kw), paths[fam])
    ref = mod.analyse(bnnzoo.sample(entry, task, seed=0, certify=["prior", "meanfield"], **kw), "sig1", task, N)
    pairs = f"prior={paths['prior']},meanfield={paths['meanfield']}"
    assert mod.run(["--rows", "sig1", "--from-runs", pairs, "--out", str(tmp_path / "out"), "--name", "x"]) == 0
    d = json.loads((tmp_path / "out" / "x.json").read_text())
    row, res = d["rows"]["sig1"], d["rows"]["sig1"]["result"]
    assert row["settings"] == dict(N=N, warmup=6, samples=10, thin=1) and row["row"]["y_neg"] == 0.5
    assert (d["chains"], d["sampler"], d["populations_certified"], d["size"]) == (2, "units", True, "runs")
    assert d["from_runs"] == {f: str(p) for f, p in paths.items()}
    assert res["health"]["status"] == ref["health"]["status"] and res["health"]["rhat"] == pytest.approx(
        ref["health"]["rhat"])
    assert res["certification"]["families"] == ["prior", "meanfield"] == ref["certification"]["families"]
    assert res["certification"]["observables"] == json.loads(json.dumps(ref["certification"]["observables"]))
    assert res["meanfield_codes"] == pytest.approx(ref["meanfield_codes"])
    with pytest.raises(ValueError, match=r"--from-runs: the 'prior' run .* differs from row ym01 .* in task"):
        mod.run(["--rows", "ym01", "--from-runs", pairs, "--out", str(tmp_path / "out"), "--name", "y"])
    with pytest.raises(ValueError, match=r"differs from row sig1 .* in temperature"):
        mod.run(["--rows", "sig1", "--from-runs", pairs, "--temperature", "0.02", "--out", str(tmp_path / "out"),
                 "--name", "z"])
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["x.json"]


def test_the_table_lists_every_held_observable_and_the_mean_field():
    """The table of a stored certification: the observables some family holds, in the page's order (codes before
    the training error), a code no family holds left out, and the mean field's code mass beside the first layer's
    code fractions (0 for a code the mean field lacks)."""
    mod = load_script("certified")
    cert = {"families": ["prior", "meanfield"], "agree": False,
            "disagreements": ["code_fraction[z1][100]: prior 0.183 ± 0.020 vs meanfield 0.019 ± 0.020"],
            "observables": {"mse": {"prior": [0.0025, 1e-5], "meanfield": [0.0023, 1e-5]},
                            "code_fraction[z1][100]": {"prior": [0.183, 0.02], "meanfield": [0.019, 0.02]},
                            "code_fraction[z1][111]": {"prior": [0.0, 0.0], "meanfield": [0.0, 0.0]},
                            "code_fraction[z1][010]": {"prior": [0.01, 0.01], "meanfield": [0.0, 0.0]}}}
    t = mod.observable_table(json.loads(json.dumps(cert)), {"100": 0.011, "011": 0.32})
    assert t["observables_shown"] == ["code_fraction[z1][010]", "code_fraction[z1][100]", "mse"]
    assert t["meanfield_by_observable"] == {"code_fraction[z1][010]": 0.0, "code_fraction[z1][100]": 0.011}
    assert "meanfield_by_observable" not in mod.observable_table(cert, None)
    assert set(mod.CLAIMS) >= {c for r in mod.ROWS.values() for c in r["claims"]}


CODES2 = {"00", "01", "10", "11"}


def test_the_binary_rows_use_other_codes_task_which_the_unit_wise_sampler_serves():
    """Rows sig_bin and relu_bin sample Fig. 1's task as reproduce/other_codes.py builds it (m = 1, y = ±1 on two
    classes of P/2 points, N0 = P + 10), whose inputs are orthogonal, so ``sampler="units"`` serves both nets and
    ``sampler="auto"`` picks it for the certified sigmoidal net."""
    mod, oc = load_script("certified"), load_script("other_codes")
    for row in ("sig_bin", "relu_bin"):
        spec = mod.ROWS[row]
        assert spec["data"] == "binary" and spec["depth"] == 1 and set(spec["claims"]) == {"B1", "B3"}
        task = oc.make_task(spec["net"], 12)
        assert task.X.shape == (12, 22) and task.Y.shape == (12, 1)
        assert sorted(np.asarray(task.Y).ravel().tolist()) == [-1.0] * 6 + [1.0] * 6
        kw = dict(get_entry(spec["entry"]).defaults, width=12, depth=1)
        check_units(get_entry(spec["entry"]), kw, task.X)          # raises when the inputs are not orthogonal
        assert units_serve(get_entry(spec["entry"]), kw, task.X, init="prior", num_chains=8,
                           hmc_options={}) == (spec["entry"] == "sigmoidal")


def test_family_runs_splits_a_certified_run_by_its_family_coordinate():
    mod = load_script("certified")
    a = np.arange(5 * 3 * 2, dtype=float).reshape(5, 3, 2)
    post = xr.Dataset({"a": (("chain", "draw", "neuron"), a)}, coords={"chain": np.arange(5), "draw": np.arange(3)})
    post = post.assign_coords(family=("chain", ["prior", "prior", "annealed", "annealed", "meanfield"]))
    const = xr.Dataset({"X": (("point", "input"), np.eye(2))})
    runs = mod.family_runs(azcompat.make_idata({"posterior": post, "constant_data": const}, {"k": "v"}))
    assert list(runs) == ["prior", "annealed", "meanfield"]
    np.testing.assert_array_equal(azcompat.get_group(runs["annealed"], "posterior")["a"].values, a[2:4])
    np.testing.assert_array_equal(azcompat.get_group(runs["meanfield"], "constant_data")["X"].values, np.eye(2))


def test_outlier_sizes_are_the_rms_readout_of_the_flagged_units():
    """16 units, 3 outputs: bulk units of norm 1 and, per chain, one outlier of norm 10 in chain 0 and 20 in chain
    1 (16^{1/4} = 2 times the median is the threshold): per-chain RMS 10 and 20, mean 15 ± 5, bulk 1 ± 0."""
    mod = load_script("certified")
    a = np.zeros((2, 4, 16, 3))
    a[..., 0] = 1.0
    a[0, :, 3, 0], a[1, :, 7, 1], a[1, :, 7, 0] = 10.0, 20.0, 0.0
    s = mod.outlier_sizes(a)
    assert s["per_chain"]["outlier_rms_a"] == pytest.approx([10.0, 20.0], abs=1e-12)
    assert s["outlier_rms_a"] == pytest.approx([15.0, 5.0], abs=1e-12)
    assert s["bulk_rms_a"] == pytest.approx([1.0, 0.0], abs=1e-12)
    assert s["ratio"][0] == pytest.approx(15.0, abs=1e-12)


@pytest.mark.slow
def test_the_binary_rows_run_end_to_end_with_the_unit_wise_sampler(tmp_path):
    """Rows sig_bin and relu_bin (Fig. 1's task: m = 1, y = ±1, classes ½) at ci size with ``--sampler units``: every
    start family present (the sigmoidal net's three, ReLU's two: its mean field is not normalisable), codes over the
    two classes whose fractions sum to 1 in every family (to float rounding), the sigmoidal mean field's two codes 10
    and 01 with mass ½ each (the task is symmetric under y → −y with the classes swapped; to 1e-3, the grid's
    precision), the kernel's class blocks per family, symmetric like the task (the within-class blocks equal within
    0.1 of their size, the ci run being short), and the sigmoidal ones within 25 % of the mean field's (at N = P = 8
    the finite-N corrections are of order 1/N), ReLU's outliers per chain and sign in every chain of every family."""
    r = run_script("certified", "--size", "ci", "--rows", "sig_bin,relu_bin", "--sampler", "units", "--chains", "2",
                   "--out", str(tmp_path), timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads((tmp_path / "certified_ci.json").read_text())
    for row, families in (("sig_bin", ["prior", "annealed", "meanfield"]), ("relu_bin", ["prior", "annealed"])):
        e = res["rows"][row]
        assert "error" not in e, e.get("error")
        out = e["result"]
        assert e["row"]["data"] == "binary" and e["row"]["claims"] == ["B1", "B3"]
        assert out["certification"]["families"] == families and isinstance(out["certification"]["agree"], bool)
        assert out["health"]["status"].split(":")[0] in ("equilibrated", "metastable", "relaxing", "failed")
        obs = out["certification"]["observables"]
        codes = [k for k in obs if k.startswith("code_fraction[z1]")]
        assert codes and {k.split("][")[1].rstrip("]") for k in codes} <= CODES2
        for f in families:
            assert abs(sum(obs[k][f][0] for k in codes) - 1.0) < 1e-9
            pf = out["per_family"][f]
            assert set(pf["codes"]["fraction"]) <= CODES2 and abs(sum(pf["codes"]["fraction"].values()) - 1) < 1e-9
            block = np.asarray(pf["kernel"]["block"])
            assert block.shape == (2, 2) and np.allclose(block, block.T)
            assert abs(block[0, 0] - block[1, 1]) < 0.1 * abs(block[0, 0]), block
            assert 0.0 <= pf["kernel"]["target_cka"] <= 1.0 + 1e-9
        assert set(out["per_family"]) == set(families)
    sig = res["rows"]["sig_bin"]["result"]
    assert set(sig["meanfield_codes"]) == {"10", "01"}
    assert all(abs(v - 0.5) < 1e-3 for v in sig["meanfield_codes"].values())
    for f in ["prior", "annealed", "meanfield"]:
        k = sig["per_family"][f]["kernel"]
        np.testing.assert_allclose(k["block"], k["theory_block"], rtol=0.25)
    relu = res["rows"]["relu_bin"]["result"]
    assert "meanfield_codes" not in relu or relu["meanfield_codes"] is None
    assert {"outliers[0]", "outliers[1]"} <= set(relu["certification"]["observables"])
    for f in ["prior", "annealed"]:
        o = relu["per_family"][f]["outliers"]
        assert len(o["per_chain_class"]) == 2 and all(len(c) == 2 for c in o["per_chain_class"])
        assert sum(map(sum, o["per_chain_class"])) == o["n_outliers"]
