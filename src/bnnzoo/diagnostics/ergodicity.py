"""Ergodicity breaking: does each neuron explore the whole single-neuron marginal, or stay where it started?

In a wide Bayesian network the neurons of a layer are exchangeable, so the population of N neurons at one draw is a
sample of the single-neuron marginal.  If the dynamics are ergodic, one neuron's trajectory samples that same
marginal; if ergodicity is broken (docs/theory.md §3: sigmoidal and ReLU feature layers), each neuron stays in its
branch and its time average differs from the population's.  Three numbers measure it, per MCMC chain, for a feature
vector x_i(t) of each neuron i (its readout vector a_i, or the class means of its preactivations in a layer):

* **variance ratio** r = Σ_k ⟨Var_t x_ik⟩_i / Σ_k Var_{t,i} x_ik — the share of the pooled variance a neuron covers
  over time.  Ergodic: r ≈ 1 − τ/D (τ the integrated autocorrelation time, D draws); broken: r = within-branch
  variance / total variance ≪ 1.
* **R-hat with neurons as chains**: rank-normalised split R̂ (Vehtari et al. 2021) over the N neuron trajectories,
  R̂ ≈ r^{-1/2}; 1 when neurons are interchangeable.
* **distribution distance**: Kolmogorov–Smirnov distance between each neuron's trajectory and the pooled marginal,
  next to the same distance between the two halves of the neuron's own trajectory (what finite sampling alone
  gives).  Broken: the first is much larger than the second.

**Verdict.**  ``broken`` when r < 0.5 (equivalently R̂ > √2): a neuron covers less than half of the marginal's
variance, i.e. its fixed offset from the other neurons carries more variance than its own motion.  Justification on
the known cases at N = P = 100, T = 0.01 (toy task, 2 × 300 draws): the linear net (ergodic by theory) gives
r = 0.93 on readouts and 0.93 on first-layer class means; the sigmoidal net (broken by theory) gives r = 0.04 and
0.04; ReLU (outliers frozen) gives r ≈ 0.02 on readouts.  0.5 sits a factor ≥ 1.8 from both sides; r between 0.3
and 0.7 is reported as such (``"marginal"`` in :attr:`ErgodicityResult.confidence`) so the user can sample longer.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from ._data import RunData, ess, run_data
from .._record import Record, array_field

__all__ = ["ErgodicityResult", "ergodicity", "ergodicity_breaking", "rhat_neurons", "variance_ratio",
           "ERGODIC_THRESHOLD"]

ERGODIC_THRESHOLD = 0.5


@dataclass(frozen=True, repr=False)
class ErgodicityResult(Record):
    """Ergodicity of one variable's neurons.

    Attributes
    ----------
    variable : "a" (readout vectors) or "z1".."zL" (class means of the preactivations).
    ratio : variance ratio r (mean over chains); ratio_se : its standard error (bootstrap over neurons).
    rhat : median over features and chains of R̂ with neurons as chains.
    ks_distance : median KS distance neuron trajectory ↔ pooled marginal; ks_split : median KS distance between the
        two halves of a neuron's own trajectory (the finite-sampling reference).
    ess_neuron : median effective sample size of one neuron's trajectory.
    threshold : r below which ergodicity is called broken.   verdict : "ergodic" or "broken".
    confidence : "clear" or "marginal" (0.3 < r < 0.7: sample longer before trusting the verdict).
    ratio_per_feature : (feature,) r for each feature (class).  ratio_per_neuron : (chain, neuron) a neuron's time
        variance over the pooled variance (summed over features).  rhat_per_feature : (feature,).
    """

    variable: str
    ratio: float
    ratio_se: float
    rhat: float
    ks_distance: float
    ks_split: float
    ess_neuron: float
    threshold: float
    verdict: str
    confidence: str
    n_chains: int
    n_draws: int
    n_neurons: int
    ratio_per_feature: np.ndarray = array_field("feature")
    ratio_per_neuron: np.ndarray = array_field("chain", "neuron")
    rhat_per_feature: np.ndarray = array_field("feature")

    @property
    def broken(self) -> bool:
        return self.verdict == "broken"

    def summary(self) -> list[str]:
        return [f"{self.variable}: {self.verdict} ({self.confidence}) — time/total variance r = {self.ratio:.3f} "
                f"± {self.ratio_se:.3f} (threshold {self.threshold}), R̂(neurons as chains) = {self.rhat:.2f}, "
                f"KS neuron↔pool = {self.ks_distance:.2f} vs split-half {self.ks_split:.2f}, "
                f"ESS/neuron = {self.ess_neuron:.0f}  [{self.n_chains}×{self.n_draws} draws, N = {self.n_neurons}]"]


def rhat_neurons(x: np.ndarray) -> float:
    """Rank-normalised split R̂ of the trajectories ``x`` (draw, neuron), the neurons playing the chains."""
    x = np.asarray(x, float)
    D, N = x.shape
    half = D // 2
    if half < 2 or N < 1:
        return float("nan")
    xs = np.concatenate([x[:half], x[D - half:]], axis=1)
    return _rhat_of_ranks(stats.rankdata(xs, axis=None).reshape(xs.shape), half)


def _rhat_of_ranks(r: np.ndarray, half: int, quantiles: np.ndarray | None = None) -> float:
    """:func:`rhat_neurons` from the average ranks ``r`` (half, 2 × neuron) of its split trajectories.

    ``quantiles`` (r.size,): the normal quantiles of the integer ranks 1..r.size, computed once for many calls (the
    same numbers: ``ndtri`` of the same arguments); tied entries, whose average rank is a half-integer, get theirs
    computed here."""
    if quantiles is None:
        z = special.ndtri((r - 0.375) / (r.size + 0.25))   # the normal quantiles (stats.norm.ppf's numbers)
    else:
        whole = r == np.floor(r)
        z = quantiles[np.where(whole, r, 1).astype(np.int64) - 1]
        if not whole.all():
            z[~whole] = special.ndtri((r[~whole] - 0.375) / (r.size + 0.25))
    W = z.var(0, ddof=1).mean()
    B = half * z.mean(0).var(ddof=1)
    if W <= 0:
        return float("nan")
    return float(np.sqrt(((half - 1) / half * W + B / half) / W))


def _pool_ranks(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lowest, highest) 1-based rank of every entry of ``vals`` among all its entries (ties share a range): the
    counts of entries below and up to each value, from one sort (of any kind: the ranks of tied entries do not
    depend on their order)."""
    flat = vals.ravel()
    order = np.argsort(flat)
    sv = flat[order]
    new = np.empty(len(sv), bool)
    new[:1] = True
    new[1:] = sv[1:] != sv[:-1]
    if new.all():                                         # no ties: an entry's rank is its place in the order
        rank = np.empty(len(sv), np.int64)
        rank[order] = np.arange(1, len(sv) + 1)
        rank = rank.reshape(vals.shape)
        return rank, rank
    group = np.cumsum(new) - 1                            # tie group of each sorted entry
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], len(sv))                 # one past each group's last entry
    lo, hi = np.empty(len(sv), np.int64), np.empty(len(sv), np.int64)
    lo[order], hi[order] = starts[group] + 1, ends[group]
    return lo.reshape(vals.shape), hi.reshape(vals.shape)


def _ks_of_ranks(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The KS distance of each column (n, units) to the pool its values make up, from their ranks in it
    (:func:`_pool_ranks`) sorted along each column: a value's ECDF in the pool is its highest rank over the pool's
    size, and just below it its lowest rank less one."""
    n, M = lo.shape[0], lo.size
    Fr = hi / M
    Fl = (lo - 1) / M
    j = (np.arange(1, n + 1) / n)[:, None]
    return np.maximum(np.max(np.abs(j - Fr), 0), np.max(np.abs(j - 1.0 / n - Fl), 0))


def ks_2samp_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The two-sample KS statistic of every row pair of ``a`` (rows, n) and ``b`` (rows, m): scipy.stats.ks_2samp's
    statistic (ties included), for many rows at once."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    allv = np.concatenate([a, b], axis=1)
    return _ks_2samp_ordered(allv, np.argsort(allv, axis=1), a.shape[1])


def _ks_2samp_ordered(allv: np.ndarray, order: np.ndarray, n: int) -> np.ndarray:
    """:func:`ks_2samp_rows` of the rows ``allv`` (rows, n + m), the first ``n`` entries of a row from one sample,
    given ``order``, an argsort of each row (of any kind)."""
    m = allv.shape[1] - n
    # the stable order (ties in the order given) fixes the running sum's rounding; a row without ties has one order,
    # which any sort finds, so only rows with ties (or NaNs) are sorted again stably
    vals = np.take_along_axis(allv, order, axis=1)
    tied = ((vals[:, 1:] == vals[:, :-1]) | np.isnan(vals[:, 1:])).any(1)
    if tied.any():
        order = order.copy()
        order[tied] = np.argsort(allv[tied], axis=1, kind="stable")
        vals[tied] = np.take_along_axis(allv[tied], order[tied], axis=1)
    step = np.where(order < n, 1.0 / n, -1.0 / m)
    diff = np.cumsum(step, axis=1)                        # F_a − F_b just after each sorted value
    last = np.ones_like(vals, bool)                       # only the last of tied values is a point of both CDFs
    last[:, :-1] = vals[:, 1:] != vals[:, :-1]
    return np.max(np.where(last, np.abs(diff), 0.0), axis=1)


def _trajectories(x: np.ndarray) -> np.ndarray:
    """``x`` as a float array (chain, draw, neuron, feature) of at least 4 draws (a missing feature axis added)."""
    x = np.asarray(x, float)
    if x.ndim == 3:
        x = x[..., None]
    if x.ndim != 4:
        raise ValueError(f"x must have shape (chain, draw, neuron, feature), got {x.shape}")
    if x.shape[1] < 4:
        raise ValueError(f"need at least 4 draws per chain, got {x.shape[1]}")
    return x


def _variances(x: np.ndarray):
    """(within (C, N, K), time means (C, N, K), pooled variance (C, K), variance ratio per chain (C,)) of the
    trajectories ``x`` (chain, draw, neuron, feature)."""
    within = x.var(1, ddof=1)  # (C, N, K)
    mu = x.mean(1)  # (C, N, K)
    total = within.mean(1) + mu.var(1)  # (C, K)  pooled variance (law of total variance, ddof-consistent)
    ratio_c = within.mean(1).sum(-1) / np.maximum(total.sum(-1), 1e-300)  # (C,)
    return within, mu, total, ratio_c


def variance_ratio(x: np.ndarray) -> float:
    """The variance ratio r of :func:`ergodicity` (its ``ratio``, the same number) alone, without the rank, KS and
    ESS statistics.

    Parameters
    ----------
    x : (chain, draw, neuron, feature) or (chain, draw, neuron) neuron trajectories, at least 4 draws.

    Returns
    -------
    float
        r, the mean over chains of the neurons' time variance over the pooled variance.
    """
    return float(_variances(_trajectories(x))[3].mean())


def ergodicity(x: np.ndarray, variable: str = "x", threshold: float = ERGODIC_THRESHOLD, n_boot: int = 200,
               seed: int = 0) -> ErgodicityResult:
    """Ergodicity diagnostics of neuron trajectories ``x`` with shape (chain, draw, neuron, feature).

    Each chain is its own network (its neurons share nothing with another chain's), so every statistic is computed
    per chain and averaged.
    """
    x = _trajectories(x)
    C, D, N, K = x.shape
    h = D // 2

    # ranks depend only on the order of the values: sorted in float32 when that holds them exactly (the stored
    # draws are float32), a cheaper sort of the same ranks
    exact32 = x.astype(np.float32)
    keys = exact32 if np.array_equal(exact32, x) else x
    quantiles = special.ndtri((np.arange(1, D * N + 1) - 0.375) / (D * N + 0.25)) if D % 2 == 0 else None

    def per_chain_feature(ck):
        c, k = ck
        xs = keys[c, :, :, k]
        lo, hi = _pool_ranks(xs)          # one sort serves the KS distances to the pool and, D even, the R̂
        if D % 2 == 0 and h >= 2:         # the split halves hold every draw: their ranks are these ranks
            split = lambda r: np.concatenate([r[:h], r[h:]], axis=1)  # noqa: E731
            rh = _rhat_of_ranks(0.5 * (split(lo) + split(hi)), h, quantiles)
            rows = x[c, :, :, k].T        # (neuron, draw): the two halves side by side, ks_2samp_rows' rows
            order = np.argsort(keys[c, :, :, k].T, axis=1)
            sort = lambda r: np.take_along_axis(r.T, order, axis=1).T  # noqa: E731  (ranks follow the values)
            return rh, _ks_of_ranks(sort(lo), sort(hi)), _ks_2samp_ordered(rows, order, h)
        rh = rhat_neurons(xs) if h >= 2 else float("nan")
        return (rh, _ks_of_ranks(np.sort(lo, axis=0), np.sort(hi, axis=0)),
                ks_2samp_rows(x[c, :h, :, k].T, x[c, D - h:, :, k].T))

    # the (chain, feature) pairs are independent and spend their time sorting, which releases the GIL: threads
    # share the machine's cores (results in the same order, so the same numbers as one after the other).  The
    # per-neuron ESS (each neuron's trajectory taken as one chain) goes first, on a thread of its own: its FFTs and
    # array arithmetic on large blocks run without the GIL, beside the pairs' many smaller steps, which hold it.
    # This thread computes the variance ratio and its bootstrap meanwhile
    pairs = [(c, k) for c in range(C) for k in range(K)]
    with ThreadPoolExecutor(max_workers=max(2, min(len(pairs), os.cpu_count() or 1))) as pool:
        # chain by chain (each neuron's trajectory is a series of its own, in the order chain, neuron, feature):
        # views of x, where all chains at once would need a transposed copy of it
        ess_each = pool.submit(lambda: np.concatenate([ess(x[c].reshape(1, D, N * K)) for c in range(C)]))
        parts = pool.map(per_chain_feature, pairs)         # every pair submitted now, gathered below
        within, mu, total, ratio_c = _variances(x)
        ratio_feat = (within.mean(1) / np.maximum(total, 1e-300)).mean(0)
        ratio_neuron = within.sum(-1) / np.maximum(total.sum(-1)[:, None], 1e-300)
        rng = np.random.default_rng(seed)
        boots = []
        for _ in range(n_boot):
            idx = rng.integers(0, N, size=N)
            w, m_ = within[:, idx], mu[:, idx]
            boots.append(np.mean(w.mean(1).sum(-1) / np.maximum((w.mean(1) + m_.var(1)).sum(-1), 1e-300)))
        ratio = float(ratio_c.mean())
        parts = list(parts)
        ess_each = ess_each.result()
    rh = np.array([p[0] for p in parts]).reshape(C, K)
    ks, ks_split = np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts])
    verdict = "broken" if ratio < threshold else "ergodic"
    confidence = "marginal" if 0.3 < ratio < 0.7 else "clear"
    return ErgodicityResult(
        variable=variable, ratio=ratio, ratio_se=float(np.std(boots)) if n_boot else float("nan"),
        rhat=float(np.nanmedian(rh)), ks_distance=float(np.median(ks)), ks_split=float(np.median(ks_split)),
        ess_neuron=float(np.median(ess_each)), threshold=float(threshold), verdict=verdict, confidence=confidence,
        n_chains=C, n_draws=D, n_neurons=N, ratio_per_feature=ratio_feat, ratio_per_neuron=ratio_neuron,
        rhat_per_feature=np.nanmedian(rh, axis=0))


def neuron_features(rd: RunData, variable: str) -> np.ndarray:
    """The per-neuron feature trajectories (chain, draw, neuron, feature) a variable name stands for: "a" → readout
    vectors; "z<l>" → class means of layer l's preactivations."""
    if variable == "a":
        return rd.a
    if variable.startswith("z") and variable[1:].isdigit():
        return rd.class_means(int(variable[1:]))
    raise ValueError(f"variable must be 'a' or 'z1'..'z{rd.depth}', got {variable!r}")


def ergodicity_breaking(idata, variables=None, threshold: float = ERGODIC_THRESHOLD) -> dict[str, ErgodicityResult]:
    """Ergodicity of the readout ("a") and of every layer's class-mean preactivations ("z1".."zL") of a run.

    Returns {variable: :class:`ErgodicityResult`}.
    """
    rd = run_data(idata)
    if variables is None:
        variables = ["a"] + [f"z{l}" for l in range(1, rd.depth + 1)]
    return {v: ergodicity(neuron_features(rd, v), variable=v, threshold=threshold) for v in variables}
