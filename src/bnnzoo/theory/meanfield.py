"""Single-neuron mean field of a one-hidden-layer network with any φ on the orthogonal toy task (docs/theory.md §5)
[derived].

Each hidden neuron is an independent problem p(a, h) ∝ N(a | 0, σ_a² I) N(h | 0, σ_w² K0) exp(aᵀ Λ h).  With orthogonal
inputs (K0 = κ I, κ = xᵀx/N0, 1 on the toy task) and class-symmetric Λ (column λ_c ∈ ℝᵐ for every point of class c)
the preactivations h_μ are independent and the readout marginal is

    p(a) ∝ N(a | 0, σ_a² I) Π_c M(λ_cᵀ a)^{P_c},     M(s) = E_{h∼N(0, σ_w² κ)} exp(s φ(h)),

with m1 = d log M/ds the mean activation of a point of class c given a, and m2 = dm1/ds its variance.  λ solves the
m·C self-consistency equations (rescaled temperature T; T = 0 is the paper's interpolation limit)

    E_a[a m1(λ_cᵀ a)] = y_c − T λ_c     for every class c   (F = Yᵀ − T Λ),

with y_c ∈ ℝᵐ the target vector of class c.  M is a 1-D Gauss–Hermite integral (closed forms for linear and ReLU), the
a-average an m-dimensional trapezoid grid whose box is found from the density itself (log p within ``log_range`` of its
maximum) and whose resolution is checked by re-solving on a 1.5× finer grid (``grid_change``).

Branches are the local maxima a_γ of p(a), each with the probability mass P_γ of its basin of attraction (steepest
ascent on the grid).  A neuron on branch γ has mean activation m1(λ_cᵀ a_γ) on class c; its binary code has bit c set
when that exceeds the prior mean activation m1(0) (½ for the sigmoid, 0 for linear).

Units: a is the readout weight itself (non-lazy readout f = (1/N) Σ_i a_i φ(z_i)); no rescaling.  On the paper's toy
task (P = 40, sigmoid, y+ = 1, y− = ½, σ_a² = 1/P) this gives the branches quoted in docs/theory.md §5 directly.

ReLU: M(s) ≈ e^{s²σ²/2} for s → ∞, so p(a) is not normalisable once Σ_c P_c σ² (λ_cᵀ a)² outgrows ``|a|²/σ_a²`` along some
direction: the neurons that would sit there are the O(√N) outliers, which the single-neuron picture does not describe.
The result then says so (``normalizable = False``, ``status``) instead of returning a density.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np
import xarray as xr
from scipy import optimize, special

from ._common import as_xy, default_sigma_a2, json_attrs

__all__ = ["MeanFieldResult", "single_neuron_meanfield", "single_neuron_meanfield_classes", "activation_moments",
           "readout_marginal"]

_SQRT_PI_2 = np.sqrt(np.pi) / 2


def _phi(nonlinearity):
    if callable(nonlinearity):
        return nonlinearity
    if nonlinearity == "linear":
        return lambda h: h
    if nonlinearity == "sigmoid":
        return lambda h: 0.5 * (1 + special.erf(_SQRT_PI_2 * h))
    if nonlinearity == "relu":
        return lambda h: np.maximum(h, 0.0)
    raise ValueError(f"unknown nonlinearity {nonlinearity!r}: use 'linear', 'sigmoid', 'relu' or a callable")


@lru_cache(maxsize=8)
def _hermite(n: int):
    x, w = np.polynomial.hermite_e.hermegauss(n)  # weight e^{-x²/2}
    return x, np.log(w / np.sqrt(2 * np.pi))


def activation_moments(s, nonlinearity="sigmoid", var: float = 1.0, n_hermite: int = 101):
    """log M(s), m1(s) = E_s[φ(h)], m2(s) = Var_s[φ(h)] under the tilted law ∝ N(h | 0, var) e^{s φ(h)}.

    Linear: log M = s² var/2, m1 = s var, m2 = var.  ReLU: M = ½ + e^{s² var/2} Φ(s √var) (closed forms).
    Otherwise Gauss–Hermite with ``n_hermite`` nodes (accurate for bounded φ).
    """
    s = np.asarray(s, dtype=float)
    if nonlinearity == "linear":
        return 0.5 * var * s**2, var * s, np.full_like(s, var)
    if nonlinearity == "relu":
        sd = np.sqrt(var)
        u = s * sd
        # M = ½ + e^{u²/2} Φ(u);  E[φ e^{sφ}] = sd e^{u²/2} [u Φ(u) + ϕ(u)];
        # E[φ² e^{sφ}] = var e^{u²/2} [(1 + u²) Φ(u) + u ϕ(u)]
        logPhi = special.log_ndtr(u)
        logpos = 0.5 * u**2 + logPhi
        logM = np.logaddexp(np.log(0.5), logpos)
        mills = np.exp(-0.5 * u**2 - 0.5 * np.log(2 * np.pi) - logPhi)  # ϕ(u)/Φ(u)
        frac = np.exp(logpos - logM)  # e^{u²/2}Φ(u)/M
        m1 = sd * frac * (u + mills)
        e2 = var * frac * (1 + u**2 + u * mills)
        return logM, m1, e2 - m1**2
    phi = _phi(nonlinearity)
    x, lw = _hermite(int(n_hermite))
    f = phi(np.sqrt(var) * x)
    e = s[..., None] * f + lw
    logM = special.logsumexp(e, axis=-1)
    p = np.exp(e - logM[..., None])
    m1 = p @ f
    m2 = np.maximum(p @ f**2 - m1**2, 0.0)
    return logM, m1, m2


@dataclass(frozen=True)
class MeanFieldResult:
    """Single-neuron mean field on the orthogonal toy task (see module docstring).  Index conventions: ``c`` is a data
    class (dim "data_class"), ``r`` a readout output (dim "class"); on classification tasks both run over the m classes.

    Attributes
    ----------
    lam : (C, m) λ_c, the conjugate field of class c (the columns of docs/theory.md's Λ).
    U : (m, m) E[a aᵀ] per neuron (compare with a sampler's aᵀa/N).
    F : (C, m) E[a m1(λ_cᵀ a)] — the posterior-mean output on class c (= targets at T = 0).
    activation_mean : (C,) population mean activation E_a[m1(λ_cᵀ a)] on class c.
    feature_kernel : (C, C) E_a[m1(λ_cᵀa) m1(λ_c'ᵀa)], the posterior-averaged kernel E[φ(h_μ)φ(h_ν)] for μ ≠ ν in
        classes c, c'; feature_kernel_diag : (C,) E[φ(h_μ)²] on class c.
    grid : (G,) the grid axis, the same for each of the m readout coordinates.
    density : (G,)*m p(a) on the grid, normalised so that density.sum() * dx**m = 1.
    marginals : (m, G) 1-D marginal densities p(a_r).
    branch_mass is summed over whole grid cells of each basin: ±1e-3 at the default grid on the P = 40 sigmoid task
    (0.3232 / 0.3098 / 0.0571 at n_grid = 57 vs 0.3242 / 0.3098 / 0.0562 at 85); λ, U, F converge spectrally.
    branch_mode : (B, m) modes a_γ, sorted by decreasing mass.  branch_mean : (B, m) mean of a within the basin
        (what the time average of a neuron frozen in branch γ estimates).  branch_mass : (B,) P_γ.
    branch_activation : (B, C) m1(λ_cᵀ a_γ).   branch_code : tuple of B strings ("011", ...), bit c = activation on
        class c above the prior mean activation.   unassigned_mass : mass in basins below ``min_mass``.
    residual : max ``|E[a m1] + Tλ − y|`` at the solution.  grid_change : max ``|residual|`` / max ``|y|`` of the same λ on a
        1.5× finer grid (grid-convergence check; NaN if not run).
    normalizable : False when p(a) is not normalisable (ReLU outliers) — then the fields above are NaN/empty.
    status : "ok", or an explanation of why the single-neuron bulk picture failed.
    class_sizes, targets, nonlinearity, temperature, sigma_a2, sigma_w2 : the inputs.
    """

    lam: np.ndarray
    U: np.ndarray
    F: np.ndarray
    activation_mean: np.ndarray
    feature_kernel: np.ndarray
    feature_kernel_diag: np.ndarray
    grid: np.ndarray
    density: np.ndarray
    marginals: np.ndarray
    branch_mode: np.ndarray
    branch_mean: np.ndarray
    branch_mass: np.ndarray
    branch_activation: np.ndarray
    branch_code: tuple
    unassigned_mass: float
    residual: float
    grid_change: float
    normalizable: bool
    status: str
    class_sizes: np.ndarray
    targets: np.ndarray
    nonlinearity: str
    temperature: float
    sigma_a2: float
    sigma_w2: float

    @property
    def m(self) -> int:
        return self.targets.shape[1]

    def marginal(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """(grid, density) of the readout weight a_r, for overlaying on a histogram of sampled a[:, r]."""
        return self.grid, self.marginals[r]

    def to_dataset(self):
        """``xarray.Dataset``: dims class, class2, data_class, data_class2, branch, a (grid) and a0..a{m-1} for p(a)."""
        m = self.m
        adims = tuple(f"a{r}" for r in range(m))
        data = {
            "lam": (("data_class", "class"), self.lam),
            "U": (("class", "class2"), self.U),
            "F": (("data_class", "class"), self.F),
            "activation_mean": (("data_class",), self.activation_mean),
            "feature_kernel": (("data_class", "data_class2"), self.feature_kernel),
            "feature_kernel_diag": (("data_class",), self.feature_kernel_diag),
            "density": (adims, self.density),
            "marginals": (("class", "a"), self.marginals),
            "branch_mode": (("branch", "class"), self.branch_mode),
            "branch_mean": (("branch", "class"), self.branch_mean),
            "branch_mass": (("branch",), self.branch_mass),
            "branch_activation": (("branch", "data_class"), self.branch_activation),
            "branch_code": (("branch",), np.array(self.branch_code, dtype=str)),
            "class_sizes": (("data_class",), self.class_sizes),
            "targets": (("data_class", "class"), self.targets),
        }
        coords = {"a": self.grid, **{d: self.grid for d in adims}}
        return xr.Dataset(data, coords=coords, attrs=json_attrs(
            theory="single_neuron_meanfield", tag="derived", nonlinearity=self.nonlinearity,
            temperature=self.temperature, sigma_a2=self.sigma_a2, sigma_w2=self.sigma_w2,
            residual=self.residual, grid_change=self.grid_change, unassigned_mass=self.unassigned_mass,
            normalizable=self.normalizable, status=self.status))


class _Table:
    """log M, m1, m2 tabulated on a uniform s grid for fast grid averages: cubic Hermite interpolation for log M and
    m1 (their derivatives m1 and m2 are known, error O(h⁴)), linear for m2 (used only in the Jacobian)."""

    def __init__(self, nonlinearity, var, smax, n=24001):
        self.s0, self.h, self.n = -smax, 2 * smax / (n - 1), n
        s = np.linspace(-smax, smax, n)
        self.logM, self.m1, self.m2 = activation_moments(s, nonlinearity, var)
        self.nl, self.var, self.smax = nonlinearity, var, smax

    def __call__(self, s):
        s = np.asarray(s, dtype=float)
        outside = np.abs(s) >= self.smax
        if outside.any():  # outside the table: exact evaluation of those points only
            res = [np.asarray(v, dtype=float).copy() for v in self._interp(np.where(outside, 0.0, s))]
            exact = activation_moments(s[outside], self.nl, self.var)
            for r, e in zip(res, exact):
                r[outside] = e
            return tuple(res)
        return self._interp(s)

    def _interp(self, s):
        u = (s - self.s0) / self.h
        i = np.minimum(u.astype(np.intp), self.n - 2)
        t = u - i
        t2, t3 = t * t, t * t * t
        h00, h10, h01, h11 = 2 * t3 - 3 * t2 + 1, t3 - 2 * t2 + t, -2 * t3 + 3 * t2, t3 - t2
        h, L, M1, M2 = self.h, self.logM, self.m1, self.m2
        logM = h00 * L[i] + h10 * h * M1[i] + h01 * L[i + 1] + h11 * h * M1[i + 1]
        m1 = h00 * M1[i] + h10 * h * M2[i] + h01 * M1[i + 1] + h11 * h * M2[i + 1]
        m2 = M2[i] + (M2[i + 1] - M2[i]) * t
        return logM, m1, m2


class _NotNormalizable(Exception):
    pass


def _cube(lo, hi, n, m):
    g = np.linspace(lo, hi, n)
    A = np.stack(np.meshgrid(*([g] * m), indexing="ij"), axis=-1).reshape(-1, m)
    return g, A


def _logp(A, lam, sizes, sa2, moments):
    lp = -0.5 * np.sum(A**2, axis=1) / sa2
    S = A @ lam.T  # (G, C)
    out = []
    for c in range(lam.shape[0]):
        lM, m1, m2 = moments(S[:, c])
        lp = lp + sizes[c] * lM
        out.append((m1, m2))
    return lp, out


def _find_box(lam, sizes, sa2, moments, m, log_range, n_coarse=25, r_max_factor=60.0):
    """Smallest cube [lo, hi]^m containing {log p > max − log_range}, by expanding / shrinking a coarse grid."""
    sd = np.sqrt(sa2)
    lo, hi = -8 * sd, 8 * sd
    r_max = r_max_factor * sd * (1 + np.sqrt(sa2) * np.sum(sizes * np.linalg.norm(lam, axis=1)))
    for _ in range(60):
        g, A = _cube(lo, hi, n_coarse, m)
        lp, _ = _logp(A, lam, sizes, sa2, moments)
        keep = lp > lp.max() - log_range
        if not np.all(np.isfinite(lp)):
            raise _NotNormalizable("log p(a) overflows on the grid")
        idx = np.argwhere(keep.reshape((n_coarse,) * m))
        dx = g[1] - g[0]
        touches_lo = np.any(idx == 0)
        touches_hi = np.any(idx == n_coarse - 1)
        if not (touches_lo or touches_hi):
            new_lo = g[idx.min()] - 2 * dx
            new_hi = g[idx.max()] + 2 * dx
            return new_lo, new_hi
        width = hi - lo
        if touches_lo:
            lo -= width
        if touches_hi:
            hi += width
        if max(-lo, hi) > r_max:
            raise _NotNormalizable(f"the density still grows at |a| = {max(-lo, hi):.3g} (grid limit {r_max:.3g})")
    raise _NotNormalizable("could not bracket the support of p(a)")


def _averages(A, lam, sizes, sa2, moments, T, targets, want_jac=True):
    """Residual E[a m1(λ_cᵀa)] + Tλ_c − y_c (C, m), its Jacobian, and the normalised weights on the grid."""
    lp, mom = _logp(A, lam, sizes, sa2, moments)
    w = np.exp(lp - lp.max())
    w /= w.sum()
    C, m = lam.shape
    G = np.concatenate([A * mom[c][0][:, None] for c in range(C)], axis=1)  # (grid, C·m): a_r m1(s_c)
    EG = w @ G
    R = EG.reshape(C, m) + T * lam - targets
    if not want_jac:
        return R, None, w, mom
    J = np.zeros((C * m, C * m))
    cov = (G * w[:, None]).T @ G - np.outer(EG, EG)
    for c in range(C):
        blk = slice(c * m, (c + 1) * m)
        J[blk, blk] += (A * (w * mom[c][1])[:, None]).T @ A + T * np.eye(m)
    for c2 in range(C):
        J[:, c2 * m:(c2 + 1) * m] += sizes[c2] * cov[:, c2 * m:(c2 + 1) * m]
    return R, J, w, mom


def _solve_on_grid(lam0, A, sizes, sa2, moments, T, targets):
    C, m = lam0.shape

    def fun(x):
        R, J, _, _ = _averages(A, x.reshape(C, m), sizes, sa2, moments, T, targets)
        return R.ravel(), J

    sol = optimize.root(fun, lam0.ravel(), jac=True, method="hybr", options={"xtol": 1e-12})
    lam = sol.x.reshape(C, m)
    R, _, _, _ = _averages(A, lam, sizes, sa2, moments, T, targets, want_jac=False)
    return lam, float(np.max(np.abs(R)))


def _basins(lp, n, m, floor):
    """Steepest-ascent basins on the grid: (labels per grid point, indices of the local maxima)."""
    shape = (n,) * m
    L = lp.reshape(shape)
    G = L.size
    best = np.arange(G).reshape(shape)
    bestv = L.copy()
    offsets = np.stack(np.meshgrid(*([np.arange(-1, 2)] * m), indexing="ij"), -1).reshape(-1, m)
    idx = np.arange(G).reshape(shape)
    for off in offsets:
        if not off.any():
            continue
        src = tuple(slice(max(0, -o), n - max(0, o)) for o in off)  # points that have this neighbour
        dst = tuple(slice(max(0, o), n - max(0, -o)) for o in off)  # the neighbour
        nv = L[dst]
        better = nv > bestv[src]
        bv = bestv[src]
        bi = best[src]
        bv[better] = nv[better]
        bi[better] = idx[dst][better]
        bestv[src] = bv
        best[src] = bi
    ptr = best.ravel()
    for _ in range(4 * n * m):
        nxt = ptr[ptr]
        if np.array_equal(nxt, ptr):
            break
        ptr = nxt
    peaks = np.unique(ptr)
    peaks = peaks[lp[peaks] > floor]
    return ptr, peaks


def single_neuron_meanfield_classes(
    targets,
    class_sizes,
    *,
    nonlinearity: str | Callable = "sigmoid",
    temperature: float = 0.0,
    sigma_a2: float,
    sigma_w2: float = 1.0,
    input_norm: float = 1.0,
    n_grid: int | None = None,
    log_range: float = 30.0,
    min_mass: float = 1e-3,
    lam0=None,
    tol: float = 1e-9,
    check_grid: bool = True,
    n_continuation: int = 12,
) -> MeanFieldResult:
    """Solve the single-neuron mean field for C classes of orthogonal inputs (see module docstring).

    Parameters
    ----------
    targets : (C, m) target vector y_c of each class.      class_sizes : (C,) number of points P_c per class.
    nonlinearity : "linear", "sigmoid", "relu", or a callable φ (vectorised NumPy).
    temperature : rescaled T (0 = interpolation limit).     sigma_a2, sigma_w2 : prior variances.
    input_norm : κ = xᵀx/N0 of every input (preactivation prior variance σ_w² κ).
    n_grid : grid points per readout coordinate (default 121 for m = 1, 81 for m = 2, 57 for m = 3).
    log_range : the grid box covers log p > max − log_range.       min_mass : smallest reported branch.
    lam0 : optional (C, m) starting λ; default: continuation over ``n_continuation`` temperatures from large T
        (λ ≈ y/T, unique solution) down to ``temperature`` on a coarse grid, then the full grid.
    tol : required max ``|residual|``.
    check_grid : evaluate the residual of the solution on a 1.5× finer grid (``grid_change``, relative to max ``|y|``).
    """
    targets = np.atleast_2d(np.asarray(targets, dtype=float))
    sizes = np.asarray(class_sizes, dtype=float)
    C, m = targets.shape
    if sizes.shape != (C,):
        raise ValueError(f"class_sizes must have shape ({C},), got {sizes.shape}")
    if m > 3:
        raise NotImplementedError("the grid average supports m <= 3 outputs")
    name = nonlinearity if isinstance(nonlinearity, str) else getattr(nonlinearity, "__name__", "callable")
    _phi(nonlinearity)  # validates the name
    T, sa2 = float(temperature), float(sigma_a2)
    var = float(sigma_w2) * float(input_norm)
    n = int(n_grid) if n_grid is not None else {1: 121, 2: 81, 3: 57}[m]
    # s = λᵀa stays well inside this table for normalisable problems; larger |s| falls back to exact evaluation
    table = _Table(nonlinearity, var, smax=60.0)

    def nan_result(status):
        nanC = np.full((C, m), np.nan)
        return MeanFieldResult(
            lam=nanC, U=np.full((m, m), np.nan), F=nanC, activation_mean=np.full(C, np.nan),
            feature_kernel=np.full((C, C), np.nan), feature_kernel_diag=np.full(C, np.nan), grid=np.zeros(0),
            density=np.zeros((0,) * m), marginals=np.zeros((m, 0)), branch_mode=np.zeros((0, m)),
            branch_mean=np.zeros((0, m)),
            branch_mass=np.zeros(0), branch_activation=np.zeros((0, C)), branch_code=(), unassigned_mass=np.nan,
            residual=np.nan, grid_change=np.nan, normalizable=False, status=status, class_sizes=sizes,
            targets=targets, nonlinearity=name, temperature=T, sigma_a2=sa2, sigma_w2=float(sigma_w2))

    def solve_at(lam_start, T_, n_):
        lam, box = lam_start, None
        for _ in range(6):  # alternate: box from the current λ, then λ on that fixed grid, until the box settles
            lo, hi = _find_box(lam, sizes, sa2, table, m, log_range)
            g, A = _cube(lo, hi, n_, m)
            lam, res = _solve_on_grid(lam, A, sizes, sa2, table, T_, targets)
            if box is not None and abs(lo - box[0]) + abs(hi - box[1]) < 0.05 * (hi - lo):
                break
            box = (lo, hi)
        return lam, res, g, A

    T_ok = None  # lowest temperature at which a normalisable solution was found
    try:
        if lam0 is not None:
            lam = np.asarray(lam0, dtype=float).reshape(C, m)
        else:
            # continuation from high T, where λ ≈ y/T is small and the solution unique, down to T
            T_hi = 10.0 * (1.0 + np.max(np.abs(targets)) * np.sum(sizes) * sa2)
            lam = targets / T_hi
            for T_ in np.geomspace(T_hi, max(T, 1e-5 * T_hi), n_continuation):
                lam, res, g, A = solve_at(lam, T_, max(21, n // 3))
                T_ok = T_
        lam, res, g, A = solve_at(lam, T, n)
    except _NotNormalizable as exc:
        where = "" if T_ok is None else f"; along the continuation in T a bulk solution exists down to T = {T_ok:.3g}"
        return nan_result(f"p(a) is not normalisable ({exc}){where}. The task is then carried by outlier neurons with "
                          f"O(sqrt(N)) readout weights, which are outside the single-neuron picture")
    if not res <= tol:
        return nan_result(f"no solution of the self-consistency equations (residual {res:.3g} > tol {tol:.3g})")

    grid_change = np.nan
    if check_grid:  # residual of the solution on a 1.5× finer grid of the same box, relative to the targets
        _, A_f = _cube(g[0], g[-1], int(1.5 * n), m)
        R_f = _averages(A_f, lam, sizes, sa2, table, T, targets, want_jac=False)[0]
        grid_change = float(np.max(np.abs(R_f)) / max(np.max(np.abs(targets)), 1e-300))

    # ---- observables on the final grid
    R, _, w, mom = _averages(A, lam, sizes, sa2, table, T, targets, want_jac=False)
    dx = g[1] - g[0]
    density = (w / dx**m).reshape((n,) * m)
    U = (A * w[:, None]).T @ A
    F = np.array([w @ (A * mom[c][0][:, None]) for c in range(C)])
    M1 = np.stack([mom[c][0] for c in range(C)], axis=1)  # (G, C)
    M2 = np.stack([mom[c][1] for c in range(C)], axis=1)
    act = w @ M1
    Kc = (M1 * w[:, None]).T @ M1
    Kdiag = w @ (M1**2 + M2)
    marg = np.array([density.sum(axis=tuple(k for k in range(m) if k != r)) * dx ** (m - 1) for r in range(m)])

    # ---- branches: basins of the local maxima of p(a)
    lp, _ = _logp(A, lam, sizes, sa2, table)
    ptr, peaks = _basins(lp, n, m, lp.max() - log_range)
    def neg_logp(a):  # exact (untabulated) −log p(a) and its gradient a/σ_a² − Σ_c P_c m1(λ_cᵀa) λ_c
        lM, m1, _ = activation_moments(lam @ a, nonlinearity, var)
        return 0.5 * a @ a / sa2 - sizes @ lM, a / sa2 - (sizes * m1) @ lam

    modes, masses, means = [], [], []
    for pk in peaks:
        inb = ptr == pk
        masses.append(float(w[inb].sum()))
        means.append(w[inb] @ A[inb] / max(masses[-1], 1e-300))
        modes.append(optimize.minimize(neg_logp, A[pk], jac=True, method="BFGS", options={"gtol": 1e-10}).x)
    order = np.argsort(masses)[::-1]
    modes = np.array(modes)[order].reshape(-1, m)
    means = np.array(means)[order].reshape(-1, m)
    masses = np.array(masses)[order]
    keep = masses >= min_mass
    unassigned = float(masses[~keep].sum())
    modes, masses, means = modes[keep], masses[keep], means[keep]
    base = activation_moments(np.zeros(1), nonlinearity, var)[1][0]
    b_act = np.array([activation_moments(modes @ lam[c], nonlinearity, var)[1] for c in range(C)]).T.reshape(-1, C)
    codes = tuple("".join("1" if v > base else "0" for v in row) for row in b_act)
    return MeanFieldResult(
        lam=lam, U=U, F=F, activation_mean=act, feature_kernel=Kc, feature_kernel_diag=Kdiag, grid=g,
        density=density, marginals=marg, branch_mode=modes, branch_mean=means, branch_mass=masses,
        branch_activation=b_act,
        branch_code=codes, unassigned_mass=unassigned, residual=float(np.max(np.abs(R))), grid_change=grid_change,
        normalizable=True, status="ok", class_sizes=sizes, targets=targets, nonlinearity=name, temperature=T,
        sigma_a2=sa2, sigma_w2=float(sigma_w2))


def single_neuron_meanfield(X, Y=None, *, nonlinearity="sigmoid", temperature: float = 0.0,
                            sigma_a2: float | None = None, sigma_w2: float = 1.0, labels=None,
                            orthogonality_tol: float = 1e-8, **kwargs) -> MeanFieldResult:
    """Single-neuron mean field for a data set with orthogonal inputs of equal norm (the toy task).

    ``X, Y`` arrays or a Task.  Classes are the groups of points with the same target row (or ``labels`` / the Task's
    labels), in order of first appearance.  ``sigma_a2`` defaults to the paper's rule (sigmoid 1/P, linear/ReLU 1/P).
    Remaining keywords go to :func:`single_neuron_meanfield_classes`.
    """
    if Y is None and hasattr(X, "labels") and labels is None:
        labels = X.labels
    X, Y = as_xy(X, Y)
    P, N0 = X.shape
    K0 = X @ X.T / N0
    kappa = float(np.mean(np.diag(K0)))
    if np.max(np.abs(K0 - kappa * np.eye(P))) > orthogonality_tol * max(kappa, 1.0):
        raise ValueError("single_neuron_meanfield needs mutually orthogonal inputs of equal norm (K0 = κ I); "
                         f"max |K0 − κI| = {np.max(np.abs(K0 - kappa * np.eye(P))):.3g}")
    if labels is None:
        _, first, labels = np.unique(Y, axis=0, return_index=True, return_inverse=True)
        labels = np.argsort(np.argsort(first))[labels.ravel()]
    labels = np.asarray(labels).astype(int)
    classes = np.unique(labels)
    targets = np.array([Y[labels == c][0] for c in classes])
    for c in classes:
        if not np.allclose(Y[labels == c], targets[list(classes).index(c)]):
            raise ValueError(f"points of class {c} have different targets: Λ would not be class-symmetric")
    sizes = np.array([np.sum(labels == c) for c in classes])
    nl = nonlinearity if isinstance(nonlinearity, str) else "linear"
    sa2 = default_sigma_a2(P, 1, nl if nl in ("linear", "sigmoid", "relu") else "linear") if sigma_a2 is None \
        else float(sigma_a2)
    return single_neuron_meanfield_classes(targets, sizes, nonlinearity=nonlinearity, temperature=temperature,
                                           sigma_a2=sa2, sigma_w2=sigma_w2, input_norm=kappa, **kwargs)


def readout_marginal(result: MeanFieldResult, r: int | None = None):
    """The predicted readout density for overlaying on sampled histograms: (grid, p(a_r)) for output ``r``, or
    (grid, (m, G) marginals of every output) when ``r`` is None.  Empty arrays when p(a) is not normalisable."""
    return (result.grid, result.marginals) if r is None else result.marginal(r)
