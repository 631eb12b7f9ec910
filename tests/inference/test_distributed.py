"""Chains over several processes through JAX's distributed runtime (bnnzoo.inference.distributed): two real CPU
processes, connected by jax.distributed (gloo collectives), each run half the chains and both return the whole run;
it equals the single-process run with the same seed, chain by chain."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.inference.distributed import check_sampler

# a and W1 drawn with keys folded from the global chain index
ARGS = dict(width=4, num_chains=4, num_warmup=60, num_samples=40, seed=3, chunk_size=20, progress=False,
            reparam=["readout", "data_space"], sampler="nuts")
CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from bnnzoo.inference.distributed import initialize
    pid, port, out, store = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    initialize(f"localhost:{port}", num_processes=2, process_id=pid)
    import bnnzoo
    from bnnzoo import azcompat
    t = bnnzoo.toy_task(P=6, N0=8, y_neg=0.5, seed=0)
    args = json.loads(sys.argv[5])
    idata = bnnzoo.sample("sigmoidal", t, store=store, **args)
    # resuming the finished run: each process reloads its own sub-folder, and the gathered run is the same
    again = bnnzoo.sample("sigmoidal", t, store=store, resume=True, **args)
    arrays = []
    for run in (idata, again):
        post, ss = azcompat.get_group(run, "posterior"), azcompat.get_group(run, "sample_stats")
        arrays.append(dict(a=post["a"].values, f=post["f"].values, W1=post["W1"].values,
                           n_steps=ss["n_steps"].values, step_size=ss["step_size"].values,
                           warm_steps=azcompat.get_group(run, "warmup_sample_stats")["n_steps"].values))
    np.savez(out, **arrays[0], **{"resumed_" + k: v for k, v in arrays[1].items()})
    print(json.dumps(bnnzoo.run_config(idata)["engine"]))
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_two_processes_give_the_single_process_run(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    port = _free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)                       # one CPU device per process
    procs = [subprocess.Popen([sys.executable, str(script), str(p), str(port), str(tmp_path / f"p{p}.npz"),
                               str(tmp_path / "store"), json.dumps(ARGS)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for p in (0, 1)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    cfgs = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    assert [(c["n_processes"], c["process_index"]) for c in cfgs] == [(2, 0), (2, 1)]
    # each process streamed its own chains to its own sub-folder of the store
    assert all((tmp_path / "store" / f"process_{p}" / "run.json").exists() for p in (0, 1))

    t = bnnzoo.toy_task(P=6, N0=8, y_neg=0.5, seed=0)
    one = bnnzoo.sample("sigmoidal", t, **ARGS)
    post, ss = azcompat.get_group(one, "posterior"), azcompat.get_group(one, "sample_stats")
    ref = dict(a=post["a"].values, f=post["f"].values, W1=post["W1"].values, n_steps=ss["n_steps"].values,
               step_size=ss["step_size"].values,
               warm_steps=azcompat.get_group(one, "warmup_sample_stats")["n_steps"].values)
    got = [np.load(tmp_path / f"p{p}.npz") for p in (0, 1)]
    for k, v in ref.items():
        assert got[0][k].shape == v.shape == (4,) + v.shape[1:], k
        np.testing.assert_array_equal(got[0][k], got[1][k])          # both processes return the whole run
        np.testing.assert_array_equal(got[0]["resumed_" + k], got[0][k])
        # chain c started from the same key and took the same steps in whichever process ran it
        np.testing.assert_array_equal(got[0][k], v, err_msg=k)
    assert len(np.unique(ref["a"][:, -1, 0, 0])) == 4                # four different chains, not one repeated


COUPLED_ARGS = dict(ARGS, sampler="snaper")
COUPLED_CHILD = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    from bnnzoo.inference.distributed import initialize
    pid, port, out, store = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    args = json.loads(sys.argv[5])
    if pid >= 0:
        initialize(f"localhost:{port}", num_processes=2, process_id=pid)
    import bnnzoo
    from bnnzoo import azcompat
    t = bnnzoo.toy_task(P=6, N0=8, y_neg=0.5, seed=0)

    def arrays(run):
        post, ss = azcompat.get_group(run, "posterior"), azcompat.get_group(run, "sample_stats")
        return dict(a=post["a"].values, f=post["f"].values, W1=post["W1"].values, n_steps=ss["n_steps"].values,
                    step_size=ss["step_size"].values)

    if pid < 0:                                       # the single-process reference
        np.savez(out, **arrays(bnnzoo.sample("sigmoidal", t, **args)))
        raise SystemExit
    first = bnnzoo.sample("sigmoidal", t, store=store, **args)
    if pid == 1:    # as if process 1 had been killed before its last checkpoint: its state one block behind
        from bnnzoo.inference.store import RunStore
        s = RunStore(f"{store}/process_1")
        os.replace(s.previous_state_path, s.state_path)
        last = sorted(s.chunks.glob("draws_*.nc"))[-1]
        last.unlink()
    again = bnnzoo.sample("sigmoidal", t, store=store, resume=True, **args)
    np.savez(out, **arrays(first), **{"resumed_" + k: v for k, v in arrays(again).items()})
    print(json.dumps(bnnzoo.run_config(again)["engine"]))
""")


def test_two_processes_run_snaper_as_one(tmp_path):
    """SNAPER (its tuning couples the chains) over two processes: one program over both processes' devices, the
    tuning gathering the chains across them.  Float64, so the comparison with the single-process run does not depend
    on how XLA fuses the gathered arithmetic (see tests/perf/test_chains.py; here float32 gave the same bits too).
    Then process 1's checkpoint is set one block back (a kill between the two processes' checkpoints): resumed, both
    agree on the earlier block, redo the last one and give the first run bit for bit."""
    script = tmp_path / "child.py"
    script.write_text(COUPLED_CHILD)
    port = _free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_ENABLE_X64="1")
    env.pop("XLA_FLAGS", None)                       # one CPU device per process
    cmd = lambda p: [sys.executable, str(script), str(p), str(port), str(tmp_path / f"p{p}.npz"),  # noqa: E731
                     str(tmp_path / "store"), json.dumps(COUPLED_ARGS)]
    procs = [subprocess.Popen(cmd(p), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for p in (0, 1, -1)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    cfgs = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs[:2]]
    n_blocks = 60 // 20 + 40 // 20
    assert [(c["n_processes"], c["chain_method"], c["resumed_from_block"]) for c in cfgs] == \
        [(2, "sharded", n_blocks - 2)] * 2                 # both resumed from the block process 1 still had
    got = [np.load(tmp_path / f"p{p}.npz") for p in (0, 1)]
    ref = np.load(tmp_path / "p-1.npz")
    for k in ref.files:
        assert got[0][k].shape == ref[k].shape and ref[k].shape[0] == 4, k
        np.testing.assert_array_equal(got[0][k], got[1][k])                  # both processes return the whole run
        np.testing.assert_array_equal(got[0]["resumed_" + k], got[0][k])     # the redone block: the same bits
        np.testing.assert_allclose(got[0][k], ref[k], rtol=0, atol=1e-10 * max(1.0, np.abs(ref[k]).max()),
                                   err_msg=k)
    assert len(np.unique(ref["a"][:, -1, 0, 0])) == 4


@pytest.mark.parametrize("sampler, chains, match", [
    ("gibbs", 4, "runs in numpy"), ("nuts", 3, "multiple of the number of processes"),
])
def test_unsplittable_runs_are_refused(sampler, chains, match):
    with pytest.raises(ValueError, match=match):
        check_sampler(sampler, chains, 2)
    for ok in ("nuts", "hmc", "chees", "snaper"):
        check_sampler(ok, 4, 2)


REFUSING_CHILD = textwrap.dedent("""
    import sys, time
    from bnnzoo.inference.distributed import initialize
    pid, port, store, sampler = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    initialize(f"localhost:{port}", num_processes=2, process_id=pid)
    import bnnzoo
    t = bnnzoo.toy_task(P=6, N0=8, y_neg=0.5, seed=0)
    t0 = time.perf_counter()
    try:
        bnnzoo.sample("sigmoidal", t, store=store, width=4, num_chains=4, num_warmup=60, num_samples=40, seed=3,
                      chunk_size=20, progress=False, sampler=sampler)
    except ValueError as e:
        print(f"REFUSED after {time.perf_counter() - t0:.1f} s: {e}")
""")


@pytest.mark.parametrize("sampler", ["nuts", "snaper"])
def test_a_process_refusing_its_store_stops_them_all(tmp_path, sampler):
    """Only process 0's sub-folder already holds a run and resume is not asked: process 0 refuses it, and process 1,
    whose sub-folder is new, stops too, with a message naming process 0, instead of running on (NUTS: the whole
    run, then a collective timeout at the final gather, measured before the fix; SNAPER: into the shared program)."""
    from bnnzoo.inference.store import RunStore

    RunStore(tmp_path / "store" / "process_0").write_manifest({"complete": False})
    script = tmp_path / "child.py"
    script.write_text(REFUSING_CHILD)
    port = _free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    procs = [subprocess.Popen([sys.executable, str(script), str(p), str(port), str(tmp_path / "store"), sampler],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in (0, 1)]
    try:
        outs = [p.communicate(timeout=240) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    assert "already holds a run; pass resume=True" in outs[0][0], outs[0]
    assert "process(es) [0] of 2 refused to start this run" in outs[1][0], outs[1]
    assert not (tmp_path / "store" / "process_1").exists()      # process 1 stopped before creating its store


@pytest.mark.parametrize("sampler", ["nuts", "snaper"])
def test_killed_multiprocess_run_resumes_without_losing_a_draw(tmp_path, sampler):
    """Both processes of a `bnnzoo sample --distributed` run are killed (SIGKILL) mid-way; started again with
    --resume, each continues from its own sub-folder, and process 0 writes the run of the uninterrupted single
    process: bit for bit with NUTS; with SNAPER (one program over both processes, float64 as in
    test_two_processes_run_snaper_as_one) to 1e-10."""
    import signal
    import time

    from bnnzoo.inference import load_store

    args = ["sample", "sigmoidal", "--width", "4", "--P", "6", "--chains", "4", "--warmup", "20", "--samples", "100",
            "--chunk", "10", "--seed", "5", "--record", "z", "--quiet", "--sampler", sampler]
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_COMPILATION_CACHE_DIR=str(tmp_path / "jax_cache"),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", **({"JAX_ENABLE_X64": "1"} if sampler != "nuts" else {}))
    env.pop("XLA_FLAGS", None)
    ref_out, out, store = tmp_path / "ref.nc", tmp_path / "run.nc", tmp_path / "run.nc.store"

    def cli(extra, pause=0.0):
        e = dict(env, BNNZOO_TEST_CHECKPOINT_PAUSE=str(pause))
        return subprocess.Popen([sys.executable, "-m", "bnnzoo.cli"] + args + extra, env=e, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)

    def pair(extra, pause=0.0):
        port = _free_port()
        return [cli(["--out", str(out), "--distributed", "--coordinator", f"localhost:{port}", "--num-processes", "2",
                     "--process-id", str(p)] + extra, pause) for p in (0, 1)]

    ref = cli(["--out", str(ref_out)])
    assert ref.wait(timeout=300) == 0, ref.stdout.read()
    victims = pair([], pause=0.4)
    deadline = time.time() + 240
    while time.time() < deadline and all(v.poll() is None for v in victims):
        if all(len(list((store / f"process_{p}" / "chunks").glob("draws_*.nc"))) >= 3 for p in (0, 1)):
            break
        time.sleep(0.05)
    assert all(v.poll() is None for v in victims), "a process ended before it could be killed:\n" + "\n".join(
        v.stdout.read() for v in victims if v.poll() is not None)
    for v in victims:
        os.kill(v.pid, signal.SIGKILL)
        v.wait()
    assert not out.exists()
    n_partial = [load_store(store / f"process_{p}")["posterior"].sizes["draw"] for p in (0, 1)]
    assert all(0 < n < 100 for n in n_partial), n_partial

    resumed = pair(["--resume"])
    for r in resumed:
        assert r.wait(timeout=300) == 0, r.stdout.read()
    a, b = azcompat.from_netcdf(ref_out), azcompat.from_netcdf(out)
    cfg = bnnzoo.run_config(b)["engine"]
    assert cfg["n_processes"] == 2 and cfg["resumed_from_block"] >= 2      # resumed mid-way through the draws
    for group in ("posterior", "sample_stats"):
        ga, gb = azcompat.get_group(a, group), azcompat.get_group(b, group)
        assert set(ga.data_vars) == set(gb.data_vars)
        for v in ga.data_vars:
            if sampler == "nuts":
                np.testing.assert_array_equal(ga[v].values, gb[v].values, err_msg=f"{group}/{v}")
            else:
                x = np.asarray(ga[v].values, float)
                np.testing.assert_allclose(gb[v].values, x, rtol=0, atol=1e-10 * max(1.0, np.abs(x).max()),
                                           err_msg=f"{group}/{v}")
    assert azcompat.get_group(b, "posterior").sizes["chain"] == 4
