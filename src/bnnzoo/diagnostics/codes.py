"""Neural codes: which classes activate each neuron, per layer and per draw, and how codes persist or switch.

**Definition.**  For neuron i of layer l at draw t, let z̄_ic(t) be the mean of its preactivations over the
training points of class c.  Bit c of its code is 1 when z̄_ic(t) > 0:

* sigmoid: z = 0 is the midpoint of φ (φ(0) = ½, the prior-mean activation), so bit 1 ⇔ the neuron's typical
  activation on class c is in the upper half of its range.  On the toy task the class means are bimodal with
  little mass near 0, so the threshold sits in the gap between the modes;
* ReLU: z = 0 is the kink, so bit 1 ⇔ the neuron is *active* on a typical point of class c;
* linear: there is no threshold in φ; the code is **analog** — the strength vector z̄_i(t) itself, whose
  distribution over neurons is continuous.  Bits (signs) are still computed, to measure switching.

Codes are strings over classes 0..m−1, e.g. ``"011"`` = silent on class 0, active on classes 1 and 2.

**Selective neurons.**  A task-agnostic neuron (the ReLU bulk) has preactivations that carry no class structure:
on the toy task's orthogonal inputs its z_μ at one draw are P independent N(0, q) values, so its class means are
noise of order √(q/P_c) and its bits are noise.  A unit's selectivity at draw t is the F statistic of "every class
mean is 0" against its own within-class scatter,

    F(t) = [Σ_c P_c z̄_ic(t)² / m] / [Σ_c Σ_{μ∈c} (z_iμ(t) − z̄_ic(t))² / (P − m)],

which for a task-agnostic unit follows Fisher's F(m, P − m) exactly, whatever its scale q (m: the classes with
points).  The numerator's sum and the scatter come from the class means and the mean of z² over the points, so the
recorded summaries suffice.  A unit is *selective* when the median of F(t) over its draws exceeds the F(m, P − m)
quantile at 1 − α/(2 n) (α = 0.05, n = chains × neurons): at least half of a task-agnostic unit's draws would have
to pass a level-α/(2n) cut, which happens with probability at most α/n (Markov), so with the Bonferroni union over
the n units the chance that any task-agnostic unit is called selective is at most α.  The cut measures a unit's
class means against its within-class scatter, not against its whole mean square q (which includes the coded means
themselves), so it keeps its power at small P, where a few points per class make a cut on q alone miss coded
units.  The coding scheme and the switching statistics are computed over selective neurons (all neurons are
selective on the sigmoidal toy task; on ReLU only the outliers are).  Inputs that are not orthogonal correlate a
task-agnostic unit's z_μ, and the null is then approximate.

**Persistence and switching** (per layer): the *modal code* of a unit (a neuron of one chain) over the run, its
*persistence* (fraction of draws at the modal code), the *switching rate* (fraction of consecutive draw pairs whose
code differs, per unit), the *turnover* (fraction of units whose modal code over the first fifth of the run
differs from that over the last fifth) and the *code memory* μ: the probability that a unit carries the same code
half a run later, normalised so that chance (codes redrawn from the population scheme) gives 0 and no change 1,
μ = (P_same − Σ_k p_k²)/(1 − Σ_k p_k²).  Verdict ``frozen`` when μ > 0.5, otherwise ``switching``.  Unlike the
switching rate (which counts flicker of a bit near threshold and depends on thinning) μ measures whether a unit
keeps its identity over the run (a linear net's analog codes give μ near 0, frozen populations near 1).

**Population scheme after reordering** (the paper's Fig. 5): at each draw the scheme is the histogram of codes over
units (neuron identities forgotten).  Its drift is the mean total-variation distance between the per-draw
histogram and the run's average histogram; ``scheme_stable`` when the drift is below 0.1 (fewer than 10 % of the
units would have to change code to restore the average scheme).  Switching neurons with a stable scheme is the
paper's lower-layer sigmoidal picture; the multinomial noise level of the drift (units drawn independently from the
average scheme) is reported as ``scheme_drift_null``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ._data import RunData, class_means, run_data
from .._record import Record, array_field

__all__ = ["CodeResult", "neural_codes", "codes_from_preactivations", "codes_per_layer",
           "class_means", "code_ids", "code_string", "code_strings", "unit_modal_codes",
           "code_memory", "selectivity", "FROZEN_MEMORY", "SCHEME_DRIFT", "SELECTIVITY_ALPHA"]

FROZEN_MEMORY = 0.5
SCHEME_DRIFT = 0.1
SELECTIVITY_ALPHA = 0.05


def code_ids(class_means: np.ndarray) -> np.ndarray:
    """Integer code of each neuron from its class means (..., m): bit c set when the class-c mean is > 0."""
    bits = np.asarray(class_means) > 0
    ids = np.zeros(bits.shape[:-1], np.int64)
    for c in range(bits.shape[-1]):       # one class at a time: a product broadcast over the short class axis is slow
        ids |= bits[..., c].astype(np.int64) << c
    return ids


def code_string(code_id: int, m: int) -> str:
    """Code id → string over classes 0..m−1 ("011" = off on class 0, on for classes 1 and 2)."""
    return "".join(str((int(code_id) >> c) & 1) for c in range(m))


def _modal(ids: np.ndarray, n_codes: int) -> np.ndarray:
    """Most frequent id along axis 1 of (C, D, N) → (C, N)."""
    C, D, N = ids.shape
    counts = np.zeros((C, N, n_codes), int)
    for k in range(n_codes):
        counts[..., k] = (ids == k).sum(1)
    return counts.argmax(-1)


def code_memory(ids: np.ndarray, n_codes: int, mask: np.ndarray | None = None) -> float:
    """μ for code ids (chain, draw, neuron) at a lag of half the run, over the units in ``mask`` (chain, neuron)."""
    ids = np.asarray(ids)
    C, D, N = ids.shape
    lag = D // 2
    mask = np.ones((C, N), bool) if mask is None or not np.any(mask) else np.asarray(mask, bool)
    same = (ids[:, lag:] == ids[:, :D - lag])  # (C, D - lag, N)
    p_same = float(same.transpose(0, 2, 1)[mask].mean())
    sel = ids.transpose(0, 2, 1)[mask]  # (units, D)
    p = np.array([(sel == k).mean() for k in range(n_codes)])
    chance = float((p**2).sum())
    if chance >= 1.0 - 1e-12:
        return 1.0
    return float((p_same - chance) / (1.0 - chance))


def code_strings(code_ids: np.ndarray, m: int) -> np.ndarray:
    """Code ids (any shape) → an array of their code strings (:func:`code_string`) of the same shape."""
    return np.array([code_string(k, m) for k in range(1 << m)])[np.asarray(code_ids)]


def unit_modal_codes(rd: RunData, layer: int) -> np.ndarray:
    """(chain, neuron) array of each unit's modal code string in ``layer``."""
    ids = code_ids(rd.class_means(layer))
    return code_strings(_modal(ids, 1 << rd.m), rd.m)


@dataclass(frozen=True, repr=False)
class CodeResult(Record):
    """Codes of one layer.

    Attributes
    ----------
    layer : int
        Layer index, 1..L.
    activation : str
        The activation φ.
    kind : str
        ``"binary"``, or ``"analog"`` for a linear φ.
    scheme, scheme_fraction : dict
        {code: number of selective units with that modal code}, and the same as fractions.
    n_units, n_selective : int
        Units (neurons × chains), and how many of them are selective.
    selectivity_threshold : float
        The cut on a unit's median F statistic (the F(m, P − m) quantile at 1 − α/(2 · n_units)).
    switching_rate, switching_rate_se : float
        Code changes per unit per draw (selective units), and its standard error.
    persistence : float
        Median fraction of draws at the modal code.
    turnover : float
        Fraction of units whose early and late modal codes differ.
    code_memory : float
        μ over half a run.
    verdict : str
        ``"frozen"`` (μ > 0.5) or ``"switching"``.
    scheme_drift, scheme_drift_null : float
        Mean TV distance of the per-draw scheme from the average scheme, and its multinomial noise level.
    scheme_stable : bool
        Drift < 0.1.
    strength_quantiles : tuple
        (10, 50, 90 %) quantiles of the analog strength ``|z̄_i(t)|`` over units and draws.
    ids : ndarray, dims (chain, draw, neuron)
        Code id of every unit at every draw.
    modal : ndarray, dims (chain, neuron)
        Modal code id.
    persistence_per_unit : ndarray, dims (chain, neuron)
        Fraction of draws at the unit's modal code.
    selective : ndarray, dims (chain, neuron)
        Selectivity flags.
    mean_activation : ndarray, dims (chain, neuron, class)
        Time-averaged class-mean activation φ.
    scheme_trace : ndarray, dims (chain, draw, code)
        Fraction of selective units with each code id at each draw.
    selectivity : ndarray, dims (chain, neuron)
        Median over draws of each unit's F statistic (module docstring); None in reports stored before it existed.
    """

    layer: int
    activation: str
    kind: str
    scheme: dict
    scheme_fraction: dict
    n_units: int
    n_selective: int
    selectivity_threshold: float
    switching_rate: float
    switching_rate_se: float
    persistence: float
    turnover: float
    code_memory: float
    verdict: str
    scheme_drift: float
    scheme_drift_null: float
    scheme_stable: bool
    strength_quantiles: tuple
    ids: np.ndarray = array_field("chain", "draw", "neuron")
    modal: np.ndarray = array_field("chain", "neuron")
    persistence_per_unit: np.ndarray = array_field("chain", "neuron")
    selective: np.ndarray = array_field("chain", "neuron")
    mean_activation: np.ndarray = array_field("chain", "neuron", "class")
    scheme_trace: np.ndarray = array_field("chain", "draw", "code")
    selectivity: np.ndarray = array_field("chain", "neuron", default=None)

    @property
    def frozen(self) -> bool:
        return self.verdict == "frozen"

    def codes(self, min_fraction: float = 0.0) -> list[str]:
        """Codes of the scheme carried by at least ``min_fraction`` of the selective units, most common first."""
        return [c for c, f in sorted(self.scheme_fraction.items(), key=lambda kv: -kv[1]) if f >= min_fraction]

    def summary(self) -> list[str]:
        sch = ", ".join(f"{c}: {n}" for c, n in sorted(self.scheme.items(), key=lambda kv: -kv[1]))
        head = f"layer {self.layer} ({self.activation + ', ' if self.activation else ''}{self.kind} code): "
        if self.kind == "analog":
            q = self.strength_quantiles
            head += f"strength |z̄| 10/50/90 % = {q[0]:.2f}/{q[1]:.2f}/{q[2]:.2f}; "
        if not self.n_selective:
            return [head + f"no selective units (0/{self.n_units}): no coding scheme",
                    f"  switching {self.switching_rate:.4f} per draw over all units, memory {self.code_memory:.2f}"]
        return [head + f"scheme {{{sch}}} over {self.n_selective}/{self.n_units} selective units",
                f"  codes {self.verdict}: switching {self.switching_rate:.4f} ± {self.switching_rate_se:.4f} per "
                f"draw, memory {self.code_memory:.2f}, persistence {self.persistence:.2f}, "
                f"turnover {self.turnover:.2f}; "
                f"population scheme "
                f"{'stable' if self.scheme_stable else 'drifting'} (drift {self.scheme_drift:.3f}, "
                f"noise level {self.scheme_drift_null:.3f})"]


def neural_codes(idata, layer: int | None = None) -> CodeResult:
    """Codes of ``layer`` (default: the feature layer L) of a run; see the module docstring for every definition."""
    rd = run_data(idata)
    layer = rd.depth if layer is None else int(layer)
    return codes_from_preactivations(None, rd.labels, rd.m, layer=layer, activation=rd.activation,
                                     class_means_z=rd.class_means(layer),
                                     class_means_phi=rd.class_means(layer, activated=True),
                                     unit_msq=rd.unit_msq(layer), analog=rd.activation == "linear")


def codes_from_preactivations(z: np.ndarray, labels: np.ndarray, m: int, *, layer: int = 1, activation: str = "",
                              phi=None, class_means_z: np.ndarray | None = None,
                              class_means_phi: np.ndarray | None = None, unit_msq: np.ndarray | None = None,
                              analog: bool = False) -> CodeResult:
    """Codes of one layer of units from their values ``z`` (chain, draw, unit, point) on the training points with
    class ``labels`` (point,) in 0..m−1 (module docstring for every definition).

    ``phi`` (NumPy function; identity when None) gives the activations whose class means are reported as
    ``mean_activation``; ``class_means_z`` / ``class_means_phi`` (chain, draw, unit, m) and ``unit_msq`` (chain,
    draw, unit: the mean of z² over the points) may be passed when already computed; with all three, ``z`` may be
    None (a run that recorded the summaries, not z).  ``analog`` marks a code without a threshold in φ (linear
    units).
    """
    labels = np.asarray(labels).astype(int)
    if z is None:
        if class_means_z is None or unit_msq is None or (class_means_phi is None and phi is not None):
            raise ValueError("without z, pass class_means_z, unit_msq (and class_means_phi when phi is given)")
    else:
        z = np.asarray(z)
        if z.ndim != 4:
            raise ValueError(f"z must have shape (chain, draw, unit, point), got {z.shape}")
    zb = class_means(z, labels, m) if class_means_z is None else class_means_z  # (C, D, N, m)
    C, D, N, m = zb.shape
    n_codes = 1 << m
    msq = np.mean(z**2, axis=-1) if unit_msq is None else np.asarray(unit_msq)    # (C, D, N)
    f_med, thr = selectivity(zb, msq, np.bincount(labels, minlength=m))
    sel = f_med > thr  # (C, N)
    ids = code_ids(zb)  # (C, D, N)
    modal = _modal(ids, n_codes)
    persist = (ids == modal[:, None, :]).mean(1)
    changes = (ids[:, 1:] != ids[:, :-1]).mean(1)  # (C, N)
    k5 = max(D // 5, 1)
    early, late = _modal(ids[:, :k5], n_codes), _modal(ids[:, -k5:], n_codes)
    s = sel if sel.any() else np.ones_like(sel)
    rate = float(changes[s].mean())
    rate_se = float(changes[s].std(ddof=1) / np.sqrt(s.sum())) if s.sum() > 1 else float("nan")
    turnover = float((early != late)[s].mean())
    pers = float(np.median(persist[s]))
    memory = code_memory(ids, n_codes, s)
    verdict = "frozen" if memory > FROZEN_MEMORY else "switching"
    # per-draw scheme over the selective units of each chain
    trace = np.zeros((C, D, n_codes))
    for c in range(C):
        sc = s[c] if s[c].any() else np.ones(N, bool)
        for k in range(n_codes):
            trace[c, :, k] = (ids[c][:, sc] == k).mean(1)
    mean_scheme = trace.mean(1, keepdims=True)
    drift = float(0.5 * np.abs(trace - mean_scheme).sum(-1).mean())
    n_sel_c = np.maximum(s.sum(1), 1)
    p = mean_scheme[:, 0, :]
    null = float(np.mean(0.5 * np.sum(np.sqrt(2 * p * (1 - p) / (np.pi * n_sel_c[:, None])), -1)))
    scheme = Counter(code_string(k, m) for k in modal[sel.astype(bool)])   # selective units only: none, no scheme
    n_sel = int(sel.sum())
    if not n_sel:
        verdict = "no selective units"
    strength = np.sqrt(_sum_classes((zb[..., c] * zb[..., c] for c in range(m)), zb.shape[:-1]))  # ‖z̄‖ (norm)
    if class_means_phi is None:
        class_means_phi = zb if phi is None else class_means(phi(z), labels, m)
    phibar = class_means_phi.mean(1)
    return CodeResult(
        layer=int(layer), activation=activation, kind="analog" if analog else "binary",
        scheme=dict(scheme), scheme_fraction={k: v / max(n_sel, 1) for k, v in scheme.items()}, n_units=C * N,
        n_selective=int(sel.sum()), selectivity_threshold=float(thr), switching_rate=rate,
        switching_rate_se=rate_se, persistence=pers, turnover=turnover, code_memory=memory, verdict=verdict,
        scheme_drift=drift,
        scheme_drift_null=null, scheme_stable=bool(drift < SCHEME_DRIFT),
        strength_quantiles=tuple(float(v) for v in np.quantile(strength, [0.1, 0.5, 0.9])),
        ids=ids.astype(np.int16), modal=modal.astype(np.int16), persistence_per_unit=persist,
        selective=sel.astype(np.int8), mean_activation=phibar, scheme_trace=trace, selectivity=f_med)


def _sum_classes(terms, shape: tuple) -> np.ndarray:
    """The sum of the per-class arrays ``terms`` (each of ``shape``) added in class order, ((t0 + t1) + t2) + ...:
    the numbers of ``np.sum`` over a last axis of the classes (which adds a short axis in that order), without
    numpy's slow loop over a short innermost axis; zeros of ``shape`` for no terms."""
    total = None
    for t in terms:
        total = np.array(t, float if t.dtype.kind not in "fc" else t.dtype) if total is None else \
            np.add(total, t, out=total)
    return np.zeros(shape) if total is None else total


def selectivity(class_means_z: np.ndarray, unit_msq: np.ndarray, counts: np.ndarray,
                alpha: float = SELECTIVITY_ALPHA) -> tuple[np.ndarray, float]:
    """Every unit's selectivity statistic and the cut on it (module docstring, "Selective neurons").

    Parameters
    ----------
    class_means_z : ndarray, shape (chain, draw, unit, m)
        The class means z̄_c of each unit's preactivations at every draw.
    unit_msq : ndarray, shape (chain, draw, unit)
        Each unit's mean of z² over the P training points at every draw.
    counts : ndarray, shape (m,)
        Points per class, P_c (classes without points are left out of the test).
    alpha : float
        The chance that any task-agnostic unit is called selective is at most ``alpha``.

    Returns
    -------
    f_median : ndarray, shape (chain, unit)
        Median over draws of F = [Σ_c P_c z̄_c² / m] / [within-class sum of squares / (P − m)]; NaN for a unit whose
        z is identically 0.
    threshold : float
        The F(m, P − m) quantile at 1 − alpha/(2 · chain · unit); inf when P − m < 1 (no within-class scatter).
    """
    zb, msq = np.asarray(class_means_z, float), np.asarray(unit_msq, float)
    counts = np.asarray(counts, float)
    present = counts > 0
    P, m = float(counts.sum()), int(present.sum())
    C, D, N = msq.shape
    between = _sum_classes((counts[c] * zb[..., c] ** 2 for c in np.flatnonzero(present)),
                           msq.shape)                                     # Σ_c P_c z̄_c², (C, D, N)
    within = np.maximum(P * msq - between, 0.0)                           # Σ_c Σ_μ∈c (z_μ − z̄_c)²
    if P - m < 1:
        return np.full((C, N), np.nan), float("inf")
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (between / m) / (within / (P - m))
    return np.median(f, axis=1), float(stats.f.isf(alpha / (2 * C * N), m, P - m))


def codes_per_layer(idata) -> dict[int, CodeResult]:
    """{layer: :class:`CodeResult`} for every hidden layer."""
    rd = run_data(idata)
    return {l: neural_codes(rd, l) for l in range(1, rd.depth + 1)}
