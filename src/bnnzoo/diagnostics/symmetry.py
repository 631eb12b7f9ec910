"""Permutation symmetry, per layer: broken when neurons keep distinct identities (codes, branches) for the whole
run, restored when the dynamics permute them.

The posterior is invariant under permutations of the neurons of a layer.  The symmetry is *restored by the
dynamics* when a neuron cannot be told from another by its history; it is *broken* when each neuron keeps its own
identity.  Two permutation-aware measures, per layer (readout vectors for ``"a"``, class means of the preactivations
for ``"z<l>"``):

* **identity correlation** ρ: correlation over neurons between a neuron's time average over the first half of the
  run and over the second half (each centred on the population mean).  A neuron that keeps its identity has the
  same average in both halves (ρ → 1); neurons that wander over the whole marginal forget it (ρ → 0, up to the
  autocorrelation left at a lag of half the run).  Standard error by bootstrap over neurons.
* **code memory** μ (layers only, selective units; :mod:`bnnzoo.diagnostics.codes`): probability that a unit has
  the same code half a run later, normalised so that chance gives 0 and no change gives 1.

Verdict ``broken`` when ρ > 0.5 — the neuron's identity explains more than half of the covariance of its
two half-run averages.  Known cases (N = P = 100, T = 0.01, 2 × 300 draws): linear readout ρ ≈ 0 (restored),
sigmoidal ρ ≈ 1 (broken), ReLU ρ ≈ 1 (the outliers keep their identity; the bulk, taken alone, is restored).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._data import run_data
from .._record import Record, array_field
from .codes import neural_codes
from .ergodicity import neuron_features

__all__ = ["SymmetryResult", "permutation_symmetry", "symmetry_of", "identity_correlation", "SYMMETRY_THRESHOLD"]

SYMMETRY_THRESHOLD = 0.5


@dataclass(frozen=True, repr=False)
class SymmetryResult(Record):
    """Permutation symmetry of one layer.

    variable : "a" or "z<l>".   identity_corr, identity_corr_se : ρ and its bootstrap standard error.
    code_memory : μ (NaN for the readout).   threshold : cut on ρ.   verdict : "broken" or "restored".
    identity_corr_per_chain : (chain,).
    """

    variable: str
    identity_corr: float
    identity_corr_se: float
    code_memory: float
    threshold: float
    verdict: str
    identity_corr_per_chain: np.ndarray = array_field("chain")

    @property
    def broken(self) -> bool:
        return self.verdict == "broken"

    def summary(self) -> list[str]:
        mem = "" if not np.isfinite(self.code_memory) else f", code memory over half a run {self.code_memory:.2f}"
        return [f"{self.variable}: permutation symmetry {self.verdict} — identity correlation between run halves "
                f"{self.identity_corr:.2f} ± {self.identity_corr_se:.2f} (threshold {self.threshold}){mem}"]


def identity_correlation(x: np.ndarray, n_boot: int = 200, seed: int = 0):
    """ρ per chain, its mean and bootstrap SE, for trajectories ``x`` (chain, draw, neuron, feature)."""
    x = np.asarray(x, float)
    if x.ndim == 3:
        x = x[..., None]
    C, D, N, K = x.shape
    h = D // 2
    A1, A2 = x[:, :h].mean(1), x[:, D - h:].mean(1)  # (C, N, K)
    A1 = A1 - A1.mean(1, keepdims=True)
    A2 = A2 - A2.mean(1, keepdims=True)

    def rho(a1, a2):
        den = np.sqrt((a1**2).sum((1, 2)) * (a2**2).sum((1, 2)))
        return (a1 * a2).sum((1, 2)) / np.where(den > 0, den, 1.0)

    per_chain = rho(A1, A2)
    rng = np.random.default_rng(seed)
    boots = [rho(A1[:, idx], A2[:, idx]).mean() for idx in (rng.integers(0, N, N) for _ in range(n_boot))]
    return per_chain, float(per_chain.mean()), float(np.std(boots))


def permutation_symmetry(idata, variables=None, threshold: float = SYMMETRY_THRESHOLD) -> dict[str, SymmetryResult]:
    """{variable: :class:`SymmetryResult`} for the readout ("a") and every layer ("z1".."zL") of a run."""
    rd = run_data(idata)
    if variables is None:
        variables = ["a"] + [f"z{l}" for l in range(1, rd.depth + 1)]
    out = {}
    for v in variables:
        mem = neural_codes(rd, int(v[1:])).code_memory if v != "a" else float("nan")
        out[v] = symmetry_of(neuron_features(rd, v), v, code_memory=mem, threshold=threshold)
    return out


def symmetry_of(x: np.ndarray, variable: str, code_memory: float = float("nan"),
                threshold: float = SYMMETRY_THRESHOLD) -> SymmetryResult:
    """:class:`SymmetryResult` of unit trajectories ``x`` (chain, draw, unit, feature) of one layer; ``code_memory``
    is the layer's μ when it has codes (NaN otherwise)."""
    per_chain, rho, se = identity_correlation(x)
    return SymmetryResult(variable=variable, identity_corr=rho, identity_corr_se=se, code_memory=float(code_memory),
                          threshold=float(threshold), verdict="broken" if rho > threshold else "restored",
                          identity_corr_per_chain=per_chain)
