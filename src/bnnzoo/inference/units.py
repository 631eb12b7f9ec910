"""Unit-wise Metropolis–Hastings moves with the readout integrated out — an exact sampler for the one-hidden-layer
fully-connected net with the non-lazy readout on orthogonal inputs (docs/theory.md §12).

Model (:func:`bnnzoo.models.fcn.fcn`, depth 1, ``readout="nonlazy"``; rows convention ``X`` (P, N0), ``Y`` (P, m))::

    h_iμ = w_i·x_μ / √N0,   f_μ = (1/N) Σ_i a_i φ(h_iμ),   y_μr ~ N(f_μr, v),  v = T/N,
    w_i ~ N(0, σ_w² I),   a_i ~ N(0, σ_a² I).

Given the preactivations H (N × P) the readout is Gaussian and integrates out; with orthogonal inputs
(x_μ·x_ν / N0 = κ_μ δ_μν) the rows h_i are independent N(0, diag s²) a priori, s_μ² = σ_w² κ_μ:

    log π(H) = Σ_iμ log N(h_iμ; 0, s_μ²) + Σ_r log N(y_r; 0, Σ(H)),   Σ(H) = c ΦᵀΦ + v I_P,  c = σ_a²/N²,  Φ = φ(H).

**One move** updates one unit's preactivation vector h_i (length P) by Metropolis–Hastings with an *independence*
proposal built from the cavity (the other units only, so it does not depend on h_i).  With B = Σ_{−i}⁻¹ (Σ without
unit i's term) the matrix determinant lemma and Sherman–Morrison give the part of log π that depends on h_i, exactly:

    ℓ(φ) = −(m/2) log(1 + c φᵀBφ) + (c/2) Σ_r (φᵀB y_r)² / (1 + c φᵀBφ),      φ = φ(h_i),

so a move costs O(P²): Σ⁻¹ is carried through the sweep by rank-one updates (B = Σ⁻¹ + c u uᵀ/(1 − c φᵀu),
u = Σ⁻¹φ_i; after the move Σ⁻¹ = B − c w wᵀ/(1 + c φ'ᵀw), w = Bφ') and recomputed from a Cholesky factor at the start
of every sweep, all in float64 (Σ's condition number is about σ_a² P E[φ²]/(N v), 1e3–1e5 at the paper's settings).

**The proposal** (docs/theory.md §12): the cavity field λ = B Y / N (P × m) and the others' posterior-mean readouts
Ā = (σ_a²/N) Φ B Y; a template t_k ∈ ℝᵐ per code k (the class-mean signs of a unit's preactivations, as in
:mod:`bnnzoo.diagnostics.codes`; the classes are argmax Y, or with one output the task's labels) — the mean
of Ā over the other units holding code k, or for a code no other unit holds
the least-squares readout whose class fields λ̄_cᵀt have that code's signs at the held templates' typical size — with
mixture weights ∝ (other units on code k) + 1.  Given the template, every point is drawn independently from the tilted
density  q_kμ(h) ∝ N(h; 0, s_μ²) exp(g_kμ φ̃_μ(h)),  g_kμ = λ_μ·t_k,  where φ̃_μ is φ interpolated linearly between
fixed breakpoints s_μ·u_b (linear continuation beyond the outer ones).  On each piece the density is a Gaussian, so its
mass is a difference of normal CDFs and q is normalised exactly (no grid, no quadrature): the proposal density
q(h) = Σ_k w_k Π_μ q_kμ(h_μ) is evaluated exactly and the chain targets π(H) exactly.  For linear and ReLU φ (a
breakpoint at 0) φ̃ = φ and q_kμ *is* the tilted density of the mean field's single-neuron conditional on branch k.
With more than :data:`MAX_CODE_CLASSES` code classes the components are the other units' own Ā_j (N − 1 of them)
instead of the 2^C codes.

**The self term.**  A unit with readout t adds −|t|² φᵀBφ / 2N² to the exponent (its own contribution to the output).
The proposal keeps it exactly along the reference activation φ̄_k (the mean φ of the other units on code k: the cross
term 2 φ̄_kᵀB(φ − φ̄_k) is linear in φ and goes into the tilt) and diagonally for φ − φ̄_k (−½ d_kμ φ_μ², d_kμ =
|t_k|² B_μμ / N², still one Gaussian per piece).  ``self_term="ref"`` is the default because it accepted best of
the three on the sigmoidal net (against the diagonal alone, ``"diag"``, and none, the mean field's tilt ``"none"``;
``benchmarks/results/units_proposals.md``).

**The common scale.**  Unit moves change the kernel one rank at a time, so its overall scale (traded against the
readout's, q_a) relaxes slowly; once per sweep all of H is multiplied by γ, log γ ~ N(0, :data:`SCALE_STEP`² / NP),
accepted with π(γH) γ^{NP} / π(H) (the Jacobian of H → γH).

**The signal.**  The part of every unit's preactivations along the targets' directions (the class indicators and
Y's columns, in prior-whitened coordinates; r of them) sets how strongly the whole layer carries the task, traded
against the readout's size; unit moves change it one unit at a time and the common scale only along with all the
noise directions.  Once per sweep that part of every unit is multiplied by one γ, log γ ~ N(0,
:data:`SIGNAL_STEP`² / N r), accepted with π(H') γ^{N r} / π(H) (the map is linear, its Jacobian γ^{N r}).  On by
default for the readout norm's mixing on the linear net (``benchmarks/results/units_signal.md``).

**The own-readout step.**  An independence sampler stays where the target has far more mass than the proposal: a
unit whose readout is unlike its code's template (e.g. weak on one of its classes) can reject every try for hundreds
of sweeps.  After its tries every unit takes one more MH step whose proposal has the same tilted form with the template
replaced by the unit's own posterior-mean readout given the cavity, t(φ) = (σ_a²/N) φᵀBY / (1 + c φᵀBφ) (the self
term along the reference φ̄ of the unit's code).  That proposal depends on the state, so the ratio carries the reverse
density: π(h') q(h | t(φ')) / (π(h) q(h' | t(φ))).  On by default, as ``benchmarks/results/units_own.md`` decides;
``own=False`` leaves it out.

**The local steps.**  ``local`` Metropolis-adjusted Langevin (MALA) steps per unit after its other moves, on the
unit's conditional π(h_i | the others) = prior × e^{ℓ(φ(h_i))}: h' = h + ½ε²s²∇ log π(h) + ε s ξ (elementwise in the
prior sd s_μ), accepted with the reverse density in the ratio; every step draws its size ε log-uniformly in
:data:`LOCAL_STEP` (independent of the state).  The gradient is exact and costs one O(P²) product B φ', the one the
acceptance needs anyway.  They move a unit that no proposal of the mixture covers, by small steps.

**The radial steps.**  ``radial`` Metropolis steps per unit after its local steps scale the unit's whole row,
h_i → γ h_i, log γ ~ N(0, σ²) with σ log-uniform in :data:`RADIAL_STEP` (independent of the state), accepted with
π(γh_i | the others) γ^P / π(h_i | the others) (the Jacobian of the map in P dimensions).  A local step moves a
unit's radius |h_i/s| by about the step's size (:data:`LOCAL_STEP`), a small relative change for an outlier, whose
preactivations are several times the bulk's (growing as √N); the radial step changes the radius by a relative amount.

**The pair rotations.**  The ReLU net carries each class on a few outlier units (large readouts and
preactivations); their conditionals given the others are narrow, so they accept few of their own moves and the
number of outliers per class stays where the chain started (``benchmarks/results/units_relu_diagnose.md``).  Splitting
an outlier into two or merging two costs little in π — φ(γh) = γφ(h), and two units with one sign pattern enter Σ
only through the sum of their φφᵀ — but no single-unit move crosses the states in between.  So after its unit moves
every sweep makes round(``pairs`` · N) Metropolis rotations of two units' rows, the same angle θ at every point:
(h_i, h_j) → (h_i cos θ − h_j sin θ, h_i sin θ + h_j cos θ), |θ| log-uniform in :data:`PAIR_ANGLE` with a random
sign.  The rotation keeps the prior (isotropic in each point's pair) and n_i + n_j (n = |h/s|², prior-whitened); the
pair is drawn with its first unit ∝ n and its second ∝ n among the rest (the outliers are drawn often), so the ratio
carries the pair's probability after over before the move; the likelihood changes by a rank-4 update of Σ (a 4 × 4
system, O(P²) per rotation).  For the linear net a rotation keeps ΦᵀΦ.  On by default for the ReLU net's outlier
counts, as ``benchmarks/results/units_pairs.md`` decides.

**Which moves by default** (:func:`default_moves`): :data:`TRIES` tries, the own-readout step and :data:`LOCAL` local
steps, because on the sigmoidal nets only the tries move codes (``benchmarks/results/units_budget.md``); the ReLU net
takes 16 local steps and no tries or own-readout step (:data:`MOVES_BY_ACTIVATION`), which mix its q_a faster per
second (``benchmarks/results/units_budget_relu_pairs.md``), and 4 radial steps, which mix its outliers' sizes
(``benchmarks/results/units_radial_relu_n200.md``); the sigmoidal net takes none (no clear gain there,
``benchmarks/results/units_radial_sig_n100.md``).

**Where it is weak.**  Without the local steps units can reject every move for the whole run
(``benchmarks/results/units_own.md``); the ReLU net's populations mix slowest (``benchmarks/results/units_local.md``,
``benchmarks/results/units_pairs.md``).
With N ≤ P the cavity leaves directions that only unit i can fill (B's eigenvalue N/T there);
the per-point proposal does not see them, so the tries accept few moves there.

**Recorded draws** are exact draws of the full posterior: given H, the readout a | H is Gaussian (Matheron's rule
with Σ's Cholesky factor), and W | H is the prior conditioned on the linear constraint X w_i = √N0 h_i.

Cost: a sweep (N moves) is O(N P² + N K P J) with K mixture components and J = :data:`BREAKS` + 1 pieces, plus one
O(P³) refresh; chains are batched (``jax.vmap``), units run in sequence (``jax.lax.scan``).
"""

from __future__ import annotations

import logging
import math
import time

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from jax.scipy.linalg import cho_solve
from jax.scipy.special import erfc, log_ndtr, logsumexp, ndtri

from ..models.activations import get_activation, np_activation
from ..models.fcn import default_sigma_a2, fcn, recorded_layers
from ..models.summaries import layer_summaries
from .._log import Progress
from .chunked import _check_manifest, _check_store, plan_blocks
from .compilation import compile_cached
from .store import RunStore, load_state, manifest_digest, save_state

__all__ = ["units_chains", "check_units", "check_moves", "default_moves", "BREAKS", "TRIES", "MAX_CODE_CLASSES",
           "MOVE_OPTIONS", "refusal"]

_logger = logging.getLogger(__name__)

BREAKS = (-3.0, -2.0, -1.25, -0.75, -0.25, 0.0, 0.25, 0.75, 1.25, 2.0, 3.0)
"""Breakpoints of the piecewise-linear φ̃ in units of the prior sd s_μ (0 among them, so ReLU is exact)."""

SCALE_STEP = 1.0
"""Step of the common-scale move per sweep: log γ ~ N(0, SCALE_STEP² / (N P)); 0 leaves the move out."""

SIGNAL_STEP = 1.0
"""Step of the signal move per sweep: every unit's component along the targets' r directions scaled by one γ,
log γ ~ N(0, SIGNAL_STEP² / (N r)); 0 leaves the move out."""

SELF_TERMS = ("ref", "diag", "none")
"""How the proposal treats a unit's self term −|t|² φᵀBφ/2N²: "ref" exact along the reference φ̄ and diagonal for
φ − φ̄, "diag" diagonal, "none" left out (the mean field's tilt)."""

TRIES = 8
"""Independence proposals per unit and sweep from the same cavity (each a valid MH step): the cavity and the
proposal's pieces are computed once, so extra tries are cheap next to the code changes they buy
(``benchmarks/results/units_tries.md``)."""

OWN = True
"""Whether every unit also takes one MH step whose proposal is tilted by the unit's own posterior-mean readout (module
docstring, "The own-readout step")."""

LOCAL = 4
"""Local (MALA) steps per unit and sweep after its other moves (module docstring, "The local steps"); 0 leaves
them out.  On by default, as ``benchmarks/results/units_local.md`` decides."""

RADIAL = 0
"""Radial steps per unit and sweep after its local steps (module docstring, "The radial steps"); 0 leaves them out."""

RADIAL_STEP = (0.005, 0.2)
"""Range of a radial step's sd in log γ: each step draws it log-uniformly in this range (independent of the state),
then log γ from a normal with that sd."""

MOVES_BY_ACTIVATION = {"relu": (0, False, 16, 4)}
"""(tries, own, local, radial) where an activation's own defaults differ from (TRIES, OWN, LOCAL, RADIAL): the ReLU net
takes 16 local steps and no tries or own-readout step, which mix its q_a faster per second
(``benchmarks/results/units_budget_relu_pairs.md``), and 4 radial steps, which mix it faster again
(``benchmarks/results/units_radial_relu_n200.md``)."""


def default_moves(activation: str, tries=None, own=None, local=None, radial=None) -> tuple[int, bool, int, int]:
    """(tries, own, local, radial) with each None replaced by the activation's default (:data:`MOVES_BY_ACTIVATION`,
    else TRIES, OWN, LOCAL, RADIAL)."""
    d = MOVES_BY_ACTIVATION.get(activation, (TRIES, OWN, LOCAL, RADIAL))
    return (d[0] if tries is None else int(tries), d[1] if own is None else bool(own),
            d[2] if local is None else int(local), d[3] if radial is None else int(radial))


MOVE_OPTIONS = ("tries", "own", "local", "pairs", "radial")
"""The moves ``bnnzoo.sample(..., sampler="units", moves={...})`` sets, each as :func:`units_chains` takes it."""

MOVE_COUNTS = ("tries", "local", "radial")
"""The moves of :data:`MOVE_OPTIONS` given as counts per unit and sweep (integers >= 0); "own" is a bool and "pairs"
a number >= 0."""


def check_unit_moves(tries: int, own: bool, local: int) -> None:
    """Raise ValueError (one line) unless a move is left that changes a unit's code: tries >= 1, own or local >= 1
    (pair rotations and radial steps alone keep every unit's sign pattern or its direction)."""
    if tries < 1 and not own and local < 1:
        raise ValueError(f"moves must leave a move that changes a unit (tries >= 1, own=True or local >= 1), got "
                         f"tries={tries}, own={own}, local={local}")


def check_moves(moves, activation: str = "sigmoid") -> dict:
    """``moves`` of :func:`bnnzoo.sample` checked: {name: value} with names among :data:`MOVE_OPTIONS` ("tries",
    "local" and "radial" integers >= 0, "own" a bool, "pairs" a number >= 0), at least one move that changes a
    unit's code (:func:`check_unit_moves`, the unset ones at the activation's defaults).  Returns the dict with its
    values as Python int / bool / float; raises ValueError (one line) otherwise."""
    if not isinstance(moves, dict):
        raise ValueError(f"moves must be a dict with keys among {', '.join(MOVE_OPTIONS)}, got "
                         f"{type(moves).__name__}")
    if bad := sorted(set(map(str, moves)) - set(MOVE_OPTIONS)):
        raise ValueError(f"moves keys must be among {', '.join(MOVE_OPTIONS)}, got {bad}")
    out = {}
    for k, v in moves.items():
        if k == "own":
            if not isinstance(v, (bool, np.bool_)):
                raise ValueError(f"moves['own'] must be True or False, got {v!r}")
            out[k] = bool(v)
        elif k in MOVE_COUNTS:
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"moves[{k!r}] must be an integer >= 0, got {v!r}")
            out[k] = int(v)
        else:
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(float(v)) or v < 0:
                raise ValueError(f"moves['pairs'] must be a number >= 0 (pair rotations per unit and sweep), got {v!r}")
            out[k] = float(v)
    check_unit_moves(*default_moves(activation, out.get("tries"), out.get("own"), out.get("local"))[:3])
    return out


PAIRS = 0.5
"""Pair rotations per unit and sweep (module docstring, "The pair rotations"): round(PAIRS · N) rotations of two
units' preactivation rows; 0 leaves them out.  On by default, as ``benchmarks/results/units_pairs.md`` decides."""

PAIR_ANGLE = (0.05, 1.5)
"""Range of a pair rotation's angle |θ| in radians: log-uniform in it, with a random sign (a symmetric law)."""

LOCAL_STEP = (0.1, 0.7)
"""Range of the local steps' size in prior sd units: each step draws its size log-uniformly in it (a random choice
independent of the state, so every step is reversible on its own)."""

MAX_CODE_CLASSES = 4
"""Up to this many code classes the mixture has one component per code (2^C); beyond it one per other unit."""

ORTHOGONALITY_TOL = 1e-8

_SQRT_HALF = math.sqrt(0.5)


# ------------------------------------------------------------------------------------------------ refusals
def refusal(kw: dict, X) -> str | None:
    """Why ``sampler="units"`` cannot serve a run of the fully-connected net with model arguments ``kw`` on inputs
    ``X``, as one line; None when it can."""
    depth = int(kw.get("depth", 1))
    if depth != 1:
        return (f"sampler='units' integrates out the readout of a one-hidden-layer net: it needs depth=1, got "
                f"depth={depth}")
    if kw.get("readout", "nonlazy") != "nonlazy":
        return (f"sampler='units' needs the non-lazy (mean-field) readout, readout='nonlazy', got "
                f"readout={kw.get('readout')!r}")
    X = np.asarray(X, dtype=float)
    K0 = X @ X.T / X.shape[1]
    d = np.diag(K0)
    off = np.max(np.abs(K0 - np.diag(d))) if len(d) > 1 else 0.0
    if np.any(d <= 0) or off > ORTHOGONALITY_TOL * max(float(np.max(d)), 1.0):
        return (f"sampler='units' needs mutually orthogonal inputs (X Xᵀ diagonal, e.g. bnnzoo.toy_task), got "
                f"max off-diagonal |x_μ·x_ν|/N0 = {off:.3g}")
    return None


def check_units(entry, kw: dict, X, init="prior", num_chains: int = 1) -> None:
    """Raise ValueError (one line) when ``sampler="units"`` cannot serve this entry, these model arguments and
    starting values ``init`` ("prior" or {site: array (chain, ...)} holding "W1")."""
    if entry is None or entry.model is not fcn:
        name = "a plain NumPyro model" if entry is None else f"zoo entry {entry.name!r}"
        raise ValueError(f"sampler='units' needs a one-hidden-layer fully-connected zoo entry with the non-lazy "
                         f"readout (e.g. 'sigmoidal', 'relu', 'deep_linear'), not {name}")
    why = refusal(kw, X)
    if why:
        raise ValueError(why)
    if isinstance(init, dict):
        X = np.asarray(X)
        _start_from(init, int(num_chains), int(kw["width"]), X.shape[1], X)


# ------------------------------------------------------------------------------------------------ the kernel (JAX)
def _log_diff_ndtr(a, b):
    """log(Φ(b) − Φ(a)) for a ≤ b (either may be ±inf), from two erfc values on the side of the tail, where they
    keep their relative precision (cheaper than two ``log_ndtr`` calls); a mass below about e^−700 underflows to
    zero (−inf)."""
    upper = a > 0                                  # Φ(b) − Φ(a) = ½[erfc(a/√2) − erfc(b/√2)]
    lower = b < 0                                  # ½[erfc(−b/√2) − erfc(−a/√2)]
    tail = upper | lower                           # else a ≤ 0 ≤ b: 1 − ½erfc(−a/√2) − ½erfc(b/√2)
    e1 = erfc(jnp.where(upper, a, jnp.where(lower, -b, -a)) * _SQRT_HALF)      # in a tail the larger one
    e2 = erfc(jnp.where(upper, b, jnp.where(lower, -a, b)) * _SQRT_HALF)
    safe = jnp.where(e1 > 0, e1, 1.0)
    in_tail = jnp.where(e1 > 0, jnp.log(0.5 * safe) + jnp.log1p(-e2 / safe), -jnp.inf)
    return jnp.where(tail, in_tail, jnp.log1p(-0.5 * (e1 + e2)))


def _unbatched(fn):
    """``fn`` (arrays → arrays) whose batched form (under ``jax.vmap``) on a CPU runs the batch one member after
    another (``lax.map``; on other backends it is batched as usual).  XLA's CPU LAPACK calls (Cholesky, triangular
    solve) hand a batch to the intra-op thread pool and wait for it; inside this sampler's loops, with the pool's
    threads busy in matrix products, that wait never ends (jax 0.10, P >= 200, two or more chains)."""
    f = jax.custom_batching.custom_vmap(fn)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        args = [x if b else jnp.broadcast_to(x, (axis_size,) + x.shape) for x, b in zip(args, in_batched)]
        if jax.default_backend() == "cpu":
            out = jax.lax.map(lambda xs: fn(*xs), tuple(args))
        else:
            out = jax.vmap(fn)(*args)
        return out, jax.tree.map(lambda _: True, out)

    return f


@_unbatched
def _spd_solve(S, B):
    """S⁻¹ B for a symmetric positive-definite S, by its Cholesky factor."""
    return cho_solve((jnp.linalg.cholesky(S), True), B)


@_unbatched
def _spd_logdet_quad(S, Y):
    """(log det S, tr(Yᵀ S⁻¹ Y)) for a symmetric positive-definite S."""
    L = jnp.linalg.cholesky(S)
    return 2.0 * jnp.sum(jnp.log(jnp.diag(L))), jnp.sum(Y * cho_solve((L, True), Y))


@_unbatched
def _small_solve(M, R):
    """(sign of det M, log |det M|, M⁻¹ R) for a small square M (the pair rotations' 4 × 4 system)."""
    sign, logdet = jnp.linalg.slogdet(M)
    return sign, logdet, jnp.linalg.solve(M, R)


def _truncnorm(u, lo, hi):
    """Standard-normal draws truncated to [lo, hi] (elementwise; either may be ±inf) from uniforms u, by the inverse
    CDF on the side of the tail."""
    flip = lo > 0                                  # sample −z on [−hi, −lo]: the lower tail keeps the precision
    a = jnp.where(flip, -hi, lo)
    b = jnp.where(flip, -lo, hi)
    la, lb = log_ndtr(a), log_ndtr(b)
    # log Φ(z) = log(Φ(a) + u (Φ(b) − Φ(a))) = lb + log(e^{la − lb} + u (1 − e^{la − lb}))
    r = jnp.exp(jnp.minimum(la - lb, 0.0))
    z = ndtri(jnp.exp(lb + jnp.log(r + u * (1.0 - r))))
    z = jnp.clip(z, a, b)
    return jnp.where(flip, -z, z)


def _categorical(u, logp):
    """Index drawn from the (unnormalised) log probabilities on the last axis by the inverse CDF of uniforms u."""
    p = jnp.exp(logp - jnp.max(logp, axis=-1, keepdims=True))
    cdf = jnp.cumsum(p, axis=-1)
    return jnp.minimum(jnp.sum(cdf < u[..., None] * cdf[..., -1:], axis=-1), logp.shape[-1] - 1)


def _label_onehot(labels, P: int) -> np.ndarray:
    """(P, C) indicators of the C classes present in ``labels`` (P,) ints, in increasing order; one class (a column
    of ones) for None."""
    if labels is None:
        return np.ones((P, 1))
    lab = np.asarray(labels)
    if lab.shape != (P,) or lab.dtype.kind not in "iu" or (P and lab.min() < 0):
        raise ValueError(f"labels must be {P} non-negative integers (one class per point), got shape {lab.shape} "
                         f"and dtype {lab.dtype}")
    return (lab[:, None] == np.unique(lab)[None, :]).astype(float) if P else np.ones((0, 1))


class _Kernel:
    """The unit-wise kernel of one net (float64 constants); its methods are traced by :func:`units_chains`."""

    def __init__(self, X, Y, *, width, activation, temperature, sigma_a2, sigma_w2, breaks=BREAKS, tries=None,
                 self_term="ref", scale_step=SCALE_STEP, signal_step=SIGNAL_STEP, own=None, local=None,
                 local_step=LOCAL_STEP, pairs=PAIRS, pair_angle=PAIR_ANGLE, labels=None, radial=None,
                 radial_step=RADIAL_STEP):
        tries, own, local, radial = default_moves(activation, tries, own, local, radial)

        X = np.asarray(X, float)
        Y = np.asarray(Y, float)
        self.P, self.N0 = X.shape
        self.m = Y.shape[1]
        self.N = int(width)
        self.v = float(temperature) / self.N
        self.sa2 = float(sigma_a2)
        self.c = self.sa2 / self.N**2
        self.sw2 = float(sigma_w2)
        self.phi = get_activation(activation)
        self.activation = activation
        self.tries = int(tries)
        if self_term not in SELF_TERMS:
            raise ValueError(f"self_term must be one of {SELF_TERMS}, got {self_term!r}")
        self.self_term = self_term
        self.scale_step = float(scale_step)
        self.signal_step = float(signal_step)
        self.own = bool(own)
        self.local = int(local)
        self.local_step = tuple(float(x) for x in local_step)
        if self.local < 0 or len(self.local_step) != 2 or not 0 < self.local_step[0] <= self.local_step[1]:
            raise ValueError(f"need local >= 0 and local_step = (lo, hi) with 0 < lo <= hi, got local={local}, "
                             f"local_step={local_step}")
        self.radial = int(radial)
        self.radial_step = tuple(float(x) for x in radial_step)
        if self.radial < 0 or len(self.radial_step) != 2 or not 0 < self.radial_step[0] <= self.radial_step[1]:
            raise ValueError(f"need radial >= 0 and radial_step = (lo, hi) with 0 < lo <= hi, got radial={radial}, "
                             f"radial_step={radial_step}")
        self.n_pairs = int(round(float(pairs) * self.N)) if self.N > 1 else 0
        self.pair_angle = tuple(float(x) for x in pair_angle)
        if pairs < 0 or len(self.pair_angle) != 2 or not 0 < self.pair_angle[0] <= self.pair_angle[1]:
            raise ValueError(f"need pairs >= 0 and pair_angle = (lo, hi) with 0 < lo <= hi, got pairs={pairs}, "
                             f"pair_angle={pair_angle}")
        # constants in NumPy (float64), handed to JAX once
        kappa = np.sum(X * X, axis=1) / self.N0
        s = np.sqrt(self.sw2 * kappa)                                            # (P,) prior sd of every h_iμ
        self.s = jnp.asarray(s)
        self.Y = jnp.asarray(Y)
        self.Xj = jnp.asarray(X)
        self.G = jnp.asarray(np.linalg.solve(X @ X.T, X))                    # (XXᵀ)⁻¹X, (P, N0)
        # class means over the classes that define a unit's code as in bnnzoo.diagnostics.populations: argmax of Y
        # (the summaries' classes) when m >= 2; the task's labels when m = 1 (the binary task's two classes, told
        # by their targets' sign), one class without them
        onehot = (_label_onehot(labels, self.P) if self.m == 1 else
                  (np.argmax(Y, axis=1)[:, None] == np.arange(self.m)[None, :]).astype(float))
        counts = onehot.sum(0)
        self.A = jnp.asarray(onehot / np.where(counts > 0, counts, 1.0))          # (P, C)
        # the targets' directions in prior-whitened coordinates (the signal move): an orthonormal basis (P, r)
        V = np.concatenate([onehot, Y], axis=1) / s[:, None]
        U_, sv, _ = np.linalg.svd(V, full_matrices=False)
        self.rank = int(np.sum(sv > 1e-10 * sv[0]))
        self.Q = jnp.asarray(U_[:, :self.rank])
        self.C = int(onehot.shape[1])
        self.by_code = self.C <= MAX_CODE_CLASSES
        self.K = (1 << self.C) if self.by_code else self.N
        self.signs = jnp.asarray(np.array([[2.0 * ((k >> b) & 1) - 1.0 for b in range(self.C)]
                                           for k in range(1 << self.C)])) if self.by_code else None
        # the pieces of φ̃ per point: breaks h_μb = s_μ u_b; interval j in 0..J lies between breaks j−1 and j
        u = np.asarray(breaks, float)
        if u.ndim != 1 or len(u) < 2 or np.any(np.diff(u) <= 0):
            raise ValueError("breaks must be an increasing sequence of at least two numbers")
        self.u = jnp.asarray(u)
        Jb = len(u)
        hb = s[:, None] * u[None, :]                                             # (P, Jb)
        fb = np_activation(activation)(hb)
        slope = (fb[:, 1:] - fb[:, :-1]) / (hb[:, 1:] - hb[:, :-1])              # (P, Jb − 1) segment slopes
        seg = np.clip(np.arange(Jb + 1) - 1, 0, Jb - 2)                          # the segment line of each interval
        beta = slope[:, seg]                                                     # (P, J)
        self.beta = jnp.asarray(beta)
        self.alpha = jnp.asarray(fb[:, seg] - beta * hb[:, seg])
        inf = np.full((self.P, 1), np.inf)
        self.lo = jnp.asarray(np.concatenate([-inf, hb], axis=1))                # (P, J)
        self.hi = jnp.asarray(np.concatenate([hb, inf], axis=1))

    # -- densities
    def log_prior(self, h):
        return -0.5 * jnp.sum((h / self.s) ** 2)

    def pieces(self, g, d):
        """(log mass, mean, sd), each (..., P, J), of the pieces of q_kμ for linear tilts g and self terms d (..., P):
        on piece j the exponent −h²/2s² + g φ̃ − ½ d φ̃² is a Gaussian in h (φ̃ = α_j + β_j h is linear there)."""
        s2 = self.s[:, None] ** 2
        g, d = g[..., None], d[..., None]
        prec = 1.0 / s2 + d * self.beta**2
        sd = 1.0 / jnp.sqrt(prec)
        mean = (g - d * self.alpha) * self.beta / prec
        logm = (0.5 * prec * mean**2 + g * self.alpha - 0.5 * d * self.alpha**2 - 0.5 * jnp.log(prec * s2)
                + _log_diff_ndtr((self.lo - mean) / sd, (self.hi - mean) / sd))
        return logm, mean, sd

    def piece_of(self, h):
        return jnp.searchsorted(self.u, h / self.s, side="right")               # (P,) in 0..J−1

    def log_q(self, h, g, d, logZ, logw):
        """log q(h) of the mixture: tilts g, self terms d and normalisers logZ (K, P), log weights logw (K,)."""
        j = self.piece_of(h)
        idx = jnp.arange(self.P)
        phit = self.alpha[idx, j] + self.beta[idx, j] * h                       # φ̃(h_μ)
        base = -0.5 * (h / self.s) ** 2 - jnp.log(self.s) - 0.5 * math.log(2 * math.pi)
        per = jnp.sum(base[None, :] + g * phit[None, :] - 0.5 * d * phit[None, :] ** 2 - logZ, axis=1)   # (K,)
        return logsumexp(logw + per)

    def draw_q(self, uni, logm, mean, sd, logw):
        """A draw of the mixture from 1 + 2P uniforms ``uni``: component, pieces, truncated normals."""
        P = self.P
        k = _categorical(uni[0], logw)
        j = _categorical(uni[1:P + 1], logm[k])                                # (P,)
        idx = jnp.arange(P)
        mu, sj = mean[k][idx, j], sd[k][idx, j]
        lo = (self.lo[idx, j] - mu) / sj
        hi = (self.hi[idx, j] - mu) / sj
        h = mu + sj * _truncnorm(uni[P + 1:], lo, hi)
        return jnp.clip(h, self.lo[idx, j], self.hi[idx, j])

    # -- the mixture from the cavity
    def codes(self, H):

        bits = (H @ self.A) > 0
        return jnp.sum(bits * (1 << jnp.arange(self.C)), axis=-1)

    def onehot(self, codes):
        """(…, K) indicators of the codes (…,)."""
        return (codes[..., None] == jnp.arange(self.K)).astype(self.s.dtype)

    def templates(self, held, counts, BY):
        """(templates (K, m), log weights (K,)) of the code mixture from the others' mean readouts per code
        ``held`` (K, m) and their counts (K,): a code no other unit holds gets the least-squares readout whose class
        fields have its signs at the held templates' typical size."""
        N = self.N
        L = self.A.T @ BY / N                                                    # (C, m) class-mean fields
        size = jnp.abs(held @ L.T)                                               # (K, C)
        typical = jnp.where(counts.sum() > 0, (counts @ size.mean(1)) / jnp.maximum(counts.sum(), 1.0), 1.0)
        typical = jnp.where(typical > 0, typical, 1.0)
        # least-squares readouts with class fields ±typical: t = Lᵀ(LLᵀ + εI)⁻¹ b (a Cholesky solve, C × C)
        LL = L @ L.T
        LL = LL + (1e-10 * jnp.trace(LL) / self.C + 1e-300) * jnp.eye(self.C)
        signed = (L.T @ _spd_solve(LL, (typical * self.signs).T)).T   # (K, m)
        templates = jnp.where((counts > 0)[:, None], held, signed)
        logw = jnp.log(counts + 1.0) - jnp.log(counts.sum() + self.K)
        return templates, logw

    # -- one sweep of one chain
    def sweep(self, H, key, by_move=False):
        """One sweep: every unit in turn moved by ``tries`` independence MH steps, the own-readout step, ``local``
        MALA steps and ``radial`` radial steps, then the pair rotations, the common-scale and the signal move.

        Returns (H (N, P), acceptance, code changes per unit, the mse of a readout drawn at H, the common-scale move's
        and the signal move's acceptance, the pair rotations' accepted fraction); acceptance is the accepted fraction
        of all unit moves, or with ``by_move=True`` the fractions per move type (tries, own-readout step, local
        steps, radial steps) (4,), NaN for a type left out, or with ``by_move="unit"`` the accepted moves per unit and
        type (N, 4)
        (integers).

        Carried through the units, each kept exact by rank-one updates (O(P²) or O(K P) per unit) and recomputed
        at the start of every sweep: Σ⁻¹ (carried on through the pair rotations), Σ⁻¹Y, and with the code mixture the per-code sums of the activations
        Φ_k = Σ_{j on code k} φ_j and Φ_k Σ⁻¹, so a unit's move costs no O(N) work.  The tries draw from one
        proposal that does not depend on the unit's state, so they are drawn and evaluated together (one matrix
        product B [φ_1 … φ_T]) and accepted one after the other."""
        N, P, c, m, T, K = self.N, self.P, self.c, self.m, self.tries, self.K
        Phi = self.phi(H)
        S = c * Phi.T @ Phi + self.v * jnp.eye(P)
        Sinv = _spd_solve(S, jnp.eye(P))
        Sinv = 0.5 * (Sinv + Sinv.T)
        codes = self.codes(H)
        sums = self.onehot(codes).T @ Phi if self.by_code else jnp.zeros((K, P))   # (K, P)

        def ell(q, r):                                     # ℓ from q = φᵀBφ and r = φᵀBY (m,)
            return -0.5 * m * jnp.log1p(c * q) + 0.5 * c * jnp.sum(r**2, axis=-1) / (1.0 + c * q)

        def unit(carry, inp):
            H, Phi, Sinv, SY, codes, sums, M = carry
            i, uni = inp                                   # uni: (tries, 2 + 2P) uniforms
            h0, ph0 = H[i], Phi[i]
            u = Sinv @ ph0
            den = 1.0 - c * (ph0 @ u)
            BY = SY + (c / den) * jnp.outer(u, u @ self.Y)                       # (P, m) B Y, B = Σ_{−i}⁻¹
            Bdiag = jnp.diag(Sinv) + (c / den) * u**2
            # the code mixture's tries and the own-readout step (with none, XLA drops the mixture's unused work)
            if self.by_code:
                mine = self.onehot(codes[i])                                     # (K,)
                counts = jnp.sum(self.onehot(codes), axis=0) - mine              # the others per code
                others = sums - mine[:, None] * ph0[None, :]                     # (K, P) their φ sums
                held = (self.sa2 / N) * (others @ BY) / jnp.maximum(counts, 1.0)[:, None]
                templates, logw = self.templates(held, counts, BY)
                n_others = max(N - 1, 1)
                mean_phi = (jnp.sum(sums, axis=0) - ph0) / n_others
                inv = 1.0 / jnp.maximum(counts, 1.0)[:, None]
                refs = jnp.where((counts > 0)[:, None], others * inv, mean_phi[None, :])
                # refs Σ⁻¹ from the carried sums M = Φ_k Σ⁻¹ (φ_iᵀΣ⁻¹ = uᵀ)
                RS = jnp.where((counts > 0)[:, None], (M - mine[:, None] * u[None, :]) * inv,
                               ((jnp.sum(M, axis=0) - u) / n_others)[None, :])
            else:                                          # one component per other unit: its mean readout
                others_mask = jnp.arange(N) != i
                templates = (self.sa2 / N) * (Phi @ BY)
                logw = jnp.where(others_mask, 0.0, -jnp.inf) - jnp.log(max(N - 1, 1))
                refs = ((others_mask.astype(Phi.dtype) @ Phi) / max(N - 1, 1))[None, :]
                RS = refs @ Sinv
            # B φ̄ of the references (the "ref" self term), shared by the code mixture and the own-readout step
            BR = RS + (c / den) * (refs @ u)[:, None] * u[None, :] if self.self_term == "ref" else None

            def tilts(tm, rf, br):
                """(g, d), each (K, P): the linear tilts and self terms of templates ``tm`` (K, m) with references
                ``rf`` and their B rf (K, P).  The self term −|t|² φᵀBφ / 2N² of a unit with readout t: exact along
                the reference φ̄ (the cross term 2 φ̄ᵀB(φ − φ̄), linear in φ), diagonal for the rest (φ − φ̄)."""
                g_ = tm @ (BY / N).T
                t2 = jnp.sum(tm**2, axis=1)[:, None] / N**2                      # (K, 1)
                if self.self_term == "none":
                    return g_, jnp.zeros_like(g_)
                if br is not None:
                    g_ = g_ - t2 * (br - Bdiag[None, :] * rf)
                return g_, t2 * Bdiag[None, :]

            g, d = tilts(templates, refs, BR)
            logm, mean, sd = self.pieces(g, d)
            logZ = logsumexp(logm, axis=-1)                                      # (K, P)
            # the current state and the T proposals, evaluated together: B φ = Σ⁻¹φ + (c/den) u (uᵀφ)
            h_all = jnp.concatenate([h0[None], jax.vmap(lambda x: self.draw_q(x, logm, mean, sd, logw))(
                uni[:T, 1:])])                                                   # (1 + T, P)
            ph_all = jnp.concatenate([ph0[None], self.phi(h_all[1:])])
            Bph = ph_all @ Sinv + (c / den) * (ph_all @ u)[:, None] * u[None, :]
            lp = (jax.vmap(self.log_prior)(h_all) + ell(jnp.sum(ph_all * Bph, axis=1), ph_all @ BY))
            lq = jax.vmap(lambda x: self.log_q(x, g, d, logZ, logw))(h_all)

            def one_try(state, t):                         # independence MH: proposal t + 1 against the current
                cur, acc = state
                ok = jnp.log(uni[t, 0]) < (lp[t + 1] - lp[cur]) - (lq[t + 1] - lq[cur])
                return (jnp.where(ok, t + 1, cur).astype(jnp.int32), acc + ok), None

            start = (jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))
            (pick, acc_t), _ = (jax.lax.scan(one_try, start, jnp.arange(T, dtype=jnp.int32)) if T
                                else (start, None))
            h, ph, w, lp_h, acc_o = h_all[pick], ph_all[pick], Bph[pick], lp[pick], jnp.zeros((), jnp.int32)
            if self.own:                                   # one more step, tilted by the unit's own readout
                def own_tilt(h_, ph_, Bph_):
                    """(g, d, logZ, logm, mean, sd) of the proposal tilted by the readout of a unit at h_."""
                    t = (self.sa2 / N) * (ph_ @ BY) / (1.0 + c * (ph_ @ Bph_))       # its posterior-mean readout
                    k = self.codes(h_[None])[0] if refs.shape[0] > 1 else 0
                    g1, d1 = tilts(t[None], refs[k][None], None if BR is None else BR[k][None])
                    logm1, mean1, sd1 = self.pieces(g1, d1)
                    return g1, d1, logsumexp(logm1, axis=-1), logm1, mean1, sd1

                g_f, d_f, Z_f, logm_f, mean_f, sd_f = own_tilt(h, ph, w)
                h2 = self.draw_q(uni[T, 1:], logm_f, mean_f, sd_f, jnp.zeros(1))
                ph2 = self.phi(h2)
                w2 = Sinv @ ph2 + (c / den) * (u @ ph2) * u
                lp2 = self.log_prior(h2) + ell(ph2 @ w2, ph2 @ BY)
                g_r, d_r, Z_r, *_ = own_tilt(h2, ph2, w2)
                zero = jnp.zeros(1)
                ok = jnp.log(uni[T, 0]) < (lp2 - lp[pick]) + (self.log_q(h, g_r, d_r, Z_r, zero)
                                                              - self.log_q(h2, g_f, d_f, Z_f, zero))
                h, ph, w = jnp.where(ok, h2, h), jnp.where(ok, ph2, ph), jnp.where(ok, w2, w)
                lp_h, acc_o = jnp.where(ok, lp2, lp_h), ok.astype(jnp.int32)
            acc_l = jnp.zeros((), jnp.int32)
            if self.local:                                 # MALA steps on π(h_i | the others), prior-preconditioned
                def grad(h_, ph_, dph_, w_):
                    """(log π(h_ | cavity) up to a constant, its gradient in h_) from φ, φ′ and B φ at h_."""
                    q_, r_ = ph_ @ w_, ph_ @ BY
                    z_ = 1.0 + c * q_
                    gphi = (-m * c / z_ - c**2 * jnp.sum(r_**2) / z_**2) * w_ + (c / z_) * (BY @ r_)
                    return self.log_prior(h_) + ell(q_, r_), dph_ * gphi - h_ / self.s**2

                def state(h_):
                    """(φ, B φ, log π(h_ | cavity) up to a constant, its gradient in h_)."""
                    ph_, dph = jax.jvp(self.phi, (h_,), (jnp.ones_like(h_),))
                    w_ = Sinv @ ph_ + (c / den) * (u @ ph_) * u
                    return ph_, w_, *grad(h_, ph_, dph, w_)

                def mala(st, x):
                    h_, ph_, w_, lp_, gr_, n_ok = st
                    xi, ue, ua = x
                    lo, hi = self.local_step
                    e = self.s * (lo * (hi / lo) ** ue)                          # the step, prior sd units
                    mu = h_ + 0.5 * e**2 * gr_
                    h1 = mu + e * xi
                    ph1, w1, lp1, gr1 = state(h1)
                    back = h_ - h1 - 0.5 * e**2 * gr1
                    log_a = lp1 - lp_ - 0.5 * jnp.sum((back / e) ** 2) + 0.5 * jnp.sum(xi**2)
                    ok_ = jnp.log(ua) < log_a
                    pick_ = lambda a1, a0: jnp.where(ok_, a1, a0)
                    return (pick_(h1, h_), pick_(ph1, ph_), pick_(w1, w_), pick_(lp1, lp_), pick_(gr1, gr_),
                            n_ok + ok_), None

                xs = (loc_n[i], loc_u[i, :, 0], loc_u[i, :, 1])
                gr_h = grad(h, ph, jax.jvp(self.phi, (h,), (jnp.ones_like(h),))[1], w)[1]   # φ, Bφ, log π carried
                (h, ph, w, _, _, acc_l), _ = jax.lax.scan(mala, (h, ph, w, lp_h, gr_h, acc_l), xs)
            acc_r = jnp.zeros((), jnp.int32)
            if self.radial:                                # h_i → γ h_i on π(h_i | the others), Jacobian γ^P
                def radial(st, x):
                    h_, ph_, w_, n_ok = st
                    xi, us, ua = x
                    lo, hi = self.radial_step
                    lg = lo * (hi / lo) ** us * xi                               # log γ
                    h1 = jnp.exp(lg) * h_
                    ph1 = self.phi(h1)
                    w1 = Sinv @ ph1 + (c / den) * (u @ ph1) * u
                    log_a = (self.log_prior(h1) + ell(ph1 @ w1, ph1 @ BY) - self.log_prior(h_)
                             - ell(ph_ @ w_, ph_ @ BY) + P * lg)
                    ok_ = jnp.log(ua) < log_a
                    pick_ = lambda a1, a0: jnp.where(ok_, a1, a0)
                    return (pick_(h1, h_), pick_(ph1, ph_), pick_(w1, w_), n_ok + ok_), None

                (h, ph, w, acc_r), _ = jax.lax.scan(radial, (h, ph, w, acc_r),
                                                    (rad[i, :, 0], rad[i, :, 1], rad[i, :, 2]))
            rho = c / (1.0 + c * (ph @ w))
            Sinv = Sinv + (c / den) * jnp.outer(u, u) - rho * jnp.outer(w, w)
            SY = BY - rho * jnp.outer(w, w @ self.Y)
            code = self.codes(h[None])[0]
            changed = code != codes[i]
            if self.by_code:                               # the sums and their Σ⁻¹ products, moved along
                new = self.onehot(code)
                M = M + (c / den) * jnp.outer(sums @ u, u) - rho * jnp.outer(sums @ w, w)
                # Σ_new⁻¹ φ_i = B φ_i − ρ w (wᵀφ_i) with B φ_i = u / den;  Σ_new⁻¹ φ' = w / (1 + c φ'ᵀw)
                M = (M - mine[:, None] * (u / den - rho * w * (w @ ph0))[None, :]
                     + new[:, None] * (rho / c * w)[None, :])
                sums = sums - mine[:, None] * ph0[None, :] + new[:, None] * ph[None, :]
            return (H.at[i].set(h), Phi.at[i].set(ph), Sinv, SY, codes.at[i].set(code), sums, M), (
                jnp.stack([acc_t, acc_o, acc_l, acc_r]), changed)

        k_moves, k_mse, k_scale = jax.random.split(key, 3)
        unis = jax.random.uniform(k_moves, (N, T + self.own, 2 + 2 * P), H.dtype, minval=1e-300)
        if self.local:                     # their own key: the other moves' draws are those of a run without them
            k_loc1, k_loc2 = jax.random.split(jax.random.fold_in(key, 7))
            loc_n = jax.random.normal(k_loc1, (N, self.local, P), H.dtype)
            loc_u = jax.random.uniform(k_loc2, (N, self.local, 2), H.dtype, minval=1e-300)
        if self.radial:                    # their own key too: (normal, step-size uniform, acceptance uniform)
            k_r1, k_r2 = jax.random.split(jax.random.fold_in(key, 13))
            rad = jnp.concatenate([jax.random.normal(k_r1, (N, self.radial, 1), H.dtype),
                                   jax.random.uniform(k_r2, (N, self.radial, 2), H.dtype, minval=1e-300)], axis=-1)
        carry = (H, Phi, Sinv, Sinv @ self.Y, codes, sums, sums @ Sinv)
        (H, Phi, Sinv, *_), (acc, changed) = jax.lax.scan(unit, carry, (jnp.arange(N), unis))
        pair_rate = jnp.zeros((), H.dtype)
        if self.n_pairs:                   # before the scale and signal moves: Φ and Σ⁻¹ as the units left them
            H, pair_rate = self.pair_move(H, jax.random.fold_in(key, 11), Phi, Sinv)
        scale_ok = jnp.zeros((), bool)
        if self.scale_step > 0:
            H, scale_ok = self.scale_move(H, k_scale)
        signal_ok = jnp.zeros((), bool)
        if self.signal_step > 0:
            H, signal_ok = self.signal_move(H, jax.random.fold_in(k_scale, 1))
        a, Phi = self.readout(H, jax.random.normal(k_mse, ((N + P) * m,), H.dtype))
        mse = jnp.mean((self.Y - Phi.T @ a / N) ** 2)
        if by_move == "unit":              # accepted moves per unit and type (N, 4)
            rate = acc
        elif by_move:                      # accepted fraction per move type (NaN where it is left out)
            n = jnp.asarray([T, int(self.own), self.local, self.radial], H.dtype)
            rate = jnp.where(n > 0, acc.sum(0) / (N * jnp.maximum(n, 1.0)), jnp.nan)
        else:
            rate = acc.sum() / (N * (T + self.own + self.local + self.radial))
        return H, rate, changed.sum() / N, mse, scale_ok, signal_ok, pair_rate

    def pair_move(self, H, key, Phi=None, Sinv=None):
        """``n_pairs`` Metropolis rotations of two units' preactivation rows (module docstring, "The pair rotations"):
        (h_i, h_j) → (h_i cos θ − h_j sin θ, h_i sin θ + h_j cos θ) at every point, |θ| log-uniform in ``pair_angle``
        with a random sign.  The rotation keeps the prior and n_i + n_j (n = |h/s|², prior-whitened squared norms);
        the pair is drawn with its first unit ∝ n and its second ∝ n among the rest, so the ratio carries the
        probability of drawing the same pair after the move.  Σ⁻¹ and the likelihood change by a rank-4 update
        (Woodbury, a 4 × 4 system: O(P²) per rotation), starting from ``Phi`` = φ(H) and ``Sinv`` = Σ⁻¹ (P, P) as
        the sweep carries them, or when they are not given from a fresh Cholesky factor.

        Returns (H, accepted fraction)."""
        P, c = self.P, self.c
        if Sinv is None:
            Phi = self.phi(H)
            S = c * Phi.T @ Phi + self.v * jnp.eye(P)
            Sinv = _spd_solve(S, jnp.eye(P))
            Sinv = 0.5 * (Sinv + Sinv.T)
        n = jnp.sum((H / self.s[None, :]) ** 2, axis=1)                          # (N,)
        lo, hi = self.pair_angle

        def one(carry, x):
            H, Phi, Sinv, n, n_ok = carry
            u1, u2, ua, us, ut = x
            i = _categorical(u1, jnp.log(n))
            j = _categorical(u2, jnp.log(n.at[i].set(0.0)))
            th = jnp.where(us < 0.5, -1.0, 1.0) * lo * (hi / lo) ** ut
            log_a, new = self.pair_rotation(H, Phi, Sinv, n, i, j, th)
            ok = (jnp.log(ua) < log_a) & (i != j)
            return (*(jnp.where(ok, a1, a0) for a1, a0 in zip(new, (H, Phi, Sinv, n))), n_ok + ok), None

        uni = jax.random.uniform(key, (5, self.n_pairs), H.dtype, minval=1e-300)
        (H, *_, n_ok), _ = jax.lax.scan(one, (H, Phi, Sinv, n, jnp.zeros((), jnp.int32)), tuple(uni))
        return H, n_ok / self.n_pairs

    def pair_rotation(self, H, Phi, Sinv, n, i, j, th):
        """(log acceptance ratio, (H', Φ', Σ'⁻¹, n')) of the rotation of units i ≠ j by θ (:meth:`pair_move`), from
        H (N, P), Φ = φ(H), Σ⁻¹ (P, P) and the squared norms n (N,).  The prior is unchanged; the likelihood's
        change is a rank-4 update Σ' = Σ + U D Uᵀ, U = [φ_i', φ_j', φ_i, φ_j], D = c diag(1, 1, −1, −1):
        log det ratio = log det(I + D UᵀΣ⁻¹U) and Σ'⁻¹ = Σ⁻¹ − V (I + D UᵀV)⁻¹ D Vᵀ with V = Σ⁻¹U; the pair's
        probability is n_i n_j (1/(Σn − n_i) + 1/(Σn − n_j)) / Σn (first ∝ n, second ∝ n among the rest), Σn kept.
        A non-positive determinant (rounding) gives −inf."""
        m = self.m
        tot = jnp.sum(n)
        D = self.c * jnp.array([1.0, 1.0, -1.0, -1.0], H.dtype)
        ct, st = jnp.cos(th), jnp.sin(th)
        hi_, hj_ = ct * H[i] - st * H[j], st * H[i] + ct * H[j]
        pi_, pj_ = self.phi(hi_), self.phi(hj_)
        U4 = jnp.stack([pi_, pj_, Phi[i], Phi[j]], axis=1)                       # (P, 4)
        V = Sinv @ U4
        M = jnp.eye(4, dtype=H.dtype) + D[:, None] * (U4.T @ V)                  # I + D Uᵀ Σ⁻¹ U
        VY = V.T @ self.Y                                                        # (4, m)
        sign, logdet, sol = _small_solve(M, D[:, None] * jnp.concatenate([VY, V.T], axis=1))
        dquad = -jnp.sum(VY * sol[:, :m])                                        # change of tr(Yᵀ Σ⁻¹ Y)
        ni1, nj1 = jnp.sum((hi_ / self.s) ** 2), jnp.sum((hj_ / self.s) ** 2)

        def log_pick(a, b):
            return jnp.log(a) + jnp.log(b) + jnp.log(1.0 / (tot - a) + 1.0 / (tot - b))

        log_a = jnp.where(sign > 0, -0.5 * m * logdet - 0.5 * dquad + log_pick(ni1, nj1) - log_pick(n[i], n[j]),
                          -jnp.inf)
        Sinv1 = Sinv - V @ sol[:, m:]
        return log_a, (H.at[i].set(hi_).at[j].set(hj_), Phi.at[i].set(pi_).at[j].set(pj_),
                       0.5 * (Sinv1 + Sinv1.T), n.at[i].set(ni1).at[j].set(nj1))

    def signal_move(self, H, key):
        """A Metropolis move of every unit's component along the targets' directions (span of the class indicators
        and of Y's columns, in prior-whitened coordinates, rank r) by a common factor γ, log γ ~ N(0,
        signal_step² / (N r)): the map is linear with Jacobian γ^{N r}, accepted with π(H') γ^{N r} / π(H)."""
        k1, k2 = jax.random.split(key)
        lg = self.signal_step / math.sqrt(self.N * self.rank) * jax.random.normal(k1, (), H.dtype)
        G = H / self.s[None, :]
        H1 = (G + (jnp.exp(lg) - 1.0) * (G @ self.Q) @ self.Q.T) * self.s[None, :]
        ok = jnp.log(jax.random.uniform(k2, (), H.dtype, minval=1e-300)) < (
            self.log_target(H1) - self.log_target(H) + self.N * self.rank * lg)
        return jnp.where(ok, H1, H), ok

    def scale_move(self, H, key):
        """A Metropolis move of all preactivations by a common factor γ, log γ ~ N(0, scale_step² / (N P)): the
        transformation H → γH has Jacobian γ^{NP}, so it is accepted with π(γH) γ^{NP} / π(H)."""
        k1, k2 = jax.random.split(key)
        lg = self.scale_step / math.sqrt(self.N * self.P) * jax.random.normal(k1, (), H.dtype)
        H1 = jnp.exp(lg) * H
        ok = jnp.log(jax.random.uniform(k2, (), H.dtype, minval=1e-300)) < (
            self.log_target(H1) - self.log_target(H) + self.N * self.P * lg)
        return jnp.where(ok, H1, H), ok

    # -- a recorded draw of one chain
    def readout(self, H, noise):
        """(a, Φ): the readout drawn from a | H by Matheron's rule, from standard normals ``noise`` ((N + P) m)."""
        N, P, m = self.N, self.P, self.m
        Phi = self.phi(H)
        S = self.c * Phi.T @ Phi + self.v * jnp.eye(P)
        a0 = math.sqrt(self.sa2) * noise[:N * m].reshape(N, m)
        e = math.sqrt(self.v) * noise[N * m:].reshape(P, m)
        a = a0 + (self.sa2 / N) * Phi @ _spd_solve(S, self.Y - Phi.T @ a0 / N - e)
        return a, Phi

    def draw(self, H, key, X_test=None):
        """(a, W, f, f_test): the readout a | H, the weights W | H, the outputs on the training and test inputs."""
        N, P, m = self.N, self.P, self.m
        noise = jax.random.normal(key, ((N + P) * m + N * self.N0,), H.dtype)
        a, Phi = self.readout(H, noise[:(N + P) * m])
        f = Phi.T @ a / N
        W0 = math.sqrt(self.sw2) * noise[(N + P) * m:].reshape(N, self.N0)
        W = W0 + (math.sqrt(self.N0) * H - W0 @ self.Xj.T) @ self.G
        f_test = None
        if X_test is not None:
            f_test = self.phi(W @ X_test.T / math.sqrt(self.N0)).T @ a / N
        return a, W, f, f_test

    def log_target(self, H):
        """log π(H) up to a constant (the common-scale move's target; tests)."""
        Phi = self.phi(H)
        S = self.c * Phi.T @ Phi + self.v * jnp.eye(self.P)
        logdet, quad = _spd_logdet_quad(S, self.Y)
        return -0.5 * jnp.sum((H / self.s[None, :]) ** 2) - 0.5 * self.m * logdet - 0.5 * quad


# ------------------------------------------------------------------------------------------------ the driver
def _record_fn(kern: _Kernel, X_test, want: dict):
    """One chain's recorded sites at a draw, float32: what ``want`` asks for (W1, z1, summaries, kernels)."""
    def rec(H, key):
        a, W, f, f_test = kern.draw(H, key, X_test)
        out = {"a": a, "f": f, "q_a": jnp.mean(a**2, axis=-2), "mse": jnp.mean((kern.Y - f) ** 2)}
        if want["W1"]:
            out["W1"] = W
        if want["z1"]:
            out["z1"] = H
        if f_test is not None:
            out["f_test"] = f_test
        if want["summaries"] or want["kernels"]:
            res = layer_summaries(H, kern.phi(H), f, kern.Y, 1, kern.N, kernels=want["kernels"])
            out.update({k: v for k, v in res.items() if want["summaries"] or k[:1] == "K"})
        return {k: v.astype(jnp.float32) for k, v in out.items()}

    return rec


def _start_from(init: dict, chains: int, N: int, N0: int, X) -> np.ndarray:
    """The preactivations H (chain, N, P) = W1 Xᵀ/√N0 of the starting values ``init["W1"]`` (chain, N, N0)."""
    if "W1" not in init:
        raise ValueError(f"init for sampler='units' needs 'W1' (chain, width, input dim), got the sites "
                         f"{sorted(init)}")
    W = np.asarray(init["W1"], float)
    if W.shape != (chains, N, N0):
        raise ValueError(f"init['W1'] must have shape (chain, width, input dim) = {(chains, N, N0)}, got {W.shape}")
    return W @ X.T / math.sqrt(N0)


def _block_groups(arrays: dict, first: tuple[str, str]) -> dict:
    """{group: Dataset} of one block's arrays {group: {name: array}} with the leading dims ``first`` and generic
    names for the rest (a chunk file of the store: read back as arrays by :func:`_arrays_of`)."""
    out = {}
    for g, d in arrays.items():
        out[g] = xr.Dataset({k: ((first[0], f"{first[1]}_{k}" if g == "posterior_thinned" else first[1])
                                 + tuple(f"{k}_dim{j}" for j in range(2, np.ndim(v))), np.asarray(v))
                             for k, v in d.items()})
    return out


def _arrays_of(ds) -> dict:
    return {k: np.asarray(ds[k].values) for k in ds.data_vars}


def units_chains(X, Y, *, num_chains: int, num_warmup: int, num_samples: int, thinning: int = 1, seed: int = 0,
                 width: int, depth: int = 1, activation: str = "sigmoid", readout: str = "nonlazy",
                 temperature: float = 0.01, sigma_a2: float | None = None, sigma_w2: float = 1.0,
                 num_outputs: int | None = None, X_test=None, record=(), exclude=(), kernel_means=None,
                 progress: bool = False, init="prior", tries: int | None = None, breaks=BREAKS, self_term: str = "ref",
                 scale_step: float = SCALE_STEP, signal_step: float = SIGNAL_STEP, own: bool | None = None,
                 local: int | None = None, local_step=LOCAL_STEP, pairs: float = PAIRS, pair_angle=PAIR_ANGLE,
                 radial: int | None = None, radial_step=RADIAL_STEP, chunk_size: int | None = None, labels=None,
                 store: RunStore | None = None, resume: bool = False,
                 manifest: dict | None = None):
    """The sites of :func:`bnnzoo.models.fcn.fcn` (depth 1, non-lazy readout, orthogonal inputs) drawn by unit-wise
    Metropolis–Hastings moves with the readout integrated out (module docstring) — what
    ``bnnzoo.sample(..., sampler="units")`` runs.  All chains advance together (batched).

    Parameters beyond the model's: ``init`` "prior" (every chain's preactivations drawn from the prior) or a dict
    of starting values {site: array (chain, ...)} holding "W1" (chain, N, N0) — the chains start at H = W1 Xᵀ/√N0
    (the readout is integrated out, so a given "a" is not needed and other sites are ignored); ``tries`` MH
    proposals per unit and sweep (the same cavity; each a valid independence MH step; 0 allowed when ``own``),
    ``own`` whether each unit then takes the own-readout step and ``local`` how many local (MALA) steps (None:
    the activation's defaults, :func:`default_moves`), their
    sizes log-uniform in ``local_step`` (prior sd units; module docstring), ``pairs`` pair rotations per unit and
    sweep, their angles |θ| log-uniform in ``pair_angle`` (radians; module docstring), ``radial`` radial steps per
    unit and sweep, their sd in log γ log-uniform in ``radial_step`` (module docstring), ``breaks`` the breakpoints
    of φ̃ in prior-sd units; ``labels`` (P,) the class of every point, which with one output (m = 1) defines the
    codes of the proposal's mixture (the task's labels; None: one class; with m ≥ 2 the classes are argmax Y);
    ``chunk_size`` kept draws per block (warm-up blocks: ``chunk_size · thinning`` sweeps;
    None: one block); ``store`` a :class:`~bnnzoo.inference.store.RunStore` that receives every finished block
    and a checkpoint of the chains' preactivations after it, with the run's ``manifest`` (its identity); ``resume``
    continues the store's run from its last good checkpoint.  Every sweep's random numbers derive from the seed and
    the sweep's index, so a resumed run gives the draws of an uninterrupted one, bit for bit.

    Returns ``(samples, stats, info)`` as :func:`bnnzoo.inference.gibbs_linear.gibbs_chains`: samples {site: (chain,
    draw, ...)} with W1 (unless in ``exclude``), a, f, q_a, mse, z1 when recorded, the layer's summaries when
    ``record`` holds "summaries", f_test when ``X_test`` is given; stats {"diverging", "n_steps" (sweeps per kept
    draw), "acceptance_rate" (accepted fraction of the unit moves — the tries, the own-readout, the local and the radial
    steps —
    since the last kept draw), "code_change_rate" (fraction of units whose code — class-mean signs of h — changed
    per sweep), "scale_acceptance", "signal_acceptance", "pair_acceptance" (accepted fraction of the pair rotations;
    when ``pairs`` gives any)}; info {"timing", "warmup_mse" (chain, sweep), "warmup_time" (sweep,) seconds since the warm-up began (after compiling), "warmup_acceptance" (chain,
    sweep), "kernel_means", "kernel_draws", "kernel" (the proposal's settings), "chunk_size", "resumed_from_block"
    (-1: a fresh run)}.

    Raises
    ------
    ValueError
        Inputs or settings the sampler cannot serve, a ``chunk_size`` that a kernel-mean period does not divide.
    StoreError
        A store this call may not use (holding a run without ``resume``, another run's, damaged beyond its previous
        checkpoint, locked by another process).
    """
    X = np.asarray(X, float)
    Y = np.asarray(Y, float)
    why = refusal(dict(depth=depth, readout=readout), X)
    if why:
        raise ValueError(why)
    tries, own, local, radial = default_moves(activation, tries, own, local, radial)
    if int(width) < 1:
        raise ValueError(f"need width >= 1, got width={width}")
    check_unit_moves(int(tries), bool(own), int(local))
    P = X.shape[0]
    sa2 = default_sigma_a2(activation, readout, P, 1) if sigma_a2 is None else float(sigma_a2)
    C, n_keep, thin = int(num_chains), int(num_samples) // int(thinning), int(thinning)
    chunk = max(n_keep, 1) if chunk_size is None else int(chunk_size)
    recs = (record,) if isinstance(record, str) else tuple(record)
    kernel_means = dict(kernel_means or {})
    for site, e in kernel_means.items():
        if int(e) < 1 or chunk_size is not None and chunk % int(e):
            raise ValueError(f"kernel means over {e} draws of {site!r} need chunk_size ({chunk}) to be a multiple of "
                             f"{e}")
    want = {"W1": "W1" not in exclude, "z1": 1 in recorded_layers(recs, 1), "summaries": "summaries" in recs,
            "kernels": bool(kernel_means)}
    blocks = plan_blocks(int(num_warmup), n_keep * thin, thin, chunk)
    ckpt, done = None, {}
    if store is not None:                 # refused (one line) before anything compiles
        _check_store(store, resume, manifest)
        store.lock()
        if resume:
            ckpt = store.good_checkpoint()
            if ckpt is not None:
                _check_manifest(store, ckpt, manifest)
        if ckpt is None:
            store.remove_partial_writes()
            store.write_manifest(dict(manifest or {}, complete=False))
    timing = {"compile_s": 0.0, "warmup_s": 0.0, "sampling_s": 0.0}
    try:
        with jax.enable_x64(True):
            kern = _Kernel(X, Y, width=width, activation=activation, temperature=temperature, sigma_a2=sa2,
                           sigma_w2=sigma_w2, breaks=breaks, tries=tries, self_term=self_term,
                           scale_step=scale_step, signal_step=signal_step, own=own, local=local,
                           local_step=local_step, pairs=pairs, pair_angle=pair_angle, labels=labels,
                           radial=radial, radial_step=radial_step)
            Xt = None if X_test is None else jnp.asarray(np.asarray(X_test, float))
            key = jax.random.PRNGKey(int(seed))
            k_init, key = jax.random.split(key)
            if isinstance(init, dict):
                H = jnp.asarray(_start_from(init, C, kern.N, kern.N0, X))
            else:
                H = kern.s[None, None, :] * jax.random.normal(k_init, (C, kern.N, P), jnp.float64)   # prior starts
            first, chunks = 0, {}
            if ckpt is not None:              # the chains where the checkpoint left them, the finished blocks' output
                (H,), meta = load_state(ckpt[0], (H,), checked=ckpt[1:])
                first = int(meta["block_done"]) + 1
                chunks = dict(meta.get("chunks", {}))
                names = list(chunks)
                for kind, groups in (("warmup", ("warmup",)), ("draws", ("posterior", "sample_stats",
                                                                          "posterior_thinned"))):
                    parts = store.read_blocks(kind, groups, upto=first - 1, names=names)
                    for g, lst in parts.items():
                        done.setdefault(kind, {})[g] = [_arrays_of(ds) for ds in lst]
                timing.update(meta.get("timing", {}))

            def keys(k, n):
                return jax.random.split(jax.random.fold_in(key, k), n)

            tc = time.perf_counter()                # compile both programs first: warm-up and sampling time runs
            # (kept in this process: a certified run's next start family, same data and settings, compiles nothing)
            sweep = compile_cached(jax.jit(jax.vmap(kern.sweep)).lower(H, keys(0, C)))
            rec = compile_cached(jax.jit(jax.vmap(_record_fn(kern, Xt, want))).lower(H, keys(0, C)))
            timing["compile_s"] += time.perf_counter() - tc
            total = int(num_warmup) + n_keep * thin
            pbar = Progress(total, desc="sample (units)", logger=_logger, unit="sweep") if progress else None
            if pbar is not None and first:
                pbar.resume_at(sum(b.steps for b in blocks[:first]))
            base = 2 * int(num_warmup)
            warm_done = sum(b.steps for b in blocks[:first] if b.kind == "warmup")
            for b in blocks[first:]:
                t0 = time.perf_counter()
                if pbar is not None:
                    pbar.phase("warm-up" if b.kind == "warmup" else "sampling")
                if b.kind == "warmup":
                    mse_b, acc_b, time_b = [], [], []
                    for t in range(warm_done, warm_done + b.steps):
                        H, acc, _, mse, _, _, _ = sweep(H, keys(2 * t, C))
                        acc_b.append(acc)
                        mse_b.append(mse)
                        jax.block_until_ready(mse)
                        time_b.append(timing["warmup_s"] + time.perf_counter() - t0)
                        if pbar is not None:
                            pbar.update(1)
                    warm_done += b.steps
                    arrays = {"warmup": {"mse": np.stack([np.asarray(v) for v in mse_b], 1),
                                         "acceptance": np.stack([np.asarray(v) for v in acc_b], 1),
                                         "time": np.broadcast_to(np.asarray(time_b, float), (C, b.steps)).copy()}}
                    timing["warmup_s"] += time.perf_counter() - t0
                else:
                    out_b, acc_b, ch_b, sc_b, sg_b, pr_b = [], [], [], [], [], []
                    sums: dict = {}
                    means: dict = {k: [] for k in kernel_means}
                    for d in range(b.draw0, b.draw0 + b.n_keep):
                        acc_d, ch_d, sc_d, sg_d, pr_d = 0.0, 0.0, 0.0, 0.0, 0.0
                        for t in range(thin):
                            H, acc, ch, _, sc, sg, pr = sweep(H, keys(base + 2 * (d * thin + t), C))
                            acc_d, ch_d, sc_d, sg_d, pr_d = acc_d + acc, ch_d + ch, sc_d + sc, sg_d + sg, pr_d + pr
                        out = rec(H, keys(base + 2 * (d * thin + thin - 1) + 1, C))
                        acc_b.append(np.asarray(acc_d / thin))
                        ch_b.append(np.asarray(ch_d / thin))
                        sc_b.append(np.asarray(sc_d / thin, float))
                        sg_b.append(np.asarray(sg_d / thin, float))
                        pr_b.append(np.asarray(pr_d / thin, float))
                        for site, e in kernel_means.items():
                            sums[site] = out[site] if d % e == 0 else sums[site] + out[site]
                            if d % e == e - 1:
                                means[site].append(np.asarray(sums[site]) / e)
                        out_b.append({k: np.asarray(v) for k, v in out.items() if k not in kernel_means})
                        if pbar is not None:
                            pbar.update(thin)
                    arrays = {"posterior": {k: np.stack([o[k] for o in out_b], 1) for k in out_b[0]},
                              "sample_stats": {"acceptance_rate": np.stack(acc_b, 1),
                                               "code_change_rate": np.stack(ch_b, 1),
                                               "scale_acceptance": np.stack(sc_b, 1),
                                               "signal_acceptance": np.stack(sg_b, 1),
                                               "pair_acceptance": np.stack(pr_b, 1)},
                              "posterior_thinned": {k: np.stack(v, 1) for k, v in means.items() if v}}
                    jax.block_until_ready(H)
                    timing["sampling_s"] += time.perf_counter() - t0
                for g, d in arrays.items():
                    done.setdefault(b.kind, {}).setdefault(g, []).append(d)
                if store is not None:         # the block's output, then the chains' state after it
                    digest = store.write_block(b, _block_groups(arrays, ("chain", "sweep" if b.kind == "warmup"
                                                                          else "draw")))
                    chunks[store.block_path(b).name] = digest
                    save_state(store.state_path, (H,), dict(block_done=b.index, chunks=chunks, timing=timing,
                                                            manifest=manifest_digest(store.manifest())),
                               previous=store.previous_state_path)
            if pbar is not None:
                pbar.close()
        if store is not None:
            store.write_manifest(dict(store.manifest(), complete=True))
    finally:
        if store is not None:
            store.unlock()

    def joined(kind, g):
        parts = done.get(kind, {}).get(g, [])
        return {k: np.concatenate([p[k] for p in parts], 1) for k in parts[0]} if parts else {}

    warm = joined("warmup", "warmup")
    samples = joined("draws", "posterior")
    samples = {k: v for k, v in samples.items() if k not in exclude or k == "f_test"}
    st = joined("draws", "sample_stats")
    shape = (C, n_keep)
    stats = {"diverging": np.zeros(shape, bool), "n_steps": np.full(shape, thin),
             "acceptance_rate": st["acceptance_rate"].astype(np.float32),
             "code_change_rate": st["code_change_rate"].astype(np.float32)}
    if scale_step > 0:
        stats["scale_acceptance"] = st["scale_acceptance"].astype(np.float32)
    if signal_step > 0:
        stats["signal_acceptance"] = st["signal_acceptance"].astype(np.float32)
    if kern.n_pairs:
        stats["pair_acceptance"] = st["pair_acceptance"].astype(np.float32)
    kmeans = {k: v.astype(np.float32) for k, v in joined("draws", "posterior_thinned").items()}
    info = {"timing": timing,
            "warmup_mse": warm.get("mse", np.zeros((C, 0))),
            "warmup_acceptance": warm.get("acceptance", np.zeros((C, 0))),
            "warmup_time": warm["time"][0] if warm else np.zeros(0),
            "kernel_means": kmeans,
            "kernel_draws": {k: np.arange(1, v.shape[1] + 1) * int(kernel_means[k]) - 1 for k, v in kmeans.items()},
            "kernel": dict(tries=int(tries), breaks=[float(b) for b in breaks], self_term=self_term,
                           scale_step=float(scale_step), signal_step=float(signal_step),
                           own=bool(own), local=int(local), local_step=[float(x) for x in local_step],
                           pairs=float(pairs), pair_angle=[float(x) for x in pair_angle],
                           radial=int(radial), radial_step=[float(x) for x in radial_step],
                           classes=int(kern.C), components=int(kern.K),
                           components_by="code" if kern.by_code else "unit"),
            "chunk_size": chunk, "resumed_from_block": first - 1}
    return samples, stats, info
