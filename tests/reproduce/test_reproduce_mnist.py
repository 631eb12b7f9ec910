"""``python -m reproduce mnist_generalization``: its command line, its kernel predictor, its verdicts and a digits
run at CI size."""

import sys

import numpy as np
import pytest

from tests.reproduce.reproduce_scripts import load_script, run_script


def _script():
    return load_script("mnist_generalization")


def test_reproduce_script_refuses_overwrite_and_bad_nets(tmp_path, capsys):
    mod = _script()
    old = tmp_path / "res.json"
    old.write_text("keep me")
    with pytest.raises(ValueError, match="pass --overwrite"):
        mod.run(["--size", "ci", "--out", str(tmp_path), "--name", "res"])
    assert old.read_text() == "keep me"
    other = str(tmp_path / "other")
    for args, match in ((["--nets", "tanh"], "--nets must name some of linear, sigmoid, relu"),
                        (["--chains", "1"], "--chains must be >= 2, got 1"),
                        (["--warmup", "-1"], "--warmup must be >= 0, got -1"),
                        (["--seed", "-1"], "--seed must be >= 0")):
        with pytest.raises(ValueError, match=match):
            mod.run([*args, "--out", other])
    assert [x.name for x in tmp_path.iterdir()] == ["res.json"]
    # through the command: a one-line error, exit 2
    r = run_script("mnist_generalization", "--nets", "tanh", "--out", other, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("python -m reproduce mnist_generalization: error: --nets")
    assert r.stderr.count("\n") == 1, r.stderr


def test_verdicts_follow_the_stated_rules():
    mod = _script()
    lin = dict(health="equilibrated", rel_diff_sampled_vs_theory=0.01, rel_diff_theory_vs_gp=0.049)
    sig = dict(health="equilibrated", test_mse_sampled=0.1, test_mse_gp=0.2, rel_diff_sampled_vs_kernel_predictor=0.3,
               rel_diff_sampled_vs_gp=0.2)
    relu = dict(health="relaxing")
    v = mod.verdicts(dict(linear=lin, sigmoid=sig, relu=relu))
    assert v["linear"] == dict(equilibrated=True, reproduced=True)
    assert v["sigmoid"] == dict(equilibrated=True, mse_below_gp=True, closer_to_kernel_predictor_than_gp=False)
    assert v["relu"] == dict(equilibrated=False)
    assert not mod.verdicts(dict(linear=dict(lin, rel_diff_theory_vs_gp=0.051)))["linear"]["reproduced"]


def test_reproduce_script_kernel_predictor_is_kernel_regression():
    # Yᵀ K⁻¹ k(x) reproduces the targets on the training points themselves (k = K) and a GP mean at T → 0
    mod = _script()
    rng = np.random.default_rng(0)
    X, Xt = rng.standard_normal((20, 50)), rng.standard_normal((7, 50))
    Y = rng.standard_normal((20, 3))
    K, k = X @ X.T / 50, X @ Xt.T / 50
    np.testing.assert_allclose(mod.kernel_predictor(K, K, Y), Y, atol=1e-8)
    np.testing.assert_allclose(mod.kernel_predictor(K, k, Y), k.T @ np.linalg.solve(K, Y), rtol=1e-8)


def test_reproduce_script_digits_runs_without_mlxtend(tmp_path, monkeypatch):
    # --data digits needs no optional package; its GP column is the NNGP predictor on the digits task the script
    # builds (recomputed here from bnnzoo.tasks.digits_task and bnnzoo.theory.gp_posterior), and the sampled
    # outputs stay finite; the ReLU net at ci size (N = 30, P = 60, 150 test images, 4 chains)
    from bnnzoo import theory
    from bnnzoo.tasks import digits_task

    monkeypatch.setitem(sys.modules, "mlxtend", None)      # import mlxtend now fails
    mod = _script()
    assert mod.run(["--data", "digits", "--size", "ci", "--nets", "relu", "--out", str(tmp_path), "--name", "dg"]) == 0
    import json

    res = json.loads((tmp_path / "dg.json").read_text())
    r = res["nets"]["relu"]
    s = mod.DIGITS_SIZES["ci"]
    task = digits_task(P=s["P"], P_test=s["P_test"], seed=0)
    gp = theory.gp_posterior(task.X, task.Y, task.X_test, nonlinearity="relu", temperature=mod.T, sigma_a2=1.0,
                             Y_test=task.Y_test, labels_test=task.labels_test)
    assert res["data"] == "digits" and r["test_mse_gp"] == pytest.approx(gp.generalization.mse, rel=1e-9)
    assert np.isfinite(r["test_mse_sampled"]) and 0 <= r["test_error_sampled"] <= 1
    assert res["provenance"]["size"] == "ci" and res["provenance"]["seed"] == 0 and "command" not in res
    assert set(res["verdicts"]) == {"relu"}
    assert res["verdicts"]["relu"]["equilibrated"] == (r["health"] == "equilibrated")
    assert [x.name for x in tmp_path.iterdir()] == ["dg.json"]
