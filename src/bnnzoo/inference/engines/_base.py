"""What every engine shares: the :class:`Engine` record a sampler declares, the :class:`Draws` record an engine
returns, the store identity of a run, and the one ``num_steps`` rule over the declared engines."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from types import SimpleNamespace
from typing import Callable

import numpy as np
import xarray as xr

from ...models._checks import check_int
from ...models.fcn_fast import fcn_fast
from ..convert import gibbs_warmup_datasets, jsonable, thinned_dataset, versions
from ..store import fingerprint

OPTIONS = ("chunk_size", "store", "resume", "site_thinning", "reparam", "step_size", "dense_mass",
           "target_accept", "max_tree_depth")
"""The settings of :func:`bnnzoo.sample` an engine may refuse (:attr:`Engine.refuses`), in the order a refusal names
them."""


@dataclass(frozen=True)
class Engine:
    """One sampler as :func:`bnnzoo.sample` sees it: declared once, in its engine module, and read by the library and
    the CLI alike (:mod:`bnnzoo.inference.engines`).

    Attributes
    ----------
    name : the ``sampler=`` name.
    library : the library that draws (``run_config(idata)``'s ``inference_library``): "numpyro", "blackjax" or a
        bnnzoo module.
    draw : ``draw(spec, key_run, key_pred, init_params) -> Draws``: the run of a checked
        :class:`~bnnzoo.inference.plan.RunSpec` (``init_params`` the unconstrained starting values when ``init`` is a
        dict, else None).
    every_entry : offered by every zoo entry and by a plain NumPyro model (else only by the entries that list it in
        ``ZooEntry.samplers``).
    kernel : a NumPyro kernel (:func:`bnnzoo.inference.engines.kernels.build_kernel`) that runs through the chain
        methods and the chunked driver; False: the engine runs its own loop on one device.
    coupled : its chains are tuned together (ChEES / SNAPER): two or more chains, never one after the other.
    takes : the sampler-specific settings it takes: "num_steps", "tempering", "moves".
    needs : those of ``takes`` it cannot run without.
    refuses : the settings of :data:`OPTIONS` it does not take, given (``max_tree_depth`` other than 10).
    refusal : why, in the one-line error that names them.
    """

    name: str
    library: str
    draw: Callable
    every_entry: bool = True
    kernel: bool = False
    coupled: bool = False
    takes: tuple = ()
    needs: tuple = ()
    refuses: tuple = ()
    refusal: str = ""


@dataclass
class Draws:
    """What an engine hands to the conversion: the draws and their statistics.

    Attributes
    ----------
    samples : {site: (chain, draw, ...)} every recorded site (latent and deterministic), ``f_test`` taken out.
    stats : {name: (chain, draw)} the ``sample_stats`` arrays (:data:`bnnzoo.inference.convert.SAMPLE_STATS`).
    f_test : (chain, draw, test_point, class) the outputs on the test set, or None (no test set, or not recorded).
    engine : the engine's provenance (``run_config(idata)["engine"]``), or None (NumPyro's ``MCMC``).
    thinned : the ``posterior_thinned`` group, or None.
    warmup : the warm-up groups {name: Dataset}, or None.
    """

    samples: dict
    stats: dict
    f_test: np.ndarray | None = None
    engine: dict | None = None
    thinned: xr.Dataset | None = None
    warmup: dict | None = None


def check_num_steps(engines: dict, sampler: str, num_steps, *, cli: bool = False) -> None:
    """The one rule for ``num_steps`` over the declared ``engines`` ({name: Engine}): an engine that ``needs`` it
    (sampler="hmc") gets it, those that ``take`` it ("hmc", "smc": leapfrog steps per draw or per HMC move)
    may, no other sampler does.

    Parameters
    ----------
    engines : dict
        {name: Engine}: the registry, or the part of it a caller serves (the kernel builder: its kernels).
    sampler : str
        The sampler asked for ("auto" included).
    num_steps : int or None
        Leapfrog steps per draw, None when not given.
    cli : bool
        Name the arguments as the CLI's flags (``--num-steps``, ``--sampler hmc``) in the message.

    Raises
    ------
    ValueError
        One line: a sampler that needs ``num_steps`` without it, ``num_steps`` with a sampler that does not take
        it, or ``num_steps`` not an integer >= 1.
    """
    arg, key = ("--num-steps", "--sampler ") if cli else ("num_steps", "sampler=")
    name = (lambda s: s) if cli else repr
    engine = engines.get(sampler)
    if num_steps is None:
        if engine is not None and "num_steps" in engine.needs:
            raise ValueError(f"{key}{name(sampler)} needs {arg} (leapfrog steps per draw, an integer >= 1; a step "
                             f"size given fixes the step, otherwise it is adapted during warm-up)")
        return
    if engine is None or "num_steps" not in engine.takes:
        names = [name(n) for n, e in engines.items() if "num_steps" in e.takes]
        raise ValueError(f"{arg} applies to {key}{', '.join(names[:-1])}{' or ' if len(names) > 1 else ''}"
                         f"{names[-1]} only, not {name(sampler)}")
    check_int(arg, num_steps, 1)


def model_function(spec):
    """The NumPyro model the run's kernel samples: the entry's, or its reparametrisation
    (:mod:`bnnzoo.models.fcn_fast`) when ``spec.sampler.reparam`` names one."""
    reparam = spec.sampler.reparam
    if not reparam:
        return spec.model
    return partial(fcn_fast, integrate_readout="readout" in reparam, data_space="data_space" in reparam)


def store_manifest(spec, sampler_cfg: dict, chunk_size: int, **extra) -> dict:
    """The identity of a run with a store (``run.json``): its settings, the task's provenance, ``extra``, and a
    fingerprint of those and of the data and starting values; a resume must match it."""
    task, c, r = spec.task, spec.chains, spec.recording
    ident = dict(model=spec.name, model_kwargs=jsonable(spec.model_kwargs), sampler=jsonable(sampler_cfg),
                 seed=c.seed, num_chains=c.num_chains, num_warmup=c.num_warmup,
                 num_samples=c.num_samples, thinning=c.thinning, chunk_size=chunk_size,
                 exclude=list(r.exclude), site_thinning=jsonable(r.site_thinning or {}),
                 reparam=list(spec.sampler.reparam), warm_start=0,   # the removed option: keeps older stores' fingerprints
                 **({"site_means": jsonable(r.site_means)} if r.site_means else {}),
                 task=jsonable(task.meta), **extra)
    arrays = [task.X, task.Y] + ([task.X_test] if task.X_test is not None else [])
    init = spec.sampler.init
    if isinstance(init, dict):              # the starting values are part of the run's identity
        arrays += [np.asarray(init[k]) for k in sorted(init)]
    return dict(ident, fingerprint=fingerprint(ident, arrays), versions=versions())


def chains_args(spec) -> dict:
    """The keyword arguments of the engines whose chains run in memory with their own loop
    (:func:`bnnzoo.inference.gibbs_linear.gibbs_chains`, :func:`bnnzoo.inference.units.units_chains`): the run's
    sizes and the model's arguments."""
    task, c, r = spec.task, spec.chains, spec.recording
    return dict(X=task.X, Y=task.Y, num_chains=c.num_chains, num_warmup=c.num_warmup,
                num_samples=c.num_samples, thinning=c.thinning, seed=c.seed, X_test=task.X_test,
                exclude=r.exclude, progress=r.progress, kernel_means=r.site_means,
                **{k: v for k, v in spec.model_kwargs.items() if k != "X_test"})


def in_memory_draws(spec, samples: dict, stats: dict, info: dict) -> Draws:
    """:class:`Draws` from the (samples, stats, info) of an in-memory chains function, the kernels' block means
    in ``info``."""
    f_test = samples.pop("f_test", None)
    kernels = SimpleNamespace(thinned=info["kernel_means"], thinned_draws=info["kernel_draws"])
    r = spec.recording
    return Draws(samples=samples, stats=stats, f_test=f_test,
                 engine={"chain_method": spec.chains.method, "timing": info["timing"]},
                 thinned=thinned_dataset(kernels, r.dims, r.site_means) if kernels.thinned else None,
                 warmup=gibbs_warmup_datasets(info) if spec.chains.num_warmup else None)
