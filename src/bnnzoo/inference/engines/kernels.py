"""The NumPyro-kernel samplers: "nuts", "hmc", "chees" and "snaper".  :func:`build_kernel` builds the kernel from the
run's settings; the chunked driver (:mod:`.chunked`) or NumPyro's own loop (:mod:`.mcmc`) runs it, as the run's
plan says (``RunSpec.chains.use_engine``)."""

from __future__ import annotations

import numpy as np
from numpyro.infer import HMC, NUTS

from ...models._checks import check_int
from ..chees import ChEES
from ..initialize import fast_kernel, init_strategy
from ._base import Engine, check_num_steps, model_function
from .chunked import draw_chunked
from .mcmc import draw_mcmc

__all__ = ["build_kernel", "kernel_of", "ENGINES"]


def build_kernel(fn, *, sampler="nuts", step_size=None, num_steps=None, target_accept=None, max_tree_depth=10,
                 dense_mass=False, init="prior"):
    """The NUTS, HMC or ChEES-HMC kernel for the NumPyro model ``fn``.

    Parameters
    ----------
    fn : the NumPyro model.
    sampler : "nuts", "hmc", "chees" or "snaper" (see :func:`bnnzoo.sample`).
    step_size : float > 0, used as is (no adaptation); None adapts it during warm-up.
    num_steps : int >= 1, HMC only: leapfrog steps per draw, taken with ``trajectory_length=None`` (NumPyro would
        otherwise derive the number of steps from a trajectory length and the adapted step size).
    target_accept : in (0, 1); None means 0.8 for NUTS and HMC (mean acceptance), 0.651 for ChEES / SNAPER (the
        harmonic mean over chains).
    max_tree_depth : int >= 1, NUTS: at most 2**max_tree_depth leapfrog steps per draw; ChEES: the same cap.
    dense_mass : NUTS / HMC: a dense mass matrix.
    init : "prior" (each chain starts from a prior draw), "uniform" (NumPyro's default), a NumPyro ``init_to_*``
        strategy, or a dict of starting values (given to the run as ``init_params``; the kernel then keeps "prior"
        as its own rule).

    Returns
    -------
    A NumPyro ``MCMCKernel``.

    Raises
    ------
    ValueError
        on a bad or inapplicable argument.
    """
    if sampler not in ENGINES:
        raise ValueError(f"sampler must be one of {list(ENGINES)} (the others have no NumPyro kernel), "
                         f"got {sampler!r}")
    if step_size is not None and not (np.isfinite(step_size) and step_size > 0):
        raise ValueError(f"step_size must be > 0, got {step_size!r}")
    coupled = ENGINES[sampler].coupled
    if target_accept is None:
        target_accept = 0.651 if coupled else 0.8
    if not 0 < target_accept < 1:
        raise ValueError(f"target_accept must lie in (0, 1), got {target_accept!r}")
    if isinstance(init, dict):   # the run starts from given values (init_params): the kernel's own rule goes unused
        init = "prior"
    if not callable(init) and init not in ("prior", "uniform"):
        raise ValueError(f"init must be 'prior' (a draw from the prior), 'uniform' (NumPyro's default) or a NumPyro "
                         f"init_to_* strategy, got {init!r}")
    check_num_steps(ENGINES, sampler, num_steps)
    if coupled:
        if dense_mass:
            raise ValueError(f"sampler={sampler!r} tunes its own trajectory length and a diagonal mass: drop "
                             f"dense_mass")
        check_int("max_tree_depth", max_tree_depth, 1)
        return ChEES(fn, step_size=step_size, max_leapfrog_steps=2 ** int(max_tree_depth), target_accept=target_accept,
                     init=init, criterion=sampler)
    common = dict(
        step_size=1.0 if step_size is None else float(step_size),
        adapt_step_size=step_size is None,
        dense_mass=dense_mass,
        target_accept_prob=target_accept,
        init_strategy=init_strategy(init),
    )
    if sampler == "nuts":
        check_int("max_tree_depth", max_tree_depth, 1)
        return fast_kernel(NUTS)(fn, max_tree_depth=max_tree_depth, **common)
    # sampler="hmc": fixed num_steps leapfrog steps per draw
    return fast_kernel(HMC)(fn, num_steps=int(num_steps), trajectory_length=None, **common)


def kernel_of(spec):
    """The kernel of a checked run (:func:`build_kernel` with the run's sampler settings, ``spec.sampler``)."""
    s = spec.sampler
    return build_kernel(model_function(spec), sampler=s.name, step_size=s.step_size, num_steps=s.num_steps,
                        target_accept=s.target_accept, max_tree_depth=s.max_tree_depth, dense_mass=s.dense_mass,
                        init=s.init)


def draw(spec, key_run, key_pred, init_params):
    """The kernel's run: the chunked driver when the plan says so, else NumPyro's ``MCMC``."""
    run = draw_chunked if spec.chains.use_engine else draw_mcmc
    return run(spec, kernel_of(spec), key_run, key_pred, init_params)


_TUNED = dict(kernel=True, coupled=True, library="bnnzoo.inference.chees", draw=draw)
ENGINES = {"nuts": Engine("nuts", "numpyro", draw, kernel=True),
           "hmc": Engine("hmc", "numpyro", draw, kernel=True, takes=("num_steps",), needs=("num_steps",)),
           "chees": Engine("chees", **_TUNED),
           "snaper": Engine("snaper", **_TUNED)}
"""The NumPyro-kernel engines, every entry's: NUTS and HMC (NumPyro's), ChEES / SNAPER (:mod:`bnnzoo.inference.chees`:
one kernel, two trajectory criteria, chains tuned together)."""
