"""reproduce/ym_sweep.py: the mean-field search finds the known y− = ½ solution (docs/theory.md §5), its action has the
self-consistency equations as gradient, and the script runs at ``--size ci``."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "reproduce" / "ym_sweep.py"


@pytest.fixture(scope="module")
def ym():
    spec = importlib.util.spec_from_file_location("ym_sweep", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_search_finds_the_known_half_solution(ym):
    # docs/theory.md §5 check (P = 40, y− = ½, T → 0): modes (−0.4, 1.6, 1.6) and its two class permutations with mass
    # ≈ 0.31 each (codes 011/101/110), and (1.07, 1.33, 1.33) with mass ≈ 0.06 (code 111; its basin mean)
    pt = ym.search_point(40, 0.5, 0.0, [], np.random.default_rng(1), 1, 21, (-3.5, 4.5))
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


def test_action_gradient_is_the_self_consistency_residual(ym):
    # central differences of S against P_c × (E[a m1] + Tλ − y) computed independently by the library's residual
    c = ym.free_energy_checks(P=20, y_neg=0.3, T=0.02, seed=3)
    assert c["gradient_vs_central_difference"] < 1e-6
    assert c["gradient_vs_library_residual"] < 1e-10
    assert c["linear_logz_max_error"] < 1e-6  # grid log z of the linear net vs −½ log det(I − σ_a² Σ P_c λ_c λ_cᵀ)
    assert c["hessian_min_eigenvalue"] > 0


def test_script_runs_at_ci_size_and_refuses_to_overwrite(tmp_path):
    cmd = [sys.executable, str(SCRIPT), "--size", "ci", "--part", "meanfield", "--out", str(tmp_path)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads((tmp_path / "ym_sweep.meanfield.json").read_text())
    assert out["meta"]["complete"] and all(len(p["solutions"]) == 1 for p in out["sweeps"])
    assert "Mean field" in (tmp_path / "ym_sweep.md").read_text()
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and again.stderr.startswith("ym_sweep: error:") and "--overwrite" in again.stderr
    assert "Traceback" not in again.stderr
