"""sampler="units": unit-wise Metropolis–Hastings moves with the readout integrated out
(:mod:`bnnzoo.inference.units`), chains batched on one device, with its own blocks, store and resume."""

from __future__ import annotations

from ..chunked import engine_chunk_size
from ..store import RunStore
from ..units import units_chains
from ._base import Engine, chains_args, in_memory_draws, store_manifest


def draw(spec, key_run, key_pred, init_params):
    """The unit-wise sweeps of the run (its own seed; ``init`` read as given, "prior" or {"W1": ...})."""
    chunk = engine_chunk_size(spec.chunk_size, spec.num_samples // spec.thinning, spec.store, {})
    extra = dict(init=spec.init, chunk_size=chunk, resume=bool(spec.resume))
    if spec.store is not None:
        extra.update(store=RunStore(spec.store),
                     manifest=store_manifest(spec, dict(sampler="units", init=spec.init_summary()), chunk))
    samples, stats, info = units_chains(**chains_args(spec), **extra)
    draws = in_memory_draws(spec, samples, stats, info)
    draws.engine.update(units=info["kernel"], chunk_size=info["chunk_size"],   # its acceptance and proposal settings
                        store=None if spec.store is None else str(spec.store),
                        resumed_from_block=info["resumed_from_block"])
    return draws


ENGINE = Engine("units", "bnnzoo.inference.units", draw, every_entry=False,
                refuses=("site_thinning", "reparam", "step_size", "dense_mass", "target_accept",
                         "max_tree_depth"),
                refusal="takes no HMC settings (and no site_thinning)")
