"""Shared helpers of the reproduction experiments: the command line, sampling a net on the toy task, the summaries
that are stored instead of the draws, and the result file (one JSON file per run in ``reproduce/results/``; the pages
are made from it by :mod:`reproduce.render`).

Every experiment samples with SNAPER (ChEES-HMC with the trajectory length tuned on the slowest direction, as
``bnnzoo demo`` does), ``num_chains`` chains vectorised on one device, each started from its own prior draw.  The
draws are streamed in chunks (``chunk_size``); the first-layer weights are not recorded and the preactivations are
recorded on every ``thin_z``-th kept draw only, so that a paper-size run fits one GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import platform
import re
import sys
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
SIZES = ("ci", "cpu", "paper")
CHAINS = 4


def log(msg: str) -> None:
    """Progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The command line every script shares: --size, --out, --name, --seed, --overwrite, --progress."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.set_defaults(prog=prog)
    p.add_argument("--size", choices=SIZES, default="cpu",
                   help="ci: seconds to a minute per net (tests); cpu: what a 2-core CPU runs in about half an "
                        "hour; paper: the paper's sizes (needs a GPU)")
    p.add_argument("--out", default=str(RESULTS), help="folder of the result files (default: reproduce/results)")
    p.add_argument("--name", default=None, help="stem of the result file (default: <experiment>_<size>)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (>= 0)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing result file")
    p.add_argument("--progress", action="store_true", help="the sampler's own progress lines as well")
    return p


UNCERTIFIED_MARK = "†"
"""Follows every "equilibrated" of a result file whose runs' populations were not certified."""
UNCERTIFIED_NOTE = (
    "† **Populations not certified.** Every run in this file started all its chains from prior draws (one start "
    "family; `bnnzoo.sample(..., certify=True)` was not used), so \"equilibrated†\" means that the chains agreed on "
    "the permutation-invariant observables the health gate judges, not that the populations of units (codes, "
    "branch masses, outliers, specialists) are the equilibrium ones: chains started alike can lock into the same "
    "populations.  The result file of a certified run says `\"populations_certified\": true` and records the "
    "certification behind it: per row, the start families and whether they agree.")
EARLIER_GATE_NOTE = (
    "  These runs were also judged by the health gate as it was before 2026-11-27, which skipped the unit averages "
    "q_a and q_z (R̂, drift and ESS) whenever their chain means differed by less than 3 population standard errors, "
    "judged the outputs f by their median R̂ and passed one chain's split R̂ of NaN; the current gate "
    "(`bnnzoo.inference.health`) judges every one of them.")
_EQUILIBRATED = re.compile(r"(?<![\w_])(?<!not )(?<!never )equilibrated(?![\w_†])")


def mark_uncertified(markdown: str, earlier_gate: bool = False) -> str:
    """The result page ``markdown`` with every "equilibrated" (not "not equilibrated") followed by
    :data:`UNCERTIFIED_MARK` and the note saying what that means inserted after the page's first paragraph (below its
    title and command line); unchanged when already marked.  ``earlier_gate`` adds that the runs were judged by the
    health gate before 2026-11-27 (:data:`EARLIER_GATE_NOTE`)."""
    if UNCERTIFIED_NOTE[:40] in markdown:
        return markdown
    body = _EQUILIBRATED.sub("equilibrated" + UNCERTIFIED_MARK, markdown)
    note = UNCERTIFIED_NOTE + (EARLIER_GATE_NOTE if earlier_gate else "")
    head, sep, rest = body.partition("\n\n")
    head2, sep2, rest2 = rest.partition("\n\n")
    if head.startswith("#") and sep2:
        return head + sep + head2 + sep2 + note + "\n\n" + rest2
    return head + sep + note + "\n\n" + rest if sep else body + "\n\n" + note + "\n"


class ResultFiles:
    """The JSON result file of one experiment run; refuses to replace an existing file unless ``overwrite``.

    ``certified``: the experiment certifies its runs' populations (several start families, ``certify=True``);
    otherwise the JSON records ``"populations_certified": false`` and the rendered page marks every "equilibrated"
    (:mod:`reproduce.render`), so that no result page says "equilibrated" of populations nobody certified.  The
    file is written to a temporary name and renamed, so an interrupted write leaves the previous version whole."""

    def __init__(self, out: str | Path, stem: str, overwrite: bool, certified: bool = False):
        out = Path(out)
        if out.exists() and not out.is_dir():
            raise ValueError(f"--out: {out} is a file, not a folder")
        self.json = out / f"{stem}.json"
        if self.json.exists() and not overwrite:
            raise ValueError(f"--overwrite: {self.json} exists; pass --overwrite to replace it")
        self.out = out
        self.certified = bool(certified)

    def write(self, summary: dict) -> None:
        """Write the JSON file (called after every finished entry, so a stopped run keeps what it finished)."""
        self.out.mkdir(parents=True, exist_ok=True)
        summary = dict(summary, populations_certified=self.certified)
        tmp = self.json.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(jsonable(summary), indent=1, allow_nan=False) + "\n")
        tmp.replace(self.json)


def check_args(args) -> None:
    """Reject bad common arguments before anything compiles."""
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    if args.name is not None and (not args.name or "/" in args.name):
        raise ValueError(f"--name must be a plain file stem, got {args.name!r}")


def refuse_ignored(p: argparse.ArgumentParser, args, argv, option: str, ignored) -> None:
    """Refuse options that a mode ignores: ValueError (one line naming ``option`` and the options) when any of
    ``ignored`` (long options of ``p`` with argparse's default destination, e.g. ``"--relu-warmup"``) was given in
    ``argv`` or holds other than its default in ``args`` (an abbreviated option)."""
    dest = {o: o.lstrip("-").replace("-", "_") for o in ignored}
    given = [o for o in ignored if getattr(args, dest[o]) != p.get_default(dest[o])
             or any(x == o or x.startswith(o + "=") for x in argv)]
    if given:
        raise ValueError(f"{option} reads stored runs and ignores {', '.join(given)}; leave "
                         f"{'it' if len(given) == 1 else 'them'} out")


def int_list(text: str, name: str, lo: int) -> tuple[int, ...]:
    """Distinct comma-separated integers >= ``lo`` from the option ``name``; ValueError naming it otherwise."""
    try:
        vals = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        vals = ()
    if not vals or min(vals) < lo or len(set(vals)) != len(vals):
        raise ValueError(f"{name} must be distinct comma-separated integers >= {lo}, got {text!r}")
    return vals


def name_list(text: str, option: str, valid) -> list[str]:
    """Distinct comma-separated names among ``valid`` from the option ``option``; ValueError naming it otherwise."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names or set(names) - set(valid) or len(set(names)) != len(names):
        raise ValueError(f"{option} must name distinct items among {', '.join(valid)}, got {text!r}")
    return names


def previous_run(args, stem: str, settings: dict, keys) -> dict:
    """The JSON summary a ``--resume`` run continues, after checking that it was sampled with the
    same ``settings[k]`` for every k in ``keys`` and the same ``--seed`` (ValueError naming the difference)."""
    js = Path(args.out) / f"{stem}.json"
    if not js.exists():
        raise ValueError(f"--resume: {js} does not exist")
    old = json.loads(js.read_text())
    bad = [k for k in keys if old.get("settings", {}).get(k) != settings[k]]
    if bad:
        raise ValueError(f"--resume: {js} was sampled with other {', '.join(bad)}; use the same options")
    if old.get("provenance", {}).get("seed") != args.seed:
        raise ValueError(f"--resume: {js} was run with --seed {old.get('provenance', {}).get('seed')}, "
                         f"not {args.seed}")
    return old


def continued_provenance(old: dict, prov: dict) -> dict:
    """The original run's provenance with this command appended to its history (mode "resume")."""
    hist = list(old["provenance"].get("history", []))
    step = dict(mode="resume", command=prov["command"], started=prov["started"])
    return dict(old["provenance"], history=hist + [step])


def provenance(args, argv) -> dict:
    """Command, machine, versions and start time of a script run."""
    import jax
    import numpyro

    import bnnzoo

    dev = jax.devices()[0]
    return dict(command=" ".join([getattr(args, "prog", "python -m reproduce")] + list(argv)), size=args.size,
                seed=args.seed,
                started=datetime.datetime.now().isoformat(timespec="seconds"),
                machine=f"{platform.machine()}, {jax.device_count()} × {dev.device_kind} ({dev.platform})",
                versions=dict(python=platform.python_version(), jax=jax.__version__, numpyro=numpyro.__version__,
                              bnnzoo=bnnzoo.__version__))


def run_main(prog: str, main, argv=None) -> int:
    """Run ``main(argv)``; a bad argument or existing result becomes a one-line ``prog: error: ...`` (exit 2)."""
    try:
        return int(main(argv) or 0)
    except (ValueError, FileNotFoundError, NotADirectoryError, PermissionError) as e:
        print(f"{prog}: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: error: interrupted", file=sys.stderr)
        return 130


def jsonable(x):
    """Plain JSON types; NaN and infinities become None (JSON has neither; the page shows "—")."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, (np.bool_,)):
        return bool(x)
    return x


# ------------------------------------------------------------------------------------------------------ sampling
def sample_toy(entry_name: str, *, N: int, P: int, y_neg: float, warmup: int, samples: int, seed: int,
               thin_z: int = 1, chunk: int = 100, N0: int | None = None, chains: int = CHAINS,
               progress: bool = False, ratios=None, **model_kwargs):
    """Sample zoo entry ``entry_name`` (one hidden layer) of width N on the toy task with P points, N0 = P + 20
    inputs (unless given), targets 1 / ``y_neg`` and the task's class ratios (``ratios``, default ½, ¼, ¼); SNAPER,
    ``chains`` vectorised chains from prior draws.
    ``model_kwargs`` (temperature, readout, sigma_a2, ...) go to the model.

    Returns (run, task, seconds).  The first-layer weights are not recorded; the preactivations z1 (chain, draw,
    neuron, point) are recorded on every ``thin_z``-th kept draw (``thin_z`` must divide ``chunk``).
    """
    import bnnzoo

    entry = bnnzoo.get_entry(entry_name)
    task = entry.make_task(**dict(entry.task_defaults, P=P, N0=N0 if N0 is not None else P + 20, y_neg=y_neg,
                                  **({} if ratios is None else dict(ratios=ratios))))
    chunk = min(chunk, samples)
    kw = dict(site_thinning={"z1": thin_z}) if thin_z > 1 else {}
    t0 = time.time()
    run = bnnzoo.sample(entry, task, num_chains=chains, num_warmup=warmup, num_samples=samples, seed=seed,
                        sampler="snaper", record=("z",), exclude=("W1",), chunk_size=chunk, progress=progress,
                        width=N, **kw, **model_kwargs)
    return run, task, time.time() - t0


def run_data_of(run):
    """:class:`bnnzoo.diagnostics._data.RunData` of a run, with the (possibly thinned) first-layer preactivations."""
    from bnnzoo import azcompat
    from bnnzoo.diagnostics._data import run_data

    rd = run_data(run)
    if 1 not in rd.recorded_z:
        th = azcompat.get_group(run, "posterior_thinned")
        rd = dataclasses.replace(rd, recorded_z={1: np.asarray(th["z1"].values, float)})
    return rd


def largest_rhat(rhat: dict) -> float:
    """The largest R̂ of ``rhat`` ({observable: R̂}): +inf where the chains of an observable are each constant and
    different (:func:`bnnzoo.azcompat.rhat`), NaN where no R̂ is a number (none computed, or 0/0).  Result files
    write both as null (:func:`jsonable`); the health record's reason names an infinite R̂."""
    vals = [float(v) for v in rhat.values() if v is not None and not math.isnan(v)]
    return max(vals) if vals else float("nan")


def health_summary(run) -> dict:
    """Sampler health (status, reason, R̂ and ESS of the permutation-invariant observables, divergences)."""
    from bnnzoo.inference.health import sampler_health

    h = sampler_health(run)
    return dict(status=h.status, reason=h.reason, evidence=h.evidence, rhat=dict(h.rhat), ess=dict(h.ess),
                drift_z=dict(h.drift_z), divergences=h.divergences, n_chains=h.n_chains, n_draws=h.n_draws,
                max_rhat=largest_rhat(h.rhat))


def code_summary(rd) -> dict:
    """Modal feature-layer code of every unit (all chains): fraction of units per code with its binomial standard
    error, per-chain fractions, and whether the codes are frozen (code memory, switching rate); and the fraction of
    units on each code at a given draw (``per_draw``, mean over draws and chains, with the standard error over the
    chains ``per_draw_se``; a unit that hops between two codes counts for both, which its modal code does not
    show)."""
    from bnnzoo.diagnostics.codes import code_string, neural_codes

    cr = neural_codes(rd, 1)
    modal = np.vectorize(lambda k: code_string(int(k), rd.m))(np.asarray(cr.modal))  # (chain, neuron)
    n = modal.size
    frac, se, per_chain = {}, {}, {}
    for c in sorted(set(modal.ravel().tolist())):
        p = float(np.mean(modal == c))
        frac[c] = p
        se[c] = math.sqrt(max(p * (1 - p), 1.0 / n) / n)
        per_chain[c] = [float(np.mean(modal[k] == c)) for k in range(modal.shape[0])]
    ids = np.asarray(cr.ids)  # (chain, draw, unit)
    per_draw, per_draw_se = {}, {}
    for k in range(1 << rd.m):
        pc = np.mean(ids == k, axis=(1, 2))  # (chain,)
        if pc.max() > 0:
            per_draw[code_string(k, rd.m)] = float(pc.mean())
            per_draw_se[code_string(k, rd.m)] = (float(pc.std(ddof=1) / math.sqrt(pc.size)) if pc.size > 1
                                                 else float("nan"))
    return dict(fraction=frac, fraction_se=se, per_chain=per_chain, per_draw=per_draw, per_draw_se=per_draw_se,
                verdict=cr.verdict,
                code_memory=cr.code_memory, switching_rate=cr.switching_rate,
                switching_rate_se=cr.switching_rate_se, n_units=n)


def chain_disagreement(mse: np.ndarray, layers: list[dict]) -> dict:
    """Whether the chains' disagreement on the training error follows their frozen code populations.

    ``mse`` : (chain, draw) training error.  ``layers`` : per layer a dict with ``layer``, ``fraction`` {code: fraction
    of all units} and ``per_chain`` {code: [fraction per chain]}.  Per chain: the mean training error with its Monte
    Carlo standard error (10 batch means).  Per layer and code held by at least 5 % of the units: Spearman's rank
    correlation across chains between the chain's fraction of units on that code and its mean training error, with
    the two-sided p-value (scipy.stats.spearmanr; with C chains the smallest p is 2/C!, so 4 chains cannot show it).
    """
    from scipy import stats

    mse = np.asarray(mse, float)
    Cn, D = mse.shape
    nb = min(10, D)
    bm = mse[:, : D - D % nb].reshape(Cn, nb, -1).mean(2)
    out = dict(mse_chain_mean=mse.mean(1).tolist(), mse_chain_se=(bm.std(1, ddof=1) / math.sqrt(nb)).tolist(),
               mse_within_sd=float(mse.std(1).mean()), links=[])
    if Cn < 3:
        return out
    for lc in layers:
        for code, pc in lc["per_chain"].items():
            if lc["fraction"][code] < 0.05 or np.ptp(pc) == 0:
                continue
            with np.errstate(all="ignore"):
                r, pv = stats.spearmanr(pc, out["mse_chain_mean"])
            out["links"].append(dict(layer=lc["layer"], code=code, rho=float(r), p=float(pv),
                                     per_chain=[float(v) for v in pc]))
    out["links"].sort(key=lambda x: (x["p"], -abs(x["rho"])))
    return out


def outlier_summary(rd) -> dict:
    """ReLU outliers (:func:`bnnzoo.diagnostics.branches.find_outliers`): count per chain, classes, and the RMS
    readout norm and preactivation of every outlier and of the bulk (medians)."""
    from bnnzoo.diagnostics.branches import find_outliers

    o = find_outliers(rd.a, rd.z(1))
    flag = o.is_outlier.astype(bool)
    return dict(n_outliers=o.n_outliers, per_chain=list(o.per_chain), classes=list(o.classes),
                one_per_class=o.one_per_class, n_readout=o.n_readout, n_preactivation=o.n_preactivation,
                threshold_factor=o.threshold_factor, bulk_readout=o.bulk_readout,
                bulk_preactivation=o.bulk_preactivation, readout=o.readout_scale[flag].tolist(),
                preactivation=o.preact_scale[flag].tolist())


def branch_summary(rd) -> dict:
    """Readout branches by BIC (:func:`bnnzoo.diagnostics.branches.readout_branches`): masses, centres, codes."""
    from bnnzoo.diagnostics.branches import readout_branches

    b = readout_branches(rd)
    return dict(n_branches=b.n_branches, masses=b.masses.tolist(), mass_se=b.mass_se.tolist(),
                centres=b.centres.tolist(), codes=list(b.codes), silhouette=b.silhouette)


def readout_U(rd) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean of U = aᵀa/N (class, class) and its Monte Carlo standard error (ESS-based)."""
    from bnnzoo.diagnostics._data import mean_se

    per_draw = np.einsum("cdnr,cdns->cdrs", rd.a, rd.a, optimize=True) / rd.width
    return mean_se(per_draw)


def linear_U_check(rd, task) -> dict:
    """The sampled readout second moment U of a one-hidden-layer linear net against the exact saddle point
    (``bnnzoo.theory.linear.linear_saddle_point``): U, its standard error, the theory and the relative error."""
    from bnnzoo.theory.linear import linear_saddle_point

    U, se = readout_U(rd)
    th = linear_saddle_point(task.X, task.Y, temperature=rd.temperature, sigma_a2=rd.sigma_a2)
    nrm = float(np.linalg.norm(th.U))
    return dict(U=U.tolist(), U_se=se.tolist(), U_theory=np.asarray(th.U).tolist(),
                U_relative_error=float(np.linalg.norm(U - th.U) / nrm),
                U_relative_error_se=float(np.sqrt(np.sum(se ** 2)) / nrm))


def mean_se(values) -> tuple[float | None, float | None]:
    """Mean of the finite values (None and NaN left out) and its standard error (standard deviation / √n) over
    them — over chains or over seeds, as the caller says; (None, None) without values, se None with one."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], float)
    if v.size == 0:
        return None, None
    return float(v.mean()), (float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else None)


def loglog_slope(x, y) -> tuple[float | None, float | None]:
    """Least-squares slope of log y on log x over the points with y > 0 (None left out), and its standard error
    from the residuals; (None, None) with fewer than 2 points or a single x value, se None with 2."""
    pts = [(a, b) for a, b in zip(x, y) if b is not None and b > 0]
    if len({a for a, _ in pts}) < 2:
        return None, None
    lx, ly = np.log([a for a, _ in pts]), np.log([b for _, b in pts])
    b, a = np.polyfit(lx, ly, 1)
    if len(pts) < 3:
        return float(b), None
    res = ly - (a + b * lx)
    return float(b), math.sqrt(float(res @ res) / (len(pts) - 2) / float(((lx - lx.mean()) ** 2).sum()))


def fmt(v, se=None, digits: int = 3) -> str:
    """``v ± se`` for tables ("—" for a missing value)."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    s = f"{v:.{digits}g}"
    return s if se is None else f"{s} ± {se:.2g}"


# ------------------------------------------------------------------------------------------- certified sig1 runs
SIG1_ROW = "sig1"
"""The row of ``reproduce/certified.py`` (the toy task's one-hidden-layer sigmoidal net) that the ``--from-certified``
analyses of finite_size and critical_temperature read."""

MEANFIELD_AGREE = 1e-6
"""Largest |difference| allowed between the mean-field mass off 111 a certified run recorded and the one an analysis
solves on the same (default) grid: both solve the same self-consistency to |residual| <= 1e-9, far below the three
decimals shown."""


def certified_stems(patterns: str, out: Path) -> list[str]:
    """The result stems in ``out`` that the comma-separated names or glob patterns ``patterns`` give (sorted, each
    once); ValueError naming ``--from-certified`` when a pattern matches nothing."""
    stems = set()
    for pat in [x.strip() for x in patterns.split(",") if x.strip()]:
        hits = sorted(p.name[: -len(".json")] for p in Path(out).glob(f"{pat}.json"))
        if not hits:
            raise ValueError(f"--from-certified: no result file {pat}.json in {out}")
        stems.update(hits)
    if not stems:
        raise ValueError(f"--from-certified must name result stems or patterns, got {patterns!r}")
    return sorted(stems)


def certified_sig1(summary: dict, stem: str, y_neg: float) -> dict:
    """The fields of a certified run of row ``sig1`` (a ``reproduce/certified.py`` result summary) that the
    ``--from-certified`` analyses read, after the refusals they share.

    Parameters
    ----------
    summary : dict
        The run's JSON summary: ``populations_certified``, ``temperature``, ``chains``, ``sampler`` and
        ``rows["sig1"]`` with ``settings`` (``N``, ``warmup``, ``samples``), ``row`` (``y_neg``) and ``result``
        (``health``, optionally ``meanfield_codes`` {code: mass}, and ``certification`` with ``families``,
        ``agree``, ``disagreements``, ``observables`` {name: {family: [mean, s.e.]}}, optionally ``detectable`` and
        ``ensemble``).
    stem : str
        The run's result stem (recorded, and named in errors).
    y_neg : float
        The y− the analysis needs.

    Returns
    -------
    dict
        ``run``, ``N``, ``P`` (= N), ``T``, ``sampler``, ``chains_per_family``, ``warmup``, ``samples``,
        ``seconds``; ``health`` (``status``, ``reason``, ``criterion``, ``max_rhat``, ``rhat_111``: R̂ of the 111
        fraction across all chains); ``families``, ``agree``, ``disagreements``; ``observables`` (as recorded);
        ``per_family`` ({family: {code: [mean, s.e.]}} over every code a family visits and 011, 101, 110, 111, a
        code absent from the record counting 0 ± 0); ``detectable_111`` (the largest smallest-detectable
        difference of the 111 fraction over the pairs of families, or None); ``meanfield`` ({code: mass} as the run
        recorded it, or None).

    Raises
    ------
    ValueError
        One line naming ``--from-certified`` and the run: when the summary is not a certified run of row sig1 with
        a certification, its y− is not ``y_neg``, its health is not "equilibrated" by a named criterion (a record
        of an earlier gate names none), or its families number fewer than two or disagree.
    """
    row = (summary.get("rows") or {}).get(SIG1_ROW)
    if not summary.get("populations_certified") or row is None or "certification" not in row.get("result", {}):
        raise ValueError(f"--from-certified: {stem} is not a certified run of row {SIG1_ROW} with a result")
    if row["row"]["y_neg"] != y_neg:
        raise ValueError(f"--from-certified: {stem} has y- = {row['row']['y_neg']}, this analysis needs {y_neg}")
    res, cert = row["result"], row["result"]["certification"]
    h = res["health"]
    if h["status"] != "equilibrated" or not h.get("criterion"):
        raise ValueError(f"--from-certified: {stem} has health {h['status']!r}"
                         + ("" if h.get("criterion") else " judged by no named criterion (an earlier gate)")
                         + "; only runs equilibrated by the present criterion are read")
    fams = list(cert["families"])
    if len(set(fams)) < 2 or cert["agree"] is not True:
        raise ValueError(f"--from-certified: {stem} has families {fams} with agree {cert['agree']!r}; needs two or "
                         "more families that agree")
    obs = cert["observables"]
    names = {name[len("code_fraction[z1]["):-1]: name for name in obs if name.startswith("code_fraction[z1][")}
    per_family = {f: {c: [float(obs[names[c]][f][0]), float(obs[names[c]][f][1])] if c in names else [0.0, 0.0]
                      for c in sorted(set(names) | {"011", "101", "110", "111"})} for f in fams}
    det = cert.get("detectable", {}).get("code_fraction[z1][111]", {})
    mf = res.get("meanfield_codes")
    return dict(run=stem, N=row["settings"]["N"], P=row["settings"]["N"], T=summary["temperature"],
                sampler=summary.get("sampler"), chains_per_family=summary.get("chains"),
                warmup=row["settings"]["warmup"], samples=row["settings"]["samples"], seconds=row.get("seconds"),
                health=dict(status=h["status"], reason=h.get("reason"), criterion=h["criterion"],
                            max_rhat=h.get("max_rhat"),
                            rhat_111=cert.get("ensemble", {}).get("populations_rhat", {})
                            .get("code_fraction[z1][111]")),
                families=fams, agree=cert["agree"], disagreements=cert["disagreements"], observables=obs,
                per_family=per_family, detectable_111=max(det.values()) if det else None,
                meanfield={c: float(m) for c, m in sorted(mf.items())} if mf else None)


def pooled(per_family: dict) -> dict:
    """The families' plain mean of each code's fraction and its s.e. √Σ s.e.² / F: {code: [mean, s.e.]}, from
    ``per_family`` {family: {code: [mean, s.e.]}} (:func:`certified_sig1`)."""
    fams = list(per_family)
    codes = sorted({c for v in per_family.values() for c in v})
    return {c: [float(np.mean([per_family[f][c][0] for f in fams])),
                float(math.sqrt(sum(per_family[f][c][1] ** 2 for f in fams)) / len(fams))] for c in codes}


def check_meanfield(run: str, recorded_R: float | None, solved_R: float) -> None:
    """Refuse a certified run whose recorded mean field disagrees with the analysis's own solve: ValueError (one
    line naming ``--from-certified`` and ``run``) when ``recorded_R``, the mean-field mass off 111 the run recorded
    (None: it recorded none, nothing to check), differs from ``solved_R`` by more than :data:`MEANFIELD_AGREE`."""
    if recorded_R is not None and not abs(recorded_R - solved_R) <= MEANFIELD_AGREE:
        raise ValueError(f"--from-certified: {run} recorded the mean-field mass off 111 {recorded_R:.9g}, "
                         f"the solve here gives {solved_R:.9g} (allowed difference {MEANFIELD_AGREE:g})")
