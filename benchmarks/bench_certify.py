"""Time to a certified run: the default sampler against another (issue 31; parallel tempering, run here before it
was removed, is kept in the stored results, whose markdown ``--render`` still writes).

For each net (the sigmoidal net at y− = 0.1, whose prior-started chains lock code 100 onto too many units, the
ReLU net at y− = −½, whose outliers form slowly, and with ``--nets sigmoidal`` Fig. 2's sigmoidal net at y− = ½,
decided by code 111) and each sampler, one ``bnnzoo.sample(..., certify=True)`` call
in a fresh process (its own compile, its own memory): two or three start families of ``--chains`` chains each,
the same warm-up and draws for every sampler.  Reported side by side: the wall time of the whole certified call, the
health status (``equilibrated`` only when the chains mix and every start family agrees on every population
observable), the families' agreement, the largest R̂ of the invariant observables, and the population observables
that decide the row (code 100 for the sigmoidal net, outliers per class for ReLU) per family.  "Time to a
certified run" is that wall time when the status is ``equilibrated``; otherwise the row says what stopped it.

Run: ``python benchmarks/bench_certify.py --size 100 --chains 4 --warmup 500 --samples 300 --out
benchmarks/results/certify_cpu`` (writes ``.json`` and ``.md``).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import run_child  # noqa: E402

NETS = {"sigmoidal": dict(entry="sigmoidal", y_neg=0.5, key="code_fraction[z1][111]"),
        "sigmoidal_ym01": dict(entry="sigmoidal", y_neg=0.1, key="code_fraction[z1][100]"),
        "relu": dict(entry="relu", y_neg=-0.5, key="outliers[")}


def one(cfg: dict) -> dict:
    """One certified call (run in a child process); returns the numbers as a dict."""
    import bnnzoo
    from bnnzoo import azcompat
    from bnnzoo.inference.health import sampler_health

    net = NETS[cfg["net"]]
    entry = bnnzoo.get_entry(net["entry"])
    N = cfg["size"]
    task = entry.make_task(**dict(entry.task_defaults, P=N, N0=N + 20, y_neg=net["y_neg"]))
    t0 = time.perf_counter()
    run = bnnzoo.sample(entry, task, width=N, temperature=0.01, num_chains=cfg["chains"],
                        num_warmup=cfg["warmup"], num_samples=cfg["samples"], seed=cfg["seed"],
                        sampler=cfg["sampler"], record=("z",), certify=True, progress=False)
    wall = time.perf_counter() - t0
    h = sampler_health(run)
    cert = json.loads(azcompat.get_attrs(run)["bnnzoo_certification"])
    obs = {k: v for k, v in cert["observables"].items() if k.startswith(net["key"])}
    finite = [v for v in h.rhat.values() if isinstance(v, float) and math.isfinite(v)]
    return dict(cfg, wall_s=wall, status=h.status, reason=h.reason, agree=cert["agree"],
                disagreements=cert["disagreements"], max_rhat=max(finite) if finite else None,
                families=cert["families"], observables=obs)


def markdown(res: dict) -> str:
    a = res["args"]
    lines = ["# Time to a certified run: " + " against ".join(a["samplers"].split(",")), "",
             f"Command: `{res['command']}`.  Machine: {res['machine']}.  Versions: {res['versions']}.  "
             f"Total {res['total_s']:.0f} s.", "",
             f"Toy task, N = P = {a['size']}, N0 = P + 20, T = 0.01, {a['chains']} chains per start family, "
             f"{a['warmup']} warm-up + {a['samples']} draws per family"
             + (f" (sampler='units': {a['units_steps'].replace(',', ' + ')} sweeps)" if a.get("units_steps") else "")
             + "; each call `bnnzoo.sample(..., "
             f"certify=True)` in its own process (compile included)."
             + (f"  PT: {a['replicas']} replicas." if "pt" in a["samplers"].split(",") else ""), "",
             "| net | sampler | wall (s) | health | families agree | max R̂ | deciding observable per family | PT round trips | time to a certified run |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in res["runs"]:
        if "error" in r:
            lines.append(f"| {r['net']} | {r['sampler']} | — | {r['error']} | — | — | — | — | not reached |")
            continue
        obs = "; ".join(f"{k}: " + ", ".join(f"{f} {v[0]:.3g} ± {v[1]:.2g}" for f, v in fam.items())
                        for k, fam in r["observables"].items())
        rt = "—" if r.get("round_trips") is None else str(r["round_trips"])
        cert = f"{r['wall_s']:.0f} s" if r["status"] == "equilibrated" else f"not reached ({r['status']})"
        mr = "—" if r["max_rhat"] is None else f"{r['max_rhat']:.2f}"
        reason = r["reason"][:160].replace("|", "\\|") + ("…" if len(r["reason"]) > 160 else "")
        lines.append(f"| {r['net']} | {r['sampler']} | {r['wall_s']:.0f} | {r['status']}{': ' + reason if reason else ''} | "
                     f"{r['agree']} | {mr} | {obs} | {rt} | {cert} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench_certify.py", description=__doc__.splitlines()[0])
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    p.add_argument("--size", type=int, default=100, help="N = P (default 100)")
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--warmup", type=int, default=500)
    p.add_argument("--samples", type=int, default=300)
    p.add_argument("--samplers", default="snaper,units")
    p.add_argument("--units-steps", default=None, metavar="WARMUP,SAMPLES",
                   help="warm-up and kept sweeps of sampler='units' (default: --warmup, --samples)")
    p.add_argument("--nets", default="sigmoidal_ym01,relu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=int, default=1800, help="seconds per call (default 1800)")
    p.add_argument("--render", default=None, help="stem of an existing result: rewrite its .md from its .json")
    p.add_argument("--out", required=False, default=None, help="stem of the .json / .md result files")
    args = p.parse_args(argv)
    if args.one is not None:
        print(json.dumps(one(json.loads(args.one))))
        return 0
    if args.render is not None:                   # rewrite the markdown from a result's JSON, sampling nothing
        Path(args.render + ".md").write_text(markdown(json.loads(Path(args.render + ".json").read_text())))
        return 0
    if args.out is None:
        p.error("--out is required")
    for path in (Path(args.out + ".json"), Path(args.out + ".md")):
        if path.exists():
            p.error(f"--out: {path} exists; remove it first")
    import jax
    import numpyro

    import bnnzoo

    t0 = time.time()
    runs = []
    res = dict(command="python benchmarks/bench_certify.py " + " ".join(sys.argv[1:] if argv is None else argv),
               machine=f"{platform.machine()}, {jax.device_count()} × {jax.devices()[0].device_kind}",
               versions=f"Python {platform.python_version()}, jax {jax.__version__}, numpyro {numpyro.__version__}, "
                        f"bnnzoo {bnnzoo.__version__}", args=vars(args), runs=runs)
    for net in args.nets.split(","):
        for sampler in args.samplers.split(","):
            warmup, samples = args.warmup, args.samples
            if sampler == "units" and args.units_steps:
                warmup, samples = (int(x) for x in args.units_steps.split(","))
            cfg = dict(net=net, sampler=sampler, size=args.size, chains=args.chains, warmup=warmup,
                       samples=samples, seed=args.seed)
            print(f"[{time.strftime('%H:%M:%S')}] {net} {sampler} ...", file=sys.stderr, flush=True)
            runs.append(run_child(__file__, cfg, args.timeout))
            res["total_s"] = time.time() - t0
            Path(args.out + ".json").write_text(json.dumps(res, indent=1) + "\n")
            Path(args.out + ".md").write_text(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
