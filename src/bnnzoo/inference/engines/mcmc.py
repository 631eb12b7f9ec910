"""NumPyro's own ``MCMC`` loop: NUTS / HMC without the chunked driver's options; the test-set outputs by
``Predictive`` from the draws."""

from __future__ import annotations

import logging
import warnings

import jax
import numpy as np
from numpyro.infer import MCMC, Predictive

from ..._log import Progress, interactive
from ..convert import EXTRA_FIELDS, sample_stats
from ._base import Draws

_logger = logging.getLogger(__name__)


def draw_mcmc(spec, kernel, key_run, key_pred, init_params) -> Draws:
    """Run ``kernel`` in NumPyro's ``MCMC`` with the run's sizes and chain method."""
    task, kw, c, progress = spec.task, spec.model_kwargs, spec.chains, spec.recording.progress
    C = c.num_chains
    # NumPyro's bar redraws itself with carriage returns: drawn on a terminal only; elsewhere its loop runs as one
    # program, so the log says when it starts and when it ends
    bar = bool(progress) and interactive()
    steps = c.num_warmup + c.num_samples
    lines = Progress(steps, desc="sample", logger=_logger) if progress and not bar else None
    mcmc = MCMC(kernel, num_warmup=c.num_warmup, num_samples=c.num_samples, num_chains=C,
                thinning=c.thinning, chain_method=c.method, progress_bar=bar)
    try:
        if lines is not None:
            lines.stage(f"{spec.sampler.name}, {C} chain(s) in NumPyro's own loop (no count until it ends)")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="There are not enough devices")
            mcmc.run(key_run, task.X, task.Y, extra_fields=EXTRA_FIELDS, init_params=(
                None if init_params is None else init_params if C > 1
                else jax.tree.map(lambda v: v[0], init_params)), **kw)
        if lines is not None:
            lines.update(steps)
    finally:
        if lines is not None:
            lines.close()
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    fields = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    f_test = None
    if task.X_test is not None:
        pred = Predictive(spec.model, posterior_samples=mcmc.get_samples(), return_sites=["f_test"])
        f_test = np.asarray(pred(key_pred, task.X, task.Y, **dict(kw, X_test=task.X_test))["f_test"])
        f_test = f_test.reshape(next(iter(samples.values())).shape[:2] + f_test.shape[1:])
    return Draws(samples=samples, stats=sample_stats(fields), f_test=f_test)
