"""Per-unit diagnostics for any zoo entry: the layers of units it declares (:class:`bnnzoo.models.zoo.UnitLayer`),
read from the posterior as (chain, draw, unit, feature) trajectories.

A unit layer is a posterior site and the dim that indexes its units (three-layer hidden neurons ``h1`` / ``h2``,
attention heads, gated-network hidden nodes ``act_<node>``, readout vectors ``a``).  Every other dim of the site is
a feature of the unit:

* a site with a ``point`` dim holds the unit's values on the training inputs.  The features used for ergodicity,
  permutation symmetry and clustering are its values on a fixed subset of at most ``max_points`` training points
  (evenly spaced in the training order; the remaining dims, e.g. tokens, are flattened into the features; features
  that never move, such as a gated-off point, are dropped).  When the site has no other dim, the class means over
  all training points give the unit's code (:func:`~bnnzoo.diagnostics.codes.codes_from_preactivations`; one class
  on a regression task, so the code is one bit: positive on average or not).
  The site's values on the training points are also the layer's representation: its kernel, CKA with YYᵀ, D_LR and
  NC1 (:func:`representation_kernels`).
* any other site (weights, readout vectors) gives the flattened remaining dims as features.

Unit clustering (:func:`unit_clusters`) groups the units by their time-averaged features: a Gaussian mixture with
the number of components chosen by BIC (:func:`~bnnzoo.diagnostics.branches.cluster_bic`), on the leading
principal components (at most two) of the time averages, units of all chains pooled.  One cluster is what exchangeable
units with a unimodal single-unit marginal give; several clusters are branches or specialised units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._record import Record, array_field
from ._data import class_means, mean_se
from ._rundata import batches as _batches
from .branches import cluster_bic
from .codes import codes_from_preactivations
from .kernels import KernelResult, cka, d_lr, nc1

__all__ = ["UnitTrajectories", "unit_trajectories", "ClusterResult", "unit_clusters", "representation_kernels",
           "MAX_POINTS"]

MAX_POINTS = 16


@dataclass
class UnitTrajectories:
    """The units of one layer, read from a run.

    Attributes
    ----------
    name, site, dim : str
        From the :class:`~bnnzoo.models.zoo.UnitLayer`.
    features : ndarray, dims (chain, draw, unit, feature)
        What ergodicity, symmetry and clustering use.
    values : ndarray, dims (chain, draw, unit, point), or None
        The site's values on every training point, for the codes. None unless the site's dims are exactly
        (unit, point): a unit with several values per point, e.g. one attention weight per token, has no single sign
        per class.
    representation : ndarray, dims (chain, draw, unit·rest, point), or None
        The site as features of every training point, for kernels (None without a ``point`` dim).
    """

    name: str
    site: str
    dim: str
    features: np.ndarray
    values: np.ndarray | None = None
    representation: np.ndarray | None = None


def unit_trajectories(posterior, layer, max_points: int = MAX_POINTS) -> UnitTrajectories:
    """:class:`UnitTrajectories` of ``layer`` (a :class:`~bnnzoo.models.zoo.UnitLayer`) from the posterior group.

    Raises ValueError when the site is not in the posterior or has no dim ``layer.dim``.
    """
    if layer.site not in posterior:
        what = f": {layer.description}" if layer.description else ""
        raise ValueError(f"the posterior has no site {layer.site!r} (units {layer.name!r}{what}); record it when "
                         "sampling")
    da = posterior[layer.site]
    if layer.dim not in da.dims:
        raise ValueError(f"site {layer.site!r} has no dim {layer.dim!r} (units {layer.name!r}); its dims: "
                         f"{list(da.dims)}")
    rest = [d for d in da.dims if d not in ("chain", "draw", layer.dim)]
    if "point" in rest:
        others = [d for d in rest if d != "point"]
        arr = np.asarray(da.transpose("chain", "draw", layer.dim, *others, "point").values, dtype=float)
        C, D, U = arr.shape[:3]
        P = arr.shape[-1]
        flat = arr.reshape(C, D, U, -1, P)  # (C, D, U, R, P), R = product of the other dims
        idx = np.unique(np.linspace(0, P - 1, min(max_points, P)).astype(int))
        feats = _moving(flat[..., idx].reshape(C, D, U, -1))
        values = flat[:, :, :, 0] if flat.shape[3] == 1 else None
        rep = flat.reshape(C, D, -1, P)
        return UnitTrajectories(layer.name, layer.site, layer.dim, feats, values, rep)
    arr = np.asarray(da.transpose("chain", "draw", layer.dim, *rest).values, dtype=float)
    C, D, U = arr.shape[:3]
    return UnitTrajectories(layer.name, layer.site, layer.dim, _moving(arr.reshape(C, D, U, -1)))


def _moving(x: np.ndarray) -> np.ndarray:
    """The features of (chain, draw, unit, feature) that are not constant (e.g. a gated-off training point, where
    a unit is identically 0); they add nothing to the variances and have no R̂.  All of them if every one is."""
    keep = x.reshape(-1, x.shape[-1]).std(0) > 0
    return x[..., keep] if keep.any() else x


# ------------------------------------------------------------------------------------------------------ clustering
@dataclass(frozen=True, repr=False)
class ClusterResult(Record):
    """Clusters of the time-averaged features of one layer's units (module docstring).

    variable : the unit layer.   n_clusters : components chosen by BIC.   k_tried : the numbers of components tried.
    masses, mass_se : (cluster,) fraction of units per cluster and its binomial standard error.
    silhouette : of the chosen partition (NaN for one cluster).   n_units : units (all chains).
    n_components : principal components clustered.   explained : share of the variance of the time averages they hold.
    labels : (unit_all,) cluster of every unit (chain-major).
    """

    variable: str
    n_clusters: int
    k_tried: tuple
    silhouette: float
    n_units: int
    n_components: int
    explained: float
    masses: np.ndarray = array_field("cluster")
    mass_se: np.ndarray = array_field("cluster")
    labels: np.ndarray = array_field("unit_all")

    def summary(self) -> list[str]:
        ms = ", ".join(f"{m:.2f}" for m in self.masses)
        sil = "" if not np.isfinite(self.silhouette) else f", silhouette {self.silhouette:.2f}"
        return [f"{self.variable}: {self.n_clusters} unit cluster(s) by BIC (k tried {list(self.k_tried)}), masses "
                f"[{ms}]{sil} — {self.n_units} units, {self.n_components} principal component(s) holding "
                f"{100 * self.explained:.0f} % of the variance of the time averages"]


def unit_clusters(x: np.ndarray, variable: str = "x", max_components: int = 2, seed: int = 0) -> ClusterResult:
    """Gaussian-mixture clusters (k by BIC) of the units' time averages of ``x`` (chain, draw, unit, feature)."""
    x = np.asarray(x, float)
    if x.ndim == 3:
        x = x[..., None]
    C, D, U, F = x.shape
    pts = x.mean(1).reshape(C * U, F)
    pc = pts - pts.mean(0)
    _, s, vt = np.linalg.svd(pc, full_matrices=False)
    r = max(1, min(max_components, int(np.sum(s > 1e-10 * max(s.max(initial=0.0), 1e-300)))))
    proj = pc @ vt[:r].T
    tot = float(np.sum(s**2))
    explained = float(np.sum(s[:r] ** 2) / tot) if tot > 0 else 1.0
    if C * U >= 2 and tot > 0:
        k, lab, _, ks, sil = cluster_bic(proj, seed=seed)
    else:
        k, lab, ks, sil = 1, np.zeros(C * U, int), (1,), float("nan")
    n = C * U
    masses = np.bincount(lab, minlength=k)[:k] / n
    return ClusterResult(variable=variable, n_clusters=int(k), k_tried=tuple(int(v) for v in ks),
                         silhouette=float(sil), n_units=int(n), n_components=int(r), explained=explained,
                         masses=masses, mass_se=np.sqrt(masses * (1 - masses) / n), labels=np.asarray(lab))


# ------------------------------------------------------------------------------------------------------ kernels
def representation_kernels(layers: list[UnitTrajectories], X: np.ndarray, Y: np.ndarray, labels: np.ndarray,
                           f: np.ndarray | None = None, n_batches: int = 10, max_draws: int = 100):
    """Kernels and richness of the unit layers that have values on the training points, as a
    :class:`~bnnzoo.diagnostics.kernels.KernelResult` (one "layer" per such unit layer, in order).

    The representation of a layer is its site's values on the training points (preactivations, activities or
    attention weights — whatever the site holds), so ``K`` = ``K_pre`` = ⟨rᵀr⟩/n_features averaged over the
    posterior.  No prior kernel is known for a general site: ``K_prior``, ``learned_eigs``, ``learned_fraction``
    and ``lowrank_fraction`` are NaN.  CKA with YYᵀ (batch-means standard error), D_LR (against the sampled
    outputs ``f`` (chain, draw, point, class), when given) and NC1 per draw as in
    :func:`~bnnzoo.diagnostics.kernels.kernels_and_richness`.  Returns None when no layer has a ``point`` dim.
    """
    reps = [t for t in layers if t.representation is not None]
    if not reps:
        return None
    P, m = Y.shape
    target = Y @ Y.T
    K0 = X @ X.T / X.shape[1]
    y_rank = max(int(np.linalg.matrix_rank(Y - Y.mean(0))), 1)
    Ks, tc, tc_se, dl, dl_se, nc, nc_se = [], [], [], [], [], [], []
    for t in reps:
        r = t.representation  # (C, D, N, P)
        C, D, N, _ = r.shape
        bt = _batches(D, n_batches)
        Kb = np.array([[np.einsum("dnp,dnq->pq", r[c, a:b], r[c, a:b], optimize=True) / ((b - a) * N)
                        for a, b in bt] for c in range(C)]).reshape(-1, P, P)
        w = np.array([[b - a for a, b in bt] for _ in range(C)], float).reshape(-1)
        K = np.tensordot(w / w.sum(), Kb, 1)
        Ks.append(K)
        tcb = np.array([cka(k, target) for k in Kb])
        tc.append(cka(K, target))
        tc_se.append(float(tcb.std(ddof=1) / math.sqrt(len(tcb))) if len(tcb) > 1 else float("nan"))
        sub = np.unique(np.linspace(0, D - 1, min(max_draws, D)).astype(int))
        if f is not None:
            dv = np.array([[d_lr(r[c, s].T, f[c, s], rank=y_rank) for s in sub] for c in range(C)])
        else:
            dv = np.full((C, len(sub)), np.nan)
        nv = np.array([[nc1(r[c, s].T, labels) for s in sub] for c in range(C)]) if len(np.unique(labels)) > 1 \
            else np.full((C, len(sub)), np.nan)
        for vals, mu_l, se_l in ((dv, dl, dl_se), (nv, nc, nc_se)):
            mu, se = mean_se(vals) if np.all(np.isfinite(vals)) else (np.nanmean(vals) if np.isfinite(vals).any()
                                                                       else np.nan, np.nan)
            mu_l.append(float(mu))
            se_l.append(float(se))
    L = len(reps)
    nan = np.full(L, np.nan)
    names = ("input",) + tuple(t.name for t in reps) + ("target",)
    allk = [K0] + Ks + [target]
    cm = np.array([[cka(a, b) for b in allk] for a in allk])
    Ks = np.array(Ks)
    min_n = min(t.representation.shape[2] for t in reps)
    return KernelResult(kernel_names=names, d_lr_isotropic=float(1 - math.sqrt(y_rank / max(min_n, 1))),
                        n_batches=len(_batches(reps[0].representation.shape[1], n_batches)), prior_width=0,
                        K=Ks, K_pre=Ks, K_prior=np.full_like(Ks, np.nan), learned_eigs=np.full((L, 2 * m), np.nan),
                        learned_fraction=nan, lowrank_fraction=nan.copy(), target_cka=np.array(tc),
                        target_cka_se=np.array(tc_se), cka_matrix=cm, d_lr=np.array(dl), d_lr_se=np.array(dl_se),
                        nc1=np.array(nc), nc1_se=np.array(nc_se))


def codes_of(t: UnitTrajectories, labels: np.ndarray, m: int, index: int, activation: str = ""):
    """Codes of a unit layer with values on the training points (None otherwise)."""
    if t.values is None:
        return None
    return codes_from_preactivations(t.values, labels, m, layer=index, activation=activation,
                                     class_means_z=class_means(t.values, labels, m))
