"""Reparametrised fully-connected nets: the posterior of :func:`bnnzoo.models.fcn`, sampled in fewer, better-shaped
dimensions.  The joint law of the recorded sites is unchanged; only what NUTS moves differs.

* **Readout integrated out** (``integrate_readout=True``).  Given the feature layer Φ = φ(z^L) (N × P) the readout is
  linear-Gaussian: a_r ~ N(0, σ_a² I_N), y_r = c Φᵀ a_r + ε, ε ~ N(0, v I_P) (c the readout prefactor, v the
  likelihood variance).  So  y_r | Φ ~ N(0, K),  K = v I_P + σ_a² c² ΦᵀΦ  — the same K for every output — and NUTS
  samples the hidden weights from  p(W | Y) ∝ p(W) Π_r N(y_r | 0, K).  One Cholesky per gradient, in the smaller of
  P and N: K (P × P) when P ≤ N, else  A = I_N + (σ_a² c²/v) ΦΦᵀ  with Woodbury and the matrix-determinant lemma.
  Every kept draw then draws a | W, Y exactly from its Gaussian conditional (Cholesky of A when N ≤ P, Matheron's
  rule a = a₀ + σ_a² c Φ K⁻¹ (y − c Φᵀ a₀ − e) otherwise), so (W, a) is an exact posterior draw.
* **Data-space first layer** (``data_space=True``).  The likelihood sees W¹ only through z¹ = W¹Xᵀ/√N0, whose rows
  are i.i.d. N(0, σ_w² K0), K0 = XXᵀ/N0 (P × P).  NUTS samples whitened u¹ (N × r, r = rank K0 ≤ min(P, N0)) with
  z¹ = u¹Bᵀ, BBᵀ = σ_w² K0 — N·r numbers instead of N·N0.  W¹ (and through it z¹ and f on test inputs) is drawn
  exactly from its conditional given z¹ by Matheron's rule  W¹ = W₀ + (z¹ − W₀Xᵀ/√N0) K0⁺ X/√N0,  W₀ from the prior.

``conditional=True`` runs the model as the *post-processor* (never for MCMC): under a ``seed`` handler it draws the
integrated-out sites from their conditionals and records the same sites as :func:`~bnnzoo.models.fcn.fcn`
(W1..WL, a, f, q_a, mse, z*, f_test), so every diagnostic reads a reparametrised run like a plain one.
"""

from __future__ import annotations

import hashlib
import math
from functools import partial
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.linalg import cho_solve, solve_triangular

from .activations import get_activation
from .fcn import default_sigma_a2, likelihood_variance, readout_scale, record_summaries, recorded_layers

__all__ = ["fcn_fast", "data_space_basis", "readout_marginal_loglik", "draw_readout", "draw_first_layer",
           "INTERNAL_SITES"]

INTERNAL_SITES = ("u1",)


def data_space_basis(X, sigma_w2: float = 1.0, rtol: float = 1e-8):
    """(B, M): B (P × r) with BBᵀ = σ_w² XXᵀ/N0 on the range of XXᵀ (r its numerical rank), and M = K0⁺X/√N0
    (P × N0), the map of Matheron's rule for W¹ | z¹."""
    X = np.asarray(X, dtype=np.float64)
    P, N0 = X.shape
    K0 = X @ X.T / N0
    lam, V = np.linalg.eigh(K0)
    keep = lam > rtol * max(lam.max(), 1e-300)
    Vk, lk = V[:, keep], lam[keep]
    B = Vk * np.sqrt(sigma_w2 * lk)
    M = (Vk / lk) @ (Vk.T @ X) / math.sqrt(N0)
    return B.astype(np.float32), M.astype(np.float32)


_BASIS_CACHE: dict = {}


def _basis(X, sigma_w2):
    """data_space_basis for concrete inputs (cached: computed once per data set), traced-safe otherwise."""
    if isinstance(X, jax.core.Tracer):
        K0 = X @ X.T / X.shape[1]
        lam, V = jnp.linalg.eigh(K0)
        keep = lam > 1e-6 * jnp.max(lam)  # rank-deficient directions get zero weight (shapes stay static)
        B = V * jnp.sqrt(sigma_w2 * jnp.where(keep, lam, 0.0))
        M = (V * jnp.where(keep, 1.0 / jnp.where(keep, lam, 1.0), 0.0)) @ (V.T @ X) / math.sqrt(X.shape[1])
        return B, M
    X = np.asarray(X)
    key = (hashlib.sha1(np.ascontiguousarray(X).tobytes()).hexdigest(), X.shape, float(sigma_w2))
    if key not in _BASIS_CACHE:
        if len(_BASIS_CACHE) > 16:
            _BASIS_CACHE.clear()
        _BASIS_CACHE[key] = data_space_basis(X, sigma_w2)
    return _BASIS_CACHE[key]


def readout_marginal_loglik(feats, Y, sigma_a2: float, c: float, v: float):
    """log N(Y | 0, K) summed over the m outputs, K = v I_P + σ_a² c² ΦᵀΦ, for features Φ = ``feats`` (N × P).

    The gradient is written out (custom VJP) instead of differentiating through the Cholesky factor: with
    α = K⁻¹Y and g = σ_a² c²,  ∂/∂Φ = g (Φα αᵀ − m Φ K⁻¹),  and in the Woodbury form (P > N)  Φ K⁻¹ = A⁻¹Φ / v.
    It reuses the forward pass's factor, so a gradient costs one Cholesky and a few triangular solves (tested
    against central differences of the closed-form Gaussian log-density in tests/models/test_fcn_fast.py)."""
    return _marginal_loglik(feats, Y, float(sigma_a2 * c * c), float(v))


def _marginal_parts(feats, Y, g, v):
    """(log-likelihood, ∂/∂Φ) of log N(Y | 0, v I + g ΦᵀΦ); one Cholesky in the smaller of N and P."""
    N, P = feats.shape
    m = Y.shape[1]
    const = -0.5 * m * P * math.log(2 * math.pi)
    if P <= N:
        K = v * jnp.eye(P, dtype=feats.dtype) + g * (feats.T @ feats)
        L = jnp.linalg.cholesky(K)
        alpha = cho_solve((L, True), Y)                                 # K⁻¹Y  (P × m)
        logdet = 2.0 * jnp.sum(jnp.log(jnp.diagonal(L)))
        val = -0.5 * jnp.sum(Y * alpha) - 0.5 * m * logdet + const
        phi_kinv = cho_solve((L, True), feats.T).T                      # Φ K⁻¹  (N × P)
    else:
        A = jnp.eye(N, dtype=feats.dtype) + (g / v) * (feats @ feats.T)
        L = jnp.linalg.cholesky(A)
        fy = feats @ Y
        alpha = (Y - (g / v) * (feats.T @ cho_solve((L, True), fy))) / v   # K⁻¹Y by Woodbury
        logdet = P * math.log(v) + 2.0 * jnp.sum(jnp.log(jnp.diagonal(L)))
        val = -0.5 * jnp.sum(Y * alpha) - 0.5 * m * logdet + const
        phi_kinv = cho_solve((L, True), feats) / v                      # Φ K⁻¹ = A⁻¹Φ / v
    grad = g * ((feats @ alpha) @ alpha.T - m * phi_kinv)
    return val, grad


@partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _marginal_loglik(feats, Y, g, v):
    return _marginal_parts(feats, Y, g, v)[0]


def _marginal_bwd(g, v, grad, cot):
    return cot * grad, None                                             # Y is data: no gradient


_marginal_loglik.defvjp(_marginal_parts, _marginal_bwd)      # residual of the forward pass: the gradient


def draw_readout(key, feats, Y, sigma_a2: float, c: float, v: float):
    """An exact draw of a (N × m) from p(a | Φ, Y) (Gaussian), in the cheaper of the two forms."""
    N, P = feats.shape
    m = Y.shape[1]
    g = sigma_a2 * c * c
    k1, k2 = jax.random.split(key)
    if N <= P:
        A = jnp.eye(N, dtype=feats.dtype) + (g / v) * (feats @ feats.T)
        L = jnp.linalg.cholesky(A)
        rhs = (sigma_a2 * c / v) * (feats @ Y)
        mean = solve_triangular(L.T, solve_triangular(L, rhs, lower=True), lower=False)
        eps = jax.random.normal(k1, (N, m), feats.dtype)
        return mean + math.sqrt(sigma_a2) * solve_triangular(L.T, eps, lower=False)
    K = v * jnp.eye(P, dtype=feats.dtype) + g * (feats.T @ feats)
    L = jnp.linalg.cholesky(K)
    a0 = math.sqrt(sigma_a2) * jax.random.normal(k1, (N, m), feats.dtype)
    e = math.sqrt(v) * jax.random.normal(k2, (P, m), feats.dtype)
    r = Y - c * (feats.T @ a0) - e
    sol = solve_triangular(L.T, solve_triangular(L, r, lower=True), lower=False)
    return a0 + sigma_a2 * c * (feats @ sol)


def draw_first_layer(key, z1, X, M, sigma_w2: float):
    """An exact draw of W¹ (N × N0) from the prior conditioned on z¹ = W¹Xᵀ/√N0 (Matheron's rule)."""
    N = z1.shape[0]
    N0 = X.shape[1]
    W0 = math.sqrt(sigma_w2) * jax.random.normal(key, (N, N0), z1.dtype)
    return W0 + (z1 - W0 @ X.T / math.sqrt(N0)) @ M


def fcn_fast(X, Y=None, *, width: int, depth: int = 1, activation: str = "linear", readout: str = "nonlazy",
             temperature: float = 0.01, sigma_a2: float | None = None, sigma_w2: float = 1.0,
             num_outputs: int | None = None, X_test=None, record: Sequence[str] = (),
             integrate_readout: bool = True, data_space: bool = True, conditional: bool = False):
    """The posterior of :func:`bnnzoo.models.fcn` (same arguments and meaning), reparametrised (module docstring).

    integrate_readout : marginalise the readout analytically (needs Y; with Y=None the readout is sampled).
    data_space : sample the first layer's preactivations on the training inputs (whitened, site ``u1``).
    conditional : post-processing mode: draw the integrated-out sites and record fcn's sites (needs a ``seed``
        handler); never use it for MCMC.
    """
    X_in = X
    X = jnp.asarray(X)
    P, N0 = X.shape
    m = Y.shape[1] if Y is not None else int(num_outputs)
    phi = get_activation(activation)
    s2a = default_sigma_a2(activation, readout, P, depth) if sigma_a2 is None else sigma_a2
    c = readout_scale(readout, width)
    v = likelihood_variance(readout, width, temperature)
    sw = math.sqrt(sigma_w2)
    marginal = integrate_readout and Y is not None

    neuron = numpyro.plate("neuron", width, dim=-2)
    Ws = []
    with neuron:
        if data_space:
            B, M = _basis(X_in, sigma_w2)
            with numpyro.plate("basis", B.shape[1], dim=-1):
                u1 = numpyro.sample("u1", dist.Normal(0.0, 1.0))
            z1 = u1 @ B.T
        else:
            with numpyro.plate("input", N0, dim=-1):
                Ws.append(numpyro.sample("W1", dist.Normal(0.0, sw)))
            z1 = Ws[0] @ X.T / math.sqrt(N0)
        for l in range(2, depth + 1):
            with numpyro.plate("neuron_in", width, dim=-1):
                Ws.append(numpyro.sample(f"W{l}", dist.Normal(0.0, sw)))
        if not marginal:
            with numpyro.plate("class", m, dim=-1):
                a = numpyro.sample("a", dist.Normal(0.0, math.sqrt(s2a)))
    zs = [z1]
    for W in (Ws[1:] if not data_space else Ws):
        zs.append(W @ phi(zs[-1]) / math.sqrt(width))
    feats = phi(zs[-1])
    assert feats.shape[-2:] == (width, P), f"features have shape {feats.shape}"

    if marginal and not conditional:
        numpyro.factor("y_marginal", readout_marginal_loglik(feats, jnp.asarray(Y, feats.dtype), s2a, c, v))
        return None
    if marginal:
        key_a, key_w = jax.random.split(numpyro.prng_key())
        a = numpyro.deterministic("a", draw_readout(key_a, feats, jnp.asarray(Y, feats.dtype), s2a, c, v))
    W1 = None
    if data_space and conditional:
        key_w = key_w if marginal else numpyro.prng_key()
        W1 = numpyro.deterministic("W1", draw_first_layer(key_w, z1, X, M, sigma_w2))
    elif not data_space:
        W1 = Ws[0]
    f = c * (feats.T @ a)
    for l in recorded_layers(record, depth):
        numpyro.deterministic(f"z{l}", zs[l - 1])
    numpyro.deterministic("f", f)
    numpyro.deterministic("q_a", jnp.mean(a**2, axis=-2))
    record_summaries(record, zs, phi, f, Y, width)
    if Y is not None:
        numpyro.deterministic("mse", jnp.mean((Y - f) ** 2))
    if not marginal:
        with numpyro.plate("point", P, dim=-2), numpyro.plate("class", m, dim=-1):
            numpyro.sample("y", dist.Normal(f, math.sqrt(v)), obs=Y)
    if X_test is not None and W1 is not None:
        zt = W1 @ jnp.asarray(X_test).T / math.sqrt(N0)
        for W in (Ws[1:] if not data_space else Ws):
            zt = W @ phi(zt) / math.sqrt(width)
        numpyro.deterministic("f_test", c * (phi(zt).T @ a))
    return f
