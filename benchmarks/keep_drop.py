"""Keep or drop (issue 50, "only what wins"): the options without a current result that keeps them, measured side by
side in one run against what would replace them.

    python benchmarks/keep_drop.py --out benchmarks/results/keep_drop            # both parts (~40 min, 2 CPU cores)
    python benchmarks/keep_drop.py --parts samplers --out /tmp/kd               # part 1 only
    python benchmarks/keep_drop.py --quick --out /tmp/kdq                        # smoke run (tiny nets)

Part 1, ``samplers``: fixed-length HMC and the readout / data-space reparametrisations, against NUTS, SNAPER and the
unit-wise sampler, through ``bnnzoo.sample`` with the same seed, chains, warm-up and draws.  The
figures are ``bench_merit.figures`` (one code for every run): bulk ESS across chains of the permutation-invariant
observables (mse, q_a, f, the kernel K = zᵀz/N) per wall second, the readout's within-chain ESS per wall second, the
readout's per-entry ESS across chains on the linear net only (ergodic there), and the health gate's verdict.  Variants:

* ``nuts``   NUTS (``sampler="nuts"``);
* ``nuts+data``  NUTS with the first layer sampled in data space (``reparam=("data_space",)``, as notebooks 04
  and 07 run it);
* ``hmc``    fixed-length HMC (``sampler="hmc"``) with ``num_steps`` = NUTS's mean leapfrog steps per draw in the
  same run (rounded), its step size adapted as NUTS's;
* ``snaper``, ``snaper+ro+data``  SNAPER on the weight-space model, and with the readout integrated out and the
  first layer sampled in data space;
* ``units``  the unit-wise sampler (``sampler="units"``; sweeps instead of steps: ``--units-steps``).

Part 2, ``evidence``: adaptive tempered SMC (``sampler="smc"``) on the log evidence: on the one-hidden-layer linear
net, against the MCMC-free value of :func:`bnnzoo.theory.linear_evidence` (hidden weights integrated out exactly), and
on a small sigmoidal net (no exact value), with each run's trust flag and wall time.

The options this benchmark decided to drop were removed afterwards (``reparam=("readout",)`` alone, ``warm_start``,
``sampler="pt"``): it no longer runs them, and ``benchmarks/results/keep_drop.md`` / ``.json`` keep their runs as the
record of the decision (the markdown still renders their rows from a stored ``.json``).

Writes ``PREFIX.md`` and ``PREFIX.json`` after every run.
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

from _bench import run_child, versions

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

VARIANTS = {
    "nuts": dict(sampler="nuts"),
    "nuts+data": dict(sampler="nuts", reparam=("data_space",)),   # what notebooks 04 and 07 run
    "hmc": dict(sampler="hmc"),                       # num_steps from the NUTS run of the same net
    "snaper": dict(sampler="snaper"),
    "snaper+ro+data": dict(sampler="snaper", reparam=("readout", "data_space")),
    "units": dict(sampler="units"),
}


# ----------------------------------------------------------------------------------------------- children

def run_sampler(cfg: dict) -> dict:
    import warnings

    import numpy as np

    import bnnzoo
    from bench_merit import _record, _setup, figures
    from bnnzoo import azcompat

    warnings.simplefilter("ignore")
    entry, task, model_kw = _setup(cfg)
    opts = dict(VARIANTS[cfg["variant"]])
    warmup, samples = cfg["warmup"], cfg["samples"]
    if cfg["variant"] == "hmc":
        opts["num_steps"] = cfg["num_steps"]
    if cfg["variant"] == "units":
        warmup, samples = cfg["units_steps"]
    t0 = time.perf_counter()
    idata = bnnzoo.sample(entry, task, num_chains=cfg["chains"], num_warmup=warmup, num_samples=samples,
                          seed=cfg["seed"], record=_record(cfg["net"]), progress=False,
                          chunk_size=None if cfg["variant"] == "units" else samples, **opts, **model_kw)
    total = time.perf_counter() - t0
    timing = {k: v for k, v in bnnzoo.run_config(idata)["engine"]["timing"].items()
              if k.endswith("_s") and isinstance(v, (int, float))}
    timing["total_s"] = total
    timing.setdefault("sampling_s", total)
    out = dict(cfg, timing=timing, **figures(idata, timing, cfg["net"]))
    ss = azcompat.get_group(idata, "sample_stats")
    out["mean_steps"] = float(np.asarray(ss["n_steps"].values).mean()) if "n_steps" in ss else None
    return out


def run_evidence(cfg: dict) -> dict:
    import warnings

    import bnnzoo
    from bnnzoo.inference.smc import log_evidence
    from bnnzoo.theory import linear_evidence

    warnings.simplefilter("ignore")
    task = bnnzoo.toy_task(P=cfg["P"], N0=cfg["P"], y_neg=cfg["y_neg"])
    kw = dict(width=cfg["width"], temperature=cfg["temperature"], num_chains=cfg["chains"], seed=cfg["seed"],
              progress=False)
    kw.update(sampler="smc", num_warmup=0, num_samples=cfg["particles"], num_steps=cfg["num_steps"],
              tempering={"num_mcmc_steps": cfg["mcmc_steps"]})
    t0 = time.perf_counter()
    idata = bnnzoo.sample(cfg["entry"], task, **kw)
    wall = time.perf_counter() - t0
    ev = log_evidence(idata)
    eng = bnnzoo.run_config(idata)["engine"]
    out = dict(cfg, wall_s=wall, value=ev.value, se=ev.se, method=ev.method, trustworthy=bool(ev.trustworthy),
               reason=ev.reason, round_trips=None)
    if cfg["entry"] == "deep_linear":
        ex = linear_evidence(task, **bnnzoo.run_config(idata)["model_kwargs"])
        out.update(exact=ex.value, exact_se=ex.se, error_nats=ev.value - ex.value,
                   z=(ev.value - ex.value) / math.hypot(ev.se, ex.se))
    return out


# ----------------------------------------------------------------------------------------------- report

def _f(x, nd=2):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    return f"{x:.{nd}f}" if abs(x) < 1000 else f"{x:.0f}"


def markdown(meta, samp, evid) -> str:
    a = meta["args"]
    lines = ["# Keep or drop: fixed-length HMC, reparametrisations, warm start, parallel tempering (issue 50)", "",
             f"Generated by `{meta['command']}` on {meta['cpus']} CPU cores ({meta['machine']}), shared with other "
             f"jobs: load average (1 min) {meta['load_start'][0]:.1f} at the start, "
             f"{meta.get('load_end', [float('nan')])[0]:.1f} at the end; {meta.get('wall_s', 0):.0f} s in all. "
             + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + f"; {meta['date']}. "
             "Ratios compare runs of one net in this one run (interleaved, the same load). Definitions: the "
             "docstring of `benchmarks/keep_drop.py` and `benchmarks/bench_merit.py`.", ""]
    if samp:
        lines += [f"## Part 1: samplers and options ({a['chains']} chains, {a['warmup']} warm-up + {a['samples']} "
                  f"draws; units {a['units_steps']} sweeps; seed {a['seed']})", "",
                  "ESS/s: bulk ESS across chains per wall second of the whole call (compile, warm-up, sampling); "
                  "q_a mean over classes, f and K mean over entries; min obs: the smallest observable's; (b) the "
                  "readout's within-chain ESS per wall second; (c) the readout's per-entry ESS across chains per wall "
                  "second (linear net only); ×: ratio to snaper on the same net.", "",
                  "| net | variant | health | wall s | steps/draw | mse | q_a | f | K | min obs | (b) a within | "
                  "(c) a entry | a R̂>1.1 |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        ref = {r["net"]: r for r in samp if r["variant"] == "snaper" and "error" not in r}

        def cell(r, key, sub=None):
            v = r.get(key) if sub is None else (r.get(key) or {}).get(sub)
            b = ref.get(r["net"])
            bv = None if b is None or b is r else (b.get(key) if sub is None else (b.get(key) or {}).get(sub))
            if v is None:
                return "—"
            return f"{_f(v)} ({v / bv:.2g}×)" if bv else _f(v)

        for r in samp:
            name = f"{r['net']} {r['size']}"
            if "error" in r:
                lines.append(f"| {name} | {r['variant']} | error: {r['error'][:100]} |" + " |" * 10)
                continue
            lines.append(f"| {name} | {r['variant']} | {r['health']} | {_f(r['timing']['total_s'], 0)} | "
                         f"{_f(r.get('mean_steps'), 1)} | "
                         + " | ".join(cell(r, "ess_s_wall", k) for k in ("mse", "q_a", "f", "K", "min_obs"))
                         + f" | {cell(r, 'a_within_ess_s_wall')} | {cell(r, 'a_entry_ess_s_wall')} | "
                         f"{_f(r.get('a_rhat_frac'))} |")
        lines += ["", "The same runs: bulk ESS (all chains together; a within: the readout's within-chain ESS summed over "
                  "chains, mean over entries) and ESS per second of sampling alone (compile, initialisation and warm-up "
                  "excluded, so less sensitive to the load while each run compiled).", "",
                  "| net | variant | init + compile s | warm-up s | sampling s | ESS mse | ESS q_a | ESS f | ESS K | "
                  "ESS a within | /s mse | /s q_a | /s f | /s K | /s a within |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in samp:
            if "error" in r:
                continue
            t, e = r["timing"], r["ess"]
            samp_s = t.get("sampling_s")
            within = r.get("a_within_ess")
            lines.append(f"| {r['net']} {r['size']} | {r['variant']} | "
                         f"{_f(t.get('init_s', 0) + t.get('compile_s', 0) + t.get('warm_start_compile_s', 0), 0)} | "
                         f"{_f(t.get('warmup_s'), 0)} | {_f(samp_s, 0)} | "
                         + " | ".join(_f(e.get(k), 0) for k in ("mse", "q_a", "f", "K")) + f" | {_f(within, 0)} | "
                         + " | ".join(_f(e[k] / samp_s if e.get(k) and samp_s else None, 1) for k in ("mse", "q_a", "f", "K"))
                         + f" | {_f(within / samp_s if within and samp_s else None, 1)} |")
        bad = [f"- {r['net']} {r['variant']}: {r['health']}: {r['health_reason']}" for r in samp
               if "error" not in r and r["health"] != "equilibrated"]
        if bad:
            lines += ["", "Runs not equilibrated (the health gate's reason):", ""] + bad
    if evid:
        lines += ["", "## Part 2: log evidence, parallel tempering (stored runs) against SMC", "",
                  "exact: `bnnzoo.theory.linear_evidence` (linear net only); z = (value − exact) / combined se; "
                  "trust: the sampler's own check (PT: round trips, bracket, stepping stone; SMC: spread of the "
                  "per-chain estimates).", "",
                  "| net | sampler | setting | wall s | log Z ± se | exact | error | z | trust | reason | round trips |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in evid:
            setting = (f"{r['replicas']} replicas, {r['warmup']} + {r['samples']}, L = {r['num_steps']}"
                       if r["sampler"] == "pt" else f"{r['particles']} particles × {r['chains']}, "
                       f"{r['mcmc_steps']} moves of L = {r['num_steps']}") + f", seed {r['seed']}"
            name = f"{r['entry']} P={r['P']} N={r['width']} T={r['temperature']}"
            if "error" in r and isinstance(r["error"], str):
                lines.append(f"| {name} | {r['sampler']} | {setting} | error: {r['error'][:100]} |" + " |" * 7)
                continue
            lines.append(f"| {name} | {r['sampler']} | {setting} | {_f(r['wall_s'], 0)} | {_f(r['value'])} ± "
                         f"{_f(r['se'], 3)} | {_f(r.get('exact'))} | {_f(r.get('error_nats'), 3)} | {_f(r.get('z'), 1)} | "
                         f"{'yes' if r['trustworthy'] else 'no'} | {r['reason'] or '—'} | "
                         f"{r['round_trips'] if r['round_trips'] is not None else '—'} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--parts", default="samplers,evidence")
    p.add_argument("--nets", default="sigmoidal:nuts,hmc,snaper,snaper+ro+data,units;"
                   "deep_linear:snaper,snaper+ro+data",
                   help="NET:VARIANT,...;NET:... (nuts before hmc: hmc takes NUTS's mean steps)")
    p.add_argument("--size", type=int, default=60, help="N = P of the toy nets")
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument("--samples", type=int, default=500)
    p.add_argument("--units-steps", default="200,600", help="units: warm-up, kept sweeps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=int, default=1500)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", help="output prefix: writes PREFIX.md and PREFIX.json")
    args = p.parse_args(argv)
    if args.one:
        cfg = json.loads(args.one)
        print(json.dumps(run_evidence(cfg) if cfg.get("part") == "evidence" else run_sampler(cfg)))
        return 0
    if not args.out:
        p.error("--out: give an output prefix (PREFIX.md and PREFIX.json are written)")
    if args.quick:
        args.size, args.chains, args.warmup, args.samples, args.units_steps = 10, 2, 30, 30, "10,20"
    units_steps = [int(s) for s in args.units_steps.split(",")]
    parts = args.parts.split(",")
    t_start = time.time()
    meta = dict(command=" ".join(["python", "benchmarks/keep_drop.py"] + list(sys.argv[1:] if argv is None else argv)),
                machine=f"{platform.system()} {platform.machine()}", cpus=os.cpu_count(),
                load_start=list(os.getloadavg()), versions=versions(), args=vars(args),
                date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    samp, evid = [], []
    out_md, out_json = Path(args.out + ".md"), Path(args.out + ".json")

    def save():
        meta.update(load_end=list(os.getloadavg()), wall_s=round(time.time() - t_start, 1))
        out_json.write_text(json.dumps(dict(meta=meta, samplers=samp, evidence=evid), indent=1))
        out_md.write_text(markdown(meta, samp, evid))

    if "samplers" in parts:
        for spec in args.nets.split(";"):
            net, variants = spec.split(":")
            nuts_steps = None
            for v in variants.split(","):
                cfg = dict(part="samplers", net=net, size=args.size, variant=v, chains=args.chains,
                           warmup=args.warmup, samples=args.samples, seed=args.seed, quick=False,
                           units_steps=units_steps)
                if v == "hmc":
                    if nuts_steps is None:
                        samp.append(dict(cfg, error="no NUTS run before it to take num_steps from"))
                        continue
                    cfg["num_steps"] = max(1, round(nuts_steps))
                r = run_child(__file__, cfg, args.timeout)
                if v == "nuts" and "error" not in r:
                    nuts_steps = r["mean_steps"]
                samp.append(r)
                msg = r.get("error") or (f"{r['timing']['total_s']:.0f} s, {r['health']}, min obs ESS/s "
                                         f"{_f(r['ess_s_wall'].get('min_obs'))}")
                print(f"[keep_drop] {net} {v}: {msg}", flush=True)
                save()
    if "evidence" in parts:
        q = args.quick
        lin = dict(part="evidence", entry="deep_linear", P=6 if q else 12, width=4 if q else 8,
                   temperature=0.05, y_neg=0.0, chains=4, seed=args.seed)
        sig = dict(lin, entry="sigmoidal", P=6 if q else 20, width=4 if q else 10, y_neg=0.5)
        for base in (lin, sig):
            smc = dict(base, sampler="smc", particles=64 if q else 1000, mcmc_steps=10, num_steps=8)
            r = run_child(__file__, smc, args.timeout)
            evid.append(r)
            print(f"[keep_drop] evidence {r['entry']} {r['sampler']}: "
                  + (r["error"] if isinstance(r.get("error"), str) else
                     f"{r['value']:.3f} ± {r['se']:.3f} in {r['wall_s']:.0f} s, trust {r['trustworthy']}"),
                  flush=True)
            save()
    save()
    print(f"[keep_drop] wrote {out_md} and {out_json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
