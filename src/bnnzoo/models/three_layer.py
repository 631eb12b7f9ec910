"""Three-layer (two hidden layers) Bayesian erf network for the He₃ single-index task (docs/theory.md §8).

Parametrisation (rows convention, X is (P, d))::

    h¹ = W¹ Xᵀ / √d              (N1, P)    W¹ ~ N(0, σ₁²)  (N1, d)
    h² = W² φ(h¹) / √N1           (N2, P)    W² ~ N(0, σ₂²)  (N2, N1)
    f  = s · φ(h²)ᵀ a             (P, m)     a  ~ N(0, σ_a²) (N2, m)
    y | f ~ N(f, v)  entrywise

with φ = erf (default; any activation of :mod:`bnnzoo.models.activations` is accepted) and::

    readout="standard":  s = 1/√N2,  v = κ        (lazy / NTK-style; the N2 → ∞ limit is the NNGP)
    readout="meanfield": s = 1/N2,   v = κ / N2   (rich / mean-field; the rescaled temperature T → T/N of
                                                   docs/theory.md §1, so feature learning survives N2 → ∞)

Why this choice: the 1/√fan-in factors keep every preactivation O(1) under the prior at any width, so the prior is
the NNGP of docs/theory.md §6 and the weight decay of Rubin et al. is simply the Gaussian prior (σ² = 1/weight decay);
the ridge / temperature κ is the variance of the Gaussian likelihood (Langevin dynamics on ½Σ(f−y)²/κ + weight decay
equilibrates to exactly this posterior).  The two readouts coincide with the FCN core's "lazy" / "nonlazy"
conventions (:mod:`bnnzoo.models.fcn`).  The exact equations of arXiv 2512.04165 were not available to us
(docs/theory.md §8 is tagged unverified): this is our documented choice.

Sites (dims as :func:`three_layer_dims` names them; W2's columns sit in the plate "neuron1_in", so that every plate
has one size and dim, as automatic guides need)::

    W1 (neuron1, input), W2 (neuron2, neuron1), a (neuron2, class), f (point, class), y (point, class, observed),
    mse (), q_a (class,), h1 (neuron1, point) / h2 (neuron2, point) only when recorded,
    f_test (test_point, class) only when ``X_test`` is given.

Observables (alignment A_f on test inputs, first-layer overlaps with w* and specialists, second-layer overlaps) are
computed from these sites by :mod:`bnnzoo.diagnostics.alignment`.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ..tasks.hermite import hermite_task
from ._checks import (check_bool, check_data, check_int, check_positive, check_record, check_targets_and_test,
                      sqrt)
from .activations import NP_ACTIVATIONS, get_activation, np_activation
from .zoo import Observable, PopulationSpec, UnitLayer, ZooEntry, register

__all__ = ["three_layer", "three_layer_dims", "check_three_layer_args", "three_layer_forward",
           "three_layer_prior_variances", "THREE_LAYER_READOUTS", "get_three_layer_activation"]

THREE_LAYER_READOUTS = ("standard", "meanfield")
_RECORD = ("h1", "h2")


def get_three_layer_activation(name: str):
    """φ by name: "erf" (erf(z), the default) or any entry of :data:`bnnzoo.models.activations.ACTIVATIONS`."""
    return get_activation(name, extra=True)


def _readout(readout: str, width2: int, kappa):
    """(readout prefactor s, likelihood variance v); ``kappa`` may be traced."""
    if readout == "standard":
        return 1.0 / math.sqrt(width2), kappa
    return 1.0 / width2, kappa / width2


def check_three_layer_args(X, Y=None, *, width1=64, width2=64, activation="erf", readout="standard", kappa=0.01,
                           sigma_w1=1.0, sigma_w2=1.0, sigma_a2=1.0, num_outputs=None, X_test=None, record=(),
                           likelihood=True):
    """Validate the arguments of :func:`three_layer` before anything compiles.

    :func:`bnnzoo.sample` and :func:`three_layer` itself call it (same messages); traced hyperparameters are not
    inspected.

    Raises
    ------
    ValueError
        One line naming the argument and its valid values (shapes, NaN/inf, booleans or strings where numbers are
        expected, sizes, names, Y=None without ``num_outputs``).
    """
    X = check_data("X", X, "(P, d)")
    check_targets_and_test(X, Y, num_outputs, X_test)
    check_int("width1", width1, 1)
    check_int("width2", width2, 1)
    if not isinstance(activation, str):
        raise ValueError(f"activation must be one of {sorted(NP_ACTIVATIONS)}, got {activation!r}")
    get_three_layer_activation(activation)
    if not isinstance(readout, str) or readout not in THREE_LAYER_READOUTS:
        raise ValueError(f"readout must be one of {THREE_LAYER_READOUTS}, got {readout!r}")
    for name, v in (("kappa", kappa), ("sigma_w1", sigma_w1), ("sigma_w2", sigma_w2), ("sigma_a2", sigma_a2)):
        check_positive(name, v)
    check_bool("likelihood", likelihood)
    check_record(record, "'h1' and/or 'h2'", lambda r: r in _RECORD)


def three_layer_dims(record: Sequence[str] | str = (), with_test: bool = False) -> dict[str, list[str]]:
    """Dims of every site of :func:`three_layer`."""
    record = (record,) if isinstance(record, str) else tuple(record)
    dims = {"W1": ["neuron1", "input"], "W2": ["neuron2", "neuron1"], "a": ["neuron2", "class"],
            "f": ["point", "class"], "y": ["point", "class"], "mse": [], "q_a": ["class"]}
    if "h1" in record:
        dims["h1"] = ["neuron1", "point"]
    if "h2" in record:
        dims["h2"] = ["neuron2", "point"]
    if with_test:
        dims["f_test"] = ["test_point", "class"]
    return dims


def three_layer_prior_variances(X=None, *, sigma_w1=1.0, sigma_w2=1.0, sigma_a2=1.0, **_model_kwargs):
    """Prior variance of every weight site of :func:`three_layer`: {"W1": σ₁², "W2": σ₂², "a": σ_a²} (``X`` and the
    other model keywords are accepted and not needed)."""
    return {"W1": float(sigma_w1), "W2": float(sigma_w2), "a": float(sigma_a2)}


def _layers(X, W1, W2, a, phi, readout, xp):
    d = X.shape[1]
    N1, N2 = W1.shape[-2], W2.shape[-2]
    s, _ = _readout(readout, N2, 1.0)
    h1 = W1 @ X.T / math.sqrt(d)
    h2 = W2 @ phi(h1) / math.sqrt(N1)
    f = s * (xp.swapaxes(phi(h2), -1, -2) @ a)
    return h1, h2, f


def three_layer_forward(X, params, W2=None, a=None, *, activation="erf", readout="standard", xp=jnp,
                        **_model_kwargs):
    """The output f of :func:`three_layer` without prior or likelihood, for given weights.

    Parameters
    ----------
    X : (n, d) inputs.
    params : {"W1": (..., N1, d), "W2": (..., N2, N1), "a": (..., N2, m)} (leading batch axes allowed).
        Also accepted, for post-hoc analysis: the arrays ``W1, W2, a`` as the 2nd-4th positional arguments; the
        call then returns ``(h1, h2, f)`` with the hidden preactivations h1 (N1, n) and h2 (N2, n).
    activation, readout : as in :func:`three_layer`.
    xp : jax.numpy (default) or numpy (float64 post-hoc analysis of draws).
    **_model_kwargs : the model's other keywords (kappa, sigma_*, ...) are accepted and ignored.

    Returns
    -------
    f : (..., n, m) array (or ``(h1, h2, f)`` in the positional form).

    Raises
    ------
    ValueError
        Missing weights or shapes that do not fit together; unknown activation / readout.
    """
    if not isinstance(readout, str) or readout not in THREE_LAYER_READOUTS:
        raise ValueError(f"readout must be one of {THREE_LAYER_READOUTS}, got {readout!r}")
    phi = get_three_layer_activation(activation) if xp is jnp else np_activation(activation)
    if not isinstance(params, Mapping):
        return _layers(X, params, W2, a, phi, readout, xp)
    missing = [k for k in ("W1", "W2", "a") if k not in params]
    if missing:
        raise ValueError(f"params must hold the weights 'W1', 'W2' and 'a'; missing {missing}")
    W1, W2, a = params["W1"], params["W2"], params["a"]
    X = check_data("X", X, "(n, d)")
    if W1.shape[-1] != X.shape[1] or W2.shape[-1] != W1.shape[-2] or a.shape[-2] != W2.shape[-2]:
        raise ValueError(f"weights do not fit X (n, {X.shape[1]}): W1 {W1.shape}, W2 {W2.shape}, a {a.shape}; "
                         f"expected (N1, d), (N2, N1), (N2, m)")
    return _layers(X, W1, W2, a, phi, readout, xp)[2]


def three_layer(X, Y=None, *, width1: int = 64, width2: int = 64, activation: str = "erf",
                readout: str = "standard", kappa: float = 0.01, sigma_w1: float = 1.0, sigma_w2: float = 1.0,
                sigma_a2: float = 1.0, num_outputs: int | None = None, X_test=None, record: Sequence[str] = (),
                likelihood: bool = True):
    """Three-layer Bayesian network f(x) = s · aᵀ φ(W² φ(W¹ x/√d)/√N1) (module docstring for the full form).

    A plain NumPyro model (MCMC, SVI with AutoNormal / AutoDelta, ``Predictive``, effect handlers).  The
    hyperparameters kappa, sigma_w1, sigma_w2, sigma_a2 may be traced values (a prior on them in an enclosing
    model).  To use the net inside another model call it within ``numpyro.handlers.scope(prefix=...)`` with
    ``likelihood=False``, or evaluate given weights with :func:`three_layer_forward`.

    GPU precision: JAX rounds float32 matrix products on GPUs to TensorFloat32 by default; :func:`bnnzoo.sample`
    samples under ``jax.default_matmul_precision("highest")``.  Calling this model yourself on a GPU, wrap the run
    in ``with jax.default_matmul_precision("highest"):`` to keep the potential energy exact.

    Parameters
    ----------
    X : (P, d) inputs.
    Y : (P, m) targets or None (prior; give ``num_outputs``).
    width1, width2 : N1, N2 hidden widths (integers >= 1).
    activation : "erf" (default) or a name from :data:`bnnzoo.models.activations.ACTIVATIONS`.
    readout : "standard" (1/√N2, likelihood variance κ) or "meanfield" (1/N2, variance κ/N2).
    kappa : κ > 0, the ridge / temperature (likelihood variance before the readout rescaling).
    sigma_w1, sigma_w2, sigma_a2 : prior variances σ₁², σ₂², σ_a² > 0 (inverse weight decays).
    num_outputs : m; required when Y is None.
    X_test : optional (P_test, d) inputs; f on them is recorded as ``f_test`` (no latent site is added).
    record : "h1" and/or "h2" to record the hidden preactivations on the training inputs.
    likelihood : False leaves out the observation site ``y`` (and ``mse``).

    Returns
    -------
    f : (P, m) network output on X.

    Raises
    ------
    ValueError
        Bad arguments (:func:`check_three_layer_args`), before anything is traced.
    """
    check_three_layer_args(X, Y, width1=width1, width2=width2, activation=activation, readout=readout, kappa=kappa,
                           sigma_w1=sigma_w1, sigma_w2=sigma_w2, sigma_a2=sigma_a2, num_outputs=num_outputs,
                           X_test=X_test, record=record, likelihood=likelihood)
    record = (record,) if isinstance(record, str) else tuple(record)
    X = X if hasattr(X, "shape") else np.asarray(X)
    Y = Y if Y is None or hasattr(Y, "shape") else np.asarray(Y)
    X_test = X_test if X_test is None or hasattr(X_test, "shape") else np.asarray(X_test)
    P, d = X.shape
    m = Y.shape[1] if Y is not None else int(num_outputs)
    phi = get_three_layer_activation(activation)
    s, v = _readout(readout, width2, kappa)

    # Plate names are unique (W2's columns use "neuron1_in"), so automatic guides see one size and dim per plate;
    # the dims users see come from three_layer_dims: W2 (neuron2, neuron1).
    with numpyro.plate("neuron1", width1, dim=-2), numpyro.plate("input", d, dim=-1):
        W1 = numpyro.sample("W1", dist.Normal(0.0, sqrt(sigma_w1)))
    with numpyro.plate("neuron2", width2, dim=-2):
        with numpyro.plate("neuron1_in", width1, dim=-1):
            W2 = numpyro.sample("W2", dist.Normal(0.0, sqrt(sigma_w2)))
        with numpyro.plate("class", m, dim=-1):
            a = numpyro.sample("a", dist.Normal(0.0, sqrt(sigma_a2)))
    assert W1.shape[-2:] == (width1, d), f"W1 has shape {W1.shape}"
    assert W2.shape[-2:] == (width2, width1), f"W2 has shape {W2.shape}"
    assert a.shape[-2:] == (width2, m), f"a has shape {a.shape}"

    h1, h2, f = _layers(X, W1, W2, a, phi, readout, jnp)
    assert h1.shape[-2:] == (width1, P) and h2.shape[-2:] == (width2, P)
    assert f.shape[-2:] == (P, m), f"f has shape {f.shape}"

    if "h1" in record:
        numpyro.deterministic("h1", h1)
    if "h2" in record:
        numpyro.deterministic("h2", h2)
    numpyro.deterministic("f", f)
    numpyro.deterministic("q_a", jnp.mean(a**2, axis=-2))
    if likelihood:
        if Y is not None:
            numpyro.deterministic("mse", jnp.mean((Y - f) ** 2))
        with numpyro.plate("point", P, dim=-2), numpyro.plate("class", m, dim=-1):
            numpyro.sample("y", dist.Normal(f, sqrt(v)), obs=Y)

    if X_test is not None:
        numpyro.deterministic("f_test", _layers(X_test, W1, W2, a, phi, readout, jnp)[2])
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
               "Rubin, Davidovich & Ringel (arXiv 2512.04165, docs/theory.md §8): P* ∝ d, curves collapse versus P/d "
               "(reported, unverified); NNGP baseline: theory.gp with the erf kernel (needs P ∼ d³)"),
    Observable("W1 overlaps", "first-layer overlaps m_j = W1_j · w* and the number of specialists |m_j| > 3 σ₁ "
               "(3 NNGP standard deviations): diagnostics.alignment.first_layer_overlaps",
               "reported: number of specialists ∝ (N1/d)^{1/3} (docs/theory.md §8, unverified); NNGP: m_j ~ N(0, σ₁²), "
               "specialist fraction 0.27 %"),
    Observable("h2 overlaps", "second-layer overlaps of each neuron's preactivation with the target He₃(w*·x) and "
               "with the linear feature w*·x on test inputs: diagnostics.alignment.second_layer_overlaps",
               "reported: specialisation–magnetisation vs GP–specialisation phases as N1 grows (docs/theory.md §8)"),
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


_POPULATIONS = PopulationSpec(("specialist_fraction", "second_layer_q3", "alignment", "mse"), ("prior", "annealed"),
                              "kappa", "no meanfield start: bnnzoo.theory has no mean field of the three-layer net")

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
    prior_variances=three_layer_prior_variances,
    description="three-layer erf net (two hidden layers) on the He3 single-index task: sample complexity, "
                "specialist neurons",
    reference="Rubin, Davidovich & Ringel, arXiv 2512.04165; docs/theory.md §8",
    units=UNITS,
    analysis="three_layer",
    populations=_POPULATIONS,
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
    prior_variances=three_layer_prior_variances,
    description="mean-field twin (1/N2 readout, likelihood variance kappa/N2) of three_layer_erf",
    reference="Rubin, Davidovich & Ringel, arXiv 2512.04165; docs/theory.md §8",
    units=UNITS,
    analysis="three_layer",
    populations=_POPULATIONS,
))
