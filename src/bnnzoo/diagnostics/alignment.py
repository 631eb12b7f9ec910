"""Observables of the three-layer, attention and gated networks (docs/theory.md §8–9), as typed records.

* :func:`alignment` — A_f = ⟨f, y⟩/⟨y, y⟩ on the test inputs, of the posterior-mean predictor and per draw.
* :func:`first_layer_overlaps` — overlaps m_j = W¹_j · w* of the first-layer neurons with the teacher direction and
  the number of *specialists*, ``|m_j|`` > 3 NNGP standard deviations (σ₁: in the NNGP limit the first layer stays at
  its prior, m_j ~ N(0, σ₁²) for ``|w*|`` = 1, so 0.27 % of neurons cross the line by chance).
* :func:`second_layer_overlaps` — correlation of each second-layer preactivation h²_k(x) with the target He₃(w*·x) and
  with the linear feature w*·x on the test inputs.
* :func:`pathway_maps`, :func:`pathway_spectra`, :func:`pathway_generalization` — GDLN end-to-end pathway maps W_p,
  their singular values against those of the effective dataset Σʸˣ(p), and generalization to untrained pathways.

Every function takes the data returned by :func:`bnnzoo.sample` (InferenceData on ArviZ 0.x, DataTree on 1.x) and
reads what it needs (predictions group, posterior weights, run provenance) through :mod:`bnnzoo.azcompat`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import azcompat
from ..inference import run_config
from ..models.activations import np_activation
from ..models.gated import edge_scales, pathway_map
from ..tasks.gated_tasks import effective_dataset, get_spec
from ..tasks.hermite import he3

__all__ = ["AlignmentResult", "alignment", "alignment_from_arrays", "FirstLayerOverlaps", "first_layer_overlaps",
           "SecondLayerOverlaps", "second_layer_overlaps", "pathway_maps", "PathwaySpectrum", "pathway_spectra",
           "PathwayGeneralization", "pathway_generalization", "SPECIALIST_PRIOR_FRACTION"]

SPECIALIST_PRIOR_FRACTION = math.erfc(3.0 / math.sqrt(2.0))
"""P(``|z|`` > 3) for z ~ N(0, 1) ≈ 0.0027: the chance fraction of specialists under the NNGP (prior) first layer."""


def _config(idata) -> dict:
    try:
        return run_config(idata)
    except (ValueError, KeyError):
        return {}


def _model_kwargs(idata) -> dict:
    return _config(idata).get("model_kwargs", {})


def _draws(ds, name) -> np.ndarray:
    """Posterior site as (chain, draw, ...) array."""
    if name not in ds:
        raise KeyError(f"the posterior has no site {name!r}; sites: {list(ds.data_vars)}")
    return np.asarray(ds[name].values, dtype=float)


# ------------------------------------------------------------------------------------------------------ alignment
@dataclass(frozen=True)
class AlignmentResult:
    """Alignment A_f = ⟨f, y⟩/⟨y, y⟩ on a test set (sums over test points and outputs).

    mean_predictor : A of the posterior-mean predictor f̄ (= mean over draws of the per-draw A, A being linear in f).
    draws : (chain, draw) per-draw alignment.  sd : its standard deviation over draws (posterior spread, not a
    Monte-Carlo error).  chain_means : (chain,) per-chain averages (their spread shows unmixed chains).
    rel_error : ⟨(f̄ − y)²⟩/⟨y²⟩ of the mean predictor.  n_test : number of test points used.
    """

    mean_predictor: float
    draws: np.ndarray
    sd: float
    chain_means: np.ndarray
    rel_error: float
    n_test: int


def alignment_from_arrays(f, y, mask=None) -> AlignmentResult:
    """A_f from predictions f (chain, draw, n, m) — or (n, m) / (n,) for one predictor — and targets y (n, m);
    ``mask`` (n, m) restricts the sums (e.g. gated-on outputs)."""
    f = np.asarray(f, dtype=float)
    y = np.asarray(y, dtype=float)
    if y.ndim == 1:
        y = y[:, None]
    if f.ndim == 1:
        f = f[:, None]
    if f.ndim == 2:
        f = f[None, None]
    if f.shape[-2:] != y.shape:
        raise ValueError(f"predictions {f.shape} do not match targets {y.shape}")
    w = np.ones_like(y) if mask is None else np.asarray(mask, dtype=float)
    yy = np.sum(w * y * y)
    if not yy > 0:
        raise ValueError("the targets are zero on the test set: alignment undefined")
    per = np.einsum("cdnm,nm->cd", f, w * y) / yy
    fbar = f.mean(axis=(0, 1))
    A = float(np.sum(w * fbar * y) / yy)
    rel = float(np.sum(w * (fbar - y) ** 2) / yy)
    return AlignmentResult(A, per, float(per.std()), per.mean(axis=1), rel, int(y.shape[0]))


def alignment(idata, y_test=None, mask=None) -> AlignmentResult:
    """A_f on the test set of a run of :func:`bnnzoo.sample` (its ``predictions`` group, made when the task has a
    test set); ``y_test`` defaults to the stored test targets."""
    groups = azcompat.group_names(idata)
    if "predictions" not in groups:
        raise ValueError("no predictions group: sample on a task with a test set (X_test, Y_test)")
    f = np.asarray(azcompat.get_group(idata, "predictions")["f"].values)
    if y_test is None:
        pc = azcompat.get_group(idata, "predictions_constant_data")
        if "y_test" not in pc:
            raise ValueError("the run's test inputs have no targets y_test (e.g. added by bnnzoo.predict): pass "
                             "y_test=")
        y_test = np.asarray(pc["y_test"].values)
    return alignment_from_arrays(f, y_test, mask)


# ------------------------------------------------------------------------------------------------ three-layer net
@dataclass(frozen=True)
class FirstLayerOverlaps:
    """First-layer overlaps with the teacher direction.

    overlaps : (chain, draw, neuron1) m_j = W¹_j · w*.  cosines : the same divided by ``|W¹_j|``.
    threshold : 3 σ₁ (3 NNGP standard deviations).  n_specialists : (chain, draw) count of ``|m_j|`` > threshold.
    mean_specialists : its posterior mean.  chance : N1 × 0.0027, the count expected under the NNGP / prior.
    q_star : posterior mean of the mean squared overlap ⟨m_j²⟩_j (σ₁² under the prior).
    """

    overlaps: np.ndarray
    cosines: np.ndarray
    threshold: float
    n_specialists: np.ndarray
    mean_specialists: float
    chance: float
    q_star: float


def first_layer_overlaps(idata, w_star, sigma_w1: float | None = None, site: str = "W1") -> FirstLayerOverlaps:
    """Overlaps of the first-layer weights (site ``W1``, dims (neuron1, input)) with ``w_star`` (normalised here)
    and the specialist count beyond 3 NNGP standard deviations σ₁ (``sigma_w1``: the prior variance σ₁² of the
    run, read from its provenance when None)."""
    post = azcompat.get_group(idata, "posterior")
    W1 = _draws(post, site)
    w = np.asarray(w_star, dtype=float).ravel()
    if w.shape != (W1.shape[-1],):
        raise ValueError(f"w_star must have {W1.shape[-1]} entries, got {w.shape}")
    w = w / np.linalg.norm(w)
    if sigma_w1 is None:
        sigma_w1 = float(_model_kwargs(idata).get("sigma_w1", 1.0))
    ov = W1 @ w
    cos = ov / np.maximum(np.linalg.norm(W1, axis=-1), 1e-300)
    thr = 3.0 * math.sqrt(sigma_w1)
    n_spec = np.sum(np.abs(ov) > thr, axis=-1)
    return FirstLayerOverlaps(ov, cos, thr, n_spec, float(n_spec.mean()), W1.shape[-2] * SPECIALIST_PRIOR_FRACTION,
                              float(np.mean(ov**2)))


@dataclass(frozen=True)
class SecondLayerOverlaps:
    """Overlaps of second-layer preactivations with the target and the linear feature on test inputs.

    r3, r1 : (chain, draw, neuron2) correlations corr_x(h²_k(x), He₃(w*·x)) and corr_x(h²_k(x), w*·x).
    q3, q1 : posterior means of the population averages ⟨r3²⟩_k and ⟨r1²⟩_k.
    max_r3 : posterior mean of max_k ``|r3|``.  n_test : test inputs used.
    """

    r3: np.ndarray
    r1: np.ndarray
    q3: float
    q1: float
    max_r3: float
    n_test: int


def second_layer_overlaps(idata, w_star, X_test=None, activation: str | None = None, max_test: int = 2000,
                          chunk: int = 64) -> SecondLayerOverlaps:
    """Correlations of h²_k(x) = W²_k φ(W¹x/√d)/√N1 with He₃(w*·x) and w*·x over the test inputs (default: the
    run's stored X_test, at most ``max_test`` of them); ``activation`` defaults to the run's."""
    post = azcompat.get_group(idata, "posterior")
    W1, W2 = _draws(post, "W1"), _draws(post, "W2")
    if X_test is None:
        X_test = np.asarray(azcompat.get_group(idata, "predictions_constant_data")["X_test"].values)
    X_test = np.asarray(X_test, dtype=float)[:max_test]
    act = activation or _model_kwargs(idata).get("activation", "erf")
    phi = np_activation(act)
    w = np.asarray(w_star, dtype=float).ravel()
    w = w / np.linalg.norm(w)
    z = X_test @ w
    t3 = he3(z)
    t3 = (t3 - t3.mean()) / t3.std()
    t1 = (z - z.mean()) / z.std()
    C, Dr, N2, N1 = W2.shape
    d = W1.shape[-1]
    W1f, W2f = W1.reshape(C * Dr, N1, d), W2.reshape(C * Dr, N2, N1)
    r3 = np.empty((C * Dr, N2))
    r1 = np.empty((C * Dr, N2))
    for s in range(0, C * Dr, chunk):
        h1 = np.einsum("bjd,nd->bjn", W1f[s:s + chunk], X_test) / math.sqrt(d)
        h2 = np.einsum("bkj,bjn->bkn", W2f[s:s + chunk], phi(h1)) / math.sqrt(N1)
        h2 = h2 - h2.mean(-1, keepdims=True)
        sd = np.maximum(h2.std(-1), 1e-300)
        r3[s:s + chunk] = (h2 @ t3) / len(z) / sd
        r1[s:s + chunk] = (h2 @ t1) / len(z) / sd
    r3, r1 = r3.reshape(C, Dr, N2), r1.reshape(C, Dr, N2)
    return SecondLayerOverlaps(r3, r1, float(np.mean(r3**2)), float(np.mean(r1**2)),
                               float(np.abs(r3).max(-1).mean()), int(len(z)))


# ------------------------------------------------------------------------------------------------ gated networks
def _spec_of(idata, spec):
    if spec is not None:
        return get_spec(spec)
    s = _model_kwargs(idata).get("spec")           # a dict (bnnzoo.inference.convert.parse_config)
    if s is None:
        raise ValueError("give spec= (the run's provenance does not record it)")
    return get_spec(s)


def pathway_maps(idata, spec=None, pathways=None, readout: str | None = None, edge_scale=None) -> dict:
    """End-to-end maps W_p = c_{q_D} W_{q_D} ⋯ c_{q_1} W_{q_1} per draw: {pathway name: (chain, draw, n_out, n_in)}.

    ``spec``, ``readout`` and ``edge_scale`` default to the run's (its provenance)."""
    spec = _spec_of(idata, spec)
    kw = _model_kwargs(idata)
    readout = readout or kw.get("readout", "standard")
    edge_scale = edge_scale if edge_scale is not None else kw.get("edge_scale")
    c = edge_scales(spec, readout, edge_scale)
    post = azcompat.get_group(idata, "posterior")
    M = {e: c[e] * _draws(post, f"W_{e}") for e in spec.edge_names}
    names = [p.name for p in spec.pathways] if pathways is None else list(pathways)
    return {n: pathway_map(spec, M, n) for n in names}


@dataclass(frozen=True)
class PathwaySpectrum:
    """One pathway's maps against its effective dataset.

    pathway : name.  n_active : training examples on which it is open.  depth : edges on the path.
    sv_data : singular values of Σʸˣ(p).  sv_ls : of the least-squares map Σʸˣ(p) Σˣ(p, p)⁺ (the gradient-descent
    endpoint of an isolated pathway).  sv_mean_map : of the posterior-mean map E[W_p].  sv_draws_mean / sv_draws_sd :
    mean and sd over draws of the per-draw singular values.  map_mean : E[W_p] (n_out, n_in).
    """

    pathway: str
    n_active: int
    depth: int
    sv_data: np.ndarray
    sv_ls: np.ndarray
    sv_mean_map: np.ndarray
    sv_draws_mean: np.ndarray
    sv_draws_sd: np.ndarray
    map_mean: np.ndarray = field(repr=False)


def pathway_spectra(idata, X=None, Y=None, spec=None, pathways=None) -> list[PathwaySpectrum]:
    """Singular values of every pathway's posterior map next to those of its effective dataset Σʸˣ(p) computed on
    the training data (X, Y; default the run's stored constant/observed data)."""
    spec = _spec_of(idata, spec)
    if X is None:
        X = np.asarray(azcompat.get_group(idata, "constant_data")["X"].values)
    if Y is None:
        Y = np.asarray(azcompat.get_group(idata, "observed_data")["y"].values)
    maps = pathway_maps(idata, spec, pathways)
    out = []
    for name, Wp in maps.items():
        eff = effective_dataset(spec, X, Y, name)
        k = min(Wp.shape[-2:])
        sv_d = np.linalg.svd(Wp, compute_uv=False)
        mean_map = Wp.mean(axis=(0, 1))
        out.append(PathwaySpectrum(name, eff.n_active, spec.pathway(name).depth, eff.sv[:k],
                                   np.linalg.svd(eff.ls_map, compute_uv=False)[:k],
                                   np.linalg.svd(mean_map, compute_uv=False), sv_d.mean(axis=(0, 1)),
                                   sv_d.std(axis=(0, 1)), mean_map))
    return out


@dataclass(frozen=True)
class PathwayGeneralization:
    """Test performance of one pathway (examples of the test set on which it is open).

    pathway : name.  n_test : test examples on it.  trained : whether it was open on any training example.
    mse : mean squared error of the posterior-mean predictor on its output node.  baseline : ⟨y²⟩ there (the error of
    predicting 0).  alignment : A_f of the mean predictor on those outputs.
    """

    pathway: str
    n_test: int
    trained: bool
    mse: float
    baseline: float
    alignment: float


def pathway_generalization(idata, spec=None) -> list[PathwayGeneralization]:
    """Per-pathway test error and alignment of the posterior-mean predictor (the routing task's test set holds the
    untrained pathways: this is generalization to untrained pathways)."""
    spec = _spec_of(idata, spec)
    if "predictions" not in azcompat.group_names(idata):
        raise ValueError("no predictions group: sample on a task with a test set")
    f = np.asarray(azcompat.get_group(idata, "predictions")["f"].values).mean(axis=(0, 1))
    pc = azcompat.get_group(idata, "predictions_constant_data")
    Xt, Yt = np.asarray(pc["X_test"].values), np.asarray(pc["y_test"].values)
    Xtr = np.asarray(azcompat.get_group(idata, "constant_data")["X"].values)
    out = []
    for p in spec.pathways:
        g = spec.pathway_gate(Xt, p) > 0
        if not g.any():
            continue
        sl = spec.output_slices[p.output]
        yy, ff = Yt[g][:, sl], f[g][:, sl]
        base = float(np.mean(yy**2))
        out.append(PathwayGeneralization(p.name, int(g.sum()), bool((spec.pathway_gate(Xtr, p) > 0).any()),
                                         float(np.mean((ff - yy) ** 2)), base,
                                         float(np.sum(ff * yy) / np.sum(yy * yy)) if base > 0 else float("nan")))
    return out
