"""Long runs lose nothing: a `bnnzoo sample --chunk` process is killed (SIGKILL) mid-way, `--resume` finishes it, and
the result equals, bit for bit, the same command run without interruption."""

import os
import signal
import subprocess
import sys
import time

import numpy as np

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.inference import load_store

ARGS = ["sample", "deep_linear", "--width", "4", "--P", "6", "--chains", "2", "--warmup", "20", "--samples", "100",
        "--chunk", "10", "--seed", "3", "--record", "z", "--quiet"]
N_BLOCKS = 2 + 10  # 20 warm-up steps in blocks of 10, then 100 draws in chunks of 10


def _env(tmp_path, pause=0.0):
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_COMPILATION_CACHE_DIR=str(tmp_path / "jax_cache"),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", BNNZOO_TEST_CHECKPOINT_PAUSE=str(pause))
    env.pop("XLA_FLAGS", None)
    return env


def _cli(args):
    return [sys.executable, "-m", "bnnzoo.cli"] + args


def test_killed_run_resumes_without_losing_a_draw(tmp_path):
    ref_out, out = tmp_path / "ref.nc", tmp_path / "run.nc"
    store = tmp_path / "run.nc.store"   # the CLI default: OUT.store
    # the uninterrupted reference and the run to be killed, side by side
    ref = subprocess.Popen(_cli(ARGS + ["--out", str(ref_out)]), env=_env(tmp_path), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    victim = subprocess.Popen(_cli(ARGS + ["--out", str(out)]), env=_env(tmp_path, pause=0.4),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 240
    while time.time() < deadline and victim.poll() is None:
        if len(list((store / "chunks").glob("draws_*.nc"))) >= 3:
            break
        time.sleep(0.05)
    assert victim.poll() is None, "the run finished before it could be killed:\n" + victim.stdout.read().decode()
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    assert victim.returncode == -signal.SIGKILL
    assert not out.exists()
    partial = load_store(store)
    n_partial = partial["posterior"].sizes["draw"]
    assert 0 < n_partial < 100 and not partial["manifest"]["complete"]

    res = subprocess.run(_cli(ARGS + ["--out", str(out), "--resume"]), env=_env(tmp_path), capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert ref.wait(timeout=300) == 0, ref.stdout.read().decode()

    a, b = azcompat.from_netcdf(ref_out), azcompat.from_netcdf(out)
    resumed_from = bnnzoo.run_config(b)["engine"]["resumed_from_block"]
    assert 2 <= resumed_from < N_BLOCKS - 1, resumed_from        # really resumed mid-way through the draws
    assert bnnzoo.run_config(a)["engine"]["resumed_from_block"] == -1
    for group in ("posterior", "sample_stats"):
        ga, gb = azcompat.get_group(a, group), azcompat.get_group(b, group)
        assert set(ga.data_vars) == set(gb.data_vars)
        for v in ga.data_vars:
            assert ga[v].shape == gb[v].shape, (group, v)
            np.testing.assert_array_equal(ga[v].values, gb[v].values, err_msg=f"{group}/{v}")
    post = azcompat.get_group(b, "posterior")
    assert post.sizes["draw"] == 100 and post.sizes["chain"] == 2
    np.testing.assert_array_equal(post["draw"].values, np.arange(100))
    # the draws written before the kill are the first draws of the finished run
    np.testing.assert_array_equal(partial["posterior"]["a"].values, post["a"].values[:, :n_partial])
