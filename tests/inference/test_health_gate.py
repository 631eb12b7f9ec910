"""The health gate does not look away (issue 31, item 3): every invariant observable is judged, the population
tolerance only widens, ``f`` is judged by its worst entries, one chain gets a real split R̂, a run away from
equilibrium keeps no per-unit verdict, and the certification of the populations decides "metastable" /
"populations certified by ..." / "populations not certified".

Runs built from known processes (iid Gaussian draws, frozen unit populations, planted offsets), so each case is a
known answer and the file takes a few seconds; one exact-Gibbs run reproduces the case of the issue."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
import xarray as xr

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.diagnostics import diagnose
from bnnzoo.inference.health import (CERTIFICATION_ATTR, MAX_RHAT, MIN_ESS, NOT_CERTIFIED, POPULATION_SD_CAP,
                                     POPULATION_SE_FACTOR, SamplerHealth, gate_verdicts, population_se,
                                     sampler_health)

LEAD = ("chain", "draw")
# every verdict key diagnose builds (per-unit, population and theory verdicts)
VERDICTS = {"ergodicity[a]": "broken", "ergodicity[z1]": "ergodic", "symmetry[a]": "broken",
            "symmetry[z1]": "restored", "codes[z1]": "frozen", "branches": "2 branches",
            "outliers": "1/1 per chain, one per class", "theory": "disagrees"}


def _run(a, f=None, mse=None, *, attrs=None, seed=0):
    """A run holding readouts ``a`` (chain, draw, neuron, class), outputs ``f`` (chain, draw, point, class) and
    ``mse``, with iid sampler statistics of a healthy HMC chain (equipartition: sd(lp) = sd(kinetic))."""
    rng = np.random.default_rng(seed)
    C, D = a.shape[:2]
    if f is None:
        f = rng.normal(scale=0.1, size=(C, D, 8, a.shape[-1]))
    if mse is None:
        mse = rng.normal(1.0, 0.1, size=(C, D))
    d = 50
    lp = rng.normal(scale=np.sqrt(d / 2), size=(C, D))
    kinetic = rng.chisquare(d, size=(C, D)) / 2
    post = xr.Dataset({"a": (LEAD + ("neuron", "class"), a), "f": (LEAD + ("point", "class"), f),
                       "mse": (LEAD, mse)})
    ss = xr.Dataset({"diverging": (LEAD, np.zeros((C, D), bool)), "energy": (LEAD, kinetic - lp), "lp": (LEAD, lp)})
    y = xr.Dataset({"y": (("point", "class"), np.zeros(f.shape[2:]))})
    return azcompat.make_idata({"posterior": post, "sample_stats": ss, "observed_data": y}, attrs=attrs)


def _iid(C=2, D=300, N=20, m=2, seed=0):
    return np.random.default_rng(seed).normal(size=(C, D, N, m))


def _frozen_populations(D=300, N=20, noise=0.01, seed=1):
    """Two chains whose N units keep their readouts (broken ergodicity): chain 1's units are chain 0's scaled so
    that q_a[0] differs by 1.5 population standard errors between the chains, with a small per-draw jitter."""
    rng = np.random.default_rng(seed)
    u = np.linspace(0.6, 1.4, N)                                   # no outliers (max/median < N^(1/4))
    q0 = np.mean(u ** 2)
    pse = np.std(u ** 2, ddof=1) / math.sqrt(N)
    s = math.sqrt((q0 + 1.5 * pse) / q0)
    base = np.stack([u, s * u])                                     # (chain, neuron)
    a = base[:, None, :, None] + noise * rng.normal(size=(2, D, N, 1))
    return a


# ---------------------------------------------------------------------------------------------- skipped observables
def test_unit_average_far_apart_within_population_se_is_judged():
    """The case of the issue: chain means of q_a[0] many within-chain sds apart but < 3 population s.e. — the old
    rule exempted it (R̂, drift and ESS ignored); now it is judged, reported and makes the run relaxing."""
    idata = _run(_frozen_populations())
    post = azcompat.get_group(idata, "posterior")
    q = (post["a"].values[..., 0] ** 2).mean(-1)                   # (chain, draw)
    spread = abs(q[0].mean() - q[1].mean())
    sd_within = math.sqrt(q.var(1, ddof=1).mean())
    pse = population_se(post)["q_a[0]"]
    assert spread < POPULATION_SE_FACTOR * pse and spread > 20 * sd_within    # the exempt case of the old rule
    h = sampler_health(idata)
    assert h.status == "relaxing", h
    assert h.rhat["q_a[0]"] > MAX_RHAT and h.ess["q_a[0]"] < MIN_ESS        # computed and reported, not skipped
    assert h.tolerance["q_a[0]"] == pytest.approx(min(POPULATION_SE_FACTOR * pse, POPULATION_SD_CAP * sd_within),
                                                  rel=1e-6)
    assert any(r.startswith("chains disagree on q_a[0]") for r in h.relaxing), h.relaxing
    assert not h.mixed
    # a relaxing run keeps none of its per-unit, population or theory verdicts
    gated = gate_verdicts(dict(VERDICTS, extra="n/a"), h)
    assert all(gated[k] == "relaxing: see the sampler health" for k in VERDICTS), gated
    assert "q_a[0]" in h.reason
    assert gated["extra"] == "n/a"


def _frozen_with_jitter(shifts, D, transient=0.0, N=100, sig=0.5, seed=7):
    """Chains (one per entry of ``shifts``) of N units with frozen readout means u_i (spread 0.5..1.5) and a per-draw
    jitter of sd ``sig``, so that q_a[0] has a known within-chain sd q_sd and 3 population s.e. > q_sd; chain c's
    unit means are scaled so that its q_a[0] sits ``shifts[c]`` q_sd from the others', and the first tenth of every
    chain a further ``transient`` q_sd up.  Returns (a, q_sd)."""
    rng = np.random.default_rng(seed)
    u = np.linspace(0.5, 1.5, N)
    q0 = np.mean(u ** 2)
    q_sd = math.sqrt((4 * q0 * sig ** 2 + 2 * sig ** 4) / N)       # sd of mean((u + sig ε)²) over N units
    shift = np.asarray(shifts, float)[:, None] * q_sd + np.where(np.arange(D) < D // 10, transient * q_sd, 0.0)
    scale = np.sqrt((q0 + shift) / q0)                             # (chain, draw)
    a = scale[..., None] * u + sig * rng.normal(size=(len(shifts), D, N))
    return a[..., None], q_sd


def test_population_tolerance_widens_a_test_but_never_removes_it():
    """A start-up transient of 0.6 within-chain sd in q_a[0] (Geweke |z| ≈ 5.5 at 1000 draws, within the tolerance
    of one within-chain sd): reported and excused in the evidence.  The same transient in mse, which has no population
    tolerance, makes the run relaxing."""
    a, q_sd = _frozen_with_jitter([0.0, 0.0], D=1000, transient=0.6)
    h = sampler_health(_run(a, seed=8))
    assert h.tolerance["q_a[0]"] == pytest.approx(POPULATION_SD_CAP * q_sd, rel=0.1)   # the cap, not 3 s.e.
    assert h.drift_z["q_a[0]"] > 4.0 and h.status == "equilibrated", h
    assert "q_a[0] drift |z|" in h.evidence and "within the population tolerance" in h.evidence, h.evidence
    rng = np.random.default_rng(9)
    mse = rng.normal(1.0, 0.1, size=(2, 1000))
    mse[:, :100] += 0.06                                           # the same 0.6 sd transient
    h2 = sampler_health(_run(a, mse=mse, seed=8))
    assert h2.status == "relaxing" and any(r.startswith("mse drifts") for r in h2.relaxing), h2


def test_chains_apart_within_the_tolerance_with_few_effective_draws_are_relaxing():
    """Two chains whose q_a[0] means are 0.92 within-chain sd apart (R̂ ≈ 1.13 > 1.1, inside the tolerance): with
    two chains the bulk ESS is ≈ 10 (the chains' offset), so the run is relaxing, not equilibrated."""
    a, _ = _frozen_with_jitter([0.0, 0.92], D=1000)
    h = sampler_health(_run(a, seed=8))
    assert h.rhat["q_a[0]"] > MAX_RHAT and h.ess["q_a[0]"] < MIN_ESS, h
    assert h.status == "relaxing" and any(r.startswith("q_a[0]: bulk ESS") for r in h.relaxing), h.relaxing


def test_population_tolerance_excuses_offsets_not_spreads():
    """Two chains whose q_a[0] means are within the tolerance (0.2 pooled within-chain sd apart), one fluctuating 4
    times as much (its unit means share a per-draw scale factor): the (folded) R̂ exceeds 1.1 with the offset
    removed — not what a frozen population makes, so the run is relaxing."""
    a, q_sd = _frozen_with_jitter([0.0, 0.0], D=500)
    rng = np.random.default_rng(11)
    u = np.linspace(0.5, 1.5, a.shape[2])
    a[1, :, :, 0] += (0.2 * rng.normal(size=(500, 1))) * u          # chain 1: q_a[0] sd ≈ 4 q_sd
    h = sampler_health(_run(a, seed=8))
    assert h.rhat["q_a[0]"] > MAX_RHAT, h
    assert h.status == "relaxing" and any("offsets removed" in r for r in h.relaxing), h.relaxing


# ----------------------------------------------------------------------------------------------------- one chain
def _classic_split_rhat(x):
    """Gelman et al.'s split R̂ of one chain x (draw,), the halves as two chains (BDA3 eq. 11.4)."""
    h = len(x) // 2
    parts = np.stack([x[:h], x[len(x) - h:]])
    n = parts.shape[1]
    W = parts.var(1, ddof=1).mean()
    B = n * parts.mean(1).var(ddof=1)
    return math.sqrt(((n - 1) / n * W + B / n) / W)


def test_one_healthy_chain_has_a_finite_split_rhat():
    idata = _run(_iid(C=1, D=400))
    h = sampler_health(idata)
    assert h.status == "equilibrated", h
    for k in ("mse", "q_a[0]", "q_a[1]", "f"):
        assert math.isfinite(h.rhat[k]) and h.rhat[k] <= MAX_RHAT, (k, h.rhat)
    mse = azcompat.get_group(idata, "posterior")["mse"].values[0]
    assert h.rhat["mse"] == pytest.approx(_classic_split_rhat(mse), abs=0.02)
    assert h.evidence.startswith("one chain: split R̂ ≤ 1.1 between its halves") and "no between-chain" in h.evidence
    assert any(ln.startswith("split R̂: ") for ln in h.summary())


def test_one_chain_with_a_drifting_half_is_not_equilibrated():
    """The second half of the only chain has its readouts scaled up by 30 %: q_a's halves differ, split R̂ sees it
    (ArviZ's plain R̂ is NaN on one chain, which never exceeds 1.1)."""
    a = _iid(C=1, D=400)
    a[:, 200:] *= 1.3
    h = sampler_health(_run(a))
    assert h.status == "relaxing", h
    assert math.isfinite(h.rhat["q_a[0]"]) and h.rhat["q_a[0]"] > MAX_RHAT
    assert any("differs between the halves of the chain (split R̂" in r for r in h.relaxing), h.relaxing
    assert "split R̂ ≤" not in h.evidence


def test_one_chain_without_a_split_rhat_is_inconclusive():
    h = sampler_health(_run(_iid(C=1, D=3)))
    assert h.status == "failed" and any(r.startswith("one chain, no split R̂") for r in h.reasons), h
    assert gate_verdicts({"ergodicity[a]": "broken"}, h)["ergodicity[a]"].startswith("inconclusive: ")
    assert "one chain, no split R̂" in h.reason


def test_chains_constant_and_different_are_named_so_and_constant_equal_ones_pass():
    """n_outliers frozen per chain at different counts: R̂ = inf (zero within-chain variance), the run relaxing and
    not mixed, the evidence saying "constant and different" (not ArviZ's ~1e16, and not "failed" as an R̂ that could
    not be computed); one chain whose halves hold different counts: split R̂ inf, named so (and a drift); entries of
    f frozen per chain at different values: counted, max R̂ inf.  Frozen at one count in every chain: R̂ 1, not
    flagged."""
    rng = np.random.default_rng(0)
    run, mse = _run(_iid(C=4, D=300)), rng.normal(1.0, 0.1, (4, 300))
    frozen = np.repeat(np.array([[3.0], [3.0], [4.0], [5.0]]), 300, axis=1)
    h = sampler_health(run, observables={"n_outliers": frozen, "mse": mse})
    assert h.status == "relaxing" and not h.mixed and h.rhat["n_outliers"] == math.inf and not h.reasons, h
    assert h.relaxing == ("chains disagree on n_outliers (R̂ inf: the chains are constant and different)",), h
    h = sampler_health(run, observables={"n_outliers": np.full((4, 300), 2.0), "mse": mse})
    assert h.status == "equilibrated" and h.mixed and h.rhat["n_outliers"] == 1.0 and not h.relaxing, h
    one = np.repeat([[1.0, 2.0]], 150, axis=1)                       # (1, 300): 1 in the first half, 2 in the second
    h = sampler_health(_run(_iid(C=1, D=300)), observables={"n_outliers": one, "mse": mse[:1]})
    assert h.rhat["n_outliers"] == math.inf and h.relaxing[0] == (
        "n_outliers differs between the halves of the chain (split R̂ inf: the halves are constant and different)"), h
    f = rng.normal(size=(4, 300, 5))
    f[..., :2] = frozen[..., None]
    h = sampler_health(run, observables={"f": f, "mse": mse})
    assert h.entries["f"]["rhat_above"] == 2 and h.rhat["f"] == math.inf, h
    assert ("chains disagree on f: 2 of 5 outputs R̂ > 1.1 (max inf: 2 constant within the chains and different "
            "between them)") in h.relaxing, h.relaxing


# -------------------------------------------------------------------------------------------- f by its worst entries
def test_f_is_judged_by_its_worst_entries():
    """60 outputs (20 points × 3 classes), 9 with chain means 2 sds apart: the median R̂ is ≈ 1, the run is still
    relaxing and the count is in the text."""
    rng = np.random.default_rng(5)
    C, D, P, m = 2, 300, 20, 3
    f = rng.normal(size=(C, D, P, m))
    bad = [(p, c) for p in range(3) for c in range(3)]              # 9 entries
    for p, c in bad:
        f[1, :, p, c] += 2.0
    h = sampler_health(_run(_iid(C=C, D=D, m=m), f=f))
    assert h.status == "relaxing", h
    assert h.entries["f"] == {"n": 60, "rhat_above": 9, "ess_below": h.entries["f"]["ess_below"], "constant": 0}
    assert "f: 9 of 60 outputs R̂ > 1.1" in h.reason, h.reason
    assert h.rhat["f"] > 1.5                                           # the worst entry, not the median
    # and the same outputs without the offsets pass, with the count of entries in the evidence
    h0 = sampler_health(_run(_iid(C=C, D=D, m=m), f=rng.normal(size=(C, D, P, m))))
    assert h0.status == "equilibrated" and h0.entries["f"]["rhat_above"] == 0, h0
    assert "f (worst of 60 outputs)" in h0.evidence


# ---------------------------------------------------------------------------------------------- certification
def _cert(agree, families=("prior", "annealed")):
    return {"families": list(families), "agree": agree,
            "disagreements": [] if agree else
            ["code_fraction[z1][100]: prior 0.160 ± 0.010 vs annealed 0.020 ± 0.008"],
            "observables": {"code_fraction[z1][100]": {"prior": [0.16, 0.01], "annealed": [0.02, 0.008]}},
            "error_model": "binomial s.e. of the unit fractions, chains pooled"}


def test_certification_that_disagrees_makes_the_run_metastable():
    h = sampler_health(_run(_iid(), attrs={CERTIFICATION_ATTR: json.dumps(_cert(False))}))
    assert h.status == "metastable" and h.populations == "metastable", h
    assert h.reason == "code_fraction[z1][100]: prior 0.160 ± 0.010 vs annealed 0.020 ± 0.008"
    assert h.certification["families"] == ["prior", "annealed"]
    gated = gate_verdicts(VERDICTS, h)
    assert all(v == "metastable: see the sampler health" for v in gated.values()), gated
    assert h.summary()[0].startswith("metastable: code_fraction") and "metastable: metastable" not in repr(h)
    back = SamplerHealth.from_dataset(h.to_dataset())                  # the record survives storage
    assert back.status == "metastable" and back.certification == h.certification


def test_certification_that_agrees_is_named_in_the_evidence():
    h = sampler_health(_run(_iid(), attrs={CERTIFICATION_ATTR: json.dumps(_cert(True))}))
    assert h.status == "equilibrated" and h.populations == "certified by prior, annealed", h
    assert "populations certified by prior, annealed" in h.evidence
    assert gate_verdicts(VERDICTS, h) == VERDICTS                     # certified: every verdict stands, unmarked


def test_certification_does_not_hide_a_relaxing_run():
    a = _frozen_populations()
    h = sampler_health(_run(a, attrs={CERTIFICATION_ATTR: json.dumps(_cert(True))}))
    assert h.status == "relaxing", h


def test_without_certification_the_populations_are_not_certified():
    h = sampler_health(_run(_iid()))
    assert h.status == "equilibrated" and h.populations == "not certified" and h.certification is None, h
    assert "populations not certified" in h.summary() and h.evidence.endswith("populations not certified")
    gated = gate_verdicts(VERDICTS, h)
    for k, v in VERDICTS.items():
        if k.startswith(("codes", "branches", "outliers")):
            assert gated[k] == v + NOT_CERTIFIED and gated[k].startswith(v)   # a suffix: prefix checks still work
        else:
            assert gated[k] == v


def test_malformed_certification_is_rejected():
    with pytest.raises(ValueError, match=CERTIFICATION_ATTR):
        sampler_health(_run(_iid(), attrs={CERTIFICATION_ATTR: json.dumps({"agree": "yes"})}))


# ---------------------------------------------------------------------------------------------- the Gibbs sampler
def test_exact_gibbs_run_is_judged_like_any_other():
    """The case of the issue: the exact Gibbs sampler on a linear net at N = 10, T = 1e-3, where the readout norms
    mix slowly between chains (R̂(q_a) 1.3–1.5, ESS < 20) while the units keep their identity ("ergodicity broken").
    The old gate exempted q_a (chain means within 3 population s.e.) and called the run equilibrated."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = bnnzoo.sample("deep_linear", bnnzoo.toy_task(P=20, y_neg=0.0), width=10, sampler="gibbs",
                              num_chains=4, num_warmup=200, num_samples=400, seed=1, temperature=1e-3,
                              progress=False)
        rep = diagnose(idata, kernels=False, theory=False)
    h = rep.health
    assert h.sampler == "gibbs" and math.isnan(h.ebfmi_min)         # no energies: those checks are not claimed
    assert "E-BFMI" not in h.evidence
    assert all(h.rhat[f"q_a[{c}]"] > MAX_RHAT for c in range(3)), h.rhat
    assert h.status == "relaxing", h
    assert rep.ergodicity["a"].verdict == "broken"
    assert all(str(v).startswith("relaxing: ") for v in rep.verdicts.values()), rep.verdicts


def test_a_model_of_its_own_is_judged_on_its_variables():
    """A NumPyro model with none of the zoo's sites used to come out "equilibrated" with no observable judged; its
    own variables are judged now: a mixing run is equilibrated with their R̂ reported, chains started apart that
    barely move are not."""
    import numpyro
    import numpyro.distributions as dist

    import bnnzoo

    def linreg(X, Y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        numpyro.sample("obs", dist.Normal(X @ w, 0.5).to_event(1), obs=None if Y is None else Y[:, 0])

    t = bnnzoo.toy_task(P=4, N0=5, ratios=(0.5, 0.5))
    good = sampler_health(bnnzoo.sample(linreg, t, num_chains=2, num_warmup=100, num_samples=200, progress=False))
    assert good.status == "equilibrated" and "w" in good.rhat and good.rhat["w"] < 1.1
    with pytest.warns(RuntimeWarning):
        stuck = bnnzoo.sample(linreg, t, num_chains=2, num_warmup=0, num_samples=200, progress=False,
                              sampler="hmc", num_steps=1, step_size=1e-4)
    h = sampler_health(stuck)
    assert h.status != "equilibrated" and any("w" in r for r in h.relaxing + h.reasons)


def test_identical_chains_and_a_frozen_chain_with_jitter_fail():
    """Two chains equal draw for draw prove nothing; a chain that moves by a few float32 ulps did not move: both
    "failed", although R̂ and ESS (rank-based) would pass them."""
    a = _iid(C=2)
    a[1] = a[0]
    rng = np.random.default_rng(0)
    f = np.repeat(rng.normal(scale=0.1, size=(1, 300, 8, 2)), 2, axis=0)
    h = sampler_health(_run(a, f=f, mse=np.repeat(rng.normal(1.0, 0.1, (1, 300)), 2, axis=0)))
    assert h.status == "failed" and any("chains 0, 1 are identical" in r for r in h.reasons), h.reasons
    frozen = np.ones((2, 300, 20, 2)) * rng.normal(size=(1, 1, 20, 2))
    jitter = frozen * (1 + 3e-7 * rng.standard_normal(frozen.shape))
    f = 0.3 * (1 + 3e-7 * rng.standard_normal((2, 300, 8, 2)))
    h = sampler_health(_run(jitter, f=f, mse=1 + 3e-7 * rng.standard_normal((2, 300))))
    assert h.status == "failed" and any("changes by less than 1e-06" in r for r in h.reasons), h.reasons
    healthy = sampler_health(_run(_iid(C=2)))
    assert not any("identical" in r or "less than" in r for r in healthy.reasons), healthy.reasons


def test_a_stored_pt_run_is_read_without_its_round_trip_check():
    """A run stored by the parallel tempering of earlier versions (``sampler="pt"``, removed): iid draws with no
    round trip recorded are judged by the ordinary checks (equilibrated, as the same draws of any sampler), the
    evidence says the round trips are no longer checked, and the stored log evidence is read with the checks it
    passed or failed when it ran."""
    ev = {"value": -30.0, "se": 1.0, "method": "thermodynamic integration", "trustworthy": False,
          "reason": "2 of 2 chains made no round trip of the replicas"}
    cfg = {"sampler": {"sampler": "pt"}, "engine": {"round_trips": [0, 0], "swap_rejection": [1.0],
                                                    "log_evidence": ev}}
    run = _run(_iid(), attrs={"bnnzoo_config": json.dumps(cfg)})
    plain = sampler_health(_run(_iid()))
    h = sampler_health(run)
    assert h.status == plain.status == "equilibrated", h.summary()
    assert h.evidence.endswith("; parallel tempering's round trips not checked (sampler 'pt' removed)"), h.evidence
    assert h.log_evidence == "log evidence not trustworthy: 2 of 2 chains made no round trip of the replicas " \
                             "(-30 ± 1)", h.log_evidence
