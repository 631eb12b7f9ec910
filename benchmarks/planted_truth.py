"""Ground truth on planted tasks: does each sampler thermalise, and how long does it take?

    python benchmarks/planted_truth.py                                  # N = P = 100, three nets, three samplers
    python benchmarks/planted_truth.py --nets sigmoidal --samplers units,snaper --budget 600 \\
        --out benchmarks/results/planted_truth_cpu_n100
    SIZE=paper bash benchmarks/planted_truth_gpu.sh                     # N = P = 500 on one accelerator

A planted (teacher–student) task (:func:`bnnzoo.tasks.planted_task`) draws a teacher from the model's own prior and
the targets from the model's own likelihood, so the teacher is an exact posterior draw: chains started *at* the
teacher (``init=bnnzoo.tasks.planted_init(task, C)``) start at equilibrium, and chains started from the prior have
thermalised when their population observables (code fractions, branch masses, outliers, training error) follow the
planted chains' law (:func:`bnnzoo.diagnostics.planted_check` at family-wise rate ``--alpha``, with the smallest
difference it would detect: Welch's test on the chain means, or, for an observable whose planted population is frozen,
whether the planted chains' value is a plausible draw of the prior family's law).

For each net (the sigmoidal net at y− = ½ with one and with two hidden layers, the ReLU net at y− = −½; N0 = P + 20,
T = ``--temperature``), size N = P and sampler, in one process, one after another:

1. one planted task (teacher seed ``--seed``);
2. the *planted family*: ``--chains`` chains at the teacher and S kept draws after w0 warm-up steps (the
   sampler's first warm-up, where the HMC samplers adapt; none for sampler="units", which has nothing to adapt);
3. the *control*: a second planted family with another seed, compared with the first by the same check — it must
   read "reached" (a "did not reach" here is a false alarm of the check or a sampler that leaves the equilibrium it
   starts in).  All chains of both planted families start at the same point, the teacher: their scatter is that of
   chains from one start, which is the law's only once they have moved away from it, so the control tests the
   check's false alarms between two such families, not the planted chains' independence;
4. the *prior family*: ``--chains`` chains from prior draws, run afresh (same seed, so the same starts) with warm-up
   w0, 2·w0, 4·w0, ... steps (sweeps for sampler="units") and S draws each, every run compared with the planted
   family; the first warm-up at which the check reads "reached" is the time to thermalise, reported with the
   wall seconds of that run (at w0 only an upper bound: the table reads "≤ w0").  ``--budget`` bounds the seconds
   of the prior family's runs together (the planted family and the control are reported apart): before each run
   its cost is predicted from the previous run's (wall time scaled by warm-up + draws; a run can still end past
   the budget when the machine's load grows), a run predicted to end past it is not begun, and the combination
   reads "did not thermalise in X s" with the observable that differs most (its t against the threshold and both
   families' means).

Each row also states how much of the planted targets is the teacher's: the share of Y's variance beyond the
likelihood's noise (T/N).  A teacher drawn from the prior of these nets gives outputs of the noise's size, so the
posterior's populations can lie close to the prior's, and a prior family then reaches them with little warm-up.

Fresh runs (rather than one run checked in blocks) because a run's warm-up is what a user chooses: SNAPER and NUTS
adapt during it, and neither the chunked driver's nor the units sampler's store resumes a run with a longer warm-up.
Compiled programs are kept in a compilation cache (a temporary folder unless ``--compilation-cache`` names one), so
runs after the first compile only what changed; each run's compile, warm-up and sampling seconds are recorded where
its engine reports them.  sampler="units" serves only one-hidden-layer nets with orthogonal inputs: elsewhere its row
says so and nothing runs.

Writes ``<out>.json`` and ``<out>.md`` (default ``benchmarks/results/planted_truth``), rewritten after every
combination.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent

NETS = {"sigmoidal": dict(entry="sigmoidal", depth=1, y_neg=0.5),
        "relu": dict(entry="relu", depth=1, y_neg=-0.5),
        "sigmoidal_d2": dict(entry="sigmoidal", depth=2, y_neg=0.5)}
SAMPLERS = ("snaper", "nuts", "units")
DEFAULT_WARMUP = "snaper=100,nuts=100,units=25"
DEFAULT_DRAWS = "snaper=200,nuts=200,units=100"
KINDS = ("code_fraction", "branch_mass", "outliers", "mse")


def per_sampler(text: str, name: str, samplers) -> dict:
    """{sampler: int >= 1} for each of ``samplers`` from ``"snaper=100,units=25"`` (or one integer for every
    sampler; pairs for other samplers are checked and dropped); ``name`` is the option, named in the error."""
    out = {}
    try:
        if "=" not in text:
            out = {s: int(text) for s in samplers}
        else:
            for part in text.split(","):
                k, v = part.split("=")
                out[k.strip()] = int(v)
    except ValueError:
        raise ValueError(f"--{name} must be an integer or sampler=integer pairs, got {text!r}") from None
    missing = [s for s in samplers if s not in out]
    unknown = [s for s in out if s not in SAMPLERS]
    if unknown:
        raise ValueError(f"--{name} names samplers outside {', '.join(SAMPLERS)}: {', '.join(unknown)}")
    if missing or any(v < 1 for v in out.values()):
        raise ValueError(f"--{name} needs an integer >= 1 for every sampler ({', '.join(samplers)}), got {text!r}")
    return {s: out[s] for s in samplers}                    # the samplers run (a default may name more)


def units_refusal(entry, task, kw: dict) -> str | None:
    """Why sampler="units" cannot serve this net on this task (its own one-line reason), or None when it can."""
    from bnnzoo.inference.units import check_units

    full = entry.kwargs(**kw)
    if getattr(entry, "resolve", None) is not None:
        full = entry.resolve(task.X, full)
    try:
        check_units(entry, full, task.X)
    except ValueError as e:
        return str(e)
    return None


def targets(entry, task, kw: dict) -> dict:
    """How much of the planted targets is the teacher's: the sd of Y, the likelihood's noise sd, and the share of
    Y's variance beyond the noise (the teacher's signal; near 0 the posterior is close to the prior)."""
    import numpy as np

    from bnnzoo.models.fcn import likelihood_variance

    noise = likelihood_variance(entry.kwargs(**kw)["readout"], kw["width"], kw["temperature"])
    var = float(np.var(task.Y))
    return dict(y_sd=math.sqrt(var), noise_sd=math.sqrt(noise), signal_share=1.0 - noise / var)


def _engine_timing(run) -> dict:
    import bnnzoo

    eng = bnnzoo.run_config(run).get("engine") or {}
    t = eng.get("timing") or {}
    return {k: round(float(t[k]), 2) for k in ("compile_s", "warmup_s", "sampling_s") if k in t}


def _finite(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def check_record(res) -> dict:
    """The JSON record of a :class:`~bnnzoo.diagnostics.planted.PlantedCheck`: verdict, the observable that differs
    most (largest |t| over its threshold) and the smallest detectable difference of each kind of observable."""
    obs = res.observables
    ratio = {k: abs(o["t"]) / o["threshold"] if o["threshold"] > 0 else math.inf for k, o in obs.items()}
    worst = max(ratio, key=lambda k: ratio[k] if math.isfinite(ratio[k]) else (1e300 if ratio[k] > 0 else -1.0))
    o = obs[worst]
    power = {}
    for kind in KINDS:
        d = [(o2["detectable"], k) for k, o2 in obs.items() if k.startswith(kind) and math.isfinite(o2["detectable"])]
        if d:
            val, name = max(d)
            power[kind] = dict(detectable=val, observable=name, planted=obs[name]["planted"][0])
    return dict(reached=bool(res.reached), n_differing=len(res.differing), differing=list(res.differing),
                worst=dict(observable=worst, t=_finite(o["t"]), threshold=_finite(o["threshold"]),
                           planted=o["planted"], other=o["other"], detectable=_finite(o["detectable"]),
                           model=o.get("model")),
                power=power, n_observables=len(obs), chains=res.chains, alpha=res.alpha,
                frozen=list(getattr(res, "frozen", ())))


def combination(net: str, N: int, sampler: str, cfg: dict) -> dict:
    """One (net, size, sampler): the planted family, the control and the prior family's runs of growing warm-up
    within ``cfg["budget"]`` seconds (cut to ``cfg["deadline"]``, a ``time.time()``, when one is given); returns
    the row as a dict."""
    import bnnzoo
    from bnnzoo.diagnostics import planted_check
    from bnnzoo.tasks import planted_init, planted_task

    spec = NETS[net]
    entry = bnnzoo.get_entry(spec["entry"])
    base = entry.make_task(**dict(entry.task_defaults, P=N, N0=N + 20, y_neg=spec["y_neg"]))
    kw = dict(width=N, depth=spec["depth"], temperature=cfg["temperature"])
    task = planted_task(entry, base, seed=cfg["seed"], **kw)
    C, w0, S = cfg["chains"], cfg["warmup"][sampler], cfg["draws"][sampler]
    wp = 0 if sampler == "units" else w0          # the planted families' warm-up: only the HMC samplers adapt
    row = dict(net=net, entry=spec["entry"], depth=spec["depth"], y_neg=spec["y_neg"], N=N, P=N, N0=N + 20,
               sampler=sampler, chains=C, w0=w0, draws=S, teacher_seed=cfg["seed"], targets=targets(entry, task, kw))
    if sampler == "units":
        why = units_refusal(entry, task, kw)
        if why:
            return dict(row, status="n/a", reason=why)

    def run(warmup, init, seed):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = bnnzoo.sample(entry, task, sampler=sampler, num_chains=C, num_warmup=warmup, num_samples=S,
                              init=init, seed=seed, record=("z",), progress=False, **kw)
        return r, round(time.perf_counter() - t0, 2)

    t_start = time.perf_counter()
    seeds = dict(planted=cfg["seed"] + 1, control=cfg["seed"] + 2, prior=cfg["seed"] + 3)
    planted, wall = run(wp, planted_init(task, C), seeds["planted"])
    row["planted"] = dict(warmup=wp, wall_s=wall, seed=seeds["planted"], **_engine_timing(planted))
    _log(f"  planted family: {wall:.1f} s")
    if cfg["control"]:
        control, wall = run(wp, planted_init(task, C), seeds["control"])
        row["control"] = dict(warmup=wp, wall_s=wall, seed=seeds["control"], **_engine_timing(control),
                              **check_record(planted_check(planted, control, alpha=cfg["alpha"])))
        del control
        _log(f"  control (planted vs planted): {'reached' if row['control']['reached'] else 'NOT reached'}, "
             f"{wall:.1f} s")
    row["planted_s"] = round(time.perf_counter() - t_start, 2)

    # the prior family: fresh runs of doubling warm-up while the budget lasts
    budget = cfg["budget"] if cfg.get("deadline") is None else min(cfg["budget"], cfg["deadline"] - time.time())
    row.update(budget_s=round(budget, 1), blocks=[], thermalised=False, prior_seed=seeds["prior"])
    # the first prior run is predicted from the faster planted run (the control reuses the planted one's programs)
    last_wall = min(row["planted"]["wall_s"], row.get("control", {}).get("wall_s", math.inf))
    last_steps, w, spent = wp + S, w0, 0.0
    while True:
        predicted = last_wall * (w + S) / last_steps
        if spent + predicted > budget:
            row["stopped"] = (f"warm-up {w} not run: predicted {predicted:.0f} s after {spent:.0f} s, past the "
                              f"budget of {budget:.0f} s")
            break
        prior, wall = run(w, "prior", seeds["prior"])
        timing = _engine_timing(prior)
        rec = check_record(planted_check(planted, prior, alpha=cfg["alpha"]))
        del prior
        spent += wall
        row["blocks"].append(dict(warmup=w, wall_s=wall, spent_s=round(spent, 2), **timing, **rec))
        wo = rec["worst"]
        _log(f"  prior family, warm-up {w}: {'reached' if rec['reached'] else 'not reached'} in {wall:.1f} s "
             f"(worst {wo['observable']} |t| {abs(wo['t'] or 0):.2f} / {wo['threshold'] or 0:.2f})")
        if rec["reached"]:
            row.update(thermalised=True, warmup=w, wall_s=wall)
            break
        last_wall, last_steps, w = wall, w + S, 2 * w
    row["prior_s"] = round(spent, 2)
    row["total_s"] = round(time.perf_counter() - t_start, 2)
    row["status"] = "thermalised" if row["thermalised"] else "not thermalised"
    return row


def guarded(net: str, N: int, sampler: str, cfg: dict, deadline_s: float | None) -> dict:
    """:func:`combination`, or the row that says why it did not run: the invocation's deadline had passed, or it
    raised (one failed combination must not lose the others' rows)."""
    head = dict(net=net, N=N, sampler=sampler, depth=NETS[net]["depth"], y_neg=NETS[net]["y_neg"])
    if cfg["deadline"] is not None and time.time() >= cfg["deadline"]:
        return dict(head, status="n/a", reason=f"the invocation's deadline of {deadline_s:g} s had passed")
    try:
        return combination(net, N, sampler, cfg)
    except Exception as e:
        return dict(head, error=f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}")


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------- the tables
def _mean(v) -> str:
    return f"{v[0]:.4g} ± {v[1]:.2g}"


def _worst(rec: dict) -> str:
    wo = rec["worst"]
    t = "—" if wo["t"] is None else f"{abs(wo['t']):.2f}"
    thr = "—" if wo["threshold"] is None else f"{wo['threshold']:.2f}"
    frozen = "; prediction interval, planted population frozen" if (wo.get("model") or "").startswith("pred") else ""
    return (f"{wo['observable']}: \\|t\\| {t} / {thr}, planted {_mean(wo['planted'])}, prior {_mean(wo['other'])}"
            f"{frozen}")


def _power(rec: dict) -> str:
    out = []
    for kind, p in rec["power"].items():
        if kind == "mse" and p["planted"] > 0:
            out.append(f"mse {p['detectable']:.2g} ({100 * p['detectable'] / p['planted']:.0f} %)")
        else:
            out.append(f"{kind} ≤ {p['detectable']:.2g}")
    return "; ".join(out) or "—"


def _load(res: dict, when: str) -> str:
    v = res.get("load_average", {}).get(when)
    return "/".join(f"{x:.1f}" for x in v) if v else "—"


_CHECK = {None: "Welch on chain means",
          "welch-or-prediction": "Welch on chain means; for an observable whose planted population is frozen, a "
                                 "prediction interval: is the planted value a plausible draw of the prior family's law"}
"""How each version of the result describes the check: results written before the frozen-population error model
carry no "check" key."""


def markdown(res: dict) -> str:
    a = res["args"]
    lines = ["# Ground truth on planted tasks: time to thermalise from the prior", "",
             f"Command: `{res['command']}`.  Machine: {res['machine']}.  Versions: {res['versions']}.  "
             f"Total {res['total_s']:.0f} s; load average (1, 5, 15 min) {_load(res, 'start')} at the start, "
             f"{_load(res, 'now')} after the last combination.", "",
             f"Planted (teacher–student) toy tasks, N0 = P + 20, T = {a['temperature']}, teacher seed {a['seed']}; "
             f"{a['chains']} chains per family; first warm-up w0 + kept draws S: "
             + ", ".join(f"{k} {res['warmup'][k]} + {res['draws'][k]}" for k in res["warmup"])
             + " (sampler='units': sweeps).  Each (net, size, sampler): a planted "
             "family (chains at the teacher, an exact posterior draw), a control (a second planted family, another "
             "seed), both with S draws after w0 warm-up steps (none for sampler='units'), and the prior family run "
             "afresh (same seed) with warm-up w0, 2·w0, 4·w0, ... and S draws until `planted_check` ("
             + _CHECK.get(res.get("check"), _CHECK[None]) + f", family-wise α = {a['alpha']}) reads \"reached\", or "
             "until the next run would take the prior family's "
             f"seconds past the budget of {a['budget']:g} s.  Seconds are wall time of a run (warm-up + draws; "
             "compilation included where the compilation cache did not hold the program); 'prior family s' adds up "
             "every prior run of the combination.  Power: the smallest difference each check would detect with "
             "probability 0.8 (the largest over the observables of each kind; mse also relative to its planted "
             "value).  Signal share: the part of the targets' variance beyond the likelihood's noise (T/N), the "
             "teacher's; near 0 the targets are mostly noise and the posterior's populations stay close to the "
             f"prior's.  {res.get('note', '')}".rstrip(), "",
             "| net | N = P | sampler | targets: sd of Y, noise sd, signal share | planted family: warm-up + S, s "
             "| control (planted vs planted), s | thermalised at warm-up | s of that run | prior family s | not "
             "thermalised: the observable that differs most | power of the last check |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        head = f"| {r['net']} (depth {r['depth']}, y− = {r['y_neg']:g}) | {r['N']} | {r['sampler']} |"
        if "targets" in r:
            t = r["targets"]
            head += f" {t['y_sd']:.3g}, {t['noise_sd']:.3g}, {t['signal_share']:.2f} |"
        else:
            head += " — |"
        if r.get("status") == "n/a":
            lines.append(f"{head} not run: {r['reason']} | — | — | — | — | — | — |")
            continue
        if "error" in r:
            lines.append(f"{head} failed: {r['error']} | — | — | — | — | — | — |")
            continue
        pl = f"{r['planted']['warmup']} + {r['draws']}, {r['planted']['wall_s']:.0f}"
        ctl = "not run"
        if "control" in r:
            c = r["control"]
            wo = c["worst"]
            ctl = (f"{'reached' if c['reached'] else 'NOT reached'} (largest \\|t\\| {abs(wo['t'] or 0):.2f} / "
                   f"{wo['threshold'] or 0:.2f}, {wo['observable']}), {c['wall_s']:.0f}")
        last = r["blocks"][-1] if r["blocks"] else None
        if r["thermalised"]:
            at = f"≤ {r['warmup']} (the first tried)" if len(r["blocks"]) == 1 else str(r["warmup"])
            lines.append(f"{head} {pl} | {ctl} | {at} | {r['wall_s']:.0f} | {r['prior_s']:.0f} | — | "
                         f"{_power(last)} |")
        elif last is None:
            lines.append(f"{head} {pl} | {ctl} | not tried: {r['stopped']} | — | 0 | — | — |")
        else:
            lines.append(f"{head} {pl} | {ctl} | did not thermalise in {r['prior_s']:.0f} s (warm-ups "
                         f"{', '.join(str(b['warmup']) for b in r['blocks'])}) | — | {r['prior_s']:.0f} | "
                         f"{_worst(last)} | {_power(last)} |")
    lines += ["", "## Every prior-family run", "",
              "| net | N = P | sampler | warm-up | s of the run | compile / warm-up / sampling s (engine) | prior "
              "family s so far | verdict | observables differing | the observable that differs most |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        for b in r.get("blocks", []):
            eng = " / ".join(f"{b[k]:.1f}" if k in b else "—" for k in ("compile_s", "warmup_s", "sampling_s"))
            lines.append(f"| {r['net']} | {r['N']} | {r['sampler']} | {b['warmup']} | {b['wall_s']:.1f} | {eng} | "
                         f"{b['spent_s']:.0f} | {'reached' if b['reached'] else 'not reached'} | "
                         f"{b['n_differing']} of {b['n_observables']} | {_worst(b)} |")
        if r.get("stopped"):
            lines.append(f"| {r['net']} | {r['N']} | {r['sampler']} | — | — | — | — | stopped: {r['stopped']} | — "
                         "| — |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="planted_truth.py", description=__doc__.splitlines()[0])
    p.add_argument("--nets", default=",".join(NETS), help=f"nets among {', '.join(NETS)} (default: all)")
    p.add_argument("--sizes", default="100", help="N = P, comma-separated (default 100)")
    p.add_argument("--samplers", default=",".join(SAMPLERS), help="samplers among snaper, nuts, units")
    p.add_argument("--chains", type=int, default=8, help="chains per family (>= 2; default 8)")
    p.add_argument("--warmup", default=DEFAULT_WARMUP, help=f"first warm-up w0 per sampler ({DEFAULT_WARMUP})")
    p.add_argument("--draws", default=DEFAULT_DRAWS, help=f"kept draws S per sampler ({DEFAULT_DRAWS})")
    p.add_argument("--budget", type=float, default=600.0,
                   help="seconds of the prior family's runs per combination (default 600)")
    p.add_argument("--deadline", type=float, default=None,
                   help="seconds for the whole invocation: each combination's budget is cut to what is left, and "
                        "none starts after it (default: none)")
    p.add_argument("--alpha", type=float, default=0.01, help="family-wise false-alarm rate of each check (0.01)")
    p.add_argument("--temperature", type=float, default=0.01, help="T of the model and the teacher (0.01)")
    p.add_argument("--seed", type=int, default=0, help="teacher seed; the families use seed + 1, + 2, + 3")
    p.add_argument("--no-control", dest="control", action="store_false",
                   help="skip the planted-vs-planted control")
    p.add_argument("--compilation-cache", default=None,
                   help="folder of JAX's compilation cache (default: a temporary folder, removed at the end; "
                        "'off': none)")
    p.add_argument("--note", default="", help="a sentence added to the result file's description (the machine's load)")
    p.add_argument("--out", default=str(HERE / "results" / "planted_truth"), help="stem of the .json / .md files")
    p.add_argument("--render", default=None, help="stem of an existing result: rewrite its .md from its .json")
    args = p.parse_args(argv)
    if args.render is not None:                   # rewrite the markdown from a result's JSON, sampling nothing
        Path(args.render + ".md").write_text(markdown(json.loads(Path(args.render + ".json").read_text())))
        return 0
    nets = [n.strip() for n in args.nets.split(",") if n.strip()]
    samplers = [s.strip() for s in args.samplers.split(",") if s.strip()]
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        p.error(f"--sizes must be comma-separated integers, got {args.sizes!r}")
    if not nets or any(n not in NETS for n in nets):
        p.error(f"--nets must name nets among {', '.join(NETS)}, got {args.nets!r}")
    if not samplers or any(s not in SAMPLERS for s in samplers):
        p.error(f"--samplers must name samplers among {', '.join(SAMPLERS)}, got {args.samplers!r}")
    if any(n < 2 for n in sizes):
        p.error(f"--sizes must be integers >= 2, got {args.sizes!r}")
    if args.chains < 2:
        p.error(f"--chains must be >= 2 (the check's error is the scatter between chains), got {args.chains}")
    if not args.budget > 0:
        p.error(f"--budget must be > 0 seconds, got {args.budget}")
    if args.deadline is not None and not args.deadline > 0:
        p.error(f"--deadline must be > 0 seconds, got {args.deadline}")
    if not 0 < args.alpha < 1:
        p.error(f"--alpha must lie in (0, 1), got {args.alpha}")
    if not args.temperature > 0:
        p.error(f"--temperature must be > 0, got {args.temperature}")
    try:
        warmup = per_sampler(args.warmup, "warmup", samplers)
        draws = per_sampler(args.draws, "draws", samplers)
    except ValueError as e:
        p.error(str(e))

    import jax
    import numpyro

    import bnnzoo

    tmp = None
    if args.compilation_cache != "off":
        path = args.compilation_cache or (tmp := tempfile.mkdtemp(prefix="planted_truth_cc_"))
        bnnzoo.enable_compilation_cache(path)
    stem = Path(args.out)
    stem.parent.mkdir(parents=True, exist_ok=True)
    dev = jax.devices()[0]
    res = dict(command="python benchmarks/planted_truth.py " + shlex.join(sys.argv[1:] if argv is None else argv),
               machine=(f"{os.cpu_count()} CPU cores ({platform.machine()})" if dev.platform == "cpu" else
                        f"{jax.device_count()} × {dev.device_kind} ({dev.platform}), {os.cpu_count()} CPU cores"),
               versions=f"Python {platform.python_version()}, jax {jax.__version__}, numpyro {numpyro.__version__}, "
                        f"bnnzoo {bnnzoo.__version__}", date=time.strftime("%Y-%m-%d"),
               args=vars(args), warmup=warmup, draws=draws, note=args.note, total_s=0.0, check="welch-or-prediction",
               load_average=dict(start=[round(x, 2) for x in os.getloadavg()]), rows=[])
    cfg = dict(chains=args.chains, warmup=warmup, draws=draws, budget=args.budget, alpha=args.alpha,
               temperature=args.temperature, seed=args.seed, control=args.control,
               deadline=None if args.deadline is None else time.time() + args.deadline)
    t0 = time.perf_counter()
    try:
        for N in sizes:
            for net in nets:
                for sampler in samplers:
                    _log(f"{net} N = P = {N} {sampler} ...")
                    row = guarded(net, N, sampler, cfg, args.deadline)
                    res["rows"].append(row)
                    res["total_s"] = time.perf_counter() - t0
                    res["load_average"]["now"] = [round(x, 2) for x in os.getloadavg()]
                    Path(str(stem) + ".json").write_text(json.dumps(res, indent=1) + "\n")
                    Path(str(stem) + ".md").write_text(markdown(res))
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    print(Path(str(stem) + ".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
