"""``diagnose``: run every diagnostic that applies to a run, store the results in the InferenceData, and return a
report a researcher can read (:func:`bnnzoo.plots.write_report` writes it as JSON and figures).

The run's zoo entry (its provenance "model") says what to diagnose.  The fully-connected nets (entries without
their own ``diagnose``) get the readout/codes/branches diagnostics of the paper; every other entry gets, for each
of its unit layers (:class:`bnnzoo.models.zoo.UnitLayer`), ergodicity, permutation symmetry, unit clustering and
(for layers with values on the training points) codes, then kernels and richness of those layers, order
parameters, and the entry's own observables with their theory comparison (``entry.diagnose``).

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
"inconclusive: <reason>" for every verdict; a run still relaxing gets "relaxing: <evidence>" for every verdict
(ergodicity, symmetry, codes, branches, outliers, theory), and a run whose certified start families disagree
"metastable: <disagreements>".  In an equilibrated run without a certification the population verdicts (codes,
branches, outliers) end in " (populations not certified)".

Verdicts (``DiagnosticReport.verdicts``): ``ergodicity[<var>]``, ``symmetry[<var>]``, ``codes[<layer>]``, for the
fully-connected nets ``branches`` (the number of readout branches by BIC) and ``outliers`` (outlier units per chain),
and ``theory``.

**Coding scheme** (data-driven, docs/theory.md §3): ``sparse`` when every chain has outlier neurons (readout and
preactivations of order √N), else ``redundant`` when the readout posterior has two or more branches (BIC), else
``analog`` (one Gaussian branch); ``n/a`` for entries diagnosed through their unit layers.
"""

from __future__ import annotations

import json
import logging
import os
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from .. import azcompat
from ._data import RunData, run_data
from .._record import Record, jsonable, record_from_dataset
from .branches import BranchResult, readout_branches
from .codes import code_string, neural_codes
from .compare import TheoryComparison, compare_with_theory
from .ergodicity import ergodicity, neuron_features
from ..inference.health import SamplerHealth, gate_verdicts, sampler_health
from .kernels import KernelResult, cka, kernels_and_richness
from .symmetry import permutation_symmetry, symmetry_of
from .units import codes_of, representation_kernels, unit_clusters, unit_trajectories

__all__ = ["DiagnosticReport", "diagnose", "load_report", "order_parameters", "GROUP_PREFIX"]

_logger = logging.getLogger(__name__)

GROUP_PREFIX = "diagnostics"


@dataclass(frozen=True, repr=False)
class DiagnosticReport(Record):
    """Everything :func:`diagnose` found about a run.

    Attributes
    ----------
    run : str
        Short description (model, activation, depth, width, P, T, seed).
    config : dict
        The run's provenance summary.
    coding_scheme : str
        ``"analog"``, ``"redundant"`` or ``"sparse"`` (module docstring).
    verdicts : dict
        ``{"ergodicity[a]": "broken", "symmetry[z1]": "restored", "codes[z1]": "frozen", "branches": "2 branches",
        "outliers": "none", "theory": "agrees", ...}``, already gated by ``health`` (``"inconclusive: <reason>"``,
        ``"relaxing: <evidence>"``, ``"metastable: <disagreements>"``, the suffix ``" (populations not certified)"``
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
        lines = [self.run, f"coding scheme: {self.coding_scheme}{caveat}",
                 "verdicts: " + ", ".join(f"{k} {v}" for k, v in self.verdicts.items())]
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
        idata = azcompat.from_netcdf(idata)
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


def order_parameters(idata, codes: dict | None = None) -> xr.Dataset:
    """Scalar order parameters per draw, (chain, draw) — what ``az.plot_trace`` can show without plotting thousands
    of weights: ``mse``, ``q_a`` (class), and per layer l: ``target_alignment_z<l>`` (CKA of the draw's feature
    kernel with YYᵀ), ``code_switches_z<l>`` (fraction of units whose code changed since the previous draw) and
    ``code_fraction_z<l>`` (code: fraction of units carrying each code).  For entries diagnosed through their unit
    layers: ``mse``, ``q_a`` when recorded and ``target_alignment_<layer>`` per unit layer with values on the
    training points."""
    if not isinstance(idata, RunData):
        run = azcompat.from_netcdf(idata) if isinstance(idata, (str, os.PathLike)) else idata
        cfg = _run_config(run)
        entry = _entry_of(cfg)
        if not _fcn_like(run, cfg, entry):
            post = azcompat.get_group(run, "posterior")
            layers = []
            for ul in entry.units:
                try:
                    layers.append(unit_trajectories(post, ul))
                except ValueError:
                    pass
            return _unit_order_parameters(post, layers, _data_of(run)[1])
        idata = run
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


def _run_config(idata) -> dict:
    if isinstance(idata, RunData):
        return idata.config
    try:
        from ..inference import run_config

        return run_config(idata)
    except ValueError:
        return {}


def _entry_of(cfg: dict):
    """The registered zoo entry the run was made with (None for runs of other models)."""
    from ..models.zoo import ZOO

    return ZOO.get(cfg.get("model")) if isinstance(cfg.get("model"), str) else None


def _fcn_like(idata, cfg: dict, entry) -> bool:
    """Whether the run is diagnosed by the fully-connected path: a RunData (readout ``a`` (neuron, class), an
    activation) and no entry-specific ``diagnose``."""
    if isinstance(idata, RunData):
        return True
    if entry is None:
        return True  # runs of other models: the readout path, which says what it needs
    if entry.diagnose is not None:
        return False
    post = azcompat.get_group(idata, "posterior")
    return ("a" in post and tuple(post["a"].dims[2:]) == ("neuron", "class")
            and "activation" in cfg.get("model_kwargs", {}))


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
        verdicts["theory"] = ("agrees" if comp.all_within else "disagrees") if comp.agreements else "n/a"
    return verdicts


def _layer_numbers(erg: dict, sym: dict, codes: dict) -> dict:
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
    return numbers


def _diagnose_fcn(rd: RunData, timed, theory: bool, kernels: bool) -> dict:
    """The fully-connected nets: readout and hidden layers, codes, branches, kernels, theory."""
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
    numbers.update(_layer_numbers(erg, sym, codes))
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
        numbers["theory_agreements_within"] = int(sum(a.within for a in comp.agreements))
        numbers["theory_agreements"] = len(comp.agreements)
    return dict(run=_describe(rd), coding_scheme=_scheme(branches), numbers=numbers, ergodicity=erg, symmetry=sym,
                codes=codes, branches=branches, kernels=kern, theory=comp, config=rd.config,
                order=lambda: order_parameters(rd, codes))


def _data_of(idata):
    const = azcompat.get_group(idata, "constant_data") if "constant_data" in azcompat.group_names(idata) else None
    obs = azcompat.get_group(idata, "observed_data") if "observed_data" in azcompat.group_names(idata) else None
    if const is None or obs is None or "X" not in const or "y" not in obs:
        raise ValueError("the run needs constant_data X and observed_data y (as bnnzoo.sample writes them)")
    X = np.asarray(const["X"].values, float)
    Y = np.asarray(obs["y"].values, float)
    labels = np.asarray(const["labels"].values).astype(int) if "labels" in const else np.zeros(len(X), int)
    return X, Y, labels


def _describe_units(entry, cfg: dict, post, P: int, m: int) -> str:
    mk = cfg.get("model_kwargs", {})
    keys = [k for k, v in mk.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)
            and k not in ("record",) and not (isinstance(v, str) and len(v) > 24)]
    kw = ", ".join(f"{k} = {mk[k]}" for k in keys)
    samp = cfg.get("sampler", {})
    return (f"{entry.name}: {kw}; P = {P}, m = {m}; {post.sizes['chain']} chains × {post.sizes['draw']} draws "
            f"({samp.get('num_warmup', '?') if isinstance(samp, dict) else '?'} warm-up), seed {cfg.get('seed', '?')}")


def _unit_order_parameters(post, layers, Y) -> xr.Dataset:
    """Scalar order parameters per draw for a unit-layer run: ``mse`` and ``q_a`` (when the model records them) and,
    per unit layer with values on the training points, ``target_alignment_<layer>`` (CKA of the draw's
    representation kernel with YYᵀ)."""
    C, D = post.sizes["chain"], post.sizes["draw"]
    data, coords = {}, {"chain": np.arange(C), "draw": np.arange(D)}
    for name in ("mse", "q_a"):
        if name in post:
            da = post[name]
            extra = [d for d in da.dims if d not in ("chain", "draw")]
            data[name] = (("chain", "draw", *extra), np.asarray(da.values, float))
            for d in extra:
                coords[d] = np.arange(da.sizes[d])
    target = Y @ Y.T
    for t in layers:
        if t.representation is None:
            continue
        r = t.representation
        al = np.array([[cka(r[c, s].T @ r[c, s] / r.shape[2], target) for s in range(D)] for c in range(C)])
        data[f"target_alignment_{t.name}"] = (("chain", "draw"), al)
    return xr.Dataset(data, coords=coords)


def _diagnose_units(idata, entry, cfg: dict, timed, theory: bool, kernels: bool) -> dict:
    """An entry diagnosed through its unit layers and its own ``diagnose``."""
    if not entry.units and entry.diagnose is None:
        raise ValueError(f"zoo entry {entry.name!r} declares no unit layers (ZooEntry.units) and no diagnose: "
                         "nothing to diagnose")
    post = azcompat.get_group(idata, "posterior")
    X, Y, labels = _data_of(idata)
    m = int(labels.max()) + 1 if labels.size else 1
    skipped: dict = {}
    layers = []
    for ul in entry.units:
        try:
            layers.append(unit_trajectories(post, ul))
        except ValueError as e:
            skipped[ul.name] = str(e)
    act = str(cfg.get("model_kwargs", {}).get("activation", ""))
    codes = timed("codes", lambda: {t.name: codes_of(t, labels, m, i + 1, act) for i, t in enumerate(layers)
                                    if t.values is not None})
    erg = timed("ergodicity", lambda: {t.name: ergodicity(t.features, variable=t.name) for t in layers})
    sym = timed("symmetry", lambda: {t.name: symmetry_of(t.features, t.name, code_memory=codes[t.name].code_memory
                                                         if t.name in codes else float("nan")) for t in layers})
    clusters = timed("clusters", lambda: {t.name: unit_clusters(t.features, t.name) for t in layers})
    f = np.asarray(post["f"].values, float) if "f" in post else None
    kern = timed("kernels", representation_kernels, layers, X, Y, labels, f) if kernels else None
    own = timed("observables", entry.diagnose, idata) if entry.diagnose is not None else {}
    comp = own.get("theory") if theory else None
    numbers: dict = _layer_numbers(erg, sym, codes)
    for v, r in clusters.items():
        numbers[f"n_clusters[{v}]"] = r.n_clusters
        numbers[f"cluster_masses[{v}]"] = [float(x) for x in r.masses]
    if skipped:
        numbers["units_skipped"] = skipped
    if kern is not None:
        numbers["target_cka"] = [float(x) for x in kern.target_cka]
        numbers["d_lr"] = [float(x) for x in kern.d_lr]
        numbers["nc1"] = [float(x) for x in kern.nc1]
    if "mse" in post:
        numbers["mse"] = float(np.mean(post["mse"].values))
    if comp is not None:
        numbers["theory_agreements_within"] = int(sum(a.within for a in comp.agreements))
        numbers["theory_agreements"] = len(comp.agreements)
    return dict(run=_describe_units(entry, cfg, post, len(X), Y.shape[1]), coding_scheme="n/a", numbers=numbers,
                ergodicity=erg, symmetry=sym, codes=codes, branches=None, kernels=kern, theory=comp, config=cfg,
                clusters=clusters, observables=dict(own.get("numbers", {})), family="units",
                order=lambda: _unit_order_parameters(post, layers, Y))


def diagnose(idata, *, store: bool = True, theory: bool = True, kernels: bool = True,
             verbose: bool = False) -> DiagnosticReport:
    """Run every diagnostic that applies to a run and return a :class:`DiagnosticReport`.

    The sampler's health is judged first (:func:`bnnzoo.inference.health.sampler_health`) and the verdicts are
    gated by it (:func:`bnnzoo.inference.health.gate_verdicts`); the module docstring says what runs for which
    entry.

    Parameters
    ----------
    idata : InferenceData, DataTree or path
        A run from :func:`bnnzoo.sample`, or the path to its NetCDF file.
    store : bool
        Add the results to ``idata`` as ``diagnostics*`` groups (ignored for a path); they survive
        ``azcompat.to_netcdf`` and come back with :func:`load_report`.
    theory : bool
        Also compare with the analytic theories that apply (:func:`compare_with_theory` for the fully-connected
        nets, the entry's own comparison otherwise).
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
        When the run lacks what the diagnostics read (constant/observed data, the posterior sites).
    """
    is_path = isinstance(idata, (str, os.PathLike))
    run = azcompat.from_netcdf(idata) if is_path else idata
    timings: dict[str, float] = {}

    def timed(name, fn, *a, **kw):
        t0 = time.perf_counter()
        out = fn(*a, **kw)
        timings[name] = time.perf_counter() - t0
        if verbose:
            _logger.info("[diagnose] %s: %.1f s", name, timings[name])
        else:
            _logger.debug("[diagnose] %s: %.1f s", name, timings[name])
        return out

    if not isinstance(run, RunData):
        from ..inference.convert import check_provenance

        doubt = check_provenance(run)
        if doubt is not None:
            warnings.warn(doubt, RuntimeWarning, stacklevel=2)
    cfg = _run_config(run)
    entry = _entry_of(cfg)
    if _fcn_like(run, cfg, entry):
        parts = _diagnose_fcn(run_data(run), timed, theory, kernels)
    else:
        parts = _diagnose_units(run, entry, cfg, timed, theory, kernels)
    verdicts = _verdicts(parts["ergodicity"], parts["symmetry"], parts["codes"], parts["theory"], parts["branches"])
    health = timed("health", sampler_health, run)
    verdicts = gate_verdicts(verdicts, health)
    parts["numbers"]["health"] = health.status
    cfg = parts["config"]
    cfg_small = {k: cfg.get(k) for k in ("model", "model_kwargs", "task", "sampler", "seed", "wall_time_s")
                 if k in cfg}
    can_store = store and not is_path and not isinstance(run, RunData)
    ops = timed("order_parameters", parts["order"]) if can_store else None
    report = DiagnosticReport(run=parts["run"], config=jsonable(cfg_small), coding_scheme=parts["coding_scheme"],
                              verdicts=verdicts, numbers=jsonable(parts["numbers"]), ergodicity=parts["ergodicity"],
                              symmetry=parts["symmetry"], codes=parts["codes"], branches=parts["branches"],
                              kernels=parts["kernels"], theory=parts["theory"], timings=dict(timings),
                              family=parts.get("family", "fcn"), clusters=parts.get("clusters", {}),
                              observables=jsonable(parts.get("observables", {})), health=health)
    if can_store:
        groups = report.groups()
        groups[f"{GROUP_PREFIX}_order_parameters"] = ops
        azcompat.set_groups(idata, groups)
    return report
