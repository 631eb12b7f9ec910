"""The trajectory loop of SNAPER / ChEES on one device: leapfrog steps per loop iteration (``ChEES._leapfrog``'s
``unroll``) against the time per gradient, side by side in one run.

    python benchmarks/bench_leapfrog_loop.py --out benchmarks/results/leapfrog_loop_gpu     # N = P = 500, 64 chains
    python benchmarks/bench_leapfrog_loop.py --size cpu --out benchmarks/results/leapfrog_loop_cpu  # N = P = 100, 4
    python benchmarks/bench_leapfrog_loop.py --size ci --out /tmp/ll                         # N = P = 20, 4 chains

A trajectory's length is only known on the device (it is tuned), so the leapfrog steps run in a loop whose trip
count is traced; on a GPU each iteration of such a loop waits for the device to report the loop's condition
before the host launches the next one.  Every variant runs the sigmoidal net's batched potential (the model
``bnnzoo.sample`` runs; ``gpu_check.py``'s net) through ``ChEES._leapfrog`` over the same 20 trajectories of
30–56 steps (the lengths SNAPER tuned at N = P = 500), compiled with bnnzoo's XLA options:

* ``unroll`` k = 1, 2, 4, 8: k leapfrog steps per loop iteration, the steps past a trajectory's end discarded;
* **static**: the same steps with the trip count known when compiling (the batched-gradient ceiling's loop);
* **k = 1, XLA command buffers for loops** (GPU only): XLA's option to run ``while`` loops as CUDA graph
  conditionals on the device (``xla_gpu_enable_command_buffer``), when this XLA accepts it.

Gradients per second count the trajectories' steps (the discarded ones not), best of 3 runs after a warm-up run.
Writes ``OUT.md`` and ``OUT.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

SIZES = {"paper": dict(N=500, P=500, chains=64), "cpu": dict(N=100, P=100, chains=4), "ci": dict(N=20, P=20, chains=4)}
LENGTHS = [43, 30, 56, 38, 47, 33, 52, 41, 36, 49, 44, 31, 55, 39, 46, 34, 51, 42, 37, 48]
CMD_BUFFER = {"xla_gpu_enable_command_buffer": "FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,CONDITIONAL,WHILE"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="paper")
    ap.add_argument("--out", default="benchmarks/results/leapfrog_loop")
    args = ap.parse_args(argv)
    cfg = SIZES[args.size]
    t_all = time.perf_counter()

    import jax
    import jax.numpy as jnp
    import numpyro
    from jax.flatten_util import ravel_pytree

    import bnnzoo
    from bnnzoo.inference.chees import ChEES
    from bnnzoo.inference.compilation import compiler_options
    from bnnzoo.inference.initialize import model_functions

    jax.config.update("jax_default_matmul_precision", "highest")      # as bnnzoo.sample runs
    task = bnnzoo.toy_task(P=cfg["P"])
    e = bnnzoo.get_entry("sigmoidal")
    kw = e.kwargs(width=cfg["N"])
    if e.resolve is not None:
        kw = e.resolve(task.X, kw)
    fns = model_functions(e.model, (task.X, task.Y), kw)
    pe = fns.potential_gen(task.X, task.Y, **kw)
    flat0, unravel = ravel_pytree(fns.prototype)
    vg = jax.vmap(jax.value_and_grad(lambda v: pe(unravel(v))))
    C = cfg["chains"]
    x0 = 0.1 * jax.random.normal(jax.random.PRNGKey(0), (C, flat0.size), flat0.dtype)
    u0, g0 = jax.jit(vg)(x0)
    lengths = jnp.asarray(LENGTHS, jnp.int32)
    eps, inv_mass = jnp.asarray(1e-4, x0.dtype), jnp.ones(flat0.size, x0.dtype)
    gpu = jax.default_backend() == "gpu"

    def program(unroll, static=False):
        def run(x, g, ns):
            def draw(c, n):
                x, g = c
                if static:      # the trip count a Python int: known when compiling
                    x1, p1, g1, u1 = jax.lax.fori_loop(0, LENGTHS[0], lambda _, s: _one(s),
                                                       (x, -x, g, jnp.zeros(C, x.dtype)))
                else:
                    x1, p1, g1, u1 = ChEES._leapfrog(vg, x, -x, g, eps, inv_mass, n, unroll)
                return (x1, g1), jnp.sum(u1)
            return jax.lax.scan(draw, (x, g), ns)
        return run

    def _one(c):
        x, p, g, _u = c
        p = p - 0.5 * eps * g
        x = x + eps * inv_mass * p
        u, g = vg(x)
        return x, p - 0.5 * eps * g, g, u

    variants = [(f"unroll {k}", program(k), {}) for k in (1, 2, 4, 8)]
    variants.append(("static trip count", program(1, static=True), {}))
    if gpu:
        variants.append(("unroll 1, command buffers for loops", program(1), CMD_BUFFER))
    rows = []
    for name, fn, extra in variants:
        ns = jnp.full_like(lengths, LENGTHS[0]) if name.startswith("static") else lengths
        steps = int(ns.sum()) * C
        try:
            t0 = time.perf_counter()
            comp = jax.jit(fn).lower(x0, g0, ns).compile(dict(compiler_options(), **extra) or None)
            compile_s = time.perf_counter() - t0
            jax.block_until_ready(comp(x0, g0, ns))
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                jax.block_until_ready(comp(x0, g0, ns))
                best = min(best, time.perf_counter() - t0)
            rows.append(dict(variant=name, compile_s=round(compile_s, 3), seconds=round(best, 4),
                             grads_per_s=round(steps / best, 1), ms_per_step=round(1e3 * best / (steps / C), 4)))
        except Exception as err:   # an option this XLA does not know: say so, go on
            rows.append(dict(variant=name, error=f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"))
        print(rows[-1], flush=True)

    dev = jax.devices()[0]
    res = dict(config=dict(cfg, size=args.size, lengths=LENGTHS), device=f"{dev.platform}: {dev.device_kind}",
               python=platform.python_version(),
               versions=f"jax {jax.__version__}, numpyro {numpyro.__version__}", rows=rows,
               seconds=round(time.perf_counter() - t_all, 1))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{out}.json").write_text(json.dumps(res, indent=1) + "\n")
    base = next((r for r in rows if r["variant"] == "unroll 1" and "error" not in r), None)
    lines = [f"# SNAPER's trajectory loop: leapfrog steps per loop iteration ({res['device']})", "",
             f"Generated by `python benchmarks/bench_leapfrog_loop.py --size {args.size} --out {args.out}` in "
             f"{res['seconds']} s. Python {res['python']}, {res['versions']}. Sigmoidal net, toy task, N = P = "
             f"{cfg['N']}, {C} chains, float32, matmul precision 'highest'; 20 trajectories of 30–56 leapfrog steps "
             f"({sum(LENGTHS)} in all; the static loop: 20 × {LENGTHS[0]}).", "",
             "| variant | compile s | seconds | gradients/s | ms per batched step | vs unroll 1 |", "|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['variant']} | — | — | — | — | not compiled: {r['error']} |")
            continue
        rel = f"{r['grads_per_s'] / base['grads_per_s']:.2f}×" if base else "—"
        lines.append(f"| {r['variant']} | {r['compile_s']} | {r['seconds']} | {r['grads_per_s']:.0f} | "
                     f"{r['ms_per_step']} | {rel} |")
    Path(f"{out}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
