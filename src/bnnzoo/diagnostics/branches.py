"""Readout branches and ReLU outliers.

**Branches.**  When ergodicity is broken the single-neuron readout posterior splits into disconnected branches
(docs/theory.md §3, §5): the branches are the modes a_γ of the readout density p(a) — the law of one unit's readout
vector at one draw — and their masses P_γ the probabilities of the modes' basins.  :func:`readout_branches` estimates
p(a) from the readout vectors of every unit at every draw (a unit is a neuron of one chain; chains are independent
networks, so their units are pooled; at most ``MAX_POINTS`` of them, drawn at random) with a Gaussian mixture whose
number of components k = 1..k_max is chosen by the Bayesian information criterion (BIC, full covariances), and counts
the modes of that mixture density: from each component's mean it climbs the density by the mean-shift fixed point of
a Gaussian mixture (Carreira-Perpiñán, IEEE TPAMI 22, 1318 (2000)), and components whose climbs end at one point lie
in one basin, one branch.  A branch that is not Gaussian (skewed, or curved) needs several components but has one
mode, so the count is the theory's and not the mixture's (BIC alone split the sigmoidal net's code-011 branch over
two components, one of them the time averages of units that hop between 011 and 111); a Gaussian readout posterior
(linear, ergodic) gives one branch.  Each unit belongs to the branch in which most of its draws lie (up to
``DRAWS_PER_UNIT`` draws, evenly spaced); the silhouette score of the units' time-averaged readouts under that
partition is reported next to it.  Masses are fractions of units, with the binomial standard error √(p(1 − p)/n).

**Outliers (sparse ReLU code).**  A few neurons carry readout weights and preactivations of order √N against a bulk
of order 1.  A unit's scale is the root-mean-square over draws of its readout norm |a_i| (and, separately, of its
preactivations over draws and training points).  With the bulk scale s = median over units, a unit is an outlier
when its scale exceeds s·N^{1/4} — the geometric midpoint between the bulk (s) and the outlier scale (s·√N), so
the criterion sits a factor N^{1/4} (≈ 3.2 at N = 100) from both populations and does not depend on σ_a².  A unit
counts as an outlier when both its readout and its preactivations pass (the sparse-code picture needs both); the
two separate counts are reported.  Each outlier's class is the largest component of its mean readout vector.
Outliers are excluded before the branches of the bulk are clustered.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

from .._record import Record, array_field
from ._data import run_data
from .codes import unit_modal_codes

__all__ = ["BranchResult", "OutlierResult", "readout_branches", "find_outliers", "cluster_bic", "mixture_modes",
           "MAX_POINTS", "DRAWS_PER_UNIT"]

MAX_POINTS = 5000
"""At most this many readout vectors (unit, draw) estimate the readout density (a random subset, fixed seed)."""
DRAWS_PER_UNIT = 20
"""A unit's branch is the one most of up to this many of its draws (evenly spaced) fall in."""


@dataclass(frozen=True, repr=False)
class OutlierResult(Record):
    """Outlier neurons (readout and preactivations of order √N against an O(1) bulk).

    n_outliers : number of units flagged by both criteria, over all chains; per_chain : the counts per chain.
    n_readout, n_preactivation : counts by each criterion alone.
    threshold_factor : N^{1/4}, the multiple of the bulk scale above which a unit is an outlier.
    bulk_readout, bulk_preactivation : bulk scales (medians).
    classes : tuple with each outlier's dominant class (per chain: see ``outlier_class``).
    one_per_class : every chain has exactly one outlier for each class.
    one_per_class_per_chain : tuple, for each chain, whether it has exactly one outlier for each class.
    readout_scale, preact_scale : (unit,) scales of every unit.   is_outlier : (unit,) the flags.
    outlier_chain, outlier_neuron, outlier_class : (outlier,) where the outliers are and their class.
    outlier_readout : (outlier, class) their mean readout vectors.
    """

    n_outliers: int
    per_chain: tuple
    n_readout: int
    n_preactivation: int
    threshold_factor: float
    bulk_readout: float
    bulk_preactivation: float
    classes: tuple
    one_per_class: bool
    one_per_class_per_chain: tuple
    readout_scale: np.ndarray = array_field("unit")
    preact_scale: np.ndarray = array_field("unit")
    is_outlier: np.ndarray = array_field("unit")
    outlier_chain: np.ndarray = array_field("outlier")
    outlier_neuron: np.ndarray = array_field("outlier")
    outlier_class: np.ndarray = array_field("outlier")
    outlier_readout: np.ndarray = array_field("outlier", "class")

    def summary(self) -> list[str]:
        if not self.n_outliers:
            return [f"no outliers (largest readout scale {np.max(self.readout_scale) / self.bulk_readout:.1f}× bulk, "
                    f"threshold {self.threshold_factor:.2f}×)"]
        ratio = np.median(self.readout_scale[self.is_outlier.astype(bool)]) / self.bulk_readout
        return [f"{self.n_outliers} outliers (per chain {list(self.per_chain)}), classes {list(self.classes)}"
                f"{' — one per class' if self.one_per_class else ''}; readout scale {ratio:.1f}× bulk "
                f"(√N = {np.sqrt(len(self.readout_scale) / max(len(self.per_chain), 1)):.0f}), "
                f"by readout alone {self.n_readout}, by preactivation alone {self.n_preactivation}"]


@dataclass(frozen=True, repr=False)
class BranchResult(Record):
    """Branches of the readout posterior.

    n_branches : number of modes of the readout density (module docstring).   k_tried : the mixture sizes k tried.
    silhouette : score of the units' time averages under the branch partition (NaN for one branch).
    n_units : units clustered (outliers excluded).
    codes : tuple with each branch's majority code (feature layer; "" when not computed).
    centres : (branch, class) mean of the units' time-averaged readouts.   masses, mass_se : (branch,) fractions
    of units and their binomial standard errors.   spreads : (branch,) RMS distance of the branch's units from
    its centre.   jitter : (branch,) RMS temporal fluctuation of a unit's readout around its own mean.
    bic : (k,) BIC for each k tried.   labels : (unit,) branch of each unit (−1 = outlier).
    unit_chain, unit_neuron : (unit,) which chain and neuron each unit is.
    outliers : the :class:`OutlierResult`.
    n_components : the mixture's components chosen by BIC (≥ n_branches; 0 in reports stored before it existed).
    modes : (branch, class) the modes a_γ of the estimated readout density (None in reports stored before it).
    """

    n_branches: int
    k_tried: tuple
    silhouette: float
    n_units: int
    codes: tuple
    centres: np.ndarray = array_field("branch", "class")
    masses: np.ndarray = array_field("branch")
    mass_se: np.ndarray = array_field("branch")
    spreads: np.ndarray = array_field("branch")
    jitter: np.ndarray = array_field("branch")
    bic: np.ndarray = array_field("k")
    labels: np.ndarray = array_field("unit")
    unit_chain: np.ndarray = array_field("unit")
    unit_neuron: np.ndarray = array_field("unit")
    outliers: OutlierResult | None = None
    n_components: int = 0
    modes: np.ndarray = array_field("branch", "class", default=None)

    def summary(self) -> list[str]:
        lines = [f"{self.n_branches} branch{'es' if self.n_branches != 1 else ''}: modes of the readout density "
                 f"(a {self.n_components}-component mixture by BIC, k tried {min(self.k_tried)}..{max(self.k_tried)}; "
                 f"silhouette {self.silhouette:.2f}, {self.n_units} units)"]
        for b in range(self.n_branches):
            c = ", ".join(f"{v:+.2f}" for v in self.centres[b])
            code = f" code {self.codes[b]}" if self.codes and self.codes[b] else ""
            mode = f"mode ({', '.join(f'{v:+.2f}' for v in self.modes[b])}), " if self.modes is not None else ""
            lines.append(f"  branch {b}: {mode}centre ({c}) mass {self.masses[b]:.3f} ± {self.mass_se[b]:.3f}, "
                         f"spread {self.spreads[b]:.2f}, jitter {self.jitter[b]:.2f}{code}")
        if self.outliers is not None:
            lines += self.outliers.summary()
        return lines


def cluster_bic(points: np.ndarray, k_max: int = 8, seed: int = 0, n_init: int = 2, patience: int = 2):
    """Gaussian-mixture clustering of ``points`` (n, d) with k chosen by BIC (full covariances).

    k runs from 1 up to ``k_max`` and stops once BIC has risen for ``patience`` consecutive k past its minimum.
    Returns (k, labels (n,), bic per k tried, ks tried, silhouette).  Components are ordered by decreasing size.
    """
    x = np.asarray(points, float)
    n = x.shape[0]
    xs, _, _ = _standardise(x)
    gm, bics, ks = _bic_mixture(xs, k_max, seed, n_init, patience)
    k = gm.n_components
    lab = gm.predict(xs)
    # relabel by decreasing size, drop empty components
    sizes = np.bincount(lab, minlength=k)
    order = [c for c in np.argsort(-sizes, kind="stable") if sizes[c] > 0]
    remap = {c: i for i, c in enumerate(order)}
    lab = np.array([remap[c] for c in lab])
    k = len(order)
    sil = float("nan")
    if 1 < k < n:
        sil = _silhouette(xs, lab)
    return k, lab, np.array(bics), tuple(ks), sil


def _standardise(x: np.ndarray):
    """(x − mean) / scale with one scale for every coordinate (their mean standard deviation): (xs, mean, scale)."""
    mu = x.mean(0)
    scale = float(x.std(0).mean()) or 1.0
    return (x - mu) / scale, mu, scale


def _silhouette(xs: np.ndarray, labels: np.ndarray, sample_size: int | None = None, seed: int = 0) -> float:
    """scikit-learn's silhouette score of the partition ``labels`` (n,) of ``xs`` (n, d), over a random subset of
    ``sample_size`` points when given (its cost grows as n²)."""
    # scikit-learn kept off `import bnnzoo` (docs/contract.md, Imports)
    from sklearn.metrics import silhouette_score

    return float(silhouette_score(xs, labels, sample_size=sample_size, random_state=seed))


def _bic_mixture(xs: np.ndarray, k_max: int, seed: int, n_init: int, patience: int):
    """The full-covariance Gaussian mixture of ``xs`` (n, d) with k in 1..k_max chosen by BIC (:func:`cluster_bic`):
    (the fitted ``GaussianMixture``, BIC per k tried, ks tried)."""
    # scikit-learn kept off `import bnnzoo` (docs/contract.md, Imports)
    from sklearn.mixture import GaussianMixture

    n, d = xs.shape
    # each full-covariance component needs more points than parameters to be estimable
    per_comp = d + d * (d + 1) / 2 + 1
    ks = list(range(1, max(1, min(k_max, int(n // max(per_comp, 2)))) + 1))

    bics, models = [], []
    # tiny problems: BLAS/OpenMP threads only add overhead (20× slower on a loaded 2-core machine)
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")
        for k in ks:
            gm = GaussianMixture(k, covariance_type="full", n_init=n_init, random_state=seed, reg_covar=1e-6)
            gm.fit(xs)
            bics.append(gm.bic(xs))
            models.append(gm)
            # stop once BIC has risen for `patience` consecutive k past its minimum
            if len(bics) - 1 - int(np.argmin(bics)) >= patience:
                break
    return models[int(np.argmin(bics))], np.array(bics), tuple(ks[:len(bics)])


def mixture_modes(weights: np.ndarray, means: np.ndarray, precisions: np.ndarray, tol: float = 1e-9,
                  max_iter: int = 10000) -> tuple[np.ndarray, np.ndarray]:
    """The modes of a Gaussian-mixture density and the basin of each component.

    From each component's mean the density p(x) = Σ_k w_k N(x | μ_k, Σ_k) is climbed by the fixed point
    x ← (Σ_k r_k(x) Σ_k⁻¹)⁻¹ Σ_k r_k(x) Σ_k⁻¹ μ_k, r_k(x) ∝ w_k N(x | μ_k, Σ_k) (Carreira-Perpiñán, IEEE TPAMI 22,
    1318 (2000)), which raises p at every step and stops at a mode.  Climbs that end within 1e-4 · (the smallest
    component standard deviation) of each other end at one mode.

    Parameters
    ----------
    weights : ndarray, shape (k,)
        Mixture weights w_k.
    means : ndarray, shape (k, d)
        Component means μ_k.
    precisions : ndarray, shape (k, d, d)
        Component precision matrices Σ_k⁻¹.
    tol : float
        A climb stops when no coordinate moves by more than ``tol`` times the smallest component standard deviation.
    max_iter : int
        At most this many steps per climb.

    Returns
    -------
    modes : ndarray, shape (B, d)
        The modes, ordered by the mixture weight of their basins (largest first).
    basin : ndarray, shape (k,)
        The mode (index into ``modes``) each component's mean climbs to.
    """
    w, mu, prec = np.asarray(weights, float), np.asarray(means, float), np.asarray(precisions, float)
    k, d = mu.shape
    sd = float(np.sqrt(np.min(1.0 / np.linalg.eigvalsh(prec))))     # smallest component standard deviation
    logdet = np.linalg.slogdet(prec)[1]
    pm = np.einsum("kij,kj->ki", prec, mu)
    x = mu.copy()
    for _ in range(max_iter):
        dev = x[:, None, :] - mu[None]                                # (start, k, d)
        logr = np.log(w) + 0.5 * logdet - 0.5 * np.einsum("skd,kde,ske->sk", dev, prec, dev)
        r = np.exp(logr - logr.max(1, keepdims=True))
        r /= r.sum(1, keepdims=True)
        new = np.linalg.solve(np.einsum("sk,kde->sde", r, prec), np.einsum("sk,kd->sd", r, pm)[..., None])[..., 0]
        step = float(np.max(np.abs(new - x)))
        x = new
        if step <= tol * sd:
            break
    basin = np.full(k, -1)
    ends: list[np.ndarray] = []
    for i in range(k):
        near = [j for j, e in enumerate(ends) if np.max(np.abs(x[i] - e)) <= 1e-4 * sd]
        basin[i] = near[0] if near else len(ends)
        if not near:
            ends.append(x[i])
    mass = np.bincount(basin, weights=w, minlength=len(ends))
    order = np.argsort(-mass, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return np.array(ends)[order].reshape(-1, d), rank[basin]


def find_outliers(a: np.ndarray, z: np.ndarray | None = None, factor: float | None = None, *,
                  unit_msq: np.ndarray | None = None) -> OutlierResult:
    """Outlier units from readouts ``a`` (chain, draw, neuron, class) and feature-layer preactivations ``z``
    (chain, draw, neuron, point), or instead of z their mean square over the points ``unit_msq`` (chain, draw,
    neuron) — see the module docstring for the criterion."""
    a = np.asarray(a, float)
    C, D, N, m = a.shape
    factor = float(N ** 0.25) if factor is None else float(factor)
    rs = np.sqrt(np.mean(np.sum(a**2, -1), axis=1)).reshape(-1)  # (C*N,)
    bulk_r = float(np.median(rs))
    out_r = rs > factor * bulk_r
    if z is not None or unit_msq is not None:
        msq = np.mean(np.asarray(z, float) ** 2, axis=-1) if unit_msq is None else np.asarray(unit_msq, float)
        zs = np.sqrt(np.mean(msq, axis=1)).reshape(-1)
        bulk_z = float(np.median(zs))
        out_z = zs > factor * bulk_z
    else:
        zs, bulk_z, out_z = np.full_like(rs, np.nan), float("nan"), out_r
    flag = out_r & out_z
    idx = np.flatnonzero(flag)
    ch, ne = idx // N, idx % N
    abar = a.mean(1)  # (C, N, m)
    ro = abar[ch, ne] if len(idx) else np.zeros((0, m))
    cls = np.argmax(ro, axis=1) if len(idx) else np.zeros(0, int)
    per_chain = tuple(int(np.sum(ch == c)) for c in range(C))
    per_chain_ok = tuple(bool(sorted(cls[ch == c].tolist()) == list(range(m))) for c in range(C))
    return OutlierResult(
        n_outliers=int(len(idx)), per_chain=per_chain, n_readout=int(out_r.sum()), n_preactivation=int(out_z.sum()),
        threshold_factor=factor, bulk_readout=bulk_r, bulk_preactivation=bulk_z,
        classes=tuple(int(c) for c in cls), one_per_class=all(per_chain_ok),
        one_per_class_per_chain=per_chain_ok, readout_scale=rs, preact_scale=zs,
        is_outlier=flag.astype(np.int8), outlier_chain=ch.astype(int), outlier_neuron=ne.astype(int),
        outlier_class=cls.astype(int), outlier_readout=ro)


def readout_branches(idata, k_max: int = 8, seed: int = 0, codes: np.ndarray | None = None,
                     detect_outliers: bool = True) -> BranchResult:
    """The readout branches: the modes of the readout density, after removing outliers (module docstring).

    Parameters
    ----------
    idata : a run (or :class:`~bnnzoo.diagnostics._data.RunData`), or a readout array of shape
        (chain, draw, neuron, class).
    k_max : int
        Largest mixture size tried.
    seed : int
        Seeds the subset of readout vectors and the mixture fits.
    codes : ndarray of str, shape (chain, neuron), optional
        The units' code strings (feature layer), to name each branch by its majority code; computed from the run
        when it is one.
    detect_outliers : bool
        Leave out the outlier units (:func:`find_outliers`) before the branches of the bulk are found.

    Returns
    -------
    BranchResult
    """
    if isinstance(idata, np.ndarray):
        a, rd = np.asarray(idata, float), None
    else:
        rd = run_data(idata)
        a = rd.a
    C, D, N, m = a.shape
    outl = None
    keep = np.ones(C * N, bool)
    if detect_outliers:
        outl = find_outliers(a, unit_msq=rd.unit_msq(rd.depth) if rd is not None else None)
        keep = ~outl.is_outlier.astype(bool)
    abar = a.mean(1).reshape(C * N, m)
    units = np.flatnonzero(keep)
    n = len(units)
    # the readout density from the readout vectors of the kept units at every draw (a random subset)
    r = np.random.default_rng(seed)
    flat = r.choice(n * D, size=min(n * D, MAX_POINTS), replace=False)
    u, t = units[flat // D], flat % D
    pts = a[u // N, t, u % N]
    xs, mu, scale = _standardise(pts)
    gm, bic, ks = _bic_mixture(xs, k_max, seed, n_init=2, patience=2)
    modes_s, basin = mixture_modes(gm.weights_, gm.means_, gm.precisions_)
    # each unit's branch: the basin most of its (evenly spaced) draws fall in
    draws = np.unique(np.linspace(0, D - 1, min(D, DRAWS_PER_UNIT)).astype(int))
    au = a[:, draws].transpose(0, 2, 1, 3).reshape(C * N, len(draws), m)[units]
    lab_d = basin[gm.predict(((au - mu) / scale).reshape(-1, m))].reshape(n, len(draws))
    votes = np.stack([(lab_d == b).sum(1) for b in range(len(modes_s))], 1)
    lab = votes.argmax(1)
    # branches no unit chose (a mode of the density that no unit spends most of its time in) are dropped
    used = np.flatnonzero(np.bincount(lab, minlength=len(modes_s)))
    lab = np.searchsorted(used, lab)
    modes = modes_s[used] * scale + mu
    k = len(used)
    sil = float("nan")
    if 1 < k < n:
        xa, _, _ = _standardise(abar[units])
        sil = _silhouette(xa, lab, sample_size=min(n, 2000), seed=seed)
    labels = np.full(C * N, -1)
    labels[units] = lab
    if codes is None and rd is not None:
        codes = unit_modal_codes(rd, rd.depth)
    dev = a - abar.reshape(C, 1, N, m)          # each unit's deviation from its time average, squared in place
    jit_u = np.sqrt(np.mean(np.sum(np.square(dev, out=dev), -1), axis=1)).reshape(-1)
    centres, masses, spreads, jitter, bcodes = [], [], [], [], []
    for b in range(k):
        sel = labels == b
        cen = abar[sel].mean(0)
        centres.append(cen)
        masses.append(sel.sum() / n)
        spreads.append(float(np.sqrt(np.mean(np.sum((abar[sel] - cen) ** 2, -1)))))
        jitter.append(float(np.sqrt(np.mean(jit_u[sel] ** 2))))
        if codes is not None:
            cs = np.asarray(codes).reshape(-1)[sel]
            vals, cnt = np.unique(cs, return_counts=True)
            bcodes.append(str(vals[np.argmax(cnt)]))
    masses = np.array(masses)
    return BranchResult(
        n_branches=int(k), k_tried=ks, silhouette=sil, n_units=int(n), codes=tuple(bcodes),
        centres=np.array(centres).reshape(k, m), masses=masses, mass_se=np.sqrt(masses * (1 - masses) / max(n, 1)),
        spreads=np.array(spreads), jitter=np.array(jitter), bic=bic, labels=labels,
        unit_chain=np.repeat(np.arange(C), N), unit_neuron=np.tile(np.arange(N), C), outliers=outl,
        n_components=int(gm.n_components), modes=modes.reshape(k, m))
