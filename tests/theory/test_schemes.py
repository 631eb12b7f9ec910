"""bnnzoo.theory.schemes: the mean-field search finds the known y− = ½ solution (theory page §5), and the action has
the self-consistency equations as gradient and the linear net's closed form as its grid log z."""

import numpy as np

from bnnzoo.theory.schemes import action_checks, find_solutions, mass_per_code, scheme_name, toy_classes


def test_toy_classes_and_scheme_names():
    Y, sizes = toy_classes(10, -0.5)
    assert sizes.tolist() == [6, 2, 2] and Y.tolist() == [[1, -0.5, -0.5], [-0.5, 1, -0.5], [-0.5, -0.5, 1]]
    m = mass_per_code(["011", "101", "011", "111"], [0.2, 0.3, 0.1, 0.0004])
    assert set(m) == {"011", "101", "111"}
    np.testing.assert_allclose([m["011"], m["101"], m["111"]], [0.3, 0.3, 0.0004])
    assert scheme_name(m, 1e-3) == "011/101"


def test_search_finds_the_known_half_solution():
    # docs/theory.md §5 check (P = 40, y− = ½, T → 0): modes (−0.4, 1.6, 1.6) and its two class permutations with mass
    # ≈ 0.31 each (codes 011/101/110), and (1.07, 1.33, 1.33) with mass ≈ 0.06 (code 111; its basin mean)
    pt = find_solutions(40, 0.5, 0.0, [], np.random.default_rng(1), 1, 21, (-3.5, 4.5))
    # the action is convex: every converged start lands on one solution (a start may stall on the coarse search grid)
    assert pt["n_converged"] >= pt["n_starts"] - 1 and len(pt["solutions"]) == 1
    s = pt["solutions"][0]
    assert s["residual"] < 1e-8
    by_code = dict(zip(s["codes"], zip(s["modes"], s["masses"], s["means"])))
    assert set(by_code) == {"011", "101", "110", "111"}
    mode = by_code["011"][0]
    np.testing.assert_allclose(mode, [-0.4, 1.6, 1.6], atol=0.08)
    for c in ("011", "101", "110"):
        assert abs(by_code[c][1] - 0.315) < 0.02
    np.testing.assert_allclose(by_code["111"][2], [1.07, 1.33, 1.33], atol=0.03)  # the quoted point is the basin mean
    assert abs(by_code["111"][1] - 0.06) < 0.01


def test_action_gradient_is_the_self_consistency_residual():
    # central differences of S against P_c × (E[a m1] + Tλ − y) computed independently by the library's residual
    c = action_checks(P=20, y_neg=0.3, T=0.02, seed=3)
    assert c["gradient_vs_central_difference"] < 1e-6
    assert c["gradient_vs_library_residual"] < 1e-10
    assert c["linear_logz_max_error"] < 1e-6  # grid log z of the linear net vs −½ log det(I − σ_a² Σ P_c λ_c λ_cᵀ)
    assert c["hessian_min_eigenvalue"] > 0
