"""``diagnose``: run every diagnostic that applies to a run, store the results in the InferenceData, and return a
report a researcher can read; ``write_report``: the same for one or several runs, written as JSON and figures.

Stored groups (they survive NetCDF; :func:`load_report` reads them back):

    diagnostics                      the report's verdicts and summary numbers (attributes)
    diagnostics_ergodicity_<var>     one :class:`~bnnzoo.diagnostics.ergodicity.ErgodicityResult` per variable
    diagnostics_symmetry_<var>       one :class:`~bnnzoo.diagnostics.symmetry.SymmetryResult` per variable
    diagnostics_codes_z<l>           one :class:`~bnnzoo.diagnostics.codes.CodeResult` per layer
    diagnostics_branches             :class:`~bnnzoo.diagnostics.branches.BranchResult`
    diagnostics_kernels              :class:`~bnnzoo.diagnostics.kernels.KernelResult`
    diagnostics_theory               :class:`~bnnzoo.diagnostics.compare.TheoryComparison`
    diagnostics_order_parameters     per-draw scalar order parameters (chain, draw): see :func:`order_parameters`
    diagnostics_health               :class:`~bnnzoo.diagnostics.health.SamplerHealth`

**Sampler health first** (:mod:`bnnzoo.diagnostics.health`): a run whose sampler failed or that is too short gets
"inconclusive: <reason>" for every verdict; a run still relaxing gets "relaxing: <evidence>" instead of "theory
disagrees", and "inconclusive: ..." instead of "ergodicity broken" when its chains disagree on an invariant observable.

**Coding scheme** (data-driven, theory.md §3): ``sparse`` when every chain has outlier neurons (readout and
preactivations of order √N), else ``redundant`` when the readout posterior has two or more branches (BIC), else
``analog`` (one Gaussian branch).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr

from .. import azcompat
from ._data import RunData, run_data
from ._record import Record, jsonable, record_from_dataset
from .branches import BranchResult, readout_branches
from .codes import code_string, neural_codes
from .compare import TheoryComparison, compare_with_theory
from .ergodicity import ergodicity, neuron_features
from .health import SamplerHealth, gate_verdicts, sampler_health
from .kernels import KernelResult, cka, kernels_and_richness
from .symmetry import permutation_symmetry

__all__ = ["DiagnosticReport", "diagnose", "load_report", "order_parameters", "write_report", "GROUP_PREFIX"]

GROUP_PREFIX = "diagnostics"


@dataclass(frozen=True, repr=False)
class DiagnosticReport(Record):
    """Everything :func:`diagnose` found about a run.

    run : short description (model, activation, depth, width, P, T, seed).   config : the run's provenance summary.
    coding_scheme : "analog", "redundant" or "sparse" (module docstring).
    verdicts : {"ergodicity[a]": "broken", "symmetry[z1]": "restored", "codes[z1]": "frozen", ...}.
    numbers : the headline numbers behind the verdicts (flat dict, for JSON and tests).
    ergodicity, symmetry : {variable: result}.   codes : {"z<l>": CodeResult}.   branches : BranchResult.
    kernels : KernelResult or None.   theory : TheoryComparison or None.   timings : seconds per diagnostic.
    health : SamplerHealth (can the run carry verdicts; the verdicts above are already gated by it) or None.
    """

    run: str
    config: dict
    coding_scheme: str
    verdicts: dict
    numbers: dict
    ergodicity: dict = field(default_factory=dict)
    symmetry: dict = field(default_factory=dict)
    codes: dict = field(default_factory=dict)
    branches: BranchResult | None = None
    kernels: KernelResult | None = None
    theory: TheoryComparison | None = None
    timings: dict = field(default_factory=dict)
    health: SamplerHealth | None = None

    def summary(self) -> list[str]:
        lines = [self.run, f"coding scheme: {self.coding_scheme}",
                 "verdicts: " + ", ".join(f"{k} {v}" for k, v in self.verdicts.items())]
        if self.health is not None:
            lines.append("— sampler health")
            lines += ["  " + ln for ln in self.health.summary()]
        for title, part in (("ergodicity", self.ergodicity), ("permutation symmetry", self.symmetry),
                            ("codes", self.codes)):
            if part:
                lines.append(f"— {title}")
                for r in part.values():
                    lines += ["  " + ln for ln in r.summary()]
        for title, r in (("readout branches", self.branches), ("kernels and richness", self.kernels),
                         ("theory", self.theory)):
            if r is not None:
                lines.append(f"— {title}")
                lines += ["  " + ln for ln in r.summary()]
        if self.timings:
            lines.append("— timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.timings.items()))
        return lines

    def __repr__(self) -> str:
        return "DiagnosticReport(\n" + "".join(f"  {ln}\n" for ln in self.summary()) + ")"

    def to_json(self, **kw) -> str:
        """The report (verdicts, numbers and every result's scalars) as strict JSON."""
        return json.dumps(self.to_dict(), **kw)

    def groups(self) -> dict[str, xr.Dataset]:
        """The datasets :func:`diagnose` stores, by group name."""
        head = {k: getattr(self, k) for k in ("run", "config", "coding_scheme", "verdicts", "numbers", "timings")}
        keys = list(self.verdicts)
        g = {GROUP_PREFIX: xr.Dataset({"verdict": (("check",), np.array([str(self.verdicts[k]) for k in keys]))},
                                      coords={"check": np.array(keys)},
                                      attrs={"bnnzoo_record": "DiagnosticReport",
                                             "bnnzoo_fields": json.dumps(jsonable(head)),
                                             "coding_scheme": self.coding_scheme, "run": self.run})}
        for v, r in self.ergodicity.items():
            g[f"{GROUP_PREFIX}_ergodicity_{v}"] = r.to_dataset()
        for v, r in self.symmetry.items():
            g[f"{GROUP_PREFIX}_symmetry_{v}"] = r.to_dataset()
        for v, r in self.codes.items():
            g[f"{GROUP_PREFIX}_codes_{v}"] = r.to_dataset()
        for name in ("branches", "kernels", "theory", "health"):
            r = getattr(self, name)
            if r is not None:
                g[f"{GROUP_PREFIX}_{name}"] = r.to_dataset()
        return g


def load_report(idata) -> DiagnosticReport:
    """Rebuild the :class:`DiagnosticReport` that :func:`diagnose` stored in ``idata`` (or a NetCDF path)."""
    if isinstance(idata, (str, os.PathLike)):
        idata = azcompat.from_netcdf(idata)
    names = azcompat.group_names(idata)
    if GROUP_PREFIX not in names:
        raise ValueError("no diagnostics stored in this run: call bnnzoo.diagnose(idata) first")
    head = json.loads(azcompat.get_group(idata, GROUP_PREFIX).attrs["bnnzoo_fields"])
    parts: dict = {"ergodicity": {}, "symmetry": {}, "codes": {}}
    for n in names:
        if not n.startswith(GROUP_PREFIX + "_") or n.endswith("order_parameters"):
            continue
        rest = n[len(GROUP_PREFIX) + 1:]
        rec = record_from_dataset(azcompat.get_group(idata, n))
        kind, _, var = rest.partition("_")
        if kind in parts and var:
            parts[kind][var] = rec
        else:
            parts[rest] = rec
    order = lambda d: dict(sorted(d.items(), key=lambda kv: (kv[0] != "a", kv[0])))  # noqa: E731
    return DiagnosticReport(run=head["run"], config=head["config"], coding_scheme=head["coding_scheme"],
                            verdicts=head["verdicts"], numbers=head["numbers"], timings=head.get("timings", {}),
                            ergodicity=order(parts["ergodicity"]), symmetry=order(parts["symmetry"]),
                            codes=order(parts["codes"]), branches=parts.get("branches"),
                            kernels=parts.get("kernels"), theory=parts.get("theory"), health=parts.get("health"))


def order_parameters(idata, codes: dict | None = None) -> xr.Dataset:
    """Scalar order parameters per draw, (chain, draw) — what ``az.plot_trace`` can show without plotting thousands
    of weights: ``mse``, ``q_a`` (class), and per layer l: ``target_alignment_z<l>`` (CKA of the draw's feature
    kernel with YYᵀ), ``code_switches_z<l>`` (fraction of units whose code changed since the previous draw) and
    ``code_fraction_z<l>`` (code: fraction of units carrying each code)."""
    rd = run_data(idata)
    C, D, m = rd.n_chains, rd.n_draws, rd.m
    data = {}
    q = np.einsum("cdnr,cdnr->cdr", rd.a, rd.a) / rd.width
    data["q_a"] = (("chain", "draw", "class"), q)
    if rd.f is not None:
        data["mse"] = (("chain", "draw"), np.mean((rd.f - rd.Y) ** 2, axis=(2, 3)))
    target = rd.Y @ rd.Y.T
    coords = {"chain": np.arange(C), "draw": np.arange(D), "class": np.arange(m),
              "code": [code_string(k, m) for k in range(1 << m)]}
    for l in range(1, rd.depth + 1):
        f = rd.phi(rd.z(l))
        al = np.array([[cka(f[c, t].T @ f[c, t] / rd.width, target) for t in range(D)] for c in range(C)])
        data[f"target_alignment_z{l}"] = (("chain", "draw"), al)
        cr = codes.get(f"z{l}") if codes else None
        ids = np.asarray(cr.ids) if cr is not None else None
        if ids is None:
            from .codes import code_ids

            ids = code_ids(rd.class_means(l))
        sw = np.concatenate([np.full((C, 1), np.nan), (ids[:, 1:] != ids[:, :-1]).mean(-1)], axis=1)
        data[f"code_switches_z{l}"] = (("chain", "draw"), sw)
        data[f"code_fraction_z{l}"] = (("chain", "draw", "code"),
                                       np.stack([(ids == k).mean(-1) for k in range(1 << m)], -1))
    return xr.Dataset(data, coords=coords)


def _describe(rd: RunData) -> str:
    cfg = rd.config
    seed = cfg.get("seed", "?")
    samp = cfg.get("sampler", {})
    return (f"{cfg.get('model', 'run')}: φ = {rd.activation}, L = {rd.depth}, N = {rd.width}, P = {rd.P}, "
            f"m = {rd.m}, T = {rd.temperature:g}, σ_a² = {rd.sigma_a2:.3g}, readout {rd.readout}; "
            f"{rd.n_chains} chains × {rd.n_draws} draws ({samp.get('num_warmup', '?')} warm-up), seed {seed}")


def _scheme(branches: BranchResult | None) -> str:
    if branches is None:
        return "unknown"
    o = branches.outliers
    if o is not None and len(o.per_chain) and min(o.per_chain) >= 1:
        return "sparse"
    return "redundant" if branches.n_branches >= 2 else "analog"


def diagnose(idata, *, store: bool = True, theory: bool = True, kernels: bool = True,
             verbose: bool = False) -> DiagnosticReport:
    """Run every diagnostic that applies to ``idata`` (a run from :func:`bnnzoo.sample`, or a path to its NetCDF
    file) and return a :class:`DiagnosticReport`.

    store : add the results to ``idata`` as ``diagnostics*`` groups (ignored for a path) — they survive
        ``azcompat.to_netcdf`` and come back with :func:`load_report`.
    theory : also compare with the analytic theories that apply (:func:`compare_with_theory`).
    kernels : also compute kernels, CKA, D_LR and NC1 (the costliest part on large P).
    """
    rd = run_data(idata)
    timings: dict[str, float] = {}

    def timed(name, fn, *a, **kw):
        t0 = time.perf_counter()
        out = fn(*a, **kw)
        timings[name] = time.perf_counter() - t0
        if verbose:
            print(f"[diagnose] {name}: {timings[name]:.1f} s", flush=True)
        return out

    variables = ["a"] + [f"z{l}" for l in range(1, rd.depth + 1)]
    codes = timed("codes", lambda: {f"z{l}": neural_codes(rd, l) for l in range(1, rd.depth + 1)})
    branches = timed("branches", readout_branches, rd)
    erg = timed("ergodicity", lambda: {v: ergodicity(neuron_features(rd, v), variable=v) for v in variables})
    sym = timed("symmetry", permutation_symmetry, rd, variables)
    kern = timed("kernels", kernels_and_richness, rd) if kernels else None
    comp = timed("theory", compare_with_theory, rd, codes=codes["z1"], branches=branches) if theory else None
    # bulk ergodicity of the readout when outliers are present (the outliers alone break it)
    o = branches.outliers
    numbers: dict = {}
    if o is not None and o.n_outliers:
        keep = ~o.is_outlier.astype(bool).reshape(rd.n_chains, rd.width)
        if keep.all(axis=0).sum() >= 4:
            bulk = ergodicity(rd.a[:, :, keep.all(axis=0)], variable="a (bulk)", n_boot=0)
            numbers["ergodicity_ratio_bulk"] = bulk.ratio
    verdicts = {}
    for v, r in erg.items():
        verdicts[f"ergodicity[{v}]"] = r.verdict
        numbers[f"ergodicity_ratio[{v}]"] = r.ratio
        numbers[f"rhat_neurons[{v}]"] = r.rhat
    for v, r in sym.items():
        verdicts[f"symmetry[{v}]"] = r.verdict
        numbers[f"identity_corr[{v}]"] = r.identity_corr
    for v, r in codes.items():
        verdicts[f"codes[{v}]"] = r.verdict
        numbers[f"code_memory[{v}]"] = r.code_memory
        numbers[f"switching_rate[{v}]"] = r.switching_rate
        numbers[f"scheme_drift[{v}]"] = r.scheme_drift
        numbers[f"scheme[{v}]"] = r.scheme
    numbers["n_branches"] = branches.n_branches
    numbers["branch_masses"] = [float(x) for x in branches.masses]
    numbers["branch_codes"] = list(branches.codes)
    if o is not None:
        numbers["n_outliers"] = o.n_outliers
        numbers["outliers_per_chain"] = list(o.per_chain)
        numbers["outlier_classes"] = list(o.classes)
    if kern is not None:
        numbers["d_lr"] = [float(x) for x in kern.d_lr]
        numbers["nc1"] = [float(x) for x in kern.nc1]
        numbers["target_cka"] = [float(x) for x in kern.target_cka]
    if comp is not None:
        verdicts["theory"] = ("agrees" if comp.all_within else "disagrees") if comp.agreements else "n/a"
        numbers["theory_agreements_within"] = int(sum(a.within for a in comp.agreements))
        numbers["theory_agreements"] = len(comp.agreements)
    health = timed("health", sampler_health, idata)
    verdicts = gate_verdicts(verdicts, health)
    numbers["health"] = health.status
    scheme = _scheme(branches)
    cfg = rd.config
    cfg_small = {k: cfg.get(k) for k in ("model", "model_kwargs", "task", "sampler", "seed", "wall_time_s")
                 if k in cfg}
    can_store = store and not isinstance(idata, (str, os.PathLike, RunData))
    ops = timed("order_parameters", order_parameters, rd, codes) if can_store else None
    report = DiagnosticReport(run=_describe(rd), config=jsonable(cfg_small), coding_scheme=scheme,
                              verdicts=verdicts, numbers=jsonable(numbers), ergodicity=erg, symmetry=sym,
                              codes=codes, branches=branches, kernels=kern, theory=comp, timings=dict(timings),
                              health=health)
    if can_store:
        groups = report.groups()
        groups[f"{GROUP_PREFIX}_order_parameters"] = ops
        azcompat.set_groups(idata, groups)
    return report


def _runs(idata_or_paths) -> dict[str, object]:
    """Normalise write_report's input to {name: run}."""
    if isinstance(idata_or_paths, dict):
        return dict(idata_or_paths)
    if isinstance(idata_or_paths, (str, os.PathLike)) or azcompat.is_idata(idata_or_paths):
        idata_or_paths = [idata_or_paths]
    out = {}
    for i, x in enumerate(idata_or_paths):
        if isinstance(x, (str, os.PathLike)):
            name = Path(x).stem
        else:
            try:
                cfg = json.loads(azcompat.get_attrs(x).get("bnnzoo_config", "{}"))
            except (TypeError, ValueError):
                cfg = {}
            name = f"{cfg.get('model', 'run')}_L{cfg.get('model_kwargs', {}).get('depth', 1)}_seed{cfg.get('seed', i)}"
        while name in out:
            name += f"_{i}"
        out[name] = x
    return out


def write_report(idata_or_paths, outdir, *, figures: bool = True, save_netcdf: bool = False,
                 verbose: bool = False) -> dict:
    """Diagnose one or several runs and write, per run, ``<outdir>/<name>/report.json``, ``report.txt`` (the
    report's repr) and the paper-style figures (``fig2_codes.png``, ``fig3_layers.png``, ``fig4_readout.png``,
    ``fig5_switching.png`` for deep nets, ``order_parameters.png``), plus ``<outdir>/summary.json`` with every run's
    verdicts and numbers.

    ``idata_or_paths`` : a run, a NetCDF path, a list of them, or {name: run}.  ``save_netcdf`` also writes
    ``<name>/run.nc`` with the diagnostics groups added.  Returns {name: {"report": DiagnosticReport,
    "files": [paths]}}.
    """
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    result, summary = {}, {}
    for name, run in _runs(idata_or_paths).items():
        idata = azcompat.from_netcdf(run) if isinstance(run, (str, os.PathLike)) else run
        rep = diagnose(idata, store=True, verbose=verbose)
        d = outdir / name
        d.mkdir(parents=True, exist_ok=True)
        files = []
        p = d / "report.json"
        p.write_text(rep.to_json(indent=1))
        files.append(str(p))
        p = d / "report.txt"
        p.write_text(repr(rep) + "\n")
        files.append(str(p))
        if figures:
            from ..plots import save_figures

            files += save_figures(idata, d, report=rep)
        if save_netcdf:
            files.append(azcompat.to_netcdf(idata, d / "run.nc"))
        result[name] = {"report": rep, "files": files}
        summary[name] = {"run": rep.run, "coding_scheme": rep.coding_scheme, "verdicts": rep.verdicts,
                         "numbers": rep.numbers, "files": [os.path.relpath(f, outdir) for f in files]}
    (outdir / "summary.json").write_text(json.dumps(jsonable(summary), indent=1))
    return result
