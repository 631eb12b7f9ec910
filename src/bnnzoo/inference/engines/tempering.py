"""The tempering samplers, in memory on one device with their own tuning: "pt", non-reversible parallel tempering
(:mod:`bnnzoo.inference.tempering`), and "smc", BlackJAX's adaptive tempered SMC (:mod:`bnnzoo.inference.smc`).
Both estimate the log evidence."""

from __future__ import annotations

from ..convert import sample_stats
from ..tempering import run_tempering
from ._base import Draws, Engine


def draw(spec, key_run, key_pred, init_params) -> Draws:
    """The tempering run of ``spec.sampler.name``, its options in ``spec.sampler.tempering``."""
    samples, fields, extra_stats, cfg = run_tempering(spec, key_run, init_params)
    f_test = samples.pop("f_test", None)
    return Draws(samples=samples, stats=dict(sample_stats(fields), **extra_stats), f_test=f_test,
                 engine=dict(cfg, options=spec.sampler.tempering))


_REFUSES = ("store", "resume", "site_thinning", "reparam", "warm_start", "step_size", "dense_mass", "max_tree_depth")
_COMMON = dict(draw=draw, takes=("num_steps", "tempering"), refusal="runs in memory with its own step-size and "
               "mass tuning")
ENGINES = {"pt": Engine("pt", "bnnzoo.inference.tempering", refuses=_REFUSES, **_COMMON),
           "smc": Engine("smc", "blackjax", refuses=("chunk_size",) + _REFUSES, **_COMMON)}
"""Parallel tempering ("pt": ``chunk_size`` sets its jitted chunks) and tempered SMC ("smc")."""
