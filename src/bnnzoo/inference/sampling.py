"""``bnnzoo.sample``: the public call that samples a zoo model and returns ArviZ data with named dims and provenance.

``sample`` is a short composition: :func:`bnnzoo.inference.plan.make_spec` checks every argument once and returns
one frozen :class:`~bnnzoo.inference.plan.RunSpec`; the sampler's engine (:mod:`bnnzoo.inference.engines`, one
module each) draws from it and returns a :class:`~bnnzoo.inference.engines.Draws` record; :func:`inference_groups`
turns the draws into ArviZ groups, one function per group (:mod:`bnnzoo.inference.convert`,
:mod:`bnnzoo.inference.predictive`).  The sampler health is judged a floor above, by :func:`bnnzoo.sample`
(:mod:`bnnzoo.workflows.certify`), which judges a certified run's start families together.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from typing import Sequence

import jax
import numpy as np
from numpyro import handlers
from numpyro.distributions.transforms import biject_to

from .. import azcompat
from ..tasks import Task
from .convert import (constant_data_group, dataset, lead_coords, observed_data_group, posterior_group,
                      predictions_constant_data_group, predictions_group, provenance, run_config, sealed,
                      sample_stats_group)
from .engines import ENGINES, Draws
from .engines._base import model_function
from .engines.chunked import TRAJECTORY_GROWTH_WARN, _check_trajectory_settled  # noqa: F401  (re-exported)
from .engines.kernels import build_kernel
from .plan import MATMUL_PRECISIONS, REPARAMS, SAMPLERS, RunSpec, make_spec
from .predictive import log_likelihood as _log_likelihood
from .predictive import posterior_predictive as _posterior_predictive
from .predictive import prior_groups

__all__ = ["sample", "run_config", "build_kernel", "init_params_from_values", "SAMPLERS",
           "REPARAMS", "MATMUL_PRECISIONS"]


def trace_latent_sites(fn, X, Y, kw: dict) -> dict:
    """{name: trace site} of the latent sites of ``fn(X, Y, **kw)`` with the data observed (their supports and shapes;
    :func:`bnnzoo.inference.predictive.latent_sites` gives the names alone)."""
    tr = handlers.trace(handlers.seed(fn, jax.random.PRNGKey(0))).get_trace(X, Y, **kw)
    return {n: site for n, site in tr.items() if site["type"] == "sample" and not site.get("is_observed", False)}


def init_params_from_values(fn, X, Y, kw: dict, values: dict, num_chains: int) -> dict:
    """NumPyro's ``init_params`` (unconstrained, one row per chain) from starting values in the constrained space.

    Parameters
    ----------
    fn : the NumPyro model, called as ``fn(X, Y, **kw)``.
    X, Y, kw : its data and keyword arguments.
    values : {site name: array (chain, ...)}: a value for every latent (unobserved sample) site of the model.
    num_chains : the number of chains (the values' leading axis).

    Returns
    -------
    dict : {site: jax array (chain, ...)} mapped to the unconstrained space by each site's support bijection.

    Raises
    ------
    ValueError
        a latent site without a value, a name that is no latent site, or a value of the wrong shape.
    """
    latent = trace_latent_sites(fn, X, Y, kw)
    missing, unknown = sorted(set(latent) - set(values)), sorted(set(values) - set(latent))
    if missing or unknown:
        raise ValueError(f"init must give a value for every latent site of the model {sorted(latent)}"
                         + (f"; missing {missing}" if missing else "") + (f"; unknown {unknown}" if unknown else ""))
    out = {}
    for n, site in latent.items():
        v = np.asarray(values[n])
        want = (num_chains,) + tuple(np.shape(site["value"]))
        if v.shape != want:
            raise ValueError(f"init[{n!r}] must have shape (chain, ...) = {want}, got {v.shape}")
        out[n] = biject_to(site["fn"].support).inv(jax.numpy.asarray(v, dtype=jax.numpy.result_type(site["value"])))
    return out


def inference_groups(spec: RunSpec, draws: Draws, key_pred) -> dict:
    """The ArviZ groups of a run, one function per group (:mod:`bnnzoo.inference.convert`,
    :mod:`bnnzoo.inference.predictive`)."""
    task, kw, r = spec.task, spec.model_kwargs, spec.recording
    groups = {"posterior": posterior_group(spec, draws), "sample_stats": sample_stats_group(spec, draws),
              "observed_data": observed_data_group(spec), "constant_data": constant_data_group(spec)}
    lead, coords = lead_coords(draws)
    y_dims = {"y": ["point", "class"]}
    if r.log_likelihood:
        ll = _log_likelihood(spec.model, spec.entry, draws.samples, task.X, task.Y, kw)
        groups["log_likelihood"] = dataset({"y": ll}, y_dims, lead, coords)
    if r.posterior_predictive:
        y_pp = _posterior_predictive(spec.model, spec.entry, draws.samples, task.X, task.Y, kw,
                                     jax.random.fold_in(key_pred, 1 << 30))
        groups["posterior_predictive"] = dataset({"y": y_pp}, y_dims, lead, coords)
    if r.prior_predictive:
        groups.update(prior_groups(spec.model, task.X, task.Y, kw, jax.random.fold_in(key_pred, (1 << 30) + 1),
                                   len(coords["chain"]), len(coords["draw"]), r.dims, exclude=r.exclude))
    if draws.thinned is not None:
        groups["posterior_thinned"] = draws.thinned
    if draws.warmup is not None:
        groups.update(draws.warmup)
    if task.X_test is not None and draws.f_test is None:
        warnings.warn("the test-set output f_test was not recorded (excluded, or not computable): no predictions "
                      "group", RuntimeWarning, stacklevel=3)
    elif task.X_test is not None:
        groups["predictions"] = predictions_group(spec, draws)
        groups["predictions_constant_data"] = predictions_constant_data_group(spec)
    return groups


def sample(model, task: Task, *, num_chains: int | None = None, num_warmup: int = 500, num_samples: int = 500,
           sampler: str = "auto", seed: int = 0, thinning: int = 1, record: str | Sequence[str] | None = None,
           progress: bool = True, chain_method: str = "auto", step_size: float | None = None,
           num_steps: int | None = None, target_accept: float | None = None, max_tree_depth: int = 10,
           dense_mass: bool = False, init: str | dict = "prior", log_likelihood: bool = False,
           posterior_predictive: bool = False, prior_predictive: bool = False,
           dims: dict | None = None, chunk_size: int | None = None, store=None, resume: bool = False,
           exclude: Sequence[str] = (), site_thinning: dict | None = None, reparam: Sequence[str] | None = (),
           matmul_precision: str | None = "highest",
           tempering: dict | None = None, moves: dict | None = None, **model_kwargs):
    """Sample the posterior of ``model`` on ``task`` and return it as ArviZ data.

    :func:`bnnzoo.sample` is this function with ``certify`` (runs from several start families compared on their
    populations, :mod:`bnnzoo.workflows.certify`) added, and with the sampler health judged (a warning when the
    chains did not mix, :func:`bnnzoo.inference.health.warn_if_unhealthy`); this function does not judge it.

    Parameters
    ----------
    model : str, ZooEntry or callable
        A zoo entry name (``bnnzoo list``), a :class:`~bnnzoo.models.ZooEntry`, or any NumPyro model called as
        ``model(X, Y, **model_kwargs)``.
    task : Task
        The data (:class:`~bnnzoo.tasks.Task`): X (point, input), Y (point, class), optional test set.
    num_chains : int or None
        Chains; None: the device's default (:data:`~bnnzoo.inference.plan.DEFAULT_CHAINS`: 4 on a CPU, 64 on a
        GPU), logged when the run starts and recorded in the provenance (``num_chains_default``).
    num_warmup, num_samples, thinning : int
        MCMC sizes (>= 1, >= 0, >= 1, >= 1); each chain keeps num_samples // thinning draws.
    sampler : str
        "auto" (default): the fastest sampler the performance benchmark found for the run at hand
        (:func:`bnnzoo.inference.plan.choose_sampler`: for two or more chains the entry's ``auto_sampler``,
        "snaper" on every entry but the attention head's "chees"; "nuts" for one chain, a sequential chain method,
        a dense mass or a ``max_tree_depth`` other than 10; "units" for a certified run of the one-hidden-layer
        sigmoidal net on orthogonal inputs); the run's attributes name the sampler it picked.  Or
        one of the samplers the entry offers (``ZooEntry.samplers``): "nuts" (adaptive NUTS); "hmc" (fixed
        ``num_steps`` leapfrog steps, required; give ``step_size`` to fix the step too); "gibbs" (the exact blocked
        Gibbs sampler of the linear fully-connected nets, :mod:`bnnzoo.inference.gibbs_linear`: same sites and
        dims, ``num_warmup`` counts sweeps, chains one after the other in memory, no HMC settings or long-run
        options); "units" (unit-wise Metropolis–Hastings moves of one neuron's preactivations with the readout
        integrated out, :mod:`bnnzoo.inference.units`: exact for the one-hidden-layer fully-connected nets with the
        non-lazy readout on orthogonal inputs, any φ and m; moves units between codes; ``num_warmup`` counts sweeps,
        chains batched in memory from prior starts or given ``W1``, chunks, store and resume as the HMC samplers, no
        HMC settings or ``site_thinning``; its moves per sweep in ``moves``; sample_stats ``acceptance_rate`` and
        ``code_change_rate`` per sweep); "chees" (ChEES-HMC, :mod:`bnnzoo.inference.chees`: jittered HMC whose step size, trajectory length
        and diagonal mass are tuned across the chains during warm-up, then fixed; needs num_chains >= 2, runs
        through the chunked driver; its readout weights can mix slowly: check their ESS before reading branches);
        "snaper" (the same sampler with the trajectory length tuned on the leading
        principal component of the whitened posterior, its slowest direction).  The docs compare their speed.
        "smc" (BlackJAX's adaptive tempered SMC from the prior with HMC mutations, :mod:`bnnzoo.inference.smc`;
        options in ``tempering``; in memory on one device, no ``step_size``, ``dense_mass``, ``max_tree_depth`` or
        long-run options: each chain is an independent SMC run whose ``num_samples`` particles are its draws;
        ``num_warmup`` is not used, ``thinning`` must be 1, ``init`` "prior", two or more chains); it stores the log
        evidence with its Monte Carlo error in ``run_config(idata)["engine"]["log_evidence"]``
        (:func:`bnnzoo.inference.smc.log_evidence`).
    seed : int
        PRNG seed (>= 0).  The same seed gives the same draws with and without ``chunk_size`` / ``store``; the chain
        methods agree up to float rounding (:mod:`bnnzoo.inference.plan`).
    record : str, sequence of str, or None
        Extra sites to record; None: the entry's default (``ZooEntry.record``; the fully-connected nets:
        "summaries", every unit's class means and mean square and what each draw's D_LR / NC1 / target CKA need, of
        every layer, plus, through the chunked driver, the kernels ``K``/``Kz`` as means over blocks of draws in
        ``posterior_thinned``, :data:`~bnnzoo.inference.plan.KERNEL_BATCHES`), () for nothing extra.  "z" (or
        ("z",)) adds the preactivations of every layer (neuron, point) at every draw, "z1" those of the first:
        memory grows as N·P per draw.
    progress : bool
        Report progress: a bar when stderr is a terminal, otherwise INFO lines on the ``bnnzoo`` logger.
    chain_method : str
        "auto": the chains split across the local devices ("sharded") when there are several and num_chains is a
        multiple of their number, otherwise batched on one device ("vectorized"); "vectorized"; "sharded"
        (num_chains a multiple of the device count);
        "sequential" (NumPyro, one chain after the other; not with the long-run options).
    step_size : float or None
        Fixed leapfrog step (no adaptation); None adapts it.
    num_steps : int or None
        HMC: leapfrog steps per draw (required); "smc": the most leapfrog steps per HMC transition, each
        step drawing from num_steps/2..num_steps (default 16).
    target_accept : float or None
        NUTS / HMC: mean acceptance (default 0.8); ChEES / SNAPER: harmonic-mean acceptance (default 0.651); "smc":
        mean acceptance of the mutations (default 0.8: their step size is
        set once per tempering step, not averaged over a warm-up, so it keeps a margin against divergences).
    max_tree_depth : int
        NUTS: at most 2**max_tree_depth leapfrog steps per draw; ChEES / SNAPER: the same cap per iteration.
    dense_mass : bool
        NUTS / HMC: adapt a dense mass matrix.
    init : str, callable or dict
        "prior" (each chain starts from a prior draw), "uniform" (NumPyro's default, uniform in (-2, 2)), one of
        NumPyro's ``init_to_*`` strategies (e.g. ``numpyro.infer.init_to_median()``; HMC samplers only), or a
        dict {site name: array (chain, ...)} giving every latent site's starting value for each chain, in the
        constrained space (the values a posterior draw holds); not with sampler="gibbs" or ``reparam``.
    log_likelihood : bool
        Add the pointwise log-likelihood group ``log_likelihood`` {y: (chain, draw, point, class)} (large).
    posterior_predictive : bool
        Add ``posterior_predictive`` {y: (chain, draw, point, class)}: y drawn from the likelihood at each
        posterior draw (for ``az.plot_ppc`` / ``plot_ppc_dist`` and, with ``log_likelihood``, LOO-PIT; see
        :mod:`bnnzoo.azcompat`).
    prior_predictive : bool
        Add ``prior`` (every site, num_chains × kept draws independent prior draws) and ``prior_predictive``
        {y: (chain, draw, point, class)}.
    dims : dict or None
        Dims of the sites of a custom model (zoo entries know theirs; plates name them otherwise).
    chunk_size : int or None
        Kept draws per jitted chunk of the chunked driver (:mod:`bnnzoo.inference.chunked`; device memory holds one
        chunk).  Default: all draws, or 100 with a store.
    store : path or None
        A folder: every chunk is written there as NetCDF with a sampler-state checkpoint after it.
    resume : bool
        Continue the run in ``store``; the result equals the uninterrupted run.
    exclude : sequence of str
        Sites not recorded at all (e.g. ("W1",) for a big first layer).
    site_thinning : dict or None
        {site: k}: record that site on every k-th kept draw only (group ``posterior_thinned``, dim
        ``draw_<site>`` holding the kept-draw indices); k must divide ``chunk_size``.
    reparam : sequence of str
        Reparametrisations the entry offers (``ZooEntry.reparams``): ("data_space",) (first layer sampled as
        preactivations on the training inputs) or ("readout", "data_space") (the readout integrated out as well,
        drawn from its Gaussian conditional); the posterior is unchanged (:mod:`bnnzoo.models.fcn_fast`).
        "readout" alone is refused (benchmarks/results/keep_drop.md).
    matmul_precision : str or None
        float32 matrix-product precision while sampling (``jax.default_matmul_precision``): "highest" (default:
        true float32) keeps the posterior exact on GPUs, whose JAX default rounds float32 products to
        TensorFloat32; None leaves JAX's setting alone.  No effect on CPU.
    tempering : dict or None
        Options of sampler="smc": ``target_ess`` (0.5), ``num_mcmc_steps`` (10 HMC transitions per particle and
        step), ``max_steps`` (1000 tempering steps at most).  None: the defaults.
    moves : dict or None
        The moves of sampler="units" per unit and sweep (:func:`bnnzoo.inference.units.check_moves`): ``tries``
        (independence proposals from the unit's cavity, integer >= 0), ``own`` (the own-readout step, bool),
        ``local`` (MALA steps, integer >= 0), ``pairs`` (pair rotations per unit, >= 0), ``radial`` (steps that scale
        a unit's preactivations, integer >= 0); a key left out keeps its default
        (:func:`bnnzoo.inference.units.default_moves`: 8 tries, own step, 4 local steps, no radial steps; ReLU 16
        local and 4 radial steps only; pairs 0.5).  Refused for the other samplers.  None: the defaults.
    **model_kwargs
        Model arguments; they override the entry's defaults (e.g. width=, temperature=).

    Several processes (hosts) after ``jax.distributed.initialize`` (:mod:`bnnzoo.inference.distributed`): call
    ``sample`` with the same arguments in every process; the chains are split over the processes (not the Gibbs
    sampler; num_chains a multiple of the process count; ChEES / SNAPER always sharded over all processes'
    devices), a store gets one sub-folder per process, and every process returns the whole run.

    Returns
    -------
    InferenceData (ArviZ 0.x) or DataTree (ArviZ 1.x)
        Groups ``posterior`` (named dims), ``sample_stats`` (diverging, step_size, n_steps, tree_depth, energy,
        acceptance_rate, lp), ``observed_data`` (y), ``constant_data`` (X, labels), ``predictions`` (f on X_test)
        and ``predictions_constant_data`` when the task has a test set, the optional groups above, and warm-up
        groups from the chunked driver.  Attributes carry the run's full provenance (:func:`run_config`).

    Raises
    ------
    ValueError
        On any bad argument, before anything compiles.
    """
    t_start = time.time()
    spec = make_spec(model, task, model_kwargs=model_kwargs, num_chains=num_chains, num_warmup=num_warmup,
                     num_samples=num_samples, sampler=sampler, seed=seed, thinning=thinning, record=record,
                     progress=progress, chain_method=chain_method, step_size=step_size, num_steps=num_steps,
                     target_accept=target_accept, max_tree_depth=max_tree_depth, dense_mass=dense_mass, init=init,
                     log_likelihood=log_likelihood, posterior_predictive=posterior_predictive,
                     prior_predictive=prior_predictive, dims=dims, chunk_size=chunk_size, store=store, resume=resume,
                     exclude=exclude, site_thinning=site_thinning, reparam=reparam,
                     matmul_precision=matmul_precision, tempering=tempering, moves=moves)
    key_run, key_pred = jax.random.split(jax.random.PRNGKey(spec.chains.seed))
    with (jax.default_matmul_precision(matmul_precision) if matmul_precision is not None
          else contextlib.nullcontext()):  # tracing happens inside: every jitted function gets this precision
        init_params = (init_params_from_values(model_function(spec), task.X, task.Y, spec.model_kwargs, init,
                                               spec.chains.num_chains) if isinstance(init, dict) else None)
        draws = ENGINES[spec.sampler.name].draw(spec, key_run, key_pred, init_params)
        groups = inference_groups(spec, draws, key_pred)
    n_div = int(draws.stats["diverging"].sum())
    if n_div:
        warnings.warn(f"{n_div} divergent transitions out of {draws.stats['diverging'].size} draws: the posterior "
                      f"may be poorly explored; lower step_size or raise target_accept", RuntimeWarning, stacklevel=2)
    attrs = provenance(spec, draws, wall_time_s=time.time() - t_start, library=ENGINES[spec.sampler.name].library)
    return azcompat.make_idata(groups, sealed(attrs, groups["posterior"]))
