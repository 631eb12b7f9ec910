"""Read what the diagnostics need from a run once: readouts, weights, preactivations of every layer, the task.

:func:`run_data` is the one conversion of the fully-connected diagnostics: it takes a
:class:`~bnnzoo.diagnostics.run.Run`, an ArviZ InferenceData / DataTree made by :func:`bnnzoo.sample` or a path to
its NetCDF file (read once with :func:`~bnnzoo.diagnostics.run.as_run`), or a :class:`RunData` built by hand, and
returns the :class:`RunData` view with plain numpy arrays, leading axes (chain, draw) (:meth:`Run.fcn
<bnnzoo.diagnostics.run.Run.fcn>`).  Preactivations that were not recorded with ``record=("z",)`` are recomputed
from the weights (z¹ = W¹ xᵀ/√N0, zˡ = Wˡ φ(zˡ⁻¹)/√N), which is also how test-point preactivations are obtained.

Small statistics helpers shared by the diagnostic modules live here too (effective sample size, standard errors).
:class:`RunData` itself (with :func:`class_means` and :func:`batches`) is defined in
:mod:`bnnzoo.diagnostics._rundata`, below :mod:`bnnzoo.diagnostics.run`, and re-exported here.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.fft

from ..models.activations import np_activation
from ._rundata import RunData, class_means
from .run import as_run

__all__ = ["RunData", "run_data", "np_activation", "ess_1d", "ess", "mean_se", "class_means"]


def run_data(idata, activation: str | None = None) -> RunData:
    """The :class:`RunData` view of a run (a Run, InferenceData / DataTree or a path to its NetCDF file, read once
    with :func:`~bnnzoo.diagnostics.run.as_run`; a RunData passes through): ``activation`` names φ for a run whose
    provenance does not, and hyperparameters with priors (scalar sites named ``temperature``, ``sigma_a2``,
    ``sigma_w2``) are taken at their posterior median."""
    if isinstance(idata, RunData):
        return idata
    run = as_run(idata, model_kwargs={"activation": activation} if activation else None)
    if run.model_kwargs.get("activation") is None:
        model = run.config.get("model")
        raise ValueError("cannot tell the activation of this run" + (f" of {model!r}" if model else "") +
                         ": pass activation=, or diagnose it as a zoo entry with bnnzoo.diagnose(idata, entry=NAME)")
    return run.fcn()


# ----------------------------------------------------------------------------------------------------- statistics
def _autocov(x: np.ndarray) -> np.ndarray:
    """Autocovariance along the last axis (FFT, zero-padded to a fast length >= 2n - 1, so none wraps around;
    SciPy's FFT on all cores: a run of 64 chains x 500 units holds about 10^5 series)."""
    n = x.shape[-1]
    xc = x - x.mean(-1, keepdims=True)
    nfft = scipy.fft.next_fast_len(2 * n - 1, real=True)
    fx = scipy.fft.rfft(xc, nfft, axis=-1, workers=-1)
    acov = scipy.fft.irfft(fx.real ** 2 + fx.imag ** 2, nfft, axis=-1, workers=-1)[..., :n] / n
    return acov


ESS_BLOCK = 1024
"""Chains × series that :func:`ess` transforms at once when ``x`` is (chain, draw, series): the FFT's buffers of a
block stay in the processor's cache, where the 10^5 series of a big run at once would go through memory.  A block
is a view of ``x`` laid out as ``x`` is, so the numbers are those of one pass over all series."""


def ess(x: np.ndarray) -> np.ndarray:
    """Effective sample size of the chains ``x`` (chain, draw) for each trailing index: x has shape
    (C, D, ...); returns (...).  Geyer's initial-monotone-sequence estimator on the chain-averaged
    autocorrelation (Stan's / ArviZ's method without rank normalisation); a (C, D, series) array is taken in blocks
    of :data:`ESS_BLOCK` chains × series."""
    x = np.asarray(x, float)
    C = x.shape[0]
    if x.ndim != 3 or C * x.shape[2] <= ESS_BLOCK:
        return _ess_block(np.moveaxis(x, (0, 1), (-2, -1)))
    step = max(1, ESS_BLOCK // max(C, 1))
    return np.concatenate([_ess_block(np.moveaxis(x[:, :, i:i + step], (0, 1), (-2, -1)))
                           for i in range(0, x.shape[2], step)])


def _ess_block(xt: np.ndarray) -> np.ndarray:
    """:func:`ess` of the chains ``xt`` (..., C, D)."""
    C, D = xt.shape[-2:]
    acov = _autocov(xt)  # (..., C, D)
    mean_c = xt.mean(-1)
    var_w = acov[..., 0].mean(-1) * D / max(D - 1, 1)
    var_plus = var_w * (D - 1) / D + (mean_c.var(-1, ddof=1) if C > 1 else 0.0)
    safe = np.where(var_plus > 0, var_plus, 1.0)
    rho = 1.0 - (var_w[..., None] - acov.mean(-2)) / safe[..., None]
    rho[..., 0] = 1.0
    # Geyer: sum of pairs Γ_k = ρ_{2k} + ρ_{2k+1}, truncated at the first negative pair, made monotone.
    n_pairs = D // 2
    G = rho[..., 0:2 * n_pairs:2] + rho[..., 1:2 * n_pairs:2]
    pos = np.cumprod(G > 0, axis=-1).astype(bool)
    G = np.where(pos, G, 0.0)
    G = np.minimum.accumulate(np.where(pos, G, np.inf), axis=-1)
    G = np.where(pos, G, 0.0)
    tau = -1.0 + 2.0 * G.sum(-1)
    tau = np.maximum(tau, 1.0 / math.log10(max(C * D, 10)))
    out = C * D / tau
    return np.where(var_plus > 0, np.minimum(out, C * D * math.log10(max(C * D, 10))), float(C * D))


def ess_1d(x: np.ndarray) -> float:
    """ESS of one series (draw,) or one set of chains (chain, draw)."""
    x = np.asarray(x, float)
    if x.ndim == 1:
        x = x[None]
    return float(ess(x))


def mean_se(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean over (chain, draw) of ``x`` (C, D, ...) and its Monte-Carlo standard error sd/√ESS."""
    x = np.asarray(x, float)
    mu = x.mean((0, 1))
    sd = x.reshape((-1,) + x.shape[2:]).std(0, ddof=1) if x.shape[0] * x.shape[1] > 1 else np.zeros_like(mu)
    return mu, sd / np.sqrt(ess(x))
