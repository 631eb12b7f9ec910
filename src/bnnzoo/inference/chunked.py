"""Chunked MCMC driver behind :func:`bnnzoo.sample` for long runs and many chains.

It runs the same NumPyro kernel as the plain path (``kernel.init`` / ``kernel.sample``), but in *blocks*:

* warm-up in blocks of ``chunk_size * thinning`` steps, then the kept draws in chunks of ``chunk_size``;
* every block is one jitted ``lax.scan``; only that block's draws live on the device, so device memory does not grow
  with the number of draws;
* chains are vectorised on one device (``"vectorized"``) or split across all local devices, each device
  vectorising its share (``"sharded"``, ``jax.shard_map`` over a one-axis ``chain`` mesh; the ChEES/SNAPER kernel,
  whose tuning couples the chains, gathers them from the devices for its tuning);
* with a *store* (:class:`bnnzoo.inference.store.RunStore`) each finished block is written as one NetCDF file
  (``chunks/draws_00003.nc``, groups ``posterior``, ``sample_stats``, ``posterior_thinned``; warm-up blocks
  ``chunks/warmup_00000.nc``) and then the sampler state after it (``state.npz``, the previous one kept), both by
  atomic rename, the state with the checksums of every chunk file.  A killed run resumes from the latest checkpoint
  that checks out: the same blocks are redone from the same state with the same keys, so the resumed run's draws are
  those of the uninterrupted run (checked bit for bit by ``tests/system/test_resume.py`` and
  ``tests/system/test_faults.py``, which kill real processes and damage the store's files).  The store is locked while a run uses it;
* large sites are left out (``exclude``) or recorded every k-th kept draw only (``site_thinning``, group
  ``posterior_thinned``, whose ``draw`` coordinate holds the indices of the kept draws it belongs to).

Randomised post-processing (the exact conditional draws of the reparametrised models in
:mod:`bnnzoo.models.fcn_fast`) takes its key from the run's seed, the global draw index and the chain index, so it
too is independent of how the run was cut into chunks and of interruptions.
"""

from __future__ import annotations

import logging
import math
import os
import warnings
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from jax import lax
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .._log import Progress
from .compilation import compile_cached
from .distributed import agree_to_start
from .store import (RunStore, StoreError, check_store as _check_store, load_state, manifest_digest, save_state,
                    version_changes)

__all__ = ["Block", "plan_blocks", "ChunkedResult", "run_chunked", "STAT_FIELDS", "engine_chunk_size"]

_logger = logging.getLogger(__name__)

# HMCState field -> sample_stats name used by bnnzoo.sample
STAT_FIELDS = {"diverging": "diverging", "num_steps": "num_steps", "accept_prob": "accept_prob",
               "energy": "energy", "potential_energy": "potential_energy", "adapt_state.step_size": "step_size"}
# seconds to pause between writing a chunk and its checkpoint: for the interruption test only
_TEST_PAUSE = float(os.environ.get("BNNZOO_TEST_CHECKPOINT_PAUSE", "0") or 0)


@dataclass(frozen=True)
class Block:
    """One jitted unit of work.  kind "warmup": ``steps`` kernel steps, per-step stats recorded; kind "draws":
    ``pre`` unrecorded steps, then ``n_keep`` kept draws ``thinning`` steps apart, the first kept draw having the
    global index ``draw0``."""

    index: int
    kind: str
    steps: int
    n_keep: int = 0
    pre: int = 0
    draw0: int = 0


def plan_blocks(num_warmup: int, num_samples: int, thinning: int, chunk_size: int) -> list[Block]:
    """Cut a run into blocks.  Kept draw k is the state after num_warmup + (num_samples mod thinning) +
    (k + 1)·thinning kernel steps, exactly as NumPyro's ``MCMC`` keeps them."""
    blocks: list[Block] = []
    wblock = max(1, chunk_size * thinning)
    done = 0
    while done < num_warmup:
        n = min(wblock, num_warmup - done)
        blocks.append(Block(len(blocks), "warmup", n))
        done += n
    n_keep_total = num_samples // thinning
    pre = num_samples % thinning
    k = 0
    while k < n_keep_total:
        n = min(chunk_size, n_keep_total - k)
        p = pre if k == 0 else 0
        blocks.append(Block(len(blocks), "draws", p + n * thinning, n_keep=n, pre=p, draw0=k))
        k += n
    return blocks


PIECE_SECONDS = 1.0
"""With progress, a block runs as calls of about this many seconds each (the bar moves at least this often); each
call re-allocates the block's buffers, which a second of sampling outweighs."""


def _next_piece(block: Block, done: int, seconds_per_step: float | None, thinning: int, keep_unit: int) -> Block:
    """The next call of ``block`` when it runs in pieces, ``done`` of its steps behind: a :class:`Block` of the same
    kind of about :data:`PIECE_SECONDS` (a twentieth of the block when no step was timed yet), whose kept draws are a
    multiple of ``keep_unit`` (the thinned sites' factors divide it), the last piece taking the rest.  Kept draw j
    of a piece is kept draw ``draw0 + j`` of the run, so the draws are those of the whole block."""
    want = max(1, block.steps // 20) if seconds_per_step is None else max(1, int(PIECE_SECONDS / seconds_per_step))
    if block.kind == "warmup":
        return Block(block.index, "warmup", min(want, block.steps - done))
    kept = 0 if done == 0 else (done - block.pre) // thinning
    left = block.n_keep - kept
    m = max(keep_unit, want // thinning // keep_unit * keep_unit)
    if left - m < keep_unit:
        m = left
    pre = block.pre if done == 0 else 0
    return Block(block.index, "draws", pre + m * thinning, n_keep=m, pre=pre, draw0=block.draw0 + kept)


# ------------------------------------------------------------------------------------------------ the driver

@dataclass
class ChunkedResult:
    """What :func:`run_chunked` collected (host NumPy arrays, chain axis first).

    Attributes
    ----------
    samples : dict
        site -> (chain, draw, ...) for the recorded sites.
    stats : dict
        STAT_FIELDS name -> (chain, draw).
    thinned : dict
        site -> (chain, draw_k, ...) for the sites in ``site_thinning``, with ``thinned_draws[site]`` their kept-draw
        indices.
    warmup : dict
        site / stat -> (chain, warm-up step) for the small sites and the stats, plus ``time`` (step,), the wall-clock
        seconds since the start of the first block, interpolated inside a block by gradient evaluations.
    timing : dict
        Seconds for init, compilation (first call of each block shape), warm-up and sampling.
    resumed_from_block : int
        The block a resumed run started after (-1: a fresh run).
    store_versions : dict or None
        The library versions the store was started with, when a resume runs other ones (None otherwise).
    """

    samples: dict
    stats: dict
    thinned: dict
    thinned_draws: dict
    warmup: dict
    timing: dict
    last_state: Any = None
    resumed_from_block: int = -1
    blocks: list = field(default_factory=list)
    store_versions: dict | None = None


def _getter(path: str):
    parts = path.split(".")

    def get(state):
        for p in parts:
            state = getattr(state, p)
        return state

    return get


def _to_batched(kernel, batched, model_args, model_kwargs):
    """A step on a state with a leading chain axis (NumPyro's kernel is unbatched for one chain)."""
    if not batched:
        def step(state):
            s = jax.tree.map(lambda x: x[0], state)
            new = kernel.sample(s, model_args, model_kwargs)
            # (NumPyro's fixed-length HMC returns its step count as a Python int: cast to the state's own dtype)
            return jax.tree.map(lambda x, old: jnp.asarray(x, old.dtype)[None], new, state)
    else:
        def step(state):
            return kernel.sample(state, model_args, model_kwargs)
    return step


def _make_block_fn(step, post, wcap: int, dcap: int, thinning: int, main_sites, small_sites, site_thinning,
                   means=frozenset()):
    """One function for every block (a single compilation, with one copy of the kernel step): ``(state, chain_ids,
    warm, pre, steps, draw0) -> (state, outputs)``.  It takes ``steps`` kernel steps; in a warm-up block
    (``warm`` true) it records the small sites and the stats after every step (``wcap`` slots), in a block of draws
    every ``thinning``-th step after the first ``pre`` (``dcap`` slots; sites in ``site_thinning`` on every k-th
    kept draw only, those also in ``means`` as the running mean of each k consecutive kept draws).  Outputs have
    the chain axis first.  Warm-up steps compute only the small sites (the others are dead code there)."""
    getters = {name: _getter(f) for f, name in STAT_FIELDS.items()}

    def stats_of(state):
        return {name: g(state) for name, g in getters.items()}

    def alloc(tree, cap):
        return jax.tree.map(lambda x: jnp.zeros((cap,) + x.shape, x.dtype), tree)

    def put(bufs, i, vals):
        return jax.tree.map(lambda b, v: lax.dynamic_update_index_in_dim(b, v, i, 0), bufs, vals)

    def run(state, chain_ids, warm, pre, steps, draw0):
        shapes = jax.eval_shape(lambda z: post(z, chain_ids, jnp.int32(0)), state.z)
        stat_shapes = jax.eval_shape(stats_of, state)
        # every buffer has one spare slot at the end: a step that records nothing writes there.  Writing every step
        # (no branch around the buffers) lets XLA update them in place; a lax.switch over the buffers copied them
        # each step (1333 vs 240 µs per leapfrog step, sigmoidal net N = P = 100, 300-draw chunks).
        wbufs = alloc(({k: shapes[k] for k in small_sites}, stat_shapes), wcap + 1)
        dbufs = alloc(({k: shapes[k] for k in main_sites}, stat_shapes), dcap + 1)
        tbufs = {k: jnp.zeros((dcap // e + 1,) + shapes[k].shape, shapes[k].dtype) for k, e in site_thinning.items()}
        zeros = jax.tree.map(lambda sh: jnp.zeros(sh.shape, sh.dtype), shapes)
        small_zeros = {k: zeros[k] for k in small_sites}

        def body(i, carry):
            s, wb, db, tb = carry
            s = step(s)
            keep = ~warm & (i >= pre) & ((i - pre + 1) % thinning == 0)
            j = (i - pre + 1) // thinning - 1
            small = lax.cond(warm, lambda z: {k: v for k, v in post(z, chain_ids, jnp.int32(-1)).items()
                                              if k in small_zeros}, lambda z: small_zeros, s.z)
            sites = lax.cond(keep, lambda z: post(z, chain_ids, draw0 + j), lambda z: zeros, s.z)
            st = stats_of(s)
            wb = put(wb, jnp.where(warm, i, wcap), (small, st))
            db = put(db, jnp.where(keep, j, dcap), ({k: sites[k] for k in main_sites}, st))
            tb = {k: _update_thinned(t, sites[k], keep, j, site_thinning[k], k in means) for k, t in tb.items()}
            return s, wb, db, tb

        state, wbufs, dbufs, tbufs = lax.fori_loop(0, steps, body, (state, wbufs, dbufs, tbufs))
        drop = lambda x: jnp.swapaxes(x[:-1], 0, 1)  # noqa: E731  spare slot off; (draw, chain, ...) -> (chain, ...)
        return state, jax.tree.map(drop, (wbufs, dbufs, tbufs))

    return run


def _update_thinned(buf, value, keep, j, e: int, mean: bool):
    """Kept draw ``j`` into a thinned buffer: every ``e``-th draw into slot j // e, or (``mean``) each draw added
    with weight 1/e to slot j // e; a step that keeps nothing writes the spare last slot."""
    if mean:
        slot = jnp.where(keep, j // e, buf.shape[0] - 1)
        old = lax.dynamic_index_in_dim(buf, slot, 0, keepdims=False)
        return lax.dynamic_update_index_in_dim(buf, old + value / e, slot, 0)
    return lax.dynamic_update_index_in_dim(buf, value, jnp.where(keep & ((j + 1) % e == 0), j // e,
                                                                 buf.shape[0] - 1), 0)


def _shardings(chain_method, state_axes=None):
    """(sharding of the state, sharding of the chain-first arrays) for a sharded run, (None, None) otherwise.
    ``state_axes``: the kernel's ``chain_axes(state)`` (True where a leaf has the chain axis first) for a kernel whose
    chains share a tuning state (ChEES/SNAPER); None when every leaf has the chain axis."""
    if chain_method != "sharded":
        return None, None

    # coupled chains (state_axes given) use every process's devices, in process order: one program for all
    devices = (jax.local_devices() if state_axes is None
               else sorted(jax.devices(), key=lambda d: (d.process_index, d.id)))
    mesh = Mesh(np.array(devices), ("chain",))
    chain, rep = NamedSharding(mesh, PartitionSpec("chain")), NamedSharding(mesh, PartitionSpec())
    if state_axes is None:
        return chain, chain
    return jax.tree.map(lambda a: chain if a else rep, state_axes), chain


def _agreed_checkpoint(store: RunStore | None) -> Path | None:
    """The checkpoint to resume from when several processes run one program (coupled chains over all their devices).
    The processes finish every block together, but a kill can fall between one process's checkpoint and another's,
    so each keeps its previous checkpoint too, and all resume from the latest block every process has (a checkpoint
    counts when it and its chunk files check out), which becomes each one's current checkpoint; None: some process
    has none, all start afresh.  A collective: every process must call it."""
    have = {}
    if store is not None and store.exists():
        for p in (store.previous_state_path, store.state_path):
            try:
                have[store.check_checkpoint(p)[0]["block_done"]] = p
            except StoreError:
                continue
    every = np.asarray(multihost_utils.process_allgather(np.array([max(have, default=-1)], np.int32))).ravel()
    target = int(every.min())
    if target < 0:
        return None
    if target not in have:
        raise StoreError(f"{store.path}: the processes' checkpoints are more than one block apart "
                         f"(blocks {sorted(every.tolist())}); this store cannot be resumed")
    if have[target] != store.state_path:   # going back one block: the earlier checkpoint becomes the current one
        os.replace(have[target], store.state_path)
    return store.state_path


def _this_process(x, axis_first: bool):
    """A (possibly multi-process) array as numpy: this process's chains (``axis_first``) or the shared value."""
    if getattr(x, "is_fully_addressable", True):
        return np.asarray(jax.device_get(x))
    if not axis_first:
        return np.asarray(x.addressable_data(0))
    shards = sorted(x.addressable_shards, key=lambda sh: sh.index[0].start or 0)
    return np.concatenate([np.asarray(sh.data) for sh in shards], axis=0)


def _compile_block(run, chain_method, state_axes=None):
    """Sharded: ``jax.shard_map`` over the ``chain`` mesh; each device runs its own chains.  Independent chains need no
    communication; a kernel whose chains share a tuning state (``state_axes`` given: ChEES/SNAPER) keeps that state
    on every device and gathers the chains for its tuning (``ChEES.chain_axis``)."""
    if chain_method != "sharded":
        return jax.jit(run)

    _, chain_sh = _shardings(chain_method, state_axes)
    spec, rep = chain_sh.spec, PartitionSpec()
    state_spec = spec if state_axes is None else jax.tree.map(lambda a: spec if a else rep, state_axes)
    fn = jax.shard_map(run, mesh=chain_sh.mesh, in_specs=(state_spec, spec, rep, rep, rep, rep),
                       out_specs=(state_spec, spec), check_vma=False)
    return jax.jit(fn)


def engine_chunk_size(chunk_size, n_keep: int, store, site_thinning) -> int:
    """Kept draws per chunk: ``chunk_size``, else all draws (100 with a store), rounded to a multiple of every
    site-thinning factor."""
    if chunk_size is not None:
        return int(chunk_size)
    size = min(n_keep, 100) if store is not None else n_keep
    if site_thinning:
        lcm = math.lcm(*[int(e) for e in site_thinning.values()])
        size = max(lcm, size // lcm * lcm)
    return max(size, 1)


def run_chunked(kernel, *, model_args: tuple, model_kwargs: dict, make_post: Callable, init_keys, num_chains: int,
                num_warmup: int, num_samples: int, thinning: int, chunk_size: int, chain_method: str = "vectorized",
                init_params=None, exclude: Sequence[str] = (), site_thinning: Mapping[str, int] | None = None,
                site_means: Mapping[str, int] | None = None, store: RunStore | None = None, resume: bool = False,
                manifest: dict | None = None,
                progress: bool = False, max_blocks: int | None = None, chain_offset: int = 0) -> ChunkedResult:
    """Run ``kernel`` block by block (see the module docstring).

    Parameters
    ----------
    kernel : numpyro.infer.mcmc.MCMCKernel
        The kernel to run (``kernel.init`` / ``kernel.sample``).
    model_args, model_kwargs : tuple, dict
        The model's arguments, passed to ``kernel.init``.
    make_post : callable
        ``make_post(kernel)`` (called after ``kernel.init``) returns a function
        ``post(z, chain_ids, draw_index)`` that turns the batched latent state into ``{site: (chain, ...)}``, the
        recorded sites (deterministic sites included); ``draw_index`` is -1 during warm-up.
    init_keys : jax.Array
        The key given to ``kernel.init`` (one key for one chain, ``num_chains`` keys otherwise).
    num_chains, num_warmup, num_samples, thinning, chunk_size : int
        Chains, warm-up steps, kept draws per chain, keep every k-th step, kept draws per chunk.
    chain_method : str
        ``"vectorized"`` or ``"sharded"`` (module docstring).
    init_params : dict or None
        Starting values of the latent sites (unconstrained), or None for the kernel's own initialisation.
    exclude : sequence of str
        Sites not to record.
    site_thinning : mapping or None
        ``{site: k}``: record these sites every k-th kept draw only (``thinned``).
    site_means : mapping or None
        ``{site: k}``: record these sites as the mean of each k consecutive kept draws (``thinned``, the draw index
        of a mean being its last draw's), summed in the loop; kept draws past the last full k are in no mean.
    store : RunStore or None
        The run's folder (:class:`~bnnzoo.inference.store.RunStore`): every block is written there with a
        checkpoint after it; the store is locked (``fcntl.flock``) while this call runs.
    resume : bool
        Continue the run in ``store`` from its latest checkpoint that checks out (the previous one when the latest
        is damaged); without it a store that holds a run is refused.
    manifest : dict or None
        The run's configuration with its ``fingerprint`` (written to ``run.json``; a resume with another
        fingerprint is refused, naming the settings that differ).
    progress : bool
        Show a progress bar.
    max_blocks : int or None
        Stop after this many blocks of this call (for tests and benchmarks of interruption).
    chain_offset : int
        Global index of this call's first chain (the chain ids ``post`` sees): a process running chains
        ``chain_offset …`` of a multi-process run (:mod:`bnnzoo.inference.distributed`).

    Returns
    -------
    ChunkedResult

    Raises
    ------
    ValueError
        Bad arguments; a store that holds a run (without ``resume``), holds another run, holds none (with
        ``resume``), is damaged beyond its previous checkpoint, or is locked by another process
        (:class:`~bnnzoo.inference.store.StoreError`, one line naming the folder or file).
    """
    lock_refusal = None
    if store is not None:   # first: every check of the store's state below runs under its lock
        try:
            store.lock()
        except StoreError as e:
            lock_refusal = e
    try:
        return _run_chunked(kernel, model_args=model_args, model_kwargs=model_kwargs, make_post=make_post,
                            init_keys=init_keys, num_chains=num_chains, num_warmup=num_warmup,
                            num_samples=num_samples, thinning=thinning, chunk_size=chunk_size,
                            chain_method=chain_method, init_params=init_params, exclude=exclude,
                            site_thinning=site_thinning, site_means=site_means, store=store, resume=resume,
                            manifest=manifest, progress=progress, max_blocks=max_blocks, chain_offset=chain_offset,
                            lock_refusal=lock_refusal)
    finally:
        if store is not None:
            store.unlock(remove_if_new=True)


def _check_manifest(store: RunStore, ckpt, manifest: dict | None) -> dict | None:
    """Refuse a resume whose ``run.json`` was edited after the run started (its digest differs from the one the
    checkpoint carries); warn when the libraries' versions changed since, and return the store's versions then
    (None when they did not change)."""
    path, meta, _ = ckpt
    stored = store.manifest()
    if "manifest" in meta and meta["manifest"] != manifest_digest(stored):
        raise StoreError(f"cannot resume {store.path}: its run.json was edited after the run started (its checksum "
                         f"differs from the one in {path.name}); restore it, or start the run again in a new folder")
    changed = version_changes(stored, manifest or {})
    if not changed:
        return None
    warnings.warn(f"{store.path} was started with " + ", ".join(f"{k} {a}" for k, (a, b) in changed.items())
                  + "; this resume runs " + ", ".join(f"{k} {b}" for k, (a, b) in changed.items())
                  + f": the draws after block {meta['block_done']} come from other versions (both are recorded in "
                  f"the run's provenance: engine.store_versions)", RuntimeWarning, stacklevel=4)
    return stored.get("versions")


def _run_chunked(kernel, *, model_args, model_kwargs, make_post, init_keys, num_chains, num_warmup, num_samples,
                 thinning, chunk_size, chain_method, init_params, exclude, site_thinning, site_means, store, resume,
                 manifest, progress, max_blocks, chain_offset, lock_refusal) -> ChunkedResult:
    site_means = {k: int(v) for k, v in (site_means or {}).items()}
    both = sorted(set(site_means) & set(site_thinning or {}))
    if both:
        raise ValueError(f"site_thinning and site_means both name {both}: a site is thinned or averaged, not both")
    site_thinning = {k: int(v) for k, v in (site_thinning or {}).items()}
    for k, e in list(site_thinning.items()) + list(site_means.items()):
        if e < 1 or chunk_size % e:
            raise ValueError(f"site_thinning / site_means[{k!r}] = {e} must be >= 1 and divide chunk_size = "
                             f"{chunk_size}")
    means = frozenset(site_means)
    site_thinning = dict(site_thinning, **site_means)     # from here on one kind of buffer; ``means`` says which
    if chain_method == "sharded":
        n_dev = jax.local_device_count()
        if num_chains % n_dev:
            raise ValueError(f"chain_method='sharded' needs num_chains ({num_chains}) to be a multiple of the "
                             f"{n_dev} local devices")
    # the store: refused (one line) before anything compiles when it cannot be used as asked
    spmd = chain_method == "sharded" and hasattr(kernel, "chain_axes") and jax.process_count() > 1
    ckpt, store_versions = None, None
    if store is not None:
        refusal = lock_refusal
        try:
            if spmd:   # a collective: every process calls it, whatever it found in its own folder
                agreed = _agreed_checkpoint(store if resume and refusal is None and store.exists() else None)
            if refusal is None:
                _check_store(store, resume, manifest)
                if resume and spmd:
                    ckpt = None if agreed is None else (agreed,) + store.check_checkpoint(agreed)
                elif resume:
                    ckpt = store.good_checkpoint()
                if ckpt is not None:
                    store_versions = _check_manifest(store, ckpt, manifest)
        except ValueError as e:
            refusal = e
        # several processes: each checked its own sub-folder; all stop here if one refused (the others would
        # otherwise run to the first collective and wait there for it)
        agree_to_start(refusal)

    blocks = plan_blocks(num_warmup, num_samples, thinning, chunk_size)
    wcap = max([b.steps for b in blocks if b.kind == "warmup"], default=1)
    pbar = None
    if progress:                           # a line from the first second: init and compile take a while
        pbar = Progress(sum(b.steps for b in blocks), unit="step", desc="sample", logger=_logger)
        pbar.stage(f"initialising {num_chains} chain{'s' if num_chains > 1 else ''}")
    t0 = time.perf_counter()
    state = kernel.init(init_keys, num_warmup, init_params, model_args=model_args, model_kwargs=model_kwargs)
    batched = np.ndim(init_keys) == 2
    if not batched:
        state = jax.tree.map(lambda x: x[None], state)
    jax.block_until_ready(state)
    post = make_post(kernel)
    timing = {"init_s": time.perf_counter() - t0, "compile_s": 0.0, "warmup_s": 0.0, "sampling_s": 0.0}
    state_axes = kernel.chain_axes(state) if hasattr(kernel, "chain_axes") else None
    # coupled chains over several processes (spmd: the kernel has chain_axes): every process initialised all chains
    # (init_keys holds all of them) and keeps its own chains and the shared tuning state; one program then runs over
    # all processes' devices
    if spmd:
        mine = slice(chain_offset, chain_offset + num_chains)
        state = jax.tree.map(lambda x, a: np.asarray(x)[mine] if a else np.asarray(x), state, state_axes)

    # what is recorded: checked before the store is touched
    chain_ids = chain_offset + jnp.arange(num_chains, dtype=jnp.int32)
    probe = jax.eval_shape(lambda z: post(z, chain_ids, jnp.int32(0)), state.z)
    unknown = [k for k in list(exclude) + list(site_thinning) if k not in probe]
    if unknown:
        raise ValueError(f"exclude / site_thinning / site_means name unknown site(s) {unknown}; sites: "
                         f"{sorted(probe)}")
    main_sites = [k for k in probe if k not in exclude and k not in site_thinning]
    if not main_sites and not site_thinning:
        raise ValueError(f"exclude names every recorded site ({sorted(probe)}): nothing would be recorded")
    small_sites = [k for k in main_sites if int(np.prod(probe[k].shape[1:])) <= 16]

    start = 0
    resumed_from = -1
    chunk_sums: dict[str, str] = {}
    if store is not None:
        store.lock()                       # (already held when the folder existed)
        store.remove_partial_writes()
        manifest_sha = manifest_digest(store.manifest() if store.exists() else dict(manifest or {}, complete=False))
        if ckpt is not None:
            path, meta, arrays = ckpt
            state, meta = load_state(path, state, checked=(meta, arrays))
            start = meta["block_done"] + 1
            resumed_from = meta["block_done"]
            chunk_sums = dict(meta.get("chunks", {}))
            for k in ("init_s", "compile_s", "warmup_s", "sampling_s"):
                timing[k] += meta.get("timing", {}).get(k, 0.0)
        else:
            if store.exists():  # resumed before any block finished (several processes: another had none)
                for p in (store.state_path, store.previous_state_path):
                    p.unlink(missing_ok=True)
            store.write_manifest(dict(manifest or {}, complete=False))

    step = _to_batched(kernel, batched, model_args, model_kwargs)
    compiled: dict = {}
    if chain_method == "sharded":
        state_sh, chain_sh = _shardings(chain_method, state_axes)
        if state_axes is not None:        # the tuning gathers the chains from the devices (see ChEES.chain_axis)
            kernel.chain_axis = "chain"
        if spmd:                          # this process's parts -> arrays over all processes
            state = jax.tree.map(lambda x, sh: jax.make_array_from_process_local_data(sh, np.asarray(x)),
                                 state, state_sh)
            chain_ids = jax.make_array_from_process_local_data(chain_sh, np.asarray(chain_ids))
        else:
            state = jax.device_put(state, state_sh)
            chain_ids = jax.device_put(chain_ids, chain_sh)
    host = ((lambda tree: jax.tree.map(lambda x: _this_process(x, True), tree)) if spmd else jax.device_get)
    host_state = ((lambda st: jax.tree.map(_this_process, st, state_axes)) if spmd else jax.device_get)

    samples: dict[str, list] = {k: [] for k in main_sites}
    stats: dict[str, list] = {k: [] for k in STAT_FIELDS.values()}
    thinned: dict[str, list] = {k: [] for k in site_thinning}
    warm: dict[str, list] = {k: [] for k in small_sites + list(STAT_FIELDS.values())}
    warm_time: list = []
    if store is not None and start > 0:  # what the killed run had already written
        _reload_from_store(store, blocks[:start], samples, stats, thinned, warm, warm_time, site_thinning,
                           chunk_sums)

    if pbar is not None and start > 0:
        pbar.resume_at(sum(b.steps for b in blocks[:start]))
    # with progress, each block runs as several calls of the same program (the draws do not change): the bar moves
    # and the log lines come during a block; not when several processes run one program (each would cut its own)
    split = pbar is not None and not spmd
    keep_unit = math.lcm(*site_thinning.values()) if site_thinning else 1
    n_run = 0
    try:
        for block in blocks[start:]:
            if max_blocks is not None and n_run >= max_blocks:
                break
            is_warm = block.kind == "warmup"
            n = block.steps if is_warm else block.n_keep
            args = (jnp.bool_(is_warm), jnp.int32(block.pre), jnp.int32(block.steps), jnp.int32(block.draw0))
            if "fn" not in compiled:
                if pbar is not None:
                    pbar.stage("compiling")
                tc = time.perf_counter()
                fn = _compile_block(_make_block_fn(step, post, wcap, chunk_size, thinning, main_sites, small_sites,
                                                   site_thinning, means), chain_method, state_axes)
                compiled["fn"] = compile_cached(fn.lower(state, chain_ids, *args))
                timing["compile_s"] += time.perf_counter() - tc
            tb = time.perf_counter()
            if pbar is not None:
                pbar.phase("warm-up" if is_warm else "sampling")
            outs, rate, done = [], None, 0
            while done < block.steps:
                piece = _next_piece(block, done, rate, thinning, keep_unit) if split else block
                tp = time.perf_counter()
                state, ((wsites, wst), (dsites, dst), bufs) = compiled["fn"](
                    state, chain_ids, jnp.bool_(is_warm), jnp.int32(piece.pre), jnp.int32(piece.steps),
                    jnp.int32(piece.draw0))
                m = piece.steps if is_warm else piece.n_keep
                part = ((wsites, wst) if is_warm else (dsites, dst)) + ({} if is_warm else bufs,)
                if split:                                   # only this piece's slots leave the device
                    part = jax.tree.map(lambda v: v[:, :m], part[:2]) + (
                        {k: v[:, : m // site_thinning[k]] for k, v in part[2].items()},)
                outs.append(host(part))
                rate = (time.perf_counter() - tp) / piece.steps
                done += piece.steps
                if pbar is not None:
                    pbar.update(piece.steps)
            sites, st, bufs = outs[0] if len(outs) == 1 else (
                {k: np.concatenate([np.asarray(o[i][k]) for o in outs], axis=1) for k in outs[0][i]}
                for i in range(3))
            sites = {k: np.asarray(v)[:, :n] for k, v in sites.items()}
            st = {k: np.asarray(v)[:, :n] for k, v in st.items()}
            bufs = {k: np.asarray(v)[:, : n // site_thinning[k]] for k, v in bufs.items()}
            dt = time.perf_counter() - tb
            n_run += 1
            if block.kind == "warmup":
                t_before = float(warm_time[-1][-1]) if warm_time else 0.0
                timing["warmup_s"] += dt
                for k in small_sites:
                    warm[k].append(np.asarray(sites[k]))
                for k, v in st.items():
                    warm[k].append(np.asarray(v))
                work = np.cumsum(np.max(np.asarray(st["num_steps"]), axis=0).astype(float))
                warm_time.append(t_before + dt * work / max(work[-1], 1.0))
            else:
                timing["sampling_s"] += dt
                for k in main_sites:
                    samples[k].append(np.asarray(sites[k]))
                for k, v in st.items():
                    stats[k].append(np.asarray(v))
                for k in site_thinning:
                    thinned[k].append(np.asarray(bufs[k]))
            if store is not None:
                datasets = _block_datasets(block, sites, st, bufs, main_sites, small_sites, site_thinning, num_chains,
                                           warm_time[-1] if block.kind == "warmup" else None)
                chunk_sums[store.block_path(block).name] = store.write_block(block, datasets)
                if _TEST_PAUSE:  # tests/system/test_resume.py: widen the window between a chunk and its checkpoint
                    time.sleep(_TEST_PAUSE)
                save_state(store.state_path, host_state(state), {"block_done": block.index, "timing": timing,
                                                                 "chunks": chunk_sums, "manifest": manifest_sha},
                           previous=store.previous_state_path)
                if spmd:    # no process starts the next block before every one has its checkpoint: after a kill, the
                    multihost_utils.sync_global_devices(f"bnnzoo checkpoint {block.index}")
    finally:                               # the bar (or a script's log handler) ends with the run
        if pbar is not None:
            pbar.close()
    finished = max_blocks is None or start + n_run >= len(blocks)
    if store is not None and finished:
        store.write_manifest(dict(store.manifest(), complete=True, timing=timing))

    cat = lambda lst, axis=1: np.concatenate(lst, axis=axis) if lst else None  # noqa: E731
    thinned_draws = {k: np.array([b.draw0 + j for b in blocks if b.kind == "draws"
                                  for j in range(b.n_keep) if (j + 1) % e == 0][: sum(x.shape[1] for x in thinned[k])])
                     for k, e in site_thinning.items()}
    warmup = {k: cat(v) for k, v in warm.items() if v}
    if warm_time:
        warmup["time"] = np.concatenate([np.atleast_1d(w) for w in warm_time])
    timing["devices_used"] = len(getattr(jax.tree.leaves(state)[0], "sharding", None).device_set) \
        if hasattr(jax.tree.leaves(state)[0], "sharding") else 1
    return ChunkedResult(samples={k: cat(v) for k, v in samples.items() if v},
                         stats={k: cat(v) for k, v in stats.items() if v},
                         thinned={k: cat(v) for k, v in thinned.items() if v},
                         thinned_draws=thinned_draws, warmup=warmup, timing=timing,
                         last_state=state, resumed_from_block=resumed_from, blocks=blocks,
                         store_versions=store_versions)


def _block_datasets(block, sites, stats, bufs, main_sites, small_sites, site_thinning, num_chains, wtime):
    def ds(arrays, draw_coord, prefix=""):
        data, coords = {}, {"chain": np.arange(num_chains), "draw": draw_coord}
        for k, v in arrays.items():
            v = np.asarray(v)
            dims = ("chain", "draw") + tuple(f"{k}_dim_{i}" for i in range(v.ndim - 2))
            data[prefix + k] = (dims, v)
        return xr.Dataset(data, coords=coords)

    if block.kind == "warmup":
        return {"warmup": ds(dict({k: sites[k] for k in small_sites}, **stats), np.arange(block.steps)).assign(
            time=("draw", np.asarray(wtime)))}
    draws = block.draw0 + np.arange(block.n_keep)
    groups = {"posterior": ds({k: sites[k] for k in main_sites}, draws), "sample_stats": ds(stats, draws)}
    if site_thinning:
        parts = []
        for k, e in site_thinning.items():
            d = np.array([block.draw0 + j for j in range(block.n_keep) if (j + 1) % e == 0])
            parts.append(ds({k: bufs[k]}, d).rename({"draw": f"draw_{k}"}))
        groups["posterior_thinned"] = xr.merge(parts)
    return groups


def _reload_from_store(store, done_blocks, samples, stats, thinned, warm, warm_time, site_thinning, chunk_sums):
    """Read the finished blocks' files back (each one exactly, in block order; the checkpoint's checksums were
    checked by :meth:`RunStore.good_checkpoint`): a missing or unreadable file stops the resume, naming it."""
    for b in done_blocks:
        path = store.block_path(b)
        if chunk_sums and path.name not in chunk_sums:
            raise StoreError(f"cannot resume {store.path}: the checkpoint lists no checksum for {path}")
        if not path.exists():
            raise StoreError(f"cannot resume {store.path}: chunk file {path} is missing")
        groups = ("warmup",) if b.kind == "warmup" else ("posterior", "sample_stats", "posterior_thinned")
        parts = store.read_blocks(b.kind, groups, names=[path.name])
        if b.kind == "warmup":
            if len(parts["warmup"]) != 1:
                raise StoreError(f"cannot resume {store.path}: chunk file {path} holds no warm-up trace")
            ds = parts["warmup"][0]
            for k in warm:
                if k in ds:
                    warm[k].append(ds[k].values)
            warm_time.append(ds["time"].values)
            continue
        if len(parts["posterior"]) != 1 or len(parts["sample_stats"]) != 1:
            raise StoreError(f"cannot resume {store.path}: chunk file {path} lacks its posterior or sample_stats")
        for k in samples:
            samples[k].append(parts["posterior"][0][k].values)
        for k in stats:
            stats[k].append(parts["sample_stats"][0][k].values)
        for ds in parts["posterior_thinned"]:
            for k in site_thinning:
                thinned[k].append(ds[k].values)
