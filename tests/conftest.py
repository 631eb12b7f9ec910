"""Shared sampling fixtures for the tests that need real NUTS runs: the diagnostics acceptance tests
(tests/acceptance/test_diagnostics.py) and the storage, report-figure and CLI ``diagnose`` tests on a sampled run
(tests/diagnostics/test_report.py, tests/plots/test_report.py, tests/test_cli.py).

Each network (net, seed) is sampled once per session.  The runs the selected tests need are found at collection
time (``@pytest.mark.nets(...)`` on a test, with its ``seed`` parameter) and started together the first time one is
needed, in parallel subprocesses (one per free CPU core, at most ``BNNZOO_TEST_WORKERS``), so that the slowest run and
not the sum of all runs sets the wall time.  Under pytest-xdist the workers share one folder of runs, and a lock per
run makes each run sampled once.  Set ``BNNZOO_TEST_CACHE=/some/dir`` to keep the NetCDF files between
sessions (development); by default they go to a temporary folder.

Settings (CI size, docs/theory.md §3): toy task, N = P = 100, T = 0.01, NUTS with 200 draws after 200 warm-up steps
(the linear net: the exact Gibbs sampler, 1000 draws); the sigmoidal net uses 2 chains (200 units, so that binomial code masses have SE ≤ 0.033 against the 0.1
tolerance), the others 1 chain.  The ReLU net gets 500 warm-up steps: with 200, seed 0 still carried two class-0
outliers (readouts 5.5 and 4.8 at the start of sampling, 6.8 and 2.7 at the end — a metastable split state that
merges into the single class-0 outlier of the other seeds, 7.3); with 600 it had merged (seeds 1–4 had 3 outliers,
one per class, already at 200).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

N = P = 100
T = 0.01
WARMUP = SAMPLES = 200
SEEDS = (0, 1)

# net -> (zoo entry, y−, depth, chains, warm-up steps, draws, sampler).  The linear net is drawn by the exact blocked
# Gibbs sampler (a second in all, against about 25 s of NUTS; NUTS itself is held to that sampler in
# tests/acceptance/test_exact_oracle.py); 1000 sweeps, as with 200 seed 0's single chain stayed "relaxing" by R̂.
NETS = {
    "linear": ("deep_linear", 0.0, 1, 1, WARMUP, 1000, "gibbs"),
    "sigmoid": ("sigmoidal", 0.5, 1, 2, WARMUP, SAMPLES, "nuts"),
    "relu": ("relu", -0.5, 1, 1, 500, SAMPLES, "nuts"),
    "sigmoid2": ("sigmoidal", 0.5, 2, 1, WARMUP, SAMPLES, "nuts"),
}

_SCRIPT = r"""
import json, sys, time
import bnnzoo
from bnnzoo import azcompat
spec = json.loads(sys.argv[1])
task = bnnzoo.toy_task(P=spec["P"], y_neg=spec["y_neg"], P_test=spec["P_test"], seed=spec["seed"])
t0, c0 = time.time(), time.process_time()
idata = bnnzoo.sample(spec["entry"], task, num_chains=spec["chains"], num_warmup=spec["warmup"],
                      num_samples=spec["samples"], record=("z",), progress=False, seed=spec["seed"],
                      depth=spec["depth"], width=spec["N"], temperature=spec["T"], sampler=spec["sampler"])
azcompat.to_netcdf(idata, spec["out"] + ".tmp")
print(json.dumps({"seconds": time.time() - t0, "cpu_seconds": time.process_time() - c0}))
"""


def pytest_configure(config):
    config.addinivalue_line("markers", "nets(*names): the sampled networks a diagnostics test needs")


def spec_for(net: str, seed: int, cache: Path) -> dict:
    entry, y_neg, depth, chains, warmup, samples, sampler = NETS[net]
    # the linear net gets a small (orthogonal) test set so that the predictor / GP comparison runs
    p_test = 20 if net == "linear" else 0
    name = f"{net}_s{seed}_N{N}_P{P}_w{warmup}_d{samples}_c{chains}_t{p_test}_{sampler}.nc"
    return dict(entry=entry, y_neg=y_neg, depth=depth, chains=chains, seed=seed, N=N, P=P, T=T, P_test=p_test,
                warmup=warmup, samples=samples, sampler=sampler, out=str(cache / name))


class RunPool:
    """Starts the needed sampling runs in parallel subprocesses and hands out their NetCDF paths."""

    def __init__(self, needed: list[tuple[str, int]], cache: Path):
        self.cache = cache
        self.needed = list(dict.fromkeys(needed))
        self.futures: dict[tuple[str, int], Future] = {}
        self.seconds: dict[tuple[str, int], float] = {}
        self.cpu_seconds: dict[tuple[str, int], float] = {}
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def _run(self, key) -> str:
        spec = spec_for(*key, self.cache)
        out = Path(spec["out"])
        # one lock per run: under pytest-xdist every worker's pool asks for the runs its tests need, and the first
        # to take the lock samples while the others wait for the file
        with open(str(out) + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return self._run_locked(key, spec, out)

    def _run_locked(self, key, spec: dict, out: Path) -> str:
        if out.exists():
            self.seconds[key] = 0.0
            return str(out)
        env = dict(os.environ)
        env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # parallel runs sharing one GPU
        proc = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(spec)], capture_output=True, text=True,
                              env=env, timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"sampling {key} failed:\n{proc.stderr[-3000:]}")
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        self.seconds[key] = res["seconds"]
        self.cpu_seconds[key] = res["cpu_seconds"]
        os.replace(spec["out"] + ".tmp", out)
        return str(out)

    def path(self, net: str, seed: int) -> str:
        key = (net, seed)
        with self._lock:
            if self._pool is None:
                workers = int(os.environ.get("BNNZOO_TEST_WORKERS", max(1, min(os.cpu_count() or 1, 4))))
                self._pool = ThreadPoolExecutor(max_workers=workers)
                # slowest first, so that the last run to finish is a short one
                order = {"relu": 0, "sigmoid": 1, "sigmoid2": 2, "linear": 3}
                for k in sorted(self.needed, key=lambda k: (order.get(k[0], 9), k[1])):
                    self.futures[k] = self._pool.submit(self._run, k)
            if key not in self.futures:
                self.futures[key] = self._pool.submit(self._run, key)
        return self.futures[key].result()

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True)


def _needed(items) -> list[tuple[str, int]]:
    out = []
    for item in items:
        mark = item.get_closest_marker("nets")
        if mark is None:
            continue
        params = item.callspec.params if hasattr(item, "callspec") else {}
        seed = params.get("seed", 0)
        for net in mark.args:
            out.append((net, seed))
    return out


@pytest.fixture(scope="session")
def run_pool(request, tmp_path_factory):
    cache = os.environ.get("BNNZOO_TEST_CACHE")
    if cache:
        cache = Path(cache)
    elif os.environ.get("PYTEST_XDIST_WORKER"):
        # the workers of one pytest-xdist run share the folder above their own temporary folders
        cache = tmp_path_factory.getbasetemp().parent / "diag_runs"
    else:
        cache = tmp_path_factory.mktemp("diag_runs")
    cache.mkdir(parents=True, exist_ok=True)
    pool = RunPool(_needed(request.session.items), cache)
    yield pool
    pool.close()
    if pool.seconds:
        print("\n[diagnostics] sampling wall / CPU seconds per run: "
              + ", ".join(f"{k[0]}/seed{k[1]} {v:.0f}/{pool.cpu_seconds.get(k, 0):.0f}"
                          for k, v in pool.seconds.items()))


_REPORTS: dict = {}


@pytest.fixture(scope="session")
def sampled(run_pool):
    """sampled(net, seed) → path of the run's NetCDF file."""
    return run_pool.path


@pytest.fixture(scope="session")
def report(run_pool):
    """report(net, seed) → (idata, DiagnosticReport), diagnosed once per session (kernels only for the
    two-layer net, where the figure tests need them)."""
    from bnnzoo import azcompat
    from bnnzoo.diagnostics import diagnose

    def get(net: str, seed: int):
        key = (net, seed)
        if key not in _REPORTS:
            idata = azcompat.from_netcdf(run_pool.path(net, seed))
            _REPORTS[key] = (idata, diagnose(idata, kernels=(net == "sigmoid2")))
        return _REPORTS[key]

    return get


def pytest_collection_finish(session):
    """With BNNZOO_COLLECTED_FILE set (``.ci/run`` sets it), append the number of tests this process selected, so
    that the script can hold the suite's size against the floor kept in ``tests/collected.txt``."""
    path = os.environ.get("BNNZOO_COLLECTED_FILE")
    # under pytest-xdist every worker collects the whole selection: count it once
    if path and not session.config.option.collectonly and os.environ.get("PYTEST_XDIST_WORKER", "gw0") == "gw0":
        with open(path, "a") as fh:
            fh.write(f"{len(session.items)}\n")
