"""reproduce/mnist_generalization.py: its command line, its kernel predictor and a digits run at CI size."""

import sys

import numpy as np
import pytest

from tests.reproduce.reproduce_scripts import load_script


def _script():
    return load_script("mnist_generalization.py", "mnist_generalization")


def test_reproduce_script_refuses_overwrite_and_bad_nets(tmp_path, capsys):
    mod = _script()
    stem = tmp_path / "res"
    stem.with_suffix(".md").write_text("keep me")
    with pytest.raises(SystemExit) as e:
        mod.main(["--size", "ci", "--out", str(stem)])
    assert e.value.code == 2 and "pass --overwrite" in capsys.readouterr().err
    assert stem.with_suffix(".md").read_text() == "keep me"
    with pytest.raises(SystemExit):
        mod.main(["--nets", "tanh", "--out", str(tmp_path / "other")])
    assert "--nets must name some of linear, sigmoid, relu" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        mod.main(["--chains", "1", "--out", str(tmp_path / "other")])
    assert "--chains must be >= 2, got 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        mod.main(["--warmup", "-1", "--out", str(tmp_path / "other")])
    assert "--warmup must be >= 0, got -1" in capsys.readouterr().err


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
    stem = tmp_path / "dg"
    assert mod.main(["--data", "digits", "--size", "ci", "--nets", "relu", "--out", str(stem)]) == 0
    import json

    res = json.loads(stem.with_suffix(".json").read_text())
    r = res["nets"]["relu"]
    s = mod.DIGITS_SIZES["ci"]
    task = digits_task(P=s["P"], P_test=s["P_test"], seed=0)
    gp = theory.gp_posterior(task.X, task.Y, task.X_test, nonlinearity="relu", temperature=mod.T, sigma_a2=1.0,
                             Y_test=task.Y_test, labels_test=task.labels_test)
    assert res["data"] == "digits" and r["test_mse_gp"] == pytest.approx(gp.generalization.mse, rel=1e-9)
    assert np.isfinite(r["test_mse_sampled"]) and 0 <= r["test_error_sampled"] <= 1
    assert "8×8 digits 0/1/2" in stem.with_suffix(".md").read_text()
