"""Log evidence (marginal likelihood) log p(Y | X) of the one-hidden-layer linear net, without MCMC (docs/theory.md
§11) [derived].

The model is :func:`bnnzoo.models.fcn.fcn` with ``activation="linear"``, ``depth=1``: z = W Xᵀ/√N0, f = c zᵀa with
c = 1/N (non-lazy) or 1/√N (lazy), W ~ N(0, σ_w²), a ~ N(0, σ_a²) and every entry of Y ~ N(f, v), v = T/N (non-lazy)
or T (lazy), normalising constant included.  Given the readout a (N × m), the N rows z_i ~ N(0, σ_w² K0) are
integrated out exactly: F | a is Gaussian with Cov(f_μr, f_νs) = g A_rs K0_μν, g = c² σ_w², A = aᵀa (m × m).  In the
eigenbasis K0 = Q diag(κ) Qᵀ the rows ỹ_k of Qᵀ Y are independent given A::

    log p(Y | A) = −½ Σ_k [m log 2π + log det C_k + ỹ_kᵀ C_k⁻¹ ỹ_k],   C_k = g κ_k A + v I_m,
    log p(Y | X) = log E_A[p(Y | A)],   A ~ Wishart_m(N, σ_a² I)   (rank min(N, m)).

So the evidence is an integral over the m × m Gram matrix of the readout, whatever P, N0 and N.  It is computed
in the coordinates of the Bartlett decomposition A = σ_a² RᵀR (R upper trapezoidal, min(N, m) × m, R_jj² ~ χ²_{N−j+1},
R_jk ~ N(0, 1) for k > j, all independent), with θ_j = log R_jj so that every coordinate lives on ℝ:

* ``"quadrature"`` (m = 1, exact): one coordinate θ = ½ log(r/σ_a²), r = ``|a|²``; trapezoid rule over the whole
  support of the integrand (the same reduction as :func:`bnnzoo.theory.linear.linear_exact_m1`); the reported error
  is the change when every second node is dropped.
* ``"importance"`` (any m): importance sampling over θ.  The proposal has a Student-t component (ν = 5) at each local
  maximum of the posterior of θ (climbed from the prior mode and from prior draws), with the inverse Hessian there as
  scale and a weight proportional to its Laplace mass, mixed with the prior at weight 0.05 (a defensive mixture: the
  weights stay below p(Y | A)/0.05, so their variance is finite); log Ẑ = log-mean-exp of the weights, standard
  error by the delta method, sd(w)/(√n mean(w)).
* ``"prior"`` (any m): plain Monte Carlo over the prior, log Ẑ = log mean p(Y | A).  Unbiased but useful only where
  the posterior of A stays close to its prior (lazy readout, large T); the effective sample size says when it is not.

Where the Laplace fit is poor, the importance sampler adapts (population Monte Carlo, :func:`_importance`).  The hard
case is N < m with classes whose targets are equal: rotations among those classes leave the likelihood unchanged,
the rank-N posterior of A spreads along a curve, the weights are uneven and the delta-method s.e. can understate the
error; a RuntimeWarning says so when the effective sample size falls below 10 % of the draws.

Checked in tests/theory/test_evidence.py against brute-force quadrature over W (a integrated out the other way),
plain Monte Carlo over every weight, and the Gaussian-process evidence of the lazy net as N → ∞.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from .._record import Record, array_field
from ..models._checks import check_int
from ..models.fcn import check_fcn_args, default_sigma_a2, likelihood_variance, readout_scale

__all__ = ["LinearEvidence", "linear_evidence", "METHODS"]

METHODS = ("auto", "quadrature", "importance", "prior")
_T_DOF = 5.0         # proposal tails heavier than the (asymptotically Gaussian) posterior of θ
_DEFENSIVE = 0.05    # prior weight in the proposal mixture: bounds the importance weights
_CHUNK = 20_000      # draws evaluated at once (memory ~ chunk × P × m floats)
_NUM_STARTS = 20     # prior draws the search for local maxima starts from (besides the prior mode)
_ADAPT_ROUNDS = 3    # population Monte Carlo rounds at most, each on a pilot of a tenth of the draws
_NUM_KERNELS = 200   # Gaussian kernels of an adapted proposal
_ESS_WARN = 0.1      # warn below this fraction of effective draws (a proposal that fits keeps most of them)


@dataclass(frozen=True, repr=False)
class LinearEvidence(Record):
    """Log evidence log p(Y | X) of the one-hidden-layer linear net (module docstring).

    Attributes
    ----------
    value : log p(Y | X), the likelihood's normalising constant included.
    se : its standard error: Monte Carlo (delta method) for "importance" / "prior", the change on halving the nodes
        for "quadrature".
    method : "quadrature", "importance" or "prior".
    n : number of quadrature nodes or of importance / prior draws.
    ess : Kish effective sample size (Σw)²/Σw² of the weights (``n`` for quadrature).
    U : (class, class2) posterior mean of aᵀa/N, the quantity a sampler reports as ``q_a`` on its diagonal.
    width, readout, temperature, sigma_a2, sigma_w2 : the model's arguments (σ_a² resolved).
    """

    value: float
    se: float
    method: str
    n: int
    ess: float
    U: np.ndarray = array_field("class", "class2")
    width: int = 1
    readout: str = "nonlazy"
    temperature: float = 0.01
    sigma_a2: float = 1.0
    sigma_w2: float = 1.0

    def summary(self) -> list[str]:
        return [f"log p(Y | X) = {self.value:.4f} ± {self.se:.2g} ({self.method}, n = {self.n}, ESS = {self.ess:.0f})",
                f"width = {self.width}, readout = {self.readout}, T = {self.temperature:g}, "
                f"sigma_a2 = {self.sigma_a2:.4g}, sigma_w2 = {self.sigma_w2:.4g}"]


class _Problem:
    """log p(θ), log p(Y | A(θ)) and their gradients for one (X, Y, model) (module docstring for the formulas)."""

    def __init__(self, X, Y, N, readout, T, sa2, sw2):
        P, N0 = X.shape
        self.m = m = Y.shape[1]
        self.N, self.sa2 = N, sa2
        self.g = readout_scale(readout, N) ** 2 * sw2
        self.v = likelihood_variance(readout, N, T)
        kap, Q = np.linalg.eigh(X @ X.T / N0)
        self.kap = np.maximum(kap, 0.0)  # round-off of a singular K0 (P > N0)
        self.Yt = Q.T @ Y  # (P, m)
        self.const = -0.5 * P * m * math.log(2 * math.pi)
        self.r = r = min(N, m)
        self.iu = np.triu_indices(r, m=m)  # entries of R, row-major; diagonal ones are θ_j = log R_jj
        self.is_diag = self.iu[0] == self.iu[1]
        self.dim = len(self.iu[0])
        self.dof = N - np.arange(r)  # χ² degrees of freedom of R_jj², j = 0..r−1
        self.log_norm = -np.sum((self.dof / 2 - 1) * math.log(2) + special.gammaln(self.dof / 2)) \
            - 0.5 * (self.dim - r) * math.log(2 * math.pi)

    # --- coordinates ----------------------------------------------------------------------------------------
    def R_of(self, th):
        """(n, r, m) upper trapezoidal R for θ of shape (n, dim)."""
        vals = np.where(self.is_diag, np.exp(th), th)
        R = np.zeros(th.shape[:-1] + (self.r, self.m))
        R[..., self.iu[0], self.iu[1]] = vals
        return R

    def A_of(self, th):
        R = self.R_of(th)
        return self.sa2 * np.swapaxes(R, -1, -2) @ R

    # --- densities ------------------------------------------------------------------------------------------
    def log_prior(self, th):
        d = th[..., self.is_diag]
        o = th[..., ~self.is_diag]
        return self.log_norm + np.sum(self.dof * d - 0.5 * np.exp(2 * d), -1) - 0.5 * np.sum(o * o, -1)

    def sample_prior(self, rng, n):
        th = np.empty((n, self.dim))
        th[:, self.is_diag] = 0.5 * np.log(rng.chisquare(self.dof, size=(n, self.r)))
        th[:, ~self.is_diag] = rng.standard_normal((n, self.dim - self.r))
        return th

    def loglik(self, A):
        """log p(Y | A) for A of shape (n, m, m)."""
        alpha, V = np.linalg.eigh(A)
        alpha = np.maximum(alpha, 0.0)
        Yh = np.einsum("km,nmj->nkj", self.Yt, V)  # (n, P, m): Qᵀ Y V
        c = self.g * self.kap[None, :, None] * alpha[:, None, :] + self.v
        return self.const - 0.5 * np.sum(np.log(c) + Yh**2 / c, axis=(1, 2))

    def log_joint(self, th):
        th = np.atleast_2d(th)
        return self.log_prior(th) + self.loglik(self.A_of(th))

    def grad(self, th):
        """Gradient of log p(θ) + log p(Y | A(θ)) at one θ (dim,)."""
        R = self.R_of(th[None])[0]
        A = self.sa2 * R.T @ R
        alpha, V = np.linalg.eigh(A)
        alpha = np.maximum(alpha, 0.0)
        Yh = self.Yt @ V
        c = self.g * self.kap[:, None] * alpha[None, :] + self.v  # (P, m)
        b = Yh / c
        gk = self.g * self.kap
        M = 0.5 * ((gk[:, None] * b).T @ b - np.diag(np.sum(gk[:, None] / c, 0)))
        G = V @ M @ V.T  # ∂ log p(Y | A)/∂A
        dR = 2 * self.sa2 * R @ G
        out = dR[self.iu]
        out[self.is_diag] *= np.exp(th[self.is_diag])
        out[self.is_diag] += self.dof - np.exp(2 * th[self.is_diag])
        out[~self.is_diag] -= th[~self.is_diag]
        return out

    def hessian(self, th):
        """Hessian of the log joint at θ by central differences of the analytic gradient, symmetrised."""
        h = 1e-5 * np.maximum(1.0, np.abs(th))
        H = np.empty((self.dim, self.dim))
        for i in range(self.dim):
            e = np.zeros(self.dim)
            e[i] = h[i]
            H[i] = (self.grad(th + e) - self.grad(th - e)) / (2 * h[i])
        return 0.5 * (H + H.T)

    def climb(self, th0):
        """Local maximum of the log joint from θ0 (BFGS with the analytic gradient)."""
        res = optimize.minimize(lambda t: -self.log_joint(t)[0], th0, jac=lambda t: -self.grad(t), method="BFGS",
                                options={"gtol": 1e-8})
        return res.x, -float(res.fun)

    def prior_mode(self):
        th = np.zeros(self.dim)
        th[self.is_diag] = 0.5 * np.log(self.dof)
        return th

    def modes(self, rng, num_starts):
        """Distinct local maxima of the log joint, climbed from the prior mode and ``num_starts`` prior draws.

        Returns a list of (θ*, log joint at θ*, Hessian) with maxima whose Laplace mass is within e^{-30} of the
        largest, the largest first; two maxima are the same when their Gram matrices A agree to 1e-4 (relative).
        """
        starts = np.vstack([self.prior_mode()[None], self.sample_prior(rng, num_starts)])
        found = []
        for th0 in starts:
            th, f = self.climb(th0)
            A = self.A_of(th[None])[0]
            if not any(np.max(np.abs(A - B)) <= 1e-4 * max(np.max(np.abs(B)), 1e-300) for _, _, B in found):
                found.append((th, f, A))
        out = []
        for th, f, _ in found:
            H = self.hessian(th)
            w, V = np.linalg.eigh(-H)
            if w[0] <= 0:  # a saddle or a flat direction: not a maximum to centre a component on
                continue
            out.append((th, f, H, f - 0.5 * np.sum(np.log(w))))
        if not out:
            raise RuntimeError("linear_evidence: no local maximum of the posterior of the readout Gram matrix found")
        out.sort(key=lambda x: -x[3])
        best = out[0][3]
        return [(th, f, H) for th, f, H, lap in out if lap > best - 30.0]


def _log_mean_exp(lw):
    """log mean exp(lw), its delta-method standard error sd(w)/(√n mean(w)), and Kish's ESS."""
    n = len(lw)
    mx = np.max(lw)
    w = np.exp(lw - mx)
    mean = np.mean(w)
    se = float(np.std(w, ddof=1) / (math.sqrt(n) * mean)) if n > 1 else math.inf
    ess = float(np.sum(w) ** 2 / np.sum(w * w))
    return float(mx + math.log(mean)), se, ess


def _quadrature(prob: _Problem, rng, num_nodes: int):
    """m = 1: trapezoid rule in θ from below the lowest to above the highest local maximum, out to where the log
    integrand has fallen 60 below its maximum (its tails are the prior's: θ-linear on the left, e^{−e^{2θ}/2} on the
    right)."""
    modes = prob.modes(rng, _NUM_STARTS)
    f0 = max(f for _, f, _ in modes)
    width = min(1.0 / math.sqrt(-H[0, 0]) for _, _, H in modes)
    lo = min(th[0] for th, _, _ in modes) - width
    hi = max(th[0] for th, _, _ in modes) + width
    while prob.log_joint(np.array([lo]))[0] > f0 - 60:
        lo -= width
    while prob.log_joint(np.array([hi]))[0] > f0 - 60:
        hi += width
    num_nodes = num_nodes + (num_nodes + 1) % 2  # odd, so that every second node is again a trapezoid grid
    t = np.linspace(lo, hi, num_nodes)
    lf = np.concatenate([prob.log_joint(t[i:i + _CHUNK, None]) for i in range(0, len(t), _CHUNK)])
    mx = np.max(lf)
    w = np.exp(lf - mx)
    step = t[1] - t[0]
    full = step * (np.sum(w) - 0.5 * (w[0] + w[-1]))
    half = 2 * step * (np.sum(w[::2]) - 0.5 * (w[0] + w[-1]))
    value = mx + math.log(full)
    A = prob.sa2 * np.exp(2 * t)
    U = np.array([[np.sum(w * A) / np.sum(w) / prob.N]])
    return value, abs(math.log(full) - math.log(half)), U, float(num_nodes)


class _Mixture:
    """Proposal over θ: Student-t components (weights ``logpi``), Gaussian kernels with one shared covariance
    (weight ``kernel_weight``, centres equally weighted) and the prior (weight ``_DEFENSIVE``)."""

    def __init__(self, prob, t_comps, logpi, centres=None, kernel_cov=None, kernel_weight=0.0):
        self.prob, self.t_comps = prob, t_comps
        self.logpi = np.asarray(logpi) + math.log1p(-_DEFENSIVE - kernel_weight)
        self.centres, self.kernel_weight = centres, kernel_weight
        if centres is not None:
            self.chol = np.linalg.cholesky(kernel_cov)
            self.prec_chol = np.linalg.inv(self.chol).T  # (θ − c) @ prec_chol has identity covariance
            self.kernel_norm = (-0.5 * prob.dim * math.log(2 * math.pi) - np.sum(np.log(np.diag(self.chol)))
                                - math.log(len(centres)) + math.log(kernel_weight))

    def rvs(self, rng, k):
        nt = len(self.t_comps)
        probs = np.concatenate([np.exp(self.logpi), [self.kernel_weight, _DEFENSIVE]])
        which = rng.choice(nt + 2, size=k, p=probs / probs.sum())
        th = np.empty((k, self.prob.dim))
        for c, comp in enumerate(self.t_comps):
            sel = which == c
            if sel.any():
                th[sel] = np.asarray(comp.rvs(size=int(sel.sum()), random_state=rng)).reshape(-1, self.prob.dim)
        sel = which == nt
        if sel.any():
            c = self.centres[rng.integers(len(self.centres), size=int(sel.sum()))]
            th[sel] = c + rng.standard_normal(c.shape) @ self.chol.T
        sel = which == nt + 1
        th[sel] = self.prob.sample_prior(rng, int(sel.sum()))
        return th

    def logpdf(self, th):
        k = len(th)
        parts = [lp + np.asarray(comp.logpdf(th)).reshape(k) for lp, comp in zip(self.logpi, self.t_comps)]
        parts.append(math.log(_DEFENSIVE) + self.prob.log_prior(th))
        if self.centres is not None:
            u, v = th @ self.prec_chol, self.centres @ self.prec_chol
            d2 = np.sum(u * u, 1)[:, None] + np.sum(v * v, 1)[None, :] - 2 * u @ v.T
            parts.append(self.kernel_norm + special.logsumexp(-0.5 * np.maximum(d2, 0.0), axis=1))
        return special.logsumexp(np.array(parts), axis=0)


def _weights(prob, prop, rng, n):
    """n draws from ``prop``: θ, log importance weights, Gram matrices A."""
    th, lw, As = [], [], []
    for i in range(0, n, _CHUNK):
        t = prop.rvs(rng, min(_CHUNK, n - i))
        A = prob.A_of(t)
        lw.append(prob.log_prior(t) + prob.loglik(A) - prop.logpdf(t))
        th.append(t)
        As.append(A)
    return np.concatenate(th), np.concatenate(lw), np.concatenate(As)


def _importance(prob: _Problem, rng, n: int, prior_only: bool):
    """Importance sampling in θ (module docstring).  The proposal: Student-t components at the posterior's local
    maxima (weights ∝ Laplace mass, scale the inverse Hessian) and the prior at weight ``_DEFENSIVE``.  Where a pilot
    run's weights show that this fits poorly (Kish ESS below half the pilot draws: a curved or skewed posterior,
    e.g. for N < m where rotations among classes with equal targets leave the likelihood unchanged), up to
    ``_ADAPT_ROUNDS`` population-Monte-Carlo rounds add Gaussian kernels at weight-resampled pilot draws (shared
    covariance: the weighted covariance times Silverman's factor).  Only the final run's draws enter the estimate,
    so it stays unbiased for Z."""
    if prior_only:
        th = prob.sample_prior(rng, n)
        As = prob.A_of(th)
        lw = prob.loglik(As)  # prior and proposal cancel
    else:
        comps, logmass = [], []
        for mode, f, H in prob.modes(rng, _NUM_STARTS):
            w_h, V_h = np.linalg.eigh(-H)
            comps.append(stats.multivariate_t(loc=mode, shape=(V_h / w_h) @ V_h.T, df=_T_DOF))
            logmass.append(f - 0.5 * np.sum(np.log(w_h)))
        logpi = np.asarray(logmass) - special.logsumexp(logmass)
        prop = _Mixture(prob, comps, logpi)
        n_pilot = max(n // 10, 1000)
        for _ in range(_ADAPT_ROUNDS):
            th, lw, _ = _weights(prob, prop, rng, n_pilot)
            w = np.exp(lw - lw.max())
            if np.sum(w) ** 2 / np.sum(w * w) >= 0.5 * n_pilot:
                break
            w /= w.sum()
            idx = rng.choice(n_pilot, size=_NUM_KERNELS, p=w)
            mean = w @ th
            cov = ((th - mean).T * w) @ (th - mean)
            bw2 = (4.0 / ((prob.dim + 2) * _NUM_KERNELS)) ** (2.0 / (prob.dim + 4))
            cov = bw2 * cov + 1e-10 * np.trace(cov) / prob.dim * np.eye(prob.dim)
            prop = _Mixture(prob, comps, logpi, centres=th[idx], kernel_cov=cov, kernel_weight=0.75)
        _, lw, As = _weights(prob, prop, rng, n)
    value, se, ess = _log_mean_exp(lw)
    w = np.exp(lw - np.max(lw))
    U = np.einsum("n,nij->ij", w, As) / np.sum(w) / prob.N
    return value, se, U, ess


def linear_evidence(X, Y=None, *, width: int, depth: int = 1, activation: str = "linear",
                    readout: str = "nonlazy", temperature: float = 0.01, sigma_a2: float | None = None,
                    sigma_w2: float = 1.0, num_outputs: int | None = None, X_test=None, record=(),
                    likelihood: bool = True, method: str = "auto", num_draws: int = 100_000, num_nodes: int = 4001,
                    seed: int = 0) -> LinearEvidence:
    """Log evidence log p(Y | X) of the one-hidden-layer linear net, independent of any MCMC run.

    The arguments are those of :func:`bnnzoo.models.fcn.fcn` (so ``linear_evidence(X, Y, **model_kwargs)`` is the
    evidence of the model ``fcn(X, Y, **model_kwargs)``, with the same defaults and the same checks; e.g.
    ``**run_config(idata)["model_kwargs"]`` of a run), plus the numerical settings.  The hidden weights W are integrated out exactly, leaving an integral over the readout's m × m
    Gram matrix (module docstring).

    Parameters
    ----------
    X : (P, N0) training inputs, or a Task (then leave out Y).
    Y : (P, m) targets.
    width : N, the hidden width (integer >= 1).
    depth, activation : must be 1 and "linear" (accepted so that a model's keyword arguments can be passed on).
    readout : "nonlazy" (1/N prefactor, likelihood variance T/N) or "lazy" (1/√N, variance T).
    temperature : T > 0.
    sigma_a2 : readout prior variance > 0; None = the model's rule (1/P non-lazy, 1 lazy, at depth 1).
    sigma_w2 : hidden-weight prior variance > 0.
    num_outputs, X_test, record : checked as the model checks them; they do not change the evidence (X_test and
        record add deterministic sites only).
    likelihood : must be True (without the observation site the model has no evidence to compute).
    method : "auto" ("quadrature" for m = 1, else "importance"), "quadrature" (m = 1 only, deterministic),
        "importance" (Laplace-fitted Student-t proposal with a defensive prior component) or "prior" (plain Monte
        Carlo over the prior of the readout).
    num_draws : importance / prior draws (integer >= 100).
    num_nodes : quadrature nodes (integer >= 101).
    seed : seed of the draws (integer >= 0).

    Returns
    -------
    LinearEvidence
        value, se, method, n, ess and the posterior mean U of aᵀa/N.

    Raises
    ------
    ValueError
        One line naming the argument: the model's checks (:func:`bnnzoo.models.fcn.check_fcn_args`), Y missing,
        likelihood=False, depth other than 1, activation other than "linear", an unknown method, "quadrature" with m > 1, bad
        num_draws / num_nodes / seed.
    """
    if Y is None:
        if hasattr(X, "X") and hasattr(X, "Y"):
            X, Y = X.X, X.Y
        else:
            raise ValueError("Y is required: the (P, m) targets whose evidence is computed (or pass a Task as X)")
    check_fcn_args(X, Y, width=width, depth=depth, activation=activation, readout=readout, temperature=temperature,
                   sigma_a2=sigma_a2, sigma_w2=sigma_w2, num_outputs=num_outputs, X_test=X_test, record=record,
                   likelihood=likelihood)
    if not likelihood:
        raise ValueError("likelihood must be True: without the observation site y there is no evidence p(Y | X)")
    if depth != 1:
        raise ValueError(f"depth must be 1 (linear_evidence covers one hidden layer), got {depth!r}")
    if activation != "linear":
        raise ValueError(f"activation must be 'linear' (the evidence is Gaussian given the readout only for linear "
                         f"nets), got {activation!r}")
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    check_int("num_draws", num_draws, 100)
    check_int("num_nodes", num_nodes, 101)
    check_int("seed", seed, 0)
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    m = Y.shape[1]
    if method == "quadrature" and m != 1:
        raise ValueError(f"method='quadrature' needs one output (m = 1), Y has m = {m}; use 'importance'")
    if method == "auto":
        method = "quadrature" if m == 1 else "importance"
    N = int(width)
    sa2 = float(default_sigma_a2("linear", readout, X.shape[0], 1) if sigma_a2 is None else sigma_a2)
    prob = _Problem(X, Y, N, readout, float(temperature), sa2, float(sigma_w2))
    if method == "quadrature":
        value, se, U, n = _quadrature(prob, np.random.default_rng(seed), int(num_nodes))
        ess = n
    else:
        value, se, U, ess = _importance(prob, np.random.default_rng(seed), int(num_draws), method == "prior")
        n = int(num_draws)
        if ess < _ESS_WARN * n:
            warnings.warn(f"linear_evidence: uneven importance weights (effective sample size {ess:.0f} of {n} "
                          f"draws); the standard error may understate the error: raise num_draws"
                          + ("" if method == "importance" else " or use method='importance'"),
                          RuntimeWarning, stacklevel=2)
    return LinearEvidence(value=float(value), se=float(se), method=method, n=int(n), ess=float(ess), U=U,
                          width=N, readout=readout, temperature=float(temperature), sigma_a2=sa2,
                          sigma_w2=float(sigma_w2))
