"""Helpers shared by the benchmark scripts (run as ``python benchmarks/<script>.py``, which puts this directory on
the import path)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time


def best_of(fn, *args, repeats=3):
    """(best wall seconds over ``repeats`` calls, the last output) of a jitted ``fn``; the first call (compile) is not
    timed."""
    import jax

    out = jax.block_until_ready(fn(*args))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return best, out


def run_child(script: str, cfg: dict, timeout: int, env_extra: dict | None = None) -> dict:
    """Run ``script --one <cfg as JSON>`` in a fresh process (its own JAX backend, its own peak memory; ``env_extra``
    added to its environment) and return the JSON dict it prints last; on a timeout or a failure, ``cfg`` with an
    ``error`` entry."""
    env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"), **(env_extra or {})}
    try:
        res = subprocess.run([sys.executable, script, "--one", json.dumps(cfg)], capture_output=True, text=True,
                             timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return dict(cfg, error=f"timeout after {timeout} s")
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    if res.returncode != 0 or not lines:
        return dict(cfg, error=(res.stderr.strip().splitlines() or [f"rc {res.returncode}"])[-1])
    return json.loads(lines[-1])


def readout_mixing(a):
    """Per entry of a (chain, draw, ...) array: bulk ESS over all chains, rank-normalised split R̂, and the
    within-chain ESS (each chain's bulk ESS on its own, summed over the chains)."""
    import numpy as np
    import xarray as xr

    from bnnzoo import azcompat

    ds = xr.Dataset({"x": (("chain", "draw") + tuple(f"d{i}" for i in range(a.ndim - 2)), a)})

    def bulk_ess(d):
        return np.asarray(azcompat.ess(d, method="bulk")["x"].values, dtype=float)

    rhat = np.asarray(azcompat.rhat(ds)["x"].values, dtype=float)
    return bulk_ess(ds), rhat, sum(bulk_ess(ds.isel(chain=[c])) for c in range(a.shape[0]))


def matmul_flops(fn, *args) -> int:
    """Floating-point operations of the matrix products in ``fn(*args)``, counted from its jaxpr: 2 × (batch ×
    free × contracted sizes) per ``dot_general``, sub-jaxprs (jit, custom derivatives, loops' bodies once, both
    branches of a cond) included.  XLA's cost analysis can miss matmuls it hands to a library call; this count
    does not depend on the backend."""
    import jax
    import numpy as np

    def count(jaxpr) -> int:
        total = 0
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "dot_general":
                (lc, rc), (lb, _rb) = eqn.params["dimension_numbers"]
                a = eqn.invars[0].aval.shape
                contracted = int(np.prod([a[i] for i in lc]))
                out = int(np.prod(eqn.outvars[0].aval.shape))
                total += 2 * out * contracted
            for v in eqn.params.values():
                for sub in (v if isinstance(v, (tuple, list)) else (v,)):
                    inner = getattr(sub, "jaxpr", None)
                    if inner is not None and hasattr(inner, "eqns"):
                        total += count(inner)
                    elif hasattr(sub, "eqns"):
                        total += count(sub)
        return total

    return count(jax.make_jaxpr(fn)(*args).jaxpr)


def versions() -> dict:
    """The Python version and those of the sampling libraries ("not installed" for a missing one), for a result's
    header."""
    out = dict(python=platform.python_version())
    for mod in ("jax", "numpyro", "arviz", "blackjax"):
        try:
            out[mod] = __import__(mod).__version__
        except ImportError:
            out[mod] = "not installed"
    return out
