"""Reusable statistical checks of MCMC draws against a known truth (in the spirit of Inference Gym's test_util), and
synthetic cases with a known answer.

The claim "the sampler's posterior mean of X equals the truth" is checked by an ESS-aware z-test: the Monte-Carlo
standard error of the mean is sd / √ESS with ArviZ's rank-normalised bulk ESS, combined in quadrature with the
truth's own standard error when the truth is itself a Monte-Carlo estimate (e.g. an exact Gibbs sampler).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy.stats import norm

from . import azcompat
from .diagnostics.populations import ObservableInfo
from .tasks import Task

__all__ = ["ZTest", "mcse_mean", "z_test", "assert_mean_matches", "gaussian_task", "frozen_planted_families"]


def mcse_mean(draws) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, Monte-Carlo standard error and bulk ESS of draws shaped (chain, draw, *event)."""
    draws = np.asarray(draws, dtype=float)
    if draws.ndim < 2:
        raise ValueError(f"draws must have shape (chain, draw, ...), got {draws.shape}")
    ds = xr.Dataset({"x": (("chain", "draw") + tuple(f"d{i}" for i in range(draws.ndim - 2)), draws)})
    ess = np.asarray(azcompat.ess(ds, method="bulk")["x"].values, dtype=float)
    ess = np.maximum(np.nan_to_num(ess, nan=1.0), 1.0)
    sd = draws.reshape((-1,) + draws.shape[2:]).std(axis=0, ddof=1)
    return draws.mean(axis=(0, 1)), sd / np.sqrt(ess), ess


@dataclass(frozen=True)
class ZTest:
    """Result of :func:`z_test`: per-entry estimate, truth, combined standard error and z-score."""

    estimate: np.ndarray
    truth: np.ndarray
    se: np.ndarray
    z: np.ndarray
    ess: np.ndarray

    @property
    def max_abs_z(self) -> float:
        return float(np.max(np.abs(self.z)))

    def __repr__(self) -> str:
        return (f"ZTest(max|z|={self.max_abs_z:.2f}, entries={self.z.size}, min ESS={self.ess.min():.0f}, "
                f"max |estimate − truth|={np.max(np.abs(self.estimate - self.truth)):.3g})")


def z_test(draws, truth, truth_se=0.0) -> ZTest:
    """ESS-aware z-scores of the draws' mean against ``truth`` (± ``truth_se``)."""
    est, se, ess = mcse_mean(draws)
    truth = np.broadcast_to(np.asarray(truth, dtype=float), est.shape)
    se_tot = np.sqrt(se**2 + np.broadcast_to(np.asarray(truth_se, dtype=float), est.shape) ** 2)
    return ZTest(est, truth, se_tot, (est - truth) / se_tot, ess)


def assert_mean_matches(draws, truth, truth_se=0.0, *, z_max: float | None = None, name: str = "") -> ZTest:
    """Assert every entry's z-score is within ``z_max``.

    The default ``z_max`` is Bonferroni-corrected for the number of entries at a family-wise false-alarm rate of
    10⁻³ (two-sided), so a correct sampler fails this check in about one run in a thousand.
    """
    res = z_test(draws, truth, truth_se)
    if z_max is None:
        z_max = float(norm.isf(1e-3 / (2 * res.z.size)))
    if res.max_abs_z > z_max:
        i = np.unravel_index(np.argmax(np.abs(res.z)), res.z.shape)
        raise AssertionError(f"{name}: mean disagrees with the truth at entry {i}: estimate {res.estimate[i]:.5g}, "
                             f"truth {res.truth[i]:.5g}, se {res.se[i]:.3g}, z = {res.z[i]:.2f} > {z_max:.2f} "
                             f"({res!r})")
    return res


def gaussian_task(P: int, N0: int, m: int, seed: int):
    """A task with i.i.d. standard Gaussian inputs (P × N0) and targets (P × m), for oracle tests away from the
    orthogonal toy task."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((P, N0))
    Y = rng.standard_normal((P, m))
    return Task(X=X, Y=Y, labels=np.zeros(P, int), name="gaussian", meta=dict(P=P, N0=N0, seed=seed))


def frozen_planted_families(rng: np.random.Generator, shift_sd: float = 0.0, n: int = 8, N: int = 200,
                            p: float = 0.3, D: int = 50) -> tuple[dict, list, dict]:
    """Two start families of a code fraction with a known law, the first one planted and frozen, for checks of
    :func:`bnnzoo.workflows.certify.compare_families` (``planted="planted"``).

    Every "planted" chain keeps the teacher's population: a code fraction of N units drawn once at probability p
    (binomial), shifted by ``shift_sd`` binomial sds sqrt(p(1 − p)/N); every "prior" chain holds a population of its
    own, an independent binomial draw of the same law.  Within each chain the fraction moves a little: an AR(1)
    series with coefficient 0.9 (integrated autocorrelation time 19) and sd a fifth of the binomial sd.

    Parameters
    ----------
    rng : the random generator.
    shift_sd : the teacher's shift from its binomial draw, in binomial sds.
    n : chains per family.
    N : units per chain.
    p : the law's probability of the code.
    D : draws per chain.

    Returns
    -------
    tuple
        (values {"up": (2n, D) array}, the chains' families (n × "planted", then n × "prior"),
        info {"up": ObservableInfo("fraction", N)}), the arguments of ``compare_families``.
    """
    sd = math.sqrt(p * (1 - p) / N)
    mu = np.concatenate([np.full(n, rng.binomial(N, p) / N + shift_sd * sd), rng.binomial(N, p, n) / N])
    z = np.empty((2 * n, D))
    z[:, 0] = rng.standard_normal(2 * n)
    for d in range(1, D):
        z[:, d] = 0.9 * z[:, d - 1] + math.sqrt(1 - 0.81) * rng.standard_normal(2 * n)
    return {"up": mu[:, None] + 0.2 * sd * z}, ["planted"] * n + ["prior"] * n, {"up": ObservableInfo("fraction", N)}
