"""Sampling into ArviZ data.

:func:`sample` (the public call, :mod:`.sampling`), :mod:`.plan` (arguments checked; chain method, engine and
sharding decided once), :mod:`.convert` (draws into ArviZ groups, one table of sampler statistics, provenance),
:mod:`.predictive` (log-likelihood, posterior / prior predictive, :func:`predict`), the chunked driver for long
runs and many devices (:mod:`.chunked`) with its checkpoint store (:mod:`.store`), and the exact samplers used as
test oracles.
"""

from .convert import run_config
from .plan import REPARAMS, SAMPLERS, RunPlan, RunSpec, make_plan, make_spec
from .predictive import predict
from .sampling import build_kernel, sample
from .store import load_store

__all__ = ["sample", "predict", "run_config", "build_kernel", "SAMPLERS", "REPARAMS", "RunPlan", "make_plan", "RunSpec", "make_spec",
           "load_store"]
