"""Learning dynamics of deep linear networks (Saxe, McClelland & Ganguli, ICLR 2014; the rich/lazy picture of Saxe's
later work): learning time against depth for four initialisations, the closed form u(t), rich against lazy learning.

Full-batch gradient descent (numpy, float64, deterministic; no sampling, so no sampler health and no population
certificate) on a depth-D linear net x → W_D ⋯ W_1 x (D weight matrices, D − 1 hidden layers of width ``hidden``)
with the loss ½ Σ_items ‖y − W x‖² on the hierarchical data of the theory page §9: 4 one-hot items in n_in = 8 input
dimensions (the last 4 never seen: Σˣ = diag(1, 1, 1, 1, 0, 0, 0, 0)), 7 hierarchical targets (6 for all items; 4
for items {1, 2} and {3, 4}; 3·I₄) divided by the top singular value 13.6, so that Σʸˣ has the singular values
s = 1, 0.471, 0.221, 0.221 (three distinct modes; λ = 1 along every seen direction).  The least-squares map
W* = Σʸˣ on the seen inputs and 0 on the unseen ones (minimum norm).  Time t = lr × step (τ = 1); with the paper's
depth-scaled learning rate lr = η₀/D, the number of steps times η₀ is the scaled time T = D t, in which the mode
equation τ du/dt = D u^{2−2/D}(s − u) reads du/dT = u^{2−2/D}(s − u) for every D.

Parts (``--parts``):

* ``depth`` (claims G6, G7, G8): time to learn against depth D for four starts, each over ``seeds`` seeds:
  ``decoupled`` (the "pretrained" start: balanced, aligned with the singular vectors of Σʸˣ through random
  orthonormal hidden frames, every mode at strength u0 held fixed across depth, per-layer scale u0^{1/D}),
  ``orthogonal`` (every layer a random orthogonal map, scale 1: orthonormal columns of W_1, rows of W_D),
  ``gaussian_small`` (i.i.d. N(0, g²/H) entries with g = ``g_small`` < 1 fixed across depth, so the end-to-end map
  shrinks like g^D) and ``gaussian_scaled`` (N(0, 1/H): the Gaussian counterpart of the orthogonal start, whose
  product's singular values spread with depth).  Measured: the scaled time T90 = D t90 at which the loss excess
  (loss minus its minimum) has fallen to 10 % of its start, the scaled half-learning time of each distinct mode
  (its column error ‖(W* − W) v_α‖ halved), the spread of the singular values of the input-to-last-hidden map at the
  start, the slope of T90 against D per seed (all depths, and the deep half) with its standard error over seeds
  and the slope of ln T90.  The decoupled start stays decoupled, so its times are compared with the exact mode
  equation (``bnnzoo.theory.dynamics.mode_strength``; the closed form at D = 2) at every depth; the equation's
  half times are also given at depths 16 to 128 and in the D → ∞ limit du/dT = u²(s − u) (the paper's finite,
  depth-independent delay), with the fraction of that limit reached at each depth.
* ``richlazy`` (the rich/lazy claim): one hidden layer (D = 2) from i.i.d. N(0, g²/H) entries, g = ``rl_small``
  (rich) and g = ``rl_large`` (lazy).  Measured per seed: the half-learning time and the 10→90 % width of each
  distinct mode, the gap between consecutive modes' half times over the larger width (stage-like when > 1), the
  loss's t10/t90 (a single exponential from the start gives ln(10/9)/ln 10 = 0.046; a plateau gives much more), the
  participation ratio of the singular values of the learned change W(t) − W(0) on the seen inputs when the loss
  excess is halved (≈ 1: one mode at a time), the relative change of the weights ‖θ_end − θ_0‖/‖θ_0‖, and the final
  map on the unseen inputs against W* there (0) and against its start.  The rich run's mode half times are compared
  with the closed form from the random start's effective strength u0 = ‖W_1 v_α + W_2ᵀ u_α‖²/4 (the growing
  combination of a one-mode two-layer net from an unbalanced start [derived]).
* ``b0`` (claim G7, the talk's "pretraining + fine-tuning takes a time O(D/b0²)"): the decoupled start over a grid
  of depths D (``b0_depths``) and initial mode strengths b0, in two readings of b0 — ``end_to_end`` (every mode of
  the end-to-end map starts at u0 = b0, as the ``depth`` part's u0) and ``per_layer`` (every layer carries the
  modes at b0, so u0 = b0^D) — at the depth part's learning rate η₀/D.  Measured per point: the top mode's (s = 1)
  scaled half-learning time T½ = D t½ and the loss's T90, both also in steps (T / η₀), and the mode equation's
  values at the same point.  Fitted per reading: ln T½ = c + α ln D + β ln b0 over the grid (ordinary least
  squares with its standard errors, with and without the depth or strength whose points move α or β most), for
  the run and for the mode equation; O(D/b0²) in steps at lr ∝ 1/D is α = 1, β = −2 (our reading of the talk's
  statement; in time units t = T/D it is α = 0).
* "A nonlinearity before it is needed" (G15) is not run here: the experiment ``gated_delta`` runs it on a gated
  deep linear network (the JSON records this).

Run: ``python -m reproduce deep_linear_dynamics --size ci|cpu|paper [--parts depth,richlazy,b0] [--depths 2,3,4]
[--seeds 5] [--u0 0.01] [--overwrite]``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from . import _common as C

NAME = "deep_linear_dynamics"
CLAIMS = ("G6", "G7", "G8", "G9", "G10", "G11")
PARTS = ("depth", "richlazy", "b0")
B0_READINGS = ("end_to_end", "per_layer")
INITS = ("decoupled", "orthogonal", "gaussian_small", "gaussian_scaled")
N_IN, N_SEEN, N_OUT = 8, 4, 7
# per size: depths and seeds of the depth part, hidden width, η₀ (lr = η₀/D), record spacing in scaled time, the
# longest scaled time, the stop (loss excess of every seed below this fraction of the zero map's, ½ Σ s²), the
# decoupled start's
# mode strength, the small Gaussian's per-layer scale; the rich/lazy part's width, scales, seeds and η₀ (lr = η₀ /
# the larger of D and a bound on the loss curvature at the start)
SIZES = {
    "ci": dict(depths=(2, 3), seeds=1, hidden=32, eta0=0.01, dT=0.05, T_max=600.0, stop=1e-4, u0=0.01, g_small=0.5,
               rl_hidden=32, rl_small=1e-3, rl_large=4.0, rl_seeds=1, rl_eta0=0.02,
               b0_depths=(2, 3), b0_end_to_end=(0.02, 0.05), b0_per_layer=(0.7, 0.8)),
    "cpu": dict(depths=(2, 3, 4, 5, 6, 7, 8), seeds=5, hidden=32, eta0=0.01, dT=0.05, T_max=1500.0, stop=1e-4,
                u0=0.01, g_small=0.5, rl_hidden=128, rl_small=1e-3, rl_large=4.0, rl_seeds=5, rl_eta0=0.02,
                b0_depths=(2, 3, 4, 6, 8), b0_end_to_end=(0.005, 0.01, 0.02, 0.05),
                b0_per_layer=(0.5, 0.6, 0.7, 0.8)),
    "paper": dict(depths=(2, 3, 4, 5, 6, 7, 8), seeds=5, hidden=128, eta0=0.01, dT=0.05, T_max=1500.0, stop=1e-4,
                  u0=0.01, g_small=0.5, rl_hidden=512, rl_small=1e-3, rl_large=4.0, rl_seeds=5, rl_eta0=0.02,
                  b0_depths=(2, 3, 4, 6, 8, 12, 16), b0_end_to_end=(0.005, 0.01, 0.02, 0.05),
                  b0_per_layer=(0.5, 0.6, 0.7, 0.8)),
}
SAMPLER = "gradient descent (deterministic)"
CLAIM_TEXT = {
    "depth": "at lr = eta0/D, the scaled learning time D*t90 stays bounded as D grows from decoupled starts with fixed "
             "u0 (converging to the D -> infinity limit of the mode equation) and from random orthogonal starts "
             "(nearly flat), and grows with D from small Gaussian (per-layer scale g < 1) and scaled Gaussian "
             "(variance 1/H) starts",
    "closed_form": "from a decoupled start the measured mode trajectories follow the exact mode equation (D = 2: the "
                   "closed form u(t) = s e^{2st}/(e^{2st} - 1 + s/u0)) within the stated tolerances",
    "richlazy": "D = 2: a small start learns the modes one at a time (gap between half times > the transition "
                "widths, low-rank intermediate maps, weights move far: relative change >> 1, unseen inputs mapped "
                "to ~0); a large start learns all modes together with an exponential approach, relative weight "
                "change << 1, and keeps its random map on the unseen inputs",
    "b0": "from the decoupled (pretrained) start, the learning time counted in steps at lr = eta0/D grows as "
          "O(D/b0^2): exponents alpha = 1 in D and beta = -2 in b0 (our reading of the talk's statement)",
    "nonlinearity": "not run",
}
NONLINEARITY = dict(run=False, reason="claim G15 needs a gated (nonlinear) pathway; the experiment gated_delta runs it "
                                      "on a gated deep linear network")
TOL = dict(half_time_rel=0.02, u_max_dev=0.02, T90_rel=0.02, rich_closed_form_rel=0.05)
"""Tolerances of the closed-form comparisons: the decoupled start's half times and T90 within 2 % of the mode
equation's, its mode strengths u(t)/s within 0.02 of it at every record; the rich random start's half times within
5 % of the closed form with its effective strength."""
EXP_T10_T90 = math.log(10 / 9) / math.log(10)



# ------------------------------------------------------------------------------------------------------- the task
def task():
    """(Syx (7, 8), Sx (8, 8), s (4,), U (7, 4), V (8, 4), groups): the hierarchical data of the theory page §9
    scaled to top singular value 1, its singular vectors and the modes grouped by distinct singular value."""
    Y = np.zeros((4, 7))
    Y[:, 0] = 6.0
    Y[:2, 1] = Y[2:, 2] = 4.0
    Y[:, 3:] = 3.0 * np.eye(4)
    Syx = np.zeros((N_OUT, N_IN))
    Syx[:, :N_SEEN] = Y.T
    U, s, Vt = np.linalg.svd(Syx, full_matrices=False)
    k = int(np.sum(s > 1e-9 * s[0]))
    Syx = Syx / s[0]
    U, s, V = U[:, :k], s[:k] / s[0], Vt[:k].T
    Sx = np.diag([1.0] * N_SEEN + [0.0] * (N_IN - N_SEEN))
    groups, i = [], 0
    while i < k:
        j = i + 1
        while j < k and abs(s[j] - s[i]) < 1e-9:
            j += 1
        groups.append(list(range(i, j)))
        i = j
    return Syx, Sx, s, U, V, groups


# -------------------------------------------------------------------------------------------------- initialisation
def _haar(rng, S, n):
    Z = rng.standard_normal((S, n, n))
    Q, R = np.linalg.qr(Z)
    return Q * np.sign(np.diagonal(R, axis1=-2, axis2=-1))[:, None, :]


def _shapes(D, H):
    return [(H, N_IN)] + [(H, H)] * (D - 2) + [(N_OUT, H)]


def init_weights(kind: str, D: int, H: int, S: int, rng, *, u0=0.01, g=1.0, U=None, V=None) -> list[np.ndarray]:
    """D weight stacks (S, rows, cols) for S seeds: ``decoupled`` (every mode of (U, V) at strength u0, balanced),
    ``orthogonal``, or ``gaussian`` (i.i.d. N(0, g²/H))."""
    shapes = _shapes(D, H)
    if kind == "gaussian":
        return [g / math.sqrt(H) * rng.standard_normal((S,) + sh) for sh in shapes]
    if kind == "orthogonal":
        return [_haar(rng, S, H)[:, :r, :c] for r, c in shapes]
    if kind == "decoupled":
        k = U.shape[1]
        a = u0 ** (1.0 / D)
        frames = [np.linalg.qr(rng.standard_normal((S, H, k)))[0] for _ in range(D - 1)]
        left = frames + [np.broadcast_to(U, (S,) + U.shape)]
        right = [np.broadcast_to(V, (S,) + V.shape)] + frames
        return [a * L @ np.swapaxes(R, -1, -2) for L, R in zip(left, right)]
    raise ValueError(f"unknown init {kind!r}")


def curvature_bound(Ws) -> float:
    """max over seeds of Σ_l ‖W_D⋯W_{l+1}‖² ‖W_{l−1}⋯W_1‖² (operator norms): a bound on the loss curvature
    (λ = 1)."""
    D = len(Ws)
    S = Ws[0].shape[0]
    tot = np.zeros(S)
    for l in range(D):
        A = np.broadcast_to(np.eye(Ws[-1].shape[1]), (S,) + (Ws[-1].shape[1],) * 2) if l == D - 1 else None
        for m in range(D - 1, l, -1):
            A = Ws[m] if A is None else A @ Ws[m]
        B = None
        for m in range(l):
            B = Ws[m] if B is None else Ws[m] @ B
        nA = np.linalg.norm(A, ord=2, axis=(-2, -1)) if A is not None else np.ones(S)
        nB = np.linalg.norm(B, ord=2, axis=(-2, -1)) if B is not None else np.ones(S)
        tot += nA**2 * nB**2
    return float(tot.max())


# ------------------------------------------------------------------------------------------------ gradient descent
def gradient_descent(Ws, Syx, Sx, *, lr: float, steps_max: int, record_every: int, stop: float):
    """Full-batch gradient descent on the loss −tr(Σʸˣ Wᵀ) + ½ tr(W Σˣ Wᵀ) (+ const) of the seed stacks ``Ws``
    until the loss excess of every seed is below ``stop`` × ½‖W*‖² (the zero map's excess; checked at the records)
    or ``steps_max``.

    Returns dict(t (n_rec,), excess (S, n_rec), maps (S, n_rec, 7, 8), W0, W (first and final weights), steps,
    stopped (the stop was reached))."""
    Ws = [np.array(W, dtype=float) for W in Ws]
    W0 = [W.copy() for W in Ws]
    D = len(Ws)
    Wstar = Syx  # Σˣ is the projector on the seen inputs: the minimum-norm least-squares map is Σʸˣ
    e_zero = 0.5 * float(np.sum((Wstar @ Sx) ** 2))
    ts, exc, maps = [], [], []
    step = 0
    while True:
        pref = [Ws[0]]
        for l in range(1, D):
            pref.append(Ws[l] @ pref[-1])
        W = pref[-1]
        E = Syx - W @ Sx
        if step % record_every == 0:
            ts.append(step * lr)
            maps.append(W.copy())
            exc.append(0.5 * np.sum(((Wstar - W) @ Sx) ** 2, axis=(-2, -1)))
            if step >= steps_max or np.all(exc[-1] <= stop * e_zero):
                break
        back = E
        for l in range(D - 1, -1, -1):
            g = back @ np.swapaxes(pref[l - 1], -1, -2) if l > 0 else back
            if l > 0:
                back = np.swapaxes(Ws[l], -1, -2) @ back
            Ws[l] += lr * g
        step += 1
    return dict(t=np.asarray(ts), excess=np.stack(exc, axis=1), maps=np.stack(maps, axis=1), W0=W0, W=Ws,
                steps=step, stopped=bool(np.all(exc[-1] <= stop * e_zero)))


def crossing(t, y, level) -> float | None:
    """First time the series ``y`` (rising) reaches ``level``, linearly interpolated; None if never."""
    idx = np.nonzero(y >= level)[0]
    if idx.size == 0:
        return None
    i = int(idx[0])
    if i == 0:
        return float(t[0])
    return float(t[i - 1] + (level - y[i - 1]) / (y[i] - y[i - 1]) * (t[i] - t[i - 1]))


def mode_progress(maps, Wstar, V, groups):
    """(S, n_rec, n_groups) progress 1 − ‖(W* − W(t)) V_g‖ / ‖(W* − W(0)) V_g‖ of every group of modes."""
    out = []
    for gidx in groups:
        err = np.linalg.norm((Wstar - maps) @ V[:, gidx], axis=(-2, -1))
        out.append(1.0 - err / err[:, :1])
    return np.stack(out, axis=-1)


def loss_times(t, excess, fracs=(0.1, 0.5, 0.9)):
    """{f: time at which the loss excess has fallen by the fraction f of its start} per seed."""
    prog = 1.0 - excess / excess[:, :1]
    return {f: [crossing(t, p, f) for p in prog] for f in fracs}


def _ms(vals):
    m, se = C.mean_se(vals)
    return dict(mean=m, se=se, per_seed=list(vals))


def _slope(x, ys):
    """Least-squares slope of y on x per seed (None values dropped), with the mean and s.e. over seeds."""
    per = []
    for y in ys:
        pts = [(a, b) for a, b in zip(x, y) if b is not None]
        per.append(float(np.polyfit([a for a, _ in pts], [b for _, b in pts], 1)[0]) if len(pts) >= 2 else None)
    return _ms(per)


# ----------------------------------------------------------------------------------------------------- the theory
def theory_T(s, u0, D, q: float) -> float:
    """Scaled time T = D t at which a decoupled mode of strength s from u0 reaches u0 + q (s − u0) (D = ∞: the
    limit du/dT = u²(s − u)); closed form for D = 2 and ∞, quadrature otherwise."""
    u1 = u0 + q * (s - u0)
    if D == 2:
        return math.log(u1 * (s / u0 - 1.0) / (s - u1)) / s
    if D == math.inf:
        F = lambda u: -1.0 / (s * u) + math.log(u / (s - u)) / s**2  # noqa: E731
        return F(u1) - F(u0)
    from scipy.integrate import quad

    p = 2.0 - 2.0 / D
    return quad(lambda u: 1.0 / (u**p * (s - u)), u0, u1, epsabs=0, epsrel=1e-11, limit=200)[0]


def theory_trajectory(s, u0, D, T):
    """u_α(T) (n, k) of the decoupled start at scaled times T (``bnnzoo.theory.dynamics.mode_strength``)."""
    from bnnzoo.theory.dynamics import mode_strength

    return np.stack([mode_strength(float(si), np.asarray(T) / D, depth=D, u0=u0) for si in s], axis=-1)


def theory_loss_T(s, u0, D, q: float, T_max: float) -> float | None:
    """Scaled time at which the decoupled start's loss excess ½ Σ (s_α − u_α)² has fallen by the fraction q."""
    T = np.linspace(0.0, T_max, 200001)
    u = theory_trajectory(s, u0, D, T)
    exc = 0.5 * np.sum((s - u) ** 2, axis=-1)
    return crossing(T, 1.0 - exc / exc[0], q)


def decoupled_theory(s, groups, u0, depths=(2, 4, 8, 16, 32, 64, 128)) -> dict:
    """The mode equation's scaled half-learning times of the decoupled start at depths beyond those run, and the
    D → ∞ limit they approach (the paper's finite, depth-independent delay)."""
    half = [[theory_T(float(s[g[0]]), u0, D, 0.5) for g in groups] for D in depths]
    inf = [theory_T(float(s[g[0]]), u0, math.inf, 0.5) for g in groups]
    return dict(depths=list(depths), T_half_modes=half, T_half_modes_infinite_depth=inf,
                fraction_of_infinite_depth=[[a / b for a, b in zip(h, inf)] for h in half])


# --------------------------------------------------------------------------------------------------- depth part
def _descend(Ws, D: int, s_: dict, Syx, Sx):
    """Gradient descent at the depth-scaled rate eta0 / D up to T_max in scaled time; (lr, run, scaled times D t)."""
    lr = s_["eta0"] / D
    g = gradient_descent(Ws, Syx, Sx, lr=lr, steps_max=int(round(s_["T_max"] / s_["eta0"])),
                         record_every=max(1, int(round(s_["dT"] / s_["eta0"]))), stop=s_["stop"])
    return lr, g, g["t"] * D


def depth_entry(kind: str, D: int, s_: dict, seed: int, data) -> dict:
    """Gradient descent from start ``kind`` at depth D over the seeds; times in scaled units T = D t."""
    Syx, Sx, s, U, V, groups = data
    H, S = s_["hidden"], s_["seeds"]
    rng = np.random.default_rng([seed, D, INITS.index(kind)])
    base = dict(decoupled=("decoupled", {}), orthogonal=("orthogonal", {}),
                gaussian_small=("gaussian", dict(g=s_["g_small"])), gaussian_scaled=("gaussian", dict(g=1.0)))
    k, kw = base[kind]
    Ws = init_weights(k, D, H, S, rng, u0=s_["u0"], U=U, V=V, **kw)
    t0 = time.time()
    lr, g, T = _descend(Ws, D, s_, Syx, Sx)
    lt = loss_times(T, g["excess"])
    prog = mode_progress(g["maps"], Syx, V, groups)
    half = [[crossing(T, prog[i, :, j], 0.5) for i in range(S)] for j in range(len(groups))]
    # singular values of the input-to-last-hidden map at the start, on the seen inputs
    R = g["W0"][0]
    for W in g["W0"][1:-1]:
        R = W @ R
    sv = np.linalg.svd(R[:, :, :N_SEEN], compute_uv=False)
    logsd = np.std(np.log(sv), axis=-1)
    cond = sv[:, 0] / sv[:, -1]
    exc = g["excess"]
    mono = bool(np.all(np.diff(exc, axis=1) <= 1e-9 * exc[:, :-1] + 1e-15))
    e = dict(init=kind, depth=D, lr=lr, steps=g["steps"], seconds=round(time.time() - t0, 2),
             stopped=g["stopped"], loss_monotone=mono,
             excess_start=_ms(exc[:, 0].tolist()), excess_end_rel=_ms((exc[:, -1] / exc[:, 0]).tolist()),
             T10=_ms(lt[0.1]), T50=_ms(lt[0.5]), T90=_ms(lt[0.9]),
             T_half_modes=[_ms(h) for h in half],
             hidden_sv_logsd=_ms(logsd.tolist()), hidden_sv_cond=_ms(cond.tolist()))
    if kind == "decoupled":
        e["theory"] = decoupled_check(g, T, s, s_["u0"], D, groups, U, V, half, lt[0.9])
    return e


def decoupled_check(g, T, s, u0, D, groups, U, V, half, T90) -> dict:
    """The decoupled start's trajectory against the exact mode equation (closed form at D = 2)."""
    uth = theory_trajectory(s, u0, D, T)                                   # (n_rec, k)
    ugd = np.einsum("ok,snoi,ik->snk", U, g["maps"], V)                    # (seed, n_rec, k)
    dev = float(np.max(np.abs(ugd - uth[None]) / s))
    th_half = [theory_T(float(s[gi[0]]), u0, D, 0.5) for gi in groups]
    rel = [max(abs(h - th) / th for h in hs if h is not None) if all(h is not None for h in hs) else None
           for hs, th in zip(half, th_half)]
    th_T90 = theory_loss_T(s, u0, D, 0.9, float(T[-1]) * 1.5 + 1.0)
    rel90 = (max(abs(x - th_T90) / th_T90 for x in T90) if th_T90 and all(x is not None for x in T90) else None)
    inf_half = [theory_T(float(s[gi[0]]), u0, math.inf, 0.5) for gi in groups]
    ok = (dev <= TOL["u_max_dev"] and all(r is not None and r <= TOL["half_time_rel"] for r in rel)
          and rel90 is not None and rel90 <= TOL["T90_rel"])
    return dict(T_half_modes=th_half, T_half_modes_rel_error=rel, T90=th_T90, T90_rel_error=rel90,
                u_max_deviation=dev, T_half_modes_infinite_depth=inf_half,
                T_half_fraction_of_infinite_depth=[a / b for a, b in zip(th_half, inf_half)], within_tolerance=ok)


def depth_summary(entries: list[dict], depths) -> dict:
    """Per start: T90 and the mode half times against depth, their slopes per seed (all depths; the deep half) with
    the s.e. over seeds, the slope of ln T90, and T90 at the deepest over the shallowest depth."""
    out = {}
    for kind in INITS:
        es = sorted([e for e in entries if e["init"] == kind], key=lambda e: e["depth"])
        if not es:
            continue
        D = [e["depth"] for e in es]
        per_seed = list(zip(*[e["T90"]["per_seed"] for e in es]))          # seed → T90 per depth
        deep = [i for i, d in enumerate(D) if d >= (min(D) + max(D)) / 2]
        logs = [[math.log(v) if v else None for v in y] for y in per_seed]
        ratio = [(y[-1] / y[0]) if (y[0] and y[-1]) else None for y in per_seed]
        out[kind] = dict(depths=D, T90_mean=[e["T90"]["mean"] for e in es], T90_se=[e["T90"]["se"] for e in es],
                         T_half_modes_mean=[[m["mean"] for m in e["T_half_modes"]] for e in es],
                         T_half_modes_se=[[m["se"] for m in e["T_half_modes"]] for e in es],
                         hidden_sv_logsd=[e["hidden_sv_logsd"]["mean"] for e in es],
                         slope_T90=_slope(D, per_seed),
                         slope_T90_deep=_slope([D[i] for i in deep], [[y[i] for i in deep] for y in per_seed])
                         if len(deep) >= 2 else None,
                         slope_log_T90=_slope(D, logs), ratio_T90_deepest_shallowest=_ms(ratio),
                         all_stopped=all(e["stopped"] for e in es), all_monotone=all(e["loss_monotone"] for e in es))
        if kind == "decoupled":
            out[kind]["theory_T90"] = [e["theory"]["T90"] for e in es]
            out[kind]["theory_within_tolerance"] = all(e["theory"]["within_tolerance"] for e in es)
    return out


# ------------------------------------------------------------------------------------------------ rich/lazy part
def richlazy_entry(regime: str, g_scale: float, s_: dict, seed: int, data) -> dict:
    """One hidden layer from i.i.d. N(0, g²/H) entries; stage-likeness, laziness and the unseen-input map."""
    Syx, Sx, s, U, V, groups = data
    H, S, D = s_["rl_hidden"], s_["rl_seeds"], 2
    rng = np.random.default_rng([seed, 1000, int(g_scale * 1e6)])
    Ws = init_weights("gaussian", D, H, S, rng, g=g_scale)
    lr = s_["rl_eta0"] / max(float(D), curvature_bound(Ws))
    t0 = time.time()
    # records every ~0.01 time units (at most every step), at most T_max/η₀ × 4 steps
    rec = max(1, int(round(0.01 / lr)))
    g = gradient_descent(Ws, Syx, Sx, lr=lr, steps_max=int(round(s_["T_max"] / lr)), record_every=rec,
                         stop=s_["stop"])
    t, exc, maps = g["t"], g["excess"], g["maps"]
    lt = loss_times(t, exc)
    prog = mode_progress(maps, Syx, V, groups)
    q = {f: [[crossing(t, prog[i, :, j], f) for j in range(len(groups))] for i in range(S)] for f in (0.1, 0.5, 0.9)}
    width = [[(b - a) if (a is not None and b is not None) else None for a, b in zip(q[0.1][i], q[0.9][i])]
             for i in range(S)]
    stage = []
    for i in range(S):
        r = []
        for j in range(len(groups) - 1):
            h0, h1, w0, w1 = q[0.5][i][j], q[0.5][i][j + 1], width[i][j], width[i][j + 1]
            r.append((h1 - h0) / max(w0, w1) if None not in (h0, h1, w0, w1) else None)
        stage.append(r)
    plateau = [(a / b) if (a is not None and b) else None for a, b in zip(lt[0.1], lt[0.9])]
    # participation ratio of the learned change on the seen inputs when the loss excess is halved
    pr = []
    for i in range(S):
        th = lt[0.5][i]
        n = int(np.argmin(np.abs(t - th))) if th is not None else len(t) - 1
        sv = np.linalg.svd((maps[i, n] - maps[i, 0])[:, :N_SEEN], compute_uv=False)
        pr.append(float(np.sum(sv**2) ** 2 / np.sum(sv**4)))
    th0 = np.concatenate([W.reshape(S, -1) for W in g["W0"]], axis=1)
    th1 = np.concatenate([W.reshape(S, -1) for W in g["W"]], axis=1)
    rel_change = np.linalg.norm(th1 - th0, axis=1) / np.linalg.norm(th0, axis=1)
    layer_change = [(np.linalg.norm((W1 - W0_).reshape(S, -1), axis=1) / np.linalg.norm(W0_.reshape(S, -1), axis=1))
                    .tolist() for W0_, W1 in zip(g["W0"], g["W"])]
    nstar = float(np.linalg.norm(Syx))
    unseen_end = np.linalg.norm(maps[:, -1, :, N_SEEN:], axis=(-2, -1))
    unseen_start = np.linalg.norm(maps[:, 0, :, N_SEEN:], axis=(-2, -1))
    seen_err = np.linalg.norm((maps[:, -1] - Syx)[:, :, :N_SEEN], axis=(-2, -1)) / nstar
    e = dict(regime=regime, init_scale=g_scale, depth=D, hidden=H, lr=lr, steps=g["steps"],
             seconds=round(time.time() - t0, 2), stopped=g["stopped"],
             loss_monotone=bool(np.all(np.diff(exc, axis=1) <= 1e-9 * exc[:, :-1] + 1e-15)),
             t10=_ms(lt[0.1]), t50=_ms(lt[0.5]), t90=_ms(lt[0.9]),
             t_half_modes=[_ms([q[0.5][i][j] for i in range(S)]) for j in range(len(groups))],
             width_modes=[_ms([width[i][j] for i in range(S)]) for j in range(len(groups))],
             stage_ratio=[_ms([stage[i][j] for i in range(S)]) for j in range(len(groups) - 1)],
             stage_ratio_min=_ms([min(r) if r and None not in r else None for r in stage]),
             t10_over_t90=_ms(plateau), t10_over_t90_single_exponential=EXP_T10_T90,
             participation_ratio_at_t50=_ms(pr), relative_weight_change=_ms(rel_change.tolist()),
             relative_layer_change=[_ms(c) for c in layer_change],
             unseen_map_norm_end_over_target_norm=_ms((unseen_end / nstar).tolist()),
             unseen_map_end_over_start=_ms((unseen_end / unseen_start).tolist()),
             seen_map_error_end=_ms(seen_err.tolist()))
    if regime == "rich":
        # closed form per non-degenerate mode from the start's effective strength ‖W1 v + W2ᵀ u‖²/4 [derived]
        W1, W2 = g["W0"]
        cf = []
        for j, gi in enumerate(groups):
            if len(gi) != 1:
                continue
            a = W1 @ V[:, gi[0]]
            b = np.swapaxes(W2, -1, -2) @ U[:, gi[0]]
            u0 = np.sum((a + b) ** 2, axis=-1) / 4.0
            sj = float(s[gi[0]])
            pred = [math.log(sj / u - 1.0) / (2.0 * sj) for u in u0]
            meas = [q[0.5][i][j] for i in range(S)]
            rel = [abs(m - p) / p if m is not None else None for m, p in zip(meas, pred)]
            cf.append(dict(mode=j, s=sj, u0_effective=_ms(u0.tolist()), t_half_closed_form=_ms(pred),
                           t_half_measured=_ms(meas), rel_error=_ms(rel),
                           within_tolerance=all(r is not None and r <= TOL["rich_closed_form_rel"] for r in rel)))
        e["closed_form"] = cf
    return e


def richlazy_verdicts(rich: dict, lazy: dict) -> dict:
    """The flags of claim G7, each from the numbers beside it."""
    return dict(
        rich_stage_like=bool(rich["stage_ratio_min"]["mean"] is not None and rich["stage_ratio_min"]["mean"] > 1),
        lazy_modes_together=bool(lazy["stage_ratio_min"]["mean"] is not None and lazy["stage_ratio_min"]["mean"] < 1),
        rich_low_rank=bool(rich["participation_ratio_at_t50"]["mean"] < 1.5),
        rich_plateau=bool(rich["t10_over_t90"]["mean"] > 5 * EXP_T10_T90),
        lazy_exponential=bool(lazy["t10_over_t90"]["mean"] < 2 * EXP_T10_T90),
        rich_weights_move_far=bool(rich["relative_weight_change"]["mean"] > 10),
        lazy_weights_stay=bool(lazy["relative_weight_change"]["mean"] < 0.3),
        rich_unseen_near_zero=bool(rich["unseen_map_norm_end_over_target_norm"]["mean"] < 0.01),
        lazy_keeps_unseen_random_part=bool(abs(lazy["unseen_map_end_over_start"]["mean"] - 1) < 0.2
                                           and lazy["unseen_map_norm_end_over_target_norm"]["mean"] > 1),
        both_fit_seen=bool(max(rich["seen_map_error_end"]["mean"], lazy["seen_map_error_end"]["mean"]) < 0.05))


# ------------------------------------------------------------------------------------------------------- b0 part
def b0_entry(reading: str, b0: float, D: int, s_: dict, seed: int, data) -> dict:
    """Gradient descent from the decoupled start at depth D with initial mode strength b0 (``end_to_end``: u0 = b0;
    ``per_layer``: u0 = b0^D); the top mode's scaled half time and the loss's T90 against the mode equation."""
    Syx, Sx, s, U, V, groups = data
    u0 = b0 if reading == "end_to_end" else b0**D
    H, S = s_["hidden"], s_["seeds"]
    rng = np.random.default_rng([seed, D, 100 + B0_READINGS.index(reading), int(round(b0 * 1e6))])
    Ws = init_weights("decoupled", D, H, S, rng, u0=u0, U=U, V=V)
    t0 = time.time()
    lr, g, T = _descend(Ws, D, s_, Syx, Sx)
    prog = mode_progress(g["maps"], Syx, V, groups)
    half = [crossing(T, prog[i, :, 0], 0.5) for i in range(S)]
    T90 = loss_times(T, g["excess"])[0.9]
    th_half = theory_T(float(s[0]), u0, D, 0.5) if u0 < s[0] else None
    th_T90 = theory_loss_T(s, u0, D, 0.9, float(T[-1]) * 1.5 + 1.0)
    return dict(reading=reading, b0=b0, u0=u0, depth=D, lr=lr, steps=g["steps"], stopped=g["stopped"],
                seconds=round(time.time() - t0, 2), T_half_top=_ms(half), T90=_ms(T90),
                steps_half_top=_ms([h / s_["eta0"] if h is not None else None for h in half]),
                theory_T_half_top=th_half, theory_T90=th_T90,
                T_half_top_rel_error=(max(abs(h - th_half) / th_half for h in half)
                                      if th_half and all(h is not None for h in half) else None))


def _joint_fit(pts, drop=None, which=None) -> dict | None:
    """ln y = c + α ln D + β ln b0 over ``pts`` ((D, b0, y) each) by ordinary least squares, optionally without the
    points at D = ``drop`` (which = 1) or b0 = ``drop`` (which = 2): α, β, their standard errors and the largest
    |residual| of ln y."""
    pts = [p for p in pts if p[2] is not None and p[2] > 0 and (drop is None or p[which - 1] != drop)]
    if len(pts) < 4:
        return None
    X = np.column_stack([np.ones(len(pts)), np.log([p[0] for p in pts]), np.log([p[1] for p in pts])])
    if np.linalg.matrix_rank(X) < 3:                      # one depth or one strength only so far
        return None
    y = np.log([p[2] for p in pts])
    coef = np.linalg.lstsq(X, y, rcond=None)[0]
    res = y - X @ coef
    cov = float(res @ res) / (len(y) - 3) * np.linalg.inv(X.T @ X)
    return dict(alpha=float(coef[1]), alpha_se=float(math.sqrt(cov[1, 1])), beta=float(coef[2]),
                beta_se=float(math.sqrt(cov[2, 2])), max_abs_log_residual=float(np.max(np.abs(res))),
                n_points=len(pts))


def b0_fit(pts) -> dict:
    """The joint fit of :func:`_joint_fit` with every point, and without the depth (for α) and the strength (for β)
    whose points change the exponent most."""
    full = _joint_fit(pts)
    out = dict(all=full)
    if full is None:
        return out
    for which, name in ((1, "alpha"), (2, "beta")):
        best = None
        for xd in sorted({p[which - 1] for p in pts}):
            f = _joint_fit(pts, xd, which)
            if f is not None and (best is None or abs(f[name] - full[name]) > abs(best[1][name] - full[name])):
                best = (xd, f)
        out[f"without_most_influential_for_{name}"] = None if best is None else dict(left_out=best[0], **best[1])
    return out


def b0_summary(entries: list[dict]) -> dict:
    """Per reading: the joint fits of the measured T½ (top mode) and T90 (loss), and of the mode equation's."""
    out = {}
    for reading in B0_READINGS:
        es = [e for e in entries if e["reading"] == reading]
        if not es:
            continue
        out[reading] = dict(
            T_half_top=b0_fit([(e["depth"], e["b0"], e["T_half_top"]["mean"]) for e in es]),
            T90=b0_fit([(e["depth"], e["b0"], e["T90"]["mean"]) for e in es]),
            theory_T_half_top=b0_fit([(e["depth"], e["b0"], e["theory_T_half_top"]) for e in es]),
            max_T_half_top_rel_error=max((e["T_half_top_rel_error"] for e in es
                                          if e["T_half_top_rel_error"] is not None), default=None),
            talk_exponents=dict(alpha=1.0, beta=-2.0))
    return out


# ---------------------------------------------------------------------------------------------------------- run
def run(argv=None) -> int:
    argv = [] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--parts", default="depth,richlazy",
                   help="comma-separated, some of depth, richlazy, b0 (default depth,richlazy)")
    p.add_argument("--depths", default=None, help="comma-separated depths D >= 2 (weight matrices; default per size)")
    p.add_argument("--seeds", type=int, default=None, help="seeds per start (default per size: ci 1, cpu 5)")
    p.add_argument("--u0", type=float, default=None,
                   help="mode strength of the decoupled start, 0 < u0 < 0.2 (below the weakest mode; default 0.01)")
    args = p.parse_args(argv)
    C.check_args(args)
    parts = C.name_list(args.parts, "--parts", PARTS)
    s_ = dict(SIZES[args.size])
    if args.depths is not None:
        s_["depths"] = tuple(sorted(C.int_list(args.depths, "--depths", 2)))
    if args.seeds is not None:
        if args.seeds < 1:
            raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
        s_["seeds"] = s_["rl_seeds"] = args.seeds
    if args.u0 is not None:
        if not 0 < args.u0 < 0.2:
            raise ValueError(f"--u0 must lie in (0, 0.2), got {args.u0}")
        s_["u0"] = args.u0
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)
    data = task()
    Syx, Sx, s, U, V, groups = data
    summary = dict(provenance=C.provenance(args, argv), settings=s_, parts=parts, sampler=SAMPLER,
                   claims=dict(CLAIM_TEXT), tolerances=dict(TOL),
                   task=dict(n_in=N_IN, n_seen=N_SEEN, n_out=N_OUT, singular_values=s.tolist(),
                             mode_groups=groups, target_norm=float(np.linalg.norm(Syx))),
                   depth=dict(entries=[], summary={}), richlazy={}, b0=dict(entries=[], summary={}),
                   nonlinearity=dict(NONLINEARITY))
    t_all = time.time()
    if "depth" in parts:
        for D in s_["depths"]:
            for kind in INITS:
                C.log(f"{NAME}: depth {D}, {kind} start, {s_['seeds']} seed(s), hidden {s_['hidden']}")
                e = depth_entry(kind, D, s_, args.seed, data)
                summary["depth"]["entries"].append(e)
                summary["depth"]["summary"] = depth_summary(summary["depth"]["entries"], s_["depths"])
                files.write(summary)
                C.log(f"{NAME}: T90 = {C.fmt(e['T90']['mean'], e['T90']['se'])} ({e['steps']} steps, "
                      f"{e['seconds']} s)")
        summary["depth"]["decoupled_theory"] = decoupled_theory(s, groups, s_["u0"])
        d2 = [e for e in summary["depth"]["entries"] if e["init"] == "decoupled" and e["depth"] == 2]
        summary["closed_form_D2"] = d2[0]["theory"] if d2 else None
    if "richlazy" in parts:
        rl = {}
        for regime, gs in (("rich", s_["rl_small"]), ("lazy", s_["rl_large"])):
            C.log(f"{NAME}: rich/lazy, D = 2, hidden {s_['rl_hidden']}, {regime} start g = {gs}")
            rl[regime] = richlazy_entry(regime, gs, s_, args.seed, data)
            summary["richlazy"] = dict(rl)
            files.write(summary)
        summary["richlazy"]["verdicts"] = richlazy_verdicts(rl["rich"], rl["lazy"])
    if "b0" in parts:
        for reading in B0_READINGS:
            for D in s_["b0_depths"]:
                for b0 in s_[f"b0_{reading}"]:
                    C.log(f"{NAME}: b0 part, {reading} b0 = {b0}, depth {D}")
                    e = b0_entry(reading, b0, D, s_, args.seed, data)
                    summary["b0"]["entries"].append(e)
                    summary["b0"]["summary"] = b0_summary(summary["b0"]["entries"])
                    files.write(summary)
                    C.log(f"{NAME}: T_half(top) = {e['T_half_top']['mean']:.4g} ({e['steps']} steps, "
                          f"{e['seconds']} s)")
    summary["seconds"] = round(time.time() - t_all, 1)
    files.write(summary)
    C.log(f"{NAME}: wrote {files.json}")
    return 0
