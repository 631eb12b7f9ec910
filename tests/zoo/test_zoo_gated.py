"""Gated deep linear network: spec/data layout, single-pathway posteriors against exact linear theory, the XoR and
routing tasks, pathway observables, and the reference dynamics.

Independent computations used:
* one-edge pathway — its posterior is exactly Gaussian (closed form below, derived here) → ESS-aware z-test of the
  mean of every weight and of its second moment;
* two-edge pathway — the theory helper's exact finite-N quadrature ``theory.linear.linear_exact_m1`` (m = 1) for
  E[aᵀa/N] and E[f] on the pathway's effective dataset, and its N → ∞ saddle point ``linear_saddle_point``;
* effective-dataset statistics of the routing task in closed form (Σʸˣ = Yᵢᵀ/P), and of the Δ task (its linear
  pathway's mode Δ/2 with input variance Δ², a gated pathway's √(2 + Δ²)/4 on its y = 1 example, derived here);
* reference dynamics: closed form vs gradient descent from a decoupled start, D = 2 closed form vs ODE.
"""

import math

import numpy as np
import pytest

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.diagnostics.alignment import pathway_generalization, pathway_maps, pathway_spectra
from bnnzoo.models.gated import edge_scales, gated, gated_dims, gated_forward
from bnnzoo.tasks.gated_tasks import (ROUTING_ITEM_TARGETS, GatedSpec, delta_xor_task, effective_dataset,
                                      get_spec, routing_spec, routing_task, single_pathway_task, xor_spec, xor_task)
from bnnzoo.testing import assert_mean_matches
from bnnzoo.theory.dynamics import (decoupled_init, deep_linear_trajectory, gdln_gradient_descent, mode_strength,
                                    pathway_trajectories)
from bnnzoo.theory.linear import linear_exact_m1, linear_saddle_point


# ------------------------------------------------------------------------------------------------ spec and data
def test_spec_validation_and_layout():
    with pytest.raises(ValueError, match="topological"):
        GatedSpec("bad", nodes=(("a", 2), ("b", 2)), edges=(("e", "b", "a"),))
    with pytest.raises(ValueError, match="reserved"):
        GatedSpec("bad", nodes=(("x", 2), ("y", 1)), edges=(("e", "x", "y"),))
    with pytest.raises(ValueError, match="unknown nodes"):
        GatedSpec("bad", nodes=(("x", 2), ("o", 1)), edges=(("e", "x", "q"),))
    spec = routing_spec(hidden=5)
    assert len(spec.pathways) == 49 and spec.pathway("in3>shared>out5").depth == 3
    assert spec.input_nodes == [f"x{i}" for i in range(7)] and spec.output_nodes == [f"y{j}" for j in range(7)]
    t = routing_task(hidden=5)
    assert t.P == 7 * 4 * 4 and t.X_test.shape[0] == 7 * 3 * 4
    x, gn, ge = spec.unpack(t.X)
    assert x.shape == (t.P, 28) and gn.shape == (t.P, 16) and ge.shape == (t.P, 15)
    np.testing.assert_array_equal(spec.pack(x, gn, ge), t.X)
    # each training row opens exactly one pathway, a trained one
    G = np.stack([spec.pathway_gate(t.X, p) for p in spec.pathways], axis=1)
    np.testing.assert_array_equal(G.sum(1), 1.0)
    with pytest.raises(ValueError, match="gates must be 0 or 1"):
        bad = t.X.copy()
        bad[0, 28] = 0.5
        bnnzoo.sample("gdln_routing", type(t)(X=bad, Y=t.Y, labels=t.labels), num_warmup=1, num_samples=1,
                      sampler="nuts")


def test_routing_effective_dataset_closed_form():
    spec, t = routing_spec(hidden=4), routing_task(hidden=4)
    P = t.P
    trained = {tuple(p) for p in t.meta["trained_pairs"]}
    for i, j in [(0, 0), (0, 6), (3, 5), (0, 3)]:
        eff = effective_dataset(spec, t.X, t.Y, f"in{i}>shared>out{j}")
        if (i, j) in trained:  # Σʸˣ = Σ_items y_n e_nᵀ / P = Yᵢᵀ / P,  Σˣ = Σ_items e_n e_nᵀ / P = I/P
            np.testing.assert_allclose(eff.Syx, ROUTING_ITEM_TARGETS.T / P, atol=1e-12)
            np.testing.assert_allclose(eff.Sx, np.eye(4) / P, atol=1e-12)
            np.testing.assert_allclose(eff.ls_map, ROUTING_ITEM_TARGETS.T, atol=1e-9)
            assert eff.n_active == 4
        else:
            assert eff.n_active == 0 and np.all(eff.Syx == 0)


@pytest.mark.parametrize("delta", [0.3, 1.0, 2.5])
def test_delta_task_effective_datasets_closed_form(delta):
    """Inputs (x₁, x₂, Δ), y = XoR ∈ {0, 1}: the linear pathway sees Σʸˣ = ⟨y x⟩ = (0, 0, Δ/2) (the two y = 1 points
    have x₁ + x₂ = 0) and Σˣ = diag(1, 1, Δ²); gated pathway k sees only point k: Σʸˣ = y_k x_kᵀ/4, whose singular value
    is |x_k|/4 = √(2 + Δ²)/4 when y_k = 1 and 0 otherwise."""
    t = delta_xor_task(delta, hidden=3)
    spec = get_spec(t.meta["spec"])
    assert [p.name for p in spec.pathways] == ["in_lin>out_lin"] + [f"in_{k}>out_{k}" for k in range(4)]
    lin = effective_dataset(spec, t.X, t.Y, "in_lin>out_lin")
    np.testing.assert_allclose(lin.Syx, [[0.0, 0.0, delta / 2]], atol=1e-12)
    np.testing.assert_allclose(lin.Sx, np.diag([1.0, 1.0, delta**2]), atol=1e-12)
    np.testing.assert_allclose(lin.ls_map, [[0.0, 0.0, 1 / (2 * delta)]], atol=1e-12)   # the mean ½, linearly
    assert lin.n_active == 4
    x, _, _ = spec.unpack(t.X)
    for k in range(4):
        eff = effective_dataset(spec, t.X, t.Y, f"in_{k}>out_{k}")
        y_k = (1 - x[k, 0] * x[k, 1]) / 2
        assert eff.n_active == 1 and t.Y[k, 0] == y_k
        assert eff.sv[0] == pytest.approx(y_k * math.sqrt(2 + delta**2) / 4, abs=1e-12)
    with pytest.raises(ValueError, match="delta must be"):
        delta_xor_task(0.0)


def test_forward_matches_explicit_products():
    """h_v = g_v Σ g_q c_q W_q h_s against the explicit pathway sum f = Σ_p g_p W_p x."""
    spec = routing_spec(hidden=3)
    t = routing_task(hidden=3)
    rng = np.random.default_rng(0)
    M = {e: rng.standard_normal((spec.sizes[tg], spec.sizes[s])) for e, s, tg in spec.edges}
    _, f = gated_forward(spec, M, t.X, xp=np)
    x, _, _ = spec.unpack(t.X)
    f2 = np.zeros_like(f)
    for p in spec.pathways:
        g = spec.pathway_gate(t.X, p)
        Wp = M[p.edges[2]] @ M[p.edges[1]] @ M[p.edges[0]]
        f2[:, spec.output_slices[p.output]] += g[:, None] * (x[:, spec.input_slices[p.input]] @ Wp.T)
    np.testing.assert_allclose(f, f2, atol=1e-10)


# ------------------------------------------------------------------------------------------------ single pathways
def _two_branch_spec(n_in=3, hidden=4, n_out=2):
    """x → out directly (edge "w", one edge) and x → h → out (edges "u1", "u2", two edges)."""
    return GatedSpec("branches", nodes=(("x", n_in), ("h", hidden), ("out", n_out)),
                     edges=(("w", "x", "out"), ("u1", "x", "h"), ("u2", "h", "out")))


def test_one_edge_pathway_is_exactly_gaussian():
    """Only pathway "w" is open (on 6 of 8 examples): W's posterior is Gaussian, row by row:
    precision Λ = I/σ² + (c²/T) Σ_μ g_μ x_μ x_μᵀ, mean_r = Λ⁻¹ (c/T) Σ_μ g_μ y_μr x_μ, c = 1/√n_in.
    The closed two-edge branch keeps its prior (checked too)."""
    spec = _two_branch_spec()
    rng = np.random.default_rng(1)
    P, n_in, m = 8, 3, 2
    x = rng.standard_normal((P, n_in))
    y = rng.standard_normal((P, m))
    active = np.array([1, 1, 0, 1, 1, 1, 0, 1.0])
    task = single_pathway_task(spec, "w", x, y, active=active)
    T, s2 = 0.3, 0.7
    idata = bnnzoo.sample(gated, task, num_chains=2, num_warmup=400, num_samples=1500, seed=2, progress=False,
                          dims=gated_dims(spec), spec=spec, temperature=T, sigma2=s2, sampler="nuts")
    post = azcompat.get_group(idata, "posterior")
    assert list(post["W_w"].dims) == ["chain", "draw", "out", "x"]
    c = 1.0 / math.sqrt(n_in)
    xe = x[active > 0]
    prec = np.eye(n_in) / s2 + (c * c / T) * xe.T @ xe
    cov = np.linalg.inv(prec)
    mean = (c / T) * (y[active > 0].T @ xe) @ cov  # (m, n_in)
    W = post["W_w"].values
    assert_mean_matches(W, mean, name="one-edge mean")
    second = mean[:, :, None] * mean[:, None, :] + cov[None]  # E[W_r W_rᵀ]
    assert_mean_matches(np.einsum("cdri,cdrj->cdrij", W, W), second, name="one-edge second moment")
    # the closed branch is at its prior: E[U2 U2ᵀ]/hidden = σ² per entry of the output Gram
    U2 = post["W_u2"].values
    assert_mean_matches(np.einsum("cdri,cdsi->cdrs", U2, U2) / spec.sizes["h"], s2 * np.eye(m),
                        name="closed branch at prior")


def _two_edge_setup(width, seed=3):
    spec = _two_branch_spec(n_in=4, hidden=width, n_out=1)
    rng = np.random.default_rng(seed)
    P = 7
    x = rng.standard_normal((P, 4))
    y = rng.standard_normal((P, 1))
    active = np.array([1, 1, 1, 0, 1, 1, 1.0])
    return spec, single_pathway_task(spec, "u1>u2", x, y, active=active), x[active > 0], y[active > 0]


@pytest.mark.parametrize("width", [3, 12])
def test_two_edge_pathway_matches_exact_linear_theory(width):
    """Only pathway u1>u2 (two edges, width N) is open: it is the one-hidden-layer linear net of docs/theory.md §4 on the
    effective dataset (the 6 open examples) with u1 = W (standard 1/√N0, σ_w²), u2 = aᵀ (mean-field 1/N, σ_a²) and
    likelihood variance T/N.  E[aᵀa/N] and E[f] must equal the exact finite-N quadrature of theory.linear."""
    spec, task, xe, ye = _two_edge_setup(width)
    T, sa2, sw2 = 0.2, 1.0, 0.8
    kw = dict(spec=spec, edge_scale={"u1": "standard", "u2": "meanfield"}, sigma2={"u1": sw2, "u2": sa2},
              temperature=T / width)
    idata = bnnzoo.sample(gated, task, num_chains=2, num_warmup=500, num_samples=1500, seed=4, progress=False,
                          dims=gated_dims(spec), **kw)
    post = azcompat.get_group(idata, "posterior")
    A = post["W_u2"].values  # (chain, draw, 1, N) = aᵀ
    U = np.einsum("cdri,cdsi->cdrs", A, A) / width
    f = post["f"].values
    on = spec.pathway_gate(task.X, "u1>u2") > 0
    exact = linear_exact_m1(xe, ye, width=width, temperature=T, sigma_a2=sa2, sigma_w2=sw2)
    assert_mean_matches(U, exact.U, name=f"N={width}: U")
    assert_mean_matches(f[:, :, on, :], exact.f_train, name=f"N={width}: f")
    # the posterior-mean pathway map predicts the same outputs: E[W_p] x = E[f]
    Wp = pathway_maps(idata, spec)["u1>u2"]
    np.testing.assert_allclose(xe @ Wp.mean(axis=(0, 1)).T, f[:, :, on, :].mean(axis=(0, 1)), atol=1e-5)
    if width == 12:
        # The N → ∞ saddle point is O(1/N) away from the finite-N truth (≈ 16 % at N = 12): the exact quadrature
        # converges to it like 1/N, and the sampled U is on the finite-N side.
        sp = linear_saddle_point(xe, ye, temperature=T, sigma_a2=sa2, sigma_w2=sw2).U[0, 0]
        gaps = [abs(linear_exact_m1(xe, ye, width=n, temperature=T, sigma_a2=sa2, sigma_w2=sw2).U[0, 0] - sp)
                for n in (width, 4 * width, 16 * width)]
        assert gaps[1] < 0.35 * gaps[0] and gaps[2] < 0.35 * gaps[1]
        assert abs(U.mean() - exact.U[0, 0]) < 0.25 * abs(U.mean() - sp)


# ------------------------------------------------------------------------------------------------ built-in tasks
@pytest.fixture(scope="module")
def xor_idata():
    return bnnzoo.sample("gdln_xor", xor_task(hidden=3), num_chains=2, num_warmup=300, num_samples=300, seed=0,
                         progress=False, sampler="nuts")


def test_xor_solved_and_trace_plot(xor_idata):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    post = azcompat.get_group(xor_idata, "posterior")
    assert list(post["W_in_a"].dims) == ["chain", "draw", "ha", "x"]
    assert list(post["W_out_b"].dims) == ["chain", "draw", "out", "hb"]
    f = azcompat.get_group(xor_idata, "predictions")["f"].values.mean(axis=(0, 1))[:, 0]
    np.testing.assert_allclose(f, [-1, 1, 1, -1], atol=0.1)  # XoR in ±1 coding, computed by a linear net
    # each pathway's map is the linear rule of its half: W_a = (0, 1) (y = x₂), W_b = (0, −1) (y = −x₂)
    maps = pathway_maps(xor_idata)
    np.testing.assert_allclose(maps["in_a>out_a"].mean(axis=(0, 1)), [[0, 1]], atol=0.1)
    np.testing.assert_allclose(maps["in_b>out_b"].mean(axis=(0, 1)), [[0, -1]], atol=0.1)
    azcompat.plot_trace(xor_idata, var_names=["W_out_a", "mse"], coords={"ha": [0]})
    plt.close("all")


@pytest.mark.slow
def test_routing_generalizes_to_untrained_pathways():
    spec = routing_spec(hidden=6)
    task = routing_task(hidden=6)
    idata = bnnzoo.sample("gdln_routing", task, spec=spec, temperature=0.1, num_chains=2, num_warmup=200,
                          num_samples=200, seed=0, progress=False, sampler="nuts")
    gen = pathway_generalization(idata)
    assert len(gen) == 21 and not any(g.trained for g in gen)
    assert max(g.mse / g.baseline for g in gen) < 0.1
    spectra = {s.pathway: s for s in pathway_spectra(idata)}
    s = spectra["in0>shared>out0"]  # trained pathway: posterior map ≈ least-squares map Yᵢᵀ
    np.testing.assert_allclose(s.sv_mean_map, s.sv_ls, rtol=0.1)


# ------------------------------------------------------------------------------------------------ dynamics
def test_mode_strength_closed_form_matches_ode():
    from scipy.integrate import solve_ivp

    s, lam, u0, tau = 1.3, 0.7, 1e-3, 2.0
    t = np.linspace(0, 15, 31)
    sol = solve_ivp(lambda _, u: 2 * u * (s - lam * u) / tau, (0, 15), [u0], t_eval=t, rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(mode_strength(s, t, depth=2, u0=u0, tau=tau, lam=lam), sol.y[0], rtol=1e-6,
                               atol=1e-10)
    # D = 3 integrator vs the implicit solution t(u) = τ ∫ du / (3 u^{4/3} (s − λu)) at a few points
    u = mode_strength(s, t, depth=3, u0=u0, tau=tau, lam=lam)
    from scipy.integrate import quad

    for k in (5, 10, 20):
        tk = quad(lambda v: tau / (3 * v ** (4 / 3) * (s - lam * v)), u0, u[k], limit=200)[0]
        assert abs(tk - t[k]) < 1e-4 * max(1, t[k])


@pytest.mark.parametrize("depth", [2, 3])
def test_gradient_descent_matches_closed_form(depth):
    nodes = [("x", 3)] + [(f"h{k}", 4) for k in range(depth - 1)] + [("out", 2)]
    edges = [(f"e{k}", nodes[k][0], nodes[k + 1][0]) for k in range(depth)]
    spec = GatedSpec("chain", nodes=tuple(nodes), edges=tuple(edges))
    rng = np.random.default_rng(0)
    P = 6
    x = math.sqrt(P) * np.linalg.qr(rng.standard_normal((P, 3)))[0]  # whitened: xᵀx/P = I
    task = single_pathway_task(spec, spec.pathways[0].name, x, rng.standard_normal((P, 2)))
    name = spec.pathways[0].name
    eff = effective_dataset(spec, task.X, task.Y, name)
    gd = gdln_gradient_descent(spec, task.X, task.Y, steps=3000, lr=0.005, record_every=100,
                               init=decoupled_init(spec, name, eff.Syx, u0=1e-2))
    cf = deep_linear_trajectory(eff.Syx, eff.Sx, gd.t, depth=depth, u0=1e-2)
    np.testing.assert_allclose(gd.sv[name], cf.u, atol=5e-3)
    np.testing.assert_allclose(gd.maps[name][-1], eff.ls_map, atol=5e-3)
    traj = pathway_trajectories(spec, task.X, task.Y, gd.t, u0=1e-2)
    np.testing.assert_allclose(traj[name].u, cf.u)
