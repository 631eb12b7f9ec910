"""bnnzoo.diagnostics.report: ``diagnose`` stores its results in the InferenceData and they survive NetCDF (on a
real, sampled run: the sampling fixtures are in tests/conftest.py); and ``bnnzoo.diagnose`` on every non-FCN zoo
entry: one tiny NUTS run per entry family (2 chains × 30 draws), the report's numbers against something known
exactly, verdict keys, JSON / NetCDF round trips and the figures.

Known cases used:
* three-layer and attention nets with a huge likelihood variance (κ = 10⁴): the posterior is the prior up to
  O(1/κ), so first-layer overlaps m_j = W¹_j·w* are N(0, σ₁²), the NNGP and the sampled mean predictors both vanish,
  and the cosines of Q_hᵀK_h with w_q w_kᵀ have E[cos²] = 1/d² (rotation invariance of the prior);
* gdln_xor: each pathway is open on its own examples and shares no edge, so its posterior is the one-hidden-layer
  linear net of width n_hidden on them, whose moments :func:`bnnzoo.theory.linear.linear_exact_m1` gives exactly;
  the posterior-mean pathway map then follows from E[f] on two independent inputs.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.diagnostics import diagnose, load_report
from bnnzoo.diagnostics._data import mean_se
from bnnzoo.diagnostics.report import verdict_lines
from bnnzoo.plots import write_report
from bnnzoo.tasks.attention_task import attention_task
from bnnzoo.tasks.gated_tasks import xor_spec, xor_task
from bnnzoo.tasks.hermite import hermite_task

RUN = dict(num_chains=2, num_warmup=100, num_samples=100, progress=False, seed=0, max_tree_depth=7)


def _roundtrip(idata, rep, tmp_path, figures=True):
    """JSON and NetCDF round trips of the report, and (``figures``) write_report's files."""
    d = json.loads(rep.to_json())
    assert d["verdicts"] == rep.verdicts and d["family"] == "units"
    path = tmp_path / "run.nc"
    azcompat.to_netcdf(idata, path)
    back = load_report(azcompat.from_netcdf(path))
    assert back.verdicts == rep.verdicts and back.family == "units"
    assert set(back.clusters) == set(rep.clusters) and back.observables == rep.observables
    if not figures:
        return set()
    res = write_report({"run": idata}, tmp_path / "report")
    files = {p.rsplit("/", 1)[-1] for p in res["run"]["files"]}
    assert {"report.json", "report.txt", "units.png", "kernels.png", "order_parameters.png"} <= files
    return files


def test_three_layer_prior_case(tmp_path):
    task = hermite_task(d=4, P=10, P_test=40, seed=1)
    idata = bnnzoo.sample("three_layer_erf", task, record=("h1", "h2"), width1=6, width2=5, kappa=1e4, **RUN)
    rep = bnnzoo.diagnose(idata)
    for v in ("h1", "h2", "a"):
        assert f"ergodicity[{v}]" in rep.verdicts and f"symmetry[{v}]" in rep.verdicts
    assert {"codes[h1]", "codes[h2]", "theory"} <= set(rep.verdicts)
    assert rep.ergodicity["h1"].n_neurons == 6 and rep.ergodicity["h2"].n_neurons == 5
    # prior: the six first-layer units are i.i.d. Gaussians that NUTS mixes well
    assert rep.verdicts["ergodicity[h1]"] == "ergodic"
    # prior: m_j ~ N(0, σ₁² = 1); tolerance 5 Monte-Carlo standard errors (ESS-based) of the per-draw mean m²
    W1 = np.asarray(azcompat.get_group(idata, "posterior")["W1"].values)
    w = np.asarray(task.meta["w_star"])
    m2 = np.mean((W1 @ (w / np.linalg.norm(w))) ** 2, axis=-1)
    _, se = mean_se(m2)
    assert rep.observables["q_star"] == pytest.approx(float(m2.mean()), rel=1e-12)
    assert abs(rep.observables["q_star"] - 1.0) < 5 * float(se) + 0.05
    # prior: the NNGP predictor (κ = 10⁴) and the sampled mean predictor both have alignment ≈ 0
    ag = rep.theory.get("alignment_vs_NNGP")
    assert abs(ag.predicted) < 1e-3
    assert abs(ag.difference) < 5 * ag.difference_se + 1e-3
    assert rep.observables["specialists_chance"] == pytest.approx(6 * math.erfc(3 / math.sqrt(2)))
    files = _roundtrip(idata, rep, tmp_path)
    assert "theory.png" in files


def test_attention_prior_case(tmp_path):
    d = 4
    task = attention_task(L=2, d=d, P=8, P_test=30, seed=2)
    idata = bnnzoo.sample("softmax_attention", task, record=("attn",), context_length=2, heads=2, kappa=1e4, **RUN)
    rep = bnnzoo.diagnose(idata)
    assert {"ergodicity[heads]", "ergodicity[head_readout]", "symmetry[heads]", "symmetry[head_readout]",
            "theory"} <= set(rep.verdicts)
    assert "codes[heads]" not in rep.verdicts  # one attention weight per token: no single sign per class
    assert rep.verdicts["theory"].startswith("not tested: theory.gp") and "theory.gp" in rep.theory.skipped
    # prior: E[cos²(Q_hᵀK_h, w_q w_kᵀ)] = 1/d² = 0.0625 and E[|V_h w_v|²/|V_h|²] = 1/d = 0.25; the per-draw sd of
    # the cosine is ≤ 1/d, over 2 heads × 60 correlated draws (ESS ≥ 10 per head) the mean |cos| stays below
    # √(E cos²) + 3·(1/d)/√20 ≈ 0.42
    assert np.mean(rep.observables["qk_cosine_per_head"]) < 1 / d + 3 / d / math.sqrt(20)
    assert rep.observables["value_overlap_prior"] == pytest.approx(1 / d)
    assert abs(np.mean(rep.observables["value_overlap_per_head"]) - 1 / d) < 0.12
    assert abs(rep.observables["alignment"]) < 5 * rep.observables["alignment_sd"] / math.sqrt(10) + 1e-3
    _roundtrip(idata, rep, tmp_path)


def test_gdln_xor_exact_pathway_theory(tmp_path):
    from bnnzoo.diagnostics.alignment import pathway_maps
    from bnnzoo.theory.linear import linear_exact_m1

    hidden, T = 3, 0.2
    task = xor_task(hidden=hidden, repeats=2, noise_std=0.3, seed=0)
    spec = xor_spec(hidden)
    idata = bnnzoo.sample("gdln_xor", task, record=("h",), spec=spec, temperature=T,
                          target_accept=0.95,
                          **RUN)
    rep = bnnzoo.diagnose(idata)
    assert {"ergodicity[ha]", "ergodicity[hb]", "symmetry[ha]", "codes[ha]", "codes[hb]"} <= set(rep.verdicts)
    # a linear network: the hidden units are ergodic (docs/theory.md §3)
    assert rep.verdicts["ergodicity[ha]"] == rep.verdicts["ergodicity[hb]"] == "ergodic"
    assert rep.verdicts["theory"] == "agrees"
    assert len(rep.theory.agreements) == 4  # U and E[f] for each of the two pathways
    # pathway singular values against the exact posterior-mean map: for pathway a, E[f] = E[W_p] x on the two
    # distinct inputs it sees, so E[W_p] = (pinv(X_p) E[F])ᵀ; tolerance 4 MC standard errors of the sampled map + 0.02
    maps = pathway_maps(idata)
    for p in spec.pathways:
        g = spec.pathway_gate(task.X, p) > 0
        x_in = spec.unpack(task.X)[0][g]
        th = linear_exact_m1(x_in, task.Y[g], width=hidden, temperature=T, sigma_a2=1.0, sigma_w2=1.0,
                             readout="lazy")
        W_exact = (np.linalg.pinv(x_in) @ th.f_train).T
        mu, se = mean_se(maps[p.name])
        sv = rep.observables[f"pathway[{p.name}]"]["sv_mean_map"][0]
        assert sv == pytest.approx(float(np.linalg.norm(mu)), rel=1e-9)
        assert abs(sv - np.linalg.norm(W_exact)) < 4 * float(np.linalg.norm(se)) + 0.02
        assert rep.theory.get(f"U[{p.name}]").predicted == pytest.approx(float(th.U[0, 0]))
    files = _roundtrip(idata, rep, tmp_path)
    assert "theory.png" in files


@pytest.mark.nets("sigmoid2")
def test_diagnostics_survive_netcdf(sampled, tmp_path):
    idata = azcompat.from_netcdf(sampled("sigmoid2", 0))
    rep = diagnose(idata)
    names = azcompat.group_names(idata)
    for g in ("diagnostics", "diagnostics_codes_z1", "diagnostics_codes_z2", "diagnostics_ergodicity_a",
              "diagnostics_branches", "diagnostics_kernels", "diagnostics_theory", "diagnostics_order_parameters"):
        assert g in names
    path = tmp_path / "run.nc"
    azcompat.to_netcdf(idata, path)
    back = load_report(path)
    assert back.verdicts == rep.verdicts
    assert back.codes["z2"].scheme == rep.codes["z2"].scheme
    np.testing.assert_allclose(back.kernels.K, rep.kernels.K)
    np.testing.assert_array_equal(back.codes["z1"].ids, rep.codes["z1"].ids)
    assert back.branches.outliers.n_outliers == rep.branches.outliers.n_outliers
    text = back.summary()
    assert "verdicts" in repr(back)
    first = next(i for i, ln in enumerate(text) if ln.startswith("verdicts"))
    block = text[first:text.index("— sampler health")]
    assert all(len(ln) <= 120 for ln in block) and " ".join(block).count("populations not certified") <= 1, block
    json.loads(rep.to_json())  # strict JSON


def test_verdict_lines_say_the_population_caveat_once_and_stay_short():
    """The demo's sigmoidal verdicts (healthy run, one start family) made one line of 249 characters with the
    caveat four times; a relaxing run's verdicts each point to the health record once."""
    nc = " (populations not certified)"
    healthy = {"ergodicity[a]": "broken", "ergodicity[z1]": "broken", "symmetry[a]": "broken",
               "symmetry[z1]": "broken", "codes[z1]": "frozen" + nc, "branches": "4 branches" + nc,
               "outliers": "none" + nc, "theory": "agrees"}
    lines = verdict_lines(healthy)
    assert lines[0].startswith("verdicts (codes[z1], branches, outliers: populations not certified): ")
    assert all(len(ln) <= 120 for ln in lines) and " ".join(lines).count("not certified") == 1, lines
    assert "branches 4 branches, outliers none, theory agrees" in " ".join(lines)
    relaxing = {k: "relaxing: see the sampler health" for k in healthy}
    lines = verdict_lines(relaxing)
    assert lines[0].startswith("verdicts: ") and all(len(ln) <= 120 for ln in lines), lines


@pytest.mark.slow
def test_codes_and_branches_agree_at_small_P():
    """The demo's sigmoidal net scaled down to N = P = 30 (T = 0.02, 4 chains × 300 draws after 300 warm-up): the
    codes section finds the four codes on (nearly) every unit — the 3·√(q/P_min) cut found 0 of 120 on this run —
    the readout branches are the four modes the mean field has (BIC components: 5), and both name the same codes."""
    task = bnnzoo.toy_task(P=30, y_neg=0.5, seed=0)
    idata = bnnzoo.sample("sigmoidal", task, num_chains=4, num_warmup=300, num_samples=300, progress=False, seed=0,
                          width=30, temperature=0.02, record=("z",))
    rep = diagnose(idata, kernels=False, store=False)
    cr, br, th = rep.codes["z1"], rep.branches, rep.theory
    assert cr.n_selective >= 0.9 * cr.n_units, cr
    assert rep.coding_scheme == "redundant"
    assert set(cr.codes(min_fraction=0.05)) == set(br.codes) == {"011", "101", "110", "111"}, (cr, br)
    assert br.n_branches == th["codes"].predicted == 4, br      # the mean field's branches at P = 30, T = 0.02
    assert th["codes"].within, th["codes"]
