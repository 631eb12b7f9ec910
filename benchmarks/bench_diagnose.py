"""Time ``bnnzoo diagnose`` at the paper's size (N = P = 500, 64 chains × 300 draws, sigmoidal net, toy task), section
by section, for two copies of bnnzoo side by side (the "before" and the "after" of a change), interleaved on the same
input and machine.

The input. Sampling that run on 2 CPU cores takes hours, so the script builds a run file of the same shapes through
bnnzoo's own pipeline: ``bnnzoo.sample("sigmoidal", toy_task(P=500), width=500, num_chains=64, num_warmup=0,
num_samples=300, sampler="units")`` with what ``bnnzoo sample`` records (the summaries, the streamed kernel means, no
W1; the GPU run of ``gpu_check_cli.md`` kept 64 × 300 draws), written with bnnzoo's own writer (``azcompat.to_netcdf``),
so every group, dimension and attribute is what a units run of that size writes. Three parts of the units machinery are
replaced by cheaper ones (the values are not posterior draws): the sweep by an AR(1) step of every preactivation around
its prior, h ← ρ h + √(1 − ρ²) s ξ (ρ = ``--rho``, accepted always; the units drift slowly from their prior start, so
codes rarely change, as in a run whose ergodicity is broken); the readout a | H by Matheron's rule as in every units run
but in float32 with S⁻¹ by conjugate gradients (tolerance 1e-6) instead of a float64 Cholesky factor, and without
drawing W | H (not recorded); the layer's summaries and kernels computed in float32 (stored as float32 in any case).

Each copy runs ``bnnzoo diagnose RUN --json`` in a fresh process (``--repeats`` times, alternating), and the script
records the wall time of the command, its CPU time (user + system, all threads: the machine is shared, so the CPU
time is the steadier measure of the work done) and the report's own per-section timings, and checks that the report's
numbers and verdicts are the same for both copies.  Without ``--before`` only this copy is timed.

Usage (from the repository root)::

    python benchmarks/bench_diagnose.py --before /path/to/old/src --out benchmarks/results/diagnose_n500
    python benchmarks/bench_diagnose.py --run /tmp/speed2_n500_c64.nc --repeats 2 --out /tmp/diagnose_now
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


CG_TOL, CG_MAXITER = 1e-6, 50     # the readout's solve by conjugate gradients (module docstring)


def make_run(path: Path, *, size: int, chains: int, warmup: int, samples: int, rho: float, seed: int) -> float:
    """Write the benchmark's input run (module docstring) to ``path``; returns the seconds it took."""
    import jax
    import jax.numpy as jnp

    import bnnzoo
    from bnnzoo import azcompat
    from bnnzoo.inference import units as units_mod
    from bnnzoo.models import get_entry
    from bnnzoo.models.summaries import layer_summaries

    f32 = jnp.float32

    def sweep(self, H, key, by_move=False):   # the cheap move (module docstring), shaped as units._Kernel.sweep's
        # result: (H, acceptance, code changes, mse, common-scale ok, signal ok, pair acceptance)
        xi = jax.random.normal(key, H.shape, f32).astype(H.dtype)
        H1 = rho * H + math.sqrt(1.0 - rho**2) * self.s[None, :] * xi
        changed = jnp.mean(self.codes(H1) != self.codes(H))
        nan = jnp.full((), jnp.nan, H.dtype)       # the warm-up's mse is not computed
        return (H1, jnp.ones((), H.dtype), changed.astype(H.dtype), nan, jnp.zeros((), bool), jnp.zeros((), bool),
                jnp.zeros((), H.dtype))

    def readout(self, H, noise):      # Matheron's rule as units._Kernel.readout, in float32, S⁻¹ by conjugate gradients
        N, P, m = self.N, self.P, self.m
        Phi = self.phi(H)
        a0 = math.sqrt(self.sa2) * noise[:N * m].reshape(N, m)
        e = math.sqrt(self.v) * noise[N * m:].reshape(P, m)
        x, _ = jax.scipy.sparse.linalg.cg(lambda u: self.c * (Phi.T @ (Phi @ u)) + self.v * u,
                                          self.Y.astype(f32) - Phi.T @ a0 / N - e, tol=CG_TOL, maxiter=CG_MAXITER)
        return a0 + (self.sa2 / N) * Phi @ x, Phi

    exact_init = units_mod._Kernel.__init__

    def init(self, *args, **kwargs):  # φ in float32
        exact_init(self, *args, **kwargs)
        phi = self.phi
        self.phi = lambda h: phi(h.astype(f32))

    def draw(self, H, key, X_test=None):    # no W | H (it is not recorded: no W1, no test set)
        noise = jax.random.normal(key, ((self.N + self.P) * self.m,), f32)
        a, Phi = self.readout(H, noise)
        return a, None, Phi.T @ a / self.N, None

    def summaries(z, h, f, Y, layer, width, kernels=False):     # the layer's summaries computed in float32
        return layer_summaries(z.astype(f32), h.astype(f32), f.astype(f32), Y, layer, width, kernels=kernels)

    units_mod._Kernel.__init__ = init
    units_mod._Kernel.sweep = sweep
    units_mod._Kernel.readout = readout
    units_mod._Kernel.draw = draw
    units_mod.layer_summaries = summaries
    entry = get_entry("sigmoidal")
    task = bnnzoo.toy_task(P=size)
    assert task.X_test is None           # the cheap draw leaves out W | H, which a test set would need
    kw = {"width": size}
    t0 = time.perf_counter()
    idata = bnnzoo.sample(entry, task, num_chains=chains, num_warmup=warmup, num_samples=samples, seed=seed,
                          sampler="units", record=entry.record, progress=False,
                          exclude=tuple(entry.unread_sites(dict(entry.defaults, **kw))), **kw)
    azcompat.to_netcdf(idata, str(path))
    return time.perf_counter() - t0


CLI = "import sys; from bnnzoo.cli import main; sys.exit(main(sys.argv[1:]))"


def diagnose_once(src: str, run: Path, timeout: int) -> dict:
    """``bnnzoo diagnose RUN --json`` with bnnzoo imported from ``src``, in a fresh process: wall seconds, CPU
    seconds (user + system of the process and its threads), the report's per-section seconds and the report
    itself."""
    env = {**os.environ, "PYTHONPATH": src, "JAX_PLATFORMS": "cpu"}
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", CLI, "diagnose", str(run), "--json"], capture_output=True,
                         text=True, timeout=timeout, env=env)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
    if res.returncode != 0:
        raise RuntimeError(f"diagnose with {src} failed: {res.stderr.strip()[-2000:]}")
    rep = json.loads(res.stdout[res.stdout.index("{"):])
    return {"wall": wall, "cpu": user + system, "user": user, "sys": system, "timings": rep.pop("timings", {}),
            "report": rep}


def same_numbers(a, b, path="report") -> list[str]:
    """Where two JSON reports differ (numbers compared exactly, NaN equal to NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}: keys {sorted(set(a) ^ set(b))}"] if set(a) != set(b) else []
        return out + [d for k in a if k in b for d in same_numbers(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: lengths {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in same_numbers(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return []
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", help="the src folder of the copy of bnnzoo before the change (default: time only "
                                     "the copy after)")
    ap.add_argument("--after", default=str(ROOT / "src"), help="the src folder of the copy after (default: this one)")
    ap.add_argument("--run", help="an existing input run (default: build it, under /tmp)")
    ap.add_argument("--size", type=int, default=500)
    ap.add_argument("--chains", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--rho", type=float, default=0.995)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--make", help="only write the input run to this path")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "diagnose_n500"),
                    help="stem of the result files (.json, .md)")
    a = ap.parse_args()
    shape = dict(size=a.size, chains=a.chains, warmup=a.warmup, samples=a.samples, rho=a.rho, seed=a.seed)
    if a.make:
        load = load_average()
        made = make_run(Path(a.make), **shape)
        Path(a.make + ".json").write_text(json.dumps(dict(shape, made_s=round(made, 1), load_before=load,
                                                          load_after=load_average())))
        print(f"wrote {a.make} in {made:.0f} s (load before {load}, after {load_average()})")
        return 0
    t_start = time.time()
    run = Path(a.run) if a.run else Path(f"/tmp/bench_diagnose_n{a.size}_c{a.chains}.nc")
    made_s = None
    if not run.exists():
        made_s = make_run(run, **shape)
    elif Path(str(run) + ".json").exists():          # written by --make: how long building the input took
        made_s = json.loads(Path(str(run) + ".json").read_text()).get("made_s")
    rows = []
    copies = ([("before", a.before)] if a.before else []) + [("after", a.after)]
    labels = [lab for lab, _ in copies]
    for r in range(a.repeats):
        for label, src in copies:
            load = load_average()
            out = diagnose_once(src, run, a.timeout)
            out.update(label=label, repeat=r, load=load)
            rows.append(out)
            print(f"{label} #{r}: wall {out['wall']:.1f} s, CPU {out['cpu']:.1f} s (user {out['user']:.1f}, sys "
                  f"{out['sys']:.1f}; load {load}); " + ", ".join(f"{k} {v:.1f}" for k, v in out["timings"].items()),
                  flush=True)
    diffs = same_numbers(rows[0]["report"], rows[1]["report"]) if a.before else []
    sections = list(rows[0]["timings"])
    totals = ("wall", "cpu")
    med = {lab: {k: statistics.median(x["timings"].get(k, float("nan")) for x in rows if x["label"] == lab)
                 for k in sections} | {t: statistics.median(x[t] for x in rows if x["label"] == lab) for t in totals}
           for lab in labels}
    best = {lab: {k: min(x["timings"].get(k, float("nan")) for x in rows if x["label"] == lab) for k in sections}
            | {t: min(x[t] for x in rows if x["label"] == lab) for t in totals} for lab in labels}
    versions = {"python": platform.python_version()}
    for mod in ("jax", "numpyro", "arviz", "scipy", "numpy", "sklearn"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            pass
    cmd = "python benchmarks/bench_diagnose.py " + " ".join(sys.argv[1:])
    result = {"command": cmd, "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores",
              "versions": versions, "input": dict(shape, path=str(run), made_s=made_s,
                                                  mb=round(run.stat().st_size / 1e6, 1)),
              "median": med, "best": best, "runs": [{k: v for k, v in x.items() if k != "report"} for x in rows],
              "report_differences": diffs, "seconds": round(time.time() - t_start, 1)}
    out = Path(a.out)
    Path(f"{out}.json").write_text(json.dumps(result, indent=1))
    lines = [f"# `bnnzoo diagnose` at N = P = {a.size}, {a.chains} chains × {a.samples} draws"
             + (": before and after" if a.before else ""),
             "", f"Generated by `{cmd}` in {result['seconds']:.0f} s. Machine: {result['machine']}. "
             + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".", "",
             "Input: " + (__doc__.split("\n\n")[1].replace("\n", " ").replace("The input. ", "")) + f" File: {result['input']['mb']} MB"
             + (f", built in {made_s:.0f} s." if made_s else "."),
             "", f"Each copy ran `bnnzoo diagnose RUN --json` in a fresh process, {a.repeats} times"
             + (", alternating (before, after, before, ...)" if a.before else "") + ". Seconds, medians over the "
             "repeats; *wall* is the whole command (start, reading the file, diagnosis, printing), *cpu* its CPU "
             "time (user + system, all threads); the sections are the report's own timings (wall time of each "
             "section; work done on a second thread meanwhile is not in them).", "",
             "| | " + " | ".join(sections + list(totals)) + " |", "|---|" + "---|" * (len(sections) + 2)]
    for lab in labels:
        lines.append(f"| {lab} | " + " | ".join(f"{med[lab][k]:.1f}" for k in sections + list(totals)) + " |")
    lines += ["", "The best (least) time of each over the repeats (the machine is shared: the least is the one least "
              "slowed by other work):", "", "| | " + " | ".join(sections + list(totals)) + " |",
              "|---|" + "---|" * (len(sections) + 2)]
    for lab in labels:
        lines.append(f"| {lab} | " + " | ".join(f"{best[lab][k]:.1f}" for k in sections + list(totals)) + " |")
    lines += ["", "Every run (load average: 1, 5, 15 minutes, read before the run):", "",
              "| copy | repeat | wall s | CPU s (user + sys) | load | " + " | ".join(sections) + " |",
              "|---|---|---|---|---|" + "---|" * len(sections)]
    for x in rows:
        lines.append(f"| {x['label']} | {x['repeat']} | {x['wall']:.1f} | {x['cpu']:.1f} ({x['user']:.1f} + "
                     f"{x['sys']:.1f}) | {x['load']} | "
                     + " | ".join(f"{x['timings'].get(k, float('nan')):.1f}" for k in sections) + " |")
    if a.before:
        lines += ["", "The report's numbers and verdicts, before against after (compared exactly, timings left out): "
                  + ("the same." if not diffs else f"{len(diffs)} differences: " + "; ".join(diffs[:20]))]
    Path(f"{out}.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {Path(f"{out}.md")}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
