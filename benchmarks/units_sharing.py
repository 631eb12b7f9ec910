"""What a unit-wise sweep costs when two runs share the machine's cores, and how to keep that cost near a run's own.

    python benchmarks/units_sharing.py                                 # sigmoid and ReLU, N = P = 100 and 200 (about 6 min)
    python benchmarks/units_sharing.py --nets relu:200 --sweeps 10 --out /tmp/us

Needs the machine to itself: every layout below is timed with nothing else running.  For each net (``--nets``
activation:N, toy task, N = P, T = 0.01, ``--chains`` chains of the sampler's default moves from the prior), the
seconds per sweep of one jitted, chain-batched sweep of :mod:`bnnzoo.inference.units` (compilation and a first sweep
excluded; ``--sweeps`` sweeps timed) in five layouts, each in fresh processes:

* ``alone``: one run, XLA's defaults;
* ``alone, 1 thread``: one run, XLA's CPU backend held to one thread (``XLA_FLAGS`` below);
* ``two``: two identical runs at once, XLA's defaults;
* ``two, 1 thread``: two at once, each held to one thread;
* ``two, 1 thread, pinned``: two at once, each held to one thread and bound to its own core (``taskset -c i``).

Reported per layout: each run's seconds per sweep and their ratio to ``alone`` (a ratio of 2 on a 2-core machine:
the two runs together do no more work per second than one alone).

Writes ``benchmarks/results/units_sharing.md`` and ``.json`` (or ``--out`` stem).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _bench import RESULTS, toy_kernel, versions, with_reading

ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
"""The XLA flags that hold its CPU backend to one thread."""

LAYOUTS = (("alone", 1, False, False), ("alone, 1 thread", 1, True, False), ("two", 2, False, False),
           ("two, 1 thread", 2, True, False), ("two, 1 thread, pinned", 2, True, True))
"""(name, runs at once, one thread, pinned)."""


def one(activation: str, size: int, chains: int, sweeps: int) -> dict:
    """Seconds per sweep of ``chains`` chains of the toy net (this process's own XLA settings)."""
    import jax
    import jax.numpy as jnp

    import bnnzoo
    from bnnzoo.inference import units as U

    task = bnnzoo.toy_task(P=size, y_neg=-0.5 if activation == "relu" else 0.5)
    with jax.enable_x64(True):
        tries, own, local = U.default_moves(activation)[:3]
        kern = toy_kernel(task, activation, tries=tries, own=own, local=local)
        key = jax.random.PRNGKey(0)
        H = kern.s[None, None, :] * jax.random.normal(key, (chains, kern.N, kern.P), jnp.float64)
        sweep = jax.jit(jax.vmap(lambda H, k: kern.sweep(H, k)[0]))
        H = jax.block_until_ready(sweep(H, jax.random.split(key, chains)))
        t0 = time.perf_counter()
        for t in range(sweeps):
            H = sweep(H, jax.random.split(jax.random.fold_in(key, t), chains))
        jax.block_until_ready(H)
    return dict(s_per_sweep=(time.perf_counter() - t0) / sweeps)


def layout(net: str, chains: int, sweeps: int, runs: int, one_thread: bool, pinned: bool) -> list[float]:
    """Seconds per sweep of each of ``runs`` identical child processes started together."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    if one_thread:
        env["XLA_FLAGS"] = ONE_THREAD
    else:
        env.pop("XLA_FLAGS", None)
    cfg = json.dumps(dict(net=net, chains=chains, sweeps=sweeps))
    procs = []
    for i in range(runs):
        cmd = [sys.executable, __file__, "--one", cfg]
        if pinned:
            cmd = ["taskset", "-c", str(i % os.cpu_count())] + cmd
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    out = []
    for p in procs:
        stdout, stderr = p.communicate()
        lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
        if p.returncode or not lines:
            raise SystemExit(f"a child run failed: {(stderr.strip().splitlines() or ['rc ' + str(p.returncode)])[-1]}")
        out.append(json.loads(lines[-1])["s_per_sweep"])
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nets", default="sigmoid:100,relu:200", help="comma-separated activation:N (sigmoid or relu)")
    p.add_argument("--chains", type=int, default=8)
    p.add_argument("--sweeps", type=int, default=20, help="sweeps timed per run")
    p.add_argument("--out", default=None, help="output stem (default benchmarks/results/units_sharing)")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        cfg = json.loads(args.one)
        act, size = cfg["net"].split(":")
        print(json.dumps(one(act, int(size), cfg["chains"], cfg["sweeps"])), flush=True)
        return
    nets = args.nets.split(",")
    if any(n.split(":")[0] not in ("sigmoid", "relu") or not n.split(":")[-1].isdigit() for n in nets):
        raise SystemExit(f"--nets: each must be sigmoid:N or relu:N, got {args.nets!r}")
    if shutil.which("taskset") is None:
        raise SystemExit("taskset (util-linux) is needed for the pinned layout")
    stem = Path(args.out or RESULTS / "units_sharing")
    rows, t0, load0 = [], time.time(), os.getloadavg()[0]
    for net in nets:
        for name, runs, one_thread, pinned in LAYOUTS:
            s = layout(net, args.chains, args.sweeps, runs, one_thread, pinned)
            rows.append(dict(net=net, layout=name, s_per_sweep=s))
            print(json.dumps(rows[-1]), flush=True)
    total = time.time() - t0
    md = ["# A unit-wise sweep when two runs share the cores\n",
          f"`python benchmarks/units_sharing.py --nets {args.nets} --chains {args.chains} --sweeps {args.sweeps}`\n",
          f"Machine: {os.cpu_count()} CPU cores ({platform.machine()}), load average "
          f"{load0:.1f} before, {os.getloadavg()[0]:.1f} at the end; total {total:.0f} s; "
          + ", ".join(f"{k} {v}" for k, v in versions().items()) + f". Toy task, T = 0.01, {args.chains} chains "
          f"per run from the prior, the sampler's default moves; {args.sweeps} sweeps timed per run after "
          f"compilation and one sweep. One thread: `XLA_FLAGS=\"{ONE_THREAD}\"`; pinned: each run bound to its "
          "own core with `taskset -c i`.\n",
          "| net (N = P) | layout | s per sweep, each run | ratio to alone |", "|---|---|---|---|"]
    for net in nets:
        base = next(r["s_per_sweep"][0] for r in rows if r["net"] == net and r["layout"] == "alone")
        for r in (r for r in rows if r["net"] == net):
            md.append(f"| {net} | {r['layout']} | {' / '.join(f'{s:.3f}' for s in r['s_per_sweep'])} | "
                      f"{' / '.join(f'{s / base:.2f}' for s in r['s_per_sweep'])} |")
    Path(f"{stem}.json").write_text(json.dumps(dict(args=vars(args), rows=rows, total_s=total), indent=1))
    md = with_reading(Path(f"{stem}.md"), md)
    Path(f"{stem}.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
