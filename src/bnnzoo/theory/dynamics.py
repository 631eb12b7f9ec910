"""Reference learning dynamics of (gated) deep linear networks, to set beside the Bayesian endpoint (docs/theory.md §9).

Two utilities:

* :func:`deep_linear_trajectory` — the closed-form gradient-flow trajectory of a depth-D linear network from a
  balanced, decoupled small initialisation (Saxe, McClelland & Ganguli 2014).  Each singular mode s_α of Σʸˣ whose
  input direction has variance λ_α (Σˣ v_α = λ_α v_α) has strength u_α(t) (the mode's singular value of the
  end-to-end map) obeying  τ du/dt = D u^{2−2/D} (s − λ u),  so that for D = 2

        u(t) = (s/λ) e^{2st/τ} / (e^{2st/τ} − 1 + s/(λ u0))          (docs/theory.md §9 with λ = 1)

  and for D ≥ 3 the ODE is integrated numerically (tolerance 1e-10).  The map is W(t) = Σ_α u_α(t) u_α v_αᵀ → the
  least-squares map Σʸˣ Σˣ⁻¹.  :func:`pathway_trajectories` applies it to each pathway of a GDLN on its gated
  effective dataset (Σʸˣ(p), Σˣ(p, p)) — exact for a pathway that shares no edge with another active pathway; with
  shared edges it is the *isolated* reference that the neural race (shared edges learn faster) departs from.
* :func:`gdln_gradient_descent` — full-batch gradient descent (time t = lr × step, τ = 1) on the effective edge
  maps M_q = c_q W_q of the same GDLN with the loss ½⟨Σ_v ‖y_v − h_v‖²⟩ (mean over examples), recording the loss
  and every pathway's end-to-end map and singular values.

Time units: with the loss as a mean over examples, gradient flow has τ = 1 in the time variable t = lr × step; the
closed form uses the same Σʸˣ = ⟨y xᵀ⟩ and Σˣ = ⟨x xᵀ⟩, so the two agree for a single pathway from a decoupled start
(:func:`decoupled_init`), up to the O(lr) discretisation error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp

from ..models.gated import gated_forward, pathway_map
from ..tasks.gated_tasks import effective_dataset, get_spec

__all__ = ["mode_strength", "deep_linear_trajectory", "DeepLinearTrajectory", "pathway_trajectories",
           "gdln_gradient_descent", "GDTrajectory", "decoupled_init"]


def mode_strength(s: float, t, *, depth: int = 2, u0: float = 1e-3, tau: float = 1.0, lam: float = 1.0) -> np.ndarray:
    """u(t) for one mode of strength ``s`` (input variance ``lam``) from u(0) = ``u0`` in a depth-``depth`` network.

    D = 2 uses the closed form; D >= 3 integrates τ du/dt = D u^{2−2/D}(s − λu) with scipy (rtol 1e-10); D = 1 is
    the linear relaxation u(t) = s/λ + (u0 − s/λ) e^{−λt/τ}.  s = 0 gives the decay of u0 towards 0.
    """
    t = np.asarray(t, dtype=float)
    if depth < 1 or int(depth) != depth:
        raise ValueError(f"depth must be an integer >= 1, got {depth!r}")
    if not (u0 > 0 and tau > 0 and lam > 0):
        raise ValueError("need u0 > 0, tau > 0 and lam > 0")
    if np.any(t < 0):
        raise ValueError("times must be >= 0")
    if depth == 1:
        return s / lam + (u0 - s / lam) * np.exp(-lam * t / tau)
    if depth == 2:
        if s == 0:
            return u0 / (1.0 + 2.0 * lam * u0 * t / tau)
        e = np.exp(np.clip(2.0 * s * t / tau, -700, 700))
        return (s / lam) * e / (e - 1.0 + s / (lam * u0))

    D = int(depth)
    order = np.argsort(t)
    ts = t[order]

    def rhs(_, u):
        uu = np.maximum(u, 0.0)
        return D * uu ** (2.0 - 2.0 / D) * (s - lam * uu) / tau

    sol = solve_ivp(rhs, (0.0, float(ts[-1]) if ts.size else 0.0), [u0], t_eval=ts, rtol=1e-10, atol=1e-14,
                    method="LSODA")
    out = np.empty_like(t)
    out[order] = sol.y[0]
    return out


@dataclass(frozen=True)
class DeepLinearTrajectory:
    """Closed-form gradient-flow trajectory of a deep linear network.

    t : (n_t,) times.  s : (k,) singular values of Σʸˣ.  lam : (k,) input variances along the right singular vectors.
    u : (n_t, k) mode strengths u_α(t) (singular values of the end-to-end map).  maps : (n_t, n_out, n_in) W(t).
    loss : (n_t,) ½⟨‖y − W(t) x‖²⟩ minus its constant part ½⟨‖y‖²⟩ (i.e. −tr(Σʸˣ Wᵀ) + ½ tr(W Σˣ Wᵀ)).
    params : depth, u0, tau.
    """

    t: np.ndarray
    s: np.ndarray
    lam: np.ndarray
    u: np.ndarray
    maps: np.ndarray
    loss: np.ndarray
    params: dict = field(default_factory=dict)


def deep_linear_trajectory(Syx, Sx=None, t=None, *, depth: int = 2, u0: float = 1e-3, tau: float = 1.0,
                           atol: float = 1e-8) -> DeepLinearTrajectory:
    """Gradient-flow trajectory W(t) of a depth-``depth`` linear network on the statistics Σʸˣ (n_out, n_in) and
    Σˣ (n_in, n_in; default identity), from a balanced decoupled start with every mode at ``u0``.

    The closed form needs Σˣ diagonal in the basis of Σʸˣ's right singular vectors (whitened inputs, or inputs that
    share the singular directions); otherwise a ValueError is raised (use :func:`gdln_gradient_descent`).
    """
    Syx = np.atleast_2d(np.asarray(Syx, dtype=float))
    n_out, n_in = Syx.shape
    Sx = np.eye(n_in) if Sx is None else np.asarray(Sx, dtype=float)
    if Sx.shape != (n_in, n_in):
        raise ValueError(f"Sx must be ({n_in}, {n_in}), got {Sx.shape}")
    t = np.linspace(0.0, 10.0, 101) if t is None else np.asarray(t, dtype=float)
    U, s, Vt = np.linalg.svd(Syx, full_matrices=False)
    keep = s > atol * max(1.0, s.max(initial=0.0))
    U, s, Vt = U[:, keep], s[keep], Vt[keep]
    Sv = Vt @ Sx @ Vt.T
    lam = np.diag(Sv).copy()
    if np.any(np.abs(Sv - np.diag(lam)) > 1e-8 * max(1.0, np.abs(Sx).max())) or \
            np.any(np.abs(Sx @ Vt.T - Vt.T * lam) > 1e-8 * max(1.0, np.abs(Sx).max())):
        raise ValueError("the closed form needs Σˣ to be diagonal in the right singular basis of Σʸˣ (whitened "
                         "inputs); use gdln_gradient_descent for general statistics")
    if np.any(lam <= 0):
        raise ValueError("Σˣ has zero variance along a direction where Σʸˣ is non-zero")
    u = np.stack([mode_strength(si, t, depth=depth, u0=u0, tau=tau, lam=li) for si, li in zip(s, lam)], axis=-1) \
        if s.size else np.zeros((t.size, 0))
    maps = np.einsum("ok,tk,ki->toi", U, u, Vt)
    loss = -np.einsum("oi,toi->t", Syx, maps) + 0.5 * np.einsum("toi,ij,toj->t", maps, Sx, maps)
    return DeepLinearTrajectory(t=t, s=s, lam=lam, u=u, maps=maps, loss=loss,
                                params=dict(depth=int(depth), u0=float(u0), tau=float(tau)))


def pathway_trajectories(spec, X, Y, t=None, *, u0: float = 1e-3, tau: float = 1.0,
                         pathways: Sequence[str] | None = None) -> dict[str, DeepLinearTrajectory]:
    """Isolated-pathway closed forms: :func:`deep_linear_trajectory` on each pathway's effective dataset
    (Σʸˣ(p), Σˣ(p, p)) with the pathway's depth.  Pathways never active on (X, Y) are skipped."""
    spec = get_spec(spec)
    out = {}
    for p in spec.pathways:
        if pathways is not None and p.name not in pathways:
            continue
        eff = effective_dataset(spec, X, Y, p)
        if eff.n_active == 0:
            continue
        out[p.name] = deep_linear_trajectory(eff.Syx, eff.Sx, t, depth=p.depth, u0=u0, tau=tau)
    return out


@dataclass(frozen=True)
class GDTrajectory:
    """Full-batch gradient descent on a GDLN.

    t : (n_rec,) times lr × step of the records.  loss : (n_rec,) ½⟨Σ_v ‖y_v − h_v‖²⟩.
    maps : pathway name → (n_rec, n_out, n_in) end-to-end maps.  sv : pathway name → (n_rec, k) singular values.
    final : edge name → final effective map M_q.  params : lr, steps, init_scale, seed, ...
    """

    t: np.ndarray
    loss: np.ndarray
    maps: dict
    sv: dict
    final: dict
    params: dict = field(default_factory=dict)


def decoupled_init(spec, pathway: str, Syx, u0: float = 1e-3, seed: int = 0, rest_scale: float = 0.0) -> dict:
    """Effective edge maps for a balanced start aligned with the singular vectors of ``Syx`` on ``pathway``: each
    edge carries the modes with strength u0^{1/D} through random orthonormal hidden frames, so the end-to-end map
    starts at u0 · U Vᵀ.  Edges off the pathway get N(0, rest_scale²) entries (0 by default)."""
    spec = get_spec(spec)
    p = spec.pathway(pathway)
    rng = np.random.default_rng(seed)
    U, s, Vt = np.linalg.svd(np.atleast_2d(np.asarray(Syx, dtype=float)), full_matrices=False)
    k = len(s)
    D = p.depth
    a = u0 ** (1.0 / D)
    M = {e: rest_scale * rng.standard_normal((spec.sizes[t], spec.sizes[s_])) for e, s_, t in spec.edges}
    frames = []
    for n in p.nodes[1:-1]:
        if spec.sizes[n] < k:
            raise ValueError(f"hidden node {n!r} (size {spec.sizes[n]}) is narrower than the rank {k} of Syx")
        Q, _ = np.linalg.qr(rng.standard_normal((spec.sizes[n], k)))
        frames.append(Q)
    left = frames + [U]
    right = [Vt.T] + frames
    for e, L, R in zip(p.edges, left, right):
        M[e] = a * L @ R.T
    return M


def gdln_gradient_descent(spec, X, Y, *, steps: int = 2000, lr: float = 0.05, init_scale: float = 1e-2,
                          init: Mapping | None = None, seed: int = 0, record_every: int = 10,
                          pathways: Sequence[str] | None = None) -> GDTrajectory:
    """Full-batch gradient descent on the effective edge maps M_q of the GDLN ``spec`` on packed data (X, Y).

    Parameters
    ----------
    steps, lr : number of steps and learning rate (time t = lr × step, τ = 1).  Gradient descent follows the flow
        only for lr well below 2/λ_max of the loss Hessian: check that ``loss`` decreases monotonically (on the
        routing task with hidden = 8, lr = 0.1 converges to zero loss, lr = 0.5 stalls at edge of stability).
    init_scale : std of the i.i.d. Gaussian start of every M_q entry (ignored when ``init`` is given).
    init : optional {edge: (n_target, n_source) map} start (e.g. :func:`decoupled_init`).
    record_every : record the loss and the pathway maps every this many steps (and at step 0).
    pathways : pathway names to record (default all).
    """
    spec = get_spec(spec)
    X = jnp.asarray(np.asarray(X, dtype=float))
    Y = jnp.asarray(np.asarray(Y, dtype=float))
    if steps < 1 or record_every < 1 or not lr > 0:
        raise ValueError("need steps >= 1, record_every >= 1 and lr > 0")
    rng = np.random.default_rng(seed)
    if init is None:
        M0 = {e: init_scale * rng.standard_normal((spec.sizes[t], spec.sizes[s])) for e, s, t in spec.edges}
    else:
        M0 = {e: np.asarray(init[e], dtype=float) for e in spec.edge_names}
    M0 = {e: jnp.asarray(v) for e, v in M0.items()}
    names = [p.name for p in spec.pathways if pathways is None or p.name in pathways]

    def loss_fn(M):
        _, f = gated_forward(spec, M, X)
        return 0.5 * jnp.mean(jnp.sum((Y - f) ** 2, axis=1))

    grad = jax.jit(jax.value_and_grad(loss_fn))

    @jax.jit
    def block(M):
        def body(M, _):
            val, g = jax.value_and_grad(loss_fn)(M)
            return {e: M[e] - lr * g[e] for e in M}, val

        M, _ = jax.lax.scan(body, M, None, length=record_every)
        return M

    n_rec = steps // record_every + 1
    t_rec, losses = [], []
    maps = {n: [] for n in names}
    M = M0
    for r in range(n_rec):
        val, _ = grad(M)
        t_rec.append(r * record_every * lr)
        losses.append(float(val))
        Mn = {e: np.asarray(v) for e, v in M.items()}
        for n in names:
            maps[n].append(pathway_map(spec, Mn, n))
        if r < n_rec - 1:
            M = block(M)
    maps = {n: np.stack(v) for n, v in maps.items()}
    sv = {n: np.linalg.svd(v, compute_uv=False) for n, v in maps.items()}
    return GDTrajectory(t=np.asarray(t_rec), loss=np.asarray(losses), maps=maps, sv=sv,
                        final={e: np.asarray(v) for e, v in M.items()},
                        params=dict(steps=int(steps), lr=float(lr), init_scale=float(init_scale), seed=int(seed),
                                    record_every=int(record_every), init="given" if init is not None else "random"))
