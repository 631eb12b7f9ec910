"""Population observables per draw: what the equilibrium populations of units look like at each draw of a run.

Every headline verdict of bnnzoo is about the equilibrium *populations* of units: how many units carry each code,
how the readout splits into branches, how many outliers each class has.  A zoo entry declares which of these it has
(:attr:`bnnzoo.models.ZooEntry.populations`, the ``observables`` of its
:class:`~bnnzoo.models.zoo.PopulationSpec`); :func:`population_observables` computes them **per draw**, as
(chain, draw) arrays, so that chains started differently (:mod:`bnnzoo.workflows.certify`) can be compared.

Kinds (the names an entry declares) and the observables they give:

* ``"code_fraction"`` (fully-connected nets with a nonlinear φ): for every recorded hidden layer l and every code k
  that occurs in the run, ``code_fraction[z<l>][<code>]`` = the fraction of the layer's units whose code is k at that
  draw.  A unit's code is the sign pattern of its class-mean preactivations (bit c set when the class-c mean of
  zˡ is > 0, :func:`bnnzoo.diagnostics.codes.code_ids`), exactly as :mod:`bnnzoo.diagnostics.codes` defines it, so
  on the sigmoidal nets (every unit selective) these are the report's per-draw coding scheme.  All units are
  counted: the report's selectivity cut is a median over a unit's whole trajectory, a run-level quantity that would
  tie the draws (and the start families) together; on ReLU nets the task-agnostic bulk's codes are therefore
  included and the sparse code is measured by ``outliers``.  The classes are the task's labels, so a task with
  fewer outputs than classes (the binary task of Fig. 1: m = 1, two classes) has codes over its two classes
  ("10" = active on class 0 only).  Needs the recorded class means ``zbar1..zbarL``
  (``record=("summaries",)``, the entries' default) or preactivations (``record=("z",)``); a layer with neither is
  skipped, with the reason in
  :attr:`PopulationValues.skipped`.
* ``"class_kernel"`` (linear nets, whose code is analog: a unit's class-mean vector is continuous and its signs
  carry no discrete population): ``class_kernel[z<l>][c,c']`` = the mean over units of z̄_ic z̄_ic' at that draw
  (c ≤ c'), the class block of the layer's learned kernel, which the linear theory predicts (docs/theory.md §4).
* ``"branch_mass"`` (fully-connected nets): ``branch_mass[<signs>]`` = the fraction of units whose readout vector
  a_i has that sign pattern over the classes ("+" where a_ic > 0) at that draw.  This is a cheap per-draw stand-in
  for the readout branches of :func:`bnnzoo.diagnostics.readout_branches` (a clustering of time averages, a
  run-level quantity): the branches of the one-hidden-layer mean field lie in different sign orthants
  (docs/theory.md §5), so their masses are sums of these.  On linear nets the readout posterior is one Gaussian
  and these are its orthant probabilities, still a population observable.
* ``"outliers"`` (nonlinear fully-connected nets): ``outliers[<c>]`` = the number of units at that draw whose
  readout norm exceeds N^{1/4} times the draw's median (the readout half of
  :func:`bnnzoo.diagnostics.branches.find_outliers`' criterion, as the health gate counts them) and whose largest
  readout component is class c; with one output and two or more classes (the binary task), whose readout has the
  sign of class c's target (the largest a·y_c, :func:`outlier_counts`).
* ``"mse"``: the training mean squared error.
* ``"specialist_fraction"`` (three-layer nets): the fraction of first-layer units whose overlap with the teacher
  direction exceeds 3 NNGP standard deviations (:func:`bnnzoo.diagnostics.alignment.first_layer_overlaps`, the
  report's specialist count divided by N1); needs ``w_star`` in the task's provenance.
* ``"second_layer_q3"`` (three-layer nets): the mean over second-layer units of their squared correlation with the
  target He₃ on the test inputs (:func:`~bnnzoo.diagnostics.alignment.second_layer_overlaps`, at most 500 test
  inputs); needs a test set.
* ``"alignment"``: A_f = ⟨f, y⟩/⟨y, y⟩ on the test set (:func:`~bnnzoo.diagnostics.alignment.alignment`); needs a
  test set.
* ``"specialist_heads"`` (softmax attention): the fraction of heads whose query–key matrix has a cosine with the
  teacher's w_q w_kᵀ above 3/d (the report's specialist heads divided by H).
* ``"pathway_sv"`` (gated networks): ``pathway_sv[<pathway>][<j>]`` = the j-th singular value of the pathway's
  end-to-end map at that draw (:func:`~bnnzoo.diagnostics.alignment.pathway_maps`), for j below the rank of the
  pathway's effective dataset Σʸˣ(p) (at least the largest one).

Each observable also has an *error kind* (:attr:`PopulationValues.info`), which
:mod:`bnnzoo.workflows.certify` uses for its finite-N error: ``"fraction"`` (a fraction of n_units exchangeable
units: binomial population error), ``"unit_mean"`` (a mean over n_units units: population error from the spread of
the units' time-averaged contributions, given per chain in ``unit_var``) or ``"network"`` (a property of the whole
network with no population error of its own).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import azcompat
from ..inference import run_config
from ..inference.health import outlier_mask
from ..models import get_entry
from ..models.summaries import summary_labels
from ..tasks.gated_tasks import effective_dataset
from ._data import class_means
from .alignment import _spec_of, alignment, first_layer_overlaps, pathway_maps, second_layer_overlaps
from .codes import code_ids, code_string

__all__ = ["population_observables", "outlier_counts", "outlier_mask", "PopulationValues", "ObservableInfo", "KINDS",
           "ERROR_KINDS"]

KINDS = ("code_fraction", "class_kernel", "branch_mass", "outliers", "mse", "specialist_fraction",
         "second_layer_q3", "alignment", "specialist_heads", "pathway_sv")
ERROR_KINDS = ("fraction", "unit_mean", "network")
SECOND_LAYER_MAX_TEST = 500       # test inputs for the second-layer overlaps (as bnnzoo.diagnose uses)


@dataclass(frozen=True)
class ObservableInfo:
    """How one population observable's finite-N error is modelled (:mod:`bnnzoo.workflows.certify`).

    Attributes
    ----------
    kind : str
        "fraction", "unit_mean" or "network" (module docstring).
    n_units : int
        Units the observable averages over (0 for "network").
    unit_var : ndarray or None, dims (chain,)
        "unit_mean" only: the variance over units of a unit's time-averaged contribution, per chain.
    """

    kind: str
    n_units: int = 0
    unit_var: np.ndarray | None = None


class PopulationValues(dict):
    """{name: (chain, draw) array} of population observables, with :attr:`info` ({name: :class:`ObservableInfo`})
    and :attr:`skipped` ({kind or name: why it was not computed})."""

    def __init__(self):
        super().__init__()
        self.info: dict[str, ObservableInfo] = {}
        self.skipped: dict[str, str] = {}

    def add(self, name: str, values, kind: str, n_units: int = 0, unit_var=None) -> None:
        """Store one observable (chain, draw) unless it is not finite everywhere (then it is listed in ``skipped``)."""
        v = np.asarray(values, float)
        if v.ndim != 2:
            raise ValueError(f"population observable {name!r} must be (chain, draw), got shape {v.shape}")
        if not np.all(np.isfinite(v)):
            self.skipped[name] = "not finite on every draw"
            return
        self[name] = v
        self.info[name] = ObservableInfo(kind, int(n_units), None if unit_var is None else np.asarray(unit_var, float))


def _config(idata) -> dict:
    try:
        return run_config(idata)
    except ValueError:
        return {}


def _site(post, name: str, dims: tuple[str, ...]) -> np.ndarray:
    """A posterior site as (chain, draw, *dims), transposed by name when the site carries those dims."""
    da = post[name]
    if set(dims) <= set(da.dims):
        da = da.transpose("chain", "draw", *dims)
    return np.asarray(da.values, float)


def population_observables(idata, entry=None) -> PopulationValues:
    """The population observables that ``entry`` declares, per draw, for a run of :func:`bnnzoo.sample`.

    Parameters
    ----------
    idata : InferenceData or DataTree
        A run of :func:`bnnzoo.sample` (chains of several start families concatenated are fine).
    entry : ZooEntry, str or None
        The zoo entry whose declaration (``entry.populations.observables``) says what to compute; None reads the
        run's model from its provenance.

    Returns
    -------
    PopulationValues
        {name: (chain, draw) array}; ``.info`` gives each observable's error kind, ``.skipped`` what was declared
        but could not be computed from this run, and why.

    Raises
    ------
    ValueError
        if the entry declares no population observables, or the run has no provenance and no entry is given.
    """
    cfg = _config(idata)
    if entry is None:
        if not cfg.get("model"):
            raise ValueError("the run has no bnnzoo provenance: pass entry= (a zoo entry or its name)")
        entry = get_entry(cfg["model"])
    elif isinstance(entry, str):
        entry = get_entry(entry)
    spec = getattr(entry, "populations", None)
    if spec is None:
        raise ValueError(f"zoo entry {entry.name!r} declares no population observables (ZooEntry.populations)")
    bad = [k for k in spec.observables if k not in KINDS]
    if bad:
        raise ValueError(f"zoo entry {entry.name!r} declares unknown population observables {bad}; known: {KINDS}")
    out = PopulationValues()
    post = azcompat.get_group(idata, "posterior")
    kinds = set(spec.observables)
    if kinds & {"code_fraction", "class_kernel", "branch_mass", "outliers"}:
        _fcn(idata, post, cfg, kinds, out)
    if "mse" in kinds:
        _mse(idata, post, out)
    if "alignment" in kinds:
        _alignment(idata, out)
    if kinds & {"specialist_fraction", "second_layer_q3"}:
        _three_layer(idata, cfg, kinds, out)
    if "specialist_heads" in kinds:
        _heads(post, cfg, out)
    if "pathway_sv" in kinds:
        _pathways(idata, out)
    return out


# ------------------------------------------------------------------------------------------------ fully connected
def _labels(idata) -> np.ndarray:
    return np.asarray(azcompat.get_group(idata, "constant_data")["labels"].values).astype(int)


def _argmax_labels(idata, labels: np.ndarray) -> bool:
    """Whether the run's labels are the classes the model's summaries used."""
    y = np.asarray(azcompat.get_group(idata, "observed_data")["y"].values)
    return bool(np.array_equal(summary_labels(y), labels))


def _fcn(idata, post, cfg, kinds, out: PopulationValues) -> None:
    if "a" not in post:
        for k in kinds & {"code_fraction", "class_kernel", "branch_mass", "outliers"}:
            out.skipped[k] = "the posterior has no readout 'a'"
        return
    a = _site(post, "a", ("neuron", "class"))            # (C, D, N, m)
    C, D, N, m = a.shape
    mk = cfg.get("model_kwargs", {})
    depth = int(mk.get("depth", 0)) or max([int(k[1:]) for k in post.data_vars
                                            if k[:1] in "Wz" and k[1:].isdigit()] or [1])
    labels = _labels(idata) if kinds & {"code_fraction", "class_kernel", "outliers"} else None
    n_cls = max(m, int(labels.max()) + 1) if labels is not None and labels.size else m
    if kinds & {"code_fraction", "class_kernel"}:
        for l in range(1, depth + 1):
            if f"zbar{l}" in post and _argmax_labels(idata, labels):
                zb = _site(post, f"zbar{l}", ("neuron", "class"))                   # (C, D, N, m) recorded
            elif f"z{l}" in post:
                zb = class_means(_site(post, f"z{l}", ("neuron", "point")), labels, n_cls)   # (C, D, N, n_cls)
            else:
                why = (f"zbar{l} holds class means over the outputs, not the task's classes (sample with "
                       f"record=('z',))" if f"zbar{l}" in post else
                       f"zbar{l} / z{l} not recorded (sample with record=('summaries',) or ('z',))")
                for k in kinds & {"code_fraction", "class_kernel"}:
                    out.skipped[f"{k}[z{l}]"] = why
                continue
            if "code_fraction" in kinds:
                ids = code_ids(zb)                                                  # (C, D, N)
                for k in np.unique(ids):
                    out.add(f"code_fraction[z{l}][{code_string(k, zb.shape[-1])}]", (ids == k).mean(-1),
                            "fraction", N)
            if "class_kernel" in kinds:
                for c in range(zb.shape[-1]):
                    for c2 in range(c, zb.shape[-1]):
                        prod = zb[..., c] * zb[..., c2]                             # (C, D, N)
                        out.add(f"class_kernel[z{l}][{c},{c2}]", prod.mean(-1), "unit_mean", N,
                                unit_var=prod.mean(1).var(-1, ddof=1) if N > 1 else np.zeros(C))
    if "branch_mass" in kinds:
        signs = (a > 0)
        ids = (signs * (1 << np.arange(m))).sum(-1)                                 # (C, D, N)
        for k in np.unique(ids):
            name = "".join("+" if (int(k) >> c) & 1 else "-" for c in range(m))
            out.add(f"branch_mass[{name}]", (ids == k).mean(-1), "fraction", N)
    if "outliers" in kinds:
        targets = None
        if m == 1 and n_cls > 1:          # one output: a class is told by its target's sign (the binary task)
            y = np.asarray(azcompat.get_group(idata, "observed_data")["y"].values, float).reshape(len(labels), m)
            targets = class_means(y.T, labels, n_cls).T                             # (n_cls, m)
        counts = outlier_counts(a, targets)                                         # (C, D, classes)
        for c in range(counts.shape[-1]):
            out.add(f"outliers[{c}]", counts[..., c], "network")


def outlier_counts(a, targets=None) -> np.ndarray:
    """Outliers per class of readouts ``a`` (the ``outliers`` observable): the units whose readout norm exceeds
    N^{1/4} times the median over the N units, counted by their largest readout component, or, with ``targets``,
    by the class whose target the readout is most aligned with (largest a·y_c: with one output and targets ±1, the
    class whose target has the readout's sign).

    Parameters
    ----------
    a : array (..., N, m)
        Readout vectors of the N units (leading axes: chain, draw, ...).
    targets : array (n_classes, m) or None
        The target row y_c of every class; None: the classes are the m outputs (largest component).

    Returns
    -------
    array (..., m) of int, or (..., n_classes) with ``targets``: the outliers of each class.

    Raises
    ------
    ValueError
        ``targets`` not of shape (n_classes, m).
    """
    a = np.asarray(a, float)
    N, m = a.shape[-2:]
    flag = outlier_mask(np.sqrt((a ** 2).sum(-1)))                                  # (..., N)
    if targets is None:
        cls, n_cls = np.argmax(a, axis=-1), m
    else:
        t = np.asarray(targets, float)
        if t.ndim != 2 or t.shape[1] != m:
            raise ValueError(f"targets must have shape (n_classes, {m}), got {t.shape}")
        cls, n_cls = np.argmax(a @ t.T, axis=-1), t.shape[0]
    return np.stack([(flag & (cls == c)).sum(-1) for c in range(n_cls)], axis=-1)


def _mse(idata, post, out: PopulationValues) -> None:
    if "mse" in post and post["mse"].ndim == 2:
        out.add("mse", np.asarray(post["mse"].values, float), "network")
        return
    if "f" in post and "observed_data" in azcompat.group_names(idata):
        y = np.asarray(azcompat.get_group(idata, "observed_data")["y"].values, float)
        f = np.asarray(post["f"].values, float)
        if f.shape[2:] == y.shape:
            out.add("mse", np.mean((f - y) ** 2, axis=tuple(range(2, f.ndim))), "network")
            return
    out.skipped["mse"] = "the posterior has neither 'mse' nor 'f' matching the training targets"


# ------------------------------------------------------------------------------------------------ other entries
def _alignment(idata, out: PopulationValues) -> None:
    if "predictions" not in azcompat.group_names(idata):
        out.skipped["alignment"] = "the run has no test set (predictions group)"
        return
    out.add("alignment", alignment(idata).draws, "network")


def _three_layer(idata, cfg, kinds, out: PopulationValues) -> None:
    w_star = cfg.get("task", {}).get("w_star")
    if w_star is None:
        for k in kinds & {"specialist_fraction", "second_layer_q3"}:
            out.skipped[k] = "the task's provenance has no teacher direction w_star"
        return
    if "specialist_fraction" in kinds:
        fo = first_layer_overlaps(idata, w_star)
        out.add("specialist_fraction", fo.n_specialists / fo.overlaps.shape[-1], "fraction", fo.overlaps.shape[-1])
    if "second_layer_q3" in kinds:
        if "predictions" not in azcompat.group_names(idata):
            out.skipped["second_layer_q3"] = "the run has no test set (predictions group)"
            return
        so = second_layer_overlaps(idata, w_star, max_test=SECOND_LAYER_MAX_TEST)
        r2 = so.r3 ** 2                                                              # (C, D, N2)
        out.add("second_layer_q3", r2.mean(-1), "unit_mean", r2.shape[-1],
                unit_var=r2.mean(1).var(-1, ddof=1) if r2.shape[-1] > 1 else np.zeros(r2.shape[0]))


def _heads(post, cfg, out: PopulationValues) -> None:
    task = cfg.get("task", {})
    if not all(k in task for k in ("w_q", "w_k")) or not all(s in post for s in ("Q", "K")):
        out.skipped["specialist_heads"] = "needs the teacher's w_q, w_k (task provenance) and the sites Q, K"
        return
    wq, wk = (np.asarray(task[k], float) for k in ("w_q", "w_k"))
    Q, K = (_site(post, s, ("head", "key_dim", "input")) for s in ("Q", "K"))
    d = Q.shape[-1]
    M = np.einsum("cdhki,cdhkj->cdhij", Q, K)                                        # Q_hᵀ K_h
    cos = np.einsum("cdhij,i,j->cdh", M, wq, wk) / np.maximum(np.linalg.norm(M, axis=(-2, -1)), 1e-300)
    H = cos.shape[-1]
    out.add("specialist_heads", (np.abs(cos) > 3.0 / d).mean(-1), "fraction", H)


def _pathways(idata, out: PopulationValues) -> None:
    try:
        spec = _spec_of(idata, None)
    except ValueError as e:
        out.skipped["pathway_sv"] = str(e)
        return
    X = np.asarray(azcompat.get_group(idata, "constant_data")["X"].values, float)
    Y = np.asarray(azcompat.get_group(idata, "observed_data")["y"].values, float)
    for name, Wp in pathway_maps(idata, spec).items():
        sv = np.linalg.svd(Wp, compute_uv=False)                                     # (C, D, k)
        data_sv = effective_dataset(spec, X, Y, name).sv
        rank = int(np.sum(data_sv > 1e-8 * max(float(np.max(data_sv, initial=0.0)), 1e-300)))
        for j in range(min(max(rank, 1), sv.shape[-1])):
            out.add(f"pathway_sv[{name}][{j}]", sv[..., j], "network")
