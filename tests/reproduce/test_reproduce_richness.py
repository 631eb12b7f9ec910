"""The ``richness`` experiment (reproduce/richness.py): the γ-family's equivalence with the non-lazy model at γ = 1, argument errors, overwrite
refusal, and a ``--size ci`` run checked against references computed here.

* Equivalence (exact): at γ = 1 the family written through the lazy readout (σ_a² = σ_a0²/N, temperature T/N) and
  the non-lazy model (σ_a0², T) give the same outputs for readouts mapped as b = √N a (to float32 rounding, relative
  1e-5), and log joint densities that differ by the constant ½ N m log N, the Jacobian of that map (absolute 1e-2 on
  log densities of size ~10⁴, float32); at γ = ½ the family's keywords are the lazy model's defaults.
* Lazy references (fast): D_LR of the closed-form NNGP kernel on orthogonal inputs is 1 − √(r/(P−1)) (to 1e-9);
  random prior features approach it at large width (within 0.01 at N = 100 P).
* ``--size ci`` (marked slow: it samples two nets; sigmoidal, N = P = 12, γ = ½ and 1, 4 chains): at the rich end
  D_LR lies within 0.05 of D_LR of the targets themselves (features collapsed onto the outputs with the targets' own
  anisotropy, a closed form of the targets; theory §7: ≈ 0) and NC1 < 0.05; at the lazy end the posterior feature
  kernel keeps CKA > 0.85 with the closed-form NNGP prior kernel (lazy features are the prior's) and D_LR exceeds the
  rich end's by more than 0.2; the stored ends of the sweep are those of the entries.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tests.reproduce.reproduce_scripts import load_script

R = load_script("richness")
PROG = f"python -m reproduce {R.NAME}"


def _main(*args):
    return R.C.run_main(PROG, R.run, list(args))


def test_gamma_one_is_the_nonlazy_model():
    from numpyro.infer.util import log_density

    import bnnzoo
    from bnnzoo.models.fcn import fcn, fcn_forward

    N, P, T = 16, 12, 0.01
    task = bnnzoo.toy_task(P=P, N0=P + 20, y_pos=1.0, y_neg=0.5)
    s2a0 = R.sigma_a02(1.0, P)
    assert s2a0 == pytest.approx(1.0 / P)
    kw_family = dict(width=N, activation="sigmoid", **R.family_kwargs(1.0, N, T, s2a0))
    kw_nonlazy = dict(width=N, activation="sigmoid", readout="nonlazy", sigma_a2=s2a0, temperature=T)
    rng = np.random.default_rng(1)
    diffs = []
    for _ in range(3):
        W1 = rng.standard_normal((N, P + 20)).astype(np.float32)
        a = (rng.standard_normal((N, 3)) * math.sqrt(s2a0 / N)).astype(np.float32)
        b = R.nonlazy_readout(a, N).astype(np.float32)
        f1 = np.asarray(fcn_forward(task.X, {"W1": W1, "a": a}, **kw_family))
        f2 = np.asarray(fcn_forward(task.X, {"W1": W1, "a": b}, **kw_nonlazy))
        np.testing.assert_allclose(f1, f2, rtol=1e-5, atol=1e-7)
        l1, _ = log_density(fcn, (task.X, task.Y), kw_family, {"W1": W1, "a": a})
        l2, _ = log_density(fcn, (task.X, task.Y), kw_nonlazy, {"W1": W1, "a": b})
        diffs.append(float(l1) - float(l2))
    np.testing.assert_allclose(diffs, 0.5 * N * 3 * math.log(N), atol=1e-2)
    lazy = R.family_kwargs(0.5, N, T, R.sigma_a02(0.5, P))
    assert lazy == dict(readout="lazy", sigma_a2=1.0, temperature=T)


def test_lazy_references_closed_form():
    """On orthogonal inputs the NNGP kernel is c 11ᵀ + d I, centred d H: its D_LR is 1 − √(r/(P − 1)) exactly; D_LR
    of random features at width N lies above it (finite-width fluctuations) and tends to it as N grows."""
    import bnnzoo
    from bnnzoo.diagnostics.kernels import prior_kernels

    P = 20
    task = bnnzoo.toy_task(P=P, N0=P + 20, y_pos=1.0, y_neg=0.5)
    X, Y = np.asarray(task.X, float), np.asarray(task.Y, float)
    K = prior_kernels(X, "sigmoid", 1)[0][0]
    assert R.kernel_dlr(K, Y) == pytest.approx(1 - math.sqrt(2 / (P - 1)), abs=1e-9)
    narrow, se1 = R.prior_feature_dlr(X, Y, "sigmoid", 20, draws=100)
    wide, se2 = R.prior_feature_dlr(X, Y, "sigmoid", 2000, draws=20)
    assert narrow > wide + 3 * math.hypot(se1, se2)
    assert abs(wide - R.kernel_dlr(K, Y)) < 0.01          # O(P/N) = 1 % finite-width excess


def test_crossover_interpolates():
    c = R.crossover([0.5, 0.6, 0.7, 0.8], [0.8, 0.7, 0.3, 0.0])
    assert c["level_half"] == pytest.approx(0.4)
    assert c["gamma_half"] == pytest.approx(0.675)
    assert c["gamma_quarter"] == pytest.approx(0.625)     # level 0.6, between γ = 0.6 (0.7) and 0.7 (0.3)
    assert c["gamma_three_quarter"] == pytest.approx(0.7 + 0.1 / 3)
    assert c["width"] == pytest.approx(0.7 + 0.1 / 3 - 0.625)
    assert R.crossover([0.5, 1.0], [0.5, 0.5])["gamma_half"] is None
    assert R.crossover([0.5, 0.6, 0.7, 0.8], [0.8, 0.7, 0.3, 0.0], ends=(1.0, 0.0))["gamma_half"] == pytest.approx(
        0.65)                                              # level 0.5, between γ = 0.6 (0.7) and 0.7 (0.3)


@pytest.mark.parametrize("args,words", [
    (["--nets", "tanh"], ["--nets", "sigmoidal, relu, linear"]),
    (["--widths", "4"], ["--widths", ">= 8"]),
    (["--gammas", "0.4,1"], ["--gammas", "[0.5, 1]"]),
    (["--gammas", "x"], ["--gammas", "[0.5, 1]"]),
    (["--temperature", "-1"], ["--temperature", "positive"]),
    (["--sigma-a02", "0"], ["--sigma-a02", "interp"]),
    (["--samples", "1"], ["--samples", ">= 2"]),
    (["--seed", "-1"], ["--seed", ">= 0"]),
])
def test_bad_argument_one_line_error(tmp_path, capsys, args, words):
    assert _main("--size", "ci", "--out", str(tmp_path), *args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{PROG}: error: ") and err.count("\n") == 1, err
    for w in words:
        assert w in err
    assert not list(tmp_path.iterdir())


def test_refuses_to_overwrite(tmp_path, capsys):
    old = tmp_path / "richness_ci.json"
    old.write_text("old")
    assert _main("--size", "ci", "--out", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "--overwrite" in err and err.count("\n") == 1, err
    assert old.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["richness_ci.json"]


@pytest.mark.slow
def test_ci_run_against_references(tmp_path):
    assert _main("--size", "ci", "--gammas", "0.5,1", "--out", str(tmp_path)) == 0
    res = json.loads((tmp_path / "richness_ci.json").read_text())
    assert [p.name for p in tmp_path.iterdir()] == ["richness_ci.json"]     # JSON only
    assert res["populations_certified"] is False
    ref = res["references"]["sigmoidal_12"]
    lazy, rich = sorted(res["entries"], key=lambda e: e["gamma"])
    assert (lazy["gamma"], rich["gamma"]) == (0.5, 1.0)
    for e in (lazy, rich):
        assert len(e["d_lr_per_chain"]) == 4 and e["health"]["n_chains"] == 4
        assert e["health"]["status"] in ("equilibrated", "relaxing", "failed")
    assert abs(rich["d_lr"] - ref["collapsed"]) < 0.05, (rich["d_lr"], ref["collapsed"])
    assert rich["nc1"] < 0.05
    assert lazy["cka_prior"] > 0.85
    assert lazy["d_lr"] > rich["d_lr"] + 0.2
    (end,) = res["ends"]
    assert (end["net"], end["N"], end["n_entries"]) == ("sigmoidal", 12, 2)
    assert (end["d_lr_lazy"], end["d_lr_rich"], end["nc1_rich"]) == (lazy["d_lr"], rich["d_lr"], rich["nc1"])
    assert end["n_equilibrated"] == sum(e["health"]["status"] == "equilibrated" for e in (lazy, rich))
