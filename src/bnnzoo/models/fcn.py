"""Fully-connected Bayesian networks (docs/theory.md §1), as one plain NumPyro model function.

    z¹ = W¹ xᵀ / √N0,   zˡ = Wˡ φ(zˡ⁻¹) / √N  (l = 2..L),   f_r(x) = s_N Σ_i a_ir φ(z_i^L(x))

with readout prefactor s_N = 1/N (``readout="nonlazy"``, mean-field / rich) or 1/√N (``readout="lazy"``, NTK/GP).
Prior: hidden weights i.i.d. N(0, σ_w²), readout i.i.d. N(0, σ_a²).  Likelihood: Gaussian with variance T/N per
output entry (non-lazy: the paper's rescaled temperature T → T/N) or T (lazy).  Default σ_a² is the paper's rule
(non-lazy: 1/P for the sigmoid at any depth, P^{-1/L} otherwise; lazy: 1).

Sites (names users and diagnostics rely on; every axis is named by a plate):
    W1 (neuron, input), W2..WL (neuron, neuron_in), a (neuron, class), f (point, class), y (point, class, observed),
    mse () and q_a (class,) scalar order parameters, z1..zL (neuron, point) only when recorded,
    f_test (test_point, class) only when ``X_test`` is given.

``fcn.observables`` / zoo entries (:mod:`bnnzoo.models.zoo`) say which theory predicts which site.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ._checks import (check_bool, check_data, check_int, check_positive, check_record, check_targets_and_test,
                      sqrt)
from .activations import ACTIVATIONS, get_activation
from .summaries import KERNEL_SITES, SUMMARY_SITES, layer_summaries

__all__ = ["fcn", "fcn_forward", "fcn_prior_variances", "default_sigma_a2", "likelihood_variance", "readout_scale",
           "fcn_dims", "check_fcn_args", "recorded_layers"]

READOUTS = ("nonlazy", "lazy")


def default_sigma_a2(activation: str, readout: str, P: int, depth: int) -> float:
    """The paper's readout prior variance (docs/theory.md §1): σ_a² = 1/P for the sigmoid (any depth), P^{-1/L} for
    linear, ReLU and the other unbounded activations (softplus, ReLU², our choice: they grow like ReLU), 1 for a lazy
    readout."""
    if readout == "lazy":
        return 1.0
    if activation == "sigmoid":
        return 1.0 / P
    return float(P) ** (-1.0 / depth)


def readout_scale(readout: str, width: int) -> float:
    """Readout prefactor: 1/N (non-lazy) or 1/√N (lazy)."""
    return 1.0 / width if readout == "nonlazy" else 1.0 / math.sqrt(width)


def likelihood_variance(readout: str, width: int, temperature: float) -> float:
    """Variance of the Gaussian likelihood per output entry: T/N (non-lazy) or T (lazy)."""
    return temperature / width if readout == "nonlazy" else temperature


RECORD_HELP = "'summaries', 'kernels', 'z' (all layers) or 'z1'..'z{depth}'"
"""What ``record`` of :func:`fcn` takes (``{depth}`` filled in)."""


def recorded_layers(record: Sequence[str] | str, depth: int) -> list[int]:
    """Layers whose preactivations are recorded: "z" means all, "z1".."zL" single layers (a string is one name);
    "summaries" and "kernels" record no preactivations."""
    layers = set()
    for r in ((record,) if isinstance(record, str) else record):
        if r in ("summaries", "kernels"):
            continue
        if r == "z":
            layers.update(range(1, depth + 1))
        elif isinstance(r, str) and r.startswith("z") and r[1:].isdigit() and 1 <= int(r[1:]) <= depth:
            layers.add(int(r[1:]))
        else:
            raise ValueError(f"record: unknown entry {r!r}; use " + RECORD_HELP.format(depth=depth))
    return sorted(layers)


def _records(record, name: str) -> bool:
    return name in ((record,) if isinstance(record, str) else tuple(record))


def record_summaries(record, zs, phi, f, Y, width: int) -> None:
    """The deterministic sites ``record`` asks for of "summaries" and "kernels" (:mod:`bnnzoo.models.summaries`)
    of every layer, given its preactivations ``zs`` on the training points; nothing without targets ``Y``."""
    summaries, kernels = _records(record, "summaries"), _records(record, "kernels")
    if not (summaries or kernels) or Y is None:
        return
    for l, z in enumerate(zs, start=1):
        for k, v in layer_summaries(z, phi(z), f, Y, l, width, kernels=kernels).items():
            if summaries or k[:1] == "K":
                numpyro.deterministic(k, v)


def check_fcn_args(X, Y=None, *, width=None, depth=1, activation="linear", readout="nonlazy", temperature=0.01,
                   sigma_a2=None, sigma_w2=1.0, num_outputs=None, X_test=None, record=(), likelihood=True):
    """Validate the arguments of :func:`fcn` before anything is compiled.

    :func:`bnnzoo.sample` and :func:`fcn` itself call it, so both give the same messages.  Hyperparameters that are
    traced JAX values (a prior on them) are not inspected.

    Parameters
    ----------
    X, Y, width, ... : as in :func:`fcn`.

    Raises
    ------
    ValueError
        One line naming the argument and its valid values: wrong shapes, NaN/inf, booleans or strings where numbers
        are expected, non-integer or non-positive sizes, unknown activation / readout / record names, Y=None
        without ``num_outputs``.
    """
    X = check_data("X", X, "(P, N0)")
    check_targets_and_test(X, Y, num_outputs, X_test)
    if width is None:
        raise ValueError("width is required: the width N of every hidden layer, an integer >= 1")
    check_int("width", width, 1)
    check_int("depth", depth, 1)
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
    if not isinstance(readout, str) or readout not in READOUTS:
        raise ValueError(f"readout must be 'nonlazy' (1/N) or 'lazy' (1/sqrt(N)), got {readout!r}")
    check_positive("temperature", temperature)
    if sigma_a2 is not None:
        check_positive("sigma_a2", sigma_a2)
    check_positive("sigma_w2", sigma_w2)
    check_bool("likelihood", likelihood)
    recorded_layers(check_record(record, RECORD_HELP.format(depth=depth), lambda r: True), depth)


def fcn_dims(depth: int, record: Sequence[str] | str = (), with_test: bool = False) -> dict[str, list[str]]:
    """Dims of every site of :func:`fcn` (for the ArviZ conversion)."""
    dims = {"W1": ["neuron", "input"], "a": ["neuron", "class"], "f": ["point", "class"],
            "y": ["point", "class"], "mse": [], "q_a": ["class"]}
    for l in range(2, depth + 1):
        dims[f"W{l}"] = ["neuron", "neuron_in"]
    for l in recorded_layers(record, depth):
        dims[f"z{l}"] = ["neuron", "point"]
    for l in range(1, depth + 1):
        if _records(record, "summaries"):
            dims.update({f"{p}{l}": list(d) for p, d in SUMMARY_SITES.items()})
        if _records(record, "kernels"):
            dims.update({f"{p}{l}": list(d) for p, d in KERNEL_SITES.items()})
    if with_test:
        dims["f_test"] = ["test_point", "class"]
    return dims


def fcn_prior_variances(X=None, *, depth=1, activation="linear", readout="nonlazy", sigma_a2=None, sigma_w2=1.0,
                        **_model_kwargs) -> dict[str, float]:
    """Prior variance of every weight site of :func:`fcn`: σ_w² for W1..WL, σ_a² for a.

    Parameters
    ----------
    X : (P, N0) training inputs; needed only when ``sigma_a2`` is None (the paper's rule depends on P).
    depth, activation, readout, sigma_a2, sigma_w2 : the model's keyword arguments (others are ignored).

    Returns
    -------
    dict
        {"W1": σ_w², ..., "WL": σ_w², "a": σ_a²}.

    Raises
    ------
    ValueError
        ``sigma_a2`` is None and no ``X`` is given.
    """
    if sigma_a2 is None:
        if X is None:
            raise ValueError("sigma_a2=None follows the paper's rule, which needs P: pass X (the training inputs) "
                             "or a resolved sigma_a2")
        sigma_a2 = default_sigma_a2(activation, readout, len(X), depth)
    out = {f"W{l}": float(sigma_w2) for l in range(1, depth + 1)}
    out["a"] = float(sigma_a2)
    return out


def _forward(X, Ws, a, phi, N0, width, scale):
    """Preactivations of every layer (list of (..., N, n_points)) and the output (..., n_points, m)."""
    zs = [Ws[0] @ X.T / math.sqrt(N0)]
    for W in Ws[1:]:
        zs.append(W @ phi(zs[-1]) / math.sqrt(width))
    f = scale * (jnp.swapaxes(phi(zs[-1]), -1, -2) @ a)
    return zs, f


def fcn_forward(X, params, *, width=None, depth=None, activation="linear", readout="nonlazy", **_model_kwargs):
    """The network output f of :func:`fcn` without prior or likelihood, for given weights.

    Use it to put a fully-connected net inside another model (or use :func:`fcn` with ``likelihood=False``, which
    also draws the weights), or to evaluate posterior draws on new inputs.

    Parameters
    ----------
    X : (n, N0) inputs.
    params : {"W1": (..., N, N0), "W2".."WL": (..., N, N), "a": (..., N, m)}; leading batch axes (chain, draw)
        are allowed and shared by all weights.
    width, depth : optional; checked against the shapes of ``params`` when given.
    activation, readout : as in :func:`fcn`.
    **_model_kwargs : the model's other keywords (temperature, sigma_a2, ...) are accepted and ignored.

    Returns
    -------
    f : (..., n, m) array.

    Raises
    ------
    ValueError
        Missing weights, shapes that do not fit together, unknown activation / readout.
    """
    if not isinstance(params, Mapping) or "W1" not in params or "a" not in params:
        raise ValueError("params must be a mapping with the weights 'W1'..'WL' and 'a'")
    L = 1
    while f"W{L + 1}" in params:
        L += 1
    if depth is not None and depth != L:
        raise ValueError(f"depth={depth!r} but params hold weights W1..W{L}")
    Ws = [params[f"W{l}"] for l in range(1, L + 1)]
    a = params["a"]
    N = a.shape[-2]
    if width is not None and width != N:
        raise ValueError(f"width={width!r} but the readout a has {N} rows")
    X = check_data("X", X, "(n, N0)")
    if Ws[0].shape[-2:] != (N, X.shape[1]):
        raise ValueError(f"W1 must have shape (..., {N}, {X.shape[1]}) for X with {X.shape[1]} columns, "
                         f"got {Ws[0].shape}")
    if not isinstance(readout, str) or readout not in READOUTS:
        raise ValueError(f"readout must be 'nonlazy' (1/N) or 'lazy' (1/sqrt(N)), got {readout!r}")
    phi = get_activation(activation)
    return _forward(X, Ws, a, phi, X.shape[1], N, readout_scale(readout, N))[1]


def fcn(X, Y=None, *, width: int, depth: int = 1, activation: str = "linear", readout: str = "nonlazy",
        temperature: float = 0.01, sigma_a2: float | None = None, sigma_w2: float = 1.0,
        num_outputs: int | None = None, X_test=None, record: Sequence[str] = (), likelihood: bool = True):
    """Fully-connected Bayesian network with a Gaussian prior and tempered Gaussian (MSE) likelihood.

    A plain NumPyro model: it runs under MCMC, SVI with automatic guides (AutoNormal, AutoDelta), ``Predictive``
    and effect handlers.  Hyperparameters (temperature, sigma_a2, sigma_w2) may be traced values, e.g. a
    ``numpyro.sample`` site of an enclosing model (a prior on the temperature).  Two nets in one model: call each
    inside ``numpyro.handlers.scope(prefix=...)`` (sites and plates get the prefix) and give ``likelihood=False``
    to those whose output f you combine yourself.

    GPU precision: on GPUs JAX rounds float32 matrix products to TensorFloat32 by default, which perturbs the
    potential energy at the paper's sizes; :func:`bnnzoo.sample` samples under
    ``jax.default_matmul_precision("highest")``. When you run this model yourself on a GPU, wrap the run in
    ``with jax.default_matmul_precision("highest"):``.  No effect on CPU.

    Parameters
    ----------
    X : (P, N0) training inputs.
    Y : (P, m) targets, or None for the prior / prior predictive (then give ``num_outputs``).
    width : N, the width of every hidden layer (integer >= 1).
    depth : L, the number of hidden layers (integer >= 1).
    activation : "linear", "sigmoid" (the paper's erf sigmoid), "relu", "softplus" or "relu2".
    readout : "nonlazy" (1/N prefactor, likelihood variance T/N) or "lazy" (1/√N, variance T).
    temperature : T > 0 (rescaled temperature in the non-lazy regime); may be traced.
    sigma_a2 : readout prior variance > 0; None = the paper's rule :func:`default_sigma_a2` with P = len(X).
    sigma_w2 : hidden-weight prior variance > 0.
    num_outputs : m; required when Y is None, else it must equal Y's columns.
    X_test : optional (P_test, N0) inputs; the network output there is recorded as the deterministic ``f_test``
        (no latent site is added, so passing X_test to MCMC does not change the posterior).
    record : extra deterministic sites: "z" (the preactivations of all layers, (neuron, point) each) or
        "z1".."zL" (one layer); "summaries" (per layer: the units' class means ``zbar``/``hbar`` (neuron, class),
        their mean square ``zsq`` (neuron,), and the projections of the centred kernel from which the diagnostics get
        each draw's D_LR, NC1 and CKA with YYᵀ; needs ``Y``);
        "kernels" (per layer: ``K`` = φ(z)ᵀφ(z)/N and ``Kz`` = zᵀz/N (point, point_b); needs ``Y``).  See
        :mod:`bnnzoo.models.summaries`.
    likelihood : False leaves out the observation site ``y`` (and ``mse``): the model is then the prior of the
        weights and the deterministic f, to be used inside another model.

    Returns
    -------
    f : (P, m) network output on X.

    Raises
    ------
    ValueError
        Bad arguments (:func:`check_fcn_args`), before anything is traced.
    """
    check_fcn_args(X, Y, width=width, depth=depth, activation=activation, readout=readout, temperature=temperature,
                   sigma_a2=sigma_a2, sigma_w2=sigma_w2, num_outputs=num_outputs, X_test=X_test, record=record,
                   likelihood=likelihood)
    if not hasattr(X, "shape"):
        X = np.asarray(X)
    if Y is not None and not hasattr(Y, "shape"):
        Y = np.asarray(Y)
    if X_test is not None and not hasattr(X_test, "shape"):
        X_test = np.asarray(X_test)
    P, N0 = X.shape
    m = Y.shape[1] if Y is not None else int(num_outputs)
    phi = get_activation(activation)
    s2a = default_sigma_a2(activation, readout, P, depth) if sigma_a2 is None else sigma_a2
    scale = readout_scale(readout, width)
    noise_sd = sqrt(likelihood_variance(readout, width, temperature))
    sw = sqrt(sigma_w2)

    neuron = numpyro.plate("neuron", width, dim=-2)
    Ws = []
    with neuron:
        with numpyro.plate("input", N0, dim=-1):
            Ws.append(numpyro.sample("W1", dist.Normal(0.0, sw)))
        for l in range(2, depth + 1):
            with numpyro.plate("neuron_in", width, dim=-1):
                Ws.append(numpyro.sample(f"W{l}", dist.Normal(0.0, sw)))
        with numpyro.plate("class", m, dim=-1):
            a = numpyro.sample("a", dist.Normal(0.0, sqrt(s2a)))
    assert a.shape[-2:] == (width, m), f"a has shape {a.shape}"

    zs, f = _forward(X, Ws, a, phi, N0, width, scale)
    assert f.shape[-2:] == (P, m), f"f has shape {f.shape}"
    for l in recorded_layers(record, depth):
        numpyro.deterministic(f"z{l}", zs[l - 1])
    numpyro.deterministic("f", f)
    numpyro.deterministic("q_a", jnp.mean(a**2, axis=-2))
    record_summaries(record, zs, phi, f, Y, width)
    if likelihood:
        if Y is not None:
            numpyro.deterministic("mse", jnp.mean((Y - f) ** 2))
        with numpyro.plate("point", P, dim=-2), numpyro.plate("class", m, dim=-1):
            numpyro.sample("y", dist.Normal(f, noise_sd), obs=Y)

    if X_test is not None:
        _, f_test = _forward(X_test, Ws, a, phi, N0, width, scale)
        numpyro.deterministic("f_test", f_test)
    return f


# ------------------------------------------------------------------------------------------------ the zoo entries
# deep_linear, sigmoidal, relu and their lazy twins (registered on import)
from ..tasks import toy_task  # noqa: E402
from .zoo import Observable, PopulationSpec, UnitLayer, ZooEntry, register  # noqa: E402


def _fcn_validate(X, Y=None, **kw):
    check_fcn_args(X, Y, **kw)


def _fcn_resolve(X, kw):
    kw = dict(kw)
    check_fcn_args(X, None, **dict(kw, num_outputs=1))     # depth, width, ... first: the rule below divides by depth
    if kw.get("sigma_a2") is None:
        kw["sigma_a2"] = default_sigma_a2(kw.get("activation", "linear"), kw.get("readout", "nonlazy"),
                                               len(X), kw.get("depth", 1))
    return kw


def _fcn_dims(*, depth=1, record=(), X_test=None, **_):
    return fcn_dims(depth, record, with_test=X_test is not None)


def _fcn_weights(kw: dict) -> tuple:
    return tuple(f"W{l}" for l in range(1, int(kw.get("depth", 1)) + 1))


def _fcn_likelihood_variance(kw: dict) -> float:
    return likelihood_variance(kw.get("readout", "nonlazy"), kw["width"], kw["temperature"])


_FCN_COMMON = (
    Observable("f", "network output on the training inputs (point, class)",
               "theory.linear (linear nets), theory.gp (lazy readout), theory.meanfield (one hidden layer)"),
    Observable("q_a", "readout second moment aᵀa/N per class (permutation invariant)",
               "theory.linear: diag U (linear); theory.meanfield: E[a²] of the single-neuron marginal"),
    Observable("mse", "training mean squared error; its equilibrium level shows the net fits the task", ""),
    Observable("a", "readout weights (neuron, class): their marginal and branches",
               "theory.meanfield.readout_marginal (one hidden layer, orthogonal toy task)"),
    Observable("z1..zL", "preactivations on the training inputs (neuron, point), recorded with record=('z',); "
               "their per-neuron class means are the neural codes; zᵀz/N is the learned kernel",
               "theory.linear kernels K_l (linear); theory.meanfield codes (one hidden layer)"),
    Observable("zbar1..zbarL", "per-neuron class means of the preactivations (neuron, class), recorded by default "
               "(record 'summaries', with hbar, zsq and the kernel projections kc_*): the neural codes without z",
               "theory.meanfield codes (one hidden layer)"),
    Observable("K1..KL", "feature kernels φ(z)ᵀφ(z)/N (point, point_b), recorded by default as means over blocks of "
               "draws (group posterior_thinned; Kz1..KzL the same for zᵀz/N)",
               "theory.linear kernels K_l (linear); theory.gp (lazy readout)"),
)

_FCN_UNITS = (
    UnitLayer("a", "a", "neuron", "readout vectors of the last hidden layer's neurons (features: classes)"),
    UnitLayer("z1", "z1", "neuron", "neurons of hidden layer 1 (features: class means of their preactivations); "
              "deeper nets add z2..zL the same way"),
)

_MEANFIELD_NOTE = ("meanfield: the single-neuron mean field (bnnzoo.theory.meanfield) covers the one-hidden-layer net "
                   "with the non-lazy readout on orthogonal inputs")


def _fcn_populations(act: str, lazy_readout: bool) -> PopulationSpec:
    """Linear nets: analog codes (the class block of the kernel) and no outliers; the others: binary codes and
    outliers.  The mean-field start needs the non-lazy readout and a bounded or linear φ: ReLU's single-neuron
    density is not normalisable (its outliers lie outside the mean field)."""
    codes = ("class_kernel",) if act == "linear" else ("code_fraction", "outliers")
    meanfield = not lazy_readout and act in ("linear", "sigmoid")
    why = ("" if meanfield else
           "no meanfield start: " + ("the lazy readout has no single-neuron mean field in bnnzoo.theory"
                                     if lazy_readout else "the ReLU single-neuron density is not normalisable "
                                     "(its outliers lie outside the mean field)"))
    return PopulationSpec(observables=codes + ("branch_mass", "mse"),
                          families=("prior", "annealed") + (("meanfield",) if meanfield else ()),
                          temperature="temperature", note=why or _MEANFIELD_NOTE)


_ENTRIES = [
    ("deep_linear", "linear", "nonlazy", dict(y_pos=1.0, y_neg=0.0),
     "deep linear net, mean-field readout: analog code, Gaussian readout posterior, ergodic (paper Figs. 2-4)"),
    ("sigmoidal", "sigmoid", "nonlazy", dict(y_pos=1.0, y_neg=0.5),
     "erf-sigmoid net, mean-field readout: redundant code, readout branches, broken ergodicity"),
    ("relu", "relu", "nonlazy", dict(y_pos=1.0, y_neg=-0.5),
     "ReLU net, mean-field readout: sparse code with O(sqrt N) outlier neurons"),
]

for _name, _act, _ro, _task_kw, _desc in _ENTRIES:
    for _lazy in (False, True):
        register(ZooEntry(
            name=_name + ("_lazy" if _lazy else ""),
            model=fcn,
            defaults=dict(width=100, depth=1, activation=_act, readout="lazy" if _lazy else "nonlazy",
                          temperature=0.01),
            task_defaults=dict(P=100, **_task_kw),
            make_task=toy_task,
            validate=_fcn_validate,
            dims=_fcn_dims,
            resolve=_fcn_resolve,
            units=_FCN_UNITS,
            analysis="fcn",
            record=("summaries",),
            streamed_kernels=True,
            unread_sites=_fcn_weights,
            forward=fcn_forward,
            likelihood_variance=_fcn_likelihood_variance,
            prior_variances=fcn_prior_variances,
            observables=_FCN_COMMON,
            description=(f"lazy twin of {_name}: 1/sqrt(N) readout, likelihood variance T, sigma_a^2 = 1 "
                         "(GP limit)" if _lazy else _desc),
            reference="van Meegen & Sompolinsky, Nat. Commun. 16, 3354 (2025); docs/theory.md §1-3"
                      + ("; Li & Sompolinsky 2021 (lazy regime)" if _lazy else ""),
            samplers=("nuts", "hmc", "chees", "snaper", "smc", "units") + (("gibbs",) if _act == "linear" else ()),
            reparams=("readout", "data_space"),
            populations=_fcn_populations(_act, _lazy),
        ))
