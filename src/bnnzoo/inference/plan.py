"""The run plan of :func:`bnnzoo.sample`: its own arguments checked, and the chain method, the engine (NumPyro's
``MCMC`` or the chunked driver) and the sharding decided once, before anything compiles.

Why one place decides: the same seed must give the same draws whether a run is chunked or not.  The plain path and
the chunked driver (:mod:`bnnzoo.inference.chunked`) give identical draws for the same chain method, so both must
pick the same one; this module is the only place that picks.

Chain methods (the draws each gives for one seed):

* ``"vectorized"``: all chains batched on one device.  NumPyro's ``MCMC`` and the chunked driver give the same draws
  to the bit, with or without chunks.
* ``"sharded"``: the chains split across the local devices, batched on each (the chunked driver).
* ``"sequential"``: NumPyro runs one chain after the other, unbatched (not with the chunked driver's options).

Across chain methods the draws agree only up to float rounding: XLA compiles a product over one chain (a device
holding a single chain, or a sequential chain) differently from one over a batch of chains, so the first draw
agrees to the last float bit or so and the difference then grows with the chain's own dynamics (chaotic for
nonlinear nets): float64 runs stay within about 1e-10 over short runs, float32 runs become different, equally valid
chains after some tens of steps.  tests/system/test_reproducible.py pins both facts.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import math
import os
from dataclasses import dataclass
from typing import Any, Callable

import jax
import numpy as np
from numpyro import handlers
from numpyro.infer import initialization

from ..models._checks import check_int
from ..models.summaries import kernel_names
from ..models.zoo import ZooEntry, get_entry
from ..tasks import Task
from .chunked import engine_chunk_size
from .convert import infer_dims
from .distributed import check_sampler
from .engines import (CHEES_LIKE, ENGINES, EVERY_ENTRY, NUM_STEPS_SAMPLERS, SAMPLERS, TEMPERING, check_num_steps,
                      refused)
from .initialize import init_strategy
from .smc import check_options
from .units import check_moves, check_units

__all__ = ["RunSpec", "SamplerSpec", "ChainSpec", "RecordingSpec", "StoreSpec", "make_spec", "RunPlan", "make_plan",
           "choose_sampler", "units_serve", "SAMPLERS", "REPARAMS", "CHAIN_METHODS", "MATMUL_PRECISIONS", "check_int",
           "normalize_record", "CHEES_LIKE", "check_init", "TEMPERING", "NUM_STEPS_SAMPLERS", "check_num_steps",
           "init_strategy", "strategy_name"]

REPARAMS = ("readout", "data_space")
CHAIN_METHODS = ("auto", "vectorized", "sequential", "sharded")
_logger = logging.getLogger(__name__)
SEED_MAX = 2**63 - 1                        # the largest seed jax.random.PRNGKey takes
MATMUL_PRECISIONS = ("highest", "float32", "high", "tensorfloat32", "default", "bfloat16", None)


def _check_bool(name: str, value) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def strategy_name(init) -> str | None:
    """The name of a NumPyro ``init_to_*`` strategy (a function of :mod:`numpyro.infer.initialization`, possibly
    with its arguments bound by ``functools.partial``), or None for anything else."""
    fn = init.func if isinstance(init, functools.partial) else init
    name = getattr(fn, "__name__", "")
    return name if name.startswith("init_to_") and getattr(initialization, name, None) is fn else None


def check_init(init, num_chains: int) -> None:
    """Check ``init`` of :func:`bnnzoo.sample`: "prior", "uniform" or a dict {site name: array (chain, ...)} of
    starting values in the constrained space, one per chain (the site names and shapes are checked against the
    model by :func:`bnnzoo.inference.sampling.init_params_from_values`).

    Raises
    ------
    ValueError
        if ``init`` is none of these, or a value is not a finite array with ``num_chains`` rows.
    """
    if isinstance(init, str) and init in ("prior", "uniform"):
        return
    if callable(init):
        if strategy_name(init) is None:
            raise ValueError(f"init: a callable must be one of NumPyro's init_to_* strategies "
                             f"(numpyro.infer.initialization), got {init!r}")
        return
    if not isinstance(init, dict):
        raise ValueError(f"init must be 'prior' (a draw from the prior), 'uniform' (NumPyro's default), a NumPyro "
                         f"init_to_* strategy or a dict {{site: array (chain, ...)}} of starting values, got {init!r}")
    if not init:
        raise ValueError("init: the dict of starting values is empty; give {site: array (chain, ...)}")
    for k, v in init.items():
        if not isinstance(k, str) or not k:
            raise ValueError(f"init: site names must be non-empty strings, got {k!r}")
        arr = np.asarray(v)
        if arr.dtype.kind not in "fiu" or arr.ndim < 1 or arr.shape[0] != num_chains:
            raise ValueError(f"init[{k!r}] must be a numeric array with a leading chain axis of num_chains="
                             f"{num_chains} rows, got shape {arr.shape} and dtype {arr.dtype}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"init[{k!r}] holds NaN or inf")


def normalize_record(record) -> tuple[str, ...]:
    """``record`` as a tuple of site names: one name (``"z1"``) or a list/tuple of names.

    Raises
    ------
    ValueError
        if ``record`` is neither a string nor a sequence of non-empty strings.
    """
    if record is None:
        return ()
    if isinstance(record, str):
        record = (record,)
    if not isinstance(record, (list, tuple)) or not all(isinstance(r, str) and r for r in record):
        raise ValueError(f"record must be a site name or a list of site names (e.g. 'z' or ['z1', 'z2']), "
                         f"got {record!r}")
    return tuple(record)


@dataclass(frozen=True)
class RunPlan:
    """How :func:`bnnzoo.sample` runs, decided once by :func:`make_plan`.

    Attributes
    ----------
    chain_method : the resolved method: "vectorized", "sharded" or "sequential" (never "auto").
    use_engine : True when the chunked driver (:mod:`bnnzoo.inference.chunked`) runs the chains (or, for
        ``sampler="gibbs"`` and "smc", when the draws come with their test-set outputs as from the engine);
        False for NumPyro's ``MCMC``.
    n_devices : local devices seen by JAX.
    n_processes : JAX processes (several after ``jax.distributed.initialize``).
    local_chains : chains this process runs.
    record : the sites to record beyond the defaults, as a tuple.
    reparam : the reparametrisations, as a tuple.
    """

    chain_method: str
    use_engine: bool
    n_devices: int
    n_processes: int
    local_chains: int
    record: tuple[str, ...]
    reparam: tuple[str, ...]


def choose_sampler(sampler: str, entry, *, num_chains: int, chain_method: str = "auto", dense_mass: bool = False,
                   num_steps=None, max_tree_depth=10, certify: bool = False, units_serve: bool = False) -> str:
    """The sampler that ``sampler="auto"`` stands for on this run; any other name is returned unchanged.

    The choice follows the performance benchmark (``benchmarks/results/merit_cpu.md``, indexed in
    ``benchmarks/README.md``), which measures the effective sample size per second of the permutation-invariant
    observables against NumPyro's NUTS on the same cores:

    * one chain, ``chain_method="sequential"`` or ``dense_mass=True`` (SNAPER tunes across chains and keeps a
      diagonal mass), or a ``max_tree_depth`` other than 10 (read as a NUTS setting; name sampler="snaper" to cap
      its trajectories instead): "nuts";
    * two or more chains: the entry's ``auto_sampler`` — "snaper" (ChEES-HMC with the trajectory length tuned on
      the slowest direction) on every entry but the softmax attention head, where "chees" mixes the readout norm
      faster — and "snaper" for a plain NumPyro model;
    * a certified run (``certify``) of the one-hidden-layer sigmoidal net that the unit-wise sampler can serve
      (``units_serve``): "units".  Certification compares the start families' populations of codes, which SNAPER
      does not move at T = 0.01 (its families stay apart) and the unit-wise moves do
      (``benchmarks/results/certify_units_n60.md``, ``certify_units_sig_n100.md``).  Uncertified runs keep SNAPER:
      a unit-wise sweep costs several SNAPER draws, and at y− = ½ SNAPER's readout norms mixed as well in the same
      wall time (``benchmarks/results/units_vs_snaper.md``).

    Parameters
    ----------
    sampler : "auto" or a sampler name (``SAMPLERS``).
    entry : the zoo entry (None for a plain NumPyro model); its ``samplers`` bound the choice.
    num_chains, chain_method, dense_mass, max_tree_depth : the run's settings.
    num_steps : leapfrog steps per draw; given with "auto" it is an error (only sampler="hmc" takes it).
    certify : the run is certified across start families (``sample(..., certify=...)``).
    units_serve : sampler="units" can serve this run (:func:`units_serve`).

    Returns
    -------
    str : a name in ``SAMPLERS``.

    Raises
    ------
    ValueError
        if ``num_steps`` is given with ``sampler="auto"``.
    """
    if sampler != "auto":
        return sampler
    check_num_steps(sampler, num_steps)       # sampler='auto' never picks a sampler that takes it
    supported = offered_samplers(entry)
    nuts_only = dense_mass or chain_method == "sequential" or max_tree_depth != 10
    preferred = getattr(entry, "auto_sampler", "snaper") if entry is not None else "snaper"
    if num_chains >= 2 and not nuts_only and certify and units_serve:
        return "units"
    if num_chains >= 2 and not nuts_only and preferred in supported:
        return preferred
    return "nuts"


STATE_COPIES = 6
"""Copies of the parameters one chain's state holds (position, momentum, gradient, mass, proposal,
draw): with the kept draws, the floor of a run's memory against which absurd sizes are refused."""

MEMORY_SHARE = 0.8
"""Share of this machine's memory a run may need at least before it is refused (the rest: the program, the data,
the ArviZ copy)."""


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def _site_sizes(fn, task, kw: dict) -> tuple[int, dict]:
    """(latent numbers, {recorded site: numbers per draw}) of one draw of the model, from its shapes alone
    (:func:`jax.eval_shape`: nothing of that size is allocated, so an absurd width costs nothing here)."""
    def sites():
        tr = handlers.trace(handlers.seed(fn, jax.random.PRNGKey(0))).get_trace(task.X, task.Y, **kw)
        return ({n: s["value"] for n, s in tr.items() if s["type"] == "sample" and not s.get("is_observed", False)},
                {n: s["value"] for n, s in tr.items() if s["type"] == "deterministic"})

    latent, det = jax.eval_shape(sites)
    size = lambda v: int(np.prod(v.shape, dtype=np.float64))       # noqa: E731  (float: no overflow)
    return sum(size(v) for v in latent.values()), {n: size(v) for n, v in {**latent, **det}.items()}


def check_memory(fn, task, kw: dict, *, num_chains: int, n_keep: int, skip=()) -> None:
    """Refuse (one line, before anything compiles) a run whose chains' states and kept draws alone would not fit
    :data:`MEMORY_SHARE` of this machine's memory: ``num_chains`` × (latent numbers × :data:`STATE_COPIES` +
    ``n_keep`` × recorded numbers per draw) × 4 bytes, a floor of what the run holds.

    Parameters
    ----------
    fn : callable
        The NumPyro model; ``task`` and ``kw`` its data and keyword arguments (the net's size among them).
    num_chains, n_keep : int
        Chains, and draws kept per chain (``num_samples // thinning``).
    skip : sequence of str
        Sites not recorded at every draw (``exclude``, ``site_thinning``, ``site_means``).

    Raises
    ------
    ValueError
        Naming the sizes and the memory they need, when that exceeds the share.
    """
    total = _physical_memory()
    if total is None:
        return
    n, recorded = _site_sizes(fn, task, kw)
    per_draw = sum(v for k, v in recorded.items() if k not in set(skip))
    need = 4.0 * num_chains * (n * STATE_COPIES + n_keep * per_draw)
    if need > MEMORY_SHARE * total:
        sizes = f"num_chains={num_chains}, {n_keep} kept draws of {per_draw:.0f} recorded numbers and {n} " \
            f"parameters" + "".join(f" ({k}={kw[k]})" for k in ("width",) if k in kw)
        raise ValueError(f"{sizes} need at least {need / 2**30:.3g} GiB, more than {MEMORY_SHARE:.0%} of this "
                         f"machine's {total / 2**30:.3g} GiB: use fewer chains, fewer kept draws (num_samples / "
                         f"thinning), a smaller net, or exclude sites")


def units_serve(entry, kw: dict, X, *, init, num_chains, hmc_options: dict) -> bool:
    """Whether ``sampler="auto"`` may run the unit-wise sampler: the one-hidden-layer sigmoidal net with the
    non-lazy readout on orthogonal inputs (:func:`bnnzoo.inference.units.check_units`), starting from the prior or
    from given hidden weights, with none of the settings it does not take in ``hmc_options`` ({name: value}) given
    (HMC settings, site_thinning, reparam; ``chunk_size`` / ``store`` / ``resume`` it keeps itself)."""
    if kw.get("activation") != "sigmoid" or any(hmc_options.values()):
        return False
    if not (init == "prior" or isinstance(init, dict) and "W1" in init):
        return False
    try:
        check_units(entry, kw, X, init, num_chains)
    except ValueError:
        return False
    return True


def _supported(entry, field: str, default: tuple) -> tuple:
    return tuple(getattr(entry, field, default)) if entry is not None else default


def offered_samplers(entry) -> tuple:
    """The samplers ``entry`` offers: those it lists (``ZooEntry.samplers``) and every engine declared
    ``every_entry`` (:mod:`bnnzoo.inference.engines`); a plain NumPyro model (None): the latter."""
    listed = _supported(entry, "samplers", ())
    return listed + tuple(s for s in EVERY_ENTRY if s not in listed)


def _one_device_plan(sampler: str, chain_method: str, n_devices: int, n_processes: int, num_chains: int,
                     record: tuple) -> RunPlan:
    """The plan of a sampler that batches its chains on one device in one process (units, smc)."""
    if chain_method not in ("auto", "vectorized") or n_processes > 1:
        raise ValueError(f"sampler={sampler!r} batches its chains on one device in one process: use chain_method "
                         f"'auto' or 'vectorized', got {chain_method!r}"
                         + (f" with {n_processes} processes" if n_processes > 1 else ""))
    return RunPlan("vectorized", True, n_devices, n_processes, num_chains, record, ())


def make_plan(entry, kw: dict, *, sampler: str, num_chains, num_warmup, num_samples, thinning, seed, record,
              chain_method: str, step_size, num_steps, target_accept, max_tree_depth, dense_mass, init,
              progress, log_likelihood, chunk_size, store, resume, exclude, site_thinning, reparam,
              matmul_precision, n_devices: int, n_processes: int) -> RunPlan:
    """Check the arguments of :func:`bnnzoo.sample` (not the model's) and decide the chain method and engine.

    ``entry`` is the zoo entry (None for a plain NumPyro model): its ``samplers`` and ``reparams`` say which
    samplers and reparametrisations it supports.  ``kw`` are the resolved model keyword arguments.

    Returns
    -------
    RunPlan

    Raises
    ------
    ValueError
        on any bad argument, with a one-line message naming it and its valid values.
    """
    check_int("num_chains", num_chains, 1)
    check_int("num_warmup", num_warmup, 0)
    check_int("num_samples", num_samples, 1)
    check_int("thinning", thinning, 1)
    check_int("seed", seed, 0)
    if seed > SEED_MAX:
        raise ValueError(f"seed must be an integer in 0..{SEED_MAX} (2**63 - 1), got {seed!r}")
    if thinning > num_samples:
        raise ValueError(f"thinning={thinning} exceeds num_samples={num_samples}: no draw would be kept")
    for name, value in (("progress", progress), ("log_likelihood", log_likelihood), ("resume", resume),
                        ("dense_mass", dense_mass)):
        _check_bool(name, value)
    record = normalize_record(record)
    if not isinstance(sampler, str) or sampler not in SAMPLERS:
        raise ValueError(f"sampler must be 'auto' or one of {SAMPLERS}, got {sampler!r}")
    supported = offered_samplers(entry)
    if entry is None and sampler == "gibbs":
        raise ValueError("sampler='gibbs' (exact blocked Gibbs) is for zoo entries that offer it (the linear "
                         "fully-connected nets), not a plain NumPyro model")
    if entry is None and sampler == "units":
        raise ValueError("sampler='units' (unit-wise moves) is for the one-hidden-layer fully-connected zoo entries "
                         "with the non-lazy readout (e.g. 'sigmoidal'), not a plain NumPyro model")
    if entry is None and sampler not in supported:
        raise ValueError(f"sampler={sampler!r} is for the zoo entries that offer it, not a plain NumPyro model; a "
                         f"plain model offers {list(supported)}")
    if entry is not None and sampler not in supported:
        hint = {"gibbs": " (exact blocked Gibbs: for the linear fully-connected nets only, e.g. 'deep_linear')",
                "units": " (unit-wise moves with the readout integrated out: one-hidden-layer fully-connected nets "
                         "with the non-lazy readout on orthogonal inputs, e.g. 'sigmoidal')"}.get(sampler, "")
        raise ValueError(f"sampler={sampler!r} is not offered by zoo entry {entry.name!r}{hint}; it supports "
                         f"{list(supported)}")
    if chain_method not in CHAIN_METHODS:
        raise ValueError(f"chain_method must be one of {CHAIN_METHODS}, got {chain_method!r}")
    if matmul_precision not in MATMUL_PRECISIONS:
        raise ValueError(f"matmul_precision must be one of {MATMUL_PRECISIONS}, got {matmul_precision!r}")
    check_init(init, num_chains)
    if step_size is not None and (isinstance(step_size, (bool, np.bool_))
                                  or not isinstance(step_size, (int, float, np.number))
                                  or not (np.isfinite(step_size) and step_size > 0)):
        raise ValueError(f"step_size must be a number > 0 (or None: adapted), got {step_size!r}")
    if target_accept is not None and (isinstance(target_accept, (bool, np.bool_))
                                      or not isinstance(target_accept, (int, float, np.number))
                                      or not 0 < target_accept < 1):
        raise ValueError(f"target_accept must be a number in (0, 1) (or None), got {target_accept!r}")
    check_int("max_tree_depth", max_tree_depth, 1)
    check_num_steps(sampler, num_steps)

    # long-run options (the chunked driver)
    if chunk_size is not None:
        check_int("chunk_size", chunk_size, 1)
    if resume and store is None:
        raise ValueError("resume=True needs store= (the folder of the run to continue)")
    if isinstance(exclude, str) or not isinstance(exclude, (list, tuple)):
        raise ValueError(f"exclude must be a list of site names, got {exclude!r}")
    if site_thinning is not None and not isinstance(site_thinning, dict):
        raise ValueError(f"site_thinning must be a dict {{site: k}}, got {site_thinning!r}")
    for k, e in (site_thinning or {}).items():
        check_int(f"site_thinning[{k!r}]", e, 1)
    reparam = () if reparam is None else (reparam,) if isinstance(reparam, str) else tuple(reparam)
    bad = [r for r in reparam if r not in REPARAMS]
    if bad:
        raise ValueError(f"reparam entries must be among {REPARAMS}, got {bad}")
    if reparam:
        offered = _supported(entry, "reparams", ())
        if entry is None or any(r not in offered for r in reparam):
            raise ValueError(f"reparam={list(reparam)} is not offered by "
                             + (f"zoo entry {entry.name!r} (it offers {list(offered)})" if entry is not None
                                else f"a plain NumPyro model; zoo entries declare theirs (the fully-connected "
                                     f"nets: {list(REPARAMS)})"))
    if "readout" in reparam and "data_space" not in reparam:     # dropped alone: benchmarks/results/keep_drop.md
        raise ValueError(f"reparam={list(reparam)} is not offered: 'readout' only goes with 'data_space'; valid: "
                         f"(), ('data_space',), ('readout', 'data_space')")

    if sampler == "units" and isinstance(init, str) and init != "prior":
        raise ValueError(f"init for sampler='units' must be 'prior' or a dict of starting values holding 'W1', got "
                         f"{init!r}")
    if callable(init) and not ENGINES[sampler].kernel:
        raise ValueError(f"init={strategy_name(init)} applies to the HMC samplers (nuts, hmc, chees, snaper), not "
                         f"sampler={sampler!r}; use init='prior'")
    if isinstance(init, dict):
        clash = [n for n, v in (("sampler='gibbs'", sampler == "gibbs"), ("reparam", reparam)) if v]
        if clash:
            raise ValueError(f"init as a dict of starting values cannot be combined with {', '.join(clash)}: the "
                             f"chains would not start from the given values")
    if sampler == "gibbs" and kw.get("activation", "linear") != "linear":
        raise ValueError(f"sampler='gibbs' (exact blocked Gibbs) needs activation='linear', got "
                         f"{kw.get('activation')!r}")
    given = refused(sampler, dict(chunk_size=chunk_size, store=store, resume=resume, site_thinning=site_thinning,
                                  reparam=reparam, step_size=step_size, dense_mass=dense_mass,
                                  target_accept=target_accept, max_tree_depth=max_tree_depth))
    if given:                                # the settings the engine declares it does not take
        raise ValueError(f"sampler={sampler!r} {ENGINES[sampler].refusal}; drop {given}")
    if sampler == "gibbs":                   # bnnzoo.inference.gibbs_linear: chains one after the other in memory
        return RunPlan("sequential", True, n_devices, n_processes, num_chains, record, ())
    if not ENGINES[sampler].kernel:          # units, smc: chains batched on one device, their own loop
        return _one_device_plan(sampler, chain_method, n_devices, n_processes, num_chains, record)
    if sampler in CHEES_LIKE:
        if num_chains < 2:
            raise ValueError(f"sampler={sampler!r} tunes across chains: it needs num_chains >= 2 (4 or more advised)")
        if chain_method == "sequential":
            raise ValueError(f"sampler={sampler!r} advances all chains together (its tuning couples them): use "
                             f"chain_method 'auto', 'vectorized' or 'sharded', not 'sequential'")

    local = num_chains
    if n_processes > 1:
        check_sampler(sampler, num_chains, n_processes)
        local = num_chains // n_processes
    engine_options = bool(chunk_size is not None or store is not None or exclude or site_thinning or reparam)
    method = chain_method
    if method == "auto":
        method = "sharded" if n_devices > 1 and local > 1 and local % n_devices == 0 else "vectorized"
    if sampler in CHEES_LIKE and n_processes > 1:   # coupled chains: one program over all processes' devices
        method = "sharded"
    if method == "sharded":
        coupled_multiprocess = sampler in CHEES_LIKE and n_processes > 1
        if not coupled_multiprocess and local % n_devices:
            raise ValueError(f"chain_method={chain_method!r} splits the chains across the {n_devices} local "
                             f"devices: num_chains per process ({local}) must be a multiple of {n_devices}; use "
                             f"chain_method='vectorized'")
    if method == "sequential" and (engine_options or n_processes > 1):
        raise ValueError("chain_method='sequential' is not available with chunk_size / store / exclude / "
                         "site_thinning / reparam or several processes; use 'vectorized'")
    use_engine = bool(engine_options or method == "sharded" or sampler in CHEES_LIKE or n_processes > 1)
    return RunPlan(method, use_engine, n_devices, n_processes, local, record, reparam)


DEFAULT_CHAINS = {"cpu": 4, "gpu": 64, "tpu": 64}
"""Chains a run gets when ``num_chains`` is not given, by JAX's default backend: a CPU runs vectorised chains in
about their summed time, so 4 (enough to compare chains); an accelerator runs many at little more than the time of
one (the docs' benchmark page measures how much), so 64."""


def default_num_chains() -> tuple[int, str]:
    """(chains, backend): the number of chains for JAX's default backend (:data:`DEFAULT_CHAINS`; 4 for a backend
    it does not name)."""
    backend = jax.default_backend()
    return DEFAULT_CHAINS.get(backend, 4), backend


KERNEL_BATCHES = (10, 40)
"""Streamed kernels: about ``max(1, min(10, ⌈40 / chains⌉))`` means per chain — 10 with 4 chains, 1 with 64 — so a
run holds at least about 40 block means for the Monte-Carlo error and at most one P × P kernel per chain and layer
when it has many chains."""


def streamed_kernels(entry, kw: dict, plan, sampler, record: tuple, n_keep: int, chunk_size, store, site_thinning,
                     exclude=()):
    """(record, site_means): a run of an entry with ``streamed_kernels`` that records ``"summaries"`` through the
    chunked driver (or the exact Gibbs sampler) also records ``"kernels"``, each kernel site as the mean of every e
    kept draws, e dividing the chunk and giving about :data:`KERNEL_BATCHES` means per chain.  The other engines
    keep every draw of a site, so they record no kernels (the diagnostics then use z or the weights); kernels named
    in ``exclude`` or ``site_thinning`` are left to those."""
    if (entry is None or not getattr(entry, "streamed_kernels", False) or "summaries" not in record
            or "kernels" in record or not (plan.use_engine or sampler == "gibbs") or sampler in TEMPERING
            or n_keep < 1):
        return record, {}
    chunk = engine_chunk_size(chunk_size, n_keep, store, site_thinning)
    per_chain, total = KERNEL_BATCHES
    chains = max(int(plan.local_chains) * max(int(plan.n_processes), 1), 1)
    target = max(1, n_keep // max(1, min(per_chain, -(-total // chains))))
    e = max(d for d in range(1, min(target, chunk) + 1) if chunk % d == 0)
    means = {k: e for k in kernel_names(int(kw.get("depth", 1)))
             if k not in tuple(exclude or ()) and k not in (site_thinning or {})}
    return record + ("kernels",), means



def resolve_model(model) -> tuple[str, Callable, Any]:
    """(name, model function, zoo entry or None) of ``model``: a zoo entry name, a ZooEntry or a NumPyro model."""
    if isinstance(model, str):
        entry = get_entry(model)
        return entry.name, entry.model, entry
    if isinstance(model, ZooEntry):
        return model.name, model.model, model
    if callable(model):
        return getattr(model, "__qualname__", repr(model)), model, None
    raise ValueError(f"model must be a zoo entry name, a ZooEntry or a NumPyro model function, got {model!r}")


def resolve_kwargs(name, fn, entry, task, model_kwargs, record) -> dict:
    """The model's keyword arguments: the entry's defaults overridden by ``model_kwargs``, ``record`` added, the
    entry's resolution applied and the whole checked (a plain model: the names against its signature)."""
    kw = entry.kwargs(**model_kwargs) if entry is not None else dict(model_kwargs)
    if record:
        kw["record"] = tuple(record)
    if entry is not None and entry.resolve is not None:
        kw = entry.resolve(task.X, kw)
    if entry is not None:
        if not np.any(task.X):   # (a plain model may ignore X: a Task allows zeros)
            raise ValueError(f"X is all zeros: every preactivation of {entry.name!r} would be 0 and the data carry "
                             f"no information")
        entry.validate(task.X, task.Y, **kw)
    else:
        params = inspect.signature(fn).parameters
        unknown = [k for k in kw if k not in params and not any(p.kind == p.VAR_KEYWORD for p in params.values())]
        if unknown:
            raise ValueError(f"model {name} has no argument(s) {unknown}")
    return kw


@dataclass(frozen=True)
class SamplerSpec:
    """The sampler of a run and its settings (:attr:`RunSpec.sampler`): what builds the kernel
    (:func:`bnnzoo.inference.engines.kernels.kernel_of`) or the SMC run (:func:`bnnzoo.inference.smc.run_smc`).

    Attributes
    ----------
    name : str
        The sampler that runs, a name in :data:`SAMPLERS` (``"auto"`` resolved by :func:`choose_sampler`).
    requested : str
        The name asked for (``"auto"`` or ``name``).
    reparam : tuple of str
        The reparametrisations (:data:`REPARAMS`), () for none.
    step_size, num_steps, target_accept, max_tree_depth, dense_mass
        As :func:`bnnzoo.sample` takes them, checked.
    init : str, callable or dict
        "prior", "uniform", a NumPyro ``init_to_*`` strategy or {site: array (chain, ...)} of starting values.
    tempering : dict or None
        The checked options of "smc" (:func:`bnnzoo.inference.smc.check_options`), None for the others.
    moves : dict or None
        The moves of "units" the caller set, checked (:func:`bnnzoo.inference.units.check_moves`); None when
        none were set (the activation's defaults) and for the other samplers.
    """

    name: str
    requested: str
    reparam: tuple
    step_size: Any
    num_steps: Any
    target_accept: Any
    max_tree_depth: int
    dense_mass: bool
    init: Any
    tempering: Any
    moves: Any = None

    def init_summary(self):
        """``init`` as it goes into the provenance: the rule's name, or the sites a dict of starting values sets."""
        if callable(self.init):
            return strategy_name(self.init)
        return self.init if isinstance(self.init, str) else {"values_for": sorted(self.init)}


@dataclass(frozen=True)
class ChainSpec:
    """The chains of a run and how they are laid out (:attr:`RunSpec.chains`): the sizes and the decisions of
    :func:`make_plan`.

    Attributes
    ----------
    num_chains, num_warmup, num_samples, thinning, seed : int
        The sizes and the PRNG seed; each chain keeps ``num_samples // thinning`` draws.
    method : str
        The resolved chain method: "vectorized", "sharded" or "sequential" (:attr:`RunPlan.chain_method`).
    use_engine : bool
        The chunked driver runs the chains (:attr:`RunPlan.use_engine`).
    n_devices, n_processes, local : int
        Local devices, JAX processes, and the chains this process runs.
    default_backend : str or None
        The backend whose default number of chains the run got (:func:`default_num_chains`), None when
        ``num_chains`` was given.
    """

    num_chains: int
    num_warmup: int
    num_samples: int
    thinning: int
    seed: int
    method: str
    use_engine: bool
    n_devices: int
    n_processes: int
    local: int
    default_backend: str | None = None


@dataclass(frozen=True)
class RecordingSpec:
    """What a run records, adds and reports (:attr:`RunSpec.recording`).

    Attributes
    ----------
    record : tuple of str
        The sites recorded beyond the defaults (``"kernels"`` added by :func:`streamed_kernels`).
    dims : dict
        {site: dims}: the entry's, the ones given, or those traced from a plain model's plates.
    exclude : tuple of str
        Sites not recorded.
    site_thinning : dict
        {site: k}: sites recorded on every k-th kept draw only.
    site_means : dict
        {site: kept draws per mean}: the streamed kernels (:func:`streamed_kernels`).
    log_likelihood, posterior_predictive, prior_predictive : bool
        The optional ArviZ groups added.
    progress : bool
        Report progress.
    """

    record: tuple
    dims: dict
    exclude: tuple
    site_thinning: dict
    site_means: dict
    log_likelihood: bool
    posterior_predictive: bool
    prior_predictive: bool
    progress: bool


@dataclass(frozen=True)
class StoreSpec:
    """The chunks and the checkpoint store of a run (:attr:`RunSpec.store`).

    Attributes
    ----------
    chunk_size : int or None
        Kept draws per jitted chunk; None: the driver's default (:func:`bnnzoo.inference.chunked.engine_chunk_size`).
    path : path or None
        The store's folder, None for no store.
    resume : bool
        Continue the run in ``path``.
    """

    chunk_size: Any
    path: Any
    resume: bool


@dataclass(frozen=True)
class RunSpec:
    """Every setting of one :func:`bnnzoo.sample` call, checked once by :func:`make_spec`; the engines and the
    conversion to ArviZ read it and nothing else.

    The settings are grouped by their readers: the sampler (the kernel or the tempering run), the chains (every
    engine's sizes and layout), the recording (the recorded sites and the conversion's optional groups) and the
    store (the chunked driver and the unit-wise sampler).  A changed copy is
    ``dataclasses.replace(spec, chains=dataclasses.replace(spec.chains, ...))``.

    Attributes
    ----------
    name, model, entry
        The model's name, its NumPyro function and its zoo entry (None for a plain NumPyro model).
    task : Task
        The data.
    model_kwargs : dict
        The model's keyword arguments, resolved: the entry's defaults, ``record``, checked.
    matmul_precision : str or None
        The float32 matrix-product precision while sampling.
    sampler : SamplerSpec
        The sampler and its settings.
    chains : ChainSpec
        The sizes, the seed and the chains' layout.
    recording : RecordingSpec
        What is recorded, added and reported.
    store : StoreSpec
        The chunks and the checkpoint store.
    """

    name: str
    model: Any
    entry: Any
    task: Any
    model_kwargs: dict
    matmul_precision: Any
    sampler: SamplerSpec
    chains: ChainSpec
    recording: RecordingSpec
    store: StoreSpec

    def sampler_config(self) -> dict:
        """The sampler's settings as the provenance records them (``run_config(idata)["sampler"]``)."""
        s, c = self.sampler, self.chains
        return dict(sampler=s.name, sampler_requested=s.requested, num_chains=c.num_chains,
                    num_warmup=c.num_warmup, num_samples=c.num_samples, thinning=c.thinning,
                    chain_method=c.method, step_size=s.step_size, num_steps=s.num_steps,
                    target_accept=s.target_accept, max_tree_depth=s.max_tree_depth, dense_mass=s.dense_mass,
                    init=s.init_summary(), matmul_precision=self.matmul_precision,
                    **({"moves": dict(s.moves)} if s.moves else {}),
                    **({"num_chains_default": c.default_backend} if c.default_backend else {}))


def make_spec(model, task, *, model_kwargs: dict, num_chains, num_warmup, num_samples, sampler, seed, thinning,
              record, progress, chain_method, step_size, num_steps, target_accept, max_tree_depth, dense_mass, init,
              log_likelihood, posterior_predictive, prior_predictive, dims, chunk_size, store, resume, exclude,
              site_thinning, reparam, matmul_precision, tempering, moves=None, certify: bool = False) -> RunSpec:
    """Check the arguments of :func:`bnnzoo.sample` and the model's, and decide how the run goes: a
    :class:`RunSpec`.  The arguments are :func:`bnnzoo.sample`'s (``model_kwargs`` its ``**model_kwargs``;
    ``num_chains`` None: the backend's default, :func:`default_num_chains`; ``certify`` whether the run is
    certified, which ``sampler="auto"`` takes into account).

    Raises
    ------
    ValueError
        On any bad argument, before anything compiles, with a one-line message naming it.
    """
    chains_default = None
    if num_chains is None:                # the backend's default, stated once the arguments checked out
        num_chains, chains_default = default_num_chains()
    name, fn, entry = resolve_model(model)
    if not isinstance(task, Task):
        raise ValueError(f"task must be a bnnzoo.tasks.Task, got {type(task).__name__}")
    for flag, value in (("posterior_predictive", posterior_predictive), ("prior_predictive", prior_predictive)):
        _check_bool(flag, value)
    if record is None:                    # the entry's default recording (FCN: the per-unit summaries)
        record = entry.record if entry is not None else ()
    record = normalize_record(record)     # first: a string would otherwise be split into letters
    kw = resolve_kwargs(name, fn, entry, task, model_kwargs, record)
    requested = sampler
    if isinstance(sampler, str) and isinstance(num_chains, (int, np.integer)):
        serve = sampler == "auto" and certify and units_serve(
            entry, kw, task.X, init=init, num_chains=int(num_chains),
            hmc_options=dict(site_thinning=site_thinning, reparam=reparam, step_size=step_size,
                             dense_mass=dense_mass, target_accept=target_accept, max_tree_depth=max_tree_depth != 10,
                             num_steps=num_steps, tempering=tempering))   # chunks and a store the units sampler keeps
        sampler = choose_sampler(sampler, entry, num_chains=int(num_chains), chain_method=chain_method,
                                 dense_mass=dense_mass is True, num_steps=num_steps, max_tree_depth=max_tree_depth,
                                 certify=bool(certify), units_serve=serve)
    plan = make_plan(entry, kw, sampler=sampler, num_chains=num_chains, num_warmup=num_warmup,
                     num_samples=num_samples, thinning=thinning, seed=seed, record=record, chain_method=chain_method,
                     step_size=step_size, num_steps=num_steps, target_accept=target_accept,
                     max_tree_depth=max_tree_depth, dense_mass=dense_mass, init=init, progress=progress,
                     log_likelihood=log_likelihood, chunk_size=chunk_size, store=store, resume=resume,
                     exclude=exclude, site_thinning=site_thinning, reparam=reparam,
                     matmul_precision=matmul_precision, n_devices=jax.local_device_count(),
                     n_processes=jax.process_count())
    record, site_means = streamed_kernels(entry, kw, plan, sampler, record,
                                          int(num_samples) // max(int(thinning), 1), chunk_size, store, site_thinning,
                                          exclude)
    if sampler == "units":                # what the unit-wise moves need of the net and the inputs
        check_units(entry, kw, task.X, init, num_chains)
    if record != plan.record:
        kw = dict(kw, record=record)
    if sampler in TEMPERING:
        tempering = check_options(tempering, num_chains=num_chains, thinning=thinning, init=init)
    elif tempering is not None:
        raise ValueError(f"tempering options apply to sampler='smc', not sampler={sampler!r}")
    if moves is not None:                 # the unit-wise moves: only the sampler that declares them takes them
        if "moves" not in ENGINES[sampler].takes:
            chose = " (what sampler='auto' chose)" if requested == "auto" else ""
            raise ValueError(f"moves apply to sampler='units', not sampler={sampler!r}{chose}")
        moves = check_moves(moves, kw.get("activation", "sigmoid")) or None
    with (jax.default_matmul_precision(matmul_precision) if matmul_precision is not None   # every trace under it
          else contextlib.nullcontext()):
        check_memory(fn, task, kw, num_chains=int(num_chains), n_keep=int(num_samples) // int(thinning),
                     skip=tuple(exclude) + tuple(site_thinning or ()) + tuple(site_means))
    if dims is not None:
        site_dims = dims
    elif entry is not None:
        site_dims = entry.dims(**kw)
    else:                                 # traced: under the run's precision, as everything of the run
        with (jax.default_matmul_precision(matmul_precision) if matmul_precision is not None
              else contextlib.nullcontext()):
            site_dims = infer_dims(fn, task.X, task.Y, kw)
    if chains_default is not None:
        _logger.info("%d chains: the default on %s (num_chains= to change)", num_chains, chains_default)
    sampler_spec = SamplerSpec(name=sampler, requested=requested, reparam=plan.reparam, step_size=step_size,
                               num_steps=num_steps, target_accept=target_accept, max_tree_depth=max_tree_depth,
                               dense_mass=dense_mass, init=init, tempering=tempering, moves=moves)
    chains = ChainSpec(num_chains=int(num_chains), num_warmup=int(num_warmup), num_samples=int(num_samples),
                       thinning=int(thinning), seed=int(seed), method=plan.chain_method, use_engine=plan.use_engine,
                       n_devices=plan.n_devices, n_processes=plan.n_processes, local=plan.local_chains,
                       default_backend=chains_default)
    recording = RecordingSpec(record=record, dims=site_dims, exclude=tuple(exclude),
                              site_thinning=dict(site_thinning or {}), site_means=site_means,
                              log_likelihood=log_likelihood, posterior_predictive=posterior_predictive,
                              prior_predictive=prior_predictive, progress=progress)
    return RunSpec(name=name, model=fn, entry=entry, task=task, model_kwargs=kw, matmul_precision=matmul_precision,
                   sampler=sampler_spec, chains=chains, recording=recording,
                   store=StoreSpec(chunk_size=chunk_size, path=store, resume=resume))
