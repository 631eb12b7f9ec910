"""bnnzoo.theory.critical_temperature: the mean-field T_c of the sigmoidal redundant code on the toy task (P = 16,
the ``--size ci`` grid of ``reproduce/critical_temperature.py``: n_grid = 25, bisection tolerance 8e-3).

Independent references.  The solutions at the two ends of the bisection bracket, solved here from scratch (the
solver's own continuation from high T, not the bisection's path), must have a coding branch other than 111 with mass
> 10⁻³ below and the single branch 111 above; the bracket's width is fixed by the grid and the number of halvings;
a second temperature grid must give an overlapping bracket (both hold the same T_c).  Far above T_c (T = 0.25 ≈ 5 T_c)
the mean field has one branch, code 111; far below (T = 0.02) the redundant code, with the 101 and 110 branches of
equal mass (classes 2 and 3 have the same size; allowed 5e-3, the solver's mass resolution at this grid).  The
grid-free ascent returns to the solver's modes from perturbed starts and names their codes as the solver does (mean
activation above the prior's ½).
"""

from __future__ import annotations

import numpy as np
import pytest

from bnnzoo.theory.critical_temperature import (MIN_MASS, exact_ascent, is_redundant, meanfield_critical_temperature,
                                                redundant_mass, toy_meanfield)
from bnnzoo.theory.schemes import mass_per_code

P, N_GRID, TOL, TEMPS = 16, 25, 8e-3, (0.02, 0.25)


def _masses(r):
    return mass_per_code(r.branch_code, r.branch_mass)


def _by_symmetry(masses):
    """The masses with the exchangeable codes 101 and 110 as a sorted pair: classes 2 and 3 have the same size and
    target, so which of the two partners gets a basin's boundary cells is a tie broken by rounding (seen: 0.16738
    and 0.16778 swapped between two solves of the same temperature)."""
    out = {k: v for k, v in masses.items() if k not in ("101", "110")}
    out["101|110 smaller"], out["101|110 larger"] = sorted([masses.get("101", 0.0), masses.get("110", 0.0)])
    return out


@pytest.fixture(scope="module")
def tc():
    return meanfield_critical_temperature(P, TEMPS, n_grid=N_GRID, tol=TOL)


def test_redundant_mass_and_threshold():
    assert redundant_mass({"011": 0.3, "101": 0.25, "110": 0.25, "111": 0.2}) == pytest.approx(0.8, abs=1e-12)
    assert redundant_mass({"111": 1.0}) == 0.0 and redundant_mass({}) == 0.0
    assert MIN_MASS == 1e-3
    assert not is_redundant({"011": 5e-4, "111": 0.9995}) and is_redundant({"011": 2e-3, "111": 0.998})
    assert not is_redundant({"011": 2e-3}, min_mass=0.01)


def test_far_above_and_below_tc():
    hot = toy_meanfield(P, 0.25, n_grid=N_GRID)
    assert hot.branch_code == ("111",) and hot.branch_mass[0] == pytest.approx(1.0, abs=1e-3)
    assert redundant_mass(_masses(hot)) == 0.0 and not is_redundant(_masses(hot))
    cold = toy_meanfield(P, 0.02, n_grid=N_GRID)
    ms = _masses(cold)
    assert set(ms) == {"011", "101", "110", "111"} and redundant_mass(ms) > 0.5 and is_redundant(ms)
    assert abs(ms["101"] - ms["110"]) < 5e-3, ms      # classes 2 and 3 have the same size
    assert sum(ms.values()) + cold.unassigned_mass == pytest.approx(1.0, abs=1e-9)


def test_exact_ascent_returns_to_the_solver_modes():
    r = toy_meanfield(P, 0.02, n_grid=N_GRID)
    for mode, code, act in zip(r.branch_mode, r.branch_code, r.branch_activation):
        x = exact_ascent(r, np.asarray(mode) + np.array([0.05, -0.05, 0.03]))
        np.testing.assert_allclose(x["end"], mode, atol=1e-5)
        assert x["code"] == code == "".join("1" if v > 0.5 else "0" for v in act)
        assert x["start"] == pytest.approx(list(np.asarray(mode) + [0.05, -0.05, 0.03]))


def test_grid_not_bracketing_tc_is_an_error():
    """Both temperatures far above the mean-field T_c (≈ 0.05 at P = 16): add lower ones; both below: add higher."""
    with pytest.raises(ValueError, match="does not bracket the mean-field T_c at P = 16: add temperatures below"):
        meanfield_critical_temperature(P, (0.2, 0.3), n_grid=N_GRID)
    with pytest.raises(ValueError, match="does not bracket the mean-field T_c at P = 16: add temperatures above"):
        meanfield_critical_temperature(P, (0.01, 0.02), n_grid=N_GRID)


def test_tc_bracket_against_direct_evaluation(tc):
    assert tc["P"] == P and tc["tol"] == TOL and tc["n_grid"] == N_GRID
    assert tc["hi"] - tc["lo"] <= TOL + 1e-12 and tc["lo"] < tc["T_c"] < tc["hi"]
    assert tc["T_c"] == pytest.approx(0.5 * (tc["lo"] + tc["hi"])) and tc["T_c_err"] == pytest.approx(
        0.5 * (tc["hi"] - tc["lo"]))
    # bisection of [0.02, 0.25]: the smallest number of halvings that brings the width under the tolerance
    steps = int(np.ceil(np.log2((TEMPS[1] - TEMPS[0]) / TOL)))
    assert tc["steps"] == steps and tc["hi"] - tc["lo"] == pytest.approx((TEMPS[1] - TEMPS[0]) / 2 ** steps)
    # the two ends solved from scratch: a coding branch other than 111 below T_c, none above
    below = _masses(toy_meanfield(P, tc["lo"], n_grid=N_GRID))
    above = _masses(toy_meanfield(P, tc["hi"], n_grid=N_GRID))
    assert redundant_mass(below) > 1e-3, below
    assert set(above) == {"111"} and above["111"] == pytest.approx(1.0, abs=1e-3), above
    assert _by_symmetry(tc["lo_masses"]) == pytest.approx(_by_symmetry(below), abs=1e-6)
    assert _by_symmetry(tc["hi_masses"]) == pytest.approx(_by_symmetry(above), abs=1e-6)
    # the grid-free check: exact ascent from the vanished modes ends on 111 at the upper end
    assert tc["hi_check"]["confirmed"] and len(tc["hi_check"]["ascents"]) >= 1
    assert {x["code"] for x in tc["hi_check"]["ascents"]} == {"111"}
    assert sorted(tc["lo_modes"]) == sorted(below)
    # the curve on the grid: redundant at the lowest temperature, code 111 only at the highest
    assert [c["T"] for c in tc["curve"]] == list(TEMPS)
    assert tc["curve"][0]["redundant_mass"] > 0.5 and set(tc["curve"][-1]["masses"]) == {"111"}


def test_tc_does_not_depend_on_the_grid(tc):
    other = meanfield_critical_temperature(P, (0.03, 0.045, 0.06, 0.1), n_grid=N_GRID, tol=2e-3)
    assert other["hi"] - other["lo"] <= 2e-3 + 1e-12
    assert max(tc["lo"], other["lo"]) < min(tc["hi"], other["hi"]), (tc["lo"], tc["hi"], other["lo"], other["hi"])
