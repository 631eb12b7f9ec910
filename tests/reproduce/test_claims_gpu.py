"""``reproduce/claims_gpu.sh``: the device script of the claims that need one GPU, at CI size on the CPU, and the
outlier starts of its seeded ReLU families (``certified.py --seed-family outliers|outliers_eq``).  Slow: every job
samples."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.reproduce.reproduce_scripts import REPRO, ROOT, load_script

JOBS = ("relu500_seeded", "sig2_n500", "sig3_n200", "rubin_d4", "rubin_d6")


@pytest.mark.slow
def test_every_job_exits_0_and_writes_its_result(tmp_path):
    env = dict(os.environ, SIZE="ci", PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run(["bash", str(REPRO / "claims_gpu.sh"), str(tmp_path), "600"], capture_output=True, text=True,
                       env=env, timeout=1800, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    exits = (tmp_path / "exits.txt").read_text().splitlines()
    assert sorted(line.split(":")[0] for line in exits) == sorted(JOBS), exits
    assert all(": exit 0 " in line for line in exits), exits
    for name in JOBS:
        res = json.loads((tmp_path / f"{name}.json").read_text())
        assert res["provenance"], name
    seeded = json.loads((tmp_path / "relu500_seeded.json").read_text())
    assert seeded["seed_family"] == "outliers"
    cert = seeded["rows"]["relu"]["result"]["certification"]
    assert cert["families"] == ["prior", "outliers"]
    for name in ("rubin_d4", "rubin_d6"):
        runs = json.loads((tmp_path / f"{name}.json").read_text())["three_layer"]
        assert runs and all(run["config"]["N1"] == 4 * run["config"]["d"] for run in runs), name


@pytest.mark.slow
def test_the_outlier_start_fits_each_class_with_its_own_unit():
    """Each outlier unit alone, through the network's own forward pass (``fcn_forward``), gives its class's target
    row on that class's points and nothing on the others; the other units are prior draws."""
    import bnnzoo
    from bnnzoo.models.fcn import fcn_forward

    mod = load_script("certified")
    N = 12
    entry = bnnzoo.get_entry("relu")
    task = entry.make_task(**dict(entry.task_defaults, P=N, N0=N + 20, y_neg=-0.5))
    init = mod.outlier_start(task, N, 3, 1.0, 1.0 / N, seed=0)
    assert init["W1"].shape == (3, N, N + 20) and init["a"].shape == (3, N, task.Y.shape[1])
    labels = np.argmax(task.Y, axis=1)
    m = task.Y.shape[1]
    for c in range(m):
        one = {"W1": init["W1"][:, c:c + 1], "a": init["a"][:, c:c + 1] / N}   # the unit alone, output scale 1/N
        f = np.asarray(fcn_forward(task.X, one, activation="relu", readout="nonlazy"))  # (chain, P, m), width 1
        want = np.where((labels == c)[:, None], task.Y[labels == c][0][None, :], 0.0)
        np.testing.assert_allclose(f, np.broadcast_to(want, f.shape), atol=1e-8)
    # the bulk units are the prior's: readout variance σ_a² (loose: 3 chains × (N − m) × m draws)
    bulk = init["a"][:, m:]
    assert 0.5 / N < bulk.var() < 2.0 / N


@pytest.mark.parametrize("N, P", [(24, 8), (100, 100)])
def test_the_deep_outlier_start_holds_one_feature_layer_outlier_per_class(N, P):
    """Row relu3's seeded family (three hidden layers): the readout criterion of the ``outliers`` observable
    (``populations.outlier_counts``) counts one outlier per class in every chain; the lower layers are prior draws.
    With N ≫ P the feature matrix keeps every direction and each outlier alone, through ``fcn_forward``, gives its
    class's target row on that class's points and nothing elsewhere (float32 forward pass: 1e-5); at the certified
    run's N = P = 100 the truncated pseudo-inverse fits the sign of each outlier's preactivation on most points
    (measured 88–100 %; bound 85 %)."""
    import bnnzoo
    from bnnzoo.diagnostics.populations import outlier_counts
    from bnnzoo.models.fcn import fcn_forward

    mod = load_script("certified")
    entry = bnnzoo.get_entry("relu")
    task = entry.make_task(**dict(entry.task_defaults, P=P, N0=P + 20, y_neg=-0.5))
    init = mod.outlier_start(task, N, 4, 1.0, P ** (-1 / 3), seed=4, depth=3)
    labels, m = np.argmax(task.Y, axis=1), task.Y.shape[1]
    assert sorted(init) == ["W1", "W2", "W3", "a"] and init["W3"].shape == (4, N, N)
    assert outlier_counts(init["a"]).tolist() == [[1] * m] * 4
    for name in ("W1", "W2"):                                  # untouched prior draws, variance σ_w² = 1
        assert 0.9 < init[name].var() < 1.1, name
    for c in range(m):
        alone = dict(init, a=np.zeros_like(init["a"]))
        alone["a"][:, c] = init["a"][:, c]
        f = np.asarray(fcn_forward(task.X, alone, activation="relu"))       # (chain, P, m)
        want = np.where((labels == c)[:, None], task.Y[labels == c][0][None, :], 0.0)
        if N > P:
            np.testing.assert_allclose(f, np.broadcast_to(want, f.shape), atol=1e-5)
        else:
            on = np.abs(f).sum(-1) > 0                                       # (chain, P): the ReLU is open
            assert ((on == (labels == c)).mean(-1) >= 0.85).all(), c


def test_the_equilibrium_outlier_start_holds_one_feature_layer_outlier_per_class():
    """Row relu3's ``outliers_eq`` family at ``--size ci``: from each chain's last draw of a prior-family run, the
    start holds one outlier per class in every chain by the readout criterion (``populations.outlier_counts``), keeps
    the lower layers and the incoming weights of the state's bulk units (all but at most one per class), and its
    training error stays within a factor 2 of the state's (measured 0.08–1.07 over 16 chains at N = P = 8 and
    0.93–1.5 over 4 at N = P = 100, from short prior runs).  The training error of the state itself
    (``training_error``, a numpy forward pass) is the sampler's recorded ``mse`` (float32: 1e-5)."""
    import bnnzoo
    from bnnzoo import azcompat
    from bnnzoo.diagnostics.populations import outlier_counts

    mod = load_script("certified")
    s = mod.size_of("ci", "relu3")
    entry = bnnzoo.get_entry("relu")
    task = entry.make_task(**dict(entry.task_defaults, P=s["N"], N0=s["N"] + 20, y_neg=-0.5))
    run = bnnzoo.sample(entry, task, seed=0, width=s["N"], depth=3, temperature=mod.T, num_chains=4,
                        num_warmup=s["warmup"], num_samples=s["samples"], progress=False)
    post = azcompat.get_group(run, "posterior")
    state = {k: np.asarray(post[k].values)[:, -1] for k in ("W1", "W2", "W3", "a")}
    mse = mod.training_error(task, state)
    np.testing.assert_allclose(mse, np.asarray(post["mse"].values)[:, -1], rtol=1e-5, atol=1e-7)
    init = mod.equilibrium_outlier_start(task, state)
    m = task.Y.shape[1]
    assert outlier_counts(init["a"]).tolist() == [[1] * m] * 4
    for name in ("W1", "W2"):
        np.testing.assert_array_equal(init[name], state[name], err_msg=name)
    ratio = mod.training_error(task, init) / mse
    assert (ratio < 2.0).all(), ratio
    # incoming weights move only for the state's outliers and at most one unit per class (the merged outliers)
    changed = (init["W3"] != state["W3"]).any(-1)                  # (chain, N)
    r = np.sqrt((state["a"] ** 2).sum(-1))
    was_outlier = r > s["N"] ** 0.25 * np.median(r, axis=-1, keepdims=True)
    assert ((changed & ~was_outlier).sum(-1) <= m).all(), (changed & ~was_outlier).sum(-1)
    assert np.isfinite(init["a"]).all() and np.isfinite(init["W3"]).all()


def test_the_seed_family_option_names_its_values():
    """A seed family other than 'outliers' / 'outliers_eq', or one with a row that has none, is refused."""
    mod = load_script("certified")
    for argv in (["--seed-family", "bulk", "--rows", "relu3"], ["--seed-family", "outliers_eq", "--rows", "sig2"]):
        with pytest.raises(ValueError, match="--seed-family must be 'outliers' or 'outliers_eq'"):
            mod.run(["--size", "ci", *argv])
    with pytest.raises(ValueError, match="--seed-warmup must be an integer >= 1"):
        mod.run(["--size", "ci", "--rows", "relu3", "--seed-family", "outliers_eq", "--seed-warmup", "0"])
