"""Fault injection: runs that never lose work, and bad input that gets one clear line.

A small reference run (the linear net, 3 units, 5 points, 2 chains, 10 warm-up steps + 20 draws in chunks of 5: 2
warm-up blocks and 4 blocks of draws) is written to a store.  Each fault case copies that store, damages it as a kill
or a disk would (truncated or deleted checkpoint, truncated or deleted chunk, a write cut off half way, a second
process), resumes it, and checks the outcome against the uninterrupted run: the same draws bit for bit, or a one-line
message naming the damaged file, with no file of the store deleted.  The CLI cases check that bad input stops before
anything is sampled with one line ``bnnzoo: error: ...`` (exit status 2) and that an existing file is never
replaced unless asked.  docs/faults.md tabulates every case.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.cli import main
from bnnzoo.inference.store import RunStore, StoreError
from bnnzoo.models import get_entry

RUN_KW = dict(num_chains=2, num_warmup=10, num_samples=20, chunk_size=5, seed=0, width=3, progress=False)
# blocks: warmup_00000, warmup_00001, draws_00002 ... draws_00005
# the same run from the shell (the entry's default task with P=5, N0=8; `--record z` changes what is recorded, not
# the draws)
CLI_ARGS = ["sample", "deep_linear", "--width", "3", "--P", "5", "--N0", "8", "--chains", "2", "--warmup", "10",
            "--samples", "20", "--chunk", "5", "--seed", "0", "--quiet"]


def _task():
    entry = get_entry("deep_linear")
    return entry.make_task(**dict(entry.task_defaults, P=5, N0=8))


def _draws(idata):
    post, ss = azcompat.get_group(idata, "posterior"), azcompat.get_group(idata, "sample_stats")
    return {"a": post["a"].values, "f": post["f"].values, "n_steps": ss["n_steps"].values,
            "step_size": ss["step_size"].values,
            "warm_steps": azcompat.get_group(idata, "warmup_sample_stats")["n_steps"].values}


def _same(got, ref):
    for k, v in ref.items():
        np.testing.assert_array_equal(got[k], v, err_msg=k)


def _files(store):
    return sorted(p.relative_to(store).as_posix() for p in store.rglob("*") if p.is_file() and p.name != "lock")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    store = tmp_path_factory.mktemp("ref") / "store"
    idata = bnnzoo.sample("deep_linear", _task(), store=store, **RUN_KW)
    return store, _draws(idata)


def _copy(reference, tmp_path):
    dst = tmp_path / "store"
    shutil.copytree(reference[0], dst)
    return dst


def _resume(store):
    return bnnzoo.sample("deep_linear", _task(), store=store, resume=True, **RUN_KW)


def _truncate(path, keep=0.5):
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def test_reference_store_layout(reference):
    store, _ = reference
    assert _files(store) == ["chunks/draws_00002.nc", "chunks/draws_00003.nc", "chunks/draws_00004.nc",
                             "chunks/draws_00005.nc", "chunks/warmup_00000.nc", "chunks/warmup_00001.nc",
                             "previous_state.npz", "run.json", "state.npz"]


@pytest.mark.parametrize("damage, says", [
    ("truncate", "is unreadable (BadZipFile"), ("delete", "is missing"), ("flip", "is unreadable (BadZipFile"),
    ("rewrite", "is corrupt (its checksum does not match its content)"),
])
def test_damaged_latest_checkpoint_resumes_from_the_previous_one(reference, tmp_path, damage, says):
    store = _copy(reference, tmp_path)
    state = store / "state.npz"
    if damage == "truncate":
        _truncate(state)
    elif damage == "delete":
        state.unlink()
    elif damage == "flip":         # one byte changed: the zip's own CRC catches it
        data = bytearray(state.read_bytes())
        data[len(data) // 2] ^= 0xFF
        state.write_bytes(bytes(data))
    else:                          # a valid zip with one array changed: only the checkpoint's digest catches it
        with np.load(state) as f:
            arrays = {k: f[k] for k in f.files}
        leaf = next(k for k in sorted(arrays) if k.startswith("leaf") and arrays[k].dtype.kind == "f")
        arrays[leaf] = arrays[leaf] + 1
        with open(state, "wb") as fh:
            np.savez(fh, **arrays)
    with pytest.warns(RuntimeWarning, match=r"state\.npz " + re.escape(says) + r".*resuming from the previous "
                                            r"checkpoint \(after block 4\)"):
        idata = _resume(store)
    _same(_draws(idata), reference[1])
    assert bnnzoo.run_config(idata)["engine"]["resumed_from_block"] == 4
    assert (store / "state.npz.damaged").exists() == (damage != "delete")   # kept for inspection, not deleted
    assert set(_files(reference[0])) <= set(_files(store))                  # every chunk file still there


@pytest.mark.parametrize("damage", ["truncate", "delete"])
def test_damaged_latest_chunk_resumes_from_the_previous_checkpoint(reference, tmp_path, damage):
    store = _copy(reference, tmp_path)
    chunk = store / "chunks" / "draws_00005.nc"
    _truncate(chunk) if damage == "truncate" else chunk.unlink()
    with pytest.warns(RuntimeWarning, match=r"chunk file .*draws_00005\.nc is (corrupt|missing)"):
        idata = _resume(store)
    _same(_draws(idata), reference[1])
    assert chunk.exists()                                                    # redone, with the same draws


def test_kill_mid_write_leaves_only_a_tmp_file(reference, tmp_path):
    """A kill while the last chunk was being written: its ``.tmp`` half written, no final file, the checkpoint one
    block back.  The resume removes the ``.tmp`` file and redoes the block."""
    store = _copy(reference, tmp_path)
    chunk = store / "chunks" / "draws_00005.nc"
    tmp = chunk.with_name(chunk.name + ".tmp")
    os.replace(chunk, tmp)
    _truncate(tmp, 0.3)
    os.replace(store / "previous_state.npz", store / "state.npz")
    (store / "state.npz.tmp").write_bytes(b"PK\x03\x04 half a zip")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)     # nothing damaged: no fallback warning
        idata = _resume(store)
    _same(_draws(idata), reference[1])
    assert not list(store.rglob("*.tmp"))


@pytest.mark.parametrize("victim, named", [
    ("chunks/warmup_00000.nc", "warmup_00000.nc"),     # warm-up chunks are checked like draws
    ("chunks/draws_00003.nc", "draws_00003.nc"),       # a chunk both checkpoints need
])
def test_damaged_older_chunk_stops_with_its_name(reference, tmp_path, victim, named):
    store = _copy(reference, tmp_path)
    _truncate(store / victim)
    before = _files(store)
    with pytest.raises(StoreError, match=rf"cannot resume .*chunk file .*{named} is corrupt") as e:
        _resume(store)
    assert "\n" not in str(e.value)
    assert _files(store) == before                      # nothing deleted, nothing renamed


def test_both_checkpoints_gone_stops_and_keeps_the_chunks(reference, tmp_path):
    store = _copy(reference, tmp_path)
    (store / "state.npz").unlink()
    _truncate(store / "previous_state.npz")
    before = _files(store)
    with pytest.raises(StoreError, match=r"state\.npz is missing, and the previous checkpoint too "
                                         r"\(.*previous_state\.npz is unreadable"):
        _resume(store)
    assert _files(store) == before


def test_refused_resumes_name_what_differs(reference, tmp_path):
    store = _copy(reference, tmp_path)
    before = _files(store)
    with pytest.raises(StoreError, match=r"the store holds a run with seed=0, this call has seed=1"):
        bnnzoo.sample("deep_linear", _task(), store=store, resume=True, **dict(RUN_KW, seed=1))
    with pytest.raises(StoreError, match=r"model_kwargs\.width=3.*model_kwargs\.width=4"):
        bnnzoo.sample("deep_linear", _task(), store=store, resume=True, **dict(RUN_KW, width=4))
    with pytest.raises(StoreError, match=r"already holds a run; pass resume=True"):
        bnnzoo.sample("deep_linear", _task(), store=store, **RUN_KW)
    with pytest.raises(StoreError, match=r"cannot resume .*nowhere: it holds no run"):
        bnnzoo.sample("deep_linear", _task(), store=tmp_path / "nowhere", resume=True, **RUN_KW)
    assert not (tmp_path / "nowhere" / "run.json").exists()
    assert _files(store) == before


def test_a_locked_store_is_refused(reference, tmp_path):
    store = _copy(reference, tmp_path)
    holder = RunStore(store)
    holder.lock()                  # another open file description: flock refuses it as it would another process
    try:
        with pytest.raises(StoreError, match=r"is in use by another process \(it holds .*lock\)"):
            _resume(store)
    finally:
        holder.unlock()
    _same(_draws(_resume(store)), reference[1])        # free again: the resume goes through


# ------------------------------------------------------------------------------------------------ real processes

def _env(tmp_path, pause=0.0):
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_COMPILATION_CACHE_DIR=str(tmp_path / "jax_cache"),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", BNNZOO_TEST_CHECKPOINT_PAUSE=str(pause),
               XLA_FLAGS="--xla_force_host_platform_device_count=1")   # vectorised chains, as in this process
    return env


def _cli(args):
    return [sys.executable, "-m", "bnnzoo.cli"] + args


def test_killed_cli_run_resumes_to_the_same_draws(tmp_path, reference):
    """A CLI run is killed (SIGKILL) mid-way through its draws; `--resume` writes the draws of the uninterrupted run
    (the reference, run in this process with the same settings)."""
    out, store = tmp_path / "run.nc", tmp_path / "run.nc.store"
    victim = subprocess.Popen(_cli(CLI_ARGS + ["--out", str(out)]), env=_env(tmp_path, pause=1.0),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 300
        while time.time() < deadline and victim.poll() is None and \
                len(list((store / "chunks").glob("draws_*.nc"))) < 2:
            time.sleep(0.05)
        assert victim.poll() is None, "the run ended before it could be killed:\n" + victim.stdout.read().decode()
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
    finally:
        if victim.poll() is None:
            victim.kill()
    assert not out.exists() and not list(tmp_path.glob(".run.nc.*"))
    res = subprocess.run(_cli(CLI_ARGS + ["--out", str(out), "--resume"]), env=_env(tmp_path), capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    got = azcompat.from_netcdf(out)
    assert 2 <= bnnzoo.run_config(got)["engine"]["resumed_from_block"] < 5     # resumed mid-way through the draws
    _same(_draws(got), reference[1])


LOCK_HOLDER = """
import fcntl, sys, time
fh = open(sys.argv[1], "a+")
fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(600)
"""


def test_a_second_process_on_a_running_store_gets_one_line(tmp_path, reference):
    """While another process holds the store (its lock, as a running `bnnzoo sample` does), `--resume` on the same
    store stops with one line naming the lock, before sampling, and touches nothing."""
    store = _copy(reference, tmp_path)
    before = _files(store)
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(store / "lock")], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        res = subprocess.run(_cli(CLI_ARGS + ["--out", str(tmp_path / "r.nc"), "--store", str(store), "--resume"]),
                             env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    finally:
        holder.kill()
        holder.wait()
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bnnzoo: error: "), lines
    assert "is in use by another process (it holds" in lines[0]
    assert _files(store) == before and not (tmp_path / "r.nc").exists()


# ------------------------------------------------------------------------------------------------ the CLI

SMALL = ["sample", "deep_linear", "--width", "3", "--P", "5", "--N0", "8", "--chains", "1", "--warmup", "2",
         "--samples", "4", "--quiet"]


def _one_line_error(capsys, argv, *needles):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bnnzoo: error: "), err
    for n in needles:
        assert n in err[0], (n, err[0])
    return err[0]


@pytest.mark.parametrize("extra, needles", [
    (["--P-test", "-1"], ["--P-test must be >= 0, got -1"]),
    (["--chains", "0"], ["--chains must be >= 1"]),
    (["--sampler", "hmc"], ["--sampler hmc needs --num-steps"]),
    (["--num-steps", "5"], ["--num-steps applies to --sampler hmc only"]),
    (["--sampler", "hmc", "--num-steps", "4", "--step-size", "0"], ["--step-size must be a finite number > 0"]),
    (["--resume"], ["cannot resume", "it holds no run"]),
])
def test_bad_sample_flags_get_one_line_naming_the_flag(capsys, tmp_path, extra, needles):
    _one_line_error(capsys, SMALL + ["--out", str(tmp_path / "r.nc")] + extra, *needles)
    assert not (tmp_path / "r.nc").exists()


def test_bad_output_paths_are_refused_before_sampling(capsys, tmp_path):
    existing = tmp_path / "old.nc"
    existing.write_bytes(b"a previous run")
    (tmp_path / "adir").mkdir()
    _one_line_error(capsys, SMALL + ["--out", str(existing)], "exists; pass --overwrite to replace it")
    _one_line_error(capsys, SMALL + ["--out", str(tmp_path / "adir")], "is a folder; give a file name")
    _one_line_error(capsys, SMALL + ["--out", str(existing / "sub" / "r.nc")], "which is a file, not a folder")
    _one_line_error(capsys, SMALL + ["--out", str(tmp_path / "r.nc"), "--chunk", "2", "--store", str(existing)],
                    "--store:", "is a file, not a folder")
    assert existing.read_bytes() == b"a previous run"


def test_impossible_exclude_fails_before_sampling_and_overwrite_keeps_the_old_file(capsys, tmp_path):
    existing = tmp_path / "old.nc"
    existing.write_bytes(b"a previous run")
    sites = "W1,a,f,mse,q_a,z1"
    _one_line_error(capsys, SMALL + ["--out", str(existing), "--overwrite", "--exclude", sites + ",K1"],
                    "unknown site(s) ['K1']")
    _one_line_error(capsys, SMALL + ["--out", str(existing), "--overwrite", "--exclude", sites],
                    "exclude names every recorded site")
    assert existing.read_bytes() == b"a previous run"        # a failed run with --overwrite leaves the old file
    assert not list(tmp_path.glob(".old.nc.*")) and not (tmp_path / "old.nc.store").exists()


def test_overwrite_replaces_the_file_only_at_the_end(capsys, tmp_path):
    out = tmp_path / "r.nc"
    out.write_bytes(b"a previous run")
    assert main(SMALL + ["--out", str(out), "--overwrite"]) == 0
    assert azcompat.get_group(azcompat.from_netcdf(out), "posterior")["a"].shape[:2] == (1, 4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.nc"]               # no temporary file left


def test_hmc_from_the_shell_takes_its_number_of_steps(tmp_path):
    out = tmp_path / "hmc.nc"
    assert main(SMALL + ["--sampler", "hmc", "--num-steps", "3", "--step-size", "0.01", "--out", str(out)]) == 0
    idata = azcompat.from_netcdf(out)
    cfg = bnnzoo.run_config(idata)["sampler"]
    assert (cfg["sampler"], cfg["num_steps"], cfg["step_size"]) == ("hmc", 3, 0.01)
    ss = azcompat.get_group(idata, "sample_stats")
    assert (ss["n_steps"].values == 3).all() and np.allclose(ss["step_size"].values, 0.01)


def test_a_failed_final_write_loses_nothing(tmp_path, monkeypatch):
    """The output cannot be written at the end (here: a file appeared where its folder should be): the old file is
    untouched, no half file exists, and the run is saved to a rescue file that the one-line error names."""
    from bnnzoo.cli import _write_run

    idata = bnnzoo.sample("deep_linear", _task(), num_chains=1, num_warmup=2, num_samples=3, width=3, progress=False)
    blocked = tmp_path / "gone"
    blocked.write_bytes(b"not a folder")
    monkeypatch.setenv("TMPDIR", str(tmp_path / "rescue"))
    (tmp_path / "rescue").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    with pytest.raises(ValueError, match=r"--out: could not write .*gone/r\.nc .*; the run was saved to ") as e:
        _write_run(idata, blocked / "r.nc")
    rescue = str(e.value).rsplit("saved to ", 1)[1]
    assert rescue.startswith(str(tmp_path / "rescue"))
    np.testing.assert_array_equal(azcompat.get_group(azcompat.from_netcdf(rescue), "posterior")["a"].values,
                                  azcompat.get_group(idata, "posterior")["a"].values)
    assert blocked.read_bytes() == b"not a folder"


def test_diagnose_bad_files_get_one_line(capsys, tmp_path, reference):
    empty, text, trunc = tmp_path / "empty.nc", tmp_path / "text.nc", tmp_path / "trunc.nc"
    empty.write_bytes(b"")
    text.write_text("these are not draws\n")
    shutil.copy(reference[0] / "chunks" / "draws_00002.nc", trunc)
    _truncate(trunc)
    _one_line_error(capsys, ["diagnose", str(empty)], "empty.nc is empty")
    _one_line_error(capsys, ["diagnose", str(text)], "text.nc is not a readable NetCDF run")
    _one_line_error(capsys, ["diagnose", str(trunc)], "trunc.nc is not a readable NetCDF run")
    _one_line_error(capsys, ["diagnose", str(tmp_path / "missing.nc")], "missing.nc not found")
    _one_line_error(capsys, ["diagnose", str(tmp_path), "--json"], "is a folder, not a NetCDF file")
    _one_line_error(capsys, ["diagnose", str(trunc), "--figures", str(text / "figs")], "--figures:",
                    "which is a file, not a folder")
    _one_line_error(capsys, ["diagnose", str(trunc), "--save", str(text)], "--save:", "exists; pass --overwrite")


def test_unexpected_errors_reach_the_user_as_one_line(capsys, monkeypatch):
    import bnnzoo.cli as cli

    def boom(args):
        raise RuntimeError("something\nbroke")

    monkeypatch.setattr(cli, "_cmd_list", boom)
    assert main(["list"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["bnnzoo: error: RuntimeError: something broke (run with BNNZOO_TRACEBACK=1 for the traceback)"]
