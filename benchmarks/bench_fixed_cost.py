"""The fixed cost of a small ``bnnzoo.sample`` call (initialisation + compilation before the first draw), against the
bare compile of the batched gradient, side by side in one run.

    python benchmarks/bench_fixed_cost.py --out benchmarks/results/fixed_cost_cpu
    python benchmarks/bench_fixed_cost.py --quick --out /tmp/fc          # smoke run (N = P = 8)
    git worktree add /tmp/old <commit> && python benchmarks/bench_fixed_cost.py --baseline-src /tmp/old/src
                                                                        # adds the same call on an older bnnzoo

The call is the issue's: ``bnnzoo.sample("sigmoidal", toy_task(P=60), width=60, num_chains=4, num_warmup=10,
num_samples=10)`` (SNAPER), and the same with one chain (NUTS).  Every row runs in a fresh process:

* **bare**: ``jax.jit(jax.vmap(jax.value_and_grad(potential)))`` lowered and compiled for the chains (the
  reference: the least a sampler must compile);
* **numpyro init**: NumPyro's ``initialize_model`` for all chains, eager (what ``ChEES.init`` and NumPyro's NUTS ran
  before the jitted initialisation of ``bnnzoo.inference.initialize``);
* **sample, no cache**: ``bnnzoo.sample`` with JAX's persistent compilation cache off: its ``init_s`` and
  ``compile_s`` (``run_config(idata)["engine"]["timing"]``; for NUTS the wall time of the call less sampling is
  not split, so the call's wall time is given) and the call's wall time;
* **sample, cache filled / cache warm**: the same with ``bnnzoo.enable_compilation_cache`` on a fresh folder, in a
  first process (it fills the cache) and a second one (it reads it);
* **second call, same process**: the same call after one with another seed in the same process (no persistent
  cache): the programs compiled by the first call are reused (``bnnzoo.inference.compilation.compile_cached``);
* **baseline** (``--baseline-src``): the same call, no cache, with the ``bnnzoo`` package of another source tree
  first on the import path (e.g. a checkout of the commit before a change), in the same run.

The ratio column is (init + compile) / bare, or for NUTS (run by NumPyro's ``MCMC``, which does not split its time)
the whole call's wall time / bare, an upper bound.  Writes ``PREFIX.md`` and
``PREFIX.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from _bench import run_child


def one(cfg: dict) -> dict:
    t_start = time.perf_counter()
    import jax

    import bnnzoo
    from bnnzoo.tasks import toy_task

    if cfg.get("cache"):
        bnnzoo.enable_compilation_cache(cfg["cache"])
    out_src = str(Path(bnnzoo.__file__).parent)

    task = toy_task(P=cfg["P"])
    t_import = time.perf_counter() - t_start
    out = dict(cfg, import_s=round(t_import, 3), bnnzoo_src=out_src)
    if cfg["what"] in ("bare", "numpyro_init"):
        from jax.flatten_util import ravel_pytree
        from numpyro.infer.initialization import init_to_sample
        from numpyro.infer.util import initialize_model

        e = bnnzoo.get_entry("sigmoidal")
        kw = e.kwargs(width=cfg["N"])
        if e.resolve is not None:
            kw = e.resolve(task.X, kw)
        keys = jax.random.split(jax.random.PRNGKey(0), cfg["chains"])
        t0 = time.perf_counter()
        info, pe_gen, _, _ = initialize_model(keys, e.model, init_strategy=init_to_sample, dynamic_args=True,
                                              model_args=(task.X, task.Y), model_kwargs=kw)
        jax.block_until_ready(info.z)
        if cfg["what"] == "numpyro_init":
            out["seconds"] = round(time.perf_counter() - t0, 3)
            return out
        pe = pe_gen(task.X, task.Y, **kw)
        _, unravel = ravel_pytree(jax.tree.map(lambda v: v[0], info.z))
        x = jax.vmap(lambda t: ravel_pytree(t)[0])(info.z)
        vg = jax.jit(jax.vmap(jax.value_and_grad(lambda v: pe(unravel(v)))))
        t0 = time.perf_counter()
        vg.lower(x).compile()
        out["seconds"] = round(time.perf_counter() - t0, 3)
        return out
    call = dict(width=cfg["N"], num_chains=cfg["chains"], num_warmup=10, num_samples=10, progress=False,
                sampler=cfg["sampler"])
    if cfg.get("repeat"):                  # a first call with another seed compiles the programs in this process
        bnnzoo.sample("sigmoidal", task, seed=1, **call)
    t0 = time.perf_counter()
    idata = bnnzoo.sample("sigmoidal", task, seed=0, **call)
    wall = time.perf_counter() - t0
    timing = bnnzoo.run_config(idata).get("engine", {}).get("timing", {})
    out.update(wall_s=round(wall, 3), init_s=timing.get("init_s"), compile_s=timing.get("compile_s"),
               sampling_s=timing.get("sampling_s"), warmup_s=timing.get("warmup_s"))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="benchmarks/results/fixed_cost_cpu", help="output prefix (.md and .json)")
    ap.add_argument("--quick", action="store_true", help="N = P = 8 (smoke run)")
    ap.add_argument("--baseline-src", help="a bnnzoo source folder (…/src) whose package runs the baseline rows")
    ap.add_argument("--baseline-label", default="baseline", help="what the baseline is (e.g. a commit)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(json.loads(args.one))))
        return 0
    size = 8 if args.quick else 60
    script = str(Path(__file__).resolve())
    t_all = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for sampler, chains in (("snaper", 4), ("nuts", 1)):
            base = dict(N=size, P=size, chains=chains, sampler=sampler)
            bare = run_child(script, dict(base, what="bare"), 600)
            ninit = run_child(script, dict(base, what="numpyro_init"), 600)
            cache = str(Path(tmp) / sampler)
            runs = []
            if args.baseline_src:
                old_path = os.environ.get("PYTHONPATH")
                os.environ["PYTHONPATH"] = args.baseline_src
                try:
                    runs.append(("baseline (" + args.baseline_label + "), no cache",
                                 run_child(script, dict(base, what="sample"), 900)))
                finally:
                    if old_path is None:
                        os.environ.pop("PYTHONPATH")
                    else:
                        os.environ["PYTHONPATH"] = old_path
            runs += [("no cache", run_child(script, dict(base, what="sample"), 900)),
                    ("cache filled", run_child(script, dict(base, what="sample", cache=cache), 900)),
                    ("cache warm", run_child(script, dict(base, what="sample", cache=cache), 900)),
                    ("second call, same process", run_child(script, dict(base, what="sample", repeat=True), 900))]
            rows.append(dict(sampler=sampler, chains=chains, N=size, bare=bare, numpyro_init=ninit, runs=runs))
    import jax
    import numpyro

    cmd = " ".join(["python", "benchmarks/bench_fixed_cost.py"] + (sys.argv[1:] if argv is None else list(argv)))
    head = (f"Generated by `{cmd}` in "
            f"{time.perf_counter() - t_all:.0f} s on {os.cpu_count()} CPU cores ({platform.processor() or 'cpu'}; "
            f"load average at the end {os.getloadavg()[0]:.1f}); device {jax.devices()[0].device_kind}. "
            f"Python {platform.python_version()}, jax {jax.__version__}, numpyro {numpyro.__version__}.")
    lines = ["# Fixed cost of a small `bnnzoo.sample` call", "", head, "",
             "Call: sigmoidal net, toy task, N = P = %d, 10 warm-up + 10 draws (see the script's docstring). "
             "Seconds; ratio = (init + compile) / bare compile (NUTS, run by NumPyro's MCMC, does not split its "
             "time: the whole call's wall time, an upper bound)." % size, "",
             "| sampler | chains | bare grad compile s | NumPyro initialize_model s | run | init s | compile s | "
             "call wall s | ratio |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        b = r["bare"].get("seconds")
        for label, run in r["runs"]:
            if "error" in run:
                lines.append(f"| {r['sampler']} | {r['chains']} | {b} | {r['numpyro_init'].get('seconds')} | "
                             f"{label} | — | — | — | {run['error']} |")
                continue
            if run.get("init_s") is not None:
                fixed = run["init_s"] + run["compile_s"]
                init, comp = f"{run['init_s']:.2f}", f"{run['compile_s']:.2f}"
            else:
                fixed, init, comp = run["wall_s"], "—", "—"
            ratio = f"{fixed / b:.1f}" if b else "—"
            lines.append(f"| {r['sampler']} | {r['chains']} | {b} | {r['numpyro_init'].get('seconds')} | {label} | "
                         f"{init} | {comp} | {run['wall_s']:.2f} | {ratio} |")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{out}.md").write_text("\n".join(lines) + "\n")
    Path(f"{out}.json").write_text(json.dumps(dict(header=head, rows=rows), indent=1) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
