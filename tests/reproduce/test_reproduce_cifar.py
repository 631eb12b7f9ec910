"""``python -m reproduce cifar10`` (the Fig. 7 setting) at ``--size ci`` on fake local CIFAR-10 files, in a subprocess.

The fake files are CIFAR-10-shaped (32 × 32 × 3 images, ten classes) and learnable: each image is its class's fixed
random template plus noise of the same size, so the NNGP predictor separates the classes.  Checked against things
computed independently of the sampling: the network output recomputed from the stored weights equals the recorded
output at the same draws (to float32 rounding, 1e-4 relative), the sampled mean predictor beats chance (0/1 error
0.9) on the test images by a wide margin, as the NNGP computed by the script does, and every code fraction is a
distribution (sums to 1).  Errors (missing files, bad arguments, an existing result) are one line before sampling.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.reproduce.reproduce_scripts import run_script

NAME = "cifar10"


def _run(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return run_script(NAME, *args, timeout=timeout, drop_env=("BNNZOO_CIFAR10",))


def _fake_cifar(path: Path, n_train: int = 200, n_test: int = 100, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    templates = rng.uniform(0, 255, size=(10, 32, 32, 3))

    def make(n):
        y = rng.integers(0, 10, size=n)
        x = np.clip(templates[y] + rng.normal(0, 40, size=(n, 32, 32, 3)), 0, 255).astype(np.uint8)
        return x, y

    xtr, ytr = make(n_train)
    xte, yte = make(n_test)
    path.mkdir(parents=True, exist_ok=True)
    np.savez(path / "cifar10.npz", x_train=xtr, y_train=ytr, x_test=xte, y_test=yte)
    return path


def test_missing_files_and_bad_arguments_are_one_line_errors(tmp_path):
    r = _run("--size", "ci", "--root", str(tmp_path / "nowhere"), "--out", str(tmp_path))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0, r.stderr
    assert r.stderr.startswith("python -m reproduce cifar10: error: --root")
    r = _run("--size", "ci", "--root", str(tmp_path), "--out", str(tmp_path))       # a folder without the files
    assert r.returncode == 2 and "CIFAR-10 files not found" in r.stderr and "Traceback" not in r.stderr
    r = _run("--size", "ci", "--gp-max-p", "-1", "--out", str(tmp_path))
    assert r.returncode == 2 and "--gp-max-p" in r.stderr
    (tmp_path / "cifar10_ci.json").write_text("{}")
    r = _run("--size", "ci", "--root", str(_fake_cifar(tmp_path / "data", 80, 70)), "--out", str(tmp_path))
    assert r.returncode == 2 and "--overwrite" in r.stderr and (tmp_path / "cifar10_ci.json").read_text() == "{}"
    r = _run("--size", "cpu", "--root", str(tmp_path / "data"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "needs 1000 / 1000" in r.stderr


@pytest.mark.slow
def test_ci_run_on_fake_cifar(tmp_path):
    root = _fake_cifar(tmp_path / "data")
    r = _run("--size", "ci", "--root", str(root), "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    full = json.loads((tmp_path / "cifar10_ci.json").read_text())
    assert full["provenance"]["command"].startswith("python -m reproduce cifar10") and not full["populations_certified"]
    assert full["settings"]["gp_max_p"] == 20_000
    res = full["result"]
    assert res["gp_computed"]
    assert res["f_recompute_error"] < 1e-4
    assert res["gp_test_error"] < 0.3 and res["test_error"] < 0.5, (res["gp_test_error"], res["test_error"])
    for layer in ("1", "2"):
        for split in ("train", "test"):
            sch = res["layers"][layer][split]["scheme"]
            if sch:
                assert abs(sum(sch.values()) - 1) < 1e-3
    assert -1 <= res["feature_kernel_cka_test"] <= 1
    assert res["health"]["status"] and [x.name for x in tmp_path.iterdir() if x.is_file()] == ["cifar10_ci.json"]
