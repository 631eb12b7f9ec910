"""Finite size on the toy task (theory page §3, §5): ReLU outliers and sigmoidal branch masses versus the width N at
fixed P.

* ReLU, y− = −1/2: the outlier neurons' readout norm |a_i| and preactivation size (RMS over draws and points) for
  each N, the exponent of their growth with N fitted on a log–log scale (theory: ½, outliers of order √N against an
  O(1) bulk) and the outlier count per chain (theory: at least m − 1; on the toy task m = 3, one per class).
* Sigmoidal, y− = ½: the fraction of units on each code (modal code of the unit over its draws) and the readout
  branch masses (BIC clustering) for each N, against the single-neuron mean field (N → ∞; the same for every N since
  P and σ_a² = 1/P are fixed).

Every entry records the sampler health and the R̂ across chains of the permutation-invariant observables (training
error, readout norm per class, network outputs, outlier count), so frozen units are shown frozen at equilibrium.

Run: ``python -m reproduce finite_size --size ci|cpu|paper [--parts relu,sigmoid] [--widths N,...] [--relu-warmup K]
[--overwrite]``, or ``python -m reproduce finite_size --combine A.json B.json ... --name STEM`` to merge the widths of
several runs into one result without sampling.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from . import _common as C

NAME = "finite_size"
CLAIMS = ("S1", "S2", "S4", "Q1", "Q2")
M = 3          # classes of the toy task
# per size: P, N0, ReLU widths, sigmoid widths, warm-up (ReLU, sigmoid), kept draws, z thinning
SIZES = {
    "ci": dict(P=20, N0=40, relu_N=(20, 40), sigmoid_N=(20, 40), relu_warmup=200, sigmoid_warmup=150, samples=100,
               thin_z=1),
    "cpu": dict(P=100, N0=120, relu_N=(50, 100, 200, 400), sigmoid_N=(50, 100, 200), relu_warmup=2000,
                sigmoid_warmup=500, samples=400, thin_z=2),
    "paper": dict(P=100, N0=120, relu_N=(50, 100, 200, 400, 700, 1000), sigmoid_N=(50, 100, 200, 500, 1000),
                  relu_warmup=3000, sigmoid_warmup=1000, samples=500, thin_z=5),
}
Y_NEG = {"relu": -0.5, "sigmoidal": 0.5}


def fit_exponent(Ns, values) -> dict:
    """Weighted least-squares slope of mean log(value) against log N.

    ``values`` : per N, the list of the outliers' sizes.  Each N's point is the mean of log(size) over its outliers
    with standard error std/√n (n ≥ 2; N with fewer outliers is left out).  The slope's standard error is the WLS one,
    scaled up by √(χ²/dof) when the points scatter more than their errors say.
    Returns {slope, se, intercept, n_points, chi2_dof}.
    """
    x, y, s = [], [], []
    for N, v in zip(Ns, values):
        lv = np.log(np.asarray(v, float))
        if lv.size >= 2:
            x.append(math.log(N))
            y.append(float(lv.mean()))
            s.append(max(float(lv.std(ddof=1)) / math.sqrt(lv.size), 1e-3))
    if len(x) < 2:
        return dict(slope=float("nan"), se=float("nan"), intercept=float("nan"), n_points=len(x),
                    chi2_dof=float("nan"))
    x, y, w = np.array(x), np.array(y), 1.0 / np.array(s) ** 2
    A = np.stack([np.ones_like(x), x], 1)
    cov = np.linalg.inv(A.T @ (A * w[:, None]))
    b = cov @ (A.T @ (w * y))
    chi2 = float(np.sum(w * (y - A @ b) ** 2))
    dof = len(x) - 2
    scale = math.sqrt(max(chi2 / dof, 1.0)) if dof > 0 else 1.0
    return dict(slope=float(b[1]), se=float(math.sqrt(cov[1, 1]) * scale), intercept=float(b[0]), n_points=len(x),
                chi2_dof=chi2 / dof if dof > 0 else float("nan"))


def meanfield_masses(task, T: float, sigma_a2: float) -> dict:
    """Mean-field branch masses per code (N → ∞) for the task."""
    from bnnzoo.theory.meanfield import single_neuron_meanfield

    th = single_neuron_meanfield(task.X, task.Y, labels=task.labels, nonlinearity="sigmoid", temperature=T,
                                 sigma_a2=sigma_a2)
    return {str(c): float(p) for c, p in zip(th.branch_code, th.branch_mass)}


def relu_entry(N: int, s: dict, args) -> dict:
    run, task, dt = C.sample_toy("relu", N=N, P=s["P"], N0=s["N0"], y_neg=Y_NEG["relu"], warmup=s["relu_warmup"],
                                 samples=s["samples"], seed=args.seed, thin_z=s["thin_z"], progress=args.progress)
    rd = C.run_data_of(run)
    return dict(N=N, P=s["P"], N0=s["N0"], warmup=s["relu_warmup"], samples=s["samples"], seconds=round(dt, 1),
                sigma_a2=rd.sigma_a2, temperature=rd.temperature, health=C.health_summary(run),
                outliers=C.outlier_summary(rd))


def sigmoid_entry(N: int, s: dict, args) -> dict:
    run, task, dt = C.sample_toy("sigmoidal", N=N, P=s["P"], N0=s["N0"], y_neg=Y_NEG["sigmoidal"],
                                 warmup=s["sigmoid_warmup"], samples=s["samples"], seed=args.seed,
                                 thin_z=s["thin_z"], progress=args.progress)
    rd = C.run_data_of(run)
    mf = meanfield_masses(task, rd.temperature, rd.sigma_a2)
    codes = C.code_summary(rd)
    tv = 0.5 * sum(abs(codes["fraction"].get(c, 0.0) - mf.get(c, 0.0)) for c in set(mf) | set(codes["fraction"]))
    return dict(N=N, P=s["P"], N0=s["N0"], warmup=s["sigmoid_warmup"], samples=s["samples"], seconds=round(dt, 1),
                sigma_a2=rd.sigma_a2, temperature=rd.temperature, health=C.health_summary(run), codes=codes,
                branches=C.branch_summary(rd), meanfield_mass=mf, tv_to_meanfield=tv)


def relu_sizes(e: dict) -> dict:
    """The outliers' mean RMS readout norm and preactivation of one ReLU entry, each with its standard error over
    the outliers (None with fewer than two outliers; both None without outliers)."""
    out = {}
    for key in ("readout", "preactivation"):
        out[f"{key}_mean"], out[f"{key}_mean_se"] = C.mean_se(e["outliers"][key])
    return out


def max_rhat_q_a(h: dict) -> float | None:
    """The largest R̂ of the readout norms per class q_a[c] of a health summary (None when none is recorded)."""
    qa = [v for k, v in h["rhat"].items() if k.startswith("q_a") and v is not None]
    return max(qa) if qa else None


def complete(summary: dict) -> dict:
    """``summary`` with what is computed from its entries filled in: on every ReLU entry the outliers' mean sizes
    (:func:`relu_sizes`), on every entry the largest R̂ of its readout norms (``rhat_max_q_a``), and the
    ``analysis`` (:func:`analyse`), in place.  Needs the JSON summary alone, so it also completes a stored result
    file."""
    for kind in ("relu", "sigmoid"):
        for e in summary[kind]:
            if kind == "relu":
                e.update(relu_sizes(e))
            e["rhat_max_q_a"] = max_rhat_q_a(e["health"])
    summary["analysis"] = analyse(summary)
    return summary


def analyse(summary: dict) -> dict:
    """Fitted exponents and verdicts from the finished entries; the widths planned in ``settings`` but not finished
    (``unfinished``, per part)."""
    relu = summary["relu"]
    out = {}
    if relu:
        eq = [e for e in relu if e["health"]["status"] == "equilibrated"]
        for key in ("readout", "preactivation"):
            for suffix, entries in (("", relu), ("_equilibrated", eq)):
                if suffix and len(eq) == len(relu):
                    continue
                f = fit_exponent([e["N"] for e in entries], [e["outliers"][key] for e in entries])
                f["theory"] = 0.5
                f["z_vs_half"] = ((f["slope"] - 0.5) / f["se"] if f["se"] and math.isfinite(f["se"])
                                  else float("nan"))
                f["widths"] = [e["N"] for e in entries]
                out[f"exponent_{key}{suffix}"] = f
        out["outliers_per_chain"] = {e["N"]: e["outliers"]["per_chain"] for e in relu}
        out["min_outliers_theory"] = M - 1
        out["one_per_class_all_N"] = all(e["outliers"]["one_per_class"] for e in relu)
        out["at_least_m_minus_1"] = all(min(e["outliers"]["per_chain"]) >= M - 1 for e in relu)
    sig = summary["sigmoid"]
    if sig:
        out["tv_to_meanfield"] = {e["N"]: e["tv_to_meanfield"] for e in sig}
    out["all_equilibrated"] = all(e["health"]["status"] == "equilibrated" for e in relu + sig)
    unfinished = {}
    for kind in ("relu", "sigmoid"):
        planned = summary.get("settings", {}).get(f"{kind}_N") or []
        missing = sorted(set(planned) - {e["N"] for e in summary[kind]})
        if missing:
            unfinished[kind] = missing
    out["unfinished"] = unfinished
    return out


def combine(args, argv) -> int:
    """Merge finished entries of several result files (e.g. widths run in separate processes) into one result."""
    import json

    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)
    parts = []
    for f in args.combine:
        try:
            parts.append(json.loads(Path(f).read_text()))
        except (OSError, ValueError) as e:
            raise ValueError(f"--combine: cannot read {f} as a result file ({e})") from None
        if not all(k in parts[-1] for k in ("provenance", "relu", "sigmoid")):
            raise ValueError(f"--combine: {f} is not a {NAME} result file")
    summary = dict(provenance=dict(parts[0]["provenance"]), settings=parts[0].get("settings", {}), relu=[],
                   sigmoid=[], combined_from=[dict(file=Path(f).name, command=p["provenance"]["command"],
                                                   started=p["provenance"]["started"])
                                              for f, p in zip(args.combine, parts)])
    if len(parts) > 1:
        summary["provenance"]["command"] += "  (combined with " + "; ".join(
            p["provenance"]["command"] for p in parts[1:]) + ")"
    for kind in ("relu", "sigmoid"):
        seen = {}
        for p in parts:
            for e in p[kind]:
                seen.setdefault(e["N"], e)
        summary[kind] = [seen[N] for N in sorted(seen)]
    files.write(complete(summary))
    C.log(f"{NAME}: wrote {files.json}")
    return 0


def run(argv=None) -> int:
    argv = [] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--parts", default="relu,sigmoid", help="comma-separated: relu, sigmoid (default both)")
    p.add_argument("--widths", default=None,
                   help="comma-separated widths N replacing the size's lists of the parts run (e.g. 400)")
    p.add_argument("--relu-warmup", type=int, default=None,
                   help="warm-up steps of the ReLU runs, replacing the size's (e.g. a longer one for the largest N)")
    p.add_argument("--combine", nargs="+", default=None, metavar="JSON",
                   help="no sampling: merge the entries of these result files of this experiment (the first file's "
                        "entry wins for a width run twice) and write them as one result")
    args = p.parse_args(argv)
    C.check_args(args)
    if args.combine:
        return combine(args, argv)
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    bad = sorted(set(parts) - {"relu", "sigmoid"})
    if bad or not parts:
        raise ValueError(f"--parts must name relu and/or sigmoid, got {args.parts!r}")
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)
    s = dict(SIZES[args.size])
    if args.widths:
        try:
            widths = tuple(int(w) for w in args.widths.split(","))
        except ValueError:
            raise ValueError(f"--widths must be comma-separated integers, got {args.widths!r}") from None
        if any(w < 2 for w in widths):
            raise ValueError(f"--widths must be >= 2, got {args.widths!r}")
        s.update({f"{k}_N": widths for k in ("relu", "sigmoid")})
    if args.relu_warmup is not None:
        if args.relu_warmup < 1:
            raise ValueError(f"--relu-warmup must be >= 1, got {args.relu_warmup}")
        s["relu_warmup"] = args.relu_warmup
    summary = dict(provenance=C.provenance(args, argv), settings=s, relu=[], sigmoid=[], analysis={})
    jobs = ([("sigmoid", N) for N in s["sigmoid_N"]] if "sigmoid" in parts else []) + \
           ([("relu", N) for N in s["relu_N"]] if "relu" in parts else [])
    for i, (kind, N) in enumerate(jobs):
        C.log(f"{NAME}: [{i + 1}/{len(jobs)}] {kind} N = {N}, P = {s['P']}")
        e = relu_entry(N, s, args) if kind == "relu" else sigmoid_entry(N, s, args)
        summary[kind].append(e)
        files.write(complete(summary))
        C.log(f"{NAME}: {kind} N = {N} done in {e['seconds']} s: health {e['health']['status']}"
              + (f", outliers per chain {e['outliers']['per_chain']}" if kind == "relu" else
                 f", TV to mean field {e['tv_to_meanfield']:.3f}"))
    C.log(f"{NAME}: wrote {files.json}")
    return 0
