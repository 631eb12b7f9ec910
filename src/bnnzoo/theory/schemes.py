"""Coding schemes of the one-hidden-layer sigmoidal net on the toy task, from the single-neuron mean field
(theory page §5): every self-consistent solution at one (P, y−, T), the free energy of populations frozen in a subset
of the branches, the law of one code's fraction at N units, and where a code appears or vanishes as y− changes.

The mean-field action S(λ) of the toy task (:class:`MeanFieldAction`) is evaluated on a fixed grid of readout
weights, where it is exactly convex; :func:`find_solutions` minimises it from many starts (random ones, the
neighbouring solutions and their class-permuted copies) and polishes each distinct minimum with
:func:`bnnzoo.theory.single_neuron_meanfield_classes`; :func:`action_checks` tests the action against central
differences, the library's self-consistency residual and the linear net's closed form.  ``reproduce/ym_sweep.py``
runs these over y− and compares them with samples.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy import special

from .meanfield import (_averages, _basins, _cube, _logp, _Table, activation_moments,
                        single_neuron_meanfield_classes)

__all__ = ["toy_classes", "MeanFieldAction", "mass_per_code", "scheme_name", "find_solutions", "action_checks",
           "branch_masks", "partial_schemes", "fraction_law", "scheme_change"]


def toy_classes(P: int, y_neg: float, y_pos: float = 1.0):
    """(targets (C, m), class sizes (C,)) of the toy task with class ratios ½ ¼ ¼ (docs/theory.md §2)."""
    sizes = np.array([P - 2 * (P // 4), P // 4, P // 4])
    Y = np.full((3, 3), float(y_neg))
    np.fill_diagonal(Y, float(y_pos))
    return Y, sizes


_FAR = {}


def _far_table(nonlinearity):
    """A coarse table of log M, m1, m2 for s up to ±5000 (step 0.05), shared by all actions."""

    if nonlinearity not in _FAR:
        _FAR[nonlinearity] = _Table(nonlinearity, 1.0, smax=5000.0, n=200001)
    return _FAR[nonlinearity]


class MeanFieldAction:
    """The mean-field action S(λ) of the toy task on a fixed grid of readout weights a ∈ [lo, hi]^m.

    Parameters
    ----------
    targets : (C, m) y_c.       sizes : (C,) P_c.       sigma_a2 : prior variance of a.      T : rescaled temperature.
    lo, hi, n : the grid box and points per axis.    mask : optional (n**m,) bool, the grid points z is integrated
    over (a subset of basins); default all.      nonlinearity : as in :func:`bnnzoo.theory.activation_moments`.

    On the grid, log z is the log of a finite sum of exponentials of functions linear in λ, so S stays exactly convex
    there; its minimum equals the continuum one when the box holds the density (``edge_mass`` says how much sits on
    the box's faces).
    """

    def __init__(self, targets, sizes, sigma_a2, T, lo, hi, n, mask=None, nonlinearity="sigmoid"):

        self.Y, self.P = np.asarray(targets, float), np.asarray(sizes, float)
        self.C, self.m = self.Y.shape
        self.T, self.sa2 = float(T), float(sigma_a2)
        self.g, A = _cube(lo, hi, n, self.m)
        self.dx = self.g[1] - self.g[0]
        self.log_prior = (-0.5 * np.sum(A**2, 1) / self.sa2 - 0.5 * self.m * np.log(2 * np.pi * self.sa2)
                          + self.m * np.log(self.dx))
        self.mask = np.ones(len(A), bool) if mask is None else np.asarray(mask, bool)
        self.A = A
        self.table = _Table(nonlinearity, 1.0, smax=60.0)
        self.far = _far_table(nonlinearity)
        edge = np.any((A == self.g[0]) | (A == self.g[-1]), axis=1)
        self._edge = edge

    def _lp(self, lam):
        """(K, G) log integrand of z and the moments m1, m2 (K, G, C) for a batch of λ (K, C, m)."""
        s = np.einsum("gm,kcm->kgc", self.A, lam)
        near = np.abs(s) < self.table.smax
        if near.all():
            logM, m1, m2 = self.table(s)
        else:  # random starts reach |s| far beyond the fine table: a coarser table there, not per-point quadrature
            fine = self.table._interp(np.where(near, s, 0.0))
            coarse = self.far(s)
            logM, m1, m2 = (np.where(near, f, c) for f, c in zip(fine, coarse))
        lp = self.log_prior[None] + logM @ self.P
        lp = np.where(self.mask[None], lp, -np.inf)
        return lp, m1, m2

    def value(self, lam):
        """S(λ) for a batch (K, C, m) → (K,)."""
        lam = np.asarray(lam, float)
        lp, _, _ = self._lp(lam)
        quad = 0.5 * self.T * np.einsum("c,kcm->k", self.P, lam**2) - np.einsum("c,cm,kcm->k", self.P, self.Y, lam)
        return quad + special.logsumexp(lp, axis=1)

    def full(self, lam):
        """S (K,), gradient (K, C·m) and Hessian (K, C·m, C·m) for a batch of λ (K, C, m)."""
        lam = np.asarray(lam, float)
        K, C, m = lam.shape
        lp, m1, m2 = self._lp(lam)
        logz = special.logsumexp(lp, axis=1)
        w = np.exp(lp - logz[:, None])  # (K, G)
        quad = 0.5 * self.T * np.einsum("c,kcm->k", self.P, lam**2) - np.einsum("c,cm,kcm->k", self.P, self.Y, lam)
        Gf = (m1[..., :, None] * self.A[None, :, None, :]).reshape(K, -1, C * m)  # a_r m1(s_c), (K, G, C·m)
        EG = np.einsum("kg,kgi->ki", w, Gf)
        resid = EG.reshape(K, C, m) + self.T * lam - self.Y[None]
        grad = (self.P[None, :, None] * resid).reshape(K, C * m)
        cov = np.matmul((Gf * w[:, :, None]).transpose(0, 2, 1), Gf) - EG[:, :, None] * EG[:, None, :]
        Pv = np.repeat(self.P, m)
        H = Pv[None, :, None] * Pv[None, None, :] * cov
        for c in range(C):
            blk = slice(c * m, (c + 1) * m)
            H[:, blk, blk] += self.P[c] * (np.matmul((w * m2[:, :, c])[:, None, :] * self.A.T[None], self.A)
                                           + self.T * np.eye(m)[None])
        return quad + logz, grad, H, resid

    def edge_mass(self, lam):
        """(K,) probability mass of p(a) on the faces of the box (should be ≈ 0)."""
        lp, _, _ = self._lp(np.asarray(lam, float))
        w = np.exp(lp - special.logsumexp(lp, axis=1)[:, None])
        return w[:, self._edge].sum(1)

    def minimise(self, lam0, tol=1e-9, max_iter=200):
        """Damped Newton (Armijo backtracking on S) from every start of a batch (K, C, m) at once.

        Returns (λ (K, C, m), max \\|residual\\| (K,), S (K,), iterations (K,)).  The residual is the self-consistency
        residual E[a m1] + Tλ − y (= gradient / P_c)."""
        lam = np.array(lam0, float)
        K = lam.shape[0]
        it = np.zeros(K, int)
        active = np.ones(K, bool)
        S = np.full(K, np.nan)
        res = np.full(K, np.inf)
        for _ in range(max_iter):
            idx = np.flatnonzero(active)
            if idx.size == 0:
                break
            S_a, g, H, R = self.full(lam[idx])
            S[idx] = S_a
            res[idx] = np.max(np.abs(R), axis=(1, 2))
            done = res[idx] < tol
            active[idx[done]] = False
            idx, S_a, g, H = idx[~done], S_a[~done], g[~done], H[~done]
            if idx.size == 0:
                break
            it[idx] += 1
            scale = np.sqrt(np.einsum("kii->ki", H)) + 1e-300  # Jacobi scaling for a well-conditioned solve
            Hs = H / scale[:, :, None] / scale[:, None, :]
            step = -np.linalg.solve(Hs + 1e-12 * np.eye(Hs.shape[-1])[None], (g / scale)[..., None])[..., 0] / scale
            slope = np.einsum("ki,ki->k", g, step)
            t = np.ones(len(idx))
            ok = np.zeros(len(idx), bool)
            for _ls in range(40):
                trial = lam[idx] + (t[:, None] * step).reshape(lam[idx].shape)
                S_t = self.value(trial)
                good = (S_t <= S_a + 1e-4 * t * slope) | (np.abs(S_t - S_a) < 1e-13 * (1 + np.abs(S_a)))
                newly = good & ~ok
                lam[idx[newly]] = trial[newly]
                ok |= good
                if ok.all():
                    break
                t = np.where(ok, t, 0.5 * t)
            stuck = ~ok
            active[idx[stuck]] = False  # no decrease along the Newton direction: report the residual as it is
        return lam, res, S, it


# ---------------------------------------------------------------------------------------------------------------------
# part 1: the mean-field search
# ---------------------------------------------------------------------------------------------------------------------
def mass_per_code(codes, masses):
    """{code: total mass} of a solution's branches, from ``branch_code`` and ``branch_mass`` (a flat top can be split
    into two basins of the same code; their masses are summed)."""
    out = {}
    for c, m in zip(codes, masses):
        out[c] = out.get(c, 0.0) + float(m)
    return out


def scheme_name(mass_by_code, floor):
    return "/".join(sorted(c for c, v in mass_by_code.items() if v >= floor))


def _starts(prev_sols, rng, n_random, scale):
    """Starting λ's: random, the neighbours' solutions and every class-permuted copy of them (other assignments of the
    coding roles), and λ = 0."""
    starts = [np.zeros((3, 3))]
    for lam in prev_sols:  # the solution itself and its copies with the classes (rows and outputs) relabelled
        for pc in itertools.permutations(range(3)):
            starts.append(lam[np.ix_(pc, pc)])
    starts += list(rng.normal(0.0, scale, size=(n_random, 3, 3)))
    starts += list(rng.uniform(-2 * scale, 2 * scale, size=(n_random, 3, 3)))
    return np.array(starts)


def _dedupe(lams, tol):
    reps = []
    for lam in lams:
        if not any(np.max(np.abs(lam - r)) < tol * (1 + np.max(np.abs(r))) for r in reps):
            reps.append(lam)
    return reps


def find_solutions(P, y_neg, T, prev_sols, rng, n_random, n_grid, box, min_mass=1e-6):
    """All self-consistent λ at one (P, y−, T): multi-start Newton on S, deduplicated, each polished by the library
    solver.  Returns a dict (JSON-ready) with the starts, the distinct solutions, their branches and free energies."""

    Y, sizes = toy_classes(P, y_neg)
    sa2 = 1.0 / P
    act = MeanFieldAction(Y, sizes, sa2, T, box[0], box[1], n_grid)
    scale = max(5.0, max((np.max(np.abs(s)) for s in prev_sols), default=5.0))
    starts = _starts(prev_sols, rng, n_random, scale)
    lam, res, S, iters = [], [], [], []
    for k in range(0, len(starts), 32):  # batches of 32 starts bound the memory of the Hessian sums
        out = act.minimise(starts[k:k + 32])
        for lst, v in zip((lam, res, S, iters), out):
            lst.extend(v)
    lam, res = np.array(lam), np.array(res)
    conv = res < 1e-7
    distinct = _dedupe(lam[conv], 1e-4)
    sols = []
    for lam_c in distinct:
        r = single_neuron_meanfield_classes(Y, sizes, nonlinearity="sigmoid", temperature=T, sigma_a2=sa2,
                                            lam0=lam_c, min_mass=min_mass)
        fine = MeanFieldAction(Y, sizes, sa2, T, r.grid[0], r.grid[-1], len(r.grid))
        S_fine = float(fine.value(r.lam[None])[0])
        sols.append(dict(lam=r.lam.tolist(), residual=r.residual, grid_change=r.grid_change,
                         edge_mass=float(fine.edge_mass(r.lam[None])[0]),
                         free_energy=-S_fine, codes=list(r.branch_code), masses=r.branch_mass.tolist(),
                         modes=np.round(r.branch_mode, 4).tolist(), means=np.round(r.branch_mean, 4).tolist(),
                         mass_by_code=mass_per_code(r.branch_code, r.branch_mass),
                         unassigned_mass=r.unassigned_mass, box=[float(r.grid[0]), float(r.grid[-1])]))
    # solutions that the polish merged (same λ to the library's tolerance) are one
    merged = []
    for s in sols:
        if not any(np.max(np.abs(np.array(s["lam"]) - np.array(t["lam"]))) < 1e-5 * (1 + np.max(np.abs(t["lam"])))
                   for t in merged):
            merged.append(s)
    spread = float(np.max(np.abs(lam[conv] - lam[conv][0]))) if conv.any() else float("nan")
    return dict(P=P, y_neg=float(y_neg), T=float(T), n_starts=len(starts), n_converged=int(conv.sum()),
                max_newton_iterations=int(np.max(iters)), start_box=[float(box[0]), float(box[1])],
                start_lambda_range=[float(starts.min()), float(starts.max())],
                spread_of_converged_lambda=spread, solutions=merged)


def action_checks(P=40, y_neg=0.5, T=0.01, seed=0, n_grid=41):
    """Numerical checks of the action: (1) its gradient by central differences against P_c × the library's
    self-consistency residual at random λ; (2) log z of the linear net against its closed form
    −½ log det(I − σ_a² Σ_c P_c λ_c λ_cᵀ); (3) the smallest Hessian eigenvalue at random λ (convexity)."""

    rng = np.random.default_rng(seed)
    Y, sizes = toy_classes(P, y_neg)
    sa2 = 1.0 / P
    act = MeanFieldAction(Y, sizes, sa2, T, -3.0, 4.0, n_grid)
    lam = rng.normal(0, 3, size=(4, 3, 3))
    _, g, H, _ = act.full(lam)
    h = 1e-5
    fd = np.zeros_like(g)
    for i in range(9):
        e = np.zeros(9)
        e[i] = h
        fd[:, i] = (act.value(lam + e.reshape(3, 3)) - act.value(lam - e.reshape(3, 3))) / (2 * h)
    table = _Table("sigmoid", 1.0, 60.0)
    lib = np.array([_averages(act.A, l, sizes.astype(float), sa2, table, T, Y, want_jac=False)[0] for l in lam])
    grad_vs_fd = float(np.max(np.abs(g - fd)) / np.max(np.abs(g)))
    grad_vs_lib = float(np.max(np.abs(g.reshape(-1, 3, 3) - sizes[None, :, None] * lib)) / np.max(np.abs(g)))
    # linear φ: log z closed form (needs σ_a² Σ P_c λ_c λ_cᵀ < I)
    lam_lin = rng.normal(0, 0.5, size=(3, 3, 3))
    top = np.linalg.eigvalsh(sa2 * np.einsum("c,kcm,kcn->kmn", sizes.astype(float), lam_lin, lam_lin))[:, -1]
    lam_lin *= np.sqrt(np.minimum(1.0, 0.5 / top))[:, None, None]  # keep p(a) normalisable and inside the box
    half = 8.0 * np.sqrt(2 * sa2)  # 8 standard deviations of the tilted Gaussian (variance ≤ 2 σ_a²)
    lin = MeanFieldAction(Y, sizes, sa2, 0.0, -half, half, int(1.5 * n_grid), nonlinearity="linear")
    lp, _, _ = lin._lp(lam_lin)
    logz_grid = special.logsumexp(lp, axis=1)
    Mq = np.einsum("c,kcm,kcn->kmn", sizes.astype(float), lam_lin, lam_lin)
    logz_exact = -0.5 * np.linalg.slogdet(np.eye(3)[None] - sa2 * Mq)[1]
    eig_min = float(np.min(np.linalg.eigvalsh(H)))
    return dict(P=P, y_neg=y_neg, T=T, gradient_vs_central_difference=grad_vs_fd,
                gradient_vs_library_residual=grad_vs_lib,
                linear_logz_grid=logz_grid.tolist(), linear_logz_exact=logz_exact.tolist(),
                linear_logz_max_error=float(np.max(np.abs(logz_grid - logz_exact))),
                hessian_min_eigenvalue=eig_min)


def _mix_minimise(acts, weights, lam0, tol=1e-9, max_iter=100):
    """Minimise Σ_i w_i S_i(λ) (Σ w_i = 1; each S_i an :class:`MeanFieldAction` on its own mask) by damped Newton from one
    start (C, m).  Returns (λ, minimum, the largest absolute residual)."""
    lam = np.array(lam0, float)[None]
    w = [float(x) for x in weights]

    def val(l):
        return sum(wi * a.value(l) for wi, a in zip(w, acts) if wi > 0)

    res = np.inf
    for _ in range(max_iter):
        parts = [a.full(lam) for wi, a in zip(w, acts) if wi > 0]
        ww = [wi for wi in w if wi > 0]
        S = sum(wi * p[0] for wi, p in zip(ww, parts))
        g = sum(wi * p[1] for wi, p in zip(ww, parts))
        H = sum(wi * p[2] for wi, p in zip(ww, parts))
        R = sum(wi * p[3] for wi, p in zip(ww, parts))
        res = float(np.max(np.abs(R)))
        if res < tol:
            break
        step = -np.linalg.solve(H[0], g[0])
        slope = float(g[0] @ step)
        t = 1.0
        for _ls in range(40):
            trial = lam + t * step.reshape(lam.shape)
            if val(trial)[0] <= S[0] + 1e-4 * t * slope:
                lam = trial
                break
            t *= 0.5
        else:
            break
    return lam[0], float(val(lam)[0]), res


def branch_masks(P, y_neg, T, n_grid=57):
    """The unconstrained solution (library result) and, on its grid, the basin of every branch as a boolean mask:
    ({code: mask}, result, (lo, hi, n))."""

    Y, sizes = toy_classes(P, y_neg)
    r = single_neuron_meanfield_classes(Y, sizes, nonlinearity="sigmoid", temperature=T, sigma_a2=1.0 / P,
                                        min_mass=1e-9, n_grid=n_grid)
    g, A = _cube(r.grid[0], r.grid[-1], len(r.grid), 3)
    lp, _ = _logp(A, r.lam, sizes.astype(float), 1.0 / P, _Table("sigmoid", 1.0, 60.0))
    ptr, peaks = _basins(lp, len(r.grid), 3, lp.max() - 30.0)
    base = 0.5

    masks = {}
    for pk in peaks:
        act = np.array([activation_moments(np.array([A[pk] @ r.lam[c]]), "sigmoid")[1][0] for c in range(3)])
        code = "".join("1" if v > base else "0" for v in act)
        masks[code] = masks.get(code, np.zeros(len(A), bool)) | (ptr == pk)
    return masks, r, (float(g[0]), float(g[-1]), len(g))


def partial_schemes(P, y_neg, T, n_grid=57):
    """Free energy of every population frozen in a subset B of the branches (codes) against the unconstrained one:
    list of {codes, delta_f, masses_within} (Δf per neuron in nats; basins fixed at the unconstrained solution)."""
    masks, r, (lo, hi, n) = branch_masks(P, y_neg, T, n_grid)
    Y, sizes = toy_classes(P, y_neg)
    full = MeanFieldAction(Y, sizes, 1.0 / P, T, lo, hi, n)
    f0 = -float(full.value(r.lam[None])[0])
    codes = sorted(masks)
    out = []
    for k in range(1, len(codes) + 1):
        for B in itertools.combinations(codes, k):
            mask = np.any([masks[c] for c in B], axis=0)
            act = MeanFieldAction(Y, sizes, 1.0 / P, T, lo, hi, n, mask=mask)
            lam, Smin, res = _mix_minimise([act], [1.0], r.lam)
            lp, _, _ = act._lp(lam[None])
            w = np.exp(lp[0] - special.logsumexp(lp[0]))
            within = {c: float(w[masks[c]].sum()) for c in B}
            out.append(dict(codes=list(B), delta_f=-Smin - f0, residual=res, masses_within=within,
                            self_consistent=bool(res < 1e-6)))
    return dict(P=P, y_neg=y_neg, T=T, f=f0, mass_by_code=mass_per_code(r.branch_code, r.branch_mass),
                schemes=sorted(out, key=lambda d: d["delta_f"]))


def fraction_law(P, y_neg, T, code, qs, N, n_grid=57):
    """Δf(q) = f(q) − f for a population with a fraction q of its neurons frozen on branch ``code`` (the rest free
    among the other branches): the equilibrium law of q at N neurons is P(q) ∝ exp(−N Δf(q)).  Returns a dict with
    q, Δf, the branch mass and KL(q ‖ mass), the value Δf would take if λ did not respond (Δf ≥ KL: the λ saddle
    is a minimum, so letting λ respond can only raise it)."""
    masks, r, (lo, hi, n) = branch_masks(P, y_neg, T, n_grid)
    if code not in masks:
        return dict(P=P, y_neg=y_neg, T=T, code=code, error=f"no branch with code {code} in the mean field")
    Y, sizes = toy_classes(P, y_neg)
    a_in = MeanFieldAction(Y, sizes, 1.0 / P, T, lo, hi, n, mask=masks[code])
    a_out = MeanFieldAction(Y, sizes, 1.0 / P, T, lo, hi, n, mask=~masks[code])
    full = MeanFieldAction(Y, sizes, 1.0 / P, T, lo, hi, n)
    f0 = -float(full.value(r.lam[None])[0])
    df, lam = [], r.lam
    for q in qs:
        H = -(special.xlogy(q, q) + special.xlogy(1 - q, 1 - q))
        lam, Smin, _ = _mix_minimise([a_in, a_out], [q, 1 - q], lam)
        df.append(-(Smin + H) - f0)
    mass = float(mass_per_code(r.branch_code, r.branch_mass).get(code, 0.0))
    kl = [float(special.xlogy(q, q / mass) + special.xlogy(1 - q, (1 - q) / (1 - mass))) for q in qs]
    return dict(P=P, y_neg=y_neg, T=T, code=code, N=N, q=list(map(float, qs)), delta_f=list(map(float, df)),
                mf_mass=mass, kl_fixed_lambda=kl)


def scheme_change(P, T, code, lo, hi, steps=5, floor=1e-3):
    """Bisection in y− ∈ [lo, hi] for where the mass of branch ``code`` crosses ``floor`` (library solver at each
    point).  Returns {P, T, code, y_neg, err, mass_lo, mass_hi}; when the mass is on the same side of ``floor`` at both
    ends, the bracket shrinks to ``hi`` and the masses say so."""
    def mass(y):
        Y, sizes = toy_classes(P, y)

        r = single_neuron_meanfield_classes(Y, sizes, nonlinearity="sigmoid", temperature=T, sigma_a2=1.0 / P,
                                            min_mass=1e-6, check_grid=False)
        return mass_per_code(r.branch_code, r.branch_mass).get(code, 0.0)

    m_lo, m_hi = mass(lo), mass(hi)
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        m_mid = mass(mid)
        if (m_mid >= floor) == (m_lo >= floor):
            lo, m_lo = mid, m_mid
        else:
            hi, m_hi = mid, m_mid
    return dict(P=P, T=T, code=code, y_neg=0.5 * (lo + hi), err=0.5 * (hi - lo), mass_lo=m_lo, mass_hi=m_hi)
