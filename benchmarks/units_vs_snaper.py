"""Do units switch codes? The unit-wise sampler (sampler="units") against the default SNAPER on the sigmoidal net.

    python benchmarks/units_vs_snaper.py                       # N = P = 60 and 100, 2 chains each (a few minutes)
    python benchmarks/units_vs_snaper.py --sizes 60 --chains 4 --out /tmp/uvs
    python benchmarks/units_vs_snaper.py --proposals 40,60 --sizes 60   # the proposal variants (~2 min)

Toy task, y− = ½, T = 0.01, one hidden layer, prior starts, both samplers on the same task and seed, one after the
other in one process.  Per run: the acceptance rate (units: accepted unit moves per proposal; SNAPER: the HMC
acceptance probability — different things, side by side), the sampling time, and **persistent code switches**: each
unit's (neuron × chain) code at every draw is the sign pattern of its class-mean preactivations (``zbar1``, as
:mod:`bnnzoo.diagnostics.codes`); the draws are cut into consecutive windows of ``--window`` draws and a switch is a
change of the unit's modal code from one window to the next — flicker inside a window does not count; of those,
the switches between two branches of the redundant code (011 ↔ 101 ↔ 110: two classes on before and after, not a
hop to or from 111), and the units whose first and last windows sit on two different such branches.  Rates are
per unit, per second of sampling (warm-up excluded) and per 1000 draws; the final code fractions are the modal codes
over the last window, next to the mean field's branch masses (docs/theory.md §5).

Writes ``benchmarks/results/units_vs_snaper.md`` and ``.json`` (or ``--out`` stem).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings
from pathlib import Path

from _bench import persistent_switches, rhat_of, with_reading

HERE = Path(__file__).resolve().parent


def branch_switches(zbar, window: int):
    """Persistent code switches (:func:`_bench.persistent_switches`) of the codes of zbar (chain, draw, neuron, class),
    and of them the moves between branches of the redundant code.

    Returns (switches per unit (units,), switches between two codes with exactly two classes on — a move between
    branches of the redundant code, 011 ↔ 101 ↔ 110 on the toy task — per unit, units whose modal code in the first
    and the last window are two different such codes, modal codes of the last window (units,))."""
    import numpy as np

    from bnnzoo.diagnostics.codes import code_ids

    switches, modal = persistent_switches(code_ids(zbar), window)         # (chain, neuron), (chain, window, neuron)
    two_on = np.array([bin(k).count("1") == 2 for k in range(1 << zbar.shape[-1])])
    change = modal[:, 1:] != modal[:, :-1]
    between = change & two_on[modal[:, 1:]] & two_on[modal[:, :-1]]
    turnover = (modal[:, -1] != modal[:, 0]) & two_on[modal[:, -1]] & two_on[modal[:, 0]]
    return switches.ravel(), between.sum(1).ravel(), turnover.ravel(), modal[:, -1].ravel()


def one_run(sampler, N, chains, warmup, samples, seed, window, y_neg=0.5):
    import numpy as np

    import bnnzoo
    from bnnzoo import azcompat
    from bnnzoo.diagnostics.codes import code_string

    import arviz as az

    task = bnnzoo.toy_task(P=N, y_neg=y_neg, seed=0)
    t0 = time.perf_counter()
    idata = bnnzoo.sample("sigmoidal", task, width=N, temperature=0.01, sampler=sampler, num_chains=chains,
                          num_warmup=warmup, num_samples=samples, seed=seed, progress=False)
    wall = time.perf_counter() - t0
    cfg = bnnzoo.run_config(idata)
    timing = cfg.get("engine", {}).get("timing", {})
    post = azcompat.get_group(idata, "posterior")
    ss = azcompat.get_group(idata, "sample_stats")
    sw, between, turnover, last = branch_switches(post["zbar1"].values, window)
    sampling_s = float(timing.get("sampling_s", float("nan")))
    units = sw.size
    frac = {code_string(k, 3): float(np.mean(last == k)) for k in range(8)}
    qa = np.asarray(post["q_a"].values, float)                            # (chain, draw, class)
    rhat_qa = max(float(rhat_of(qa[..., c])) for c in range(qa.shape[-1]))
    ess_qa = min(float(az.ess(qa[..., c])) for c in range(qa.shape[-1]))
    out = dict(sampler=sampler, N=N, P=N, y_neg=y_neg, rhat_q_a=rhat_qa, chains=chains, warmup=warmup, samples=samples, seed=seed, window=window,
               wall_s=round(wall, 1), warmup_s=round(float(timing.get("warmup_s", float("nan"))), 1),
               sampling_s=round(sampling_s, 1), acceptance=float(ss["acceptance_rate"].mean()),
               switches_total=int(sw.sum()), units=units,
               units_switching=int((sw > 0).sum()),
               switches_per_unit_per_s=float(sw.sum() / units / sampling_s),
               switches_per_unit_per_1000_draws=float(sw.sum() / units / samples * 1000),
               between_branches_total=int(between.sum()),
               between_branches_per_unit_per_s=float(between.sum() / units / sampling_s),
               units_changed_branch_first_to_last=int(turnover.sum()),
               code_fractions_last_window=frac, mse=float(post["mse"].mean()),
               ess_q_a=ess_qa, ess_q_a_per_s=ess_qa / sampling_s)
    if "code_change_rate" in ss:
        out["code_changes_per_unit_per_sweep"] = float(ss["code_change_rate"].mean())
    return out


PROPOSALS = (("ref", None, 1), ("diag", None, 1), ("none", None, 1), ("ref", (-2.5, -1.0, -0.3, 0.0, 0.3, 1.0, 2.5), 1),
             ("ref", None, 2))
"""The proposal variants of ``--proposals``: (self term, breakpoints (None: the default), tries per unit)."""


def proposals(args):
    """Acceptance, code changes and cost of the proposal variants (:data:`PROPOSALS`) on the sigmoidal net."""
    import numpy as np

    import bnnzoo
    from bnnzoo.inference import units as U

    N = int(args.sizes.split(",")[0])
    task = bnnzoo.toy_task(P=N, y_neg=0.5, seed=0)
    w, n = (int(x) for x in args.proposals.split(","))
    rows = []
    for self_term, breaks, tries in PROPOSALS:
        t0 = time.perf_counter()
        _, stats, info = U.units_chains(task.X, task.Y, num_chains=args.chains, num_warmup=w, num_samples=n,
                                        seed=args.seed, width=N, activation="sigmoid", temperature=0.01,
                                        self_term=self_term, breaks=breaks or U.BREAKS, tries=tries)
        rows.append(dict(self_term=self_term, breaks=list(breaks or U.BREAKS), tries=tries,
                         acceptance=float(stats["acceptance_rate"].mean()),
                         code_changes_per_unit_per_sweep=float(stats["code_change_rate"].mean()),
                         warmup_acceptance_last_10=float(np.mean(info["warmup_acceptance"][:, -10:])),
                         seconds_per_sweep=info["timing"]["sampling_s"] / n, wall_s=time.perf_counter() - t0))
        print(json.dumps(rows[-1]), flush=True)
        _write_proposals(args, N, w, n, rows)          # after every variant: a run cut short keeps what it measured


def _write_proposals(args, N, w, n, rows):
    from bnnzoo._record import jsonable

    stem = Path(args.out or HERE / "results" / "units_proposals")
    Path(f"{stem}.json").write_text(json.dumps(jsonable(dict(args=vars(args), N=N, rows=rows)), indent=1))
    done = "" if len(rows) == len(PROPOSALS) else f" (run cut short: {len(rows)} of {len(PROPOSALS)} variants)"
    md = ["# Proposals of sampler='units': acceptance and cost, sigmoidal net" + done, "",
          f"`python benchmarks/units_vs_snaper.py --proposals {args.proposals} --sizes {N} --chains {args.chains} "
          f"--seed {args.seed}`", "",
          f"N = P = {N}, y− = ½, T = 0.01, {args.chains} chains from the prior, {w} warm-up + {n} sweeps each "
          f"(bnnzoo.inference.units.units_chains); 2 CPU cores shared with other jobs. Self term: how the "
          f"proposal treats −|t|² φᵀBφ/2N² (module docstring): 'ref' exact along the code's reference activation and "
          f"diagonal for the rest, 'diag' diagonal, 'none' left out (the mean field's tilt). Seconds per sweep are "
          f"wall time on a shared machine that pauses niced jobs at times: compare the acceptance, not the time.", "",
          "| self term | breakpoints | tries per unit | acceptance (sampling) | acceptance, last 10 "
          "warm-up sweeps | code changes per unit per sweep | s per sweep |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['self_term']} | {len(r['breaks'])} | {r['tries']} | {r['acceptance']:.3f} | "
                  f"{r['warmup_acceptance_last_10']:.3f} | {r['code_changes_per_unit_per_sweep']:.4f} | "
                  f"{r['seconds_per_sweep']:.3f} |")
    Path(f"{stem}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="60,100", help="N = P values, comma-separated")
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--units-warmup", default="100,60", help="warm-up sweeps per size")
    p.add_argument("--units-samples", default="200,100", help="kept sweeps per size")
    p.add_argument("--snaper-warmup", type=int, default=300)
    p.add_argument("--snaper-samples", type=int, default=500)
    p.add_argument("--samplers", default="units,snaper", help="which of units, snaper to run (default both)")
    p.add_argument("--window", type=int, default=10, help="draws per window of the modal code")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--y-neg", type=float, default=0.5, help="the toy task's target on the wrong classes")
    p.add_argument("--out", default=None, help="output stem (default benchmarks/results/units_vs_snaper)")
    p.add_argument("--render", default=None, help="only rewrite STEM.md from STEM.json")
    p.add_argument("--proposals", default=None, metavar="WARMUP,SWEEPS",
                   help="instead: compare the proposal variants of the units sampler at the first size "
                        "(writes results/units_proposals.md)")
    args = p.parse_args(argv)
    if args.render:
        return render(args.render)
    if args.proposals:
        return proposals(args)

    import jax
    import numpy as np

    import bnnzoo
    from bnnzoo._record import jsonable
    from bnnzoo.theory.meanfield import single_neuron_meanfield

    warnings.simplefilter("ignore")
    sizes = [int(s) for s in args.sizes.split(",")]
    uw = [int(s) for s in args.units_warmup.split(",")]
    us = [int(s) for s in args.units_samples.split(",")]
    rows, t_all, load0 = [], time.perf_counter(), os.getloadavg()[0]
    theory = {}
    for j, N in enumerate(sizes):
        mf = single_neuron_meanfield(bnnzoo.toy_task(P=N, y_neg=args.y_neg), nonlinearity="sigmoid", temperature=0.01,
                                     sigma_a2=1.0 / N)
        theory[N] = {c: round(float(m), 3) for c, m in zip(mf.branch_code, mf.branch_mass)}
        for sampler, (w, s) in (("units", (uw[min(j, len(uw) - 1)], us[min(j, len(us) - 1)])),
                                ("snaper", (args.snaper_warmup, args.snaper_samples))):
            if sampler not in args.samplers.split(","):
                continue
            r = one_run(sampler, N, args.chains, w, s, args.seed, args.window, args.y_neg)
            print(json.dumps(r), flush=True)
            rows.append(r)
    total = time.perf_counter() - t_all
    stem = Path(args.out or HERE / "results" / "units_vs_snaper")
    stem.parent.mkdir(parents=True, exist_ok=True)
    meta = dict(python=platform.python_version(), jax=jax.__version__, numpy=np.__version__,
                cpu_count=os.cpu_count(), total_s=round(total, 1), args=vars(args),
                load_average=[round(load0, 1), round(os.getloadavg()[0], 1)])
    data = dict(meta=meta, rows=rows, meanfield=theory)
    Path(f"{stem}.json").write_text(json.dumps(jsonable(data), indent=1))
    render(stem, data)


def render(stem, data=None):
    """Write ``stem``.md from ``data`` (the run's results, non-finite numbers kept: an R̂ of inf prints "inf") or,
    without it, from ``stem``.json (where non-finite numbers are null and print "—")."""
    stem = Path(stem)
    data = json.loads(Path(f"{stem}.json").read_text()) if data is None else data
    meta, rows = data["meta"], data["rows"]
    theory = {int(k): v for k, v in data["meanfield"].items()}
    args = meta["args"]
    cmd = "python benchmarks/units_vs_snaper.py " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in args.items()
        if v is not None and k not in ("out", "render", "proposals") and not (k == "samplers" and v == "units,snaper"))
    md = ["# Code switches: sampler='units' against SNAPER, sigmoidal net", "",
          f"`{cmd}`", "",
          f"Machine: {meta['cpu_count']} CPU cores, "
          + ("no other job running" if "load_average" not in meta else
             "1-minute load average {} at the start, {} at the end".format(*meta["load_average"]))
          + f"; total {meta['total_s']} s. "
          f"Python {meta['python']}, jax {meta['jax']}.", "",
          f"Toy task, y− = {args.get('y_neg', 0.5)}, T = 0.01, one hidden layer, prior starts, the same task and seed for both samplers. "
          "A *persistent switch* is a change of a unit's modal code between consecutive windows of "
          f"{args['window']} draws (units = neurons × chains); *between branches* counts those from one two-class "
          "code to another (011 ↔ 101 ↔ 110), not hops to or from 111. Acceptance: units — accepted unit moves per "
          "proposal; SNAPER — mean HMC acceptance probability (not the same quantity). Time: sampling only "
          "(warm-up and compilation excluded; the units sampler's includes its per-draw Python loop). R̂ of q_a: "
          "ArviZ's rank-normalised R̂ over the chains, the largest over the classes — whether the chains' readout "
          "norms, which a chain's population of codes sets, agree; ESS of q_a: the smallest bulk ESS over the "
          "classes, and per second of sampling.", "",
          "| N = P | sampler | warm-up + draws | acceptance | warm-up s | sampling s | persistent switches "
          "(units switching / units) | per unit per s | per unit per 1000 draws | of them between branches: "
          "count, per unit per s | units on another branch at the end than at the start "
          "| code changes per unit per sweep "
          "| code fractions, last window: 011 / 101 / 110 / 111 / 100 (other) | mean field | R̂ of q_a | ESS of q_a (per s) |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        f = r["code_fractions_last_window"]
        other = max(0.0, 1.0 - sum(f[c] for c in ("011", "101", "110", "111", "100")))
        th = theory[r["N"]]
        cc = r.get("code_changes_per_unit_per_sweep")
        md.append(f"| {r['N']} | {r['sampler']} | {r['warmup']} + {r['samples']} | {r['acceptance']:.3f} | "
                  f"{r['warmup_s']} | {r['sampling_s']} | {r['switches_total']} ({r['units_switching']} / "
                  f"{r['units']}) | {r['switches_per_unit_per_s']:.4f} | "
                  f"{r['switches_per_unit_per_1000_draws']:.1f} | "
                  f"{r['between_branches_total']}: {r['between_branches_per_unit_per_s']:.4f} | "
                  f"{r['units_changed_branch_first_to_last']} / {r['units']} | "
                  f"{'—' if cc is None else f'{cc:.4f}'} | "
                  f"{f['011']:.3f} / {f['101']:.3f} / {f['110']:.3f} / {f['111']:.3f} / {f['100']:.3f} "
                  f"({other:.3f}) | "
                  f"{th.get('011', 0):.3f} / {th.get('101', 0):.3f} / {th.get('110', 0):.3f} / "
                  f"{th.get('111', 0):.3f} / {th.get('100', 0):.3f} | "
                  + (f"{r['rhat_q_a']:.2f} |" if r.get("rhat_q_a") is not None else "— |")
                  + (f" {r['ess_q_a']:.0f} ({r['ess_q_a_per_s']:.1f}) |" if "ess_q_a" in r else " — |"))
    md = with_reading(Path(f"{stem}.md"), md)
    Path(f"{stem}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
