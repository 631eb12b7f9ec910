"""The engines of :func:`bnnzoo.sample`, one module each, and their registry.

Every engine takes the run's checked :class:`~bnnzoo.inference.plan.RunSpec` and returns a :class:`Draws` record
(``Engine.draw``); each declares itself once in an :class:`Engine` record (its name, library, the settings it takes,
needs and refuses, whether every entry offers it), which :mod:`bnnzoo.inference.plan` and the CLI read:

* :mod:`.kernels`: "nuts", "hmc", "chees", "snaper", NumPyro kernels run by :mod:`.chunked` (the chunked driver) or
  :mod:`.mcmc` (NumPyro's loop);
* :mod:`.gibbs`: "gibbs"; :mod:`.units`: "units"; :mod:`.smc`: "smc".

A new sampler is a module here with its ``draw`` and its ``Engine`` record, listed in :data:`ENGINES`.
"""

from __future__ import annotations

from . import gibbs, kernels, smc, units
from ._base import OPTIONS, Draws, Engine
from ._base import check_num_steps as _check_num_steps

__all__ = ["ENGINES", "SAMPLERS", "CHEES_LIKE", "TEMPERING", "NUM_STEPS_SAMPLERS", "EVERY_ENTRY", "OPTIONS", "Draws",
           "Engine", "check_num_steps", "refused"]

ENGINES = {name: kernels.ENGINES[name] for name in ("nuts", "hmc")} | {"gibbs": gibbs.ENGINE} \
    | {name: kernels.ENGINES[name] for name in ("chees", "snaper")} | {"smc": smc.ENGINE, "units": units.ENGINE}
"""{sampler name: Engine}, in the order the samplers are listed to users."""

SAMPLERS = tuple(ENGINES)
CHEES_LIKE = tuple(n for n, e in ENGINES.items() if e.coupled)          # chains tuned together
TEMPERING = tuple(n for n, e in ENGINES.items() if "tempering" in e.takes)   # the tempering options
NUM_STEPS_SAMPLERS = tuple(n for n, e in ENGINES.items() if "num_steps" in e.takes)
EVERY_ENTRY = tuple(n for n, e in ENGINES.items() if e.every_entry)     # a plain NumPyro model's samplers


def check_num_steps(sampler: str, num_steps, *, cli: bool = False) -> None:
    """The one rule for ``num_steps`` (:func:`._base.check_num_steps`) over :data:`ENGINES`, read by
    :func:`bnnzoo.sample` and the CLI alike."""
    _check_num_steps(ENGINES, sampler, num_steps, cli=cli)


def refused(sampler: str, given: dict) -> list:
    """The settings of :data:`OPTIONS` that ``sampler`` refuses and ``given`` ({name: value}) sets, in that order
    (``max_tree_depth`` counts as set when other than 10)."""
    refuses = ENGINES[sampler].refuses
    return [n for n in OPTIONS if n in refuses and n in given
            and (given[n] != 10 if n == "max_tree_depth" else given[n])]
