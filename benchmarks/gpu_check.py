"""What one accelerator gives bnnzoo at the paper's size, in one result file (run by ``benchmarks/gpu_check.sh``).

    SIZE=paper bash benchmarks/gpu_check.sh     # sigmoidal N = P = 500 (Fig. 2's size): at most 11.5 min on one GPU
    SIZE=ci bash benchmarks/gpu_check.sh        # N = P = 20 on a CPU in a few minutes (tests/perf/test_gpu_check.py)

Parts, each with its own time limit (a part that runs out says so in the file): parts 1–3 at most 9 minutes
together, part 4 at most 2.5 minutes; where one device command may run 10 minutes, run them as two calls with
``--parts ceiling,samplers,cli`` and ``--parts precision`` (each writes its own ``--out``):

1. **Ceiling**: the jitted, batched value-and-gradient of the sigmoidal net's potential (the model bnnzoo samples),
   against the number of chains: gradients per second (10 batched calls inside one jitted loop, 100 at ``ci``, best
   of 3) and the matmul FLOP rate, FLOPs per gradient counted from the jaxpr's matrix products (``_bench.matmul_flops``; XLA's
   cost analysis misses the matmuls it hands to a library), at the default matmul precision ("highest"); at 64
   chains (4 at ``ci``) compiled with and without XLA's autotuning of matrix products (compile seconds against
   gradients per second).
2. **Samplers**: ``bnnzoo.sample`` with the default sampler (SNAPER; on a GPU also with XLA's default autotuning
   and Triton products, ``BNNZOO_XLA_TUNING=1``) and with NUTS at 64 chains (4 at ``ci``), default recording, each
   in a fresh process (``--samplers`` picks them): init, compile, warm-up and sampling seconds (the engine's ``timing``), the XLA compilations of the call
   (``jax.monitoring``) and gradients per second while sampling (leapfrog steps of all chains / sampling seconds),
   and that as a fraction of the ceiling at the same number of chains.
3. **Call to report**: the wall seconds of ``bnnzoo sample sigmoidal --width N --P P --out run.nc`` (its defaults
   otherwise: the device's default number of chains, the streamed summaries) and then ``bnnzoo diagnose run.nc
   --figures DIR``, with the sample's last log lines and the diagnosis's own timings.
4. **Precision on the observables**: the sigmoidal net at N = P = 100 (20 at ``ci``), sampled with the same seed and
   settings at matmul precision "highest" (float32 products), "tensorfloat32" and "bfloat16" (not at ``ci``: a CPU
   computes all three alike), and in float64
   (``JAX_ENABLE_X64=1``), each in a fresh process, the four side by side: every verdict of ``bnnzoo.diagnose`` and the population
   observables (q_a, training error, the code masses of the mean-field comparison, branch masses) against float64.
5. **Profile** (``--parts profile``, not in the default parts): SNAPER's call at 64 chains traced by JAX's profiler
   after an identical call has compiled: device busy time against its span, matrix products against the rest, the
   longest kernels.

The device is named from JAX (``jax.devices()[0]``), whatever finished.  Writes ``OUT.md`` and ``OUT.json`` after
every part.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench import matmul_flops, run_child

SIZES = {
    "paper": dict(N=500, P=500, ceiling_chains=[1, 8, 64, 256, 1024], chains=64, warmup=150, samples=50,
                  nuts_warmup=20, nuts_samples=10, loop=10, prec_N=100, prec_warmup=200, prec_samples=100,
                  autotune_chains=[64],
                  prof_warmup=20, prof_samples=10,
                  limits=dict(ceiling=100, snaper=120, nuts=60, cli_sample=170, cli_diagnose=120, precision=150,
                              profile=120)),
    "ci": dict(N=20, P=20, ceiling_chains=[1, 4], chains=4, warmup=20, samples=20, nuts_warmup=10, nuts_samples=10,
               loop=100, prec_N=20, prec_warmup=30, prec_samples=20, precisions=["float64", "highest"],
               autotune_chains=[4], prof_warmup=10, prof_samples=5,
               limits=dict(ceiling=200, snaper=200, nuts=200, cli_sample=200, cli_diagnose=200, precision=200,
                           profile=200)),
}


def _net(N, P):
    import bnnzoo
    from bnnzoo.inference.initialize import model_functions

    task = bnnzoo.toy_task(P=P)
    e = bnnzoo.get_entry("sigmoidal")
    kw = e.kwargs(width=N)
    if e.resolve is not None:
        kw = e.resolve(task.X, kw)
    return task, e, kw, model_functions(e.model, (task.X, task.Y), kw)


def ceiling(cfg: dict) -> dict:
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    jax.config.update("jax_default_matmul_precision", "highest")      # as bnnzoo.sample runs
    task, e, kw, fns = _net(cfg["N"], cfg["P"])
    pe = fns.potential_gen(task.X, task.Y, **kw)
    flat0, unravel = ravel_pytree(fns.prototype)
    one = jax.value_and_grad(lambda v: pe(unravel(v)))
    flops = matmul_flops(one, flat0)
    rows = []
    for C in cfg["ceiling_chains"]:
        x = 0.1 * jax.random.normal(jax.random.PRNGKey(C), (C, flat0.size), flat0.dtype)

        n = cfg["loop"]

        def ten(x):
            def body(_, c):
                x, acc = c
                u, g = jax.vmap(one)(x)
                return x + 1e-6 * g, acc + jnp.sum(u)
            return jax.lax.fori_loop(0, n, body, (x, jnp.zeros((), x.dtype)))

        for autotune in ([True, False] if C in cfg["autotune_chains"] else [True]):
            t0 = time.perf_counter()
            f = jax.jit(ten).lower(x).compile(None if autotune else {"xla_gpu_autotune_level": 0})
            compile_s = time.perf_counter() - t0
            jax.block_until_ready(f(x))
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                jax.block_until_ready(f(x))
                best = min(best, time.perf_counter() - t0)
            gps = n * C / best
            rows.append(dict(chains=C, autotune=autotune, compile_s=round(compile_s, 3), grads_per_s=round(gps, 1),
                             tflops=round(gps * flops / 1e12, 3)))
    return dict(flops_per_grad=flops, dim=int(flat0.size), rows=rows)


def sampler(cfg: dict) -> dict:
    import numpy as np

    import bnnzoo

    import jax

    compiles: list = []

    def listen(event, seconds, **_):
        if event.endswith("backend_compile_duration"):
            compiles.append(seconds)

    jax.monitoring.register_event_duration_secs_listener(listen)
    task, e, kw, _ = _net(cfg["N"], cfg["P"])
    t0 = time.perf_counter()
    idata = bnnzoo.sample("sigmoidal", task, width=cfg["N"], num_chains=cfg["chains"], num_warmup=cfg["warmup"],
                          num_samples=cfg["samples"], sampler=cfg["sampler"], chunk_size=cfg["samples"],
                          progress=False)
    wall = time.perf_counter() - t0
    timing = bnnzoo.run_config(idata)["engine"]["timing"]
    steps = float(np.asarray(idata.sample_stats["n_steps"]).sum())
    return dict(sampler=cfg["sampler"], chains=cfg["chains"], wall_s=round(wall, 2),
                **{k: round(float(timing[k]), 2) for k in ("init_s", "compile_s", "warmup_s", "sampling_s")},
                grads_per_s=round(steps / max(timing["sampling_s"], 1e-9), 1),
                xla_tuning=bool(os.environ.get("BNNZOO_XLA_TUNING")), backend_compiles=len(compiles),
                backend_compile_s=round(sum(compiles), 2),
                largest_compiles_s=[round(x, 2) for x in sorted(compiles, reverse=True)[:3]])


_GEMM = ("gemm", "xmma", "cutlass", "cublas", "matmul")


def trace_summary(path: str, top: int = 15) -> dict:
    """Kernel time from a JAX profiler trace (``perfetto_trace.json.gz``): per device thread (stream) the busy
    milliseconds, and the longest kernels by total time, matrix products (cuBLAS / CUTLASS names) apart from the rest;
    per execution of an XLA program (the device's "XLA Modules" line) its span, busy time and copies; and the
    kernels grouped by the XLA instruction that launched them (the "XLA Ops" line), to be read against the program's
    HLO. A trace with no accelerator process (a CPU run) gives ``{"device_events": 0}``."""
    import bisect
    import gzip

    with gzip.open(path, "rt") as fh:
        d = json.load(fh)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    pname = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
    tname = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    dev = {p for p, n in pname.items() if "GPU" in n or "TPU" in n or "/device:" in n}
    line = lambda e: f"{pname[e['pid']]} / {tname.get((e['pid'], e.get('tid')), e.get('tid'))}"  # noqa: E731
    xs = [e for e in ev if e.get("ph") == "X" and e.get("pid") in dev]
    threads: dict = {}
    for e in xs:
        ms, n = threads.get(line(e), (0.0, 0))
        threads[line(e)] = (ms + float(e.get("dur", 0.0)) / 1e3, n + 1)
    streams = {k for k in threads if "stream" in k.lower()} or set(threads)
    kern = [e for e in xs if line(e) in streams]
    if not kern:
        return {"device_events": 0}
    end = lambda e: float(e["ts"]) + float(e.get("dur", 0.0))  # noqa: E731
    is_gemm = lambda name: any(g in name.lower() for g in _GEMM)  # noqa: E731
    by_name: dict = {}
    for e in kern:
        ms, n = by_name.get(e["name"], (0.0, 0))
        by_name[e["name"]] = (ms + float(e.get("dur", 0.0)) / 1e3, n + 1)
    out = dict(device_events=len(kern), busy_ms=round(sum(ms for ms, _ in by_name.values()), 1),
               span_ms=round((max(map(end, kern)) - min(float(e["ts"]) for e in kern)) / 1e3, 1),
               gemm_ms=round(sum(ms for k, (ms, _) in by_name.items() if is_gemm(k)), 1),
               threads={k: [round(ms, 1), n] for k, (ms, n) in sorted(threads.items(), key=lambda t: -t[1][0])[:8]},
               kernels=[[k[:90], round(ms, 2), n] for k, (ms, n) in
                        sorted(by_name.items(), key=lambda t: -t[1][0])[:top]])
    # each kernel under the XLA instruction and the program execution around it (by time, on the same device)
    def spans(word):
        sp = sorted((float(e["ts"]), end(e), e["name"]) for e in xs if line(e).endswith(word))
        return sp, [t for t, _, _ in sp]

    mods, mod_ts = spans("XLA Modules")
    ops, op_ts = spans("XLA Ops")

    def around(sp, ts, t):
        i = bisect.bisect_right(ts, t) - 1
        return sp[i] if i >= 0 and sp[i][0] <= t <= sp[i][1] else None

    if mods:
        execs: dict = {}
        for e in kern:
            m = around(mods, mod_ts, float(e["ts"]))
            if m is None:
                continue
            x = execs.setdefault(m, dict(busy=0.0, copy=0.0, ops={}))
            dur = float(e.get("dur", 0.0)) / 1e3
            x["busy"] += dur
            x["copy"] += dur if e["name"].startswith("Memcpy") else 0.0
            o = around(ops, op_ts, float(e["ts"]))
            key = (o[2] if o else "(no op)") + " · " + e["name"][:50]
            ms, n = x["ops"].get(key, (0.0, 0))
            x["ops"][key] = (ms + dur, n + 1)
        rows = sorted(execs.items(), key=lambda t: t[0][0])
        out["executions"] = [dict(program=m[2][:60], index=i, span_ms=round((m[1] - m[0]) / 1e3, 1),
                                  busy_ms=round(x["busy"], 1), memcpy_ms=round(x["copy"], 1))
                             for i, (m, x) in enumerate(rows)]
        longest = max(rows, key=lambda t: t[0][1] - t[0][0])
        out["longest_execution_ops"] = [[k, round(ms, 2), n] for k, (ms, n) in
                                        sorted(longest[1]["ops"].items(), key=lambda t: -t[1][0])[:top]]
    return out


def profile(cfg: dict) -> dict:
    """SNAPER's whole call, traced by JAX's profiler after an identical call has compiled its programs: where the
    device's time goes (matrix products against the rest, and idle time: the span against the busy sum)."""
    import glob

    import numpy as np

    import bnnzoo

    import jax

    task, e, kw, _ = _net(cfg["N"], cfg["P"])
    args = dict(width=cfg["N"], num_chains=cfg["chains"], num_warmup=cfg["prof_warmup"],
                num_samples=cfg["prof_samples"], sampler="snaper", chunk_size=cfg["prof_samples"], progress=False)
    bnnzoo.sample("sigmoidal", task, **args)
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        opts = jax.profiler.ProfileOptions()
        opts.python_tracer_level = 0          # Python's calls are not traced (they slowed the call tenfold)
        with jax.profiler.trace(d, create_perfetto_trace=True, profiler_options=opts):
            idata = bnnzoo.sample("sigmoidal", task, seed=1, **args)
        wall = time.perf_counter() - t0
        files = glob.glob(f"{d}/**/perfetto_trace.json.gz", recursive=True)
        summary = trace_summary(files[0]) if files else {"error": "the profiler wrote no perfetto trace"}
    if cfg.get("hlo_dir"):                # the programs' optimised HLO, to read the copies against
        from bnnzoo.inference import compilation

        for i, prog in enumerate(compilation._COMPILED.values()):
            text = prog.as_text()
            name = text.split(None, 2)[1].rstrip(",") if text.startswith("HloModule") else f"program{i}"
            Path(cfg["hlo_dir"], f"hlo_{i}_{name}.txt").write_text(text)
    timing = bnnzoo.run_config(idata)["engine"]["timing"]
    ss = idata.sample_stats
    steps = float(np.asarray(ss["n_steps"]).sum())
    try:
        warm_steps = float(np.asarray(idata.warmup_sample_stats["n_steps"]).sum())
    except (AttributeError, KeyError):
        warm_steps = float("nan")
    return dict(wall_s=round(wall, 2), **{k: round(float(timing[k]), 2) for k in timing},
                steps_sampling=steps, steps_warmup=warm_steps, **summary)


PRECISIONS = ("float64", "highest", "tensorfloat32", "bfloat16")


def precision(cfg: dict) -> dict:
    """One precision's run and its report (part 4)."""
    import warnings

    import numpy as np

    import bnnzoo

    warnings.simplefilter("ignore")
    N = cfg["prec_N"]
    task = bnnzoo.toy_task(P=N)
    t0 = time.perf_counter()
    idata = bnnzoo.sample("sigmoidal", task, width=N, num_chains=cfg["chains"], num_warmup=cfg["prec_warmup"],
                          num_samples=cfg["prec_samples"], progress=False, seed=0,
                          matmul_precision="highest" if cfg["precision"] == "float64" else cfg["precision"])
    wall = time.perf_counter() - t0
    rep = bnnzoo.diagnose(idata)
    post = idata.posterior
    th = rep.theory
    masses = {a.quantity: round(float(a.sampled), 4) for a in (th.agreements if th is not None else [])
              if a.quantity.startswith("mass[")}
    return dict(precision=cfg["precision"], dtype=str(post["a"].dtype), wall_s=round(wall, 1),
                health=rep.health.status if rep.health is not None else "n/a",
                verdicts=dict(rep.verdicts), q_a=[round(float(x), 4) for x in post["q_a"].mean(("chain", "draw"))],
                mse=float(post["mse"].mean()), code_masses=masses,
                branch_masses=[round(float(x), 4) for x in rep.numbers.get("branch_masses", [])],
                max_rhat_q_a=float(np.nanmax(bnnzoo.azcompat.rhat(post[["q_a"]])["q_a"].values)))


def one(cfg: dict) -> dict:
    import jax

    out = dict(device=f"{jax.devices()[0].platform}: {jax.devices()[0].device_kind}", n_devices=jax.device_count())
    part = {"ceiling": ceiling, "sampler": sampler, "precision": precision, "profile": profile}[cfg["part"]]
    out.update(part(cfg))
    return out


def cli(cfg: dict, tmp: Path, timeouts: tuple[int, int]) -> dict:
    """Part 3: ``bnnzoo sample`` then ``bnnzoo diagnose``, each under its own limit (``timeouts``), so that a slow
    sample still leaves the report timed."""
    run = tmp / "run.nc"
    exe = [sys.executable, "-m", "bnnzoo.cli"]
    extra = [] if cfg["size"] == "paper" else ["--warmup", str(cfg["warmup"]), "--samples", str(cfg["samples"])]
    cmd_s = exe + ["sample", "sigmoidal", "--width", str(cfg["N"]), "--P", str(cfg["P"]), "--out", str(run)] + extra
    cmd_d = exe + ["diagnose", str(run), "--figures", str(tmp / "figures")]
    out = dict(command=" ".join(["bnnzoo"] + cmd_s[3:]) + " && " + " ".join(["bnnzoo"] + cmd_d[3:]))
    t0 = time.perf_counter()
    for (name, cmd), limit in zip((("sample_s", cmd_s), ("diagnose_s", cmd_d)), timeouts):
        t1 = time.perf_counter()
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            out["error"] = f"{name[:-2]} ran past its {limit} s limit"
            return out
        if res.returncode != 0:
            out["error"] = f"{name[:-2]}: " + (res.stderr.strip().splitlines() or [f"rc {res.returncode}"])[-1]
            return out
        out[name] = round(time.perf_counter() - t1, 2)
        if name == "sample_s":       # its progress and "wrote" lines: where the seconds went
            out["sample_log"] = [ln for ln in res.stderr.splitlines() if ln.strip()][-12:]
        if name == "diagnose_s":
            lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
            out["verdicts"] = lines[:12]
            out["diagnose_timings"] = next((ln.strip() for ln in lines if "timings:" in ln), "")
    out["total_s"] = round(time.perf_counter() - t0, 2)
    return out


def render(res: dict) -> str:
    c = res["config"]
    command = res.get("command") or f"`SIZE={c['size']} bash benchmarks/gpu_check.sh`"
    lines = [f"# bnnzoo on one accelerator: {res.get('device', 'device not reached')}", "",
             f"Generated by {command} in {res.get('seconds', 0):.0f} s. "
             f"Python {res.get('python', platform.python_version())}, {res.get('versions', '')}. Sigmoidal net, toy task, "
             f"N = P = {c['N']}, T = 0.01, float32, matmul precision 'highest'.", ""]
    ce = res.get("ceiling", {})
    if ce:
        lines += ["## 1. Batched-gradient ceiling", ""]
    if "error" in ce:
        lines += [f"Not measured: {ce['error']}.", ""]
    elif ce:
        lines += [f"FLOPs per gradient by the matmul count: {ce['flops_per_grad'] / 1e9:.4f} GFLOP (D = {ce['dim']}).",
                  "", "| chains | XLA autotuning | compile s | gradients/s | TFLOP/s |", "|---|---|---|---|---|"]
        lines += [f"| {r['chains']} | {'on' if r.get('autotune', True) else 'off'} | {r['compile_s']} | "
                  f"{r['grads_per_s']:.0f} | {r['tflops']:.3f} |" for r in ce["rows"]]
        lines.append("")
    lines += [] if not res.get("samplers") else ["## 2. Samplers", "", "XLA: on a GPU bnnzoo compiles its programs without autotuning and with "
              "products on cuBLAS (`bnnzoo.inference.compilation.compiler_options`); \"XLA's tuning\" is the run "
              "with `BNNZOO_XLA_TUNING=1` (XLA's defaults). Backend compiles: XLA "
              "compilations in the call (count, seconds, the three longest). The ceiling is part 1's best rate at "
              "the same number of chains.", "",
              "| sampler | chains | XLA | warm-up + draws | init s | compile s | warm-up s | sampling s | "
              "call wall s | backend compiles | gradients/s | of the ceiling |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    ceil: dict = {}
    for r in ce.get("rows", []):
        ceil[r["chains"]] = max(ceil.get(r["chains"], 0.0), r["grads_per_s"])
    for s in res.get("samplers", []):
        wd = f"{s.get('warmup')} + {s.get('samples')}"
        tune = ("XLA's tuning" if s.get("xla_tuning") else "bnnzoo's" if str(res.get("device", "")).startswith("gpu")
                else "— (CPU)")
        if "error" in s:
            lines.append(f"| {s['sampler']} | {s['chains']} | {tune} | {wd} | — | — | — | — | — | — | — | "
                         f"{s['error']} |")
            continue
        frac = f"{s['grads_per_s'] / ceil[s['chains']]:.0%}" if s["chains"] in ceil else "—"
        bc = f"{s.get('backend_compiles', '—')}: {s.get('backend_compile_s', '—')} s ({s.get('largest_compiles_s')})"
        lines.append(f"| {s['sampler']} | {s['chains']} | {tune} | {wd} | {s['init_s']} | {s['compile_s']} | "
                     f"{s['warmup_s']} | {s['sampling_s']} | {s['wall_s']} | {bc} | {s['grads_per_s']:.0f} | "
                     f"{frac} |")
    cl = res.get("cli")
    if cl:
        lines += ["", "## 3. From the command line to a report", "", f"`{cl['command']}`", ""]
        lines += ([f"Not finished: {cl['error']}" + (f" (sample took {cl['sample_s']} s)." if "sample_s" in cl
                                                       else ".")] if "error" in cl else
                  [f"sample {cl['sample_s']} s + diagnose {cl['diagnose_s']} s = **{cl['total_s']} s**.", "",
                   "The sample's last log lines:", "", "```"] + cl.get("sample_log", []) +
                  ["```", "", f"Diagnose {cl.get('diagnose_timings', '')}", "", "The report's first lines:", "",
                   "```"] + cl["verdicts"] + ["```"])
    pr = res.get("precision", [])
    if pr:
        lines += ["", f"## 4. Matrix-product precision on the observables (sigmoidal N = P = {c['prec_N']}, "
                      f"{c['chains']} chains, {c['prec_warmup']} + {c['prec_samples']} draws, seed 0)", ""]
    ref = next((r for r in pr if r.get("precision") == "float64" and "error" not in r), None)
    if pr:
        lines += ["Verdicts are compared by their word (\"relaxing\", \"inconclusive\", ...), not by the evidence "
                  "numbers after it. The four runs ran side by side on the device (their wall times include each "
                  "other's load).", "",
                  "| precision | dtype | wall s | health | q_a | training error | code masses | verdicts whose word "
                  "differs from float64 |", "|---|---|---|---|---|---|---|---|"]
    for r in pr:
        if "error" in r:
            lines.append(f"| {r['precision']} | — | — | — | — | — | — | not finished: {r['error']} |")
            continue
        word = lambda v: str(v).split(":")[0]  # noqa: E731
        diff = "(reference)" if r is ref else ("no float64 reference" if ref is None else
                                               "; ".join(f"{k}: {v}" for k, v in r["verdicts"].items()
                                                         if word(ref["verdicts"].get(k)) != word(v)) or "none")
        cm = ", ".join(f"{k[5:-1]} {v:.3f}" for k, v in r["code_masses"].items())
        lines.append(f"| {r['precision']} | {r['dtype']} | {r['wall_s']} | {r['health']} | "
                     f"{', '.join(f'{x:.3f}' for x in r['q_a'])} | {r['mse']:.2e} | {cm} | {diff} |")
    pf = res.get("profile")
    if pf:
        lines += ["", f"## 5. Where the device's time goes (SNAPER, {c['chains']} chains, {c['prof_warmup']} + "
                      f"{c['prof_samples']} draws, traced by JAX's profiler after an identical call compiled)", ""]
        if "error" in pf:
            lines.append(f"Not measured: {pf['error']}.")
        elif not pf.get("device_events"):
            lines.append(f"No accelerator events in the trace (a CPU run): call {pf['wall_s']} s.")
        else:
            steps = pf["steps_sampling"] + pf["steps_warmup"]
            lines += [f"Call {pf['wall_s']} s (init {pf['init_s']}, compile {pf['compile_s']}, warm-up "
                      f"{pf['warmup_s']}, sampling {pf['sampling_s']} s); {steps:.0f} gradients "
                      f"({pf['steps_warmup']:.0f} in the warm-up). Device kernels: {pf['busy_ms']:.0f} ms busy over "
                      f"a {pf['span_ms']:.0f} ms span, of which matrix products {pf['gemm_ms']:.0f} ms.", "",
                      "| device thread | busy ms | events |", "|---|---|---|"]
            lines += [f"| {k} | {ms} | {n} |" for k, (ms, n) in pf["threads"].items()]
            lines += ["", "| kernel | total ms | calls |", "|---|---|---|"]
            lines += [f"| `{k}` | {ms} | {n} |" for k, ms, n in pf["kernels"]]
            if pf.get("executions"):
                lines += ["", "Each execution of an XLA program (the device's \"XLA Modules\" line):", "",
                          "| # | program | span ms | busy ms | copies ms |", "|---|---|---|---|---|"]
                lines += [f"| {x['index']} | `{x['program']}` | {x['span_ms']} | {x['busy_ms']} | {x['memcpy_ms']} |"
                          for x in pf["executions"]]
                lines += ["", "The longest execution's kernels by the XLA instruction that launched them (read "
                          "against the program's HLO, `hlo_*.txt` next to this file):", "",
                          "| instruction · kernel | total ms | calls |", "|---|---|---|"]
                lines += [f"| `{k}` | {ms} | {n} |" for k, ms, n in pf["longest_execution_ops"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="paper")
    ap.add_argument("--out", default=None, help="output prefix (default benchmarks/results/gpu_check_<size>)")
    ap.add_argument("--parts", default="ceiling,samplers,cli,precision",
                    help="comma-separated parts to run (ceiling, samplers, cli, precision, profile)")
    ap.add_argument("--samplers", default="snaper,snaper-xla-tuning,nuts",
                    help="comma-separated runs of part 2 (snaper, snaper-xla-tuning: on a GPU only, nuts)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    bad = sorted(set(args.samplers.split(",")) - {"snaper", "snaper-xla-tuning", "nuts"})
    if bad:
        ap.error(f"--samplers takes snaper, snaper-xla-tuning, nuts; got {bad}")
    if args.one:
        print(json.dumps(one(json.loads(args.one))))
        return 0
    cfg = dict(SIZES[args.size], size=args.size)
    out = Path(args.out or f"benchmarks/results/gpu_check_{args.size}")
    out.parent.mkdir(parents=True, exist_ok=True)
    script = str(Path(__file__).resolve())
    t_all = time.perf_counter()
    import jax
    import numpyro

    import bnnzoo

    res = dict(config=cfg, python=platform.python_version(), versions=f"jax {jax.__version__}, numpyro {numpyro.__version__}, bnnzoo "
                                    f"{bnnzoo.__version__}")
    env_platform = os.environ.get("JAX_PLATFORMS")

    def save():
        res["seconds"] = time.perf_counter() - t_all
        Path(f"{out}.json").write_text(json.dumps(res, indent=1) + "\n")
        Path(f"{out}.md").write_text(render(res))

    def child(part_cfg, limit, env_extra=None):
        extra = dict(env_extra or {})
        if env_platform is None:     # run_child defaults to the CPU; here the children use JAX's default device
            extra["JAX_PLATFORMS"] = ""
        return run_child(script, part_cfg, limit, extra)

    lim = cfg["limits"]
    res["device"] = f"{jax.devices()[0].platform}: {jax.devices()[0].device_kind}"
    if "ceiling" in parts:
        ce = child(dict(cfg, part="ceiling"), lim["ceiling"])
        res["ceiling"] = {k: v for k, v in ce.items() if k not in ("limits",)}
        save()
    if "samplers" in parts:
        res["samplers"] = []
        variants = {"snaper": ("snaper", cfg["warmup"], cfg["samples"], None),
                    "snaper-xla-tuning": ("snaper", cfg["warmup"], cfg["samples"], {"BNNZOO_XLA_TUNING": "1"}),
                    "nuts": ("nuts", cfg["nuts_warmup"], cfg["nuts_samples"], None)}
        for v in args.samplers.split(","):
            if v == "snaper-xla-tuning" and not res["device"].startswith("gpu"):
                continue                         # a CPU has no tuning to restore
            name, w, s, env = variants[v]
            r = child(dict(cfg, part="sampler", sampler=name, warmup=w, samples=s),
                      lim["snaper" if name == "snaper" else "nuts"], env)
            res["samplers"].append(dict({k: v for k, v in r.items() if k != "limits"}, sampler=name, warmup=w,
                                        samples=s, chains=cfg["chains"], xla_tuning=bool(env)))
            save()
    if "cli" in parts:
        with tempfile.TemporaryDirectory() as tmp:
            res["cli"] = cli(cfg, Path(tmp), (lim["cli_sample"], lim["cli_diagnose"]))
        save()
    if "profile" in parts:
        pr = child(dict(cfg, part="profile", hlo_dir=str(out.parent)), lim["profile"])
        res["profile"] = {k: v for k, v in pr.items() if k != "limits"}
        save()
    if "precision" in parts:   # the four runs side by side (their wall times are then not comparable)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(PRECISIONS)) as pool:
            precisions = cfg.get("precisions", PRECISIONS)
            futs = [pool.submit(child, dict(cfg, part="precision", precision=p), lim["precision"],
                                {"JAX_ENABLE_X64": "1"} if p == "float64" else None) for p in precisions]
            res["precision"] = [dict({k: v for k, v in f.result().items() if k != "limits"}, precision=p)
                                for p, f in zip(precisions, futs)]
        save()
    print(Path(f"{out}.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
