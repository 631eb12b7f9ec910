"""Sampling benchmark: baseline weight-space NUTS against the faster exact options, side by side in one run.

    python benchmarks/bench_sampling.py                 # default (N = P = 30, 60): ~10-15 min on 2 CPU cores
    python benchmarks/bench_sampling.py --sizes 30,100  # the table in results.md / README (~30 min)
    python benchmarks/bench_sampling.py --quick         # smoke run (tiny nets, seconds per config)
    python benchmarks/bench_sampling.py --sizes 100 --activations sigmoid --warmup 300 --samples 300

For every toy net (linear, sigmoidal, ReLU; paper targets y− = 0 / ½ / −½) and size N = P, each method runs in its
own subprocess (so peak memory is its own) with the same seed, chains and draws:

* ``baseline``   weight-space NUTS on ``bnnzoo.models.fcn`` (the plain NumPyro kernel; the chunked driver used here to
  record the warm-up trace gives the same draws as ``numpyro.infer.MCMC``, see tests/inference/test_chunked.py);
* ``ro+data``    readout integrated out, drawn from its Gaussian conditional, and the first layer sampled in data
  space (``reparam=("readout", "data_space")``; the readout alone and an Adam warm start, run here before, were
  removed: benchmarks/results/keep_drop.md);
* ``baseline/par`` and ``ro+data/par``  the same samplers with one chain per CPU core (``numpyro.set_host_device_count``
  = number of chains, ``chain_method="sharded"``, what the ``bnnzoo`` CLI does); the other methods vectorise the
  chains on one device, as a plain ``numpyro.infer.MCMC`` on one device does;
* ``chees``  ChEES-HMC on the weight-space model (``sampler="chees"``): jittered HMC tuned across the chains,
  every chain the same number of leapfrog steps per iteration (no tree building);
* ``chees+ro+data``  ChEES-HMC on the readout-integrated, data-space model (``sampler="chees"`` with
  ``reparam=("readout", "data_space")``);
* ``snaper``, ``snaper+ro+data``  the same two with ``sampler="snaper"``: the trajectory length tuned on the
  leading principal component of the whitened posterior (SNAPER's criterion) instead of on all coordinates;
* ``snaper/par``  SNAPER with the chains sharded over one host device per chain (``chain_method="sharded"``: each
  device runs its chain, the tuning gathers them; what the ``bnnzoo`` CLI does on a multi-core CPU), compared, like
  the other ``/par`` rows, with ``baseline/par``;
* ``gibbs``  linear net only: the exact blocked Gibbs sampler (``sampler="gibbs"``; chains one after the other, numpy,
  one BLAS thread); no gradients, so grad/s and overhead do not apply; its time to equilibrium is the sum over the
  chains (they run in sequence).

Figures per run: time to equilibrium (wall seconds of warm start + warm-up until every chain's training MSE first
falls below the equilibrium level = 90th percentile of the kept draws' MSE pooled over all methods of that net; compile
time excluded, shown separately), gradient evaluations per second (leapfrog steps of all chains / sampling time),
sampler overhead (sampling time / (Σ over iterations of the largest tree among the vectorised chains × time of one
bare jitted batched gradient); for one chain per core: the longest chain's total of trees × one single-chain
gradient), bulk ESS per second of sampling of the readout weights ``a``, of the output ``f`` and of the kernel
K1 = zᵀz/N (mean over entries), for the readout weights also the within-chain ESS (each chain's bulk ESS on its own,
summed over the chains) and the fraction of entries with R̂ > 1.1 (chains on different readout branches, whose bulk
ESS is about the number of chains under any sampler: ``benchmarks/branch_ess.py``), and peak resident memory.  A memory section shows that a long run with
the big sites left out / thinned does not grow with the number of draws.

Writes ``benchmarks/results/sampling.md`` and ``.json`` (or ``--out`` stem).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

from _bench import readout_mixing, run_child

HERE = Path(__file__).resolve().parent
ACTS = {"linear": ("deep_linear", 0.0), "sigmoid": ("sigmoidal", 0.5), "relu": ("relu", -0.5)}
METHODS = {
    "baseline": dict(),
    "ro+data": dict(reparam=("readout", "data_space")),
    "baseline/par": dict(chain_method="sharded"),
    "ro+data/par": dict(reparam=("readout", "data_space"), chain_method="sharded"),
    "gibbs": dict(sampler="gibbs"),
    "chees": dict(sampler="chees"),
    "chees+ro+data": dict(sampler="chees", reparam=("readout", "data_space")),
    "snaper": dict(sampler="snaper"),
    "snaper+ro+data": dict(sampler="snaper", reparam=("readout", "data_space")),
    "snaper/par": dict(sampler="snaper", chain_method="sharded"),
}
ONLY_LINEAR = ("gibbs",)


# ----------------------------------------------------------------------------------------------- one run (child)

def _bare_gradient_seconds(fn, task, kw, num_chains, repeats=100):
    """Seconds per evaluation of the jitted gradient of the potential energy, batched over the chains."""
    import jax
    from numpyro.infer.util import initialize_model

    keys = jax.random.split(jax.random.PRNGKey(0), num_chains)
    info = initialize_model(keys, fn, dynamic_args=True, model_args=(task.X, task.Y), model_kwargs=kw)
    pe = info.potential_fn(task.X, task.Y, **kw)
    grad = jax.vmap(jax.grad(pe))

    def loop(z):
        def body(i, z):
            g = grad(z)
            return jax.tree.map(lambda a, b: a + 1e-9 * b, z, g)
        return jax.lax.fori_loop(0, repeats, body, z)

    z0 = info.param_info.z
    best = float("inf")
    with jax.default_matmul_precision("highest"):                # what bnnzoo.sample compiles with (jit cache key)
        loop = jax.jit(loop)
        jax.block_until_ready(loop(z0))
        for _ in range(3):
            t0 = time.perf_counter()
            jax.block_until_ready(loop(z0))
            best = min(best, (time.perf_counter() - t0) / repeats)
    return best


def _device_info() -> dict:
    """The JAX device the run used and, on an accelerator, its peak allocated memory (MB)."""
    import jax

    dev = jax.devices()[0]
    info = dict(device=f"{dev.platform}: {getattr(dev, 'device_kind', '?')}")
    stats = dev.memory_stats() if dev.platform != "cpu" else None
    if stats and "peak_bytes_in_use" in stats:
        info["peak_device_mb"] = stats["peak_bytes_in_use"] / 2**20
    return info


def run_one(cfg: dict) -> dict:
    import warnings
    from functools import partial

    import numpy as np
    import xarray as xr

    import bnnzoo
    from bnnzoo import azcompat

    warnings.simplefilter("ignore")
    method = dict(METHODS[cfg["method"]]) if cfg["method"] in METHODS else dict(cfg.get("options", {}))
    parallel = method.get("chain_method") == "sharded"   # one host device per chain
    if parallel:                                                   # before JAX starts its backend
        import numpyro

        numpyro.set_host_device_count(cfg["chains"])
    entry_name, y_neg = ACTS[cfg["activation"]]
    N = cfg["size"]
    task = bnnzoo.toy_task(P=N, y_neg=y_neg, seed=0)
    t0 = time.perf_counter()
    idata = bnnzoo.sample(entry_name, task, width=N, temperature=0.01, num_chains=cfg["chains"],
                          num_warmup=cfg["warmup"], num_samples=cfg["samples"], seed=cfg["seed"],
                          chunk_size=None if method.get("sampler") == "gibbs" else cfg["chunk"],
                          record=cfg.get("record", ("z1",)), progress=False,
                          **{k: v for k, v in method.items()}, **cfg.get("extra", {}))
    total = time.perf_counter() - t0
    eng = bnnzoo.run_config(idata)["engine"]
    timing = eng["timing"]
    post = azcompat.get_group(idata, "posterior")
    ss = azcompat.get_group(idata, "sample_stats")
    out = dict(cfg, total_s=total, timing=timing, peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               **_device_info())
    if cfg.get("memory_only"):
        return out
    steps = ss["n_steps"].values                                   # (chain, draw) leapfrog steps = gradients
    out["grad_evals"] = int(steps.sum())
    out["grads_per_s"] = float(steps.sum() / timing["sampling_s"])
    out["mean_steps"] = float(steps.mean())
    out["divergences"] = int(ss["diverging"].values.sum())
    out["mse_draws"] = post["mse"].values.ravel().tolist()
    ws = azcompat.get_group(idata, "warmup_sample_stats")
    out["warm_time"] = ws["time"].values.tolist()
    out["warm_mse"] = azcompat.get_group(idata, "warmup_posterior")["mse"].values.tolist()

    def ess_mean(arr):
        da = xr.Dataset({"x": (("chain", "draw") + tuple(f"d{i}" for i in range(arr.ndim - 2)), arr)})
        e = np.asarray(azcompat.ess(da, method="bulk")["x"].values, dtype=float)
        return float(np.nanmean(e)), float(np.nanmin(e))

    z = post["z1"].values
    iu = np.triu_indices(z.shape[-1])
    if len(iu[0]) > 5000:                                          # large P: a fixed random subset of the entries
        pick = np.sort(np.random.default_rng(0).choice(len(iu[0]), 5000, replace=False))
        iu = (iu[0][pick], iu[1][pick])
    K1 = np.empty(z.shape[:2] + (len(iu[0]),), np.float32)
    for d0 in range(0, z.shape[1], 100):                           # blocks of draws: the gathered pairs are large
        zb = z[:, d0:d0 + 100]
        K1[:, d0:d0 + 100] = np.einsum("cdnp,cdnp->cdp", zb[..., iu[0]], zb[..., iu[1]]) / N
    for name, arr in (("f", post["f"].values), ("K1", K1), ("q_a", post["q_a"].values)):
        m, mn = ess_mean(arr)
        out[f"ess_{name}"] = m
        out[f"ess_min_{name}"] = mn
        out[f"ess_s_{name}"] = m / timing["sampling_s"]
    # readout weights whose chains sit on different branches (docs/theory.md §3: frozen readouts) have a bulk ESS of about
    # the number of chains whatever the sampler; the within-chain ESS measures how fast a sampler explores the branch
    # each chain is on
    bulk, rhat, within = readout_mixing(post["a"].values)
    out.update(ess_a=float(np.nanmean(bulk)), ess_min_a=float(np.nanmin(bulk)), ess_median_a=float(np.nanmedian(bulk)),
               rhat_frac_a=float(np.mean(rhat > 1.1)), ess_wc_a=float(np.nanmean(within)))
    out["ess_s_a"] = out["ess_a"] / timing["sampling_s"]
    out["ess_s_wc_a"] = out["ess_wc_a"] / timing["sampling_s"]
    if method.get("sampler") == "gibbs":                           # no gradients: no overhead to measure
        out.update(grads_per_s=None, overhead=None, t_grad_s=None)
        return out
    # overhead against the bare batched gradient of the same model
    from bnnzoo.models import fcn
    from bnnzoo.models.fcn_fast import fcn_fast

    kw = dict(bnnzoo.run_config(idata)["model_kwargs"])
    kw.pop("record", None)
    rp = method.get("reparam", ())
    fn = fcn if not rp else partial(fcn_fast, integrate_readout="readout" in rp, data_space="data_space" in rp)
    if parallel:                                                   # each core runs its own chain to the end
        t_grad = _bare_gradient_seconds(fn, task, kw, 1)
        out["overhead"] = float(timing["sampling_s"] / (steps.sum(axis=1).max() * t_grad))
    else:                                                          # vectorised chains wait for the longest tree
        t_grad = _bare_gradient_seconds(fn, task, kw, cfg["chains"])
        out["overhead"] = float(timing["sampling_s"] / (steps.max(axis=0).sum() * t_grad))
    out["t_grad_s"] = t_grad
    out["vmap_waste"] = float(steps.max(axis=0).sum() / steps.mean(axis=0).sum())
    return out


# ----------------------------------------------------------------------------------------------- orchestration

def _time_to_equilibrium(r, level):
    """Warm start + warm-up seconds until every chain's MSE has been below ``level``; None if not within warm-up."""
    import numpy as np

    mse = np.asarray(r["warm_mse"])
    t = np.asarray(r["warm_time"])
    hit = []
    for c in range(mse.shape[0]):
        below = np.nonzero(mse[c] <= level)[0]
        if not len(below):
            return None
        hit.append(t[c, below[0]] if t.ndim == 2 else t[below[0]])
    if t.ndim == 2:                       # chains run one after the other (Gibbs): their warm-ups add up
        return float(sum(hit))
    return float(max(hit)) + r["timing"].get("warm_start_s", 0.0)


def _compile_s(r):
    t = r["timing"]
    return t.get("init_s", 0.0) + t.get("compile_s", 0.0) + t.get("warm_start_compile_s", 0.0)


def _fmt(x, nd=1):
    if x is None:
        return "—"
    if isinstance(x, str):
        return x
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{nd}f}"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--sizes", default="30,60", help="comma-separated N = P (the README table: --sizes 30,100, "
                   "about 30 min on a shared 2-core machine)")
    p.add_argument("--activations", default="linear,sigmoid,relu")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--warmup", type=int, default=None, help="default: 300 (N<=50), 200 otherwise")
    p.add_argument("--samples", type=int, default=None, help="default: 300 (N<=50), 200 otherwise")
    p.add_argument("--chunk", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=int, default=600, help="seconds per run")
    p.add_argument("--no-memory", action="store_true", help="skip the memory section")
    p.add_argument("--memory-size", type=int, default=100, help="N = P of the memory section's sigmoidal net")
    p.add_argument("--quick", action="store_true", help="tiny smoke run")
    p.add_argument("--out", default=str(HERE / "results" / "sampling"), help="output stem (.md and .json)")
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(json.loads(args.one))))
        return 0

    import numpy as np

    sizes = [int(s) for s in args.sizes.split(",")]
    acts = args.activations.split(",")
    methods = args.methods.split(",")
    if args.quick:
        sizes, args.warmup, args.samples, args.chunk = [8], 40, 40, 20
    t_start = time.time()
    runs = []
    for act in acts:
        for N in sizes:
            warm = args.warmup or (300 if N <= 50 else 200)
            samp = args.samples or (300 if N <= 50 else 200)
            for m in methods:
                if m in ONLY_LINEAR and act != "linear":
                    continue
                cfg = dict(activation=act, size=N, method=m, chains=args.chains, warmup=warm, samples=samp,
                           chunk=args.chunk, seed=args.seed)
                r = run_child(__file__, cfg, args.timeout)
                runs.append(r)
                msg = r.get("error") or (f"{r['total_s']:.0f} s, ESS/s a {r['ess_s_a']:.1f} f {r['ess_s_f']:.1f}, "
                                         f"overhead {_fmt(r['overhead'], 2)}")
                print(f"[bench] {act:8s} N=P={N:<4d} {m:13s} {msg}", flush=True)
    # equilibrium level per net: 90th percentile of the kept draws' MSE pooled over the methods
    for act in acts:
        for N in sizes:
            group = [r for r in runs if r["activation"] == act and r["size"] == N and "error" not in r]
            if not group:
                continue
            level = float(np.quantile(np.concatenate([r["mse_draws"] for r in group]), 0.9))
            for r in group:
                r["eq_level"] = level
                r["t_eq_s"] = _time_to_equilibrium(r, level)
    memory = []
    if not args.no_memory and not args.quick:
        # the sampler does not matter for memory: cheap fixed-step HMC, no adaptation
        base = dict(activation="sigmoid", size=args.memory_size, method="memory", chains=2, warmup=10, chunk=50, seed=0,
                    memory_only=True, record=("z1",),
                    options=dict(sampler="hmc", step_size=1e-3, num_steps=4))
        for label, samples, extra in (("all sites in memory, 500 draws", 500, dict(chunk=500)),
                                      ("all sites in memory, 2000 draws", 2000, dict(chunk=2000)),
                                      ("W1 left out, z1 every 50th, 500 draws", 500,
                                       dict(extra=dict(exclude=("W1",), site_thinning={"z1": 50}))),
                                      ("W1 left out, z1 every 50th, 2000 draws", 2000,
                                       dict(extra=dict(exclude=("W1",), site_thinning={"z1": 50})))):
            r = run_child(__file__, dict(base, samples=samples, **extra), args.timeout)
            r["label"] = label
            memory.append(r)
            gpu = f", device {r['peak_device_mb']:.0f} MB" if "peak_device_mb" in r else ""
            print(f"[bench] memory: {label}: {r.get('peak_rss_mb', float('nan')):.0f} MB{gpu} {r.get('error', '')}",
                  flush=True)
    meta = dict(command=" ".join(["python", "benchmarks/bench_sampling.py"] + list(sys.argv[1:] if argv is None
                                                                              else argv)),
                python=platform.python_version(), machine=platform.machine(), cpus=os.cpu_count(),
                load_avg=os.getloadavg(), wall_s=round(time.time() - t_start, 1),
                device=_device_line(runs + memory), args=vars(args))
    try:
        import jax
        import numpyro

        import bnnzoo

        meta.update(jax=jax.__version__, numpyro=numpyro.__version__,
                    matmul_precision=inspect.signature(bnnzoo.sample).parameters["matmul_precision"].default)
    except ImportError:
        pass
    slim = [{k: v for k, v in r.items() if k not in ("mse_draws", "warm_time", "warm_mse")} for r in runs]
    Path(args.out + ".json").write_text(json.dumps(dict(meta=meta, runs=slim, memory=memory), indent=1))
    Path(args.out + ".md").write_text(_markdown(runs, memory, meta))
    print(f"[bench] wrote {args.out}.md and {args.out}.json ({meta['wall_s']:.0f} s)")
    return 0


def _device_line(runs) -> str:
    devices = sorted({r["device"] for r in runs if "device" in r})
    if not devices or devices == ["cpu: cpu"]:
        return "CPU only (no GPU was available to this run)"
    return "JAX device: " + ", ".join(devices) + " (chains vectorised on it)"


def _markdown(runs, memory, meta) -> str:
    lines = ["# Sampling benchmark", "",
             f"Generated by `{meta.get('command', 'python benchmarks/bench_sampling.py')}` in {meta['wall_s']:.0f} s "
             f"on {meta['cpus']} CPU cores "
             f"(load average at the end {meta['load_avg'][0]:.1f}: the machine was shared; compare ratios within a "
             f"row group, measured side by side in one run). {meta['device']}. Python {meta['python']}, "
             f"jax {meta.get('jax', '?')}, numpyro {meta.get('numpyro', '?')}, float32 matrix products at "
             f"precision '{meta.get('matmul_precision', '?')}'. Toy task, T = 0.01, "
             f"{meta['args']['chains']} chains, same seed for every method.", "",
             "Columns: **t_eq** seconds (warm start + warm-up, compile excluded) until every chain's training MSE is "
             "at its equilibrium level (— : not within warm-up); **compile** seconds of init + compilation; "
             "**grad/s** leapfrog gradients per second (all chains); **overhead** sampling time over "
             "(iterations × largest tree × one bare batched gradient; /par: longest chain's gradients × one bare "
             "single-chain gradient); **/par** one chain per host device (as many devices as chains), the "
             "others vectorised on one device; "
             "**ESS/s** bulk ESS per second of sampling "
             "(mean over entries; K1: at most 5000 entries, a fixed random subset) of the readout weights a, the "
             "output f and the kernel K1 = zᵀz/N; **a within** the same for the readout weights with each chain's "
             "bulk ESS computed on its own and summed over the chains (how fast a sampler explores the branch each "
             "chain sits on); **a R̂>1.1** fraction of readout entries whose chains disagree (rank-normalised split "
             "R̂ > 1.1: chains on different readout branches, docs/theory.md §3; such an entry's bulk ESS is about the "
             "number of chains under any sampler); **×** the "
             "ratio to the baseline (for ro+data/par and snaper/par: to baseline/par, so the parallel gain is not "
             "counted twice); "
             "**MB** peak resident memory of the run's process (and, on a GPU, peak device memory allocated).", "",
             "| net | N=P | method | t_eq s | compile s | grad/s | overhead | ESS/s a (×) | ESS/s a within (×) | "
             "a R̂>1.1 | ESS/s f (×) | ESS/s K1 (×) | steps/draw | div | MB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        if "error" in r:
            lines.append(f"| {r['activation']} | {r['size']} | {r['method']} | error: {r['error'][:60]} |"
                         + " |" * 11)
            continue
        ref = "baseline/par" if r["method"].endswith("/par") and r["method"] != "baseline/par" else "baseline"
        base = next((b for b in runs if b["activation"] == r["activation"] and b["size"] == r["size"]
                     and b["method"] == ref and "error" not in b), None)

        def cell(key):
            v = r.get(key)
            if v is None:                                          # a run recorded before the column existed
                return "—"
            if base is None or r["method"] == "baseline" or base.get(key) is None:
                return _fmt(v)
            return f"{_fmt(v)} ({v / base[key]:.1f}×)" if base[key] > 0 else _fmt(v)

        lines.append(f"| {r['activation']} | {r['size']} | {r['method']} | {_fmt(r.get('t_eq_s'))} | "
                     f"{_fmt(_compile_s(r))} | {_fmt(r['grads_per_s'], 0)} | "
                     f"{_fmt(r['overhead'], 2)} | {cell('ess_s_a')} | {cell('ess_s_wc_a')} | "
                     f"{_fmt(r.get('rhat_frac_a'), 2)} | {cell('ess_s_f')} | {cell('ess_s_K1')} | "
                     f"{r['mean_steps']:.0f} | {r['divergences']} | {_mb(r)} |")
    if memory:
        lines += ["", "## Memory of long runs", "",
                  f"Sigmoidal net N = P = {meta['args'].get('memory_size', 100)} (fixed-step HMC, 2 chains): peak "
                  "resident memory of the whole process (and peak device memory on a GPU). The 'all sites' runs hold "
                  "every draw in one chunk on the device; with the first layer left out and the preactivations kept "
                  "on every 50th draw, chunks of 50 draws go to the host as they finish, so memory no longer grows "
                  "with the number of draws.", "",
                  "| run | peak MB | seconds |", "|---|---|---|"]
        for r in memory:
            lines.append(f"| {r['label']} | {_mb(r) if 'error' not in r else r['error'][:60]} | "
                         f"{_fmt(r.get('total_s'))} |")
    if meta["device"].startswith("CPU"):
        lines += ["", "GPU: no GPU was lent to the run that produced this table; the paper-size sigmoidal net "
                  "(N = P = 500) was not timed here.", ""]
    return "\n".join(lines) + "\n"


def _mb(r) -> str:
    """Peak host MB, and peak device MB on an accelerator."""
    if "peak_device_mb" in r:
        return f"{r['peak_rss_mb']:.0f} / GPU {r['peak_device_mb']:.0f}"
    return _fmt(r.get("peak_rss_mb"), 0)


if __name__ == "__main__":
    sys.exit(main())
