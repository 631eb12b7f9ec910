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


def _kill_when(args, env, ready, timeout: float = 300) -> None:
    """Start the CLI with ``args`` and SIGKILL it once ``ready()`` holds (asserting it was still running then)."""
    victim = subprocess.Popen(_cli(args), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + timeout
        while time.time() < deadline and victim.poll() is None and not ready():
            time.sleep(0.05)
        assert victim.poll() is None, "the run ended before it could be killed:\n" + victim.stdout.read().decode()
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
    finally:
        if victim.poll() is None:
            victim.kill()


def test_killed_cli_run_resumes_to_the_same_draws(tmp_path, reference):
    """A CLI run is killed (SIGKILL) mid-way through its draws; `--resume` writes the draws of the uninterrupted run
    (the reference, run in this process with the same settings)."""
    out, store = tmp_path / "run.nc", tmp_path / "run.nc.store"
    _kill_when(CLI_ARGS + ["--out", str(out)], _env(tmp_path, pause=1.0),
               lambda: len(list((store / "chunks").glob("draws_*.nc"))) >= 2)
    assert not out.exists() and not list(tmp_path.glob(".run.nc.*"))
    res = subprocess.run(_cli(CLI_ARGS + ["--out", str(out), "--resume"]), env=_env(tmp_path), capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    got = azcompat.from_netcdf(out)
    assert 2 <= bnnzoo.run_config(got)["engine"]["resumed_from_block"] < 5     # resumed mid-way through the draws
    _same(_draws(got), reference[1])


@pytest.mark.slow
def test_killed_certified_cli_run_resumes_only_the_family_in_flight(tmp_path):
    """A certified CLI run (prior and annealed families) is killed (SIGKILL) while the annealed family samples;
    `--resume` reads the finished prior family from its store, keeps the annealed start (its hot stages do not run
    again: the file is untouched), continues the annealed family after its last checkpoint, and writes the draws of
    the uninterrupted certified run (made in this process with the same command)."""
    args = CLI_ARGS + ["--certify", "prior,annealed"]
    ref = tmp_path / "ref.nc"
    assert main(args + ["--out", str(ref)]) == 0
    out, store = tmp_path / "run.nc", tmp_path / "run.nc.store"
    _kill_when(args + ["--out", str(out)], _env(tmp_path, pause=1.0),
               lambda: len(list(store.glob("family_annealed/chunks/draws_*.nc"))) >= 2, timeout=600)
    assert not out.exists()
    start = store / "annealed_start.npz"
    kept = {p: p.stat().st_mtime_ns for p in [start, *sorted((store / "family_prior").rglob("*.nc"))]}
    res = subprocess.run(_cli(args + ["--out", str(out), "--resume"]), env=_env(tmp_path), capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert {p: p.stat().st_mtime_ns for p in kept} == kept         # nothing finished was written again
    got = azcompat.from_netcdf(out)
    runs = bnnzoo.run_config(got)["certification"]["runs"]
    assert runs["prior"]["resumed_from_block"] == 5 and 2 <= runs["annealed"]["resumed_from_block"] < 5
    want = azcompat.from_netcdf(ref)
    for group in ("posterior", "sample_stats"):
        a, b = azcompat.get_group(got, group), azcompat.get_group(want, group)
        for k in b.data_vars:
            np.testing.assert_array_equal(a[k].values, b[k].values, err_msg=f"{group}.{k}")


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
    (["--num-steps", "5"], ["--num-steps applies to --sampler hmc or smc only, not auto"]),
    (["--sampler", "hmc", "--num-steps", "4", "--step-size", "0"], ["--step-size must be a finite number > 0"]),
    (["--resume"], ["cannot resume", "it holds no run"]),
    (["--moves", "tries=2"], ["moves apply to sampler='units', not sampler='nuts' (what sampler='auto' chose)"]),
    (["--sampler", "nuts", "--moves", "tries=2"], ["--moves applies to --sampler units, not --sampler nuts"]),
    (["--sampler", "units", "--moves", "steps=2"], ["--moves takes comma-separated NAME=VALUE", "'steps=2'"]),
    (["--sampler", "units", "--moves", "own=maybe"], ["--moves own= must be on or off, got 'maybe'"]),
    (["--sampler", "units", "--moves", "tries=-1"], ["moves['tries'] must be an integer >= 0"]),
    (["--sampler", "units", "--moves", "radial=1.5"], ["--moves radial= must be an integer, got '1.5'"]),
])
def test_bad_sample_flags_get_one_line_naming_the_flag(capsys, tmp_path, extra, needles):
    _one_line_error(capsys, SMALL + ["--out", str(tmp_path / "r.nc")] + extra, *needles)
    assert not (tmp_path / "r.nc").exists()


def test_a_second_run_on_the_same_out_is_refused_while_the_first_holds_it(capsys, tmp_path):
    """Two `bnnzoo sample` runs started on one --out used to both print "wrote" (one run lost): a run holds its
    output name from before sampling until it is written, and a second run is refused at once with one line; once
    the first is done the name is free again (and the finished file is not overwritten without --overwrite)."""
    import fcntl

    from bnnzoo.cli import out_lock_path

    out = tmp_path / "r.nc"
    lock = out_lock_path(out)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as fh:                       # what the first run holds while it samples
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        _one_line_error(capsys, SMALL + ["--out", str(out)], "is being written by another bnnzoo run")
    assert not out.exists()
    lock.unlink()
    assert main(SMALL + ["--out", str(out)]) == 0
    assert out.exists() and not lock.exists() and not list(tmp_path.glob(".r.nc*"))
    capsys.readouterr()
    _one_line_error(capsys, SMALL + ["--out", str(out)], "exists; pass --overwrite to replace it")


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
    sites = "W1,a,f,mse,q_a,zbar1,hbar1,zsq1,kc_ff1,kc_yy1,kc_mm1,kc_mw1,kc_norm1,K1,Kz1"
    _one_line_error(capsys, SMALL + ["--out", str(existing), "--overwrite", "--exclude", sites + ",nosuch"],
                    "unknown site(s) ['nosuch']")
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
    _one_line_error(capsys, ["diagnose", str(tmp_path / "missing.nc")], "run file: there is no file", "missing.nc")
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


# ------------------------------------------------------------------------------------------------ round two (issue 34)

def test_the_store_touches_only_its_own_files(tmp_path):
    """A store in a folder the user keeps other files in (``--store .``): their ``*.tmp`` files, in the folder and in
    ``chunks/``, survive a run and a resume; only the store's own half-written files are removed."""
    store = tmp_path / "work"
    (store / "chunks").mkdir(parents=True)
    mine = {store / "notes.tmp": b"user", store / "data.csv.tmp": b"1,2", store / "chunks" / "plot.tmp": b"x",
            store / "state.tmp": b"not the store's"}
    for p, b in mine.items():
        p.write_bytes(b)
    bnnzoo.sample("deep_linear", _task(), store=store, **RUN_KW)
    (store / "state.npz.tmp").write_bytes(b"half a checkpoint")               # the store's own partial writes
    (store / "chunks" / "draws_00005.nc.tmp").write_bytes(b"half a chunk")
    _resume(store)
    for p, b in mine.items():
        assert p.read_bytes() == b, p
    assert not (store / "state.npz.tmp").exists() and not (store / "chunks" / "draws_00005.nc.tmp").exists()


def test_a_folder_with_store_files_but_no_run_is_refused(tmp_path):
    """A folder holding a ``state.npz`` (the user's, or a store whose run.json was lost) is not written into."""
    store = tmp_path / "s"
    store.mkdir()
    (store / "state.npz").write_bytes(b"the user's own file")
    with pytest.raises(StoreError, match=r"holds state\.npz but no run\.json: it is not a bnnzoo store"):
        bnnzoo.sample("deep_linear", _task(), store=store, **RUN_KW)
    assert (store / "state.npz").read_bytes() == b"the user's own file"


def test_killed_after_the_first_chunk_before_the_first_checkpoint_resumes_from_the_start(tmp_path, reference):
    """A CLI run killed after its first chunk file and before its first checkpoint: ``--resume`` starts again (a
    warning says why) and gives the uninterrupted run's draws; a plain rerun names --resume, which works."""
    out, store = tmp_path / "run.nc", tmp_path / "run.nc.store"
    _kill_when(CLI_ARGS + ["--out", str(out)], _env(tmp_path, pause=30.0),
               lambda: (store / "chunks" / "warmup_00000.nc").exists())
    assert (store / "chunks" / "warmup_00000.nc").exists() and not (store / "state.npz").exists()
    res = subprocess.run(_cli(CLI_ARGS + ["--out", str(out)]), env=_env(tmp_path), capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 2 and "pass resume=True (CLI: --resume)" in res.stderr
    res = subprocess.run(_cli(CLI_ARGS + ["--out", str(out), "--resume"]), env=_env(tmp_path), capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "no checkpoint" in res.stderr and "starts again from its first block" in res.stderr
    idata = azcompat.from_netcdf(out)
    _same(_draws(idata), reference[1])
    assert bnnzoo.run_config(idata)["engine"]["resumed_from_block"] == -1


def test_the_latest_checkpoint_stays_in_place_while_the_previous_one_is_made(tmp_path, monkeypatch):
    """A kill after the previous checkpoint is made and before the new one is in place leaves the old latest
    checkpoint readable under its own name (it is linked, not moved, to previous_state.npz first)."""
    from bnnzoo.inference import store as store_mod

    path, prev = tmp_path / "state.npz", tmp_path / "previous_state.npz"
    store_mod.save_state(path, {"x": np.arange(3.0)}, {"block_done": 1})
    real = store_mod._fsync_replace

    def killed(tmp, final):
        if final == path:
            raise KeyboardInterrupt("killed")          # the moment before the new checkpoint replaces the old
        real(tmp, final)

    monkeypatch.setattr(store_mod, "_fsync_replace", killed)
    with pytest.raises(KeyboardInterrupt):
        store_mod.save_state(path, {"x": np.arange(3.0) + 1}, {"block_done": 2}, previous=prev)
    assert store_mod.read_checkpoint(path)[0]["block_done"] == 1
    assert store_mod.read_checkpoint(prev)[0]["block_done"] == 1


def test_a_new_store_is_locked_before_it_is_checked(tmp_path):
    """Two runs on the same new store: the lock comes before any check of the store, so the second is refused even
    when the folder does not exist yet; a deleted lock file does not let it in (the folder itself is locked)."""
    store = tmp_path / "new"
    holder = RunStore(store)
    holder.lock()
    try:
        with pytest.raises(StoreError, match="is in use by another process"):
            bnnzoo.sample("deep_linear", _task(), store=store, **RUN_KW)
        (store / "lock").unlink()
        with pytest.raises(StoreError, match="is in use by another process"):
            bnnzoo.sample("deep_linear", _task(), store=store, **RUN_KW)
    finally:
        holder.unlock()
    assert not (store / "run.json").exists()


def test_a_damaged_middle_chunk_names_load_store_which_reads_the_intact_draws(reference, tmp_path):
    """One flipped byte in a middle chunk that both checkpoints need: the resume stops naming load_store, and
    load_store gives the draws before the damaged chunk (with a warning naming it)."""
    from bnnzoo.inference import load_store

    store = _copy(reference, tmp_path)
    chunk = store / "chunks" / "draws_00003.nc"
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunk.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=r"draws_00003\.nc is corrupt.*bnnzoo\.inference\.load_store\("):
        _resume(store)
    with pytest.warns(RuntimeWarning, match=r"draws_00003\.nc is corrupt: the draws before it are read"):
        got = load_store(store)
    assert got["block_done"] == 2
    np.testing.assert_array_equal(got["posterior"]["a"].values, reference[1]["a"][:, :5])


def test_an_edited_run_json_is_refused_and_a_version_change_is_recorded(reference, tmp_path, monkeypatch):
    """run.json edited after the run started (faked library versions): the resume is refused.  A real change of
    library versions between the kill and the resume: a warning, and both versions in the provenance."""
    import json

    store = _copy(reference, tmp_path)
    man = json.loads((store / "run.json").read_text())
    (store / "run.json").write_text(json.dumps(dict(man, versions=dict(man["versions"], jax="0.0.1"))))
    with pytest.raises(StoreError, match="its run.json was edited after the run started"):
        _resume(store)
    # an edited fingerprint (or any setting in it) differs from every call: named as the edit, not as other data
    (store / "run.json").write_text(json.dumps(dict(man, fingerprint="0" * len(man["fingerprint"]))))
    with pytest.raises(StoreError, match="its run.json was edited after the run started"):
        _resume(store)
    (store / "run.json").write_text(json.dumps(man))
    from bnnzoo.inference.engines import _base

    real = _base.versions
    monkeypatch.setattr(_base, "versions", lambda: dict(real(), jax="9.9.9"))
    with pytest.warns(RuntimeWarning, match=r"was started with jax .*; this resume runs jax 9\.9\.9"):
        idata = _resume(store)
    assert bnnzoo.run_config(idata)["engine"]["store_versions"]["jax"] == man["versions"]["jax"]


def test_an_edited_provenance_makes_diagnose_warn(tmp_path):
    """A run file whose activation attribute was edited after it was written: diagnose warns that its provenance
    does not match its checksum (an unedited run does not warn)."""
    t = bnnzoo.toy_task(P=6, N0=8)
    idata = bnnzoo.sample("deep_linear", t, width=3, num_chains=2, num_warmup=20, num_samples=100, progress=False)
    from bnnzoo.inference.convert import check_provenance

    assert check_provenance(idata) is None
    path = tmp_path / "r.nc"
    azcompat.to_netcdf(idata, path)
    assert check_provenance(azcompat.from_netcdf(path)) is None                  # survives the file
    attrs = dict(azcompat.get_attrs(idata), model_activation="relu")         # edited, the checksum kept
    groups = {g: azcompat.get_group(idata, g) for g in azcompat.group_names(idata)}
    for ds in groups.values():
        ds.attrs.clear()
    edited = azcompat.make_idata(groups, attrs)
    assert check_provenance(edited) is not None
    with pytest.warns(RuntimeWarning, match="provenance does not match its checksum"):
        bnnzoo.diagnose(edited, store=False, kernels=False, theory=False)


FSIZE_LIMITED = """
import resource, sys
soft = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
from bnnzoo.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("with_store", [False, True])
def test_a_full_disk_at_the_final_write_leaves_no_partial_file(tmp_path, with_store):
    """The final --out write under a file-size limit (the full-disk case): one line, exit 2, no partial or hidden
    file beside --out; with a store the line names it and load_store reads every draw from it."""
    from bnnzoo.inference import load_store

    out = tmp_path / "r.nc"
    i = CLI_ARGS.index("--chunk")
    args = (CLI_ARGS if with_store else CLI_ARGS[:i] + CLI_ARGS[i + 2:]) + ["--out", str(out)]
    res = subprocess.run([sys.executable, "-c", FSIZE_LIMITED, str(60_000)] + args, env=_env(tmp_path),
                         capture_output=True, text=True, timeout=300)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and lines[0].startswith("bnnzoo: error: --out: could not write")
    assert "nor a rescue copy" in lines[0]
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".r.nc")]
    if with_store:
        assert f"the draws are kept in the store {out}.store" in lines[0]
        kept = load_store(str(out) + ".store")
        assert kept["posterior"].sizes["draw"] == 20
        # the message's other way out: --resume once there is space writes the whole run
        res = subprocess.run(_cli(args + ["--resume"]), env=_env(tmp_path), capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == 0, res.stderr
        run = azcompat.from_netcdf(out)
        assert azcompat.get_group(run, "posterior").sizes["draw"] == 20
        # the kernels' block means, each site along its own kept-draw dim (the store's other dims are unnamed),
        # are the run's own
        thinned = azcompat.get_group(run, "posterior_thinned")
        assert set(kept["posterior_thinned"].data_vars) == set(thinned.data_vars) == {"K1", "Kz1"}
        for k in thinned.data_vars:
            assert kept["posterior_thinned"][k].dims[:2] == thinned[k].dims[:2] == ("chain", f"draw_{k}")
            np.testing.assert_array_equal(kept["posterior_thinned"][k].values, thinned[k].values)
    else:
        assert "the run is lost" in lines[0]


def test_a_full_disk_inside_the_store_is_one_line(tmp_path):
    """A chunk file of the store under a file-size limit (the full-disk case): one line naming the file and the way
    out, exit 2, no half-written file left (it ended in HDF5's error text, exit 1)."""
    out = tmp_path / "r.nc"
    res = subprocess.run([sys.executable, "-c", FSIZE_LIMITED, str(10_000)] + CLI_ARGS + ["--out", str(out)],
                         env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert lines[0].startswith(f"bnnzoo: error: could not write the store file {out}.store/chunks/warmup_00000.nc")
    assert "resume" in lines[0] and not out.exists()
    assert not list((tmp_path / "r.nc.store").rglob("*.tmp"))


def test_a_full_disk_at_diagnose_save_leaves_the_run_and_no_partial_file(tmp_path):
    """``bnnzoo diagnose RUN --save FILE`` under a file-size limit: one line, exit 2, no partial or hidden file, the
    run file unchanged (it used to crash inside HDF5)."""
    run, save = tmp_path / "run.nc", tmp_path / "d.nc"
    i = CLI_ARGS.index("--chunk")
    res = subprocess.run(_cli(CLI_ARGS[:i] + CLI_ARGS[i + 2:] + ["--out", str(run)]), env=_env(tmp_path),
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    before = run.read_bytes()
    res = subprocess.run([sys.executable, "-c", FSIZE_LIMITED, str(len(before) + 1000), "diagnose", str(run),
                          "--save", str(save)], env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert lines[0].startswith("bnnzoo: error: --save: could not write") and "run file" in lines[0]
    assert run.read_bytes() == before and not save.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".d.nc")]


def test_paths_and_seeds_are_checked_before_sampling(tmp_path, capsys):
    """--store naming --out (or a folder around it), --out into a missing folder and an out-of-range seed: one line
    each, before anything is sampled."""
    base = ["sample", "deep_linear", "--width", "3", "--P", "5", "--N0", "8", "--chains", "1", "--warmup", "2",
            "--samples", "4", "--quiet"]
    _one_line_error(capsys, base + ["--out", str(tmp_path / "r.nc"), "--store", str(tmp_path / "r.nc")],
                    "--store and --out must differ")
    (tmp_path / "s").mkdir()
    _one_line_error(capsys, base + ["--out", str(tmp_path / "s" / "r.nc"), "--store", str(tmp_path / "s")],
                    "--store and --out must differ", "inside the store folder")
    _one_line_error(capsys, base + ["--out", str(tmp_path / "missing" / "r.nc")],
                    "the folder", "does not exist; create it first")
    _one_line_error(capsys, base + ["--out", str(tmp_path / "r.nc"), "--seed", str(2**64)],
                    "seed must be an integer in 0..9223372036854775807")
    _one_line_error(capsys, base + ["--out", str(tmp_path / "r.nc"), "--depth", "0"],
                    "depth must be an integer >= 1, got 0")                  # was a ZeroDivisionError
    assert [p.name for p in tmp_path.iterdir()] == ["s"] and not list((tmp_path / "s").iterdir())


def test_all_zero_inputs_are_refused_for_a_zoo_net():
    """All-zero X: a zoo network would have every preactivation 0; refused before anything compiles (a Task itself
    allows it: a plain NumPyro model may ignore X)."""
    t = bnnzoo.Task(X=np.zeros((4, 3)), Y=np.eye(4, 2))
    with pytest.raises(ValueError, match="X is all zeros: every preactivation of 'deep_linear' would be 0"):
        bnnzoo.sample("deep_linear", t, width=3, num_chains=1, num_warmup=2, num_samples=2, progress=False)


@pytest.mark.parametrize("X, says", [
    (np.ones((4, 3)) * (1 + 1j), "X must be real"),
    (np.ones((4, 3)) * 1e30, "X holds values up to 1e+30"), (np.array([["a", "b", "c"]] * 4), "X must be a numeric"),
])
def test_bad_task_arrays_are_refused(X, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        bnnzoo.Task(X=X, Y=np.ones((4, 2)))
