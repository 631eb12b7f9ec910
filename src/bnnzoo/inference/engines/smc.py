"""The tempered sampler "smc", BlackJAX's adaptive tempered SMC (:mod:`bnnzoo.inference.smc`), in memory on one
device with its own tuning; it estimates the log evidence."""

from __future__ import annotations

from ..convert import sample_stats
from ..smc import run_smc
from ._base import Draws, Engine


def draw(spec, key_run, key_pred, init_params) -> Draws:
    """The SMC run of ``spec``, its options in ``spec.sampler.tempering`` (``init_params`` is None: SMC starts from the
    prior)."""
    samples, fields, cfg = run_smc(spec, key_run)
    f_test = samples.pop("f_test", None)
    return Draws(samples=samples, stats=sample_stats(fields), f_test=f_test, engine=dict(cfg, options=spec.sampler.tempering))


ENGINE = Engine("smc", "blackjax", draw=draw, takes=("num_steps", "tempering"),
                refuses=("chunk_size", "store", "resume", "site_thinning", "reparam", "step_size", "dense_mass",
                         "max_tree_depth"),
                refusal="runs in memory with its own step-size and mass tuning")
"""Tempered SMC ("smc")."""
