"""Verdict words that say no more than was tested (bnnzoo.diagnostics.analyses, report), on known arrays."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import xarray as xr

from bnnzoo import azcompat
from bnnzoo._record import nan_as_na
from bnnzoo.diagnostics import diagnose
from bnnzoo.diagnostics.analyses import ANALYSES, branches_and_codes
from bnnzoo.diagnostics.branches import BranchResult
from bnnzoo.diagnostics.codes import codes_from_preactivations
from bnnzoo.diagnostics.compare import Agreement, TheoryComparison
from bnnzoo.diagnostics.report import theory_verdict
from bnnzoo.models import list_entries


def _agreement(q, tol, within=True):
    return Agreement(quantity=q, theory="theory.x", kind="difference", sampled=1.0, sampled_se=0.1, predicted=1.0,
                     difference=0.0, difference_se=0.1, max_z=0.0, tolerance=tol, within=within)


def _comparison(*agreements, skipped=None):
    return TheoryComparison(theories=("theory.x",), skipped=skipped or {}, agreements=tuple(agreements),
                            all_within=all(a.within for a in agreements))


def test_theory_verdict_counts_only_tested_comparisons():
    # every comparison reported only (the three-layer NNGP case: tolerance inf) → not tested, naming them
    v = theory_verdict(_comparison(_agreement("alignment_vs_NNGP", math.inf), _agreement("f_test", math.inf)))
    assert v.startswith("not tested: 2 comparison(s) reported only") and "alignment_vs_NNGP" in v
    # nothing applies → not tested with the reasons
    assert theory_verdict(_comparison(skipped={"theory.gp": "no NNGP kernel"})) == "not tested: theory.gp: no NNGP kernel"
    # tested ones decide; the reported-only ones are counted, never decide
    assert theory_verdict(_comparison(_agreement("U", 0.1), _agreement("A", math.inf, within=False))) == \
        "agrees (1 tested, 1 reported only)"
    assert theory_verdict(_comparison(_agreement("U", 0.1, within=False), _agreement("A", math.inf))) == \
        "disagrees (1 tested, 1 reported only)"
    assert theory_verdict(_comparison(_agreement("U", 0.1))) == "agrees"
    assert "reported, not tested" in _agreement("A", math.inf).summary()[0]


def test_no_selective_units_give_no_scheme():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), 20)
    z = rng.normal(size=(2, 30, 10, 60))        # pure noise: class means of order 1/√20, below the 3-σ cut
    cr = codes_from_preactivations(z, labels, 3)
    assert cr.n_selective == 0 and cr.scheme == {} and cr.verdict == "no selective units"
    assert "no selective units (0/20): no coding scheme" in cr.summary()[0]
    z[:, :, :, labels == 1] += 5.0              # every unit now fires on class 1 only: selective, code 010
    z[:, :, :, labels != 1] -= 5.0
    cr = codes_from_preactivations(z, labels, 3)
    assert cr.n_selective == 20 and cr.scheme == {"010": 20}


def _rundata(m: int, seed: int = 0):
    """A sigmoidal run of known arrays, as the InferenceData bnnzoo.sample would write (posterior a and W1, X,
    labels, y and the provenance)."""
    rng = np.random.default_rng(seed)
    C, D, N, P = 2, 120, 6, 12
    labels = np.arange(P) % m
    X = np.eye(P)
    W1 = rng.normal(size=(C, D, N, P))
    a = rng.normal(size=(C, D, N, m))
    Y = np.eye(m)[labels] if m > 1 else rng.normal(size=(P, 1))
    lead = ("chain", "draw")
    post = xr.Dataset({"a": (lead + ("neuron", "class"), a), "W1": (lead + ("neuron", "input"), W1)})
    kw = dict(activation="sigmoid", depth=1, width=N, readout="nonlazy", temperature=0.01, sigma_a2=1.0,
              sigma_w2=1.0)
    return azcompat.make_idata({"posterior": post,
                                "constant_data": xr.Dataset({"X": (("point", "input"), X),
                                                             "labels": (("point",), labels)}),
                                "observed_data": xr.Dataset({"y": (("point", "class"), Y)})},
                               attrs={"bnnzoo_config": json.dumps({"model": "sigmoidal", "model_kwargs": kw})})


def test_a_regression_task_gets_no_class_code_headline():
    rep = diagnose(_rundata(m=1), theory=False, kernels=False)
    assert rep.coding_scheme == "n/a"
    assert "branches_and_codes" not in rep.numbers
    assert diagnose(_rundata(m=2), theory=False, kernels=False).coding_scheme in ("analog", "redundant", "sparse")


def test_branches_and_codes_name_the_codes_that_share_a_branch():
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(3), 10)
    C, D, N = 1, 20, 12
    z = rng.normal(size=(C, D, N, 30)) * 0.1
    pattern = {0: (5, 5, -5), 1: (5, -5, -5), 2: (-5, 5, 5)}     # codes 110, 100, 011 by unit thirds
    for u in range(N):
        z[:, :, u] += np.array(pattern[u % 3])[labels]
    cr = codes_from_preactivations(z, labels, 3)
    assert set(cr.scheme) == {"110", "100", "011"}
    labels_b = np.array([0 if u % 3 in (0, 1) else 1 for u in range(N)])   # codes 110 and 100 share branch 0
    br = BranchResult(n_branches=2, k_tried=(1, 2), silhouette=0.5, n_units=N, codes=("110", "011"),
                      centres=np.zeros((2, 3)), masses=np.array([2 / 3, 1 / 3]), mass_se=np.zeros(2),
                      spreads=np.zeros(2), jitter=np.zeros(2), bic=np.zeros(2), labels=labels_b,
                      unit_chain=np.zeros(N, int), unit_neuron=np.arange(N))
    text = branches_and_codes(br, cr)
    assert text.startswith("3 code(s) in z1") and "2 readout branch(es)" in text
    assert "codes 100, 110 share branch 0" in text and "spreads" not in text
    labels_b = np.array([u % 3 if u % 3 else (u // 3) % 2 * 3 for u in range(N)])   # code 110 over branches 0, 3
    br = BranchResult(n_branches=4, k_tried=(1, 4), silhouette=0.5, n_units=N, codes=("110", "100", "011", "110"),
                      centres=np.zeros((4, 3)), masses=np.full(4, 0.25), mass_se=np.zeros(4), spreads=np.zeros(4),
                      jitter=np.zeros(4), bic=np.zeros(4), labels=labels_b, unit_chain=np.zeros(N, int),
                      unit_neuron=np.arange(N))
    assert branches_and_codes(br, cr).endswith("4 readout branch(es); code 110 spreads over branches 0, 3")


def test_nan_prints_as_na():
    assert nan_as_na("R̂ nan, silhouette nan (k 1), -nan") == "R̂ n/a, silhouette n/a (k 1), n/a"
    assert nan_as_na("nanometre 1.5") == "nanometre 1.5"


def test_every_entry_declares_a_known_analysis():
    for entry in list_entries():
        assert entry.analysis in ANALYSES, entry.name
        if entry.analysis != "fcn":
            assert entry.units, f"{entry.name}: a unit-layer analysis needs ZooEntry.units"
    with pytest.raises(ValueError, match="unknown zoo entry"):
        diagnose(_rundata(m=2), entry="no_such_entry")
