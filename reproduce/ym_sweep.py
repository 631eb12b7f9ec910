"""The y− sweep of the sigmoidal one-hidden-layer net on the toy task (issue 22, item 3; docs/theory.md §2, §3, §5).

Three parts, each writing its own summary file under ``--out`` (default ``reproduce/results``) and re-rendering
``ym_sweep.md`` from whatever summaries exist:

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
    and a long warm-up, from a warm start onto the solution space (Adam on the potential from the prior draw), and at
    a second N; the fraction of neurons on code 100 per chain and along the kept draws (the library keeps no
    per-neuron warm-up draws), against the mean field's law of that fraction (from the ``meanfield`` part).

Sizes: ``--size ci`` (seconds; tiny nets, few draws, a coarse y− grid: for the test only) and ``--size cpu``.  Only
summaries are written (no draws).  An existing summary is not overwritten unless ``--overwrite``.

Run as ``python reproduce/ym_sweep.py --size cpu [--part meanfield|samples|lockin|all] [--overwrite]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
from bnnzoo.theory.schemes import (action_checks, find_solutions, fraction_law, mass_per_code,  # noqa: E402
                                   partial_schemes, scheme_change, scheme_name, toy_classes)

CODES = ("011", "101", "110", "111", "100", "010", "001", "000")
SIZES = {
    "ci": dict(mf=((40, 0.01),), y_grid=(0.5,), n_random=1, n_grid=21, n_grid_checks=21, partial=(), law_N=(), n_q=0,
               changes=(),
               N=12, chains=2, warmup=30, samples=20, y_samples=(0.1, 0.5),
               lock_runs=dict(warm_start=dict(warm_start=20), long_warmup=dict(num_warmup=60)), N2=16),
    "cpu": dict(mf=((60, 0.01), (100, 0.0)), y_grid=(0.1, 0.2, 0.3, 0.4, 0.5),
                n_random=4, n_grid=25, n_grid_checks=41, partial=((60, 0.1),), law_N=(60,), n_q=8,
                changes=(("100", 0.1, 0.3), ("111", 0.3, 0.5)),
                N=60, chains=4, warmup=1000, samples=400, y_samples=(0.1, 0.2, 0.3, 0.4, 0.5),
                lock_runs=dict(short_warmup=dict(num_warmup=200), warm_start=dict(warm_start=500),
                               long_warmup=dict(num_warmup=3000)), N2=100),
}
T_SAMPLE = 0.01


class UsageError(Exception):
    """Bad command-line input: printed as one line, no traceback."""


def run_meanfield(cfg, log, save):
    """Part 1: the search over y− for every (P, T) of the size, the partial schemes, the law of the code-100 fraction
    and the checks of the action."""
    out = dict(checks=action_checks(n_grid=cfg["n_grid_checks"]), sweeps=[], partial=[], law=[])
    log(f"checks: {json.dumps(out['checks'])}")
    rng = np.random.default_rng(0)
    for P, T in cfg["mf"]:
        prev, box = [], (-3.5, 4.5)
        for yn in sorted(cfg["y_grid"])[::-1]:  # downwards: each point also starts from its upper neighbour's λ
            t0 = time.time()
            pt = find_solutions(P, yn, T, prev, rng, cfg["n_random"], cfg["n_grid"], box)
            prev = [np.array(s["lam"]) for s in pt["solutions"]]
            out["sweeps"].append(pt)
            sch = [scheme_name(s["mass_by_code"], 1e-3) for s in pt["solutions"]]
            log(f"P={P} T={T} y-={yn:.3f}: {pt['n_converged']}/{pt['n_starts']} starts converged, "
                f"{len(pt['solutions'])} distinct solution(s) {sch}, "
                f"f={[round(s['free_energy'], 5) for s in pt['solutions']]} [{time.time() - t0:.0f} s]")
            save(out)
    out["changes"] = []
    for P, T in cfg["mf"]:
        for code, lo, hi in cfg["changes"]:
            out["changes"].append(scheme_change(P, T, code, lo, hi))
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
def _sample(N, y_neg, chains, warmup, samples, seed=0, **kw):
    """One SNAPER run of the sigmoidal zoo net (N = P) and its summaries: health, per-chain code fractions, the code-100
    fraction per chain along the kept draws."""
    import bnnzoo
    from bnnzoo.diagnostics._data import run_data
    from bnnzoo.diagnostics.codes import _modal, code_ids, code_string
    from bnnzoo.inference.health import sampler_health

    task = bnnzoo.toy_task(P=N, y_pos=1.0, y_neg=y_neg, seed=seed)
    t0 = time.time()
    idata = bnnzoo.sample("sigmoidal", task, width=N, temperature=T_SAMPLE, num_chains=chains, num_warmup=warmup,
                          num_samples=samples, sampler="snaper", seed=seed, progress=False, record=("z",),
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


def run_samples(cfg, log, save):
    out = dict(runs=[])
    for yn in cfg["y_samples"]:
        s = _sample(cfg["N"], yn, cfg["chains"], cfg["warmup"], cfg["samples"])
        s["meanfield_mass"] = _mf_masses(cfg["N"], yn, T_SAMPLE)
        out["runs"].append(s)
        log(f"samples y-={yn}: {s['health']} {json.dumps({k: round(v, 3) for k, v in s['fraction'].items()})} "
            f"mean field {json.dumps({k: round(v, 3) for k, v in s['meanfield_mass'].items()})} [{s['wall_s']} s]")
        save(out)
    return out


def run_lockin(cfg, log, save, sweep_run=None):
    """Part 3 at y− = 0.1: prior start (the sweep's run if given), warm start, long warm-up, a second N; with the mean
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
            s = _sample(N, yn, cfg["chains"], warmup, cfg["samples"], **kw)
        s["start"] = name
        out["runs"].append(s)
        log(f"lock-in run '{name}' N={N}: {s['health']} code 100 per chain {s['fraction_per_chain'].get('100')} "
            f"[{s['wall_s']} s]")
        save(out)
    return out


# ---------------------------------------------------------------------------------------------------------------------
# the summary page
# ---------------------------------------------------------------------------------------------------------------------
def _fmt_codes(d, floor=1e-3):
    return ", ".join(f"{c} {v:.3f}" for c, v in sorted(d.items(), key=lambda kv: -kv[1]) if v >= floor) or "—"


def render(out_dir: Path) -> str:
    """ym_sweep.md from the summaries present in ``out_dir``."""
    parts = {p: json.loads((out_dir / f"ym_sweep.{p}.json").read_text())
             for p in ("meanfield", "samples", "lockin") if (out_dir / f"ym_sweep.{p}.json").exists()}
    L = ["# The y− sweep of the sigmoidal toy net (issue 22, item 3)", "",
         "Made by `python reproduce/ym_sweep.py`; the method and every formula are in that script's docstring. "
         "Sigmoidal φ, L = 1, toy task (docs/theory.md §2) with y+ = 1, classes ½ ¼ ¼, m = 3, σ_a² = 1/P.", ""]
    meta = {p: v.get("meta", {}) for p, v in parts.items()}
    if "meanfield" in parts:
        mf = parts["meanfield"]
        L += ["## 1. Mean field: every self-consistent solution along y−", "",
              f"Size `{meta['meanfield'].get('size')}`"
              f"{', ' + meta['meanfield']['note'] if meta['meanfield'].get('note') else ''}. "
              "Free energy per neuron f = −S(λ*) in nats (up to a constant common to all solutions at one y−, T, P).",
              ""]
        c = mf["checks"]
        L += [f"Checks of the action (P = {c['P']}, y− = {c['y_neg']}, T = {c['T']}): gradient vs central differences "
              f"{c['gradient_vs_central_difference']:.1e} (relative), vs P_c × the library's self-consistency residual "
              f"{c['gradient_vs_library_residual']:.1e}; linear-φ log z vs its closed form, max error "
              f"{c['linear_logz_max_error']:.1e}; smallest Hessian eigenvalue at random λ "
              f"{c['hessian_min_eigenvalue']:.3g} (> 0: convex).", ""]
        L += ["| P | T | y− | starts (converged) | distinct solutions | spread of converged λ | scheme (mass ≥ 1e-3) "
              "| masses | f |", "|---|---|---|---|---|---|---|---|---|"]
        for pt in mf["sweeps"]:
            for s in pt["solutions"]:
                L.append(f"| {pt['P']} | {pt['T']} | {pt['y_neg']:.2f} | {pt['n_starts']} ({pt['n_converged']}) | "
                         f"{len(pt['solutions'])} | {pt['spread_of_converged_lambda']:.1e} | "
                         f"{scheme_name(s['mass_by_code'], 1e-3)} | {_fmt_codes(s['mass_by_code'], 1e-6)} | "
                         f"{s['free_energy']:.5f} |")
        L += [""]
        n_multi = sum(len(p["solutions"]) > 1 for p in mf["sweeps"])
        L += [f"Points with more than one distinct solution: {n_multi} of {len(mf['sweeps'])}.", ""]
        for P, T in sorted({(p["P"], p["T"]) for p in mf["sweeps"]}):
            seq = []
            for p in sorted((p for p in mf["sweeps"] if (p["P"], p["T"]) == (P, T)), key=lambda p: p["y_neg"]):
                for s in p["solutions"]:
                    sch = scheme_name(s["mass_by_code"], 1e-3)
                    if not seq or seq[-1] != sch:
                        seq.append(sch)
            L.append(f"- P = {P}, T = {T}: {len(seq)} distinct schemes along y− (mass ≥ 1e-3): {' → '.join(seq)}")
        L += [""]
        if mf.get("changes"):
            L += ["Where the schemes change (library solver, bisection in y− on the mass of the branch crossing 1e-3):",
                  ""]
            L += [f"- P = {ch['P']}, T = {ch['T']}: branch {ch['code']} at y− = {ch['y_neg']:.3f} ± {ch['err']:.3f} "
                  f"(mass {ch['mass_lo']:.2g} → {ch['mass_hi']:.2g} across the bracket)"
                  if (ch["mass_lo"] >= 1e-3) != (ch["mass_hi"] >= 1e-3) else
                  f"- P = {ch['P']}, T = {ch['T']}: branch {ch['code']} stays below mass 1e-3 over the searched "
                  f"bracket (no change)" for ch in mf["changes"]]
            L += [""]
        if mf.get("partial"):
            L += ["Populations frozen in a subset of the branches (T = 0.01): Δf = f_B − f per neuron "
                  "(N Δf is the log-probability penalty at N neurons).", "",
                  "| P | y− | branches kept | Δf (nats/neuron) | masses within |", "|---|---|---|---|---|"]
            for pp in mf["partial"]:
                for s in pp["schemes"]:
                    L.append(f"| {pp['P']} | {pp['y_neg']} | {'/'.join(s['codes'])} | {s['delta_f']:.5f} | "
                             f"{_fmt_codes(s['masses_within'], 1e-6)} |")
            L += ["", "The basins are those of the free solution, held fixed. Where a subset drops one of the large "
                  "branches, the constrained density piles up against a basin boundary and Δf depends on the "
                  "boundary cells of the grid (the 101 and 110 rows, equal by symmetry, differ by a few percent): "
                  "read those rows as orders of magnitude only.", ""]
    if "samples" in parts:
        sm = parts["samples"]
        L += ["## 2. Samples next to the mean field", "",
              f"Size `{meta['samples'].get('size')}`. SNAPER, chains from prior draws, T = {T_SAMPLE}; fraction of "
              "neurons per modal code, mean ± standard error across chains; mean field at the same P and T.", "",
              "| y− | N = P | chains × (warm-up + draws) | health | sampled | mean field | wall s |",
              "|---|---|---|---|---|---|---|"]
        for r in sm["runs"]:
            samp = ", ".join(f"{c} {v:.3f} ± {r['fraction_se'][c]:.3f}" for c, v in
                             sorted(r["fraction"].items(), key=lambda kv: -kv[1]))
            L.append(f"| {r['y_neg']} | {r['N']} | {r['chains']} × ({r['warmup']} + {r['samples']}) | "
                     f"{r['health']}{': ' + r['health_reason'] if r['health_reason'] else ''} | {samp} | "
                     f"{_fmt_codes(r['meanfield_mass'], 1e-4)} | {r['wall_s']} |")
        L += [""]
    if "lockin" in parts:
        lk = parts["lockin"]
        L += ["## 3. The code-100 excess at y− = 0.1", "",
              "Mean-field cost of a fraction q of the neurons frozen on code 100 (nats per neuron; the equilibrium law "
              "of q at N neurons is P(q) ∝ exp(−N Δf(q))):", ""]
        for law in parts.get("meanfield", {}).get("law", []):
            if "error" in law:
                L.append(f"- N = P = {law['P']}: {law['error']}")
                continue
            L.append(f"- N = P = {law['P']} (T = {law['T']}): branch mass {law['mf_mass']:.4f}; "
                     + ", ".join(f"q = {q:.3f}: Δf = {d:.3f}, N Δf = {law['N'] * d:.0f}"
                                 for q, d in zip(law["q"], law["delta_f"])))
        L += ["", "| start | N | warm-up | health | code 100 per chain | code-100 fraction per chain along the draws "
              "(10 windows) | switches/draw |", "|---|---|---|---|---|---|---|"]
        for r in lk["runs"]:
            per = ", ".join(f"{v:.3f}" for v in r["fraction_per_chain"].get("100", [0.0] * r["chains"]))
            traj = "; ".join("→".join(f"{v:.2f}" for v in (t[0], t[len(t) // 2], t[-1])) for t in
                             r["code100_along_run"])
            opt = f" (warm start {r['options']['warm_start']} Adam steps)" if r["options"].get("warm_start") else ""
            L.append(f"| {r['start']}{opt} | {r['N']} | {r['warmup']} | {r['health']} | {per} | {traj} | "
                     f"{r['code_switches_per_draw']:.4f} |")
        L += [""]
        runs = {r["start"]: r for r in lk["runs"]}
        if "prior" in runs and "long_warmup" in runs:
            a = np.array(runs["prior"]["fraction_per_chain"].get("100", [0.0]))
            b = np.array(runs["long_warmup"]["fraction_per_chain"].get("100", [0.0]))
            n_units = runs["prior"]["N"]
            L += [f"Same seed, warm-up {runs['prior']['warmup']} vs {runs['long_warmup']['warmup']}: code-100 neurons "
                  f"per chain {np.rint(a * n_units).astype(int).tolist()} vs "
                  f"{np.rint(b * n_units).astype(int).tolist()}"
                  f" (of {n_units}). Under the prior the class means of a neuron's preactivations are independent and "
                  f"symmetric about 0 (orthogonal inputs), so every one of the 8 codes starts on exactly 1/8 of the "
                  f"neurons in expectation.", ""]
    if {"meanfield", "samples", "lockin"} <= set(parts):
        L += _findings(parts)
    return "\n".join(L) + "\n"


def _findings(parts):
    """The conclusions, each number read from the summaries."""
    mf, sm, lk = parts["meanfield"], parts["samples"], parts["lockin"]
    n_pts = len(mf["sweeps"])
    n_one = sum(len(p["solutions"]) == 1 for p in mf["sweeps"])
    n_starts = sum(p["n_starts"] for p in mf["sweeps"])
    n_conv = sum(p["n_converged"] for p in mf["sweeps"])
    spread = max((p["spread_of_converged_lambda"] for p in mf["sweeps"]), default=float("nan"))
    schemes = sorted({scheme_name(s["mass_by_code"], 1e-3) for p in mf["sweeps"] for s in p["solutions"]})
    runs = {r["y_neg"]: r for r in sm["runs"]}
    lo = runs[min(runs)]
    worst = max(((abs(r["fraction"].get(c, 0.0) - r["meanfield_mass"].get(c, 0.0)), c, y)
                 for y, r in runs.items() if y >= 0.3 for c in set(r["fraction"]) | set(r["meanfield_mass"])),
                default=(float("nan"), "", ""))
    lock = {r["start"]: r for r in lk["runs"]}
    L = ["## Findings", "",
         f"1. **One mean-field solution per y−.** {n_conv} of {n_starts} starts converged over {n_pts} searched "
         f"(P, T, y−) points; at {n_one} of them every converged start reached the same λ (largest spread "
         f"{spread:.1e}). This is what the action predicts: S(λ) is strictly convex (a cumulant generating function "
         f"plus a quadratic), so its stationary point — the self-consistent solution — is unique, and it is the "
         f"lowest free energy by construction. The other 'sets of branches' are populations frozen in a subset of "
         f"the branches; each costs Δf > 0 per neuron (table above).",
         f"2. **Schemes along y−:** {len(schemes)} distinct ones in the search ({'; '.join(schemes)}), changing "
         f"where the branch masses cross 1e-3 (bisection above): a small 100 branch at low y−, three codes in the "
         f"middle, a 111 branch at high y−. The search finds no four-scheme sequence.",
         f"3. **Samples:** at y− ≥ 0.3 ({', '.join(r['health'] for y, r in sorted(runs.items()) if y >= 0.3)}) "
         f"the sampled code fractions differ from the mean-field masses by at most {worst[0]:.3f} (code {worst[1]} "
         f"at y− = {worst[2]}); at y− = {lo['y_neg']} code 100 carries {lo['fraction'].get('100', 0):.3f} ± "
         f"{lo['fraction_se'].get('100', 0):.3f} of the neurons against a mean-field mass "
         f"{lo['meanfield_mass'].get('100', 0):.3f}, and the health check says '{lo['health']}'."]
    if "prior" in lock:
        per = {k: r["fraction_per_chain"].get("100", []) for k, r in lock.items()}
        law = mf.get("law", [])
        cost = ""
        if law and "error" not in law[0]:
            q, d = np.array(law[0]["q"]), np.array(law[0]["delta_f"])
            k = int(np.argmin(np.abs(q - 1 / 6)))
            cost = (f" In the mean field, freezing q = {q[k]:.3f} of N = {law[0]['N']} neurons on code 100 costs "
                    f"N Δf = {law[0]['N'] * d[k]:.0f} nats against the free population, so at equilibrium such a "
                    f"fraction would not occur.")
        same_seed = ", ".join(k + " " + "/".join(f"{v:.2f}" for v in per[k]) for k in per
                              if k in ("short_warmup", "prior", "long_warmup"))
        L.append(f"4. **The code-100 excess is lock-in, not equilibrium.** Every chain keeps its number of code-100 "
                 f"neurons through all kept draws (code switches per neuron per draw ≤ "
                 f"{max(r['code_switches_per_draw'] for r in lk['runs']):.1e}); the chains disagree on the invariant "
                 f"observables (largest R̂ {max(lock['prior']['rhat'].values()):.2f}, the readout norms); the same "
                 f"seed gives the same per-chain pattern after 200, 1000 and 3000 warm-up steps ({same_seed}); "
                 f"a warm start onto the solution space (from the same prior draws) lands on the same level "
                 f"({'/'.join(f'{v:.2f}' for v in per.get('warm_start', []))}), and so does N = P = 100 "
                 f"({'/'.join(f'{v:.2f}' for v in per.get('prior, second N', []))}): the fraction does not relax "
                 f"with warm-up length and does not shrink with N, as a finite-size equilibrium effect would.{cost} "
                 f"The level itself is consistent with the start: the prior puts 1/8 of the neurons on each of the 8 "
                 f"codes, and at y− = 0.1 code 100 is a locally stable branch, so neurons that reach it during the "
                 f"descent stay (a start with the mean-field populations was not run).")
    return L + [""]


# ---------------------------------------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="ym_sweep", description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="ci", help="ci (seconds, tiny) or cpu")
    ap.add_argument("--part", default="all", help="meanfield, samples, lockin (comma-separated) or all")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"), help="results folder")
    ap.add_argument("--overwrite", action="store_true", help="replace existing summaries")
    args = ap.parse_args(argv)
    try:
        if args.size not in SIZES:
            raise UsageError(f"--size must be one of {sorted(SIZES)}, got {args.size!r}")
        parts = ("meanfield", "samples", "lockin") if args.part == "all" else tuple(args.part.split(","))
        if any(p not in ("meanfield", "samples", "lockin") for p in parts):
            raise UsageError(f"--part must be meanfield, samples, lockin or all, got {args.part!r}")
        out_dir = Path(args.out)
        out_dir.mkdir(parents=True, exist_ok=True)
        existing = [str(out_dir / f"ym_sweep.{p}.json") for p in parts if (out_dir / f"ym_sweep.{p}.json").exists()]
        if existing and not args.overwrite:
            raise UsageError(f"{', '.join(existing)} exists: pass --overwrite to replace it")
    except (UsageError, OSError) as exc:
        print(f"ym_sweep: error: {exc}", file=sys.stderr)
        return 2
    cfg = SIZES[args.size]

    def log(msg):
        print(msg, flush=True)

    def saver(part, t0):
        def save(obj):
            obj = dict(obj, meta=dict(size=args.size, wall_s=round(time.time() - t0, 1), complete=False))
            (out_dir / f"ym_sweep.{part}.json").write_text(json.dumps(obj, indent=1))
            (out_dir / "ym_sweep.md").write_text(C.mark_uncertified(render(out_dir)))
        return save

    sweep_run = None
    for part in parts:
        t0 = time.time()
        save = saver(part, t0)
        if part == "meanfield":
            obj = run_meanfield(cfg, log, save)
        elif part == "samples":
            obj = run_samples(cfg, log, save)
            sweep_run = next((r for r in obj["runs"] if r["y_neg"] == min(cfg["y_samples"])), None)
        else:
            prev = out_dir / "ym_sweep.samples.json"
            if sweep_run is None and prev.exists():  # the prior-start run of an earlier samples part
                prev = json.loads(prev.read_text())
                if prev.get("meta", {}).get("size") == args.size:
                    sweep_run = next((r for r in prev["runs"] if r["y_neg"] == min(cfg["y_samples"])), None)
            obj = run_lockin(cfg, log, save, sweep_run)
        obj = dict(obj, meta=dict(size=args.size, wall_s=round(time.time() - t0, 1), complete=True))
        (out_dir / f"ym_sweep.{part}.json").write_text(json.dumps(obj, indent=1))
        (out_dir / "ym_sweep.md").write_text(C.mark_uncertified(render(out_dir)))
        log(f"{part}: written to {out_dir} [{time.time() - t0:.0f} s]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
