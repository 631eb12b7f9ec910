"""The model contract, checked for every registered zoo entry at tiny sizes.

Each entry's model must behave as a plain NumPyro model:
* prior moments of every weight site against the entry's declared ``prior_variances`` (independent: the declared
  numbers are the model's documented prior; the test draws from the model).  Entries of one site are i.i.d., so with
  M = draws × entries the sample mean has sd σ/√M and the sample variance sd σ²√(2/(M−1)); tolerance 5 sd each;
* named dims on every site of a ``bnnzoo.sample`` run (no ArviZ default "<site>_dim_0");
* 50 steps of SVI with AutoNormal and with AutoDelta give finite losses (automatic guides need unique plates);
* ``Predictive`` on new inputs (a different number of points) gives f of shape (draws, points, m), equal to the
  public forward pass of the same weights;
* a few NUTS steps with priors on the likelihood-variance hyperparameter and on a prior variance (traced values)
  give finite draws;
* bad arguments give the same one-line ValueError from the model as from ``bnnzoo.sample``'s validation.

Run time: compiling dominates.  The checks that compile a sampler or a second guide (bnnzoo.sample, NUTS with
hyperpriors, AutoDelta) run in the default suite on one entry per model function and on every entry with
``-m slow``; the other checks run on every entry by default.
"""

import inspect
import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro import handlers
from numpyro.infer import MCMC, NUTS, SVI, Predictive, Trace_ELBO
from numpyro.infer.autoguide import AutoDelta, AutoNormal

import bnnzoo
from bnnzoo import azcompat
from bnnzoo.models import (attention, attention_forward, fcn, fcn_forward, gated, gated_forward, list_entries,
                           three_layer, three_layer_forward)
from bnnzoo.tasks import toy_task

ENTRIES = [e.name for e in list_entries()]
FORWARD = {fcn: fcn_forward, three_layer: three_layer_forward, attention: attention_forward, gated: gated_forward}
_PREFERRED = ("relu", "three_layer_erf", "softmax_attention", "gdln_xor")


def _representatives():
    """One entry per model function (the preferred one if registered, else the first)."""
    rep = {}
    for e in list_entries():
        if e.model not in rep or e.name in _PREFERRED:
            rep[e.model] = e.name
    return set(rep.values())


REPRESENTATIVE = _representatives()
ONE_PER_MODEL = [n if n in REPRESENTATIVE else pytest.param(n, marks=pytest.mark.slow) for n in ENTRIES]


def tiny(name):
    """(entry, task, model kwargs) at tiny sizes; entries of unknown model functions keep their defaults."""
    entry = bnnzoo.models.get_entry(name)
    kw, tkw = dict(entry.defaults), dict(entry.task_defaults)
    if entry.model is fcn:
        kw.update(width=4)
        tkw.update(P=6)
    elif entry.model is three_layer:
        kw.update(width1=4, width2=3)
        tkw.update(d=4, P=8, P_test=5)
    elif entry.model is attention:
        kw.update(heads=2, key_dim=2)
        tkw.update(d=3, P=8, P_test=5)
    elif entry.model is gated:
        tkw.update(hidden=3)
        if "modules" in inspect.signature(entry.make_task).parameters:
            tkw.update(modules=3)  # routing: 3 input and 3 output modules
    task = entry.make_task(**tkw)
    if entry.model is gated:
        kw["spec"] = task.meta["spec"]  # the task's network, at the task's (tiny) hidden size
    if entry.resolve is not None:
        kw = entry.resolve(task.X, kw)
    return entry, task, kw


def _weight_sites(entry, task, kw):
    tr = handlers.trace(handlers.seed(entry.model, 0)).get_trace(task.X, task.Y, **kw)
    return sorted(k for k, s in tr.items() if s["type"] == "sample" and not s["is_observed"])


def _hyper_names(kw):
    temp = next(k for k in ("temperature", "kappa") if k in kw)
    var = next(k for k in ("sigma_a2", "sigma2") if k in kw)
    return temp, var


@pytest.mark.parametrize("name", ENTRIES)
def test_prior_moments_and_predictive_on_new_inputs(name):
    """Prior draws on NEW inputs (a different number of points): weight moments against the declared prior
    variances, f and y of the right shape, f equal to the public forward pass of the same weights."""
    entry, task, kw = tiny(name)
    assert entry.prior_variances is not None, f"{name} declares no prior_variances"
    pv = entry.prior_variances(task.X, **kw)
    assert sorted(pv) == _weight_sites(entry, task, kw)  # every latent site is a declared weight
    S = 400
    P_new = task.P + 3
    X_new = task.X[np.arange(P_new) % task.P]  # valid rows for every entry (gates included), a new count
    draws = Predictive(entry.model, num_samples=S)(jax.random.PRNGKey(1), X_new, None, num_outputs=task.m, **kw)
    for site, v in pv.items():
        x = np.asarray(draws[site], dtype=float).ravel()
        M = x.size
        assert abs(x.mean()) < 5 * math.sqrt(v / M), (site, x.mean(), v)
        assert abs(x.var() / v - 1) < 5 * math.sqrt(2 / (M - 1)), (site, x.var(), v)
    assert draws["f"].shape == (S, P_new, task.m) and draws["y"].shape == (S, P_new, task.m)
    forward = getattr(entry, "forward", None) or FORWARD[entry.model]
    f = forward(X_new, {k: draws[k][:5] for k in pv}, **kw)  # a batch of 5 draws at once
    np.testing.assert_allclose(np.asarray(f), np.asarray(draws["f"][:5]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ENTRIES)
def test_every_site_has_named_dims(name):
    """The entry's dims name every site of the model (what bnnzoo.sample's conversion reads), with the right rank."""
    entry, task, kw = tiny(name)
    record = tuple(getattr(entry, "record", ()))
    args = dict(kw)
    if record:
        args["record"] = record
    if task.X_test is not None:
        args["X_test"] = task.X_test
    tr = handlers.trace(handlers.seed(entry.model, 0)).get_trace(task.X, task.Y, **args)
    dims = entry.dims(**args)
    for k, site in tr.items():
        if site["type"] in ("sample", "deterministic"):
            assert k in dims, f"site {k} has no dims"
            assert len(dims[k]) == np.ndim(site["value"]), (k, dims[k], np.shape(site["value"]))


@pytest.mark.parametrize("name", ONE_PER_MODEL)
def test_sample_names_every_dim(name):
    entry, task, kw = tiny(name)
    record = tuple(getattr(entry, "record", ()))
    idata = bnnzoo.sample(name, task, num_chains=1, num_warmup=0, num_samples=2, sampler="hmc", num_steps=1,
                          step_size=1e-3, progress=False, **({"record": record} if record else {}), **kw)
    seen = 0
    for g in azcompat.group_names(idata):
        ds = azcompat.get_group(idata, g)
        for v in ds.data_vars:
            seen += 1
            bad = [d for d in ds[v].dims if "_dim_" in str(d)]
            assert not bad, f"{g}/{v} has unnamed dims {bad}"
    assert seen > 0


def _svi(name, guide):
    entry, task, kw = tiny(name)

    def model(X, Y):
        return entry.model(X, Y, **kw)

    svi = SVI(model, guide(model), numpyro.optim.Adam(1e-2), Trace_ELBO())
    res = svi.run(jax.random.PRNGKey(0), 50, task.X, task.Y, progress_bar=False)
    assert res.losses.shape == (50,) and np.all(np.isfinite(np.asarray(res.losses)))


@pytest.mark.parametrize("name", ENTRIES)
def test_svi_autonormal(name):
    _svi(name, AutoNormal)


@pytest.mark.parametrize("name", ONE_PER_MODEL)
def test_svi_autodelta(name):
    _svi(name, AutoDelta)


@pytest.mark.parametrize("name", ONE_PER_MODEL)
def test_nuts_with_hyperpriors(name):
    entry, task, kw = tiny(name)
    temp, var = _hyper_names(kw)
    t0 = float(kw[temp])

    def model(X, Y):
        T = numpyro.sample("T", dist.LogNormal(math.log(t0), 0.5))
        s2 = numpyro.sample("s2", dist.LogNormal(0.0, 0.5))
        return entry.model(X, Y, **{**kw, temp: T, var: s2})

    mcmc = MCMC(NUTS(model, max_tree_depth=4), num_warmup=5, num_samples=5, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), task.X, task.Y)
    s = mcmc.get_samples()
    for k, v in s.items():
        assert np.all(np.isfinite(np.asarray(v))), k
    assert np.all(np.asarray(s["T"]) > 0) and np.ptp(np.asarray(s["T"])) > 0  # T is a latent that moved


@pytest.mark.parametrize("name", ENTRIES)
def test_bad_arguments_same_message_as_sample(name):
    entry, task, kw = tiny(name)
    temp, _ = _hyper_names(kw)
    size = next((k for k in ("width", "width1", "heads") if k in kw), None)
    bad = [{temp: "0.1"}, {temp: True}, {temp: -1.0}, {"record": "nonsense"}]
    if size is not None:
        bad += [{size: True}, {size: 0}, {size: 2.5}]
    for b in bad:
        args = {**kw, **b}
        with pytest.raises(ValueError) as from_validate:
            entry.validate(task.X, task.Y, **args)
        with pytest.raises(ValueError) as from_model:
            handlers.seed(entry.model, 0)(task.X, task.Y, **args)
        msg = str(from_model.value)
        assert msg == str(from_validate.value) and "\n" not in msg, (b, msg)
        assert next(iter(b)) in msg, (b, msg)  # the message names the argument
    with pytest.raises(ValueError, match="num_outputs"):
        if entry.model is gated:
            handlers.seed(entry.model, 0)(task.X, None, **{**kw, "num_outputs": task.m + 1})
        else:
            handlers.seed(entry.model, 0)(task.X, None, **kw)
    with pytest.raises(ValueError, match="Y must have shape"):
        handlers.seed(entry.model, 0)(task.X, task.Y[:-1], **kw)


# ------------------------------------------------------------------------------------------------ fcn specifics
def test_fcn_direct_call_errors_are_one_line():
    X, Y = np.eye(4, 6), np.ones((4, 2))
    run = handlers.seed(fcn, 0)
    for kw, match in [(dict(width=4, sigma_w2=-1.0), "sigma_w2 must be a number > 0"),  # was math domain error
                      (dict(width=0), "width must be an integer >= 1"),  # was ZeroDivisionError
                      (dict(width=4, depth=0), "depth must be an integer >= 1"),
                      (dict(width=4, sigma_a2=np.nan), "sigma_a2 must be a number > 0"),
                      (dict(width=4, activation=["relu"]), "activation must be one of"),
                      (dict(width=4, likelihood=1), "likelihood must be True or False")]:
        with pytest.raises(ValueError, match=match):
            run(X, Y, **kw)
    with pytest.raises(ValueError, match="Y must have shape"):  # was a bare AssertionError
        run(X, np.ones((3, 2)), width=4)
    with pytest.raises(ValueError, match="give num_outputs"):  # was a bare TypeError
        run(X, None, width=4)
    # record as one string is one name (not its characters)
    tr = handlers.trace(run).get_trace(X, Y, width=4, depth=2, record="z2")
    assert "z2" in tr and "z1" not in tr


def test_composition_of_two_nets_in_one_model():
    """The issue's case: two fcns inside one model, one likelihood, no latent 'y', automatic guides work."""
    X = np.asarray(toy_task(P=6).X)
    Y = np.asarray(toy_task(P=6).Y[:, :1])

    def model(X, Y=None):
        with handlers.scope(prefix="net1"):
            f1 = fcn(X, width=4, num_outputs=1, activation="relu", likelihood=False)
        with handlers.scope(prefix="net2"):
            f2 = fcn(X, width=3, num_outputs=1, activation="sigmoid", likelihood=False)
        with numpyro.plate("point", X.shape[0], dim=-2), numpyro.plate("class", 1, dim=-1):
            numpyro.sample("y", dist.Normal(f1 + f2, 0.1), obs=Y)

    tr = handlers.trace(handlers.seed(model, 0)).get_trace(X, Y)
    latent = sorted(k for k, s in tr.items() if s["type"] == "sample" and not s["is_observed"])
    assert latent == ["net1/W1", "net1/a", "net2/W1", "net2/a"]
    assert tr["net1/W1"]["value"].shape == (4, X.shape[1]) and tr["net2/W1"]["value"].shape == (3, X.shape[1])
    assert tr["y"]["is_observed"]
    # likelihood=False with Y=None: f only, no latent y
    tr0 = handlers.trace(handlers.seed(fcn, 0)).get_trace(X, None, width=4, num_outputs=1, likelihood=False)
    assert "y" not in tr0 and "f" in tr0
    res = SVI(model, AutoNormal(model), numpyro.optim.Adam(1e-2), Trace_ELBO()).run(
        jax.random.PRNGKey(0), 50, X, Y, progress_bar=False)
    assert np.all(np.isfinite(np.asarray(res.losses)))


def test_traced_hyperparameters_under_jit_give_the_concrete_result():
    """The log density with a traced temperature equals the one with the same concrete temperature."""
    t = toy_task(P=6)
    X, Y = t.X, t.Y
    params = {"W1": jnp.ones((4, t.N0)) * 0.1, "a": jnp.ones((4, t.m)) * 0.2}

    def logp(T):
        return numpyro.infer.util.log_density(fcn, (X, Y), dict(width=4, temperature=T, activation="relu"),
                                              params)[0]

    np.testing.assert_allclose(float(jax.jit(logp)(0.05)), float(logp(0.05)), rtol=1e-6)
