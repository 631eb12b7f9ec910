"""Three-layer (two hidden layers) Bayesian erf network for the He₃ single-index task (theory.md §8).

Parametrisation (rows convention, X is (P, d))::

    h¹ = W¹ Xᵀ / √d              (N1, P)    W¹ ~ N(0, σ₁²)  (N1, d)
    h² = W² φ(h¹) / √N1           (N2, P)    W² ~ N(0, σ₂²)  (N2, N1)
    f  = s · φ(h²)ᵀ a             (P, m)     a  ~ N(0, σ_a²) (N2, m)
    y | f ~ N(f, v)  entrywise

with φ = erf (default; any activation of :mod:`bnnzoo.models.activations` is accepted) and

    readout="standard":  s = 1/√N2,  v = κ        (lazy / NTK-style; the N2 → ∞ limit is the NNGP)
    readout="meanfield": s = 1/N2,   v = κ / N2   (rich / mean-field; the rescaled temperature T → T/N of
                                                   theory.md §1, so feature learning survives N2 → ∞)

Why this choice: the 1/√fan-in factors keep every preactivation O(1) under the prior at any width, so the prior is
the NNGP of theory.md §6 and the weight decay of Rubin et al. is simply the Gaussian prior (σ² = 1/weight decay);
the ridge / temperature κ is the variance of the Gaussian likelihood (Langevin dynamics on ½Σ(f−y)²/κ + weight decay
equilibrates to exactly this posterior).  The two readouts are the two scalings named in the issue; they coincide
with the FCN core's "lazy" / "nonlazy" conventions (:mod:`bnnzoo.models.fcn`).  The exact equations of arXiv
2512.04165 were not available to us (theory.md §8 is tagged unverified): this is our documented choice.

Sites (every axis named by a plate):
    W1 (neuron1, input), W2 (neuron2, neuron1), a (neuron2, class), f (point, class), y (point, class, observed),
    mse (), q_a (class,), h1 (neuron1, point) / h2 (neuron2, point) only when recorded,
    f_test (test_point, class) only when ``X_test`` is given.

Observables (alignment A_f on test inputs, first-layer overlaps with w* and specialists, second-layer overlaps) are
computed from these sites by :mod:`bnnzoo.diagnostics.alignment`.
"""

from __future__ import annotations

import math
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ..tasks.hermite import hermite_task
from .activations import ACTIVATIONS
from .zoo import Observable, UnitLayer, ZooEntry, lazy, register

__all__ = ["three_layer", "three_layer_dims", "check_three_layer_args", "three_layer_forward", "THREE_LAYER_READOUTS",
           "get_three_layer_activation"]

THREE_LAYER_READOUTS = ("standard", "meanfield")
_RECORD = ("h1", "h2")


def get_three_layer_activation(name: str):
    """φ by name: "erf" (erf(z), the default) or any entry of :data:`bnnzoo.models.activations.ACTIVATIONS`."""
    if name == "erf":
        return jax.scipy.special.erf
    if name in ACTIVATIONS:
        return ACTIVATIONS[name]
    raise ValueError(f"activation must be 'erf' or one of {sorted(ACTIVATIONS)}, got {name!r}")


def _readout(readout: str, width2: int, kappa: float) -> tuple[float, float]:
    """(readout prefactor s, likelihood variance v)."""
    if readout == "standard":
        return 1.0 / math.sqrt(width2), float(kappa)
    return 1.0 / width2, float(kappa) / width2


def check_three_layer_args(X, Y=None, *, width1=64, width2=64, activation="erf", readout="standard", kappa=0.01,
                           sigma_w1=1.0, sigma_w2=1.0, sigma_a2=1.0, num_outputs=None, X_test=None, record=()):
    """Validate the arguments of :func:`three_layer` with clear ``ValueError`` messages, before anything compiles."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must have shape (P, d), got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    if Y is not None:
        Y = np.asarray(Y)
        if Y.ndim != 2 or Y.shape[0] != X.shape[0]:
            raise ValueError(f"Y must have shape (P, m) with P = {X.shape[0]}, got {Y.shape}")
        if not np.all(np.isfinite(Y)):
            raise ValueError("Y contains NaN or infinite values")
        if num_outputs is not None and num_outputs != Y.shape[1]:
            raise ValueError(f"num_outputs={num_outputs} disagrees with Y, which has {Y.shape[1]} columns")
    elif num_outputs is None or int(num_outputs) < 1:
        raise ValueError("with Y=None (prior / predictive) give num_outputs >= 1")
    if X_test is not None:
        X_test = np.asarray(X_test)
        if X_test.ndim != 2 or X_test.shape[1] != X.shape[1]:
            raise ValueError(f"X_test must have shape (P_test, {X.shape[1]}), got {X_test.shape}")
    for name, w in (("width1", width1), ("width2", width2)):
        if not isinstance(w, (int, np.integer)) or isinstance(w, bool) or w < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {w!r}")
    get_three_layer_activation(activation)
    if readout not in THREE_LAYER_READOUTS:
        raise ValueError(f"readout must be one of {THREE_LAYER_READOUTS}, got {readout!r}")
    for name, v in (("kappa", kappa), ("sigma_w1", sigma_w1), ("sigma_w2", sigma_w2), ("sigma_a2", sigma_a2)):
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be > 0, got {v!r}")
    for r in record:
        if r not in _RECORD:
            raise ValueError(f"record: unknown entry {r!r}; use 'h1' and/or 'h2'")


def three_layer_dims(record: Sequence[str] = (), with_test: bool = False) -> dict[str, list[str]]:
    """Dims of every site of :func:`three_layer`."""
    dims = {"W1": ["neuron1", "input"], "W2": ["neuron2", "neuron1"], "a": ["neuron2", "class"],
            "f": ["point", "class"], "y": ["point", "class"], "mse": [], "q_a": ["class"]}
    if "h1" in record:
        dims["h1"] = ["neuron1", "point"]
    if "h2" in record:
        dims["h2"] = ["neuron2", "point"]
    if with_test:
        dims["f_test"] = ["test_point", "class"]
    return dims


def three_layer_forward(X, W1, W2, a, *, activation="erf", readout="standard", xp=jnp):
    """(h1, h2, f) for one parameter draw; ``xp`` = jax.numpy (default) or numpy for post-hoc analysis."""
    phi = get_three_layer_activation(activation) if xp is jnp else _numpy_activation(activation)
    d = X.shape[1]
    N1, N2 = W1.shape[0], W2.shape[0]
    s, _ = _readout(readout, N2, 1.0)
    h1 = W1 @ X.T / math.sqrt(d)
    h2 = W2 @ phi(h1) / math.sqrt(N1)
    f = s * (phi(h2).T @ a)
    return h1, h2, f


def _numpy_activation(name):
    """φ in float64 NumPy (for post-hoc analysis of draws)."""
    from scipy.special import erf

    table = {"erf": erf, "linear": lambda z: z, "relu": lambda z: np.maximum(z, 0.0),
             "sigmoid": lambda z: 0.5 * (1.0 + erf(math.sqrt(math.pi) / 2.0 * z)),
             "softplus": lambda z: np.logaddexp(0.0, z), "relu2": lambda z: np.maximum(z, 0.0) ** 2}
    if name not in table:
        get_three_layer_activation(name)  # raises the informative error for unknown names
        fn = get_three_layer_activation(name)
        return lambda z: np.asarray(fn(jnp.asarray(z)), dtype=float)
    return table[name]


def three_layer(X, Y=None, *, width1: int = 64, width2: int = 64, activation: str = "erf",
                readout: str = "standard", kappa: float = 0.01, sigma_w1: float = 1.0, sigma_w2: float = 1.0,
                sigma_a2: float = 1.0, num_outputs: int | None = None, X_test=None, record: Sequence[str] = ()):
    """Three-layer Bayesian network f(x) = s · aᵀ φ(W² φ(W¹ x/√d)/√N1) (module docstring for the full form).

    Parameters
    ----------
    X : (P, d) inputs.  Y : (P, m) targets or None (prior; give ``num_outputs``).
    width1, width2 : N1, N2 hidden widths.
    activation : "erf" (default) or a name from :data:`bnnzoo.models.activations.ACTIVATIONS`.
    readout : "standard" (1/√N2, likelihood variance κ) or "meanfield" (1/N2, variance κ/N2).
    kappa : κ > 0, the ridge / temperature (likelihood variance before the readout rescaling).
    sigma_w1, sigma_w2, sigma_a2 : prior variances σ₁², σ₂², σ_a² (inverse weight decays).
    X_test : optional (P_test, d) inputs; f on them is recorded as ``f_test`` (no latent site is added).
    record : "h1" and/or "h2" to record the hidden preactivations on the training inputs.
    """
    P, d = X.shape
    m = Y.shape[1] if Y is not None else int(num_outputs)
    if Y is not None:
        assert Y.shape == (P, m), f"Y has shape {Y.shape}, expected {(P, m)}"
    phi = get_three_layer_activation(activation)
    s, v = _readout(readout, width2, kappa)

    with numpyro.plate("neuron1", width1, dim=-2), numpyro.plate("input", d, dim=-1):
        W1 = numpyro.sample("W1", dist.Normal(0.0, math.sqrt(sigma_w1)))
    with numpyro.plate("neuron2", width2, dim=-2):
        with numpyro.plate("neuron1", width1, dim=-1):
            W2 = numpyro.sample("W2", dist.Normal(0.0, math.sqrt(sigma_w2)))
        with numpyro.plate("class", m, dim=-1):
            a = numpyro.sample("a", dist.Normal(0.0, math.sqrt(sigma_a2)))
    assert W1.shape[-2:] == (width1, d), f"W1 has shape {W1.shape}"
    assert W2.shape[-2:] == (width2, width1), f"W2 has shape {W2.shape}"
    assert a.shape[-2:] == (width2, m), f"a has shape {a.shape}"

    h1 = W1 @ X.T / math.sqrt(d)
    assert h1.shape[-2:] == (width1, P)
    h2 = W2 @ phi(h1) / math.sqrt(width1)
    assert h2.shape[-2:] == (width2, P)
    f = s * (jnp.swapaxes(phi(h2), -1, -2) @ a)
    assert f.shape[-2:] == (P, m), f"f has shape {f.shape}"

    if "h1" in record:
        numpyro.deterministic("h1", h1)
    if "h2" in record:
        numpyro.deterministic("h2", h2)
    numpyro.deterministic("f", f)
    numpyro.deterministic("q_a", jnp.mean(a**2, axis=-2))
    if Y is not None:
        numpyro.deterministic("mse", jnp.mean((Y - f) ** 2))
    with numpyro.plate("point", P, dim=-2), numpyro.plate("class", m, dim=-1):
        numpyro.sample("y", dist.Normal(f, math.sqrt(v)), obs=Y)

    if X_test is not None:
        ht = W2 @ phi(W1 @ X_test.T / math.sqrt(d)) / math.sqrt(width1)
        numpyro.deterministic("f_test", s * (jnp.swapaxes(phi(ht), -1, -2) @ a))
    return f


# ---------------------------------------------------------------------------------------------------------- zoo
def _validate(X, Y=None, **kw):
    check_three_layer_args(X, Y, **kw)


def _dims(*, record=(), X_test=None, **_):
    return three_layer_dims(record, with_test=X_test is not None)


OBSERVABLES = (
    Observable("alignment", "A_f = <f, y>/<y, y> on the test inputs (predictions group), per draw and of the mean "
               "predictor: diagnostics.alignment.alignment. Learning needs A_f ≈ 1; the sample complexity P* is where "
               "A_f departs from 0",
               "Rubin, Davidovich & Ringel (arXiv 2512.04165, theory.md §8): P* ∝ d, curves collapse versus P/d "
               "(reported, unverified); NNGP baseline: theory.gp with the erf kernel (needs P ∼ d³)"),
    Observable("W1 overlaps", "first-layer overlaps m_j = W1_j · w* and the number of specialists |m_j| > 3 σ₁ "
               "(3 NNGP standard deviations): diagnostics.alignment.first_layer_overlaps",
               "reported: number of specialists ∝ (N1/d)^{1/3} (theory.md §8, unverified); NNGP: m_j ~ N(0, σ₁²), "
               "specialist fraction 0.27 %"),
    Observable("h2 overlaps", "second-layer overlaps of each neuron's preactivation with the target He₃(w*·x) and "
               "with the linear feature w*·x on test inputs: diagnostics.alignment.second_layer_overlaps",
               "reported: specialisation–magnetisation vs GP–specialisation phases as N1 grows (theory.md §8)"),
    Observable("f", "network output on the training inputs (point, class)", "theory.gp (standard readout, N → ∞)"),
    Observable("mse", "training mean squared error", ""),
)

UNITS = (
    UnitLayer("h1", "h1", "neuron1", "first hidden layer: preactivations on the training inputs (record 'h1')"),
    UnitLayer("h2", "h2", "neuron2", "second hidden layer: preactivations on the training inputs (record 'h2')"),
    UnitLayer("a", "a", "neuron2", "readout vectors of the second-layer neurons"),
)


def _forward(X, params, *, activation="erf", readout="standard", **_):
    """f (point, class) of :func:`three_layer` for one draw ``params`` = {"W1", "W2", "a"}."""
    return three_layer_forward(X, params["W1"], params["W2"], params["a"], activation=activation,
                               readout=readout)[2]


def _likelihood_variance(kw):
    return _readout(kw.get("readout", "standard"), kw["width2"], kw["kappa"])[1]


register(ZooEntry(
    name="three_layer_erf",
    model=three_layer,
    defaults=dict(width1=64, width2=64, activation="erf", readout="standard", kappa=0.01, sigma_w1=1.0,
                  sigma_w2=1.0, sigma_a2=1.0),
    task_defaults=dict(d=16, P=64, P_test=1000),
    make_task=hermite_task,
    validate=_validate,
    dims=_dims,
    observables=OBSERVABLES,
    record=_RECORD,
    forward=_forward,
    likelihood_variance=_likelihood_variance,
    description="three-layer erf net (two hidden layers) on the He3 single-index task: sample complexity, "
                "specialist neurons",
    reference="Rubin, Davidovich & Ringel, arXiv 2512.04165; theory.md §8",
    units=UNITS,
    diagnose=lazy(".diagnostics.observables:three_layer_observables"),
))

register(ZooEntry(
    name="three_layer_erf_meanfield",
    model=three_layer,
    defaults=dict(width1=64, width2=64, activation="erf", readout="meanfield", kappa=0.01, sigma_w1=1.0,
                  sigma_w2=1.0, sigma_a2=1.0),
    task_defaults=dict(d=16, P=64, P_test=1000),
    make_task=hermite_task,
    validate=_validate,
    dims=_dims,
    observables=OBSERVABLES,
    record=_RECORD,
    forward=_forward,
    likelihood_variance=_likelihood_variance,
    description="mean-field twin (1/N2 readout, likelihood variance kappa/N2) of three_layer_erf",
    reference="Rubin, Davidovich & Ringel, arXiv 2512.04165; theory.md §8",
    units=UNITS,
    diagnose=lazy(".diagnostics.observables:three_layer_observables"),
))
