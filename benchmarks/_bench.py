"""Helpers shared by the benchmark scripts (run as ``python benchmarks/<script>.py``, which puts this directory on
the import path)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

TOY_NETS = {"sig_half": ("sigmoid", 0.5), "sig_ym01": ("sigmoid", 0.1), "relu": ("relu", -0.5)}
"""The toy nets of the unit-wise sampler's benchmarks: name → (activation, y−)."""


def toy_kernel(task, activation: str, *, sigma_a2: float | None = None, **moves):
    """The unit-wise sampler's kernel (:class:`bnnzoo.inference.units._Kernel`) of the benchmarks' toy net on ``task``.

    One hidden layer of width N = P (the task's number of examples), T = 0.01, σ_w² = 1.

    Parameters
    ----------
    task : a task with ``X`` (P, N0) and ``Y`` (P, m).
    activation : the hidden layer's activation (``"sigmoid"``, ``"relu"``, ...).
    sigma_a2 : the readout prior variance; default the paper's non-lazy one for width P, depth 1
        (:func:`bnnzoo.models.fcn.default_sigma_a2`).
    **moves : the kernel's move options (``tries``, ``own``, ``local``, ``pairs``), passed on; those left out take the
        kernel's defaults.

    Returns
    -------
    bnnzoo.inference.units._Kernel
    """
    from bnnzoo.inference import units as U
    from bnnzoo.models.fcn import default_sigma_a2

    P = task.X.shape[0]
    sa2 = default_sigma_a2(activation, "nonlazy", P, 1) if sigma_a2 is None else float(sigma_a2)
    return U._Kernel(task.X, task.Y, width=P, activation=activation, temperature=0.01, sigma_a2=sa2, sigma_w2=1.0,
                     **moves)


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


def rhat_of(x) -> float:
    """Rank-normalised split R̂ of a (chain, draw) array, through :func:`bnnzoo.azcompat.rhat`: +inf where every
    split chain is constant and they differ (ArviZ alone gives about 1e16 there), NaN where all hold one value."""
    import numpy as np
    import xarray as xr

    from bnnzoo import azcompat

    return float(azcompat.rhat(xr.Dataset({"x": (("chain", "draw"), np.asarray(x, float))}))["x"].values)


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


# ------------------------------------------------------------------------------------------------ run-spec scripts
def spec_parser(doc: str, *, runs: str, runs_help: str, size: int, out: str, sweeps: str | None = None,
                chains: int = 8) -> argparse.ArgumentParser:
    """The argument parser shared by the scripts that run a list of ``--runs`` side by side (``units_budget.py``,
    ``units_own.py``, ``units_pairs.py``): ``--runs`` (default ``runs``), ``--size`` N = P, ``--chains``, ``--sweeps``
    warm-up,kept (only when ``sweeps`` gives its default), ``--seed`` and ``--out`` (default
    ``benchmarks/results/<out>``); a script adds its own options to it."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", default=runs, help=runs_help)
    p.add_argument("--size", type=int, default=size, help="N = P")
    p.add_argument("--chains", type=int, default=chains)
    if sweeps is not None:
        p.add_argument("--sweeps", default=sweeps, help="warm-up,kept sweeps")
    p.add_argument("--seed", type=int, default=0, help="the seed of every run (task, start and moves)")
    p.add_argument("--out", default=None, help=f"output stem (default benchmarks/results/{out})")
    p.set_defaults(default_out=out)
    return p


def parse_runs(text: str, ok, form: str) -> list[list[str]]:
    """The runs of a ``--runs`` value (comma-separated, fields split at ':'); exits with one line naming ``--runs``
    and the expected ``form`` when ``ok(fields)`` is false for any run."""
    runs = [r.split(":") for r in text.split(",")]
    bad = [tuple(r) for r in runs if not ok(r)]
    if bad:
        raise SystemExit(f"--runs: each run must be {form}; got {bad}")
    return runs


def sweeps_of(args) -> tuple[int, int]:
    """(warm-up, kept) sweeps of a ``--sweeps`` value "warm-up,kept"."""
    warmup, samples = (int(x) for x in args.sweeps.split(","))
    return warmup, samples


def run_specs(runs, one, args, write) -> list[dict]:
    """Run ``one(*run)`` for every run in turn, print each row as JSON and ``write(stem, args, rows, total seconds)``
    after every run (stem: ``--out`` or ``benchmarks/results/<default>``); the rows."""
    stem = Path(args.out or RESULTS / args.default_out)
    rows, t0 = [], time.time()
    for run in runs:
        rows.append(one(*run))
        print(json.dumps(rows[-1]), flush=True)
        write(stem, args, rows, time.time() - t0)
    return rows


def write_result(stem: Path, args, rows, total: float, md: list[str]) -> None:
    """``stem``.json (the arguments, the rows and the total seconds; NaN and infinities as null) and ``stem``.md (the
    lines ``md``)."""
    from bnnzoo._record import jsonable

    a = {k: v for k, v in vars(args).items() if k != "default_out"}
    Path(f"{stem}.json").write_text(json.dumps(jsonable(dict(args=a, rows=rows, total_s=total)), indent=1))
    Path(f"{stem}.md").write_text("\n".join(md) + "\n")


READING_MARK = ("<!-- hand-written reading: a rerun of the script keeps everything from here to the end; check it "
                "against the new numbers -->")
"""The line that opens a result page's hand-written reading, which :func:`with_reading` carries over a rerun."""


def with_reading(path: Path, md: list[str]) -> list[str]:
    """The lines ``md`` of a result page, followed by the hand-written reading of the page now at ``path`` (its lines
    from :data:`READING_MARK` to the end), if it has one; a note on stderr then asks to check the reading against the
    new numbers."""
    old = path.read_text() if path.exists() else ""
    i = old.find(READING_MARK)
    if i < 0:
        return md
    print(f"{path.name}: kept its hand-written reading; check it against the new numbers", file=sys.stderr)
    return [*md, "", *old[i:].rstrip("\n").split("\n")]


def write_page(stem, res: dict, md: list[str]) -> list[str]:
    """``STEM.json`` (``res``) and ``STEM.md`` (the lines ``md`` and the page's hand-written reading,
    :func:`with_reading`), both at the stem's whole name (a dot in it, e.g. ``_T0.035``, stays); returns the page's
    lines."""
    Path(f"{stem}.json").write_text(json.dumps(res, indent=1))
    md = with_reading(Path(f"{stem}.md"), md)
    Path(f"{stem}.md").write_text("\n".join(md) + "\n")
    return md


def toy_setting(args) -> str:
    """"Toy task, T = 0.01, N = P = …, … chains from the prior, seed …, … warm-up + … kept sweeps" of a run-spec
    script with ``--sweeps``."""
    warmup, samples = sweeps_of(args)
    return (f"Toy task, T = 0.01, N = P = {args.size}, {args.chains} chains from the prior, seed {args.seed}, "
            f"{warmup} warm-up + {samples} kept sweeps")


def spec_header(title: str, script: str, args, total: float, setting: str, *, extra: str = "",
                jax_version: bool = False) -> list[str]:
    """The first three paragraphs of a run-spec script's table: "# ``title``", the command that reproduces it
    (``script`` with the shared options of :func:`spec_parser`, ``--seed`` when not 0, then ``extra``), and the
    machine (cores, load average at the end, ``total`` seconds, Python and with ``jax_version`` JAX's version)
    followed by ``setting``."""
    import jax

    cmd = (f"`python benchmarks/{script} --runs {args.runs} --size {args.size} --chains {args.chains}"
           + (f" --sweeps {args.sweeps}" if getattr(args, "sweeps", None) else "")
           + (f" --seed {args.seed}" if args.seed else "") + extra + "`\n")
    machine = (f"Machine: {os.cpu_count()} CPU cores ({platform.machine()}), load average at the end "
               f"{os.getloadavg()[0]:.1f}; total {total:.0f} s. Python {platform.python_version()}"
               + (f", jax {jax.__version__}" if jax_version else ""))
    return [f"# {title}\n", cmd, f"{machine}. {setting}\n"]


def codes_of(z, Y):
    """Codes (chain, draw, unit): bits of the class-mean signs of the preactivations z (chain, draw, N, P), classes
    the argmax of Y (P, m) (:func:`bnnzoo.diagnostics.codes.code_ids` of the class means)."""
    import numpy as np

    from bnnzoo.diagnostics.codes import class_means, code_ids

    return code_ids(class_means(z, np.argmax(Y, axis=1), Y.shape[1]))


def persistent_switches(codes, window: int):
    """Persistent code switches: each unit's modal code over consecutive windows of ``window`` draws, and how often it
    changes from one window to the next (a change of code inside a window, flicker, does not count).

    Parameters
    ----------
    codes : (chain, draw, unit) non-negative integer codes (as :func:`bnnzoo.diagnostics.codes.code_ids` gives).
    window : draws per window, >= 1; the draws after the last whole window are left out.

    Returns
    -------
    switches : (chain, unit) int array, the changes of each unit's modal code between consecutive windows.
    modal : (chain, D // window, unit) int array, each unit's modal code in each window (the smallest code on a
        tie), D the draws.

    Raises
    ------
    ValueError : ``window`` below 1.
    """
    import numpy as np

    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    codes = np.asarray(codes)
    C, D, N = codes.shape
    nw = D // window
    w = codes[:, : nw * window].reshape(C, nw, window, N)
    modal = np.stack([(w == k).sum(2) for k in range(int(codes.max()) + 1)], -1).argmax(-1)   # (chain, window, unit)
    return (modal[:, 1:] != modal[:, :-1]).sum(1), modal
