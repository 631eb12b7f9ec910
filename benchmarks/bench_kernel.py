"""Is a leaner NUTS kernel worth it?  NumPyro's NUTS kernel against BlackJAX's on the same potential, side by side.

    pip install -e '.[bench]'           # BlackJAX (only this benchmark needs it)
    python benchmarks/bench_kernel.py   # N = P = 100, linear / sigmoid / ReLU, weight space and ro+data: ~5 min

For each toy net and parametrisation (weight space = the baseline model; ``ro+data`` = readout integrated out and first
layer in data space, ``bnnzoo.models.fcn_fast``), one chain: NumPyro's NUTS warms up (step size and diagonal mass
matrix); then both kernels start from the same adapted state with the same step size and inverse mass matrix and take
``--draws`` transitions inside one jitted ``lax.scan`` (compilation excluded).  Trajectories differ (different random
momenta), so the figure of merit is the time per leapfrog step, and the overhead = time per step / one bare jitted
gradient of the same potential.  Writes ``benchmarks/results_kernel.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
ACTS = {"linear": 0.0, "sigmoid": 0.5, "relu": -0.5}


def _best_of(fn, *args, repeats=3):
    import jax

    jax.block_until_ready(fn(*args))
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return best, out


def run(act: str, size: int, param: str, draws: int, warmup: int) -> dict:
    import blackjax
    import jax
    import numpy as np
    from jax.flatten_util import ravel_pytree
    from numpyro.infer import NUTS
    from numpyro.infer.util import initialize_model

    import bnnzoo
    from bnnzoo.models import fcn
    from bnnzoo.models.fcn_fast import fcn_fast

    task = bnnzoo.toy_task(P=size, y_neg=ACTS[act], seed=0)
    kw = dict(width=size, depth=1, activation=act, temperature=0.01)
    fn = fcn if param == "weight space" else partial(fcn_fast, integrate_readout=True, data_space=True)
    info = initialize_model(jax.random.PRNGKey(0), fn, model_args=(task.X, task.Y), model_kwargs=kw)
    pe = info.potential_fn
    grad = jax.grad(pe)

    @jax.jit
    def grads(z):
        return jax.lax.fori_loop(0, 100, lambda i, z: jax.tree.map(lambda a, b: a + 1e-9 * b, z, grad(z)), z)

    t_grad = _best_of(grads, info.param_info.z)[0] / 100

    nuts = NUTS(potential_fn=pe)
    state = nuts.init(jax.random.PRNGKey(1), warmup, info.param_info.z, model_args=(), model_kwargs={})
    warm = jax.jit(lambda s: jax.lax.fori_loop(0, warmup, lambda i, s: nuts.sample(s, (), {}), s))
    state = warm(state)
    # NumPyro's kernel past warm-up: adaptation is off once state.i >= num_warmup
    def np_body(s, _):
        s = nuts.sample(s, (), {})
        return s, s.num_steps

    np_scan = jax.jit(lambda s: jax.lax.scan(np_body, s, None, length=draws))
    t_np, (_, steps) = _best_of(np_scan, state)
    steps_np = int(np.asarray(steps).sum())

    flat, unravel = ravel_pytree(state.z)
    imm = state.adapt_state.inverse_mass_matrix
    imm = next(iter(imm.values())) if isinstance(imm, dict) else imm
    kern = blackjax.nuts(lambda x: -pe(unravel(x)), step_size=float(state.adapt_state.step_size),
                         inverse_mass_matrix=imm)
    bj_state = kern.init(flat)

    def bj_body(s, k):
        s, i = kern.step(k, s)
        return s, i.num_integration_steps

    bj_scan = jax.jit(lambda s, key: jax.lax.scan(bj_body, s, jax.random.split(key, draws)))
    t_bj, (_, steps) = _best_of(bj_scan, bj_state, jax.random.PRNGKey(2))
    steps_bj = int(np.asarray(steps).sum())
    return dict(net=act, size=size, param=param, t_grad_us=t_grad * 1e6, step_size=float(state.adapt_state.step_size),
                numpyro_us=t_np / steps_np * 1e6, blackjax_us=t_bj / steps_bj * 1e6,
                numpyro_steps=steps_np / draws, blackjax_steps=steps_bj / draws)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--draws", type=int, default=200)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--activations", default="linear,sigmoid,relu")
    p.add_argument("--out", default=str(HERE / "results_kernel.md"))
    args = p.parse_args(argv)
    try:
        import blackjax
    except ImportError:
        sys.exit("bench_kernel.py needs BlackJAX: pip install -e '.[bench]'")
    import jax
    import numpyro

    t0 = time.time()
    rows = []
    for act in args.activations.split(","):
        for param in ("weight space", "ro+data"):
            r = run(act, args.size, param, args.draws, args.warmup)
            rows.append(r)
            print(f"[kernel] {act:8s} {param:12s} per leapfrog step: NumPyro {r['numpyro_us']:.0f} us, BlackJAX "
                  f"{r['blackjax_us']:.0f} us, bare gradient {r['t_grad_us']:.0f} us", flush=True)
    lines = ["# NUTS kernel: NumPyro vs BlackJAX", "",
             f"Generated by `python benchmarks/bench_kernel.py{' ' + ' '.join(sys.argv[1:]) if argv is None else ''}` "
             f"in {time.time() - t0:.0f} s on {os.cpu_count()} CPU cores (load average at the end "
             f"{os.getloadavg()[0]:.1f}); CPU only. Python {platform.python_version()}, jax {jax.__version__}, "
             f"numpyro {numpyro.__version__}, blackjax {blackjax.__version__}. Toy task, T = 0.01, N = P = "
             f"{args.size}, one chain, {args.warmup} NumPyro warm-up steps, then {args.draws} transitions of each "
             "kernel from the same adapted state (same step size and diagonal inverse mass matrix), compile excluded.",
             "", "Columns: microseconds per leapfrog step of each kernel; **overhead** = that time over one bare "
             "jitted gradient of the same potential; steps/draw of each kernel (different momenta, so different "
             "trees).", "",
             "| net | parametrisation | bare gradient µs | NumPyro µs/step (overhead) | BlackJAX µs/step (overhead) | "
             "BlackJAX / NumPyro time per step | steps/draw NumPyro / BlackJAX |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['net']} | {r['param']} | {r['t_grad_us']:.0f} | {r['numpyro_us']:.0f} "
                     f"({r['numpyro_us'] / r['t_grad_us']:.2f}) | {r['blackjax_us']:.0f} "
                     f"({r['blackjax_us'] / r['t_grad_us']:.2f}) | {r['blackjax_us'] / r['numpyro_us']:.2f} | "
                     f"{r['numpyro_steps']:.0f} / {r['blackjax_steps']:.0f} |")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"[kernel] wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
