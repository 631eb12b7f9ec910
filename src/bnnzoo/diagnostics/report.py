"""``diagnose``: run every diagnostic that applies to a run, store the results in the InferenceData, and return a
report a researcher can read (:func:`bnnzoo.plots.write_report` writes it as JSON and figures).

The run is read once into a :class:`~bnnzoo.diagnostics.run.Run` (:func:`~bnnzoo.diagnostics.run.read_run`): the
posterior, the provenance, the zoo entry it is diagnosed as (its own, or ``entry=`` for a model of one's own), the
data and the sampler health.  Every entry then goes through the same steps — health → units per layer
(ergodicity, permutation symmetry, codes, clusters) → kernels → the entry's own observables → theory → verdicts —
with the entry-specific parts supplied by the analysis its ``ZooEntry.analysis`` names
(:mod:`bnnzoo.diagnostics.analyses`).

Stored groups (they survive NetCDF; :func:`load_report` reads them back):

    diagnostics                      the report's verdicts and summary numbers (attributes)
    diagnostics_ergodicity_<var>     one :class:`~bnnzoo.diagnostics.ergodicity.ErgodicityResult` per variable
    diagnostics_symmetry_<var>       one :class:`~bnnzoo.diagnostics.symmetry.SymmetryResult` per variable
    diagnostics_codes_<var>          one :class:`~bnnzoo.diagnostics.codes.CodeResult` per layer
    diagnostics_clusters_<var>       one :class:`~bnnzoo.diagnostics.units.ClusterResult` per unit layer
    diagnostics_branches             :class:`~bnnzoo.diagnostics.branches.BranchResult`
    diagnostics_kernels              :class:`~bnnzoo.diagnostics.kernels.KernelResult`
    diagnostics_theory               :class:`~bnnzoo.diagnostics.compare.TheoryComparison`
    diagnostics_order_parameters     per-draw scalar order parameters (chain, draw): see :func:`order_parameters`
    diagnostics_health               :class:`~bnnzoo.inference.health.SamplerHealth`

**Sampler health first** (:mod:`bnnzoo.inference.health`): a run whose sampler failed or that is too short gets
"inconclusive: see the sampler health" for every verdict; a run still relaxing gets "relaxing: see the sampler health" for every verdict
(ergodicity, symmetry, codes, branches, outliers, theory), and a run whose certified start families disagree
"metastable: see the sampler health" (the reason once, in the health section).  In an equilibrated run without a certification the population verdicts (codes,
branches, outliers) end in " (populations not certified)".

Verdicts (``DiagnosticReport.verdicts``): ``ergodicity[<var>]``, ``symmetry[<var>]``, ``codes[<layer>]`` (codes
are counted over selective units; "no selective units" when there are none, with no scheme), for the
fully-connected nets ``branches`` (the number of readout branches: modes of the readout density) and ``outliers``
(outlier units per chain),
and ``theory``: "agrees" / "disagrees" over the comparisons that were tested (those with a finite tolerance), "not
tested: <why>" when none was.  A run of a model of its own diagnosed without ``entry=`` gets its health and the
verdict ``units`` "not tested: ...".

**Coding scheme** (data-driven, docs/theory.md §3): ``sparse`` when every chain has outlier neurons (readout and
preactivations of order √N), else ``redundant`` when the readout density has two or more modes (branches), else
``analog`` (one Gaussian branch); ``n/a`` for entries diagnosed through their unit layers and for regression
tasks (one class), which have no class codes.  Where the feature layer's codes and the readout branches differ in
number, ``numbers["branches_and_codes"]`` says which codes share a branch.
"""

from __future__ import annotations

import json
import logging
import os
import textwrap
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from .. import azcompat
from .._record import Record, jsonable, nan_as_na, record_from_dataset
from .analyses import analysis_of
from .branches import BranchResult
from .compare import TheoryComparison
from .ergodicity import ergodicity
from ..inference.health import NOT_CERTIFIED, SamplerHealth, gate_verdicts
from .kernels import KernelResult
from .run import as_run
from .symmetry import symmetry_of
from .units import unit_clusters

__all__ = ["DiagnosticReport", "diagnose", "load_report", "order_parameters", "verdict_lines", "GROUP_PREFIX"]

_logger = logging.getLogger(__name__)

GROUP_PREFIX = "diagnostics"


def verdict_lines(verdicts: dict, width: int = 120) -> list[str]:
    """The verdicts as report lines of at most ``width`` characters: ``verdicts: name verdict, ...`` wrapped, with
    the suffix " (populations not certified)" said once for the verdicts that carry it.

    Parameters
    ----------
    verdicts : dict
        {name: verdict} as in :attr:`DiagnosticReport.verdicts`.
    width : int
        Longest line (continuation lines are indented by two spaces).

    Returns
    -------
    list of str
    """
    marked = [k for k, v in verdicts.items() if str(v).endswith(NOT_CERTIFIED)]
    items = [f"{k} {str(v).removesuffix(NOT_CERTIFIED)}" for k, v in verdicts.items()]
    head = (f"verdicts ({', '.join(marked)}: populations not certified): " if marked else "verdicts: ")
    return textwrap.wrap(head + ", ".join(items), width=width, subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False)


@dataclass(frozen=True, repr=False)
class DiagnosticReport(Record):
    """Everything :func:`diagnose` found about a run.

    Attributes
    ----------
    run : str
        Short description (model, activation, depth, width, P, T, seed).
    config : dict
        The run's provenance summary, and "entry": the zoo entry it was diagnosed as.
    coding_scheme : str
        ``"analog"``, ``"redundant"`` or ``"sparse"`` (module docstring).
    verdicts : dict
        ``{"ergodicity[a]": "broken", "symmetry[z1]": "restored", "codes[z1]": "frozen", "branches": "2 branches",
        "outliers": "none", "theory": "agrees", ...}``, already gated by ``health`` (``"inconclusive: ..."``,
        ``"relaxing: ..."``, ``"metastable: ..."``, each pointing to the health record, the suffix ``" (populations not certified)"``
        on codes, branches and outliers).
    numbers : dict
        The headline numbers behind the verdicts (flat dict, for JSON and tests).
    ergodicity, symmetry : dict
        ``{variable or unit layer: result}``.
    codes : dict
        ``{"z<l>" or unit layer: CodeResult}``.
    branches : BranchResult or None
        The readout branches (fully-connected nets).
    kernels : KernelResult or None
        Kernels, CKA, D_LR and NC1.
    theory : TheoryComparison or None
        The comparison with theory.
    timings : dict
        Seconds per diagnostic.
    family : str
        ``"fcn"`` (readout, codes and branches of the fully-connected nets) or ``"units"`` (an entry diagnosed
        through its unit layers).
    clusters : dict
        ``{unit layer: ClusterResult}`` (``"units"`` only).
    observables : dict
        The entry's own observables (JSON values, e.g. alignment, specialists, pathway singular values).
    health : SamplerHealth or None
        Whether the run can carry verdicts (:func:`bnnzoo.inference.health.sampler_health`).
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
    family: str = "fcn"
    clusters: dict = field(default_factory=dict)
    observables: dict = field(default_factory=dict)
    health: SamplerHealth | None = None

    def summary(self) -> list[str]:
        h = self.health
        caveat = ("" if h is None or self.coding_scheme in ("n/a", "unknown") else
                  f" ({h.status}: not a verdict)" if h.status != "equilibrated" else
                  " (populations not certified)" if (h.populations or "not certified") == "not certified" else "")
        lines = [self.run, f"coding scheme: {self.coding_scheme}{caveat}"] + verdict_lines(self.verdicts)
        if self.health is not None:
            lines.append("— sampler health")
            lines += ["  " + ln for ln in self.health.summary()]
        for title, part in (("ergodicity", self.ergodicity), ("permutation symmetry", self.symmetry),
                            ("codes", self.codes), ("unit clusters", self.clusters)):
            if part:
                lines.append(f"— {title}")
                for r in part.values():
                    lines += ["  " + ln for ln in r.summary()]
        if self.observables:
            lines.append("— observables")
            lines += [f"  {k}: {_short(v)}" for k, v in self.observables.items()]
        for title, r in (("readout branches", self.branches), ("kernels and richness", self.kernels),
                         ("theory", self.theory)):
            if r is not None:
                lines.append(f"— {title}")
                lines += ["  " + ln for ln in r.summary()]
                if r is self.branches and self.numbers.get("branches_and_codes"):
                    lines.append("  branches and codes: " + self.numbers["branches_and_codes"])
        if self.timings:
            lines.append("— timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.timings.items()))
        return [nan_as_na(ln) for ln in lines]

    def __repr__(self) -> str:
        return "DiagnosticReport(\n" + "".join(f"  {ln}\n" for ln in self.summary()) + ")"

    def to_json(self, **kw) -> str:
        """The report (verdicts, numbers and every result's scalars) as strict JSON."""
        return json.dumps(self.to_dict(), **kw)

    def groups(self) -> dict[str, xr.Dataset]:
        """The datasets :func:`diagnose` stores, by group name."""
        head = {k: getattr(self, k) for k in ("run", "config", "coding_scheme", "verdicts", "numbers", "timings",
                                              "family", "observables")}
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
        for v, r in self.clusters.items():
            g[f"{GROUP_PREFIX}_clusters_{v}"] = r.to_dataset()
        for name in ("branches", "kernels", "theory", "health"):
            r = getattr(self, name)
            if r is not None:
                g[f"{GROUP_PREFIX}_{name}"] = r.to_dataset()
        return g


def _short(v) -> str:
    """A JSON value in one short line (long lists cut)."""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list) and len(v) > 8:
        return "[" + ", ".join(_short(x) for x in v[:8]) + f", ... ({len(v)} values)]"
    if isinstance(v, list):
        return "[" + ", ".join(_short(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_short(x)}" for k, x in v.items()) + "}"
    return str(v)


def load_report(idata) -> DiagnosticReport:
    """Rebuild the :class:`DiagnosticReport` that :func:`diagnose` stored in ``idata`` (or a NetCDF path)."""
    if isinstance(idata, (str, os.PathLike)):
        idata = azcompat.read_run_file(idata, "idata")
    names = azcompat.group_names(idata)
    if GROUP_PREFIX not in names:
        raise ValueError("no diagnostics stored in this run: call bnnzoo.diagnose(idata) first")
    head = json.loads(azcompat.get_group(idata, GROUP_PREFIX).attrs["bnnzoo_fields"])
    parts: dict = {"ergodicity": {}, "symmetry": {}, "codes": {}, "clusters": {}}
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
                            kernels=parts.get("kernels"), theory=parts.get("theory"),
                            family=head.get("family", "fcn"), clusters=order(parts["clusters"]),
                            observables=head.get("observables", {}), health=parts.get("health"))


def order_parameters(idata, entry=None) -> xr.Dataset:
    """Scalar order parameters per draw, (chain, draw) — what ``az.plot_trace`` can show without plotting thousands
    of weights.  Fully-connected nets: ``mse``, ``q_a`` (class), and per layer l: ``target_alignment_z<l>`` (CKA of
    the draw's feature kernel with YYᵀ), ``code_switches_z<l>`` (fraction of units whose code changed since the
    previous draw) and ``code_fraction_z<l>`` (code: fraction of units carrying each code).  Entries diagnosed
    through their unit layers: ``mse``, ``q_a`` when recorded and ``target_alignment_<layer>`` per unit layer with
    values on the training points.  ``idata``: a :class:`~bnnzoo.diagnostics.run.Run`, a run or its path;
    ``entry``: as for :func:`diagnose`."""
    run = as_run(idata, entry=entry)
    an = analysis_of(run)
    return an.order_parameters(run, an.layers(run)[0])


def theory_verdict(comp: TheoryComparison) -> str:
    """"agrees" / "disagrees" over the comparisons that were tested (a finite tolerance); "not tested: <why>" when
    none was (every comparison reported only, or no theory applies)."""
    tested = comp.tested
    if not tested:
        if comp.agreements:
            return (f"not tested: {len(comp.agreements)} comparison(s) reported only, with no tolerance at this "
                    f"size ({', '.join(a.quantity for a in comp.agreements)})")
        why = "; ".join(f"{k}: {v}" for k, v in comp.skipped.items()) or "no theory applies to this run"
        return f"not tested: {why}"
    word = "agrees" if all(a.within for a in tested) else "disagrees"
    rest = len(comp.agreements) - len(tested)
    return word if not rest else f"{word} ({len(tested)} tested, {rest} reported only)"


PARTICLE_SAMPLERS = ("smc",)
"""Samplers whose draws are a population of particles, not a time series (tempered SMC)."""
TIME_SERIES_VERDICTS = ("ergodicity[", "symmetry[", "codes[")
"""Verdicts read from the draws as a time series: a unit's exploration, its identity between halves of a chain, its
code switches."""
NOT_A_TIME_SERIES = ("not tested: the sampler's draws are SMC particles, independent of each other, not a time "
                     "series (branches, outliers and theory use them as a sample)")


def _sampler_of(config: dict) -> str:
    """The sampler's name in a run's provenance ("" when unknown)."""
    samp = config.get("sampler", {})
    return str(samp.get("sampler", "")) if isinstance(samp, dict) else str(samp or "")


def _verdicts(erg: dict, sym: dict, codes: dict, comp, branches: BranchResult | None = None) -> dict:
    """The report's verdicts, assembled in one place: per unit layer ergodicity, symmetry and codes, the readout's
    branches and outliers (fully-connected nets), then the theory."""
    verdicts = {}
    for v, r in erg.items():
        verdicts[f"ergodicity[{v}]"] = r.verdict
    for v, r in sym.items():
        verdicts[f"symmetry[{v}]"] = r.verdict
    for v, r in codes.items():
        verdicts[f"codes[{v}]"] = r.verdict
    if branches is not None:
        verdicts["branches"] = f"{branches.n_branches} branch{'es' if branches.n_branches != 1 else ''}"
        o = branches.outliers
        if o is not None:
            verdicts["outliers"] = ("none" if not o.n_outliers else
                                    "/".join(str(int(n)) for n in o.per_chain) + " per chain"
                                    + (", one per class" if o.one_per_class else ""))
    if comp is not None:
        verdicts["theory"] = theory_verdict(comp)
    return verdicts


def _layer_numbers(erg: dict, sym: dict, codes: dict, clusters: dict) -> dict:
    numbers: dict = {}
    for v, r in erg.items():
        numbers[f"ergodicity_ratio[{v}]"] = r.ratio
        numbers[f"rhat_neurons[{v}]"] = r.rhat
    for v, r in sym.items():
        numbers[f"identity_corr[{v}]"] = r.identity_corr
    for v, r in codes.items():
        numbers[f"code_memory[{v}]"] = r.code_memory
        numbers[f"switching_rate[{v}]"] = r.switching_rate
        numbers[f"scheme_drift[{v}]"] = r.scheme_drift
        numbers[f"scheme[{v}]"] = r.scheme
    for v, r in clusters.items():
        numbers[f"n_clusters[{v}]"] = r.n_clusters
        numbers[f"cluster_masses[{v}]"] = [float(x) for x in r.masses]
    return numbers


def _walk(run, timed, theory: bool, kernels: bool) -> dict:
    """The steps every entry goes through (module docstring), after the health: units per layer, kernels, the
    entry's own observables and theory."""
    an = analysis_of(run)
    layers, skipped = timed("units", an.layers, run)
    codes = {l.name: l.codes for l in layers if l.codes is not None}
    # what reads only the data (the mean-field solve) runs on a second thread meanwhile; its time is spent within
    # ergodicity, symmetry and kernels, and "observables" counts only the wait for what is left of it
    with ThreadPoolExecutor(max_workers=1) as pool:
        early = an.start(run, theory, pool)
        erg = timed("ergodicity", lambda: {l.name: ergodicity(l.features, variable=l.name) for l in layers})
        sym = timed("symmetry", lambda: {l.name: symmetry_of(l.features, l.name, code_memory=codes[l.name].code_memory
                                                             if l.name in codes else float("nan")) for l in layers})
        clusters = (timed("clusters", lambda: {l.name: unit_clusters(l.features, l.name) for l in layers})
                    if an.clusters else {})
        kern = timed("kernels", an.kernels, run, layers) if kernels and layers else None
        own = timed("observables", an.observables, run, layers, theory, early)
    comp = own.get("theory") if theory else None
    numbers = _layer_numbers(erg, sym, codes, clusters)
    if skipped:
        numbers["units_skipped"] = skipped
    numbers.update(own.get("numbers", {}))
    if kern is not None:
        numbers["d_lr"] = [float(x) for x in kern.d_lr]
        numbers["nc1"] = [float(x) for x in kern.nc1]
        numbers["target_cka"] = [float(x) for x in kern.target_cka]
    if comp is not None:
        tested = comp.tested
        numbers["theory_agreements_within"] = int(sum(a.within for a in tested))
        numbers["theory_agreements"] = len(tested)
        numbers["theory_reported_only"] = len(comp.agreements) - len(tested)
    if run.from_posterior:
        numbers["hyperparameters_from_posterior"] = dict(run.from_posterior)
    return dict(run=an.describe(run), coding_scheme=an.scheme(run, own), numbers=numbers, ergodicity=erg,
                symmetry=sym, codes=codes, branches=own.get("branches"), kernels=kern, theory=comp,
                clusters=clusters, observables=own.get("observables", {}),
                family="fcn" if run.analysis == "fcn" else "units", order=lambda: an.order_parameters(run, layers))


def _check_finite(posterior) -> None:
    """Refuse, in one line naming the variable, a posterior with draws that are not finite (NaN or ±inf): the
    diagnostics would fail deep inside (a clustering that does not accept NaN) or give numbers of nothing."""
    for name, var in posterior.data_vars.items():
        if var.dtype.kind not in "fc" or var.ndim < 2:
            continue
        bad = ~np.isfinite(np.asarray(var.values)).reshape(var.shape[0], var.shape[1], -1).all(axis=2)
        if bad.any():
            raise ValueError(f"idata: the posterior variable {name!r} is not finite (NaN or inf) on {int(bad.sum())} "
                             f"of {bad.size} draws (chain, draw): the sampler failed there; diagnose the finite "
                             f"draws only (select them with .sel / .isel) or sample again")


def diagnose(idata, *, entry=None, model_kwargs: dict | None = None, store: bool = True, theory: bool = True,
             kernels: bool = True, verbose: bool = False) -> DiagnosticReport:
    """Run every diagnostic that applies to a run and return a :class:`DiagnosticReport`.

    The run is read once (:func:`~bnnzoo.diagnostics.run.read_run`), its sampler health judged first (or read from
    the run, where :func:`bnnzoo.sample` stored it) and every verdict gated by it
    (:func:`bnnzoo.inference.health.gate_verdicts`); then every entry goes through the same steps (module
    docstring of :mod:`bnnzoo.diagnostics.analyses`).

    Parameters
    ----------
    idata : Run, InferenceData, DataTree or path
        A run from :func:`bnnzoo.sample` (read once with :func:`~bnnzoo.diagnostics.run.as_run`; a
        :class:`~bnnzoo.diagnostics.run.Run` is taken as it is), or the path to its NetCDF file.
    entry : str, ZooEntry or None
        Diagnose the run as this zoo entry: for a run of a model of one's own whose posterior holds the entry's
        sites (e.g. a wrapper around :func:`bnnzoo.models.fcn` with priors on its hyperparameters; those named like
        the entry's keywords are read from the posterior).  Default: the run's own model when it is a zoo entry;
        a run of another model without ``entry`` gets its sampler health only.
    model_kwargs : dict or None
        Model keywords that override what the run records (e.g. ``{"activation": "sigmoid"}``).
    store : bool
        Add the results to ``idata`` as ``diagnostics*`` groups (ignored for a path); they survive
        ``azcompat.to_netcdf`` and come back with :func:`load_report`.
    theory : bool
        Also compare with the analytic theories that apply.
    kernels : bool
        Also compute kernels, CKA, D_LR and NC1 (the costliest part on large P).
    verbose : bool
        Report the time each diagnostic took.

    Returns
    -------
    DiagnosticReport

    Raises
    ------
    ValueError
        When the run lacks what the diagnostics read (constant/observed data, the entry's sites), ``entry`` is
        unknown, or a posterior variable is not finite (NaN or ±inf) on some draw.
    """
    is_path = isinstance(idata, (str, os.PathLike))
    source = azcompat.read_run_file(idata, "idata") if is_path else idata
    timings: dict[str, float] = {}

    def timed(name, fn, *a, **kw):
        t0 = time.perf_counter()
        out = fn(*a, **kw)
        timings[name] = time.perf_counter() - t0
        _logger.log(logging.INFO if verbose else logging.DEBUG, "[diagnose] %s: %.1f s", name, timings[name])
        return out

    run = as_run(source, entry=entry, model_kwargs=model_kwargs)
    _check_finite(run.posterior)
    if run.doubt is not None:
        warnings.warn(run.doubt, RuntimeWarning, stacklevel=2)
    # the stored health is checked against the draws on a second thread while they are analysed
    with ThreadPoolExecutor(max_workers=1) as pool:
        stored = run.start_health_check(pool)
        parts = _walk(run, timed, theory, kernels)
        if stored is not None:
            stored.result()
    health = timed("health", lambda: run.health)
    verdicts = gate_verdicts(_verdicts(parts["ergodicity"], parts["symmetry"], parts["codes"], parts["theory"],
                                       parts["branches"]), health)
    verdicts.update(analysis_of(run).not_tested(run))
    if _sampler_of(run.config) in PARTICLE_SAMPLERS:   # particles, not a time series: no per-unit dynamics
        verdicts.update({k: NOT_A_TIME_SERIES for k, v in verdicts.items()
                         if k.startswith(TIME_SERIES_VERDICTS) and not str(v).startswith("not tested")})
    parts["numbers"]["health"] = health.status
    cfg_small = {k: run.config.get(k) for k in ("model", "model_kwargs", "task", "sampler", "seed", "wall_time_s")
                 if k in run.config}
    if run.entry is not None:
        cfg_small["entry"] = run.entry.name            # the entry the run was diagnosed as
    can_store = store and not is_path
    ops = timed("order_parameters", parts["order"]) if can_store else None
    report = DiagnosticReport(run=parts["run"], config=jsonable(cfg_small), coding_scheme=parts["coding_scheme"],
                              verdicts=verdicts, numbers=jsonable(parts["numbers"]), ergodicity=parts["ergodicity"],
                              symmetry=parts["symmetry"], codes=parts["codes"], branches=parts["branches"],
                              kernels=parts["kernels"], theory=parts["theory"], timings=dict(timings),
                              family=parts.get("family", "units"), clusters=parts.get("clusters", {}),
                              observables=jsonable(parts.get("observables", {})), health=health)
    if can_store:
        groups = report.groups()
        if ops is not None and ops.data_vars:
            groups[f"{GROUP_PREFIX}_order_parameters"] = ops
        azcompat.set_groups(run.idata, groups)
    return report
