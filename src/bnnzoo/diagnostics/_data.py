"""Read what the diagnostics need from a run once: readouts, weights, preactivations of every layer, the task.

:func:`run_data` accepts an ArviZ InferenceData / DataTree made by :func:`bnnzoo.sample` (or a path to its NetCDF
file, or a :class:`RunData` itself) and returns a :class:`RunData` with plain numpy arrays, leading axes
(chain, draw); it reads the run through :func:`bnnzoo.diagnostics.run.read_run`, the one reader of runs.  Preactivations that were not recorded with ``record=("z",)`` are recomputed from the weights
(z¹ = W¹ xᵀ/√N0, zˡ = Wˡ φ(zˡ⁻¹)/√N), which is also how test-point preactivations are obtained.

Small statistics helpers shared by the diagnostic modules live here too (effective sample size, standard errors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.fft

from ..models.activations import np_activation

__all__ = ["RunData", "run_data", "np_activation", "ess_1d", "ess", "mean_se", "class_means"]

@dataclass
class RunData:
    """Numpy view of a run (leading axes chain, draw).

    a : (C, D, N, m) readout weights.   f : (C, D, P, m) training outputs or None.
    weights : [W1 (C, D, N, N0), W2.. (C, D, N, N)] hidden weights (may be empty if only z were stored).
    X : (P, N0), Y : (P, m), labels : (P,) training data.   X_test, Y_test, labels_test, f_test : test set or None.
    activation, depth, width, readout, temperature, sigma_a2, sigma_w2 : the model's settings.
    recorded_z : {layer: (C, D, N, P)} recorded preactivations.   summaries : {site: (C, D, ...)} the recorded
    per-draw summaries (:mod:`bnnzoo.models.summaries`: zbar1, hbar1, zsq1, kc_ff1, ..., kc_norm1, ...).
    kernel_means : {"K1": (C, B, P, P), "Kz1": ..., "K1_draws": draws per mean} the streamed kernel means.
    Every per-unit quantity is read from the summaries when they were recorded, else from z (recorded, or
    recomputed from the weights).
    config : :func:`bnnzoo.run_config` (empty dict for runs made elsewhere).
    """

    a: np.ndarray
    X: np.ndarray
    Y: np.ndarray
    labels: np.ndarray
    activation: str
    depth: int
    weights: list = field(default_factory=list)
    recorded_z: dict = field(default_factory=dict)
    f: np.ndarray | None = None
    summaries: dict = field(default_factory=dict)
    kernel_means: dict = field(default_factory=dict)
    X_test: np.ndarray | None = None
    Y_test: np.ndarray | None = None
    labels_test: np.ndarray | None = None
    f_test: np.ndarray | None = None
    readout: str = "nonlazy"
    temperature: float = float("nan")
    sigma_a2: float = float("nan")
    sigma_w2: float = 1.0
    config: dict = field(default_factory=dict)
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_chains(self) -> int:
        return self.a.shape[0]

    @property
    def n_draws(self) -> int:
        return self.a.shape[1]

    @property
    def width(self) -> int:
        return self.a.shape[2]

    @property
    def m(self) -> int:
        return self.a.shape[3]

    @property
    def P(self) -> int:
        return self.X.shape[0]

    @property
    def phi(self):
        return np_activation(self.activation)

    @property
    def task(self) -> dict:
        return dict(self.config.get("task", {}))

    @property
    def is_orthogonal_toy(self) -> bool:
        t = self.task
        if t.get("orthogonal"):
            return True
        K0 = self.X @ self.X.T / self.X.shape[1]
        return bool(np.allclose(K0, np.eye(self.P), atol=1e-6))

    def has_z(self, layer: int) -> bool:
        """Whether the preactivations of ``layer`` at every draw can be had (recorded, or the weights are)."""
        return layer in self.recorded_z or len(self.weights) >= self.depth

    def has_kernels(self, layer: int) -> bool:
        """Whether the kernels of ``layer`` can be had (streamed block means, or from z)."""
        return (f"K{layer}" in self.kernel_means and f"Kz{layer}" in self.kernel_means) or self.has_z(layer)

    def z(self, layer: int) -> np.ndarray:
        """Preactivations of hidden layer ``layer`` (1-based) on the training points, (C, D, N, P)."""
        if not 1 <= layer <= self.depth:
            raise ValueError(f"layer must be in 1..{self.depth}, got {layer}")
        if layer in self.recorded_z:
            return self.recorded_z[layer]
        return self._forward(self.X, "train")[layer - 1]

    def z_test(self, layer: int) -> np.ndarray:
        """Preactivations of layer ``layer`` on the test points, (C, D, N, P_test) (needs the weights)."""
        if self.X_test is None:
            raise ValueError("this run has no test set")
        return self._forward(self.X_test, "test")[layer - 1]

    def _forward(self, X, key):
        if key in self._cache:
            return self._cache[key]
        if len(self.weights) < self.depth:
            raise ValueError("the posterior holds neither the preactivations nor the hidden weights W1..WL; "
                             "sample with record=('z',), or without exclude= of the weights")
        N0 = X.shape[1]
        zs = [np.einsum("cdni,pi->cdnp", self.weights[0], X, optimize=True) / math.sqrt(N0)]
        for W in self.weights[1:]:
            zs.append(np.einsum("cdnj,cdjp->cdnp", W, self.phi(zs[-1]), optimize=True) / math.sqrt(self.width))
        self._cache[key] = zs
        return zs

    def class_means(self, layer: int, activated: bool = False) -> np.ndarray:
        """Per-class mean of the layer's preactivations (or activations if ``activated``), (C, D, N, m)."""
        site = f"{'hbar' if activated else 'zbar'}{layer}"
        if site in self.summaries:
            return self.summaries[site]
        key = ("cm", layer, activated)
        if key not in self._cache:
            z = self.z(layer)
            self._cache[key] = class_means(self.phi(z) if activated else z, self.labels, self.m)
        return self._cache[key]

    def unit_msq(self, layer: int) -> np.ndarray:
        """Every unit's mean of z² over the training points, (C, D, N)."""
        site = f"zsq{layer}"
        if site in self.summaries:
            return self.summaries[site]
        return np.mean(self.z(layer) ** 2, axis=-1)

    def per_draw(self, name: str, layer: int) -> np.ndarray | None:
        """``name`` ("d_lr", "nc1", "cka_y") of ``layer`` at every draw, (C, D), from the recorded projections of
        the centred kernel (:func:`~bnnzoo.diagnostics.kernels.richness_from_projections`); None when the run did
        not record them (or the outputs ``f``)."""
        sites = [f"{p}{layer}" for p in ("kc_ff", "kc_yy", "kc_mm", "kc_mw", "kc_norm")]
        if self.f is None or not all(s in self.summaries for s in sites):
            return None
        key = ("richness", layer)
        if key not in self._cache:
            from .kernels import richness_from_projections

            rank = max(int(np.linalg.matrix_rank(self.Y - self.Y.mean(0))), 1)
            d, n, c = richness_from_projections(self.f, self.Y, *(self.summaries[s] for s in sites), rank=rank)
            self._cache[key] = {"d_lr": d, "nc1": n, "cka_y": c}
        return self._cache[key][name]

    def kernel_batches(self, layer: int, n_batches: int = 10, pre: bool = False):
        """The layer's feature kernel φ(z)ᵀφ(z)/N (or, ``pre``, zᵀz/N) averaged over blocks of consecutive draws:
        (blocks (C·B, P, P), weights (C·B,) the draws in each).  From the streamed kernel means when recorded,
        else from z in ``n_batches`` blocks per chain."""
        site = f"{'Kz' if pre else 'K'}{layer}"
        if site in self.kernel_means:
            Kb = self.kernel_means[site]
            C, B = Kb.shape[:2]
            return Kb.reshape((C * B,) + Kb.shape[2:]), np.full(C * B, float(self.kernel_means[site + "_draws"]))
        key = ("kb", layer, n_batches, pre)
        if key not in self._cache:
            z = self.z(layer)
            f = z if pre else self.phi(z)
            C, D, N, P = f.shape
            bt = batches(D, n_batches)
            Kb = np.array([[np.einsum("dnp,dnq->pq", f[c, a:b], f[c, a:b], optimize=True) / ((b - a) * N)
                            for a, b in bt] for c in range(C)]).reshape(-1, P, P)
            w = np.array([[b - a for a, b in bt] for _ in range(C)], float).reshape(-1)
            self._cache[key] = (Kb, w)
        return self._cache[key]


def batches(n_draws: int, n_batches: int) -> list[tuple[int, int]]:
    """``n_batches`` blocks of consecutive draws (fewer when there are fewer draws), as (start, stop) pairs."""
    edges = np.linspace(0, n_draws, min(n_batches, n_draws) + 1).astype(int)
    return [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def class_means(x: np.ndarray, labels: np.ndarray, m: int | None = None) -> np.ndarray:
    """Mean of ``x`` (..., P) over the points of each class → (..., m)."""
    labels = np.asarray(labels)
    m = int(labels.max()) + 1 if m is None else m
    onehot = (labels[:, None] == np.arange(m)[None, :]).astype(x.dtype if x.dtype.kind == "f" else float)
    counts = onehot.sum(0)
    return (x @ onehot) / np.where(counts > 0, counts, 1)


def run_data(idata, activation: str | None = None) -> RunData:
    """Build a :class:`RunData` from a run (InferenceData / DataTree, a path to its NetCDF file, or a RunData),
    through :func:`bnnzoo.diagnostics.run.read_run`: ``activation`` names φ for a run whose provenance does not, and
    hyperparameters with priors (scalar sites named ``temperature``, ``sigma_a2``, ``sigma_w2``) are taken at their
    posterior median."""
    if isinstance(idata, RunData):
        return idata
    from .run import read_run

    run = read_run(idata, model_kwargs={"activation": activation} if activation else None)
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


def ess(x: np.ndarray) -> np.ndarray:
    """Effective sample size of the chains ``x`` (chain, draw) for each trailing index: x has shape
    (C, D, ...); returns (...).  Geyer's initial-monotone-sequence estimator on the chain-averaged
    autocorrelation (Stan's / ArviZ's method without rank normalisation)."""
    x = np.asarray(x, float)
    C, D = x.shape[:2]
    xt = np.moveaxis(x, (0, 1), (-2, -1))  # (..., C, D)
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
