"""sampler="gibbs": the exact blocked Gibbs sampler of the linear fully-connected nets
(:mod:`bnnzoo.inference.gibbs_linear`), all chains in memory, one after the other."""

from __future__ import annotations

from ..gibbs_linear import gibbs_chains
from ._base import Engine, chains_args, in_memory_draws


def draw(spec, key_run, key_pred, init_params):
    """The Gibbs sweeps of the run (its own seed; the keys and starting values are not used)."""
    return in_memory_draws(spec, *gibbs_chains(**chains_args(spec)))


ENGINE = Engine("gibbs", "bnnzoo.inference.gibbs_linear", draw, every_entry=False,
                refuses=("chunk_size", "store", "resume", "site_thinning", "reparam", "step_size",
                         "dense_mass"),
                refusal="runs in memory without HMC settings")
