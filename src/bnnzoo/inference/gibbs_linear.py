"""Exact blocked Gibbs sampler for the *linear* fully-connected network of any depth L ≥ 1 — the ground-truth oracle
for the linear theory and for z-testing NUTS.

Model (docs/theory.md §1, :func:`bnnzoo.models.fcn.fcn` with linear φ; rows convention: ``X`` is (P, N0), ``Y`` (P, m))::

    W_1 ~ N(0, σ_w²)  (N × N0),   W_l ~ N(0, σ_w²)  (N × N, l = 2..L),   a ~ N(0, σ_a²)  (N × m)
    z_0 = Xᵀ,   z_1 = W_1 z_0 / √N0,   z_l = W_l z_{l−1} / √N  (l = 2..L)     (N × P) preactivations
    f = c z_Lᵀ a                  (P × m)   c = 1/N (non-lazy) or 1/√N (lazy)
    Y | f ~ N(f, v)  entrywise  v = T/N (non-lazy) or T (lazy)

Default σ_a² = P^{-1/L} (non-lazy) or 1 (lazy), as in the NumPyro model.  Every conditional is Gaussian:

* a | W_1..W_L: the columns a_r are independent with precision  I/σ_a² + (c²/v) z_L z_Lᵀ  and mean
  (precision)⁻¹ (c/v) z_L Y_r.
* W_l | rest: f is linear in W_l,  f = c (W_l z_{l−1} / √n)ᵀ B_l  with the layer input z_{l−1} (n = N0 for l = 1, N
  otherwise) and the *effective readout*  B_l = (W_L ⋯ W_{l+1})ᵀ a / N^{(L−l)/2}  (N × m; B_L = a).  So W_l | rest is
  the one-layer W | a with a → B_l and X → z_{l−1}ᵀ: precision operator  W ↦ W/σ_w² + κ (B Bᵀ) W (Z Zᵀ),
  κ = c²/(v n), Z = z_{l−1} (the Kronecker form I/σ_w² + κ (B Bᵀ)⊗(Z Zᵀ)), linear term  G = (c/(v √n)) B Yᵀ Zᵀ.

a | W is drawn with one Cholesky factor in the smaller of N and P (Matheron's rule when N > P).  The W_l conditionals
are diagonalised by thin SVDs (B = U_B s_B V_Bᵀ, Zᵀ = U_x s_x V_xᵀ): the precision is 1/σ² off the (low-rank) span of
the factors and 1/σ² + κ α_i β_j on it.  One sweep draws a | W, then W_1, …, W_L
in turn (each given the current others: the effective readouts B_l are computed top-down after a is drawn, the
inputs z_{l−1} bottom-up as the layers are redrawn), so the chain's stationary law is the exact finite-N posterior.
Cost per sweep: O(N P² + N m N0 + N0 P²) for the first layer and readout (plus N·N0 normal draws), and
O(N² (P + m) + N P²) (plus N² normal draws) for each further layer — instead of O((N N0 + (L−1) N²)³) for a joint draw.
Successive draws are correlated (P = 5, N = 1000, m = 1: lag-1 autocorrelation of aᵀa/N ≈ 0.66 at T = 0.01, ≈ 0.03 at
T = 1 for L = 1, and ≈ 0.58 / 0.46 at T = 0.01 for L = 2 / 3; one sweep takes about 0.3 ms at L = 1 and about 18 ms
more per further layer, where the N² normal draws dominate — one BLAS thread): use batch means or an ESS-aware
standard error.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass, field

import jax
import numpy as np
import xarray as xr
from scipy.linalg import cho_factor, cho_solve, cholesky, solve_triangular
from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

from ..models.fcn import default_sigma_a2, recorded_layers
from ..models.summaries import layer_summaries

__all__ = ["GibbsLinearResult", "gibbs_linear", "gibbs_chains"]

_logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GibbsLinearResult:
    """Draws of the exact Gibbs sampler for the linear network of depth L.

    Attributes
    ----------
    a : (draw, neuron, class) readout weights.
    f : (draw, point, class) network output on the training inputs, f = c z_Lᵀ a.
    K1 : (draw, point, point2) first hidden-layer kernel z_1ᵀz_1/N, z_1 = W_1 Xᵀ/√N0 (permutation invariant);
        the same array as ``K[:, 0]``.
    U : (draw, class, class2) readout second moment aᵀa/N — the per-draw estimate of the theory's U = E[a_i a_iᵀ].
    W : (draw, neuron, input) first-layer weights W_1, or None when ``store_W=False`` (= ``Ws[0]``).
    f_test : (draw, test_point, class) output on ``X_test``, or None.
    K1_test : (draw, test_point, test_point2) first-layer kernel z*ᵀz*/N on ``X_test``, or None (= ``K_test[:, 0]``).
    K1_train_test : (draw, point, test_point) first-layer kernel zᵀz*/N between training and test inputs, or None.
    params : the arguments the chain was run with (width, depth, temperature, sigma_a2, sigma_w2, readout, seed, ...).
    K : (draw, layer, point, point2) kernels K_l = z_lᵀz_l/N of every hidden layer l = 1..L (layer axis index l − 1).
    Ws : tuple of the L weight arrays (draw, neuron, input) and (draw, neuron, neuron_in) for l = 2..L, or None.
    K_test : (draw, layer, test_point, test_point2) and K_train_test : (draw, layer, point, test_point): the kernels of
        every layer on / with ``X_test``, or None.
    warmup_mse, warmup_time : (sweep,) training MSE after each warm-up sweep and seconds since the start, or None
        (``trace_warmup=True`` records them).
    zs : tuple of the L preactivation arrays z_l (draw, neuron, point), or None when ``store_z=False``.
    """

    a: np.ndarray
    f: np.ndarray
    K1: np.ndarray
    U: np.ndarray
    W: np.ndarray | None
    f_test: np.ndarray | None = None
    K1_test: np.ndarray | None = None
    K1_train_test: np.ndarray | None = None
    params: dict = field(default_factory=dict)
    K: np.ndarray | None = None
    Ws: tuple[np.ndarray, ...] | None = None
    K_test: np.ndarray | None = None
    K_train_test: np.ndarray | None = None
    warmup_mse: np.ndarray | None = None
    warmup_time: np.ndarray | None = None
    zs: tuple[np.ndarray, ...] | None = None

    @property
    def num_draws(self) -> int:
        return self.a.shape[0]

    @property
    def depth(self) -> int:
        """L, the number of hidden layers."""
        return 1 if self.K is None else self.K.shape[1]

    def to_dataset(self):
        """The draws as an ``xarray.Dataset`` (dims draw, layer, neuron, class, point, point2, class2, input,
        neuron_in)."""
        data = {
            "a": (("draw", "neuron", "class"), self.a),
            "f": (("draw", "point", "class"), self.f),
            "K1": (("draw", "point", "point2"), self.K1),
            "U": (("draw", "class", "class2"), self.U),
        }
        coords = {}
        if self.K is not None:
            data["K"] = (("draw", "layer", "point", "point2"), self.K)
            coords["layer"] = np.arange(1, self.depth + 1)
        if self.W is not None:
            data["W"] = (("draw", "neuron", "input"), self.W)
        if self.Ws is not None:
            for l, Wl in enumerate(self.Ws[1:], start=2):
                data[f"W{l}"] = (("draw", "neuron", "neuron_in"), Wl)
        if self.f_test is not None:
            data["f_test"] = (("draw", "test_point", "class"), self.f_test)
            data["K1_test"] = (("draw", "test_point", "test_point2"), self.K1_test)
            data["K1_train_test"] = (("draw", "point", "test_point"), self.K1_train_test)
            if self.K_test is not None:
                data["K_test"] = (("draw", "layer", "test_point", "test_point2"), self.K_test)
                data["K_train_test"] = (("draw", "layer", "point", "test_point"), self.K_train_test)
        attrs = {k: v for k, v in self.params.items() if isinstance(v, (bool, int, float, str))}
        attrs["method"] = "exact blocked Gibbs (bnnzoo.inference.gibbs_linear)"
        return xr.Dataset(data, coords=coords, attrs=attrs)


# --------------------------------------------------------------------------------------------- the two conditionals
def _input_factor(Xl: np.ndarray, Y: np.ndarray):
    """The fixed-per-draw factors of a layer input Xl (P × n): Xlᵀ Xl = V diag(β) Vᵀ (thin SVD) and Yᵀ Xl (m × n)."""
    _, s_x, Vxt = np.linalg.svd(Xl, full_matrices=False)
    return Vxt.T, s_x**2, Y.T @ Xl


def _draw_readout(rng: np.random.Generator, z: np.ndarray, Y: np.ndarray, sa2: float, c: float, v: float):
    """a | z for f = c zᵀ a, a ~ N(0, σ_a²) (N × m), Y | f ~ N(f, v); z is the (N × P) feature layer.

    Columns a_r independent, precision Λ = I/σ_a² + (c²/v) z zᵀ, mean Λ⁻¹ (c/v) z Y_r.  One Cholesky in the smaller
    of N and P: of Λ when N <= P (noise L⁻ᵀε), else of K = v I + σ_a² c² zᵀz by Matheron's rule
    a = a₀ + σ_a² c z K⁻¹ (Y − c zᵀa₀ − e), a₀ ~ N(0, σ_a²), e ~ N(0, v).
    """
    N, P = z.shape
    m = Y.shape[1]
    eps = rng.standard_normal((N, m))
    if N <= P:
        L = cholesky(np.eye(N) / sa2 + (c * c / v) * (z @ z.T), lower=True)
        mean = cho_solve((L, True), (c / v) * (z @ Y))
        return mean + solve_triangular(L, eps, lower=True, trans="T")
    a0 = np.sqrt(sa2) * eps
    e = np.sqrt(v) * rng.standard_normal((P, m))
    K = v * np.eye(P) + (sa2 * c * c) * (z.T @ z)
    return a0 + (sa2 * c) * (z @ cho_solve(cho_factor(K, lower=True), Y - c * (z.T @ a0) - e))


def _draw_weights(rng: np.random.Generator, B: np.ndarray, factor, n_in: int, sigma_w2: float, c: float, v: float):
    """W | B for f = c (W Xlᵀ / √n)ᵀ B, W ~ N(0, σ_w²) (N × n), Y | f ~ N(f, v); ``factor`` = :func:`_input_factor`
    of the layer input Xl (P × n); B (N × m) is the readout (one layer) or the effective readout B_l (deep net).

    Precision operator W ↦ W/σ_w² + κ (B Bᵀ) W (Xlᵀ Xl), κ = c²/(v n); linear term G = (c/(v √n)) B Yᵀ Xl.
    """
    Vx, beta, YtX = factor
    N = B.shape[0]
    sw = np.sqrt(sigma_w2)
    kappa = c * c / (v * n_in)
    Ua, s_a, _ = np.linalg.svd(B, full_matrices=False)  # (N, r)
    alpha = s_a**2
    prec = 1.0 / sigma_w2 + kappa * np.outer(alpha, beta)  # (r, k)
    G = (c / (v * np.sqrt(n_in))) * (B @ YtX)  # (N, n), lies in span(Ua) ⊗ span(Vx)
    mean = Ua @ (((Ua.T @ G) @ Vx) / prec) @ Vx.T
    E = rng.standard_normal((N, n_in))
    corr = (prec**-0.5 - sw) * ((Ua.T @ E) @ Vx)
    return mean + sw * E + Ua @ corr @ Vx.T


def _check_init(init, depth: int, N: int, N0: int, m: int):
    Ws, a = init
    if depth == 1 and np.ndim(Ws) == 2:
        Ws = [Ws]
    Ws = [np.array(W, dtype=float) for W in Ws]
    a = np.array(a, dtype=float)
    shapes = [(N, N0)] + [(N, N)] * (depth - 1)
    if len(Ws) != depth or any(W.shape != s for W, s in zip(Ws, shapes)) or a.shape != (N, m):
        want = (shapes[0] if depth == 1 else shapes)
        raise ValueError(f"init must be (W {want}, a {(N, m)}) for depth {depth} (W a list of the {depth} layer "
                         f"matrices when depth > 1), got W {[W.shape for W in Ws]}, a {a.shape}")
    return Ws, a


def gibbs_linear(
    X,
    Y=None,
    *,
    width: int,
    temperature: float,
    depth: int = 1,
    sigma_a2: float | None = None,
    sigma_w2: float = 1.0,
    readout: str = "nonlazy",
    num_samples: int = 1000,
    num_warmup: int = 200,
    seed: int = 0,
    thin: int = 1,
    store_W: bool = False,
    init: tuple | None = None,
    X_test=None,
    trace_warmup: bool = False,
    store_z: bool = False,
) -> GibbsLinearResult:
    """Sample the exact posterior of the depth-L linear network by blocked Gibbs (a | W, then W_1, …, W_L | rest).

    Parameters
    ----------
    X, Y : (P, N0) inputs and (P, m) targets; or a :class:`bnnzoo.tasks.Task` as ``X`` with ``Y`` omitted.
    width : N, number of neurons in every hidden layer.
    temperature : T. The likelihood variance per output entry is T/N (non-lazy) or T (lazy).
    depth : L >= 1, the number of hidden layers (z_l = W_l z_{l−1}/√N for l >= 2, as in :func:`bnnzoo.models.fcn.fcn`).
    sigma_a2 : readout prior variance; default P^{-1/L} (non-lazy, the paper's linear rule) or 1 (lazy).
    sigma_w2 : hidden-weight prior variance (every layer).
    readout : "nonlazy" (f = z_Lᵀa/N) or "lazy" (f = z_Lᵀa/√N).
    num_samples, num_warmup, thin : kept draws, discarded sweeps, sweeps per kept draw.
    seed : seed of the ``np.random.Generator``.
    store_W : keep the hidden weights — memory (N·N0 + (L−1)·N²) per draw.
    init : optional (W, a) starting point — W the (N, N0) matrix at depth 1, or a sequence of the L layer matrices
        (N, N0), (N, N), …; default a draw from the prior.
    X_test : optional (P*, N0) test inputs: then f_test and the test kernels of every layer are recorded per draw.
    trace_warmup : record the training MSE and the elapsed seconds after every warm-up sweep.
    store_z : keep every layer's preactivations on the training inputs — memory L·N·P per draw.

    """
    if Y is None:
        if not hasattr(X, "X"):
            raise TypeError("give X and Y arrays, or a Task as the only positional argument")
        X, Y = X.X, X.Y
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[0] != Y.shape[0]:
        raise ValueError(f"X must be (P, N0) and Y (P, m) with the same P, got {X.shape} and {Y.shape}")
    if readout not in ("nonlazy", "lazy"):
        raise ValueError(f"readout must be 'nonlazy' or 'lazy', got {readout!r}")
    if isinstance(depth, (bool, np.bool_)) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ValueError(f"depth must be an integer >= 1 (the number of hidden layers), got {depth!r}")
    L = int(depth)
    N, T = int(width), float(temperature)
    if N < 1 or T <= 0 or sigma_w2 <= 0 or num_samples < 1 or thin < 1 or num_warmup < 0:
        raise ValueError("need width >= 1, temperature > 0, sigma_w2 > 0, num_samples >= 1, thin >= 1, num_warmup >= 0")
    P, N0 = X.shape
    m = Y.shape[1]
    sa2 = default_sigma_a2("linear", readout, P, L) if sigma_a2 is None else float(sigma_a2)
    if sa2 <= 0:
        raise ValueError(f"sigma_a2 must be positive, got {sa2}")
    sa, sw = np.sqrt(sa2), np.sqrt(sigma_w2)
    c = 1.0 / N if readout == "nonlazy" else 1.0 / np.sqrt(N)
    v = T / N if readout == "nonlazy" else T
    sqN = np.sqrt(N)
    n_in = [N0] + [N] * (L - 1)  # input dimension of each layer

    # The first layer's input factor XᵀX = V_x diag(s_x²) V_xᵀ never changes; deeper layers' inputs do.
    factor0 = _input_factor(X, Y)

    if X_test is not None:
        X_test = np.asarray(X_test, dtype=float)
        if X_test.ndim != 2 or X_test.shape[1] != N0:
            raise ValueError(f"X_test must be (P*, {N0}), got {X_test.shape}")

    rng = np.random.default_rng(seed)
    if init is None:
        Ws = [sw * rng.standard_normal((N, n)) for n in n_in]
        a = sa * rng.standard_normal((N, m))
    else:
        Ws, a = _check_init(init, L, N, N0, m)
    zs = [X.T]  # z_0 .. z_L, each (n, P)
    for l in range(L):
        zs.append(Ws[l] @ zs[l] / np.sqrt(n_in[l]))

    n_keep = int(num_samples)
    a_out = np.empty((n_keep, N, m))
    f_out = np.empty((n_keep, P, m))
    K_out = np.empty((n_keep, L, P, P))
    U_out = np.empty((n_keep, m, m))
    W_out = [np.empty((n_keep, N, n)) for n in n_in] if store_W else None
    z_out = [np.empty((n_keep, N, P)) for _ in range(L)] if store_z else None
    if X_test is not None:
        Pt = X_test.shape[0]
        ft_out = np.empty((n_keep, Pt, m))
        Kt_out, Ktt_out = np.empty((n_keep, L, Pt, Pt)), np.empty((n_keep, L, P, Pt))
    else:
        ft_out = Kt_out = Ktt_out = None
    warm_mse = np.empty(num_warmup) if trace_warmup else None
    warm_time = np.empty(num_warmup) if trace_warmup else None
    t0 = time.perf_counter()
    t_warm = t0
    total = num_warmup + n_keep * thin
    k = 0
    # one BLAS thread: the matrices are small, and multithreaded SVDs on a busy machine ran ~70x slower (16 ms vs
    # 0.22 ms for 500 x 20 on 2 shared cores)
    with threadpool_limits(limits=1, user_api="blas"):
        for it in range(total):
            a = _draw_readout(rng, zs[L], Y, sa2, c, v)
            # effective readouts B_l = W_{l+1}ᵀ B_{l+1} / √N, B_L = a: they depend only on layers above l, which are
            # redrawn after W_l in this sweep
            Bs = [a]
            for l in range(L - 1, 0, -1):
                Bs.append(Ws[l].T @ Bs[-1] / sqN)
            Bs.reverse()
            for l in range(L):
                factor = factor0 if l == 0 else _input_factor(zs[l].T, Y)
                Ws[l] = _draw_weights(rng, Bs[l], factor, n_in[l], sigma_w2, c, v)
                zs[l + 1] = Ws[l] @ zs[l] / np.sqrt(n_in[l])
            if it < num_warmup and trace_warmup:
                warm_mse[it] = np.mean((Y - c * (zs[L].T @ a)) ** 2)
                warm_time[it] = time.perf_counter() - t0
            if it == num_warmup - 1:
                t_warm = time.perf_counter()
            if it >= num_warmup and (it - num_warmup) % thin == thin - 1:
                a_out[k] = a
                f_out[k] = c * (zs[L].T @ a)
                for l in range(L):
                    K_out[k, l] = zs[l + 1].T @ zs[l + 1] / N
                U_out[k] = a.T @ a / N
                if store_W:
                    for l in range(L):
                        W_out[l][k] = Ws[l]
                if store_z:
                    for l in range(L):
                        z_out[l][k] = zs[l + 1]
                if X_test is not None:
                    zt = X_test.T
                    for l in range(L):
                        zt = Ws[l] @ zt / np.sqrt(n_in[l])
                        Kt_out[k, l] = zt.T @ zt / N
                        Ktt_out[k, l] = zs[l + 1].T @ zt / N
                    ft_out[k] = c * (zt.T @ a)
                k += 1
    params = dict(width=N, depth=L, temperature=T, sigma_a2=sa2, sigma_w2=float(sigma_w2), readout=readout,
                  num_samples=n_keep, num_warmup=int(num_warmup), thin=int(thin), seed=int(seed),
                  P=P, N0=N0, m=m, seconds=time.perf_counter() - t0, warmup_seconds=t_warm - t0)
    return GibbsLinearResult(a=a_out, f=f_out, K1=K_out[:, 0], U=U_out, W=W_out[0] if store_W else None,
                             f_test=ft_out, K1_test=None if Kt_out is None else Kt_out[:, 0],
                             K1_train_test=None if Ktt_out is None else Ktt_out[:, 0], params=params,
                             K=K_out, Ws=tuple(W_out) if store_W else None, K_test=Kt_out, K_train_test=Ktt_out,
                             warmup_mse=warm_mse, warmup_time=warm_time,
                             zs=tuple(z_out) if store_z else None)


def _summaries(zs, f, Y, width: int) -> dict:
    """The per-draw summaries of every layer (linear units: activations = preactivations), {site: (draw, ...)}."""
    out = {}
    for l, z in enumerate(zs, start=1):
        res = _summaries_of_draws()(np.asarray(z, np.float32), np.asarray(f, np.float32), np.asarray(Y, np.float32),
                                    l, int(width))
        out.update({k: np.asarray(v) for k, v in res.items()})
    return out


@functools.cache
def _summaries_of_draws():
    """:func:`bnnzoo.models.summaries.layer_summaries` over the draws, jitted once (each chain and run reuses the
    compiled program of its shapes)."""
    def of_draws(z, f, Y, layer, width):
        return jax.vmap(lambda zd, fd: layer_summaries(zd, zd, fd, Y, layer, width))(z, f)

    return jax.jit(of_draws, static_argnums=(3, 4))


def gibbs_chains(X, Y, *, num_chains: int, num_warmup: int, num_samples: int, thinning: int = 1, seed: int = 0,
                 width: int, depth: int = 1, activation: str = "linear", readout: str = "nonlazy",
                 temperature: float = 0.01, sigma_a2: float | None = None, sigma_w2: float = 1.0,
                 num_outputs: int | None = None, X_test=None, record=(), exclude=(), kernel_means=None,
                 progress: bool = False):
    """The sites of :func:`bnnzoo.models.fcn` (linear activation) drawn by the exact Gibbs sampler, one independent
    chain per seed ``SeedSequence([seed, chain])`` — what ``bnnzoo.sample(..., sampler="gibbs")`` runs.

    Returns ``(samples, stats, info)``: samples {site: (chain, draw, ...)} with W1..WL (unless in ``exclude``), a, f,
    q_a, mse, the recorded preactivations z_l, the summaries of every layer when ``record`` holds "summaries"
    (:mod:`bnnzoo.models.summaries`, computed from the drawn preactivations), and f_test when ``X_test`` is given;
    stats {"diverging", "n_steps"}
    (n_steps: Gibbs sweeps per kept draw); info {"timing": {"warmup_s", "sampling_s"} summed over the chains,
    "warmup_mse", "warmup_time": (chain, sweep) training MSE and seconds since the chain's start,
    "kernel_means": {site: (chain, mean, point, point_b)} and "kernel_draws": {site: index of each mean's last
    draw}}.  ``kernel_means`` ({"K1": e, "Kz1": e, ...}) asks for the layers' kernels (for linear units K_l = Kz_l
    = z_lᵀz_l/N) as means of every e consecutive kept draws, as the chunked engine streams them.
    num_samples // thinning draws are kept per chain, as for NUTS.
    """
    if activation != "linear":
        raise ValueError(f"sampler='gibbs' is exact for linear networks only, got activation={activation!r}")
    L = int(depth)
    layers = recorded_layers(record, L)
    summaries = "summaries" in ((record,) if isinstance(record, str) else tuple(record))
    keep_W = [f"W{l}" for l in range(1, L + 1) if f"W{l}" not in exclude]
    n_keep = int(num_samples) // int(thinning)
    kernel_means = dict(kernel_means or {})
    out: dict[str, list] = {}
    means: dict[str, list] = {}
    timing = {"warmup_s": 0.0, "sampling_s": 0.0}
    warm_mse, warm_time = [], []
    n_sweeps = num_warmup + n_keep * thinning
    for c in range(int(num_chains)):
        chain_seed = int(np.random.SeedSequence([int(seed), c]).generate_state(1)[0])
        t0 = time.perf_counter()
        g = gibbs_linear(X, Y, width=width, temperature=temperature, depth=L, sigma_a2=sigma_a2, sigma_w2=sigma_w2,
                         readout=readout, num_samples=n_keep, num_warmup=num_warmup, seed=chain_seed,
                         thin=int(thinning), store_W=bool(keep_W), store_z=bool(layers) or summaries, X_test=X_test,
                         trace_warmup=True)
        timing["warmup_s"] += g.params["warmup_seconds"]
        timing["sampling_s"] += g.params["seconds"] - g.params["warmup_seconds"]
        warm_mse.append(g.warmup_mse)
        warm_time.append(g.warmup_time)
        if progress:
            _logger.info("[gibbs] chain %d/%d: %d sweeps in %.1f s", c + 1, num_chains, n_sweeps,
                         time.perf_counter() - t0)
        sites = {"a": g.a, "f": g.f, "q_a": np.mean(g.a**2, axis=-2),
                 "mse": np.mean((np.asarray(Y, float)[None] - g.f) ** 2, axis=(-2, -1))}
        for name in keep_W:
            sites[name] = g.Ws[int(name[1:]) - 1]
        for l in layers:
            sites[f"z{l}"] = g.zs[l - 1]
        if summaries:
            sites.update(_summaries(g.zs, g.f, Y, int(width)))
        if X_test is not None:
            sites["f_test"] = g.f_test
        blocks = {}                  # (layer, e) -> block means: K_l and Kz_l are the same kernel for linear units
        for site, e in kernel_means.items():
            key = (int(site.lstrip("Kz")), int(e))
            if key not in blocks:
                K = g.K[: n_keep // key[1] * key[1], key[0] - 1]          # (draw, P, P)
                blocks[key] = K.reshape(-1, key[1], *K.shape[1:]).mean(1).astype(np.float32)
            means.setdefault(site, []).append(blocks[key])
        for k, v in sites.items():
            out.setdefault(k, []).append(v)
    means = {k: np.stack(v) for k, v in means.items()}
    info_kernels = {"kernel_means": means, "kernel_draws": {k: np.arange(1, v.shape[1] + 1) * int(kernel_means[k]) - 1
                                                            for k, v in means.items()}}
    samples = {k: np.stack(v).astype(np.float32) for k, v in out.items() if k not in exclude or k == "f_test"}
    shape = (int(num_chains), n_keep)
    stats = {"diverging": np.zeros(shape, bool), "n_steps": np.full(shape, int(thinning))}
    info = {"timing": timing, "warmup_mse": np.stack(warm_mse), "warmup_time": np.stack(warm_time), **info_kernels}
    return samples, stats, info
