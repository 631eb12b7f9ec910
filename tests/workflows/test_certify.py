"""Certification: population observables per draw, start families, the comparison and its error model."""

import copy
import json
import math

import numpy as np
import pytest
import xarray as xr

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.diagnostics.populations import KINDS, ObservableInfo, population_observables
from bnnzoo.inference.health import sampler_health
from bnnzoo.workflows.certify import (ALPHA, FamilyUnavailable, certify_run, check_certify, combine_families,
                                      compare_families, meanfield_start)
from bnnzoo.models.zoo import START_FAMILIES
from bnnzoo.tasks import toy_task
from bnnzoo.inference import load_store

CONTRACT_KEYS = {"families", "agree", "disagreements", "observables", "error_model"}


# ------------------------------------------------------------------------------------------------ synthetic runs
def _run(z, a, labels, *, model="sigmoidal", activation="sigmoid", family=None, mse=None):
    """A run as bnnzoo.sample lays it out, from arrays: z (chain, draw, neuron, point), a (chain, draw, neuron,
    class)."""
    C, D, N, P = z.shape
    m = a.shape[-1]
    post = xr.Dataset({"z1": (("chain", "draw", "neuron", "point"), z),
                       "a": (("chain", "draw", "neuron", "class"), a),
                       "mse": (("chain", "draw"), np.zeros((C, D)) if mse is None else mse)},
                      coords={"chain": np.arange(C), "draw": np.arange(D)})
    if family is not None:
        post = post.assign_coords(family=("chain", np.asarray(family)))
    const = xr.Dataset({"X": (("point", "input"), np.eye(P)), "labels": (("point",), labels)})
    obs = xr.Dataset({"y": (("point", "class"), np.zeros((P, m)))})
    cfg = {"model": model, "model_kwargs": {"depth": 1, "activation": activation, "width": N}, "task": {}}
    return azcompat.make_idata({"posterior": post, "constant_data": const, "observed_data": obs},
                               {"bnnzoo_config": json.dumps(cfg)})


def _bits(code, m):
    return np.array([(code >> c) & 1 for c in range(m)])


def test_population_observables_known_answers():
    """Codes, readout sign patterns, outliers and the training error of a hand-built run."""
    labels = np.array([0, 0, 1, 2])
    # 2 chains, 2 draws, 4 units; unit codes (bit c: class-c mean > 0), as code ids
    codes = np.array([[[3, 3, 5, 6], [3, 5, 5, 7]], [[1, 1, 1, 1], [6, 6, 6, 6]]])   # (chain, draw, neuron)
    z = np.empty((2, 2, 4, 4))
    for c in range(2):
        for d in range(2):
            for i in range(4):
                z[c, d, i] = np.where(_bits(codes[c, d, i], 3)[labels] == 1, 1.0, -1.0)
    a = -np.ones((2, 2, 4, 3))
    a[0, :, 0] = [1.0, 1.0, -1.0]         # chain 0: one unit with signs ++- at both draws
    a[1, 1, 2] = [50.0, -1.0, 2.0]        # chain 1, draw 1: an outlier of class 0 (|a| far above N^(1/4) x median)
    mse = np.array([[0.1, 0.2], [0.3, 0.4]])
    pv = population_observables(_run(z, a, labels, mse=mse))
    np.testing.assert_allclose(pv["code_fraction[z1][110]"], [[0.5, 0.25], [0.0, 0.0]])   # code id 3 = "110"
    np.testing.assert_allclose(pv["code_fraction[z1][101]"], [[0.25, 0.5], [0.0, 0.0]])   # id 5
    np.testing.assert_allclose(pv["code_fraction[z1][011]"], [[0.25, 0.0], [0.0, 1.0]])   # id 6
    np.testing.assert_allclose(pv["code_fraction[z1][111]"], [[0.0, 0.25], [0.0, 0.0]])   # id 7
    np.testing.assert_allclose(pv["code_fraction[z1][100]"], [[0.0, 0.0], [1.0, 0.0]])    # id 1
    total = sum(v for k, v in pv.items() if k.startswith("code_fraction"))
    np.testing.assert_allclose(total, 1.0)
    np.testing.assert_allclose(pv["branch_mass[++-]"], [[0.25, 0.25], [0.0, 0.0]])
    np.testing.assert_allclose(pv["branch_mass[---]"], [[0.75, 0.75], [1.0, 0.75]])
    np.testing.assert_allclose(pv["branch_mass[+-+]"], [[0.0, 0.0], [0.0, 0.25]])
    np.testing.assert_array_equal(pv["outliers[0]"], [[0, 0], [0, 1]])
    np.testing.assert_array_equal(pv["outliers[1]"] + pv["outliers[2]"], 0)
    np.testing.assert_allclose(pv["mse"], mse)
    assert pv.info["code_fraction[z1][110]"] == ObservableInfo("fraction", 4)
    assert pv.info["mse"].kind == "network" and not pv.skipped


def test_one_output_on_two_classes_gives_codes_over_the_classes_and_outliers_by_sign():
    """The binary task (m = 1, targets ±1 on two classes): codes over the two classes, not over the one output, and
    an outlier's class is the one whose target has its readout's sign."""
    labels = np.array([0, 0, 1, 1])
    codes = np.array([[[1, 1, 2, 3]], [[2, 2, 2, 0]]])                       # (chain, draw, neuron): 10 10 01 11 ...
    z = np.empty((2, 1, 4, 4))
    for c in range(2):
        for i in range(4):
            z[c, 0, i] = np.where(_bits(codes[c, 0, i], 2)[labels] == 1, 1.0, -1.0)
    a = np.ones((2, 1, 4, 1))
    a[0, 0, 1] = 40.0                      # chain 0: an outlier with a > 0 (the y = +1 class 0)
    a[1, 0, 3] = -40.0                     # chain 1: an outlier with a < 0 (the y = −1 class 1)
    run = _run(z, a, labels, model="relu", activation="relu")
    y = np.where(labels == 0, 1.0, -1.0)[:, None]
    run = azcompat.set_groups(run, {"observed_data": xr.Dataset({"y": (("point", "class"), y)})})
    pv = population_observables(run)
    np.testing.assert_allclose(pv["code_fraction[z1][10]"], [[0.5], [0.0]])
    np.testing.assert_allclose(pv["code_fraction[z1][01]"], [[0.25], [0.75]])
    np.testing.assert_allclose(pv["code_fraction[z1][11]"], [[0.25], [0.0]])
    np.testing.assert_allclose(pv["code_fraction[z1][00]"], [[0.0], [0.25]])
    np.testing.assert_array_equal(pv["outliers[0]"], [[1], [0]])
    np.testing.assert_array_equal(pv["outliers[1]"], [[0], [1]])
    np.testing.assert_allclose(pv["branch_mass[-]"], [[0.0], [0.25]])


def test_linear_nets_give_the_class_kernel_and_skip_unrecorded_layers():
    rng = np.random.default_rng(0)
    labels = np.array([0, 0, 1, 2, 2, 2])
    zb = rng.normal(size=(2, 3, 5, 3))                                       # class means (chain, draw, unit, class)
    z = zb[..., labels]                                                     # constant within a class
    pv = population_observables(_run(z, rng.normal(size=(2, 3, 5, 3)), labels, model="deep_linear",
                                     activation="linear"))
    assert not any(k.startswith("code_fraction") for k in pv)
    np.testing.assert_allclose(pv["class_kernel[z1][0,2]"], (zb[..., 0] * zb[..., 2]).mean(-1))
    np.testing.assert_allclose(pv.info["class_kernel[z1][1,1]"].unit_var, (zb[..., 1] ** 2).mean(1).var(-1, ddof=1))
    assert len([k for k in pv if k.startswith("class_kernel")]) == 6       # c <= c' over 3 classes
    # a run without recorded preactivations: the codes are skipped, with the reason
    run = _run(z, rng.normal(size=(2, 3, 5, 3)), labels)
    run = azcompat.set_groups(run, {"posterior": azcompat.get_group(run, "posterior").drop_vars("z1")})
    pv = population_observables(run)
    assert "not recorded" in pv.skipped["code_fraction[z1]"]
    assert not any(k.startswith("code_fraction") for k in pv) and any(k.startswith("branch_mass") for k in pv)


def test_every_entry_declares_its_populations():
    for e in bnnzoo.list_entries():
        spec = e.populations
        assert spec is not None, e.name
        assert set(spec.observables) <= set(KINDS) and set(spec.families) <= set(START_FAMILIES), e.name
        assert "prior" in spec.families and "annealed" in spec.families and spec.note
        assert spec.temperature in e.defaults, e.name
    offered = {e.name for e in bnnzoo.list_entries() if "meanfield" in e.populations.families}
    assert offered == {"sigmoidal", "deep_linear"}


# ------------------------------------------------------------------------------------------------ the error model
MASSES = np.array([0.3, 0.3, 0.3, 0.1])


def _frozen_fractions(rng, masses, n_chains, N=100, D=40, flicker=3):
    """Every chain freezes N units drawn i.i.d. from ``masses``; ``flicker`` units redraw their code every draw."""
    out = np.empty((len(masses), n_chains, D))
    for c in range(n_chains):
        frozen = rng.choice(len(masses), size=N - flicker, p=masses)
        for d in range(D):
            units = np.concatenate([frozen, rng.choice(len(masses), size=flicker, p=masses)])
            out[:, c, d] = np.bincount(units, minlength=len(masses)) / N
    return out


def _families_values(rng, masses_per_family, n_chains=4, N=100, D=40):
    values, info, fam = {}, {}, []
    parts = [_frozen_fractions(rng, np.asarray(p), n_chains, N, D) for p in masses_per_family]
    for k in range(len(MASSES)):
        values[f"code_fraction[z1][{k}]"] = np.concatenate([p[k] for p in parts], 0)
        info[f"code_fraction[z1][{k}]"] = ObservableInfo("fraction", N)
    # a unit average of frozen Gaussian unit values, and a network observable with chain-to-chain spread
    u = rng.normal(0.5, 1.0, size=(len(parts) * n_chains, N))
    values["q"] = u.mean(-1)[:, None] + 0.01 * rng.standard_normal((len(u), D))
    info["q"] = ObservableInfo("unit_mean", N, unit_var=u.var(-1, ddof=1))
    values["mse"] = (1.0 + 0.1 * rng.standard_normal((len(u), 1))) + 0.05 * rng.standard_normal((len(u), D))
    info["mse"] = ObservableInfo("network")
    for f, _ in zip(("prior", "annealed", "meanfield"), masses_per_family):
        fam += [f] * n_chains
    return values, info, fam


def test_families_of_one_equilibrium_agree_at_the_nominal_rate():
    """Three families whose chains freeze populations drawn from the same code masses: the family-wise false-alarm
    rate is ALPHA = 1 %, so at least 95 of 100 independent certifications must agree."""
    agree = 0
    for seed in range(100):
        values, info, fam = _families_values(np.random.default_rng(seed), [MASSES] * 3)
        rec = compare_families(values, fam, info=info)
        agree += rec["agree"]
    assert ALPHA == 0.01 and agree >= 95, agree


def test_families_a_few_standard_errors_apart_are_flagged():
    """One family's mass of code 3 moved by 6 binomial standard errors of a 4-chain difference (0.16): with 8 chains
    per family the measured-scatter comparison flags it in at least 95 of 100 seeds, on that code, and states a
    smallest detectable difference below the shift; with 4 chains it states one above the shift (the reason
    certification runs 8 chains per family)."""
    p, delta = 0.1, 0.0
    for _ in range(50):                  # delta = 6 sqrt((p(1-p) + (p+delta)(1-p-delta)) / (N n)), n = 4
        delta = 6 * math.sqrt((p * (1 - p) + (p + delta) * (1 - p - delta)) / (100 * 4))
    shifted = MASSES + np.array([0.0, 0.0, -1.0, 1.0]) * delta
    flagged, detectable = 0, {4: [], 8: []}
    for seed in range(100):
        for n in (4, 8):
            values, info, fam = _families_values(np.random.default_rng(1000 + seed), [MASSES, shifted], n_chains=n)
            rec = compare_families(values, fam, info=info)
            detectable[n].append(rec["tests"]["code_fraction[z1][3]"]["prior|annealed"]["detectable"])
            if n == 8:
                flagged += any(d.startswith("code_fraction[z1][3]: prior") for d in rec["disagreements"])
    assert flagged >= 95, flagged
    assert np.median(detectable[8]) < delta < np.median(detectable[4]), (delta, detectable)


def test_the_standard_error_is_the_measured_scatter_of_the_chain_means():
    """The error of a family mean is the sd of its chain means / sqrt(chains), whatever a binomial floor would say;
    identical chains (no scatter, no within-chain variance) have zero error and differ when their values differ."""
    rng = np.random.default_rng(3)
    mu = np.array([0.20, 0.21, 0.19, 0.20, 0.30, 0.31, 0.29, 0.30])
    v = mu[:, None] + 1e-4 * rng.standard_normal((8, 200))
    rec = compare_families({"x": v}, ["prior"] * 4 + ["annealed"] * 4, info={"x": ObservableInfo("fraction", 50)})
    se = v[:4].mean(1).std(ddof=1) / 2
    np.testing.assert_allclose(rec["observables"]["x"]["prior"], [v[:4].mean(), se], rtol=1e-12)
    assert se < 0.25 * math.sqrt(0.25 * 0.75 / (50 * 4))              # far below the binomial floor it replaced
    t = rec["tests"]["x"]["prior|annealed"]
    assert t["t"] > t["threshold"] and not rec["agree"] and rec["n_comparisons"] == 2 + 2
    v = np.repeat([[0.2], [0.2], [0.3], [0.3]], 5, axis=1)
    rec = compare_families({"n": np.array([[1.0] * 5, [1.0] * 5, [2.0] * 5, [2.0] * 5])},
                           ["prior"] * 2 + ["annealed"] * 2)
    assert not rec["agree"] and rec["disagreements"] == ["n: prior 1.00 ± 0.00 vs annealed 2.00 ± 0.00"]
    rec = compare_families({"n": np.ones((4, 5))}, ["prior"] * 2 + ["annealed"] * 2)
    assert rec["agree"] and rec["tests"]["n"]["prior|annealed"]["t"] == 0.0


def _locked_run(rng, masses_per_family, n_chains=8, N=100, D=30):
    """FCN-like run: each chain's units keep a code drawn from its family's masses (class means ±1.2, noise 0.3)."""
    labels = np.repeat([0, 1, 2], [4, 2, 2])
    codes = np.array([3, 5, 6, 1])                                            # 110, 101, 011, 100
    zs, as_, fam = [], [], []
    for f, masses in zip(("prior", "annealed", "meanfield"), masses_per_family):
        for _ in range(n_chains):
            unit_codes = codes[rng.choice(4, size=N, p=masses)]
            sign = np.stack([2 * _bits(k, 3) - 1 for k in unit_codes])        # (N, class)
            zs.append(1.2 * sign[None, :, labels] + 0.3 * rng.standard_normal((D, N, len(labels))))
            as_.append(sign[None] + 0.3 * rng.standard_normal((D, N, 3)))
            fam.append(f)
    mse = 0.01 + 0.001 * rng.standard_normal((len(fam), D))
    return _run(np.stack(zs), np.stack(as_), labels, family=fam, mse=mse)


def test_chains_locked_into_different_populations_by_start_family_are_metastable():
    """The planted case: prior-started chains hold code 100 on 16 % of the units, the other families on 2 % (8
    chains per family, the default of a certification)."""
    rng = np.random.default_rng(7)
    run = _locked_run(rng, [[0.28, 0.28, 0.28, 0.16], [0.32, 0.33, 0.33, 0.02], [0.32, 0.33, 0.33, 0.02]])
    rec = certify_run(run)
    assert CONTRACT_KEYS <= set(rec) and rec["families"] == ["prior", "annealed", "meanfield"]
    assert rec["agree"] is False
    assert any(d.startswith("code_fraction[z1][100]: prior 0.1") and " vs annealed 0.0" in d
               for d in rec["disagreements"]), rec["disagreements"]
    assert not any(d.startswith("code_fraction[z1][100]: annealed") for d in rec["disagreements"])
    m, se = rec["observables"]["code_fraction[z1][100]"]["prior"]
    assert 0.1 < m < 0.22 and 0 < se < 0.03
    json.dumps(rec)                                                           # the record is JSON
    same = certify_run(_locked_run(rng, [[0.3, 0.3, 0.3, 0.1]] * 3))
    assert same["agree"] is True, same["disagreements"]


def test_certify_arguments_are_checked_before_anything_runs():
    sig = bnnzoo.get_entry("sigmoidal")
    ok = dict(num_chains=2, sampler="auto", init="prior", reparam=(), store=None, resume=False)
    assert check_certify(True, sig, ok) == ("prior", "annealed", "meanfield")
    assert check_certify(["meanfield", "prior"], sig, ok) == ("prior", "meanfield")
    assert check_certify(True, sig, dict(ok, store="x", resume=True)) == ("prior", "annealed", "meanfield")
    bad = [(True, None, ok, "declares"), (["prior"], sig, ok, "two or more"), ("yes", sig, ok, "must be True"),
           (["prior", "tempered"], sig, ok, "two or more"), (True, sig, dict(ok, num_chains=1), "num_chains"),
           (["prior", "meanfield"], bnnzoo.get_entry("relu"), ok, "offers the start families"),
           (True, sig, dict(ok, init={"a": np.zeros(2)}), "init"), (True, sig, dict(ok, reparam="readout"), "reparam")]
    for certify, entry, call, msg in bad:
        with pytest.raises(ValueError, match=msg):
            check_certify(certify, entry, call)
    with pytest.raises(ValueError, match="num_chains"):      # through sample, before anything compiles
        bnnzoo.sample("sigmoidal", toy_task(P=6), width=3, num_chains=1, certify=True, progress=False)


def test_the_command_line_passes_certify_on(tmp_path, capsys):
    from bnnzoo.cli import main

    out = str(tmp_path / "run.nc")
    for argv, msg in ((["--certify", "--chains", "1"], "num_chains must be >= 2"),
                      (["--certify", "prior"], "two or more comma-separated families"),
                      (["--certify", "prior,meanfield", "--param", "depth=2"], "meanfield start unavailable"),
                      (["--certify", "prior,tempered"], "two or more distinct start families")):
        assert main(["sample", "sigmoidal", "--out", out, "--quiet", *argv]) == 2
        assert msg in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ start families
@pytest.mark.parametrize("name, y_neg", [("sigmoidal", 0.5), ("deep_linear", 0.0)])
def test_meanfield_start_carries_the_meanfield_populations(name, y_neg):
    """N = 3000 units seeded from the single-neuron mean field at P = 40: their code fractions are the branch masses
    (within 4 binomial standard errors) and the network output is the mean field's F (within 4 Monte Carlo standard
    errors of a mean over the N units)."""
    from bnnzoo.diagnostics._data import class_means, np_activation
    from bnnzoo.diagnostics.codes import code_ids, code_string

    task = toy_task(P=40, y_neg=y_neg)
    entry = bnnzoo.get_entry(name)
    N = 3000
    start, mf = meanfield_start(entry, task, dict(width=N), 1, seed=3)
    assert start["W1"].shape == (1, N, task.N0) and start["a"].shape == (1, N, 3)
    act = entry.defaults["activation"]
    z = start["W1"][0] @ task.X.T / math.sqrt(task.N0)
    terms = np_activation(act)(z)[:, :, None] * start["a"][0][:, None, :]     # (unit, point, class)
    f = class_means(np.moveaxis(terms.mean(0), 0, -1), task.labels, 3).T      # (data class, output)
    se = np.max(terms.std(0), axis=0) / math.sqrt(N)                          # largest over points, per output
    assert np.all(np.abs(f - np.array(mf["F"])) < 4 * se[None, :]), (f, mf["F"], se)
    if act == "sigmoid":
        assert set(mf["codes"]) == {"011", "101", "110", "111"} and abs(sum(mf["masses"]) - 1) < 0.01
        ids = code_ids(class_means(z, task.labels, 3))
        for code, mass in zip(mf["codes"], mf["masses"]):
            frac = np.mean([code_string(k, 3) == code for k in ids])
            assert abs(frac - mass) < 4 * math.sqrt(mass * (1 - mass) / N), (code, frac, mass)


def test_tilted_draws_have_the_tilted_mean_activation():
    """The preactivations drawn given a readout: their mean activation is m1(s) of the tilted law, which
    bnnzoo.theory.activation_moments computes by Gauss-Hermite quadrature (4 standard errors of 20000 draws)."""
    from bnnzoo.diagnostics._data import np_activation
    from bnnzoo.workflows.certify import _tilted_draws
    from bnnzoo.theory.meanfield import activation_moments

    s = np.array([-20.0, -3.0, 0.0, 2.0, 15.0])
    h = _tilted_draws(s, 20000, "sigmoid", 1.0, np.random.default_rng(0))
    phi = np_activation("sigmoid")(h)
    _, m1, m2 = activation_moments(s, "sigmoid", 1.0)
    assert np.all(np.abs(phi.mean(1) - m1) < 4 * np.sqrt(m2 / 20000))


def test_meanfield_start_is_refused_where_there_is_no_meanfield():
    with pytest.raises(FamilyUnavailable, match="depth"):
        meanfield_start(bnnzoo.get_entry("sigmoidal"), toy_task(P=8), dict(width=4, depth=2), 2, 0)
    with pytest.raises(FamilyUnavailable, match="activation"):
        meanfield_start(bnnzoo.get_entry("relu"), toy_task(P=8), dict(width=4), 2, 0)


@pytest.mark.parametrize("chunk_size", [None, 1])
def test_chains_start_from_given_values(chunk_size):
    """init as a dict: with one leapfrog step of 1e-7 and no warm-up the first draw is the starting point (NumPyro's
    MCMC, and the chunked driver with chunk_size=1)."""
    task = toy_task(P=6, N0=8)
    rng = np.random.default_rng(0)
    init = {"W1": rng.normal(size=(2, 3, 8)), "a": rng.normal(size=(2, 3, 3))}
    run = bnnzoo.sample("deep_linear", task, width=3, num_chains=2, num_warmup=0, num_samples=1, sampler="hmc",
                        num_steps=1, step_size=1e-7, init=init, chunk_size=chunk_size, progress=False)
    post = azcompat.get_group(run, "posterior")
    for k, v in init.items():
        np.testing.assert_allclose(post[k].values[:, 0], v, rtol=1e-5, atol=1e-5)
    assert bnnzoo.run_config(run)["sampler"]["init"] == {"values_for": ["W1", "a"]}
    with pytest.raises(ValueError, match="missing"):
        bnnzoo.sample("deep_linear", task, width=3, num_chains=2, init={"a": init["a"]}, progress=False)
    with pytest.raises(ValueError, match="leading chain axis"):
        bnnzoo.sample("deep_linear", task, width=3, num_chains=2, init={"a": init["a"][:1]}, progress=False)


# ------------------------------------------------------------------------------------------------ end to end
def _check_certified(run, families, n_chains):
    post = azcompat.get_group(run, "posterior")
    assert post.sizes["chain"] == n_chains * len(families)
    assert list(post.coords["family"].values) == [f for f in families for _ in range(n_chains)]
    assert list(azcompat.get_group(run, "sample_stats").coords["family"].values) == list(post.coords["family"].values)
    rec = json.loads(azcompat.get_attrs(run)["bnnzoo_certification"])
    assert CONTRACT_KEYS <= set(rec) and rec["families"] == list(families)
    assert bnnzoo.run_config(run)["certification"] == rec
    assert isinstance(rec["agree"], bool) and all(isinstance(d, str) for d in rec["disagreements"])
    assert any(k.startswith("code_fraction[z1]") for k in rec["observables"]) and "mse" in rec["observables"]
    assert all(set(v) == set(families) for v in rec["observables"].values())
    assert rec["agree"] == (not rec["disagreements"])
    return rec


def test_certified_sample_end_to_end():
    """The prior and mean-field families of a tiny sigmoidal net: both ran, their chains are concatenated with the
    family recorded, the record has the contract's keys (the whole record is checked by the tests above)."""
    run = bnnzoo.sample("sigmoidal", toy_task(P=12), width=6, num_chains=2, num_warmup=10, num_samples=6,
                        sampler="hmc", num_steps=3, record=("z",), certify=["prior", "meanfield"], progress=False)
    rec = _check_certified(run, ("prior", "meanfield"), 2)
    assert rec["runs"]["meanfield"]["init"] == {"values_for": ["W1", "a"]} and rec["runs"]["prior"]["init"] == "prior"


def test_families_sampled_apart_and_combined_are_the_certified_run():
    """The prior and mean-field families sampled in two calls (each family's own seed and start, as certify runs
    them) and combined: the same draws, family coordinate, certification and health as ``certify=[...]`` in one
    call; the record's seeds and wall time come from the runs, and the caller's entries replace the defaults."""
    task, kw = toy_task(P=12), dict(width=6, num_chains=2, num_warmup=10, num_samples=6, sampler="hmc", num_steps=3,
                                    record=("z",), progress=False)
    one = bnnzoo.sample("sigmoidal", task, seed=3, certify=["prior", "meanfield"], **kw)
    entry = bnnzoo.get_entry("sigmoidal")
    start, info = meanfield_start(entry, task, {"width": 6}, 2, 3 + 2)
    runs = {"prior": bnnzoo.sample("sigmoidal", task, seed=3, **kw),
            "meanfield": bnnzoo.sample("sigmoidal", task, seed=3 + 2, init=start, **kw)}
    both = combine_families(runs, starts={"meanfield": info})
    p1, p2 = (azcompat.get_group(r, "posterior") for r in (one, both))
    np.testing.assert_array_equal(p1["a"].values, p2["a"].values)
    assert list(p2.coords["family"].values) == ["prior"] * 2 + ["meanfield"] * 2
    r1, r2 = (json.loads(azcompat.get_attrs(r)["bnnzoo_certification"]) for r in (one, both))
    assert r2["observables"] == r1["observables"] and r2["agree"] == r1["agree"]
    assert r2["disagreements"] == r1["disagreements"] and r2["seeds"] == {"prior": 3, "meanfield": 5} == r1["seeds"]
    assert r2["starts"] == json.loads(json.dumps({"meanfield": info})) and r2["num_chains_per_family"] == 2
    walls = [json.loads(azcompat.get_attrs(r)["bnnzoo_config"])["wall_time_s"] for r in runs.values()]
    assert r2["wall_time_s"] == pytest.approx(sum(walls), abs=1e-3)
    h1, h2 = sampler_health(one), sampler_health(both)
    assert (h2.status, h2.populations, h2.rhat) == (h1.status, h1.populations, h1.rhat)
    assert r2["starts"] == r1["starts"]
    given = combine_families(runs, wall_time_s=1.5, note="x")
    rec = json.loads(azcompat.get_attrs(given)["bnnzoo_certification"])
    assert (rec["wall_time_s"], rec["note"]) == (1.5, "x")
    assert json.loads(azcompat.get_attrs(given)["bnnzoo_config"])["wall_time_s"] == 1.5
    with pytest.raises(ValueError, match="two or more families"):
        combine_families({"prior": runs["prior"]})
    with pytest.raises(ValueError, match=r"computed by certify_run"):
        combine_families(runs, agree=True)
    shorter = bnnzoo.sample("sigmoidal", task, seed=3 + 2, init=start, **dict(kw, num_samples=5))
    with pytest.raises(ValueError, match=r"'meanfield' differs from 'prior' in \['num_samples'\]"):
        combine_families({"prior": runs["prior"], "meanfield": shorter})
    other = copy.deepcopy(runs["meanfield"])           # a family run with other unit-wise moves
    attrs = other.posterior.attrs if azcompat.AZ_MAJOR == 0 else (other.attrs if other.attrs
                                                                  else other["posterior"].attrs)
    cfg = json.loads(attrs["bnnzoo_config"])
    attrs["bnnzoo_config"] = json.dumps(dict(cfg, sampler=dict(cfg["sampler"], moves={"tries": 2})))
    with pytest.raises(ValueError, match=r"'meanfield' differs from 'prior' in \['moves'\]"):
        combine_families({"prior": runs["prior"], "meanfield": other})


@pytest.mark.slow
def test_certified_sample_every_family(tmp_path):
    """certify=True on the sigmoidal net: the prior, annealed and mean-field families; the run survives NetCDF."""
    run = bnnzoo.sample("sigmoidal", toy_task(P=12), width=6, num_chains=2, num_warmup=10, num_samples=6,
                        sampler="hmc", num_steps=3, record=("z",), certify=True, progress=False)
    rec = _check_certified(run, ("prior", "annealed", "meanfield"), 2)
    assert rec["starts"]["annealed"]["temperatures"] == pytest.approx([1.0, 0.1, 0.01])
    back = azcompat.from_netcdf(azcompat.to_netcdf(run, tmp_path / "certified.nc"))
    assert list(azcompat.get_group(back, "posterior").coords["family"].values)[-1] == "meanfield"


@pytest.mark.slow
@pytest.mark.parametrize("name, task_kw, model_kw", [
    ("three_layer_erf", dict(d=4, P=8, P_test=20), dict(width1=6, width2=5)),
    ("softmax_attention", dict(L=3, d=4, P=8, P_test=20), dict(heads=2)),
    ("gdln_xor", dict(hidden=2), {})])
def test_population_observables_of_the_other_entries_are_the_reports_per_draw(name, task_kw, model_kw):
    """Specialists, alignment and pathway singular values per draw, against the diagnostics they come from."""
    from bnnzoo.cli import task_model_keywords
    from bnnzoo.diagnostics import alignment as al

    e = bnnzoo.get_entry(name)
    task = e.make_task(**dict(e.task_defaults, **task_kw))
    run = bnnzoo.sample(e, task, num_chains=2, num_warmup=5, num_samples=4, sampler="hmc", num_steps=2,
                        progress=False, record=e.record, **dict(task_model_keywords(e, task, model_kw), **model_kw))
    pv = population_observables(run)
    assert not pv.skipped and all(v.shape == (2, 4) for v in pv.values())
    post = azcompat.get_group(run, "posterior")
    if "mse" in post:
        np.testing.assert_allclose(pv["mse"], post["mse"].values, rtol=1e-6)
    if name == "three_layer_erf":
        fo = al.first_layer_overlaps(run, task.meta["w_star"])
        np.testing.assert_allclose(pv["specialist_fraction"] * 6, fo.n_specialists)
        np.testing.assert_allclose(pv["alignment"], al.alignment(run).draws)
        so = al.second_layer_overlaps(run, task.meta["w_star"], max_test=500)
        np.testing.assert_allclose(pv["second_layer_q3"], (so.r3 ** 2).mean(-1))
    elif name == "softmax_attention":
        np.testing.assert_allclose(pv["alignment"], al.alignment(run).draws)
        assert set(np.unique(pv["specialist_heads"])) <= {0.0, 0.5, 1.0}
    else:
        maps = al.pathway_maps(run)
        for p, Wp in maps.items():
            np.testing.assert_allclose(pv[f"pathway_sv[{p}][0]"], np.linalg.svd(Wp, compute_uv=False)[..., 0],
                                       rtol=1e-6)


def test_a_planted_task_adds_the_planted_family():
    """certify=True on a planted task adds the family started at the teacher (an exact posterior draw); naming it on
    a task without a teacher is refused with one line."""
    from bnnzoo.workflows.certify import check_certify
    from bnnzoo.tasks import planted_task

    entry = bnnzoo.get_entry("relu")
    base = bnnzoo.toy_task(P=8)
    planted = planted_task(entry, base, seed=0, width=6)
    call = dict(num_chains=2, sampler="auto", init="prior")
    assert check_certify(True, entry, dict(call, task=planted))[-1] == "planted"
    assert "planted" not in check_certify(True, entry, dict(call, task=base))
    assert check_certify(["prior", "planted"], entry, dict(call, task=planted)) == ("prior", "planted")
    with pytest.raises(ValueError, match="has none") as err:
        check_certify(["prior", "planted"], entry, dict(call, task=base))
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------------------------------------ store and resume
# the linear net on a planted task, from the prior and from the teacher, 2 chains each, 4 warm-up steps + 4 draws in
# chunks of 2: every family's store holds 2 warm-up blocks and 2 blocks of draws (blocks 0..3)
CERT_KW = dict(width=3, num_chains=2, num_warmup=4, num_samples=4, sampler="hmc", num_steps=2, chunk_size=2, seed=0,
               certify=["prior", "planted"], progress=False, record=())


def _planted():
    from bnnzoo.tasks import planted_task

    return planted_task(bnnzoo.get_entry("deep_linear"), toy_task(P=8), seed=0, width=3)


def _cert_draws(run):
    post, ss = azcompat.get_group(run, "posterior"), azcompat.get_group(run, "sample_stats")
    return {"a": post["a"].values, "W1": post["W1"].values, "step_size": ss["step_size"].values,
            "family": post.coords["family"].values}


def test_a_failed_family_resumes_from_its_checkpoint_and_finished_families_are_not_rerun(tmp_path, monkeypatch):
    """The planted family fails after its second checkpoint (an injected disk error): the error names the prior
    family as finished and kept; resume=True reads the prior family from its store (no block runs: one family
    compiles, not two), continues the planted family after its last checkpoint (block 1), and gives the draws of
    the uninterrupted certified run bit for bit."""
    from bnnzoo.inference import chunked

    task = _planted()
    ref = _cert_draws(bnnzoo.sample("deep_linear", task, store=tmp_path / "ref", **CERT_KW))
    with pytest.raises(ValueError, match=r"ref is a certification folder: load_store reads one family's run, "
                                         r".*ref/family_prior, .*ref/family_planted$"):
        load_store(tmp_path / "ref")                  # the top folder holds no draws: each family's folder does
    assert load_store(tmp_path / "ref" / "family_prior")["posterior"].sizes["chain"] == CERT_KW["num_chains"]
    real_save, saved = chunked.save_state, []

    def failing_save(path, *a, **kw):
        if "family_planted" in str(path):
            saved.append(path)
            if len(saved) == 3:
                raise OSError("injected: no space left on device")
        return real_save(path, *a, **kw)

    monkeypatch.setattr(chunked, "save_state", failing_save)
    store = tmp_path / "cert"
    with pytest.raises(OSError, match=r"^certify: start family 'planted' failed \(OSError: injected.*\); the "
                                      r"finished families \['prior'\] are kept in .*cert: resume=True"):
        bnnzoo.sample("deep_linear", task, store=store, **CERT_KW)
    monkeypatch.setattr(chunked, "save_state", real_save)
    assert sorted(p.name for p in store.iterdir()) == ["chunks", "family_planted", "family_prior", "lock", "run.json"]
    real_compile, compiled = chunked._compile_block, []
    monkeypatch.setattr(chunked, "_compile_block", lambda *a, **kw: compiled.append(1) or real_compile(*a, **kw))
    run = bnnzoo.sample("deep_linear", task, store=store, resume=True, **CERT_KW)
    assert len(compiled) == 1                                   # the planted family only
    runs = bnnzoo.run_config(run)["certification"]["runs"]
    assert runs["prior"]["resumed_from_block"] == 3 and runs["planted"]["resumed_from_block"] == 1
    got = _cert_draws(run)
    for k, v in ref.items():
        np.testing.assert_array_equal(got[k], v, err_msg=k)


def test_a_resume_with_other_certification_settings_is_refused(tmp_path, monkeypatch):
    """The certification's identity (families, chains per family, seeds, model, settings) is its store's run.json: a
    resume that differs is refused naming what differs, a new certification onto it is refused, before anything
    samples (here the first family fails at once, so the store holds the identity and no draws)."""
    from bnnzoo.inference import sampling
    from bnnzoo.inference.store import RunStore, StoreError

    task, store = _planted(), tmp_path / "cert"

    def fails(*a, **kw):
        raise RuntimeError("injected")

    monkeypatch.setattr(sampling, "sample", fails)
    with pytest.raises(RuntimeError, match="^injected$"):        # no family finished: the error as it was
        bnnzoo.sample("deep_linear", task, store=store, **CERT_KW)
    for change, says in ((dict(certify=["prior", "annealed"]), "certify.families=['prior', 'planted']"),
                         (dict(num_chains=3), "certify.num_chains=2, this call has certify.num_chains=3"),
                         (dict(seed=1), "certify.seeds.prior=0"),
                         (dict(width=4), "model_kwargs.width=3")):
        with pytest.raises(StoreError, match="cannot resume .*cert: the store holds a run with ") as err:
            bnnzoo.sample("deep_linear", task, store=store, resume=True, **dict(CERT_KW, **change))
        assert says in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(StoreError, match="already holds a run; pass resume=True"):
        bnnzoo.sample("deep_linear", task, store=store, **CERT_KW)
    with pytest.raises(StoreError, match="in use by another process"):      # a second certification while one runs
        holder = RunStore(store)
        holder.lock()
        try:
            bnnzoo.sample("deep_linear", task, store=store, resume=True, **CERT_KW)
        finally:
            holder.unlock()


def test_without_a_store_a_failed_family_names_the_finished_ones_and_store(monkeypatch):
    """No store: the finished families cannot be kept, and the error (of the failed family's type) says which
    finished and that store= keeps them."""
    from bnnzoo.inference import sampling

    calls = []

    def second_fails(*a, **kw):
        calls.append(kw["seed"])
        if len(calls) == 2:
            raise ValueError("injected")
        return object()

    monkeypatch.setattr(sampling, "sample", second_fails)
    with pytest.raises(ValueError, match=r"^certify: start family 'planted' failed \(ValueError: injected\); the "
                                         r"finished families \['prior'\] were discarded: give store=DIR") as err:
        bnnzoo.sample("deep_linear", _planted(), **CERT_KW)
    assert calls == [0, 3] and "\n" not in str(err.value)


def test_an_interrupt_names_the_finished_families_once(monkeypatch, caplog):
    """Ctrl-C during the second family stays a KeyboardInterrupt, and one warning line on the bnnzoo logger says which
    families finished and that store= would have kept them."""
    from bnnzoo.inference import sampling

    calls = []

    def second_interrupted(*a, **kw):
        calls.append(kw["seed"])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return object()

    monkeypatch.setattr(sampling, "sample", second_interrupted)
    with caplog.at_level("WARNING", logger="bnnzoo"), pytest.raises(KeyboardInterrupt):
        bnnzoo.sample("deep_linear", _planted(), **CERT_KW)
    lines = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert lines == ["certify: start family 'planted' was interrupted (KeyboardInterrupt); the finished families "
                     "['prior'] were discarded: give store=DIR (CLI: --store DIR or --chunk N) to keep each family "
                     "as it finishes, and resume=True (CLI: --resume) to run only the rest"], lines


def test_a_store_does_not_change_the_sampler_auto_picks_for_a_certified_run(tmp_path):
    """sampler="auto" picks the unit-wise sampler for a certified sigmoidal net on orthogonal inputs with and
    without chunks and a store (it keeps them itself)."""
    import inspect

    from bnnzoo.inference.plan import make_spec
    from bnnzoo.inference.sampling import sample

    defaults = {k: p.default for k, p in inspect.signature(sample).parameters.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY}
    for extra in ({}, dict(store=tmp_path / "s", chunk_size=2)):
        args = dict(defaults, num_chains=4, **extra)
        spec = make_spec("sigmoidal", toy_task(P=8), model_kwargs=dict(width=4), certify=True, **args)
        assert spec.sampler.name == "units", extra
