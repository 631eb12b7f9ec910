"""Can the demo's sigmoidal net run at T = 0.01 with sampler="units" and certified populations within its budget?

    python benchmarks/demo_sigmoidal_units.py --size 60 --warmup 100 --samples 200 --seed 0
    python benchmarks/demo_sigmoidal_units.py --size 100 --warmup 50 --samples 100 --seed 0

One call of ``bnnzoo.sample("sigmoidal", toy_task(P), width=N, sampler="units", temperature=T,
certify=FAMILIES, num_chains=C, ...)`` (C chains per start family, the demo's unread sites excluded, as
``bnnzoo demo`` samples it), then :func:`bnnzoo.inference.health.sampler_health` of the whole run: the health status
and why, the R̂ of the invariant observables, whether the families agree (and on what not), each family's code
fractions against the single-neuron mean field's branch masses, the wall and user CPU seconds of the call and the
load average before and after it (the machine may be shared: say which runs were loaded).

Appends one JSON line per run to ``--out`` (default ``benchmarks/results/demo_sigmoidal_units.jsonl``).
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np

import bnnzoo
from bnnzoo.inference.convert import run_config
from bnnzoo.inference.health import sampler_health
from bnnzoo.theory.meanfield import single_neuron_meanfield

HERE = Path(__file__).resolve().parent
CODES = ("011", "101", "110", "111")


def _load() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=100, help="N = P")
    p.add_argument("--warmup", type=int, default=100, help="warm-up sweeps per chain")
    p.add_argument("--samples", type=int, default=200, help="kept sweeps per chain")
    p.add_argument("--chains", type=int, default=4, help="chains per start family")
    p.add_argument("--families", default="prior,meanfield", help="start families, comma-separated")
    p.add_argument("--temperature", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(HERE / "results" / "demo_sigmoidal_units.jsonl"))
    a = p.parse_args(argv)

    entry = bnnzoo.get_entry("sigmoidal")
    task = entry.make_task(**dict(entry.task_defaults, P=a.size))
    load0, t0, c0 = _load(), time.time(), _cpu()
    idata = bnnzoo.sample("sigmoidal", task, certify=a.families.split(","), width=a.size, sampler="units",
                          temperature=a.temperature, num_chains=a.chains, num_warmup=a.warmup,
                          num_samples=a.samples, seed=a.seed, progress=False,
                          exclude=entry.unread_sites(dict(entry.defaults, width=a.size)))
    wall, cpu, load1 = time.time() - t0, _cpu() - c0, _load()
    h = sampler_health(idata)
    cert = run_config(idata)["certification"]
    mf = single_neuron_meanfield(task, nonlinearity="sigmoid", temperature=a.temperature)
    theory = {c: float(m) for c, m in zip(mf.branch_code, mf.branch_mass)}
    obs = cert["observables"]
    codes = {fam: {c: round(float(obs[f"code_fraction[z1][{c}]"][fam][0]), 4) for c in CODES
                   if f"code_fraction[z1][{c}]" in obs} for fam in cert["families"]}
    other = {fam: round(1.0 - sum(codes[fam].values()), 4) for fam in cert["families"]}
    row = dict(size=a.size, warmup=a.warmup, samples=a.samples, chains=a.chains, families=cert["families"],
               temperature=a.temperature, seed=a.seed, wall_s=round(wall, 1), cpu_s=round(cpu, 1),
               load_before=load0, load_after=load1, family_wall_s={f: r["wall_time_s"] for f, r in
                                                                   cert["runs"].items()},
               health=h.status, relaxing=list(h.relaxing),
               rhat={k: round(float(v), 3) for k, v in h.rhat.items() if np.isfinite(v)},
               agree=bool(cert["agree"]), disagreements=list(cert["disagreements"]),
               not_compared=list(cert.get("not_compared", [])), criterion=h.criterion,
               code_fractions=codes, other_codes=other,
               meanfield={c: round(theory.get(c, 0.0), 4) for c in CODES})
    with open(a.out, "a") as fh:
        fh.write(json.dumps(row) + "\n")
    print(json.dumps(row, indent=1))
    return row


if __name__ == "__main__":
    main()
