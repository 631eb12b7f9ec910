"""Sampling: NUTS / HMC into ArviZ data (:func:`sample`), the chunked driver for long runs and many devices
(:mod:`bnnzoo.inference.chunked`) with its checkpoint store (:mod:`bnnzoo.inference.store`), and exact samplers used
as test oracles."""

from .store import load_store
from .sampling import REPARAMS, SAMPLERS, build_kernel, run_config, sample

__all__ = ["sample", "run_config", "build_kernel", "SAMPLERS", "REPARAMS", "load_store"]
