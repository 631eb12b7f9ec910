"""Former home of the chunked driver and its checkpoint store, kept so that ``bnnzoo.inference.engine`` imports
keep working: the store is :mod:`bnnzoo.inference.store`, the driver :mod:`bnnzoo.inference.chunked`."""

from .chunked import STAT_FIELDS, Block, ChunkedResult, plan_blocks, run_chunked
from .store import RunStore, StoreError, fingerprint, load_state, load_store, save_state

__all__ = ["Block", "plan_blocks", "RunStore", "StoreError", "ChunkedResult", "run_chunked", "STAT_FIELDS",
           "load_store", "fingerprint", "save_state", "load_state"]
