"""Figures of merit of the samplers, side by side in one run: what a user waits for, measured on what the posterior
lets a sampler mix.

    python benchmarks/bench_merit.py --out benchmarks/results/merit_cpu      # 5 nets x 4 samplers, 4 chains
    python benchmarks/bench_merit.py --nets sigmoidal --sizes 60 --out /tmp/m  # one net at N = P = 60
    python benchmarks/bench_merit.py --quick --out /tmp/q                     # smoke run: tiny nets, seconds each

Samplers (same seed, chains, warm-up / tuning iterations and kept draws for each):

* ``nuts``    vanilla NumPyro NUTS through ``bnnzoo.sample(sampler="nuts")``: the reference of every ratio;
* ``chees``, ``snaper``   the project's own ChEES-HMC and SNAPER through ``bnnzoo.sample``;
* ``mams``    BlackJAX's adjusted microcanonical HMC (``blackjax.adjusted_mclmc_dynamic``: random trajectory
  lengths, the isokinetic McLachlan integrator, Metropolis-adjusted) with its own tuning
  (``blackjax.adjusted_mclmc_find_L_and_step_size``: step size, trajectory length and diagonal preconditioner per
  chain, its two passes given the same number of iterations as the other samplers' warm-up), run on the potential of
  the same NumPyro model (``numpyro.infer.util.initialize_model``, every chain from a prior draw as
  ``bnnzoo.sample`` starts), chains vectorised with ``jax.vmap``; its tuning and compilation count in its time.

Nets: the toy nets ``deep_linear``, ``sigmoidal``, ``relu`` at N = P (``--sizes``, zoo defaults otherwise), and
``three_layer`` (zoo entry ``three_layer_erf``) and ``attention`` (``softmax_attention``) at their zoo default sizes.
Every (net, sampler) runs in a process of its own (its own compilation, its own memory).

Figures per (net, sampler); every sampler's draws go through the same code:

* (a) bulk ESS (ArviZ, all chains together) per second of the permutation-invariant observables
  (:func:`bnnzoo.inference.health.invariant_observables`: ``mse``, ``q_a`` (per class; mean and min over classes),
  the output ``f`` (mean and min over entries), ``n_outliers`` where the readout has one, ``q_z1`` / ``q_h2`` the
  kernel's trace), plus the entries of the last hidden layer's kernel ``K = zᵀz/N`` (FCN: z1, three-layer: h2; at
  most 2000 entries, a fixed random subset); "min obs" is the smallest over the observables (mean over entries for
  f and K);
* (b) within-chain ESS per second of the readout ``a`` (each chain's bulk ESS on its own, summed over the chains,
  mean over entries): how fast a sampler explores the branch it sits in;
* (c) per-entry bulk ESS per second of the readout across chains, on the linear net only (ergodic: on the other nets
  the readout entries are frozen in branches and this number measures the run length, not the sampler);
* (d) wall seconds of the whole call (compilation, warm-up / tuning, sampling, building the ArviZ data) when the run
  it returned is "equilibrated" by :func:`bnnzoo.inference.health.sampler_health`; otherwise "not equilibrated";
* (e) gradient evaluations per second per chain during sampling (NUTS, ChEES, SNAPER: leapfrog steps; MAMS: two per
  integration step of the McLachlan integrator) and, on a GPU, the fraction of the device's float32 FLOP rate the
  leapfrog reaches (FLOPs of one gradient by the matmul count of its jaxpr × gradients per second /
  ``--peak-tflops``).

ESS per second is given per wall second of the whole call (what a user waits for) and per second of sampling alone.
MAMS's run has no kinetic energies in ``sample_stats``, so the health checks that need them (E-BFMI, movement) do not
apply to it; all other checks (divergences, R̂, drift and ESS of the invariant observables) do.

Writes ``PREFIX.md`` and ``PREFIX.json`` (``--out PREFIX``) after every (net, sampler), so an interrupted run keeps
what it measured.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

from _bench import readout_mixing, run_child, versions

SAMPLERS = ("nuts", "chees", "snaper", "mams")
NETS = {"deep_linear": "deep_linear", "sigmoidal": "sigmoidal", "relu": "relu", "three_layer": "three_layer_erf",
        "attention": "softmax_attention"}
TOY = ("deep_linear", "sigmoidal", "relu")
KERNEL_SITE = {"deep_linear": "z1", "sigmoidal": "z1", "relu": "z1", "three_layer": "h2"}
# --quick: tiny versions of the two non-toy entries (the toy nets take N = P = 10)
QUICK = {"three_layer": (dict(d=8, P=16, P_test=16), dict(width1=8, width2=8)),
         "attention": (dict(L=4, d=4, P=16, P_test=16), dict())}
MAX_K_ENTRIES = 2000
MAMS_TARGET_ACCEPT = 0.9           # BlackJAX's documented target for adjusted MCLMC
MAMS_GRADS_PER_STEP = 2            # isokinetic McLachlan: two gradient evaluations per integration step


# ----------------------------------------------------------------------------------------------- one run (child)

def _setup(cfg):
    """(entry, task, model kwargs) of a (net, size) as ``bnnzoo.sample`` resolves them."""
    from bnnzoo.models import get_entry

    net = cfg["net"]
    entry = get_entry(NETS[net])
    task_kw, model_kw = dict(entry.task_defaults), {}
    if net in TOY:
        task_kw["P"] = cfg["size"]
        model_kw["width"] = cfg["size"]
    elif cfg.get("quick"):
        task_kw.update(QUICK[net][0])
        model_kw.update(QUICK[net][1])
    task = entry.make_task(**task_kw)
    return entry, task, model_kw


def _record(net):
    return (KERNEL_SITE[net],) if net in KERNEL_SITE else ()


def _model_kwargs(entry, task, model_kw, net) -> dict:
    """The model keywords as ``bnnzoo.sample`` resolves and checks them (defaults, record, data-dependent values)."""
    kw = entry.kwargs(**model_kw)
    if _record(net):
        kw["record"] = _record(net)
    if entry.resolve is not None:
        kw = entry.resolve(task.X, kw)
    entry.validate(task.X, task.Y, **kw)
    return kw


def _run_mams(entry, task, model_kw, cfg):
    """MAMS on the potential of the entry's NumPyro model; returns (idata, timing dict, gradients per chain
    during sampling (chain,), potential_fn, one chain's unconstrained start)."""
    import blackjax
    import jax
    import jax.numpy as jnp
    import numpy as np
    import xarray as xr
    from blackjax.mcmc.adjusted_mclmc_dynamic import init as mams_init
    from blackjax.mcmc.adjusted_mclmc_dynamic import build_kernel, make_random_trajectory_length_fn
    from numpyro.infer.initialization import init_to_sample
    from numpyro.infer.util import initialize_model

    from bnnzoo import azcompat
    from bnnzoo.inference.convert import dataset, jsonable, versions
    from bnnzoo.inference.health import warn_if_unhealthy

    C, W, S = cfg["chains"], cfg["warmup"], cfg["samples"]
    t0 = time.perf_counter()
    kw = _model_kwargs(entry, task, model_kw, cfg["net"])
    rec = _record(cfg["net"])
    key_init, key_tune, key_run = jax.random.split(jax.random.PRNGKey(cfg["seed"]), 3)
    with jax.default_matmul_precision("highest"):               # what bnnzoo.sample samples with
        info = initialize_model(jax.random.split(key_init, C), entry.model, model_args=(task.X, task.Y),
                                model_kwargs=kw, init_strategy=init_to_sample)
        potential, post_fn = info.potential_fn, info.postprocess_fn
        z0 = info.param_info.z

        def logdensity(z):
            return -potential(z)

        steps_fn = make_random_trajectory_length_fn(True)
        kernel = build_kernel(integration_steps_fn=steps_fn)

        def tune(z, key):
            k_state, k_tune = jax.random.split(key)
            state = mams_init(z, logdensity, k_state)
            # tuning iterations: 2 * frac_tune1 * num_steps + frac_tune2 * num_steps = W
            state, params, _ = blackjax.adjusted_mclmc_find_L_and_step_size(
                mclmc_kernel=kernel, logdensity_fn=logdensity, num_steps=W, state=state, rng_key=k_tune,
                target=MAMS_TARGET_ACCEPT, frac_tune1=1 / 3, frac_tune2=1 / 3, diagonal_preconditioning=True)
            return state, params

        def run(state, params, key):
            alg = blackjax.adjusted_mclmc_dynamic(logdensity, step_size=params.step_size,
                                                  inverse_mass_matrix=params.inverse_mass_matrix,
                                                  integration_steps_fn=steps_fn,
                                                  integration_steps_params=(params.L / params.step_size,))

            def body(st, k):
                st, inf = alg.step(k, st)
                return st, (post_fn(st.position), inf.is_divergent, inf.acceptance_rate, inf.num_integration_steps,
                            st.logdensity)

            return jax.lax.scan(body, state, jax.random.split(key, S))[1]

        tune_keys, run_keys = jax.random.split(key_tune, C), jax.random.split(key_run, C)
        init_s = time.perf_counter() - t0
        tc = time.perf_counter()
        tune_c = jax.jit(jax.vmap(tune)).lower(z0, tune_keys).compile()
        compile_s = time.perf_counter() - tc
        tw = time.perf_counter()
        state, params = jax.block_until_ready(tune_c(z0, tune_keys))
        warmup_s = time.perf_counter() - tw
        tc = time.perf_counter()
        run_c = jax.jit(jax.vmap(run)).lower(state, params, run_keys).compile()
        compile_s += time.perf_counter() - tc
        ts = time.perf_counter()
        sites, div, acc, n_int, lp = jax.block_until_ready(run_c(state, params, run_keys))
        sampling_s = time.perf_counter() - ts
    samples = {k: np.asarray(v) for k, v in sites.items() if k != "y"}
    lead, coords = ("chain", "draw"), {"chain": np.arange(C), "draw": np.arange(S)}
    n_steps = np.asarray(n_int)
    stats = dict(diverging=np.asarray(div), acceptance_rate=np.asarray(acc), n_steps=n_steps, lp=np.asarray(lp))
    config = dict(model=entry.name, model_kwargs=jsonable(kw), task=jsonable(task.meta), seed=cfg["seed"],
                  sampler=dict(sampler="mams", num_chains=C, num_warmup=W, num_samples=S,
                               target_accept=MAMS_TARGET_ACCEPT), versions=versions(), record=list(rec))
    groups = {"posterior": dataset(samples, entry.dims(**kw), lead, coords),
              "sample_stats": dataset(stats, {}, lead, coords),
              "observed_data": xr.Dataset({"y": (("point", "class"), task.Y)})}
    idata = azcompat.make_idata(groups, {"bnnzoo_config": json.dumps(config), "sampler": "mams"})
    warn_if_unhealthy(idata)                                       # what bnnzoo.sample does before it returns
    total = time.perf_counter() - t0
    timing = dict(init_s=init_s, compile_s=compile_s, warmup_s=warmup_s, sampling_s=sampling_s, total_s=total,
                  step_size_mean=float(jnp.mean(params.step_size)),
                  step_size_per_chain=[float(v) for v in np.asarray(params.step_size).ravel()],
                  mean_integration_steps=float(jnp.mean(params.L / params.step_size)))
    z_one = jax.tree.map(lambda a: a[0], z0)
    return idata, timing, n_steps.sum(1) * MAMS_GRADS_PER_STEP, potential, z_one


def _run_bnnzoo(entry, task, model_kw, cfg):
    """``bnnzoo.sample`` with the run's sampler; returns (idata, timing dict, gradients per chain (chain,),
    potential_fn, one chain's unconstrained start)."""
    import jax
    import numpy as np
    from numpyro.infer.util import initialize_model

    import bnnzoo

    t0 = time.perf_counter()
    idata = bnnzoo.sample(entry, task, num_chains=cfg["chains"], num_warmup=cfg["warmup"],
                          num_samples=cfg["samples"], seed=cfg["seed"], sampler=cfg["sampler"],
                          record=_record(cfg["net"]), chunk_size=cfg["samples"], progress=False, **model_kw)
    total = time.perf_counter() - t0
    rc = bnnzoo.run_config(idata)
    timing = {k: v for k, v in rc["engine"]["timing"].items() if k.endswith("_s")}
    timing["total_s"] = total
    from bnnzoo import azcompat

    steps = np.asarray(azcompat.get_group(idata, "sample_stats")["n_steps"].values)
    pot = z_one = None
    if cfg.get("flops"):                                           # the gradient whose FLOPs are counted
        info = initialize_model(jax.random.PRNGKey(0), entry.model, model_args=(task.X, task.Y),
                                model_kwargs=_model_kwargs(entry, task, model_kw, cfg["net"]))
        pot, z_one = info.potential_fn, info.param_info.z
    return idata, timing, steps.sum(1), pot, z_one


def _flops_per_gradient(potential, z):
    """FLOPs of one gradient of the potential, by the matmul count of its jaxpr (``_bench.matmul_flops``; XLA's
    cost analysis misses the float32 matmuls it hands to a library), or None when it has no matrix product."""
    import jax

    from _bench import matmul_flops

    f = matmul_flops(jax.value_and_grad(potential), z)
    return float(f) if f > 0 else None


def _device_name() -> str:
    """The device the runs use, named by JAX in a child process (the parent may not have started JAX's backends),
    whatever the runs do."""
    import subprocess

    code = "import jax; d = jax.devices()[0]; print(f'{d.platform}: {d.device_kind} ({jax.device_count()} device(s))')"
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    return res.stdout.strip().splitlines()[-1] if res.returncode == 0 and res.stdout.strip() else "unknown device"


def _ess(x):
    """Bulk ESS (ArviZ via bnnzoo.azcompat) per entry of x (chain, draw, entry)."""
    import warnings

    import numpy as np
    import xarray as xr

    from bnnzoo import azcompat

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.Dataset({"x": (("chain", "draw", "entry"), np.asarray(x, float))})
        return np.asarray(azcompat.ess(ds, method="bulk")["x"].values, float)


def _kernel_entries(z, rng_seed=0):
    """Entries of zᵀz/N (upper triangle with the diagonal; at most MAX_K_ENTRIES, a fixed random subset) of the
    preactivations z (chain, draw, neuron, point): (chain, draw, entry)."""
    import numpy as np

    N, P = z.shape[2], z.shape[3]
    iu = np.triu_indices(P)
    if len(iu[0]) > MAX_K_ENTRIES:
        pick = np.sort(np.random.default_rng(rng_seed).choice(len(iu[0]), MAX_K_ENTRIES, replace=False))
        iu = (iu[0][pick], iu[1][pick])
    K = np.empty(z.shape[:2] + (len(iu[0]),), np.float64)
    for d0 in range(0, z.shape[1], 50):                            # blocks of draws: the gathered pairs are large
        zb = np.asarray(z[:, d0:d0 + 50], np.float64)
        K[:, d0:d0 + 50] = np.einsum("cdnp,cdnp->cdp", zb[..., iu[0]], zb[..., iu[1]]) / N
    return K


def figures(idata, timing, net) -> dict:
    """Figures (a)-(d) of a run (module docstring), from its ArviZ data and timing."""
    import numpy as np

    from bnnzoo import azcompat
    from bnnzoo.inference.health import invariant_observables, sampler_health

    post = azcompat.get_group(idata, "posterior")
    y = np.asarray(azcompat.get_group(idata, "observed_data")["y"].values)
    obs = invariant_observables(post, y)
    ess = {}                                                        # group -> ESS per entry
    for name, x in obs.items():
        x3 = x if x.ndim == 3 else x[..., None]
        if not np.isfinite(x3).all() or x3.std(axis=(0, 1)).max() == 0:   # constant (e.g. no outliers): no ESS
            continue
        group = name.split("[")[0]
        ess[group] = np.concatenate([ess[group], _ess(x3)]) if group in ess else _ess(x3)
    site = KERNEL_SITE.get(net)
    if site is not None and site in post:
        ess["K"] = _ess(_kernel_entries(post[site].values))
    wall, samp = timing["total_s"], timing["sampling_s"]
    out = {"ess": {}, "ess_min_entry": {}}
    for g, e in ess.items():
        out["ess"][g] = float(np.nanmean(e)) if np.isfinite(e).any() else None
        out["ess_min_entry"][g] = float(np.nanmin(e)) if np.isfinite(e).any() else None
    means = [v for v in out["ess"].values() if v is not None]
    out["ess_min_obs"] = float(min(means)) if means else None
    out["ess_s_wall"] = {g: (v / wall if v is not None else None) for g, v in out["ess"].items()}
    out["ess_s_sampling"] = {g: (v / samp if v is not None else None) for g, v in out["ess"].items()}
    out["ess_s_wall"]["f_min"] = (out["ess_min_entry"]["f"] / wall) if out["ess_min_entry"].get("f") else None
    out["ess_s_sampling"]["f_min"] = (out["ess_min_entry"]["f"] / samp) if out["ess_min_entry"].get("f") else None
    if out["ess_min_obs"] is not None:
        out["ess_s_wall"]["min_obs"] = out["ess_min_obs"] / wall
        out["ess_s_sampling"]["min_obs"] = out["ess_min_obs"] / samp
    if "a" in post:
        bulk, rhat, within = readout_mixing(np.asarray(post["a"].values, float))
        out.update(a_within_ess=float(np.nanmean(within)), a_rhat_frac=float(np.mean(rhat > 1.1)),
                   a_bulk_ess=float(np.nanmean(bulk)))
        out["a_within_ess_s_wall"] = out["a_within_ess"] / wall
        out["a_within_ess_s_sampling"] = out["a_within_ess"] / samp
        if net == "deep_linear":                                    # (c): the ergodic net only
            out["a_entry_ess_s_wall"] = out["a_bulk_ess"] / wall
            out["a_entry_ess_s_sampling"] = out["a_bulk_ess"] / samp
    h = sampler_health(idata)
    out["health"] = h.status
    out["health_reason"] = h.reason
    out["t_equilibrated_s"] = wall if h.status == "equilibrated" else None
    ss = azcompat.get_group(idata, "sample_stats")
    out["divergences"] = int(np.asarray(ss["diverging"].values).sum())
    out["acceptance"] = float(np.asarray(ss["acceptance_rate"].values).mean())
    return out


def run_one(cfg: dict) -> dict:
    import warnings

    import jax
    import numpy as np

    warnings.simplefilter("ignore")
    entry, task, model_kw = _setup(cfg)
    runner = _run_mams if cfg["sampler"] == "mams" else _run_bnnzoo
    gpu = jax.default_backend() == "gpu"
    idata, timing, grads_per_chain, pot, z_one = runner(entry, task, model_kw, dict(cfg, flops=gpu))
    out = dict(cfg, timing=timing, **figures(idata, timing, cfg["net"]))
    out["grads_per_draw"] = float(np.mean(grads_per_chain) / cfg["samples"])
    out["grads_per_s_per_chain"] = float(np.mean(grads_per_chain) / timing["sampling_s"])
    dev = jax.devices()[0]
    out["device"] = f"{dev.platform}: {getattr(dev, 'device_kind', '?')}"
    out["flops_per_grad"] = out["flop_fraction"] = None
    if gpu and pot is not None:
        f = _flops_per_gradient(pot, z_one)
        if f is not None:
            out["flops_per_grad"] = f
            out["flop_fraction"] = f * out["grads_per_s_per_chain"] * cfg["chains"] / (cfg["peak_tflops"] * 1e12)
    return out


# ----------------------------------------------------------------------------------------------- orchestration

def _fmt(x, nd=1):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 1 or nd > 1:
        return f"{x:.{nd}f}"
    return f"{x:.2g}"


def _ratio_cell(v, ref, nd=1):
    if v is None:
        return "—"
    if ref is None or ref <= 0:
        return _fmt(v, nd)
    return f"{_fmt(v, nd)} ({v / ref:.2g}×)"


def markdown(runs, meta) -> str:
    a = meta["args"]
    lines = ["# Figures of merit: NUTS, ChEES, SNAPER and MAMS side by side", "",
             f"Generated by `{meta['command']}` on {meta['cpus']} CPU cores ({meta['machine']}), "
             f"load average (1 min) {meta['load_start'][0]:.1f} at the start and "
             f"{_fmt(meta.get('load_end', [float('nan')])[0])} at the end (a shared machine: compare within a net, "
             f"measured side by side in one run); {meta.get('wall_s', 0):.0f} s in all. {meta['device']}. "
             + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ". "
             f"{a['chains']} chains, {a['warmup']} warm-up (MAMS: tuning) iterations + {a['samples']} draws, seed "
             f"{a['seed']}, the same for every sampler; toy nets at N = P = {a['sizes']}, three_layer and attention "
             "at their zoo default sizes" + (" (--quick: tiny nets, smoke only; the numbers mean nothing)"
                                              if a.get("quick") else "") + ".", "",
             "Ratios (×) are to vanilla NUTS on the same net. Every run is a fresh process; times include its "
             "compilation. See the script's docstring (`benchmarks/bench_merit.py`) for every definition.", "",
             "## (a) bulk ESS per wall second of the invariant observables, and (d) time to an equilibrated run", "",
             "**(d)**: wall seconds of the whole call (compile + warm-up + sampling) when the health check "
             "(`bnnzoo.inference.health.sampler_health`) calls the run it returned equilibrated; **health**: its "
             "status. **ESS/s**: bulk ESS across chains per wall second of the call; q_a: mean over classes; f, K: "
             "mean over entries (f min: the smallest entry); n_out: readout outlier count; **min obs**: the "
             "smallest of the observables' ESS (f, K: their means) per wall second.", "",
             "| net | sampler | health | (d) s | compile s | mse | q_a | f | f min | K | n_out | min obs |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    ref_of = {}
    for r in runs:
        if r.get("sampler") == "nuts" and "error" not in r:
            ref_of[(r["net"], r["size"])] = r

    def ref(r, *path):
        b = ref_of.get((r["net"], r["size"]))
        if b is None or b is r:
            return None
        for p in path:
            b = b.get(p) if isinstance(b, dict) else None
        return b

    def label(r):
        return f"{r['net']} {r['size']}" if r["net"] in TOY else r["net"]

    for r in runs:
        if "error" in r:
            lines.append(f"| {label(r)} | {r['sampler']} | error: {r['error'][:80]} |" + " |" * 9)
            continue
        ws = r["ess_s_wall"]
        d = _ratio_cell(r["t_equilibrated_s"], ref(r, "t_equilibrated_s")) if r["t_equilibrated_s"] is not None \
            else "not equilibrated"
        t = r["timing"]
        comp = t.get("compile_s", 0.0) + t.get("init_s", 0.0)
        cells = [_ratio_cell(ws.get(k), ref(r, "ess_s_wall", k)) for k in ("mse", "q_a", "f", "f_min", "K",
                                                                          "n_outliers", "min_obs")]
        lines.append(f"| {label(r)} | {r['sampler']} | {r['health']} | {d} | {_fmt(comp)} | " + " | ".join(cells)
                     + " |")
    lines += ["", "## The same ESS per second of sampling alone (compile and warm-up excluded)", "",
              "| net | sampler | sampling s | warm-up s | mse | q_a | f | f min | K | n_out | min obs |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        if "error" in r:
            continue
        ss = r["ess_s_sampling"]
        cells = [_ratio_cell(ss.get(k), ref(r, "ess_s_sampling", k)) for k in ("mse", "q_a", "f", "f_min", "K",
                                                                              "n_outliers", "min_obs")]
        lines.append(f"| {label(r)} | {r['sampler']} | {_fmt(r['timing']['sampling_s'])} | "
                     f"{_fmt(r['timing'].get('warmup_s'))} | " + " | ".join(cells) + " |")
    gpu = any(r.get("flop_fraction") is not None for r in runs)
    lines += ["", "## (b) within-chain readout ESS/s, (c) per-entry readout ESS/s (linear net), (e) gradients", "",
              "**(b)**: each chain's bulk ESS of the readout a on its own, summed over chains, mean over entries, per "
              "wall second (sampling alone in brackets); **a R̂>1.1**: fraction of readout entries whose chains "
              "disagree (branches); **(c)**: bulk ESS across chains of the readout entries (mean) per wall second, "
              "linear net only; **(e)**: gradient evaluations per second per chain while sampling, and "
              + (f"the fraction of the assumed peak float32 rate ({a['peak_tflops']:g} TFLOP/s) the leapfrog reaches"
                 if gpu else "no GPU: (e)'s FLOP-rate fraction not measured") + "; **grads/draw**: per chain.", "",
              "| net | sampler | (b) a within ESS/s | a R̂>1.1 | (c) a entry ESS/s | (e) grad/s/chain | FLOP frac | "
              "grads/draw | accept | div |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        if "error" in r:
            continue
        b = r.get("a_within_ess_s_wall")
        bcell = (f"{_ratio_cell(b, ref(r, 'a_within_ess_s_wall'))} [{_fmt(r['a_within_ess_s_sampling'])}]"
                 if b is not None else "—")
        c = r.get("a_entry_ess_s_wall")
        ccell = (f"{_ratio_cell(c, ref(r, 'a_entry_ess_s_wall'))} [{_fmt(r['a_entry_ess_s_sampling'])}]"
                 if c is not None else "—")
        frac = (f"{r['flop_fraction']:.2%}" if r.get("flop_fraction") is not None else
                "no GPU: (e) not measured" if not r["device"].startswith("gpu") else "—")
        lines.append(f"| {label(r)} | {r['sampler']} | {bcell} | {_fmt(r.get('a_rhat_frac'), 2)} | {ccell} | "
                     f"{_ratio_cell(r['grads_per_s_per_chain'], ref(r, 'grads_per_s_per_chain'))} | {frac} | "
                     f"{_fmt(r['grads_per_draw'])} | {r['acceptance']:.2f} | {r['divergences']} |")
    reasons = [f"- {label(r)} {r['sampler']}: {r['health']}: {r['health_reason']}" for r in runs
               if "error" not in r and r["health"] != "equilibrated"]
    if reasons:
        lines += ["", "## Runs not equilibrated (the health check's reason)", ""] + reasons
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--nets", default=",".join(NETS), help=f"comma-separated, of {', '.join(NETS)}")
    p.add_argument("--samplers", default=",".join(SAMPLERS), help=f"comma-separated, of {', '.join(SAMPLERS)} "
                   "(nuts, the reference of the ratios, should be one of them)")
    p.add_argument("--sizes", default="100", help="comma-separated N = P of the toy nets (default 100)")
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--warmup", type=int, default=300, help="warm-up (MAMS: tuning) iterations")
    p.add_argument("--samples", type=int, default=500, help="kept draws per chain")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--peak-tflops", type=float, default=67.0,
                   help="the device's peak float32 rate in TFLOP/s for (e) on a GPU (default 67: H100 SXM, "
                        "non-tensor-core fp32)")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per (net, sampler) run")
    p.add_argument("--quick", action="store_true", help="smoke run: N = P = 10, tiny non-toy nets, 2 chains, "
                   "30 + 30 iterations")
    p.add_argument("--out", required=False, help="output prefix: writes PREFIX.md and PREFIX.json")
    p.add_argument("--overwrite", action="store_true", help="replace existing PREFIX.md / PREFIX.json")
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(json.loads(args.one))))
        return 0
    if not args.out:
        p.error("--out: give an output prefix (PREFIX.md and PREFIX.json are written)")
    nets = [n for n in args.nets.split(",") if n]
    bad = [n for n in nets if n not in NETS]
    if bad or not nets:
        p.error(f"--nets: unknown {bad or 'empty'}; valid: {', '.join(NETS)}")
    samplers = [s for s in args.samplers.split(",") if s]
    bad = [s for s in samplers if s not in SAMPLERS]
    if bad or not samplers:
        p.error(f"--samplers: unknown {bad or 'empty'}; valid: {', '.join(SAMPLERS)}")
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        p.error(f"--sizes: comma-separated integers >= 2, got {args.sizes!r}")
    if any(s < 2 for s in sizes):
        p.error(f"--sizes: comma-separated integers >= 2, got {args.sizes!r}")
    if args.quick:
        sizes, args.chains, args.warmup, args.samples = [10], 2, 30, 30
    for name, v, lo in (("--chains", args.chains, 2), ("--warmup", args.warmup, 3), ("--samples", args.samples, 4)):
        if v < lo:
            p.error(f"{name}: an integer >= {lo}, got {v}")
    if not args.peak_tflops > 0:
        p.error(f"--peak-tflops: a positive number, got {args.peak_tflops}")
    out_md, out_json = Path(args.out + ".md"), Path(args.out + ".json")
    for f in (out_md, out_json):
        if f.exists() and not args.overwrite:
            p.error(f"--out: {f} exists; pass --overwrite to replace it")
    if not out_md.parent.is_dir():
        p.error(f"--out: folder {out_md.parent} does not exist")
    if "mams" in samplers:
        try:
            import blackjax  # noqa: F401
        except ImportError:
            p.error("--samplers: mams needs blackjax (pip install 'blackjax>=1.7,<2'), or leave mams out")
    args.sizes = ",".join(map(str, sizes))
    t_start = time.time()
    meta = dict(command=" ".join(["python", "benchmarks/bench_merit.py"] + list(sys.argv[1:] if argv is None
                                                                           else argv)),
                machine=f"{platform.system()} {platform.machine()}", cpus=os.cpu_count(),
                load_start=list(os.getloadavg()), versions=versions(), args=vars(args),
                device=_device_name())
    runs = []
    configs = [(net, N) for net in nets for N in (sizes if net in TOY else [0])]
    for net, N in configs:
        for s in samplers:
            cfg = dict(net=net, size=N, sampler=s, chains=args.chains, warmup=args.warmup, samples=args.samples,
                       seed=args.seed, quick=args.quick, peak_tflops=args.peak_tflops)
            r = run_child(__file__, cfg, args.timeout)
            runs.append(r)
            if "error" in r:
                msg = "error: " + r["error"]
            else:
                msg = (f"{r['timing']['total_s']:.0f} s, {r['health']}, min-obs ESS/s "
                       f"{_fmt(r['ess_s_wall'].get('min_obs'))}, grad/s/chain {r['grads_per_s_per_chain']:.0f}")
                if r["device"] != "cpu: cpu":
                    meta["device"] = f"JAX device: {r['device']} (chains vectorised on it)"
            print(f"[merit] {net:12s} {N or '':>4} {s:7s} {msg}", flush=True)
            meta.update(load_end=list(os.getloadavg()), wall_s=round(time.time() - t_start, 1))
            out_json.write_text(json.dumps(dict(meta=meta, runs=runs), indent=1))
            out_md.write_text(markdown(runs, meta))
    print(f"[merit] wrote {out_md} and {out_json} ({meta['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
