"""The y− sweep of the sigmoidal one-hidden-layer net on the toy task (issue 22, item 3; docs/theory.md §2, §3, §5).

Three parts, each writing its own summary file under ``--out`` (default ``reproduce/results``) and re-rendering
``ym_sweep.md`` from whatever summaries exist:

``meanfield`` (``ym_sweep.meanfield.json``)
    The single-neuron mean field (docs/theory.md §5) at y+ = 1, y− ∈ [0.1, 0.5], classes ½ ¼ ¼, m = 3, σ_a² = 1/P,
    searched for *every* self-consistent λ at each y−: many starts (random, class-permuted copies of neighbouring
    solutions, the neighbours' solutions themselves), each minimised by damped Newton on the mean-field action S(λ)
    below, all starts at once on one fixed grid (vectorised), then deduplicated and polished by the library solver
    (:func:`bnnzoo.theory.single_neuron_meanfield_classes`), which gives each solution's branches (codes, masses).

    Free energy.  Writing the Gaussian likelihood exp(−(N/2T) Σ (y − f)²) as an integral over a conjugate field Λ
    (Hubbard–Stratonovich) makes the N neurons independent; with class-symmetric Λ (column λ_c for every point of class
    c) the log partition function per neuron is, at large N, the saddle point of

        S(λ) = (T/2) Σ_c P_c |λ_c|² − Σ_c P_c λ_cᵀ y_c + log z(λ),
        z(λ) = E_{a∼N(0, σ_a² I)} Π_c M(λ_cᵀ a)^{P_c},   M(s) = E_{h∼N(0,1)} e^{s φ(h)},

    and ∂S/∂λ_c = P_c (E_a[a m1(λ_cᵀ a)] + T λ_c − y_c): its stationary points are exactly the solutions of the
    self-consistency equations of docs/theory.md §5.  The free energy per neuron (nats, up to a constant common to
    all solutions at the same y−, T, P) is f = −S(λ*), and −N f is the log-probability weight of the solution, which
    is why f is the number to compare solutions by.  log z is a cumulant generating function of the variables
    a φ(h_μ) (a log-Laplace transform of a probability law), hence convex in λ, and S is strictly convex: the
    stationary point is the minimum of S and it is unique.  The search checks this rather than assuming it.

    Partial schemes.  A population whose neurons are frozen in a subset B of the branches (what a chain that never
    populated one branch during warm-up samples) has z_B(λ) = ∫_{basins in B} instead of z, and a population with a
    fraction q of its neurons frozen on branch γ has
        log Z(q)/N = min_λ [(T/2) Σ P_c|λ_c|² − Σ P_c λ_cᵀ y_c + q log z_γ + (1 − q) log z_rest] + H(q),
    H the binary entropy; the unconstrained solution is the maximum over q (q = the branch mass).  Both are
    reported: Δf_B = f_B − f and the equilibrium law of q, P(q) ∝ exp(−N Δf(q)) (basins fixed at the unconstrained
    solution; the mean field's own law, no finite-N correction).

``samples`` (``ym_sweep.samples.json``)
    The ``sigmoidal`` zoo net, N = P, SNAPER, 4 chains from prior draws, at y− = 0.1 … 0.5 and T = 0.01: the library's
    health verdict (:func:`bnnzoo.inference.health.sampler_health`), and the fraction of neurons on each modal code
    per chain (mean ± standard error across chains) next to the mean-field masses at the same P and T.

``lockin`` (``ym_sweep.lockin.json``)
    y− = 0.1: chains started from the prior (the ``samples`` run of the same size, reused when present), with a short
    and a long warm-up, from a warm start onto the solution space (Adam on the potential from the prior draw), and at
    a second N; the fraction of neurons on code 100 per chain and along the kept draws (the library keeps no
    per-neuron warm-up draws), against the mean field's law of that fraction (from the ``meanfield`` part).

Sizes: ``--size ci`` (seconds; tiny nets, few draws, a coarse y− grid: for the test only) and ``--size cpu``.  Only
summaries are written (no draws).  An existing summary is not overwritten unless ``--overwrite``.

Run as ``python reproduce/ym_sweep.py --size cpu [--part meanfield|samples|lockin|all] [--overwrite]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

CODES = ("011", "101", "110", "111", "100", "010", "001", "000")
SIZES = {
    "ci": dict(mf=((40, 0.01),), y_grid=(0.5,), n_random=1, n_grid=21, n_grid_checks=21, partial=(), law_N=(), n_q=0,
               changes=(),
               N=12, chains=2, warmup=30, samples=20, y_samples=(0.1, 0.5),
               lock_runs=dict(warm_start=dict(warm_start=20), long_warmup=dict(num_warmup=60)), N2=16),
    "cpu": dict(mf=((60, 0.01), (100, 0.0)), y_grid=(0.1, 0.2, 0.3, 0.4, 0.5),
                n_random=4, n_grid=25, n_grid_checks=41, partial=((60, 0.1),), law_N=(60,), n_q=8,
                changes=(("100", 0.1, 0.3), ("111", 0.3, 0.5)),
                N=60, chains=4, warmup=1000, samples=400, y_samples=(0.1, 0.2, 0.3, 0.4, 0.5),
                lock_runs=dict(short_warmup=dict(num_warmup=200), warm_start=dict(warm_start=500),
                               long_warmup=dict(num_warmup=3000)), N2=100),
}
T_SAMPLE = 0.01


class UsageError(Exception):
    """Bad command-line input: printed as one line, no traceback."""


# ---------------------------------------------------------------------------------------------------------------------
# toy-task targets and the mean-field action
# ---------------------------------------------------------------------------------------------------------------------
def toy_classes(P: int, y_neg: float, y_pos: float = 1.0):
    """(targets (C, m), class sizes (C,)) of the toy task with class ratios ½ ¼ ¼ (docs/theory.md §2)."""
    sizes = np.array([P - 2 * (P // 4), P // 4, P // 4])
    Y = np.full((3, 3), float(y_neg))
    np.fill_diagonal(Y, float(y_pos))
    return Y, sizes


_FAR = {}


def _far_table(nonlinearity):
    """A coarse table of log M, m1, m2 for |s| up to 5000 (step 0.05), shared by all actions."""
    from bnnzoo.theory.meanfield import _Table

    if nonlinearity not in _FAR:
        _FAR[nonlinearity] = _Table(nonlinearity, 1.0, smax=5000.0, n=200001)
    return _FAR[nonlinearity]


class Action:
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
        from bnnzoo.theory.meanfield import _Table, _cube

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

        Returns (λ (K, C, m), max |residual| (K,), S (K,), iterations (K,)).  The residual is the self-consistency
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
def _mass_per_code(codes, masses):
    out = {}
    for c, m in zip(codes, masses):
        out[c] = out.get(c, 0.0) + float(m)
    return out


def _scheme(mass_by_code, floor):
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


def search_point(P, y_neg, T, prev_sols, rng, n_random, n_grid, box, min_mass=1e-6):
    """All self-consistent λ at one (P, y−, T): multi-start Newton on S, deduplicated, each polished by the library
    solver.  Returns a dict (JSON-ready) with the starts, the distinct solutions, their branches and free energies."""
    from bnnzoo.theory.meanfield import single_neuron_meanfield_classes

    Y, sizes = toy_classes(P, y_neg)
    sa2 = 1.0 / P
    act = Action(Y, sizes, sa2, T, box[0], box[1], n_grid)
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
        fine = Action(Y, sizes, sa2, T, r.grid[0], r.grid[-1], len(r.grid))
        S_fine = float(fine.value(r.lam[None])[0])
        sols.append(dict(lam=r.lam.tolist(), residual=r.residual, grid_change=r.grid_change,
                         edge_mass=float(fine.edge_mass(r.lam[None])[0]),
                         free_energy=-S_fine, codes=list(r.branch_code), masses=r.branch_mass.tolist(),
                         modes=np.round(r.branch_mode, 4).tolist(), means=np.round(r.branch_mean, 4).tolist(),
                         mass_by_code=_mass_per_code(r.branch_code, r.branch_mass),
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


def free_energy_checks(P=40, y_neg=0.5, T=0.01, seed=0, n_grid=41):
    """Numerical checks of the action: (1) its gradient by central differences against P_c × the library's
    self-consistency residual at random λ; (2) log z of the linear net against its closed form
    −½ log det(I − σ_a² Σ_c P_c λ_c λ_cᵀ); (3) the smallest Hessian eigenvalue at random λ (convexity)."""
    from bnnzoo.theory.meanfield import _Table, _averages

    rng = np.random.default_rng(seed)
    Y, sizes = toy_classes(P, y_neg)
    sa2 = 1.0 / P
    act = Action(Y, sizes, sa2, T, -3.0, 4.0, n_grid)
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
    lin = Action(Y, sizes, sa2, 0.0, -half, half, int(1.5 * n_grid), nonlinearity="linear")
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
    """Minimise Σ_i w_i S_i(λ) (Σ w_i = 1; each S_i an :class:`Action` on its own mask) by damped Newton from one
    start (C, m).  Returns (λ, minimum, max |residual|)."""
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
    from bnnzoo.theory.meanfield import _Table, _basins, _cube, _logp, single_neuron_meanfield_classes

    Y, sizes = toy_classes(P, y_neg)
    r = single_neuron_meanfield_classes(Y, sizes, nonlinearity="sigmoid", temperature=T, sigma_a2=1.0 / P,
                                        min_mass=1e-9, n_grid=n_grid)
    g, A = _cube(r.grid[0], r.grid[-1], len(r.grid), 3)
    lp, _ = _logp(A, r.lam, sizes.astype(float), 1.0 / P, _Table("sigmoid", 1.0, 60.0))
    ptr, peaks = _basins(lp, len(r.grid), 3, lp.max() - 30.0)
    base = 0.5
    from bnnzoo.theory.meanfield import activation_moments

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
    full = Action(Y, sizes, 1.0 / P, T, lo, hi, n)
    f0 = -float(full.value(r.lam[None])[0])
    codes = sorted(masks)
    out = []
    for k in range(1, len(codes) + 1):
        for B in itertools.combinations(codes, k):
            mask = np.any([masks[c] for c in B], axis=0)
            act = Action(Y, sizes, 1.0 / P, T, lo, hi, n, mask=mask)
            lam, Smin, res = _mix_minimise([act], [1.0], r.lam)
            lp, _, _ = act._lp(lam[None])
            w = np.exp(lp[0] - special.logsumexp(lp[0]))
            within = {c: float(w[masks[c]].sum()) for c in B}
            out.append(dict(codes=list(B), delta_f=-Smin - f0, residual=res, masses_within=within,
                            self_consistent=bool(res < 1e-6)))
    return dict(P=P, y_neg=y_neg, T=T, f=f0, mass_by_code=_mass_per_code(r.branch_code, r.branch_mass),
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
    a_in = Action(Y, sizes, 1.0 / P, T, lo, hi, n, mask=masks[code])
    a_out = Action(Y, sizes, 1.0 / P, T, lo, hi, n, mask=~masks[code])
    full = Action(Y, sizes, 1.0 / P, T, lo, hi, n)
    f0 = -float(full.value(r.lam[None])[0])
    df, lam = [], r.lam
    for q in qs:
        H = -(special.xlogy(q, q) + special.xlogy(1 - q, 1 - q))
        lam, Smin, _ = _mix_minimise([a_in, a_out], [q, 1 - q], lam)
        df.append(-(Smin + H) - f0)
    mass = float(_mass_per_code(r.branch_code, r.branch_mass).get(code, 0.0))
    kl = [float(special.xlogy(q, q / mass) + special.xlogy(1 - q, (1 - q) / (1 - mass))) for q in qs]
    return dict(P=P, y_neg=y_neg, T=T, code=code, N=N, q=list(map(float, qs)), delta_f=list(map(float, df)),
                mf_mass=mass, kl_fixed_lambda=kl)


def scheme_change(P, T, code, lo, hi, steps=5, floor=1e-3):
    """Bisection in y− ∈ [lo, hi] for where the mass of branch ``code`` crosses ``floor`` (library solver at each
    point).  Returns {P, T, code, y_neg, err, mass_lo, mass_hi}; when the mass is on the same side of ``floor`` at both
    ends, the bracket shrinks to ``hi`` and the masses say so."""
    def mass(y):
        Y, sizes = toy_classes(P, y)
        from bnnzoo.theory.meanfield import single_neuron_meanfield_classes

        r = single_neuron_meanfield_classes(Y, sizes, nonlinearity="sigmoid", temperature=T, sigma_a2=1.0 / P,
                                            min_mass=1e-6, check_grid=False)
        return _mass_per_code(r.branch_code, r.branch_mass).get(code, 0.0)

    m_lo, m_hi = mass(lo), mass(hi)
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        m_mid = mass(mid)
        if (m_mid >= floor) == (m_lo >= floor):
            lo, m_lo = mid, m_mid
        else:
            hi, m_hi = mid, m_mid
    return dict(P=P, T=T, code=code, y_neg=0.5 * (lo + hi), err=0.5 * (hi - lo), mass_lo=m_lo, mass_hi=m_hi)


def run_meanfield(cfg, log, save):
    """Part 1: the search over y− for every (P, T) of the size, the partial schemes, the law of the code-100 fraction
    and the checks of the action."""
    out = dict(checks=free_energy_checks(n_grid=cfg["n_grid_checks"]), sweeps=[], partial=[], law=[])
    log(f"checks: {json.dumps(out['checks'])}")
    rng = np.random.default_rng(0)
    for P, T in cfg["mf"]:
        prev, box = [], (-3.5, 4.5)
        for yn in sorted(cfg["y_grid"])[::-1]:  # downwards: each point also starts from its upper neighbour's λ
            t0 = time.time()
            pt = search_point(P, yn, T, prev, rng, cfg["n_random"], cfg["n_grid"], box)
            prev = [np.array(s["lam"]) for s in pt["solutions"]]
            out["sweeps"].append(pt)
            sch = [_scheme(s["mass_by_code"], 1e-3) for s in pt["solutions"]]
            log(f"P={P} T={T} y-={yn:.3f}: {pt['n_converged']}/{pt['n_starts']} starts converged, "
                f"{len(pt['solutions'])} distinct solution(s) {sch}, "
                f"f={[round(s['free_energy'], 5) for s in pt['solutions']]} [{time.time() - t0:.0f} s]")
            save(out)
    out["changes"] = []
    for P, T in cfg["mf"]:
        for code, lo, hi in cfg["changes"]:
            out["changes"].append(scheme_change(P, T, code, lo, hi))
            log(f"scheme change: {out['changes'][-1]}")
            save(out)
    for P, yn in cfg["partial"]:
        out["partial"].append(partial_schemes(P, yn, T_SAMPLE, n_grid=41))
        log(f"partial schemes P={P} y-={yn}: " + "; ".join(f"{'/'.join(d['codes'])} {d['delta_f']:.4f}"
                                                           for d in out["partial"][-1]["schemes"]))
        save(out)
    qs = np.linspace(0.0, 0.3, cfg["n_q"] + 2)[1:-1]
    for N in cfg["law_N"]:
        law = fraction_law(N, min(cfg["y_grid"]), T_SAMPLE, "100", qs, N, n_grid=41)
        out["law"].append(law)
        log(f"law of the code-100 fraction at N = P = {N}: {json.dumps({k: v for k, v in law.items() if k != 'q'})}")
        save(out)
    return out


# ---------------------------------------------------------------------------------------------------------------------
# parts 2 and 3: samples
# ---------------------------------------------------------------------------------------------------------------------
def _sample(N, y_neg, chains, warmup, samples, seed=0, **kw):
    """One SNAPER run of the sigmoidal zoo net (N = P) and its summaries: health, per-chain code fractions, the code-100
    fraction per chain along the kept draws."""
    import bnnzoo
    from bnnzoo.diagnostics._data import run_data
    from bnnzoo.diagnostics.codes import _modal, code_ids, code_string
    from bnnzoo.inference.health import sampler_health

    task = bnnzoo.toy_task(P=N, y_pos=1.0, y_neg=y_neg, seed=seed)
    t0 = time.time()
    idata = bnnzoo.sample("sigmoidal", task, width=N, temperature=T_SAMPLE, num_chains=chains, num_warmup=warmup,
                          num_samples=samples, sampler="snaper", seed=seed, progress=False, record=("z",),
                          reparam=("data_space",), **kw)
    wall = time.time() - t0
    h = sampler_health(idata)
    rd = run_data(idata)
    ids = code_ids(rd.class_means(1))  # (chain, draw, neuron)
    modal = _modal(ids, 8)
    frac = np.array([[np.mean(modal[c] == k) for k in range(8)] for c in range(chains)])  # (chain, code id)
    names = [code_string(k, 3) for k in range(8)]
    k100 = names.index("100")
    windows = np.array_split(np.arange(ids.shape[1]), min(10, ids.shape[1]))
    traj = [[float(np.mean(ids[c, w] == k100)) for w in windows] for c in range(chains)]
    switch = float(np.mean(ids[:, 1:] != ids[:, :-1]))
    se = frac.std(0, ddof=1) / np.sqrt(chains) if chains > 1 else np.full(8, np.nan)
    return dict(N=N, P=N, y_neg=float(y_neg), T=T_SAMPLE, chains=chains, warmup=warmup, samples=samples, seed=seed,
                options={k: v for k, v in kw.items()}, wall_s=round(wall, 1), health=h.status, health_reason=h.reason,
                rhat={k: float(v) for k, v in h.rhat.items()},
                fraction={names[k]: float(frac[:, k].mean()) for k in range(8) if frac[:, k].any()},
                fraction_se={names[k]: float(se[k]) for k in range(8) if frac[:, k].any()},
                fraction_per_chain={names[k]: frac[:, k].tolist() for k in range(8) if frac[:, k].any()},
                code100_along_run=traj, code_switches_per_draw=switch)


def _mf_masses(P, y_neg, T):
    from bnnzoo.theory.meanfield import single_neuron_meanfield_classes

    Y, sizes = toy_classes(P, y_neg)
    r = single_neuron_meanfield_classes(Y, sizes, nonlinearity="sigmoid", temperature=T, sigma_a2=1.0 / P,
                                        min_mass=1e-6)
    return _mass_per_code(r.branch_code, r.branch_mass)


def run_samples(cfg, log, save):
    out = dict(runs=[])
    for yn in cfg["y_samples"]:
        s = _sample(cfg["N"], yn, cfg["chains"], cfg["warmup"], cfg["samples"])
        s["meanfield_mass"] = _mf_masses(cfg["N"], yn, T_SAMPLE)
        out["runs"].append(s)
        log(f"samples y-={yn}: {s['health']} {json.dumps({k: round(v, 3) for k, v in s['fraction'].items()})} "
            f"mean field {json.dumps({k: round(v, 3) for k, v in s['meanfield_mass'].items()})} [{s['wall_s']} s]")
        save(out)
    return out


def run_lockin(cfg, log, save, sweep_run=None):
    """Part 3 at y− = 0.1: prior start (the sweep's run if given), warm start, long warm-up, a second N; with the mean
    field's equilibrium law of the code-100 fraction at each N."""
    yn = min(cfg["y_samples"])
    out = dict(runs=[])
    plan = [("prior", cfg["N"], {})] + [(name, cfg["N"], kw) for name, kw in cfg["lock_runs"].items()] + \
        [("prior, second N", cfg["N2"], {})]
    for name, N, kw in plan:
        if name == "prior" and sweep_run is not None:
            s = dict(sweep_run)
        else:
            kw = dict(kw)
            warmup = kw.pop("num_warmup", cfg["warmup"])
            s = _sample(N, yn, cfg["chains"], warmup, cfg["samples"], **kw)
        s["start"] = name
        out["runs"].append(s)
        log(f"lock-in run '{name}' N={N}: {s['health']} code 100 per chain {s['fraction_per_chain'].get('100')} "
            f"[{s['wall_s']} s]")
        save(out)
    return out


# ---------------------------------------------------------------------------------------------------------------------
# the summary page
# ---------------------------------------------------------------------------------------------------------------------
def _fmt_codes(d, floor=1e-3):
    return ", ".join(f"{c} {v:.3f}" for c, v in sorted(d.items(), key=lambda kv: -kv[1]) if v >= floor) or "—"


def render(out_dir: Path) -> str:
    """ym_sweep.md from the summaries present in ``out_dir``."""
    parts = {p: json.loads((out_dir / f"ym_sweep.{p}.json").read_text())
             for p in ("meanfield", "samples", "lockin") if (out_dir / f"ym_sweep.{p}.json").exists()}
    L = ["# The y− sweep of the sigmoidal toy net (issue 22, item 3)", "",
         "Made by `python reproduce/ym_sweep.py`; the method and every formula are in that script's docstring. "
         "Sigmoidal φ, L = 1, toy task (docs/theory.md §2) with y+ = 1, classes ½ ¼ ¼, m = 3, σ_a² = 1/P.", ""]
    meta = {p: v.get("meta", {}) for p, v in parts.items()}
    if "meanfield" in parts:
        mf = parts["meanfield"]
        L += ["## 1. Mean field: every self-consistent solution along y−", "",
              f"Size `{meta['meanfield'].get('size')}`"
              f"{', ' + meta['meanfield']['note'] if meta['meanfield'].get('note') else ''}. "
              "Free energy per neuron f = −S(λ*) in nats (up to a constant common to all solutions at one y−, T, P).",
              ""]
        c = mf["checks"]
        L += [f"Checks of the action (P = {c['P']}, y− = {c['y_neg']}, T = {c['T']}): gradient vs central differences "
              f"{c['gradient_vs_central_difference']:.1e} (relative), vs P_c × the library's self-consistency residual "
              f"{c['gradient_vs_library_residual']:.1e}; linear-φ log z vs its closed form, max error "
              f"{c['linear_logz_max_error']:.1e}; smallest Hessian eigenvalue at random λ "
              f"{c['hessian_min_eigenvalue']:.3g} (> 0: convex).", ""]
        L += ["| P | T | y− | starts (converged) | distinct solutions | spread of converged λ | scheme (mass ≥ 1e-3) "
              "| masses | f |", "|---|---|---|---|---|---|---|---|---|"]
        for pt in mf["sweeps"]:
            for s in pt["solutions"]:
                L.append(f"| {pt['P']} | {pt['T']} | {pt['y_neg']:.2f} | {pt['n_starts']} ({pt['n_converged']}) | "
                         f"{len(pt['solutions'])} | {pt['spread_of_converged_lambda']:.1e} | "
                         f"{_scheme(s['mass_by_code'], 1e-3)} | {_fmt_codes(s['mass_by_code'], 1e-6)} | "
                         f"{s['free_energy']:.5f} |")
        L += [""]
        n_multi = sum(len(p["solutions"]) > 1 for p in mf["sweeps"])
        L += [f"Points with more than one distinct solution: {n_multi} of {len(mf['sweeps'])}.", ""]
        for P, T in sorted({(p["P"], p["T"]) for p in mf["sweeps"]}):
            seq = []
            for p in sorted((p for p in mf["sweeps"] if (p["P"], p["T"]) == (P, T)), key=lambda p: p["y_neg"]):
                for s in p["solutions"]:
                    sch = _scheme(s["mass_by_code"], 1e-3)
                    if not seq or seq[-1] != sch:
                        seq.append(sch)
            L.append(f"- P = {P}, T = {T}: {len(seq)} distinct schemes along y− (mass ≥ 1e-3): {' → '.join(seq)}")
        L += [""]
        if mf.get("changes"):
            L += ["Where the schemes change (library solver, bisection in y− on the mass of the branch crossing 1e-3):",
                  ""]
            L += [f"- P = {ch['P']}, T = {ch['T']}: branch {ch['code']} at y− = {ch['y_neg']:.3f} ± {ch['err']:.3f} "
                  f"(mass {ch['mass_lo']:.2g} → {ch['mass_hi']:.2g} across the bracket)"
                  if (ch["mass_lo"] >= 1e-3) != (ch["mass_hi"] >= 1e-3) else
                  f"- P = {ch['P']}, T = {ch['T']}: branch {ch['code']} stays below mass 1e-3 over the searched "
                  f"bracket (no change)" for ch in mf["changes"]]
            L += [""]
        if mf.get("partial"):
            L += ["Populations frozen in a subset of the branches (T = 0.01): Δf = f_B − f per neuron "
                  "(N Δf is the log-probability penalty at N neurons).", "",
                  "| P | y− | branches kept | Δf (nats/neuron) | masses within |", "|---|---|---|---|---|"]
            for pp in mf["partial"]:
                for s in pp["schemes"]:
                    L.append(f"| {pp['P']} | {pp['y_neg']} | {'/'.join(s['codes'])} | {s['delta_f']:.5f} | "
                             f"{_fmt_codes(s['masses_within'], 1e-6)} |")
            L += ["", "The basins are those of the free solution, held fixed. Where a subset drops one of the large "
                  "branches, the constrained density piles up against a basin boundary and Δf depends on the "
                  "boundary cells of the grid (the 101 and 110 rows, equal by symmetry, differ by a few percent): "
                  "read those rows as orders of magnitude only.", ""]
    if "samples" in parts:
        sm = parts["samples"]
        L += ["## 2. Samples next to the mean field", "",
              f"Size `{meta['samples'].get('size')}`. SNAPER, chains from prior draws, T = {T_SAMPLE}; fraction of "
              "neurons per modal code, mean ± standard error across chains; mean field at the same P and T.", "",
              "| y− | N = P | chains × (warm-up + draws) | health | sampled | mean field | wall s |",
              "|---|---|---|---|---|---|---|"]
        for r in sm["runs"]:
            samp = ", ".join(f"{c} {v:.3f} ± {r['fraction_se'][c]:.3f}" for c, v in
                             sorted(r["fraction"].items(), key=lambda kv: -kv[1]))
            L.append(f"| {r['y_neg']} | {r['N']} | {r['chains']} × ({r['warmup']} + {r['samples']}) | "
                     f"{r['health']}{': ' + r['health_reason'] if r['health_reason'] else ''} | {samp} | "
                     f"{_fmt_codes(r['meanfield_mass'], 1e-4)} | {r['wall_s']} |")
        L += [""]
    if "lockin" in parts:
        lk = parts["lockin"]
        L += ["## 3. The code-100 excess at y− = 0.1", "",
              "Mean-field cost of a fraction q of the neurons frozen on code 100 (nats per neuron; the equilibrium law "
              "of q at N neurons is P(q) ∝ exp(−N Δf(q))):", ""]
        for law in parts.get("meanfield", {}).get("law", []):
            if "error" in law:
                L.append(f"- N = P = {law['P']}: {law['error']}")
                continue
            L.append(f"- N = P = {law['P']} (T = {law['T']}): branch mass {law['mf_mass']:.4f}; "
                     + ", ".join(f"q = {q:.3f}: Δf = {d:.3f}, N Δf = {law['N'] * d:.0f}"
                                 for q, d in zip(law["q"], law["delta_f"])))
        L += ["", "| start | N | warm-up | health | code 100 per chain | code-100 fraction per chain along the draws "
              "(10 windows) | switches/draw |", "|---|---|---|---|---|---|---|"]
        for r in lk["runs"]:
            per = ", ".join(f"{v:.3f}" for v in r["fraction_per_chain"].get("100", [0.0] * r["chains"]))
            traj = "; ".join("→".join(f"{v:.2f}" for v in (t[0], t[len(t) // 2], t[-1])) for t in
                             r["code100_along_run"])
            opt = f" (warm start {r['options']['warm_start']} Adam steps)" if r["options"].get("warm_start") else ""
            L.append(f"| {r['start']}{opt} | {r['N']} | {r['warmup']} | {r['health']} | {per} | {traj} | "
                     f"{r['code_switches_per_draw']:.4f} |")
        L += [""]
        runs = {r["start"]: r for r in lk["runs"]}
        if "prior" in runs and "long_warmup" in runs:
            a = np.array(runs["prior"]["fraction_per_chain"].get("100", [0.0]))
            b = np.array(runs["long_warmup"]["fraction_per_chain"].get("100", [0.0]))
            n_units = runs["prior"]["N"]
            L += [f"Same seed, warm-up {runs['prior']['warmup']} vs {runs['long_warmup']['warmup']}: code-100 neurons "
                  f"per chain {np.rint(a * n_units).astype(int).tolist()} vs "
                  f"{np.rint(b * n_units).astype(int).tolist()}"
                  f" (of {n_units}). Under the prior the class means of a neuron's preactivations are independent and "
                  f"symmetric about 0 (orthogonal inputs), so every one of the 8 codes starts on exactly 1/8 of the "
                  f"neurons in expectation.", ""]
    if {"meanfield", "samples", "lockin"} <= set(parts):
        L += _findings(parts)
    return "\n".join(L) + "\n"


def _findings(parts):
    """The conclusions, each number read from the summaries."""
    mf, sm, lk = parts["meanfield"], parts["samples"], parts["lockin"]
    n_pts = len(mf["sweeps"])
    n_one = sum(len(p["solutions"]) == 1 for p in mf["sweeps"])
    n_starts = sum(p["n_starts"] for p in mf["sweeps"])
    n_conv = sum(p["n_converged"] for p in mf["sweeps"])
    spread = max((p["spread_of_converged_lambda"] for p in mf["sweeps"]), default=float("nan"))
    schemes = sorted({_scheme(s["mass_by_code"], 1e-3) for p in mf["sweeps"] for s in p["solutions"]})
    runs = {r["y_neg"]: r for r in sm["runs"]}
    lo = runs[min(runs)]
    worst = max(((abs(r["fraction"].get(c, 0.0) - r["meanfield_mass"].get(c, 0.0)), c, y)
                 for y, r in runs.items() if y >= 0.3 for c in set(r["fraction"]) | set(r["meanfield_mass"])),
                default=(float("nan"), "", ""))
    lock = {r["start"]: r for r in lk["runs"]}
    L = ["## Findings", "",
         f"1. **One mean-field solution per y−.** {n_conv} of {n_starts} starts converged over {n_pts} searched "
         f"(P, T, y−) points; at {n_one} of them every converged start reached the same λ (largest spread "
         f"{spread:.1e}). This is what the action predicts: S(λ) is strictly convex (a cumulant generating function "
         f"plus a quadratic), so its stationary point — the self-consistent solution — is unique, and it is the "
         f"lowest free energy by construction. The other 'sets of branches' are populations frozen in a subset of "
         f"the branches; each costs Δf > 0 per neuron (table above).",
         f"2. **Schemes along y−:** {len(schemes)} distinct ones in the search ({'; '.join(schemes)}), changing "
         f"where the branch masses cross 1e-3 (bisection above): a small 100 branch at low y−, three codes in the "
         f"middle, a 111 branch at high y−. The search finds no four-scheme sequence.",
         f"3. **Samples:** at y− ≥ 0.3 ({', '.join(r['health'] for y, r in sorted(runs.items()) if y >= 0.3)}) "
         f"the sampled code fractions differ from the mean-field masses by at most {worst[0]:.3f} (code {worst[1]} "
         f"at y− = {worst[2]}); at y− = {lo['y_neg']} code 100 carries {lo['fraction'].get('100', 0):.3f} ± "
         f"{lo['fraction_se'].get('100', 0):.3f} of the neurons against a mean-field mass "
         f"{lo['meanfield_mass'].get('100', 0):.3f}, and the health check says '{lo['health']}'."]
    if "prior" in lock:
        per = {k: r["fraction_per_chain"].get("100", []) for k, r in lock.items()}
        law = mf.get("law", [])
        cost = ""
        if law and "error" not in law[0]:
            q, d = np.array(law[0]["q"]), np.array(law[0]["delta_f"])
            k = int(np.argmin(np.abs(q - 1 / 6)))
            cost = (f" In the mean field, freezing q = {q[k]:.3f} of N = {law[0]['N']} neurons on code 100 costs "
                    f"N Δf = {law[0]['N'] * d[k]:.0f} nats against the free population, so at equilibrium such a "
                    f"fraction would not occur.")
        same_seed = ", ".join(k + " " + "/".join(f"{v:.2f}" for v in per[k]) for k in per
                              if k in ("short_warmup", "prior", "long_warmup"))
        L.append(f"4. **The code-100 excess is lock-in, not equilibrium.** Every chain keeps its number of code-100 "
                 f"neurons through all kept draws (code switches per neuron per draw ≤ "
                 f"{max(r['code_switches_per_draw'] for r in lk['runs']):.1e}); the chains disagree on the invariant "
                 f"observables (largest R̂ {max(lock['prior']['rhat'].values()):.2f}, the readout norms); the same "
                 f"seed gives the same per-chain pattern after 200, 1000 and 3000 warm-up steps ({same_seed}); "
                 f"a warm start onto the solution space (from the same prior draws) lands on the same level "
                 f"({'/'.join(f'{v:.2f}' for v in per.get('warm_start', []))}), and so does N = P = 100 "
                 f"({'/'.join(f'{v:.2f}' for v in per.get('prior, second N', []))}): the fraction does not relax "
                 f"with warm-up length and does not shrink with N, as a finite-size equilibrium effect would.{cost} "
                 f"The level itself is consistent with the start: the prior puts 1/8 of the neurons on each of the 8 "
                 f"codes, and at y− = 0.1 code 100 is a locally stable branch, so neurons that reach it during the "
                 f"descent stay (a start with the mean-field populations was not run).")
    return L + [""]


# ---------------------------------------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="ym_sweep", description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="ci", help="ci (seconds, tiny) or cpu")
    ap.add_argument("--part", default="all", help="meanfield, samples, lockin (comma-separated) or all")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"), help="results folder")
    ap.add_argument("--overwrite", action="store_true", help="replace existing summaries")
    args = ap.parse_args(argv)
    try:
        if args.size not in SIZES:
            raise UsageError(f"--size must be one of {sorted(SIZES)}, got {args.size!r}")
        parts = ("meanfield", "samples", "lockin") if args.part == "all" else tuple(args.part.split(","))
        if any(p not in ("meanfield", "samples", "lockin") for p in parts):
            raise UsageError(f"--part must be meanfield, samples, lockin or all, got {args.part!r}")
        out_dir = Path(args.out)
        out_dir.mkdir(parents=True, exist_ok=True)
        existing = [str(out_dir / f"ym_sweep.{p}.json") for p in parts if (out_dir / f"ym_sweep.{p}.json").exists()]
        if existing and not args.overwrite:
            raise UsageError(f"{', '.join(existing)} exists: pass --overwrite to replace it")
    except (UsageError, OSError) as exc:
        print(f"ym_sweep: error: {exc}", file=sys.stderr)
        return 2
    cfg = SIZES[args.size]

    def log(msg):
        print(msg, flush=True)

    def saver(part, t0):
        def save(obj):
            obj = dict(obj, meta=dict(size=args.size, wall_s=round(time.time() - t0, 1), complete=False))
            (out_dir / f"ym_sweep.{part}.json").write_text(json.dumps(obj, indent=1))
            (out_dir / "ym_sweep.md").write_text(C.mark_uncertified(render(out_dir)))
        return save

    sweep_run = None
    for part in parts:
        t0 = time.time()
        save = saver(part, t0)
        if part == "meanfield":
            obj = run_meanfield(cfg, log, save)
        elif part == "samples":
            obj = run_samples(cfg, log, save)
            sweep_run = next((r for r in obj["runs"] if r["y_neg"] == min(cfg["y_samples"])), None)
        else:
            prev = out_dir / "ym_sweep.samples.json"
            if sweep_run is None and prev.exists():  # the prior-start run of an earlier samples part
                prev = json.loads(prev.read_text())
                if prev.get("meta", {}).get("size") == args.size:
                    sweep_run = next((r for r in prev["runs"] if r["y_neg"] == min(cfg["y_samples"])), None)
            obj = run_lockin(cfg, log, save, sweep_run)
        obj = dict(obj, meta=dict(size=args.size, wall_s=round(time.time() - t0, 1), complete=True))
        (out_dir / f"ym_sweep.{part}.json").write_text(json.dumps(obj, indent=1))
        (out_dir / "ym_sweep.md").write_text(C.mark_uncertified(render(out_dir)))
        log(f"{part}: written to {out_dir} [{time.time() - t0:.0f} s]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
