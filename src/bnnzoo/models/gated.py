"""Bayesian gated deep linear network (GDLN) built from a graph spec (docs/theory.md §9; Saxe, Sodhani & Lewallen 2022).

Given a :class:`~bnnzoo.tasks.gated_tasks.GatedSpec` (nodes with sizes, named edges) and per-example gates (packed into
the rows of ``X``, see :mod:`bnnzoo.tasks.gated_tasks`)::

    h_v = g_v x_v                                          (input nodes)
    h_v = g_v Σ_{q: t(q) = v} g_q c_q W_q h_{s(q)}          (every other node, in topological order)
    f   = [h_v for the output nodes]                       (P, output_dim)
    W_q ~ N(0, σ_q²)  entrywise,   y | f ~ N(f, T)  entrywise

Scale factors c_q (``edge_scale``): "standard" c_q = 1/√n_{s(q)} (default; keeps activity O(1) under the prior),
"meanfield" c_q = 1/n_{s(q)}, or a number.  ``readout`` sets the default for edges into output nodes.  The likelihood
variance is ``temperature`` as given (no hidden rescaling): to reproduce the FCN core's non-lazy one-hidden-layer
linear network (docs/theory.md §1, §4) on a two-edge pathway x → h → y of width N use
``edge_scale={"<in edge>": "standard", "<out edge>": "meanfield"}``, σ² = (σ_w², σ_a²) per edge and
``temperature = T / N``.  Gated-off outputs are identically 0, so their targets do not enter the posterior.

The end-to-end map of a pathway p = (q_1, …, q_D) is the product of its effective edge maps
W_p = c_{q_D} W_{q_D} ⋯ c_{q_1} W_{q_1} (n_out × n_in) — :func:`pathway_map` and
:func:`bnnzoo.diagnostics.alignment.pathway_maps`.

Sites: one per edge, ``W_<edge>`` with dims (target node, source node) — the node names are the dim names —,
f (point, class), y (point, class, observed), mse () over the gated-on outputs, ``act_<node>`` (point, <node>) for hidden
nodes when recorded (record=("h",)), f_test (test_point, class) with ``X_test``.  ("class" indexes the concatenated
output units, as in the rest of the zoo.)
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ..tasks.gated_tasks import GatedSpec, Pathway, get_spec, routing_spec, routing_task, xor_spec, xor_task
from .zoo import Observable, PopulationSpec, UnitLayer, ZooEntry, register
from ._checks import check_bool, check_data, check_int, check_positive, check_record, is_traced, sqrt

__all__ = ["gated", "gated_dims", "check_gated_args", "gated_forward", "gated_prior_variances", "edge_scales",
           "edge_prior_variances",
           "pathway_map", "GatedSpec", "Pathway", "xor_spec", "routing_spec", "GATED_READOUTS"]

GATED_READOUTS = ("standard", "meanfield")


def _scale_value(rule, fan_in: int) -> float:
    if rule == "standard":
        return 1.0 / math.sqrt(fan_in)
    if rule == "meanfield":
        return 1.0 / fan_in
    if isinstance(rule, (int, float, np.integer, np.floating)) and not isinstance(rule, bool) and rule > 0:
        return float(rule)
    raise ValueError(f"edge scale must be 'standard', 'meanfield' or a positive number, got {rule!r}")


def edge_scales(spec, readout: str = "standard", edge_scale: Mapping | None = None) -> dict[str, float]:
    """c_q for every edge: ``edge_scale[q]`` if given, else ``readout`` for edges into output nodes, else
    "standard" (1/√fan-in)."""
    spec = get_spec(spec)
    if readout not in GATED_READOUTS:
        raise ValueError(f"readout must be one of {GATED_READOUTS}, got {readout!r}")
    edge_scale = dict(edge_scale or {})
    unknown = set(edge_scale) - set(spec.edge_names)
    if unknown:
        raise ValueError(f"edge_scale names unknown edges {sorted(unknown)}; edges: {spec.edge_names}")
    out = {}
    for e, s, t in spec.edges:
        rule = edge_scale.get(e, readout if t in spec.output_nodes else "standard")
        out[e] = _scale_value(rule, spec.sizes[s])
    return out


def edge_prior_variances(spec, sigma2=1.0) -> dict[str, float]:
    """σ_q² for every edge from a number (all edges) or a mapping edge → variance (missing edges get 1).

    Values may be traced JAX scalars (a prior on them); concrete values must be numbers > 0.
    """
    spec = get_spec(spec)
    if isinstance(sigma2, Mapping):
        unknown = set(sigma2) - set(spec.edge_names)
        if unknown:
            raise ValueError(f"sigma2 names unknown edges {sorted(unknown)}; edges: {spec.edge_names}")
        out = {e: sigma2.get(e, 1.0) for e in spec.edge_names}
    else:
        check_positive("sigma2", sigma2)
        out = {e: sigma2 for e in spec.edge_names}
    for e, v in out.items():
        if is_traced(v):
            continue
        check_positive(f"sigma2[{e!r}]", v)
        out[e] = float(v)
    return out


def check_gated_args(X, Y=None, *, spec, readout="standard", edge_scale=None, sigma2=1.0, temperature=0.01,
                     num_outputs=None, X_test=None, record=(), likelihood=True):
    """Validate the arguments of :func:`gated` before anything compiles.

    :func:`bnnzoo.sample` and :func:`gated` itself call it (same messages); traced hyperparameters are not
    inspected.

    Raises
    ------
    ValueError
        One line naming the argument and its valid values (packed shape, gates not 0/1, NaN/inf, booleans or
        strings where numbers are expected, unknown edges or names, num_outputs disagreeing with the spec).
    """
    spec = get_spec(spec)
    X = check_data("X", X, f"(P, {spec.packed_dim})")
    if X.shape[1] != spec.packed_dim:
        raise ValueError(f"X must have shape (P, {spec.packed_dim}) = inputs {spec.input_dim} + node gates "
                         f"{len(spec.nodes)} + edge gates {len(spec.edges)} (GatedSpec.pack), got {X.shape}")
    if not is_traced(X):
        _, gn, ge = spec.unpack(X)
        if not (np.all((gn == 0) | (gn == 1)) and np.all((ge == 0) | (ge == 1))):
            raise ValueError("gates must be 0 or 1")
    if Y is not None:
        Y = check_data("Y", Y, f"(P, {spec.output_dim})")
        if Y.shape != (X.shape[0], spec.output_dim):
            raise ValueError(f"Y must have shape (P, {spec.output_dim}) (output nodes {spec.output_nodes}), "
                             f"got {Y.shape}")
    if num_outputs is not None:
        check_int("num_outputs", num_outputs, 1)
        if num_outputs != spec.output_dim:
            raise ValueError(f"num_outputs={num_outputs} disagrees with the spec, whose output nodes have "
                             f"{spec.output_dim} units (num_outputs may be left out)")
    if X_test is not None:
        Xt = check_data("X_test", X_test, f"(P_test, {spec.packed_dim})")
        if Xt.shape[1] != spec.packed_dim:
            raise ValueError(f"X_test must have shape (P_test, {spec.packed_dim}), got {Xt.shape}")
    if not isinstance(readout, str) or readout not in GATED_READOUTS:
        raise ValueError(f"readout must be one of {GATED_READOUTS}, got {readout!r}")
    if edge_scale is not None and not isinstance(edge_scale, Mapping):
        raise ValueError(f"edge_scale must be None or a mapping {{edge: 'standard' | 'meanfield' | number}}, "
                         f"got {edge_scale!r}")
    edge_scales(spec, readout, edge_scale)
    edge_prior_variances(spec, sigma2)
    check_positive("temperature", temperature)
    check_bool("likelihood", likelihood)
    check_record(record, "'h' (hidden node activities)", lambda r: r == "h")


def gated_dims(spec, record: Sequence[str] | str = (), with_test: bool = False) -> dict[str, list[str]]:
    """Dims of every site of :func:`gated`: W_<edge> (target node, source node), f/y (point, class), ..."""
    spec = get_spec(spec)
    record = (record,) if isinstance(record, str) else tuple(record)
    dims = {f"W_{e}": [t, s] for e, s, t in spec.edges}
    dims.update({"f": ["point", "class"], "y": ["point", "class"], "mse": []})
    if "h" in record:
        for n in spec.node_names:
            if n not in spec.input_nodes and n not in spec.output_nodes:
                dims[f"act_{n}"] = ["point", n]
    if with_test:
        dims["f_test"] = ["test_point", "class"]
    return dims


def gated_prior_variances(X=None, *, spec, sigma2=1.0, **_model_kwargs) -> dict[str, float]:
    """Prior variance of every weight site of :func:`gated`: {"W_<edge>": σ_q²} (``X`` and the other model keywords
    are accepted and not needed)."""
    return {f"W_{e}": float(v) for e, v in edge_prior_variances(spec, sigma2).items()}


def _apply(spec, M: Mapping, X, xp=jnp):
    """Activities of every node and f for effective edge maps M (leading batch axes allowed)."""
    x, gn, ge = spec.unpack(X)
    ni = {n: i for i, n in enumerate(spec.node_names)}
    ei = {e: i for i, e in enumerate(spec.edge_names)}
    h = {}
    for n in spec.node_names:
        if n in spec.input_nodes:
            h[n] = gn[:, ni[n], None] * x[:, spec.input_slices[n]]
            continue
        acc = 0.0
        for e in spec.incoming(n):
            s, _ = spec.edge_map[e]
            acc = acc + ge[:, ei[e], None] * (h[s] @ xp.swapaxes(M[e], -1, -2))
        h[n] = gn[:, ni[n], None] * acc
    f = xp.concatenate([h[n] for n in spec.output_nodes], axis=-1)
    return h, f


def gated_forward(X, params, _X=None, xp=jnp, *, spec=None, readout="standard", edge_scale=None,
                  **_model_kwargs):
    """The output f of :func:`gated` without prior or likelihood, for given weights.

    Parameters
    ----------
    X : (n, packed_dim) packed rows [inputs | node gates | edge gates].
    params : {"W_<edge>": (..., n_target, n_source)} for every edge of the spec (leading batch axes allowed); the
        model's scale factors c_q (``readout``, ``edge_scale``) are applied here.
        Also accepted, for post-hoc analysis: ``gated_forward(spec, M, X, xp)`` with the effective edge maps
        M = {edge: c_q W_q}; the call then returns ``(h, f)`` with the activity h of every node.
    spec, readout, edge_scale : as in :func:`gated` (``spec`` required with ``params``).
    xp : jax.numpy (default) or numpy.
    **_model_kwargs : the model's other keywords (temperature, sigma2, ...) are accepted and ignored.

    Returns
    -------
    f : (..., n, output_dim) array (or ``(h, f)`` in the positional form).

    Raises
    ------
    ValueError
        Missing spec or edge weights, X not packed for the spec, unknown readout / edges.
    """
    if _X is not None:
        return _apply(get_spec(X), params, _X, xp)
    if spec is None:
        raise ValueError("spec is required: the GatedSpec (or built-in name / dict) of the network")
    spec = get_spec(spec)
    missing = [f"W_{e}" for e in spec.edge_names if f"W_{e}" not in params]
    if missing:
        raise ValueError(f"params must hold a weight W_<edge> for every edge; missing {missing}")
    X = check_data("X", X, f"(n, {spec.packed_dim})")
    if X.shape[1] != spec.packed_dim:
        raise ValueError(f"X must have shape (n, {spec.packed_dim}) (GatedSpec.pack), got {X.shape}")
    c = edge_scales(spec, readout, edge_scale)
    M = {e: c[e] * params[f"W_{e}"] for e in spec.edge_names}
    return _apply(spec, M, X, xp)[1]


def pathway_map(spec, M: Mapping, pathway: Pathway | str, xp=np):
    """W_p = M_{q_D} ⋯ M_{q_1} (n_out, n_in) from effective edge maps (leading batch axes allowed)."""
    spec = get_spec(spec)
    p = spec.pathway(pathway) if isinstance(pathway, str) else pathway
    Wp = M[p.edges[0]]
    for e in p.edges[1:]:
        Wp = xp.matmul(M[e], Wp)
    return Wp


def gated(X, Y=None, *, spec, readout: str = "standard", edge_scale: Mapping | None = None, sigma2=1.0,
          temperature: float = 0.01, num_outputs: int | None = None, X_test=None, record: Sequence[str] = (),
          likelihood: bool = True):
    """Gated deep linear network with Gaussian edge priors and a Gaussian likelihood (module docstring).

    A plain NumPyro model (MCMC, SVI with AutoNormal / AutoDelta, ``Predictive``, effect handlers).  temperature and
    sigma2 (a number or the values of a mapping) may be traced values (a prior on them in an enclosing model).
    Inside another model call it within ``numpyro.handlers.scope(prefix=...)`` with ``likelihood=False``, or
    evaluate given weights with :func:`gated_forward`.

    GPU precision: JAX rounds float32 matrix products on GPUs to TensorFloat32 by default; :func:`bnnzoo.sample`
    samples under ``jax.default_matmul_precision("highest")``.  Calling this model yourself on a GPU, wrap the run
    in ``with jax.default_matmul_precision("highest"):`` to keep the potential energy exact.

    Parameters
    ----------
    X : (P, packed_dim) packed rows [inputs | node gates | edge gates] (:meth:`GatedSpec.pack`).
    Y : (P, output_dim) targets of the output nodes, or None (prior).
    spec : a :class:`GatedSpec`, a built-in name ("xor", "routing") or a spec dict.
    readout : scale rule for edges into output nodes, "standard" (1/√fan-in) or "meanfield" (1/fan-in).
    edge_scale : optional per-edge override {edge: "standard" | "meanfield" | number}.
    sigma2 : prior variance of every edge, or {edge: variance}.
    temperature : T > 0, the likelihood variance per output entry (used as given).
    num_outputs : optional; the spec fixes the number of outputs (checked when given).
    X_test : optional packed test rows; f on them is recorded as ``f_test``.
    record : ("h",) records the activities of the hidden nodes on the training rows.
    likelihood : False leaves out the observation site ``y`` (and ``mse``).

    Returns
    -------
    f : (P, output_dim) output on X.

    Raises
    ------
    ValueError
        Bad arguments (:func:`check_gated_args`), before anything is traced.
    """
    check_gated_args(X, Y, spec=spec, readout=readout, edge_scale=edge_scale, sigma2=sigma2,
                     temperature=temperature, num_outputs=num_outputs, X_test=X_test, record=record,
                     likelihood=likelihood)
    record = (record,) if isinstance(record, str) else tuple(record)
    X = X if hasattr(X, "shape") else np.asarray(X)
    Y = Y if Y is None or hasattr(Y, "shape") else np.asarray(Y)
    X_test = X_test if X_test is None or hasattr(X_test, "shape") else np.asarray(X_test)
    spec = get_spec(spec)
    P = X.shape[0]
    m = spec.output_dim
    c = edge_scales(spec, readout, edge_scale)
    s2 = edge_prior_variances(spec, sigma2)

    # Plates: the target node's name (dim -2) and "<source>_in" (dim -1).  A hidden node is the target of one edge
    # and the source of another, so plates named by nodes alone would have two dims, which automatic guides refuse.
    # The dims users see, (target node, source node), come from gated_dims.
    M = {}
    for e, s, t in spec.edges:
        with numpyro.plate(t, spec.sizes[t], dim=-2), numpyro.plate(f"{s}_in", spec.sizes[s], dim=-1):
            W = numpyro.sample(f"W_{e}", dist.Normal(0.0, sqrt(s2[e])))
        assert W.shape[-2:] == (spec.sizes[t], spec.sizes[s]), f"W_{e} has shape {W.shape}"
        M[e] = c[e] * W

    h, f = _apply(spec, M, X)
    assert f.shape[-2:] == (P, m), f"f has shape {f.shape}"
    if "h" in record:
        for n in spec.node_names:
            if n not in spec.input_nodes and n not in spec.output_nodes:
                numpyro.deterministic(f"act_{n}", h[n])
    numpyro.deterministic("f", f)
    if likelihood:
        if Y is not None:
            _, gn, _ = spec.unpack(X)
            idx = {n: i for i, n in enumerate(spec.node_names)}
            mask = jnp.concatenate([jnp.repeat(gn[:, idx[n], None], spec.sizes[n], axis=1)
                                    for n in spec.output_nodes], axis=1)
            numpyro.deterministic("mse", jnp.sum(mask * (Y - f) ** 2) / jnp.maximum(jnp.sum(mask), 1.0))
        with numpyro.plate("point", P, dim=-2), numpyro.plate("class", m, dim=-1):
            numpyro.sample("y", dist.Normal(f, sqrt(temperature)), obs=Y)

    if X_test is not None:
        _, ft = _apply(spec, M, X_test)
        numpyro.deterministic("f_test", ft)
    return f


# ---------------------------------------------------------------------------------------------------------- zoo
def _validate(X, Y=None, **kw):
    check_gated_args(X, Y, **kw)


def _dims(*, spec, record=(), X_test=None, **_):
    return gated_dims(spec, record, with_test=X_test is not None)


OBSERVABLES = (
    Observable("W_p", "end-to-end pathway maps W_p (product of the effective edge maps) per draw, their singular "
               "values next to those of the effective dataset Σʸˣ(p): diagnostics.alignment.pathway_maps / "
               "pathway_spectra",
               "single active pathway: exact Gaussian posterior (one edge), theory.linear one-hidden-layer saddle "
               "point (two edges, N → ∞); GD endpoint Σʸˣ Σˣ⁺ and race dynamics: theory.dynamics"),
    Observable("f_test", "predictions on untrained pathways (routing task test set): "
               "diagnostics.alignment.pathway_generalization", "systematic generalization through shared edges "
               "(Saxe et al. 2022)"),
    Observable("mse", "training mean squared error over gated-on outputs", ""),
)

def _forward(X, params, *, spec, readout="standard", edge_scale=None, **_):
    """f (point, class) of :func:`gated` for one draw ``params`` = {"W_<edge>", ...}."""
    spec = get_spec(spec)
    c = edge_scales(spec, readout, edge_scale)
    return gated_forward(spec, {e: c[e] * params[f"W_{e}"] for e in spec.edge_names}, X)[1]


def _likelihood_variance(kw):
    return float(kw["temperature"])


_POPULATIONS = PopulationSpec(("pathway_sv", "mse"), ("prior", "annealed"), "temperature",
                              "no meanfield start: bnnzoo.theory has no mean field of gated networks")

register(ZooEntry(
    name="gdln_xor",
    model=gated,
    defaults=dict(spec=xor_spec(4), readout="standard", edge_scale=None, sigma2=1.0, temperature=0.01),
    task_defaults=dict(hidden=4, repeats=1),
    make_task=xor_task,
    validate=_validate,
    dims=_dims,
    observables=OBSERVABLES,
    record=("h",),
    forward=_forward,
    likelihood_variance=_likelihood_variance,
    prior_variances=gated_prior_variances,
    description="gated deep linear network computing XoR with two gated pathways",
    reference="Saxe, Sodhani & Lewallen, ICML 2022; docs/theory.md §9",
    units=(UnitLayer("ha", "act_ha", "ha", "hidden node ha: activities on the training rows (record 'h')"),
           UnitLayer("hb", "act_hb", "hb", "hidden node hb: activities on the training rows (record 'h')")),
    analysis="gated",
    populations=_POPULATIONS,
))

register(ZooEntry(
    name="gdln_routing",
    model=gated,
    defaults=dict(spec=routing_spec(hidden=64), readout="standard", edge_scale=None, sigma2=1.0, temperature=0.01),
    task_defaults=dict(hidden=64),
    make_task=routing_task,
    validate=_validate,
    dims=_dims,
    observables=OBSERVABLES,
    record=("h",),
    forward=_forward,
    likelihood_variance=_likelihood_variance,
    prior_variances=gated_prior_variances,
    description="context-dependent routing GDLN: 7 input modules, shared hidden layer, 7 output modules, 4 of 7 "
                "pathways trained",
    reference="Saxe, Sodhani & Lewallen, ICML 2022 (facebookresearch/gated-dln); docs/theory.md §9",
    units=(UnitLayer("h1", "act_h1", "h1", "shared hidden node h1: activities on the training rows (record 'h')"),
           UnitLayer("h2", "act_h2", "h2", "shared hidden node h2: activities on the training rows (record 'h')")),
    analysis="gated",
    populations=_POPULATIONS,
))
