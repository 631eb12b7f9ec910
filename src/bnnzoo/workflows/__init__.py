"""Workflows: what composes the sampler, the diagnostics and the theory from above them.

* :mod:`bnnzoo.workflows.certify` — runs from several start families compared on their populations
  (:func:`bnnzoo.sample` with ``certify``).
"""

from . import certify
from .certify import sample

__all__ = ["certify", "sample"]
