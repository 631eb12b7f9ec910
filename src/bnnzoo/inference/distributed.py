"""Several processes (hosts) through JAX's own distributed runtime.

Start every process with :func:`initialize` (or ``jax.distributed.initialize`` itself, which detects SLURM, Open MPI
and cloud TPU environments), then call :func:`bnnzoo.sample` with the same arguments in every process.  The chains
are split over the processes in order (process p runs chains ``p·k … p·k + k − 1``, k = num_chains / processes),
each process runs its share through the chunked driver on its own devices (vectorised, or sharded over its local
devices), and at the end every process receives all chains (``multihost_utils.process_allgather``), so each one
returns the same ArviZ object as a single-process run with the same seed: chain c starts from the same key and takes
the same steps wherever it runs (``tests/inference/test_distributed.py`` runs two CPU processes and compares them with
one, also after killing both mid-way and resuming).

ChEES and SNAPER tune on all chains at once during warm-up: every process initialises all chains, keeps its own and
the shared tuning state, and one program runs over all processes' devices (``jax.shard_map`` over a mesh of every
device, in process order); the tuning gathers all chains onto every device (``ChEES.chain_axis``).  The Gibbs sampler
runs in numpy and is refused before anything compiles.  With a ``store`` every process streams its own chains to its
own sub-folder ``process_<p>`` (and resumes from it), so a store on a shared file system holds the whole run; for
ChEES/SNAPER each process also keeps its previous checkpoint, and all resume from the latest block every process
finished (a kill can fall between two processes' checkpoints).  When one process refuses its sub-folder (it holds a
run and ``resume`` was not given, or another run), all stop before sampling (:func:`agree_to_start`).
"""

from __future__ import annotations

from typing import Mapping

import jax
import numpy as np
from jax.experimental import multihost_utils

__all__ = ["initialize", "local_chains", "check_sampler", "agree_to_start", "gather_chains"]

SPLITTABLE = ("nuts", "hmc", "chees", "snaper")


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, **kwargs) -> None:
    """``jax.distributed.initialize`` with cross-process collectives enabled for CPU processes (gloo), so CPU-only
    hosts can gather their chains too.  Without arguments JAX reads them from the cluster environment."""
    try:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except (AttributeError, ValueError):  # a JAX without the option: GPU/TPU collectives still work
        pass
    jax.distributed.initialize(coordinator_address=coordinator_address, num_processes=num_processes,
                               process_id=process_id, **kwargs)


def check_sampler(sampler: str, num_chains: int, n_proc: int) -> None:
    """Refuse, before anything compiles, a multi-process run that cannot be split over the processes."""
    if sampler not in SPLITTABLE:
        raise ValueError(f"sampler={sampler!r} cannot run over {n_proc} processes (only {SPLITTABLE} can; the Gibbs "
                         f"sampler runs in numpy): run it in one process")
    if num_chains % n_proc:
        raise ValueError(f"num_chains ({num_chains}) must be a multiple of the number of processes ({n_proc}): each "
                         f"process runs the same number of chains")


def agree_to_start(refusal: Exception | None) -> None:
    """Raise ``refusal`` if there is one; with several processes, every process raises when any one refused (a
    store that holds another run, a missing ``resume``), so none runs on to a collective and waits there for a
    process that has stopped.  A collective when several processes run: every process must call it."""
    if jax.process_count() > 1:
        flags = np.asarray(multihost_utils.process_allgather(np.array([refusal is not None], np.int32))).ravel()
        if refusal is None and flags.any():
            refusal = ValueError(f"process(es) {np.flatnonzero(flags).tolist()} of {flags.size} refused to start "
                                 f"this run (see their error); this process stops too")
    if refusal is not None:
        raise refusal


def local_chains(num_chains: int) -> tuple[int, int]:
    """(first chain, number of chains) of this process."""
    n_proc = jax.process_count()
    k = num_chains // n_proc
    return jax.process_index() * k, k


def gather_chains(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every process's ``{name: (local_chain, ...)}`` → ``{name: (chain, ...)}`` with all chains in process order,
    on every process (dtypes kept: JAX may carry them narrower on the way)."""
    names = sorted(arrays)
    if jax.process_count() == 1 or not names:
        return dict(arrays)

    local = [np.asarray(arrays[k]) for k in names]
    got = multihost_utils.process_allgather(local, tiled=True)   # concatenated along the leading (chain) axis
    return {k: np.asarray(g).astype(a.dtype, copy=False) for k, a, g in zip(names, local, got)}
