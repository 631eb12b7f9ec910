"""The y− sweep of the sigmoidal one-hidden-layer net on the toy task (issue 22, item 3; docs/theory.md §2, §3, §5).

Three parts, each writing its own JSON summary under ``--out`` (default ``reproduce/results``; stem ``--name``,
default ``ym_sweep``, then the part: ``ym_sweep.meanfield.json`` etc.); the page ``ym_sweep.md`` is made from
whatever parts exist by ``python -m reproduce render``:

``meanfield`` (``ym_sweep.meanfield.json``)
    The single-neuron mean field (docs/theory.md §5) at y+ = 1, y− ∈ [0.1, 0.5], classes ½ ¼ ¼, m = 3, σ_a² = 1/P,
    searched for *every* self-consistent λ at each y−: many starts (random, class-permuted copies of neighbouring
    solutions, the neighbours' solutions themselves), each minimised by damped Newton on the mean-field action S(λ)
    below, all starts at once on one fixed grid (vectorised), then deduplicated and polished by the library solver
    (:func:`bnnzoo.theory.single_neuron_meanfield_classes`), which gives each solution's branches (codes, masses).

    Free energy.  Writing the Gaussian likelihood exp(−(N/2T) Σ (y − f)²) as an integral over a conjugate field Λ
    (Hubbard–Stratonovich) makes the N neurons independent; with class-symmetric Λ (column λ_c for every point of class
    c) the log partition function per neuron is, at large N, the saddle point of

        S(λ) = (T/2) Σ_c P_c |λ_c|² − Σ_c P_c λ_cᵀ y_c + log z(λ),
        z(λ) = E_{a∼N(0, σ_a² I)} Π_c M(λ_cᵀ a)^{P_c},   M(s) = E_{h∼N(0,1)} e^{s φ(h)},

    and ∂S/∂λ_c = P_c (E_a[a m1(λ_cᵀ a)] + T λ_c − y_c): its stationary points are exactly the solutions of the
    self-consistency equations of docs/theory.md §5.  The free energy per neuron (nats, up to a constant common to
    all solutions at the same y−, T, P) is f = −S(λ*), and −N f is the log-probability weight of the solution, which
    is why f is the number to compare solutions by.  log z is a cumulant generating function of the variables
    a φ(h_μ) (a log-Laplace transform of a probability law), hence convex in λ, and S is strictly convex: the
    stationary point is the minimum of S and it is unique.  The search checks this rather than assuming it.

    Partial schemes.  A population whose neurons are frozen in a subset B of the branches (what a chain that never
    populated one branch during warm-up samples) has z_B(λ) = ∫_{basins in B} instead of z, and a population with a
    fraction q of its neurons frozen on branch γ has
        log Z(q)/N = min_λ [(T/2) Σ P_c|λ_c|² − Σ P_c λ_cᵀ y_c + q log z_γ + (1 − q) log z_rest] + H(q),
    H the binary entropy; the unconstrained solution is the maximum over q (q = the branch mass).  Both are
    reported: Δf_B = f_B − f and the equilibrium law of q, P(q) ∝ exp(−N Δf(q)) (basins fixed at the unconstrained
    solution; the mean field's own law, no finite-N correction).

``samples`` (``ym_sweep.samples.json``)
    The ``sigmoidal`` zoo net, N = P, SNAPER, 4 chains from prior draws, at y− = 0.1 … 0.5 and T = 0.01: the library's
    health verdict (:func:`bnnzoo.inference.health.sampler_health`), and the fraction of neurons on each modal code
    per chain (mean ± standard error across chains) next to the mean-field masses at the same P and T.

``lockin`` (``ym_sweep.lockin.json``)
    y− = 0.1: chains started from the prior (the ``samples`` run of the same size, reused when present), with a short
    and a long warm-up, and at a second N; the fraction of neurons on code 100 per chain and along the kept draws (the
    library keeps no per-neuron warm-up draws), against the mean field's law of that fraction (from the ``meanfield``
    part).  The stored summary also holds a run from a warm start onto the solution space, made before ``warm_start``
    was removed from the library.

Sizes: ``--size ci`` (seconds; tiny nets, few draws, a coarse y− grid: for the test only) and ``--size cpu``;
``--size paper`` runs the ``cpu`` settings (the sweep's full size: the paper has no larger one).  ``--seed`` seeds
the random starts of the search, the toy tasks and the chains (0: the stored runs).  Only summaries are written (no
draws).  An existing summary is not overwritten unless ``--overwrite``.

Run: ``python -m reproduce ym_sweep --size ci|cpu|paper [--part meanfield|samples|lockin|all] [--overwrite]``.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from bnnzoo.theory.schemes import (action_checks, find_solutions, fraction_law, mass_per_code, partial_schemes,
                                   scheme_change, scheme_name, toy_classes)

from . import _common as C

NAME = "ym_sweep"
CLAIMS = ("S4", "S5")
PARTS = ("meanfield", "samples", "lockin")
CODES = ("011", "101", "110", "111", "100", "010", "001", "000")
SCHEME_FLOOR = 1e-3    # a branch belongs to a scheme when its mean-field mass is at least this
Y_HIGH = 0.3           # the samples are compared with the mean field at y− >= this (below it: lock-in)
Q_REF = 1 / 6          # the code-100 fraction whose mean-field cost is quoted (the prior-started chains' level)
SIZES = {
    "ci": dict(mf=((40, 0.01),), y_grid=(0.5,), n_random=1, n_grid=21, n_grid_checks=21, partial=(), law_N=(), n_q=0,
               changes=(),
               N=12, chains=2, warmup=30, samples=20, y_samples=(0.1, 0.5),
               lock_runs=dict(long_warmup=dict(num_warmup=60)), N2=16),
    "cpu": dict(mf=((60, 0.01), (100, 0.0)), y_grid=(0.1, 0.2, 0.3, 0.4, 0.5),
                n_random=4, n_grid=25, n_grid_checks=41, partial=((60, 0.1),), law_N=(60,), n_q=8,
                changes=(("100", 0.1, 0.3), ("111", 0.3, 0.5)),
                N=60, chains=4, warmup=1000, samples=400, y_samples=(0.1, 0.2, 0.3, 0.4, 0.5),
                lock_runs=dict(short_warmup=dict(num_warmup=200), long_warmup=dict(num_warmup=3000)), N2=100),
}
SIZES["paper"] = dict(SIZES["cpu"])  # no larger setting: the paper size is the cpu one
T_SAMPLE = 0.01


def run_meanfield(cfg, log, save, seed=0):
    """Part 1: the search over y− for every (P, T) of the size, the partial schemes, the law of the code-100 fraction
    and the checks of the action."""
    out = dict(checks=action_checks(n_grid=cfg["n_grid_checks"]), sweeps=[], partial=[], law=[])
    log(f"checks: {json.dumps(out['checks'])}")
    rng = np.random.default_rng(seed)
    for P, T in cfg["mf"]:
        prev, box = [], (-3.5, 4.5)
        for yn in sorted(cfg["y_grid"])[::-1]:  # downwards: each point also starts from its upper neighbour's λ
            t0 = time.time()
            pt = find_solutions(P, yn, T, prev, rng, cfg["n_random"], cfg["n_grid"], box)
            prev = [np.array(s["lam"]) for s in pt["solutions"]]
            for s in pt["solutions"]:
                s["scheme"] = scheme_name(s["mass_by_code"], SCHEME_FLOOR)
            out["sweeps"].append(pt)
            sch = [s["scheme"] for s in pt["solutions"]]
            log(f"P={P} T={T} y-={yn:.3f}: {pt['n_converged']}/{pt['n_starts']} starts converged, "
                f"{len(pt['solutions'])} distinct solution(s) {sch}, "
                f"f={[round(s['free_energy'], 5) for s in pt['solutions']]} [{time.time() - t0:.0f} s]")
            save(out)
    out["changes"] = []
    for P, T in cfg["mf"]:
        for code, lo, hi in cfg["changes"]:
            ch = scheme_change(P, T, code, lo, hi, floor=SCHEME_FLOOR)
            out["changes"].append(dict(ch, changed=_changed(ch)))
            log(f"scheme change: {out['changes'][-1]}")
            save(out)
    for P, yn in cfg["partial"]:
        out["partial"].append(partial_schemes(P, yn, T_SAMPLE, n_grid=41))
        log(f"partial schemes P={P} y-={yn}: " + "; ".join(f"{'/'.join(d['codes'])} {d['delta_f']:.4f}"
                                                           for d in out["partial"][-1]["schemes"]))
        save(out)
    qs = np.linspace(0.0, 0.3, cfg["n_q"] + 2)[1:-1]
    for N in cfg["law_N"]:
        law = fraction_law(N, min(cfg["y_grid"]), T_SAMPLE, "100", qs, N, n_grid=41)
        out["law"].append(law)
        log(f"law of the code-100 fraction at N = P = {N}: {json.dumps({k: v for k, v in law.items() if k != 'q'})}")
        save(out)
    return out


# ---------------------------------------------------------------------------------------------------------------------
# parts 2 and 3: samples
# ---------------------------------------------------------------------------------------------------------------------
def _sample(N, y_neg, chains, warmup, samples, seed=0, progress=False, **kw):
    """One SNAPER run of the sigmoidal zoo net (N = P) and its summaries: health, per-chain code fractions, the code-100
    fraction per chain along the kept draws."""
    import bnnzoo
    from bnnzoo.diagnostics._data import run_data
    from bnnzoo.diagnostics.codes import _modal, code_ids, code_string
    from bnnzoo.inference.health import sampler_health

    task = bnnzoo.toy_task(P=N, y_pos=1.0, y_neg=y_neg, seed=seed)
    t0 = time.time()
    idata = bnnzoo.sample("sigmoidal", task, width=N, temperature=T_SAMPLE, num_chains=chains, num_warmup=warmup,
                          num_samples=samples, sampler="snaper", seed=seed, progress=progress, record=("z",),
                          reparam=("data_space",), **kw)
    wall = time.time() - t0
    h = sampler_health(idata)
    rd = run_data(idata)
    ids = code_ids(rd.class_means(1))  # (chain, draw, neuron)
    modal = _modal(ids, 8)
    frac = np.array([[np.mean(modal[c] == k) for k in range(8)] for c in range(chains)])  # (chain, code id)
    names = [code_string(k, 3) for k in range(8)]
    k100 = names.index("100")
    windows = np.array_split(np.arange(ids.shape[1]), min(10, ids.shape[1]))
    traj = [[float(np.mean(ids[c, w] == k100)) for w in windows] for c in range(chains)]
    switch = float(np.mean(ids[:, 1:] != ids[:, :-1]))
    se = frac.std(0, ddof=1) / np.sqrt(chains) if chains > 1 else np.full(8, np.nan)
    return dict(N=N, P=N, y_neg=float(y_neg), T=T_SAMPLE, chains=chains, warmup=warmup, samples=samples, seed=seed,
                options={k: v for k, v in kw.items()}, wall_s=round(wall, 1), health=h.status, health_reason=h.reason,
                rhat={k: float(v) for k, v in h.rhat.items()},
                fraction={names[k]: float(frac[:, k].mean()) for k in range(8) if frac[:, k].any()},
                fraction_se={names[k]: float(se[k]) for k in range(8) if frac[:, k].any()},
                fraction_per_chain={names[k]: frac[:, k].tolist() for k in range(8) if frac[:, k].any()},
                code100_along_run=traj, code_switches_per_draw=switch)


def _mf_masses(P, y_neg, T):
    from bnnzoo.theory.meanfield import single_neuron_meanfield_classes

    Y, sizes = toy_classes(P, y_neg)
    r = single_neuron_meanfield_classes(Y, sizes, nonlinearity="sigmoid", temperature=T, sigma_a2=1.0 / P,
                                        min_mass=1e-6)
    return mass_per_code(r.branch_code, r.branch_mass)


def run_samples(cfg, log, save, seed=0, progress=False):
    out = dict(runs=[])
    for yn in cfg["y_samples"]:
        s = _sample(cfg["N"], yn, cfg["chains"], cfg["warmup"], cfg["samples"], seed, progress)
        s["meanfield_mass"] = _mf_masses(cfg["N"], yn, T_SAMPLE)
        out["runs"].append(s)
        log(f"samples y-={yn}: {s['health']} {json.dumps({k: round(v, 3) for k, v in s['fraction'].items()})} "
            f"mean field {json.dumps({k: round(v, 3) for k, v in s['meanfield_mass'].items()})} [{s['wall_s']} s]")
        save(out)
    return out


def run_lockin(cfg, log, save, sweep_run=None, seed=0, progress=False):
    """Part 3 at y− = 0.1: prior start (the sweep's run if given), short and long warm-up, a second N; with the mean
    field's equilibrium law of the code-100 fraction at each N."""
    yn = min(cfg["y_samples"])
    out = dict(runs=[])
    plan = [("prior", cfg["N"], {})] + [(name, cfg["N"], kw) for name, kw in cfg["lock_runs"].items()] + \
        [("prior, second N", cfg["N2"], {})]
    for name, N, kw in plan:
        if name == "prior" and sweep_run is not None:
            s = dict(sweep_run)
        else:
            kw = dict(kw)
            warmup = kw.pop("num_warmup", cfg["warmup"])
            s = _sample(N, yn, cfg["chains"], warmup, cfg["samples"], seed, progress, **kw)
        s["start"] = name
        out["runs"].append(s)
        log(f"lock-in run '{name}' N={N}: {s['health']} code 100 per chain {s['fraction_per_chain'].get('100')} "
            f"[{s['wall_s']} s]")
        save(out)
    return out


# ---------------------------------------------------------------------------------------------------------------------
# the numbers the result page shows, read from each part's summary
# ---------------------------------------------------------------------------------------------------------------------
def _changed(ch, floor=SCHEME_FLOOR) -> bool:
    """Whether the branch's mass crosses ``floor`` inside the searched bracket of a scheme change."""
    return (ch["mass_lo"] >= floor) != (ch["mass_hi"] >= floor)


def analyse_meanfield(mf: dict) -> dict:
    """Counts of the search (points, starts, converged starts, points with one / several distinct solutions, the
    largest spread of the converged λ), the distinct schemes (branches of mass >= 1e-3) and their sequence along y−
    per (P, T), and, per law of the code-100 fraction, N Δf(q) and its value at the q nearest 1/6 (the prior-started
    chains' level)."""
    sweeps = mf.get("sweeps", [])
    out = dict(scheme_floor=SCHEME_FLOOR, points=len(sweeps),
               points_one_solution=sum(len(p["solutions"]) == 1 for p in sweeps),
               points_several_solutions=sum(len(p["solutions"]) > 1 for p in sweeps),
               starts=sum(p["n_starts"] for p in sweeps), converged=sum(p["n_converged"] for p in sweeps),
               largest_spread=max((p["spread_of_converged_lambda"] for p in sweeps), default=None),
               schemes=sorted({scheme_name(s["mass_by_code"], SCHEME_FLOOR) for p in sweeps for s in p["solutions"]}),
               scheme_sequences=[])
    for P, T in sorted({(p["P"], p["T"]) for p in sweeps}):
        seq = []
        for pt in sorted((p for p in sweeps if (p["P"], p["T"]) == (P, T)), key=lambda p: p["y_neg"]):
            for s in pt["solutions"]:
                sch = scheme_name(s["mass_by_code"], SCHEME_FLOOR)
                if not seq or seq[-1] != sch:
                    seq.append(sch)
        out["scheme_sequences"].append(dict(P=P, T=T, n_schemes=len(seq), sequence=seq))
    out["laws"] = []
    for law in mf.get("law", []):
        if "error" in law:
            continue
        q, d = np.array(law["q"]), np.array(law["delta_f"])
        k = int(np.argmin(np.abs(q - Q_REF)))
        out["laws"].append(dict(P=law["P"], N=law["N"], N_delta_f=(law["N"] * d).tolist(), q_ref=float(q[k]),
                                N_delta_f_at_q_ref=float(law["N"] * d[k])))
    return out


def analyse_samples(sm: dict) -> dict:
    """At y− >= 0.3: the largest difference between a sampled code fraction and its mean-field mass (and where);
    at the lowest y−: the code-100 fraction against its mean-field mass."""
    runs = {r["y_neg"]: r for r in sm.get("runs", [])}
    out = dict(y_high=Y_HIGH)
    worst = max(((abs(r["fraction"].get(c, 0.0) - r["meanfield_mass"].get(c, 0.0)), c, y)
                 for y, r in runs.items() if y >= Y_HIGH for c in set(r["fraction"]) | set(r["meanfield_mass"])),
                default=None)
    if worst is not None:
        out["worst_high_y"] = dict(deviation=worst[0], code=worst[1], y_neg=worst[2],
                                   health=[runs[y]["health"] for y in sorted(runs) if y >= Y_HIGH])
    if runs:
        lo = runs[min(runs)]
        out["lowest_y"] = dict(y_neg=lo["y_neg"], code100=lo["fraction"].get("100", 0.0),
                               code100_se=lo["fraction_se"].get("100", 0.0),
                               code100_meanfield=lo["meanfield_mass"].get("100", 0.0), health=lo["health"])
    return out


def analyse_lockin(lk: dict) -> dict:
    """Per run: the code-100 fraction and number of code-100 neurons per chain, and the fraction at the start, middle
    and end of the kept draws per chain; the largest code-switching rate of all runs and the largest R̂ of the prior
    start."""
    runs = []
    for r in lk.get("runs", []):
        per = r["fraction_per_chain"].get("100", [0.0] * r["chains"])
        runs.append(dict(start=r["start"], N=r["N"], warmup=r["warmup"], code100_per_chain=per,
                         code100_units_per_chain=np.rint(np.asarray(per) * r["N"]).astype(int).tolist(),
                         code100_start_mid_end=[[t[0], t[len(t) // 2], t[-1]] for t in r["code100_along_run"]]))
    out = dict(runs=runs, max_switches_per_draw=max((r["code_switches_per_draw"] for r in lk.get("runs", [])),
                                                    default=None))
    prior = next((r for r in lk.get("runs", []) if r["start"] == "prior"), None)
    if prior is not None:
        finite = [v for v in prior["rhat"].values() if v is not None and np.isfinite(v)]
        out["prior_max_rhat"] = max(finite) if finite else None
    return out


ANALYSE = dict(meanfield=analyse_meanfield, samples=analyse_samples, lockin=analyse_lockin)


# ---------------------------------------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------------------------------------
def run(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--part", default="all", help="meanfield, samples, lockin (comma-separated) or all")
    args = p.parse_args(argv)
    C.check_args(args)
    parts = PARTS if args.part == "all" else tuple(x.strip() for x in args.part.split(",") if x.strip())
    if not parts or any(x not in PARTS for x in parts):
        raise ValueError(f"--part must be meanfield, samples, lockin (comma-separated) or all, got {args.part!r}")
    stem = args.name or NAME
    files = {part: C.ResultFiles(args.out, f"{stem}.{part}", args.overwrite) for part in parts}
    cfg = SIZES[args.size]
    prov = C.provenance(args, argv)

    def log(msg):
        C.log(f"{NAME}: {msg}")

    def saver(part, t0):
        def save(obj, complete=False):
            files[part].write(dict(obj, analysis=ANALYSE[part](obj), provenance=prov,
                                   meta=dict(size=args.size, wall_s=round(time.time() - t0, 1), complete=complete)))
        return save

    sweep_run = None
    for part in parts:
        t0 = time.time()
        save = saver(part, t0)
        if part == "meanfield":
            obj = run_meanfield(cfg, log, save, args.seed)
        elif part == "samples":
            obj = run_samples(cfg, log, save, args.seed, args.progress)
            sweep_run = next((r for r in obj["runs"] if r["y_neg"] == min(cfg["y_samples"])), None)
        else:
            prev = files[part].out / f"{stem}.samples.json"
            if sweep_run is None and prev.exists():  # the prior-start run of an earlier samples part
                prev = json.loads(prev.read_text())
                if (prev.get("meta", {}).get("size") == args.size
                        and prev.get("provenance", {}).get("seed", 0) == args.seed):
                    sweep_run = next((r for r in prev["runs"] if r["y_neg"] == min(cfg["y_samples"])), None)
            obj = run_lockin(cfg, log, save, sweep_run, args.seed, args.progress)
        save(obj, complete=True)
        log(f"{part}: wrote {files[part].json} [{time.time() - t0:.0f} s]")
    return 0
