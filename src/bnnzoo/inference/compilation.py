"""How bnnzoo compiles its programs: XLA options, an in-process cache of compiled programs, and JAX's persistent
compilation cache (opt-in).

Within one process, :func:`compile_cached` keeps the last compiled programs (the chains' initialisation and the
sampling blocks) keyed by their lowered program text, so a second ``bnnzoo.sample`` call with the same model, data,
sizes and sampler settings (another seed, say) skips XLA's compile.  Across processes, JAX's persistent
compilation cache keeps compiled programs on disk and reuses them in later calls and later processes with the same
model, data shapes, sizes and sampler settings.

A small ``bnnzoo.sample`` call on 2 CPU cores spends most of its time compiling (the docs' Benchmarks page, "Fixed
cost"); with the cache a repeated call skips that.  It is off unless asked for, by
:func:`enable_compilation_cache` or by the environment variable ``BNNZOO_COMPILATION_CACHE`` (a folder, read when
bnnzoo is imported; the command line and the test suite's script use it).  The cache is JAX's own
(``jax_compilation_cache_dir``): a program is found again only when its compiled form would be identical, so
draws do not change; the data enter the programs as constants, so a new data set compiles anew.
"""

from __future__ import annotations

import hashlib
import os
import threading
import warnings
from collections import OrderedDict
from pathlib import Path

import jax

__all__ = ["enable_compilation_cache", "compiler_options", "compile_cached", "clear_compiled", "ENV_VAR",
           "TUNING_ENV_VAR", "CACHE_WARNING"]

_COMPILED: OrderedDict = OrderedDict()
_COMPILED_MAX = 16          # programs kept (least recently used dropped): each holds its data as constants
_LOCK = threading.Lock()

CACHE_WARNING = r"Error (reading|writing) persistent compilation cache entry"
"""JAX's warning when a cache entry cannot be read or written (a full disk): the program is then compiled as without
the cache, so the warning is not shown."""

ENV_VAR = "BNNZOO_COMPILATION_CACHE"

TUNING_ENV_VAR = "BNNZOO_XLA_TUNING"


def compiler_options() -> dict:
    """XLA options for bnnzoo's own programs (the jitted initialisation of the chains and the chunked driver's
    sampling blocks) on JAX's default backend.

    On a GPU, XLA by default times candidate kernels for every matrix product of a program it compiles
    (autotuning) and fuses products into generated (Triton) kernels. For these nets the products on cuBLAS without
    any tuning compile in a fraction of the time and sample as fast (the docs' Benchmarks page, "One GPU at the
    paper's size"): ``xla_gpu_autotune_level=0`` and ``xla_gpu_enable_triton_gemm=False``. ``BNNZOO_XLA_TUNING=1``
    in the environment restores XLA's defaults. On a CPU: no options.

    Returns
    -------
    dict
        ``compiler_options`` for :func:`jax.jit` (empty when XLA's defaults apply).
    """
    if jax.default_backend() != "gpu" or os.environ.get(TUNING_ENV_VAR, "") not in ("", "0"):
        return {}
    return {"xla_gpu_autotune_level": 0, "xla_gpu_enable_triton_gemm": False}


def compile_cached(lowered: jax.stages.Lowered) -> jax.stages.Compiled:
    """Compile a lowered program with :func:`compiler_options`, or return the program compiled earlier in this
    process from the same lowered text.

    The key is the program's StableHLO text (the data enter as constants, so they are part of it), its argument and
    result structure, the options and the devices: a hit is the program XLA would compile again.  The last 16
    programs are kept.

    Parameters
    ----------
    lowered : jax.stages.Lowered
        ``jax.jit(f).lower(*args)``.

    Returns
    -------
    jax.stages.Compiled
        Callable with the arguments ``lowered`` was lowered for.
    """
    opts = compiler_options()
    h = hashlib.sha256(lowered.as_text().encode())
    h.update(repr((lowered.in_tree, lowered.out_tree, sorted(opts.items()), jax.default_backend(),
                   [str(d) for d in jax.devices()], jax.config.jax_default_device)).encode())
    key = h.hexdigest()
    with _LOCK:
        hit = _COMPILED.get(key)
        if hit is not None:
            _COMPILED.move_to_end(key)
            return hit
    compiled = lowered.compile(opts or None)
    with _LOCK:
        _COMPILED[key] = compiled
        while len(_COMPILED) > _COMPILED_MAX:
            _COMPILED.popitem(last=False)
    return compiled


def clear_compiled() -> None:
    """Forget the programs :func:`compile_cached` keeps (their memory is freed when nothing else holds them)."""
    with _LOCK:
        _COMPILED.clear()


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path:
    """Keep compiled programs in ``path`` and reuse them (JAX's persistent compilation cache).

    Every program is cached, however short its compile (JAX's default skips those under a second, which are most of
    a small run's).  Nothing is evicted (JAX's size limit needs the optional ``filelock`` package): the folder grows
    with every new program and can be deleted at any time.  An entry that cannot be read or written (a full disk)
    is skipped without a warning: that program is compiled as without the cache.

    Parameters
    ----------
    path : folder or None
        Where the programs go (created if missing); None: ``$BNNZOO_COMPILATION_CACHE`` if set, else
        ``$XDG_CACHE_HOME/bnnzoo/jax`` (``~/.cache/bnnzoo/jax`` when that is unset).

    Returns
    -------
    Path
        The cache folder.

    Raises
    ------
    ValueError
        If ``path`` exists and is not a folder.
    """
    if path is None:
        path = os.environ.get(ENV_VAR) or Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache") / "bnnzoo" / "jax"
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"path must be a folder for the compilation cache, got the file {str(path)!r}")
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    warnings.filterwarnings("ignore", message=CACHE_WARNING, category=UserWarning)
    return path


def _from_environment() -> None:
    """Enable the cache when ``BNNZOO_COMPILATION_CACHE`` names a folder (called when bnnzoo is imported); a value
    that cannot be a cache folder (a file, a path below a file, a folder that cannot be created) gives one warning
    and bnnzoo runs without the cache: an environment variable must not stop ``import bnnzoo``."""
    value = os.environ.get(ENV_VAR)
    if not value:
        return
    try:
        enable_compilation_cache(value)
    except (ValueError, OSError) as e:
        why = str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e.strerror or e}"
        # attributed to the variable, not to a line of Python: one line on stderr, also in the command line,
        # which reads the environment when it imports bnnzoo, before it can format warnings itself
        warnings.warn_explicit(f"{ENV_VAR}={value!r} cannot hold the compilation cache ({why}); running without it",
                               RuntimeWarning, filename=ENV_VAR, lineno=0, module=__name__)
