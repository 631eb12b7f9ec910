"""Sampling: NUTS / HMC into ArviZ data (:func:`sample`), and exact samplers used as test oracles."""

from .sampling import SAMPLERS, build_kernel, run_config, sample

__all__ = ["sample", "run_config", "build_kernel", "SAMPLERS"]
