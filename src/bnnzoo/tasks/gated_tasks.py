"""Gated deep linear network (GDLN) graph specs and tasks (docs/theory.md §9; Saxe, Sodhani & Lewallen, ICML 2022).

A :class:`GatedSpec` lists nodes (layers with sizes, in topological order) and named edges (weight matrices
source → target).  Nodes without incoming edges are *input* nodes, nodes without outgoing edges are *output* nodes.
Gates are data: every example carries a gate g_v ∈ {0, 1} per node and g_q per edge.  So that a GDLN task is an
ordinary :class:`~bnnzoo.tasks.Task` (and ``bnnzoo.sample`` with its test-set predictions works unchanged), one row of
``X`` packs, in this order,

    [ x_v for the input nodes v (their sizes, spec order) | g_v for every node | g_q for every edge ]

and one row of ``Y`` concatenates the targets of the output nodes.  :meth:`GatedSpec.pack` / :meth:`GatedSpec.unpack`
convert.  Targets of gated-off output nodes do not enter the posterior (those outputs are identically 0).

Built-in specs and tasks:

* :func:`xor_spec` / :func:`xor_task` — gating lets a linear network compute XoR: inputs x ∈ {±1}², target
  y = −x₁x₂ (XoR in ±1 coding); two pathways x → ha → out and x → hb → out, the gate on x₁ opens ha when x₁ = −1
  (there y = x₂) and hb when x₁ = +1 (there y = −x₂): one active pathway per example, each linear on its examples.
* :func:`routing_spec` / :func:`routing_task` — the context-dependent routing network of the official code
  (facebookresearch/gated-dln): M = 7 input modules (item_dim 4 → hidden), one shared hidden layer (hidden → hidden),
  M = 7 output modules (hidden → 7); input domain i routes to output (i + k) mod M for k ∈ {−1, 0, 1, 2} (4 of 7
  pathways per input trained, the other 3 form the test set); items X = I₄, hierarchical targets: column 1 = 6 for
  all items, columns 2–3 = 4 on items {1, 2} / {3, 4}, columns 4–7 = 3·I₄.

* :func:`delta_xor_spec` / :func:`delta_xor_task` — the Δ example of Saxe's talk "Models of representation learning
  dynamics" as we reconstruct it: inputs (x₁, x₂, Δ) with x ∈ {±1}² and a constant input Δ, target y = XoR(x₁, x₂)
  ∈ {0, 1} = (1 − x₁x₂)/2; an always-open linear pathway x → h_lin → out beside P = 4 gated pathways
  x → h_k → out, pathway k open on example k only ("one gate per example").  The linear pathway's effective dataset
  has the single mode s_lin = Δ/2 (input variance Δ²: it can fit only the mean ½); each gated pathway of an example
  with y = 1 has s_XoR = √(2 + Δ²)/P, those with y = 0 none — the talk's two strengths.

Effective datasets (docs/theory.md §9): for a pathway p (a path of edges from an input node to an output node, gate
g_p = product of the gates of its nodes and edges) Σʸˣ(p) = ⟨g_p y_out(p) x_in(p)ᵀ⟩ and
Σˣ(j, p) = ⟨g_j x_in(j) x_in(p)ᵀ g_p⟩, averages over the P examples (:func:`effective_dataset`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Mapping, Sequence

import numpy as np

from .base import Task

__all__ = ["GatedSpec", "Pathway", "xor_spec", "routing_spec", "xor_task", "routing_task", "single_pathway_task",
           "delta_xor_spec", "delta_xor_task",
           "effective_dataset", "EffectiveDataset", "ROUTING_ITEM_TARGETS", "BUILTIN_SPECS", "get_spec"]

# dims of the posterior and site names of the model (plates and sites share one namespace in NumPyro)
_RESERVED = {"point", "class", "test_point", "chain", "draw", "input", "gate", "token", "head", "f", "y", "mse",
             "f_test"}


@dataclass(frozen=True)
class Pathway:
    """A path of edges from an input node to an output node.

    name : the edge names joined by ">" (e.g. "in3>shared>out5").  edges : edge names, input side first.
    nodes : the nodes visited (input node first, output node last).
    """

    name: str
    edges: tuple[str, ...]
    nodes: tuple[str, ...]

    @property
    def input(self) -> str:
        return self.nodes[0]

    @property
    def output(self) -> str:
        return self.nodes[-1]

    @property
    def depth(self) -> int:
        """Number of edges (weight matrices) on the path."""
        return len(self.edges)


@dataclass(frozen=True)
class GatedSpec:
    """Graph of a gated deep linear network.

    name : identifier.  nodes : ((node name, size), ...) in topological order.
    edges : ((edge name, source node, target node), ...).
    """

    name: str
    nodes: tuple[tuple[str, int], ...]
    edges: tuple[tuple[str, str, str], ...]

    def __post_init__(self):
        nodes = tuple((str(n), int(s)) for n, s in self.nodes)
        edges = tuple((str(e), str(s), str(t)) for e, s, t in self.edges)
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "edges", edges)
        names = [n for n, _ in nodes]
        if len(set(names)) != len(names):
            raise ValueError(f"node names must be unique, got {names}")
        if len(set(e for e, _, _ in edges)) != len(edges):
            raise ValueError("edge names must be unique")
        if not nodes or not edges:
            raise ValueError("a GatedSpec needs at least one node and one edge")
        for n, s in nodes:
            if s < 1:
                raise ValueError(f"node {n!r} has size {s}; sizes must be >= 1")
            if n in _RESERVED or n.startswith(("W_", "act_")):
                raise ValueError(f"node name {n!r} is reserved (it names an axis of the posterior)")
        pos = {n: i for i, n in enumerate(names)}
        for e, s, t in edges:
            if s not in pos or t not in pos:
                raise ValueError(f"edge {e!r} connects unknown nodes {s!r} -> {t!r}")
            if pos[s] >= pos[t]:
                raise ValueError(f"edge {e!r}: {s!r} -> {t!r} goes against the node order; list nodes in "
                                 f"topological order (the graph must be acyclic)")
        isolated = [n for n in names if not any(n in (s, t) for _, s, t in edges)]
        if isolated:
            raise ValueError(f"nodes {isolated} have no edges")

    # ---------------------------------------------------------------- structure
    @cached_property
    def sizes(self) -> dict[str, int]:
        return dict(self.nodes)

    @property
    def node_names(self) -> list[str]:
        return [n for n, _ in self.nodes]

    @property
    def edge_names(self) -> list[str]:
        return [e for e, _, _ in self.edges]

    @cached_property
    def edge_map(self) -> dict[str, tuple[str, str]]:
        """edge name → (source, target)."""
        return {e: (s, t) for e, s, t in self.edges}

    @cached_property
    def input_nodes(self) -> list[str]:
        return [n for n in self.node_names if not any(t == n for _, _, t in self.edges)]

    @cached_property
    def output_nodes(self) -> list[str]:
        return [n for n in self.node_names if not any(s == n for _, s, _ in self.edges)]

    def incoming(self, node: str) -> list[str]:
        """Names of the edges into ``node``."""
        return [e for e, _, t in self.edges if t == node]

    @property
    def input_dim(self) -> int:
        return sum(self.sizes[n] for n in self.input_nodes)

    @property
    def output_dim(self) -> int:
        return sum(self.sizes[n] for n in self.output_nodes)

    @property
    def packed_dim(self) -> int:
        """Columns of a packed ``X`` row: inputs, node gates, edge gates."""
        return self.input_dim + len(self.nodes) + len(self.edges)

    @cached_property
    def input_slices(self) -> dict[str, slice]:
        out, o = {}, 0
        for n in self.input_nodes:
            out[n] = slice(o, o + self.sizes[n])
            o += self.sizes[n]
        return out

    @cached_property
    def output_slices(self) -> dict[str, slice]:
        out, o = {}, 0
        for n in self.output_nodes:
            out[n] = slice(o, o + self.sizes[n])
            o += self.sizes[n]
        return out

    @cached_property
    def pathways(self) -> list[Pathway]:
        """Every path from an input node to an output node (depth-first, spec order)."""
        paths = []

        def walk(node, edges, nodes):
            outs = [(e, t) for e, s, t in self.edges if s == node]
            if not outs:
                paths.append(Pathway(">".join(edges), tuple(edges), tuple(nodes)))
                return
            for e, t in outs:
                walk(t, edges + [e], nodes + [t])

        for n in self.input_nodes:
            walk(n, [], [n])
        return paths

    def pathway(self, name: str) -> Pathway:
        for p in self.pathways:
            if p.name == name:
                return p
        raise ValueError(f"no pathway {name!r} in spec {self.name!r}; pathways: {[p.name for p in self.pathways]}")

    # ---------------------------------------------------------------- data layout
    def pack(self, x, node_gates, edge_gates) -> np.ndarray:
        """Rows [inputs | node gates | edge gates] from x (P, input_dim), node_gates (P, n_nodes),
        edge_gates (P, n_edges) (a 1-D gate vector is broadcast to every row)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        P = x.shape[0]
        gn = np.broadcast_to(np.asarray(node_gates, dtype=float), (P, len(self.nodes)))
        ge = np.broadcast_to(np.asarray(edge_gates, dtype=float), (P, len(self.edges)))
        if x.shape[1] != self.input_dim:
            raise ValueError(f"x must have {self.input_dim} columns (input nodes {self.input_nodes}), got {x.shape}")
        return np.concatenate([x, gn, ge], axis=1)

    def unpack(self, X):
        """(x (P, input_dim), node gates (P, n_nodes), edge gates (P, n_edges)) from packed rows (NumPy or JAX)."""
        a, b = self.input_dim, self.input_dim + len(self.nodes)
        return X[:, :a], X[:, a:b], X[:, b:]

    def pathway_gate(self, X, pathway: Pathway | str) -> np.ndarray:
        """g_p per example: the product of the gates of the pathway's nodes and edges, (P,)."""
        p = self.pathway(pathway) if isinstance(pathway, str) else pathway
        _, gn, ge = self.unpack(np.asarray(X, dtype=float))
        ni = {n: i for i, n in enumerate(self.node_names)}
        ei = {e: i for i, e in enumerate(self.edge_names)}
        g = np.ones(gn.shape[0])
        for n in p.nodes:
            g = g * gn[:, ni[n]]
        for e in p.edges:
            g = g * ge[:, ei[e]]
        return g

    def to_dict(self) -> dict:
        """The spec as a JSON-able dict (how the run's provenance holds it); :func:`get_spec` reads it back."""
        return {"name": self.name, "nodes": [list(n) for n in self.nodes], "edges": [list(e) for e in self.edges]}

    def __repr__(self) -> str:
        return f"GatedSpec({self.to_dict()!r})"


# ------------------------------------------------------------------------------------------------ built-in specs
def xor_spec(hidden: int = 4) -> GatedSpec:
    """Two gated pathways x (2) → ha / hb (hidden) → out (1): the XoR example (module docstring)."""
    return GatedSpec("xor", nodes=(("x", 2), ("ha", hidden), ("hb", hidden), ("out", 1)),
                     edges=(("in_a", "x", "ha"), ("in_b", "x", "hb"), ("out_a", "ha", "out"), ("out_b", "hb", "out")))


def routing_spec(modules: int = 7, item_dim: int = 4, hidden: int = 64, out_dim: int = 7) -> GatedSpec:
    """The routing network of docs/theory.md §9: input modules x0..x{M-1} (item_dim) → h1 (hidden) via edges in0..,
    shared edge h1 → h2, output modules h2 → y0..y{M-1} (out_dim) via edges out0..  Pathway (i, j) is
    "in{i}>shared>out{j}"."""
    nodes = [(f"x{i}", item_dim) for i in range(modules)] + [("h1", hidden), ("h2", hidden)]
    nodes += [(f"y{j}", out_dim) for j in range(modules)]
    edges = [(f"in{i}", f"x{i}", "h1") for i in range(modules)] + [("shared", "h1", "h2")]
    edges += [(f"out{j}", "h2", f"y{j}") for j in range(modules)]
    return GatedSpec(f"routing{modules}", nodes=tuple(nodes), edges=tuple(edges))


def delta_xor_spec(hidden: int = 4) -> GatedSpec:
    """The Δ example's net (module docstring): x (3) → h_lin (hidden) → out (1), always open, and x → h_k (hidden)
    → out for k = 0 … 3, pathway k open on example k.  Pathways "in_lin>out_lin" and "in_k>out_k"; none shares an
    edge with another."""
    hs = ["lin", "0", "1", "2", "3"]
    nodes = (("x", 3),) + tuple((f"h_{h}", hidden) for h in hs) + (("out", 1),)
    edges = tuple((f"in_{h}", "x", f"h_{h}") for h in hs) + tuple((f"out_{h}", f"h_{h}", "out") for h in hs)
    return GatedSpec("delta_xor", nodes=nodes, edges=edges)


BUILTIN_SPECS = {"xor": xor_spec, "routing": routing_spec, "delta_xor": delta_xor_spec}


def get_spec(spec) -> GatedSpec:
    """A :class:`GatedSpec` from itself, a built-in name ("xor", "routing" with default sizes) or a dict
    (:meth:`GatedSpec.to_dict`)."""
    if isinstance(spec, GatedSpec):
        return spec
    if isinstance(spec, str):
        if spec not in BUILTIN_SPECS:
            raise ValueError(f"unknown spec {spec!r}; built-ins: {sorted(BUILTIN_SPECS)}")
        return BUILTIN_SPECS[spec]()
    if isinstance(spec, Mapping):
        missing = [k for k in ("name", "nodes", "edges") if k not in spec]
        if missing:
            raise ValueError(f"a spec dict needs the keys 'name', 'nodes' and 'edges' (GatedSpec.to_dict); "
                             f"missing {missing}")
        return GatedSpec(spec["name"], tuple(map(tuple, spec["nodes"])), tuple(map(tuple, spec["edges"])))
    raise ValueError(f"spec must be a GatedSpec, a built-in name or a dict, got {type(spec).__name__}")


# ------------------------------------------------------------------------------------------------ tasks
def xor_task(hidden: int = 4, repeats: int = 1, noise_std: float = 0.0, seed: int = 0) -> Task:
    """The XoR gating task on :func:`xor_spec` (4 points, each ``repeats`` times; optional target noise).
    The test set is the 4 clean points."""
    spec = xor_spec(hidden)
    pts = np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]])
    x = np.repeat(pts, int(repeats), axis=0)
    rng = np.random.default_rng(seed)

    def rows(x):
        ga = (x[:, 0] < 0).astype(float)
        gn = np.stack([np.ones(len(x)), ga, 1.0 - ga, np.ones(len(x))], axis=1)  # x, ha, hb, out
        return spec.pack(x, gn, np.ones(len(spec.edges)))

    y = -(x[:, 0] * x[:, 1])[:, None]
    Y = y + noise_std * rng.standard_normal(y.shape) if noise_std else y
    labels = (y[:, 0] > 0).astype(int)
    meta = dict(task="gdln_xor", spec=spec.to_dict(), hidden=int(hidden), repeats=int(repeats),
                noise_std=float(noise_std), seed=int(seed))
    return Task(X=rows(x), Y=Y, labels=labels, X_test=rows(pts), Y_test=-(pts[:, 0] * pts[:, 1])[:, None],
                labels_test=(-(pts[:, 0] * pts[:, 1]) > 0).astype(int), name="gdln_xor", meta=meta)


def delta_xor_task(delta: float, hidden: int = 4) -> Task:
    """The Δ example (module docstring) on :func:`delta_xor_spec`: the 4 points x ∈ {±1}² with the constant input
    Δ, target y = (1 − x₁x₂)/2 ∈ {0, 1}; the linear pathway and the input and output nodes are open on every example,
    gated pathway k on example k only.  The test set is the training set (4 points: nothing is held out).

    Parameters
    ----------
    delta : float
        Strength Δ > 0 of the constant input: the linear pathway's mode strength is Δ/2, a gated pathway's (for y = 1)
        √(2 + Δ²)/4.
    hidden : int
        Width of every hidden node.

    Raises
    ------
    ValueError
        If ``delta`` is not a finite number > 0.
    """
    delta = float(delta)
    if not (np.isfinite(delta) and delta > 0):
        raise ValueError(f"delta must be a finite number > 0, got {delta!r}")
    spec = delta_xor_spec(hidden)
    pts = np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]])
    x = np.column_stack([pts, np.full(4, delta)])
    ni = {n: i for i, n in enumerate(spec.node_names)}
    gn = np.zeros((4, len(spec.nodes)))
    gn[:, [ni["x"], ni["h_lin"], ni["out"]]] = 1.0
    for k in range(4):
        gn[k, ni[f"h_{k}"]] = 1.0
    X = spec.pack(x, gn, np.ones(len(spec.edges)))
    y = (0.5 * (1.0 - pts[:, 0] * pts[:, 1]))[:, None]
    labels = y[:, 0].astype(int)
    meta = dict(task="gdln_delta_xor", spec=spec.to_dict(), hidden=int(hidden), delta=delta)
    return Task(X=X, Y=y, labels=labels, X_test=X.copy(), Y_test=y.copy(), labels_test=labels.copy(),
                name="gdln_delta_xor", meta=meta)


ROUTING_ITEM_TARGETS = np.concatenate([6.0 * np.ones((1, 4)), np.array([[4.0, 4, 0, 0], [0, 0, 4, 4]]),
                                       3.0 * np.eye(4)]).T
"""(4 items, 7 outputs) hierarchical targets of the official routing example."""


def routing_task(modules: int = 7, hidden: int = 64, trained_offsets: Sequence[int] = (-1, 0, 1, 2),
                 item_targets=None) -> Task:
    """The context-dependent routing task on :func:`routing_spec` (module docstring).

    Training examples: every item on every trained pathway (i, (i + k) mod M), k in ``trained_offsets``; test
    examples: every item on the untrained pathways (generalization to untrained pathways).  Every input block of x
    holds the item (gates, not the inputs, select the module); node gates open x_i, h1, h2 and y_j; edge gates are 1.
    ``labels`` are item indices; ``meta`` lists the trained and untrained (i, j) pairs.
    """
    Yi = ROUTING_ITEM_TARGETS if item_targets is None else np.asarray(item_targets, dtype=float)
    n_items, out_dim = Yi.shape
    spec = routing_spec(modules, n_items, hidden, out_dim)
    offsets = sorted({int(k) % modules for k in trained_offsets})
    trained = [(i, (i + k) % modules) for i in range(modules) for k in offsets]
    untrained = [(i, j) for i in range(modules) for j in range(modules) if (i, j) not in trained]
    ni = {n: i for i, n in enumerate(spec.node_names)}

    def rows(pairs):
        xs, gns, ys, labs = [], [], [], []
        for i, j in pairs:
            for n in range(n_items):
                xs.append(np.tile(np.eye(n_items)[n], modules))
                g = np.zeros(len(spec.nodes))
                g[[ni[f"x{i}"], ni["h1"], ni["h2"], ni[f"y{j}"]]] = 1.0
                gns.append(g)
                y = np.zeros(modules * out_dim)
                y[j * out_dim:(j + 1) * out_dim] = Yi[n]
                ys.append(y)
                labs.append(n)
        X = spec.pack(np.array(xs), np.array(gns), np.ones(len(spec.edges)))
        return X, np.array(ys), np.array(labs)

    X, Y, lab = rows(trained)
    kw = {}
    if untrained:
        Xt, Yt, lt = rows(untrained)
        kw = dict(X_test=Xt, Y_test=Yt, labels_test=lt)
    meta = dict(task="gdln_routing", spec=spec.to_dict(), modules=modules, hidden=int(hidden),
                trained_offsets=list(offsets), trained_pairs=[list(p) for p in trained],
                untrained_pairs=[list(p) for p in untrained])
    return Task(X=X, Y=Y, labels=lab, name="gdln_routing", meta=meta, **kw)


def single_pathway_task(spec: GatedSpec, pathway: str, x, y, active=None) -> Task:
    """A task on which only ``pathway`` is ever open: inputs x (P, n_in) on its input node, targets y (P, n_out)
    on its output node; ``active`` (P,) optionally gates whole examples off (they then carry no information).
    Every node and edge not on the pathway is gated off."""
    p = spec.pathway(pathway)
    x = np.atleast_2d(np.asarray(x, dtype=float))
    y = np.atleast_2d(np.asarray(y, dtype=float))
    P = x.shape[0]
    g = np.ones(P) if active is None else np.asarray(active, dtype=float)
    X_in = np.zeros((P, spec.input_dim))
    X_in[:, spec.input_slices[p.input]] = x
    gn = np.zeros((P, len(spec.nodes)))
    ge = np.zeros((P, len(spec.edges)))
    for n in p.nodes:
        gn[:, spec.node_names.index(n)] = g
    for e in p.edges:
        ge[:, spec.edge_names.index(e)] = 1.0
    Y = np.zeros((P, spec.output_dim))
    Y[:, spec.output_slices[p.output]] = y
    meta = dict(task="gdln_single_pathway", spec=spec.to_dict(), pathway=p.name)
    return Task(X=spec.pack(X_in, gn, ge), Y=Y, labels=np.zeros(P, dtype=int), name="gdln_single_pathway", meta=meta)


# ------------------------------------------------------------------------------------------------ statistics
@dataclass(frozen=True)
class EffectiveDataset:
    """The gated statistics of one pathway (docs/theory.md §9), averages over the P examples.

    pathway : its name.  Syx : Σʸˣ(p) = ⟨g_p y_out xᵀ_in⟩, (n_out, n_in).  Sx : Σˣ(p, p) = ⟨g_p x_in x_inᵀ⟩.
    n_active : number of examples with g_p = 1.  sv : singular values of Σʸˣ(p), descending.
    ls_map : the least-squares map Σʸˣ(p) Σˣ(p, p)⁺ (what an isolated pathway converges to from small init).
    """

    pathway: str
    Syx: np.ndarray
    Sx: np.ndarray
    n_active: int
    sv: np.ndarray
    ls_map: np.ndarray


def effective_dataset(spec: GatedSpec, X, Y, pathway: Pathway | str) -> EffectiveDataset:
    """Σʸˣ(p), Σˣ(p, p), the active count and the least-squares map of ``pathway`` on packed data (X, Y)."""
    p = spec.pathway(pathway) if isinstance(pathway, str) else pathway
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    g = spec.pathway_gate(X, p)
    x, _, _ = spec.unpack(X)
    xi = x[:, spec.input_slices[p.input]]
    yo = Y[:, spec.output_slices[p.output]]
    P = X.shape[0]
    Syx = (g[:, None] * yo).T @ xi / P
    Sx = (g[:, None] * xi).T @ xi / P
    return EffectiveDataset(p.name, Syx, Sx, int(round(g.sum())), np.linalg.svd(Syx, compute_uv=False),
                            Syx @ np.linalg.pinv(Sx))
