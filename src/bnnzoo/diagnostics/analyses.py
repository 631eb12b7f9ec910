"""What :func:`bnnzoo.diagnose` runs for each kind of entry, behind one interface.

Every zoo entry declares its kind (``ZooEntry.analysis``); :data:`ANALYSES` maps the kind to an :class:`Analysis`,
and :func:`bnnzoo.diagnose` walks the same steps for every entry: health → units per layer (ergodicity, symmetry,
codes, clusters) → kernels → the entry's own observables → theory → verdicts.  An analysis supplies the parts that
differ:

* ``"fcn"`` — the fully-connected nets: unit layers ``a`` (readout vectors) and ``z1..zL`` (class means of the
  preactivations), codes of every hidden layer, readout branches and outliers, kernels and richness, and the
  comparison with the saddle-point / mean-field / GP theories (:func:`~bnnzoo.diagnostics.compare.compare_with_theory`);
* ``"three_layer"``, ``"attention"``, ``"gated"`` — the unit layers the entry declares (``ZooEntry.units``, read by
  :func:`~bnnzoo.diagnostics.units.unit_trajectories`), their clusters and representation kernels, and the entry's
  observables and theory (:mod:`bnnzoo.diagnostics.observables`);
* ``"units"`` — the unit layers only (an entry with no observables of its own);
* ``"none"`` — a model of one's own diagnosed without ``entry=``: its sampler health only.
"""

from __future__ import annotations

from concurrent.futures import wait
from dataclasses import dataclass

import numpy as np
import xarray as xr

from .branches import readout_branches
from .codes import code_ids, code_string, code_strings, neural_codes
from .compare import compare_with_theory, meanfield_applies, meanfield_theory
from .ergodicity import ergodicity, variance_ratio
from .kernels import cka, kernels_and_richness
from .observables import attention_observables, gated_observables, three_layer_observables
from .units import codes_of, representation_kernels, unit_trajectories

__all__ = ["Layer", "Analysis", "FcnAnalysis", "UnitAnalysis", "ANALYSES", "analysis_of", "coding_scheme",
           "branches_and_codes"]


@dataclass
class Layer:
    """One layer of exchangeable units as the per-unit steps read it.

    name : the report's label ("a", "z1", "h1", ...).   features : (chain, draw, unit, feature) trajectories.
    codes : the layer's :class:`~bnnzoo.diagnostics.codes.CodeResult` (None without values on the training points).
    trajectories : the :class:`~bnnzoo.diagnostics.units.UnitTrajectories` it came from (unit-layer entries).
    """

    name: str
    features: np.ndarray
    codes: object = None
    trajectories: object = None


class Analysis:
    """The entry-specific parts of the diagnosis (module docstring).  ``clusters``: cluster the units of every
    layer."""

    clusters = True

    def layers(self, run) -> tuple[list[Layer], dict]:
        """The unit layers and {layer: why it was skipped}."""
        return [], {}

    def kernels(self, run, layers):
        return None

    def start(self, run, theory: bool, pool) -> dict:
        """Start, on the thread pool ``pool`` (:class:`concurrent.futures.ThreadPoolExecutor`), the parts of the
        diagnosis that read only the run's data and hyperparameters, not its draws, so that they run while the
        draws are analysed: {name: Future}, handed to :meth:`observables` as ``early``."""
        return {}

    def observables(self, run, layers: list[Layer], theory: bool, early: dict | None = None) -> dict:
        """{"numbers": into the report's numbers, "observables": the entry's own observables, "theory":
        TheoryComparison or None, "branches": BranchResult or None}.  ``early``: what :meth:`start` started."""
        return {}

    def scheme(self, run, own: dict) -> str:
        return "n/a"

    def not_tested(self, run) -> dict:
        """Verdicts of what this analysis cannot test on the run ({name: "not tested: <why>"})."""
        return {}

    def describe(self, run) -> str:
        mk = run.model_kwargs
        keys = [k for k, v in mk.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)
                and k != "record" and not (isinstance(v, str) and len(v) > 24)]
        kw = ", ".join(f"{k} = {_fmt(mk[k])}{' (posterior median)' if k in run.from_posterior else ''}"
                       for k in keys)
        samp = run.config.get("sampler", {})
        name = run.entry.name if run.entry is not None else run.config.get("model", "run")
        return (f"{name}: {kw}; P = {run.P}, m = {run.Y.shape[1]}; {run.n_chains} chains × {run.n_draws} draws "
                f"({samp.get('num_warmup', '?') if isinstance(samp, dict) else '?'} warm-up), "
                f"seed {run.config.get('seed', '?')}")

    def order_parameters(self, run, layers: list[Layer]) -> xr.Dataset:
        """Scalar order parameters per draw: ``mse`` and ``q_a`` when the model records them and, per unit layer
        with values on the training points, ``target_alignment_<layer>`` (CKA of the draw's representation kernel
        with YYᵀ)."""
        post = run.posterior
        C, D = run.n_chains, run.n_draws
        data, coords = {}, {"chain": np.arange(C), "draw": np.arange(D)}
        for name in ("mse", "q_a"):
            if name in post:
                da = post[name]
                extra = [d for d in da.dims if d not in ("chain", "draw")]
                data[name] = (("chain", "draw", *extra), np.asarray(da.values, float))
                for d in extra:
                    coords[d] = np.arange(da.sizes[d])
        target = run.Y @ run.Y.T
        for layer in layers:
            r = getattr(layer.trajectories, "representation", None)
            if r is None:
                continue
            al = np.array([[cka(r[c, s].T @ r[c, s] / r.shape[2], target) for s in range(D)] for c in range(C)])
            data[f"target_alignment_{layer.name}"] = (("chain", "draw"), al)
        return xr.Dataset(data, coords=coords)


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


class UnitAnalysis(Analysis):
    """An entry diagnosed through the unit layers it declares, and its own observables (``own(run)``)."""

    def __init__(self, own=None):
        self.own = own

    def layers(self, run):
        out, skipped = [], {}
        act = str(run.model_kwargs.get("activation", ""))
        for ul in run.entry.units:
            try:
                t = unit_trajectories(run.posterior, ul)
            except ValueError as e:
                skipped[ul.name] = str(e)
                continue
            out.append(Layer(t.name, t.features, codes_of(t, run.labels, run.m, len(out) + 1, act), t))
        return out, skipped

    def kernels(self, run, layers):
        f = np.asarray(run.posterior["f"].values, float) if "f" in run.posterior else None
        return representation_kernels([l.trajectories for l in layers], run.X, run.Y, run.labels, f)

    def observables(self, run, layers, theory, early=None):
        numbers = {}
        if "mse" in run.posterior:
            numbers["mse"] = float(np.mean(run.posterior["mse"].values))
        own = self.own(run) if self.own is not None else {}
        return {"numbers": numbers, "observables": dict(own.get("numbers", {})), "theory": own.get("theory")}


class FcnAnalysis(Analysis):
    """The fully-connected nets (module docstring)."""

    clusters = False

    def layers(self, run):
        rd = run.fcn()
        out = [Layer("a", rd.a)]
        for l in range(1, rd.depth + 1):
            out.append(Layer(f"z{l}", rd.class_means(l), neural_codes(run, l)))
        return out, {}

    def kernels(self, run, layers):
        rd = run.fcn()
        if not all(rd.has_kernels(l) for l in range(1, rd.depth + 1)):
            return None                        # neither z, the weights nor the streamed kernels were recorded
        return kernels_and_richness(run)

    def start(self, run, theory, pool):
        """The mean-field solve (:func:`~bnnzoo.diagnostics.compare.meanfield_theory`), when the theory compares
        with it."""
        rd = run.fcn()
        return {"meanfield": pool.submit(meanfield_theory, rd)} if theory and meanfield_applies(rd) else {}

    def observables(self, run, layers, theory, early=None):
        rd = run.fcn()
        codes = {l.name: l.codes for l in layers if l.codes is not None}
        feature = codes.get(f"z{rd.depth}")     # the units' modal codes, as readout_branches would find them again
        meanfield = (early or {}).get("meanfield")
        if meanfield is not None:               # finished first: readout_branches limits BLAS to one thread for the
            wait([meanfield])                   # whole process, which would change the solve's sums
        branches = readout_branches(run, codes=code_strings(feature.modal, rd.m) if feature is not None else None)
        comp = compare_with_theory(run, codes=codes["z1"], branches=branches, meanfield=meanfield) if theory else None
        numbers: dict = {}
        o = branches.outliers
        if o is not None and o.n_outliers:      # the bulk's ergodicity (the outliers alone break it)
            keep = ~o.is_outlier.astype(bool).reshape(rd.n_chains, rd.width)
            if keep.all(axis=0).sum() >= 4:
                numbers["ergodicity_ratio_bulk"] = variance_ratio(rd.a[:, :, keep.all(axis=0)])
        numbers["n_branches"] = branches.n_branches
        numbers["branch_masses"] = [float(x) for x in branches.masses]
        numbers["branch_codes"] = list(branches.codes)
        if feature is not None and run.m > 1 and feature.kind == "binary":
            numbers["branches_and_codes"] = branches_and_codes(branches, feature)
        if o is not None:
            numbers["n_outliers"] = o.n_outliers
            numbers["outliers_per_chain"] = list(o.per_chain)
            numbers["outlier_classes"] = list(o.classes)
        return {"numbers": numbers, "theory": comp, "branches": branches}

    def scheme(self, run, own):
        return coding_scheme(own.get("branches"), run.m)

    def describe(self, run):
        rd, cfg = run.fcn(), run.config
        samp = cfg.get("sampler", {})
        post = " (posterior medians: " + ", ".join(f"{k} {v:.4g}" for k, v in run.from_posterior.items()) + ")" \
            if run.from_posterior else ""
        name = cfg.get("model", "run") if run.entry is None or cfg.get("model") == run.entry.name else \
            f"{cfg.get('model', 'run')} as {run.entry.name}"
        return (f"{name}: φ = {rd.activation}, L = {rd.depth}, N = {rd.width}, P = {rd.P}, "
                f"m = {rd.m}, T = {rd.temperature:g}, σ_a² = {rd.sigma_a2:.3g}, readout {rd.readout}{post}; "
                f"{rd.n_chains} chains × {rd.n_draws} draws ({samp.get('num_warmup', '?')} warm-up), "
                f"seed {cfg.get('seed', '?')}")

    def order_parameters(self, run, layers):
        """Per draw: ``mse``, ``q_a`` (class), and per layer l ``target_alignment_z<l>``, ``code_switches_z<l>``
        and ``code_fraction_z<l>`` (code)."""
        rd = run.fcn()
        C, D, m = rd.n_chains, rd.n_draws, rd.m
        data = {"q_a": (("chain", "draw", "class"), np.einsum("cdnr,cdnr->cdr", rd.a, rd.a) / rd.width)}
        if rd.f is not None:
            data["mse"] = (("chain", "draw"), np.mean((rd.f - rd.Y) ** 2, axis=(2, 3)))
        target = rd.Y @ rd.Y.T
        coords = {"chain": np.arange(C), "draw": np.arange(D), "class": np.arange(m),
                  "code": [code_string(k, m) for k in range(1 << m)]}
        by_name = {layer.name: layer for layer in layers}
        for l in range(1, rd.depth + 1):
            al = rd.per_draw("cka_y", l)
            if al is None:
                f = rd.phi(rd.z(l))
                al = np.array([[cka(f[c, t].T @ f[c, t] / rd.width, target) for t in range(D)] for c in range(C)])
            data[f"target_alignment_z{l}"] = (("chain", "draw"), al)
            cr = getattr(by_name.get(f"z{l}"), "codes", None)
            ids = np.asarray(cr.ids) if cr is not None else code_ids(rd.class_means(l))
            sw = np.concatenate([np.full((C, 1), np.nan), (ids[:, 1:] != ids[:, :-1]).mean(-1)], axis=1)
            data[f"code_switches_z{l}"] = (("chain", "draw"), sw)
            data[f"code_fraction_z{l}"] = (("chain", "draw", "code"),
                                           np.stack([(ids == k).mean(-1) for k in range(1 << m)], -1))
        return xr.Dataset(data, coords=coords)


def coding_scheme(branches, m: int) -> str:
    """The coding scheme a fully-connected net's readout shows: ``sparse`` when every chain has outlier units, else
    ``redundant`` with two or more readout branches, else ``analog``; "n/a" when the task has ``m`` = 1 class (a
    regression task: no class codes), "unknown" without ``branches`` (a
    :class:`~bnnzoo.diagnostics.branches.BranchResult`)."""
    if m == 1:
        return "n/a"
    if branches is None:
        return "unknown"
    o = branches.outliers
    if o is not None and len(o.per_chain) and min(o.per_chain) >= 1:
        return "sparse"
    return "redundant" if branches.n_branches >= 2 else "analog"


def branches_and_codes(branches, codes, min_fraction: float = 0.05) -> str:
    """How the readout branches and the feature layer's binary codes correspond, in one line: the codes carried by
    at least ``min_fraction`` of the selective units; codes whose units fall mostly into one branch (one mode of the
    readout density carries them), codes whose units spread over several branches (at least ``min_fraction`` of
    the code's units in each: the readout splits the code), and codes carried mostly by outlier units, which the
    branches leave out."""
    keep = sorted(codes.codes(min_fraction))
    text = f"{len(keep)} code(s) in z{codes.layer} (≥ {min_fraction:.0%} of selective units), " \
           f"{branches.n_branches} readout branch(es)"
    if not keep:
        return text
    modal = np.asarray(codes.modal)
    labels = np.asarray(branches.labels)
    unit_code = modal[np.asarray(branches.unit_chain), np.asarray(branches.unit_neuron)]
    main, spread, outlying = {}, {}, []
    for code in keep:
        mine = labels[unit_code == _code_id(code)]
        lab = mine[mine >= 0]
        if mine.size and (mine < 0).mean() > 0.5:
            outlying.append(code)
            continue
        if not lab.size:
            continue
        counts = np.bincount(lab, minlength=branches.n_branches) / lab.size
        main[code] = int(np.argmax(counts))
        several = [int(b) for b in np.flatnonzero(counts >= min_fraction)]
        if len(several) > 1:
            spread[code] = several
    shared: dict[int, list[str]] = {}
    for code, b in main.items():
        shared.setdefault(b, []).append(code)
    parts = [f"codes {', '.join(v)} share branch {b}" for b, v in sorted(shared.items()) if len(v) > 1]
    parts += [f"code {c} spreads over branches {', '.join(map(str, v))}" for c, v in spread.items()]
    if outlying:
        parts.append(f"code{'s' if len(outlying) > 1 else ''} {', '.join(outlying)} carried mostly by outlier units "
                     f"(outside the branches)")
    if not parts and len(keep) == branches.n_branches:
        parts.append("one branch per code")
    return text + ("; " + "; ".join(parts) if parts else "")


def _code_id(code: str) -> int:
    """Code string → id, the inverse of :func:`~bnnzoo.diagnostics.codes.code_string`."""
    n = len(code)
    return next(k for k in range(1 << n) if code_string(k, n) == code)


class NoAnalysis(Analysis):
    """A model of one's own diagnosed without an entry: its sampler health (and the order parameters it records),
    no unit layers."""

    clusters = False

    def not_tested(self, run):
        return {"units": "not tested: the run's model is not a zoo entry; pass entry= (e.g. 'sigmoidal') to "
                         "diagnose a model whose posterior holds an entry's sites"}


ANALYSES: dict[str, Analysis] = {
    "fcn": FcnAnalysis(),
    "three_layer": UnitAnalysis(three_layer_observables),
    "attention": UnitAnalysis(attention_observables),
    "gated": UnitAnalysis(gated_observables),
    "units": UnitAnalysis(),
    "none": NoAnalysis(),
}
"""{``ZooEntry.analysis``: the :class:`Analysis` that diagnoses entries of that kind}."""


def analysis_of(run) -> Analysis:
    """The :class:`Analysis` for a :class:`~bnnzoo.diagnostics.run.Run` (ValueError for an unknown kind)."""
    kind = run.analysis
    if kind not in ANALYSES:
        raise ValueError(f"ZooEntry.analysis of {run.entry.name!r} is {kind!r}; known kinds: {', '.join(ANALYSES)}")
    return ANALYSES[kind]
