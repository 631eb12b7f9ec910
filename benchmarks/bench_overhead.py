"""Where does ChEES-HMC's time go besides the gradient?  Sampler overhead taken apart, side by side in one run.

    python benchmarks/bench_overhead.py                  # N = P = 100 and 300, three nets, two parametrisations
    python benchmarks/bench_overhead.py --quick          # smoke run (N = P = 8)

The issue's goal is a sampler overhead (sampling time over the bare jitted gradient's time for the same number of
leapfrog steps) of at most 1.3.  ChEES runs every chain through the same number L of leapfrog steps per iteration,
so its time per iteration is  fixed + L × step,  and per kept draw the engine adds the recording of the sites:

    overhead(L) = (fixed + record + L × step) / (L × grad).

This script measures each term for 4 vectorised chains of the toy nets (T = 0.01), compile excluded, best of 3:

* **grad**: the bare jitted value-and-gradient of the potential, batched over the chains (what a leapfrog step calls);
* **step**, **fixed**: ChEES iterations (``bnnzoo.inference.chees.ChEES``, adaptation off) at L = 1 and L = 16
  leapfrog steps inside one jitted loop: step = (t₁₆ − t₁) / 15, fixed = t₁ − step;
* **momentum**: drawing the chains' Gaussian momenta alone (part of *fixed*; the same ``jax.random`` calls);
* **run**: a real ``bnnzoo.sample(..., sampler="chees")`` run (``--warmup`` + ``--samples`` draws, one chunk, the
  preactivations ``z1`` recorded, as in ``bench_sampling.py``): its time per kept draw, its mean L, its overhead
  (over L̄ × grad), and **record** = time per draw − fixed − L̄ × step (the engine's bookkeeping and the recorded
  sites; small negative values are timing noise);
* **L for 1.3**: the trajectory length in leapfrog steps at which overhead(L) would reach 1.3 (— where the step alone
  costs more than 1.3 gradients).

Writes ``benchmarks/results/results_overhead.md`` and ``.json`` (or ``--out`` stem).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from functools import partial
from pathlib import Path

from _bench import best_of, run_child

HERE = Path(__file__).resolve().parent
ACTS = {"linear": ("deep_linear", 0.0), "sigmoid": ("sigmoidal", 0.5), "relu": ("relu", -0.5)}
PARAMS = {"weight space": (), "ro+data": ("readout", "data_space")}
CHAINS = 4


def run(act: str, size: int, param: str, warmup: int, samples: int, loops: int) -> dict:
    import warnings

    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax
    from jax.flatten_util import ravel_pytree

    import bnnzoo
    from bnnzoo import azcompat
    from bnnzoo.inference.chees import ChEES
    from bnnzoo.models import fcn
    from bnnzoo.models.fcn_fast import fcn_fast

    warnings.simplefilter("ignore")
    entry, y_neg = ACTS[act]
    reparam = PARAMS[param]
    task = bnnzoo.toy_task(P=size, y_neg=y_neg, seed=0)
    X, Y = task.X, task.Y

    # the real run first: it also resolves the model's keyword arguments (prior variances) as bnnzoo.sample does
    t0 = time.perf_counter()
    idata = bnnzoo.sample(entry, task, width=size, temperature=0.01, num_chains=CHAINS, num_warmup=warmup,
                          num_samples=samples, seed=0, sampler="chees", reparam=reparam, chunk_size=samples,
                          record=("z1",), progress=False)
    total = time.perf_counter() - t0
    cfg = bnnzoo.run_config(idata)
    timing = cfg["engine"]["timing"]
    steps = np.asarray(azcompat.get_group(idata, "sample_stats")["n_steps"].values)
    kw = dict(cfg["model_kwargs"])
    kw.pop("record", None)
    fn = fcn if not reparam else partial(fcn_fast, integrate_readout=True, data_space=True)

    out = dict(activation=act, size=size, param=param, chains=CHAINS, warmup=warmup, samples=samples,
               run_total_s=total, run_sampling_s=timing["sampling_s"], mean_L=float(steps.mean()),
               divergences=int(np.asarray(azcompat.get_group(idata, "sample_stats")["diverging"].values).sum()))
    keys = jax.random.split(jax.random.PRNGKey(1), CHAINS)
    with jax.default_matmul_precision("highest"):                  # what bnnzoo.sample compiles with
        per_iter = {}
        for L in (1, 16):
            k = ChEES(fn, step_size=1e-4, max_leapfrog_steps=L)    # T capped at L steps: every iteration takes L
            st = k.init(keys, 0, None, (X, Y), kw)                 # num_warmup 0: no adaptation
            st = st._replace(adapt_state=st.adapt_state._replace(log_T=jnp.asarray(30.0, st.grad.dtype)))
            it = jax.jit(lambda s, k=k: lax.fori_loop(0, loops, lambda i, s: k.sample(s, (X, Y), kw), s))
            per_iter[L] = best_of(it, st)[0] / loops
        vg = k._value_and_grad((X, Y), kw)
        x = jax.vmap(lambda t: ravel_pytree(t)[0])(st.z)
        grads = jax.jit(lambda x: lax.fori_loop(0, loops, lambda i, x: x + 1e-9 * vg(x)[1], x))
        t_grad = best_of(grads, x)[0] / loops
        D = x.shape[1]

        def momenta(ks):
            def body(i, c):
                ks, acc = c
                kk = jax.vmap(lambda q: jax.random.split(q, 3))(ks)
                p = jax.vmap(lambda q: jax.random.normal(q, (D,), x.dtype))(kk[:, 0])
                return kk[:, 2], acc + p[:, 0]
            return lax.fori_loop(0, loops, body, (ks, jnp.zeros(CHAINS, x.dtype)))

        t_mom = best_of(jax.jit(momenta), keys)[0] / loops
    step = (per_iter[16] - per_iter[1]) / 15
    fixed = per_iter[1] - step
    per_draw = timing["sampling_s"] / samples
    Lbar = out["mean_L"]
    record = per_draw - fixed - Lbar * step
    target = 1.3 * t_grad - step
    out.update(dim=int(D), grad_us=t_grad * 1e6, step_us=step * 1e6, fixed_us=fixed * 1e6, momentum_us=t_mom * 1e6,
               per_draw_us=per_draw * 1e6, record_us=record * 1e6,
               overhead_run=per_draw / (Lbar * t_grad),
               L_for_1p3=float((fixed + record) / target) if target > 0 else None)
    return out


def _x(num, den):
    return f"{num:.0f} ({num / den:.2f})"


def _markdown(runs, meta) -> str:
    lines = ["# ChEES-HMC sampler overhead, taken apart", "",
             f"Generated by `{meta['command']}` in {meta['wall_s']:.0f} s on {meta['cpus']} CPU cores (load average "
             f"at the end {meta['load_avg'][0]:.1f}); {meta['device']}. Python {meta['python']}, jax {meta['jax']}, "
             f"numpyro {meta['numpyro']}. Toy task, T = 0.01, {CHAINS} vectorised chains, compile excluded, best of "
             "3 (see the script's docstring for the definitions).", "",
             "Columns (µs, and in parentheses as multiples of one bare batched gradient): **grad** the bare jitted "
             "value-and-gradient; **step** one leapfrog step inside ChEES; **fixed** the rest of an iteration "
             "(momentum draw, energies, Metropolis test, loop); **momentum** the Gaussian momentum draw alone; "
             "**record** the engine's per-draw bookkeeping and recorded sites (`z1`, `f`, ...), from a real run; "
             "**L̄** that run's mean leapfrog steps per iteration (tuned by ChEES); **overhead** that run's time per "
             "draw over L̄ × grad; **L for 1.3** the steps per iteration at which (fixed + record + L × step) / "
             "(L × grad) = 1.3.", "",
             "| net | N=P | parametrisation | D | grad µs | step µs (×) | fixed µs (×) | momentum µs (×) | "
             "record µs (×) | L̄ | overhead | L for 1.3 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        if "error" in r:
            lines.append(f"| {r['activation']} | {r['size']} | {r['param']} | failed: {r['error']} |" + " |" * 8)
            continue
        g = r["grad_us"]
        l13 = "—" if r["L_for_1p3"] is None else f"{r['L_for_1p3']:.0f}"
        lines.append(f"| {r['activation']} | {r['size']} | {r['param']} | {r['dim']} | {g:.0f} | "
                     f"{_x(r['step_us'], g)} | {_x(r['fixed_us'], g)} | {_x(r['momentum_us'], g)} | "
                     f"{_x(r['record_us'], g)} | {r['mean_L']:.1f} | {r['overhead_run']:.2f} | {l13} |")
    lines.append("")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--sizes", default="100,300")
    p.add_argument("--activations", default="linear,sigmoid,relu")
    p.add_argument("--params", default=",".join(PARAMS))
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument("--samples", type=int, default=300)
    p.add_argument("--loops", type=int, default=30, help="ChEES iterations per timed loop")
    p.add_argument("--timeout", type=int, default=1200, help="seconds per configuration")
    p.add_argument("--quick", action="store_true", help="tiny smoke run")
    p.add_argument("--out", default=str(HERE / "results" / "results_overhead"), help="output stem (.md and .json)")
    args = p.parse_args(argv)
    if args.one:
        c = json.loads(args.one)
        print(json.dumps(run(c["activation"], c["size"], c["param"], c["warmup"], c["samples"], c["loops"])))
        return 0
    if args.quick:
        args.sizes, args.warmup, args.samples, args.loops = "8", 30, 20, 5
    unknown = [a for a in args.activations.split(",") if a not in ACTS] + \
              [q for q in args.params.split(",") if q not in PARAMS]
    if unknown:
        p.error(f"unknown activation/parametrisation {unknown}; choose from {list(ACTS)} / {list(PARAMS)}")
    t_start = time.time()
    runs = []
    for act in args.activations.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            for param in args.params.split(","):
                r = run_child(__file__, dict(activation=act, size=size, param=param, warmup=args.warmup,
                                             samples=args.samples, loops=args.loops), args.timeout)
                runs.append(r)
                msg = r.get("error") or (f"grad {r['grad_us']:.0f} µs, step {r['step_us'] / r['grad_us']:.2f}x, "
                                         f"fixed {r['fixed_us'] / r['grad_us']:.2f}x, record "
                                         f"{r['record_us'] / r['grad_us']:.2f}x, L {r['mean_L']:.1f}, overhead "
                                         f"{r['overhead_run']:.2f}")
                print(f"[overhead] {act:8s} N=P={size:<4d} {param:13s} {msg}", flush=True)
    import jax
    import numpyro

    meta = dict(command=" ".join(["python", "benchmarks/bench_overhead.py"] + list(sys.argv[1:] if argv is None
                                                                               else argv)),
                python=platform.python_version(), cpus=os.cpu_count(), load_avg=os.getloadavg(),
                wall_s=round(time.time() - t_start, 1), jax=jax.__version__, numpyro=numpyro.__version__,
                device="CPU only" if jax.devices()[0].platform == "cpu" else f"JAX device {jax.devices()[0]}")
    Path(args.out + ".json").write_text(json.dumps(dict(meta=meta, runs=runs), indent=1))
    Path(args.out + ".md").write_text(_markdown(runs, meta))
    print(f"[overhead] wrote {args.out}.md and .json ({meta['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
