"""sampler="units": unit-wise Metropolis–Hastings moves with the readout integrated out
(:mod:`bnnzoo.inference.units`), chains batched on one device, with its own blocks, store and resume."""

from __future__ import annotations

from ..chunked import engine_chunk_size
from ..store import RunStore
from ..units import units_chains
from ._base import Engine, chains_args, in_memory_draws, store_manifest


def draw(spec, key_run, key_pred, init_params):
    """The unit-wise sweeps of the run (its own seed; ``init`` read as given, "prior" or {"W1": ...})."""
    st, c = spec.store, spec.chains
    chunk = engine_chunk_size(st.chunk_size, c.num_samples // c.thinning, st.path, {})
    moves = dict(spec.sampler.moves or {})
    extra = dict(init=spec.sampler.init, chunk_size=chunk, resume=bool(st.resume), **moves)
    if st.path is not None:                 # moves in the identity only when set: older stores keep theirs
        extra.update(store=RunStore(st.path),
                     manifest=store_manifest(spec, dict(sampler="units", init=spec.sampler.init_summary(),
                                                        **({"moves": moves} if moves else {})), chunk))
    samples, stats, info = units_chains(**chains_args(spec), labels=spec.task.labels, **extra)
    draws = in_memory_draws(spec, samples, stats, info)
    draws.engine.update(units=info["kernel"], chunk_size=info["chunk_size"],   # its acceptance and proposal settings
                        store=None if st.path is None else str(st.path),
                        resumed_from_block=info["resumed_from_block"])
    return draws


ENGINE = Engine("units", "bnnzoo.inference.units", draw, every_entry=False, takes=("moves",),
                refuses=("site_thinning", "reparam", "step_size", "dense_mass", "target_accept",
                         "max_tree_depth"),
                refusal="takes no HMC settings (and no site_thinning)")
