"""Command line: ``bnnzoo list``, ``bnnzoo sample``, ``bnnzoo predict``, ``bnnzoo demo``, ``bnnzoo diagnose``.

Everything entry-specific comes from the zoo entry (:class:`bnnzoo.models.ZooEntry`): its defaults, its recorded
sites (``--record`` left out), and the keywords its model and task builder take, which ``--param NAME=VALUE`` sets
(routed by signature; ``model.NAME`` / ``task.NAME`` where both take the name).  A model keyword that the task
records in ``task.meta`` under the same name (the attention context length, the gated network's graph) follows the
task unless set explicitly.  Bad input ends in one line ``bnnzoo: error: ...`` and exit status 2, never a traceback.

What a command is asked for (``list``, the ``diagnose`` report or its JSON) goes to stdout; progress and messages
("wrote FILE") go through the ``bnnzoo`` logger to stderr: INFO and above by default, DEBUG with ``bnnzoo -v``,
WARNING and above with ``bnnzoo -q`` (which also turns the progress bars off).  Progress is a bar when stderr is a
terminal and one log line per tenth of the run otherwise.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import ctypes
import hashlib
import inspect
import json
import logging
import math
import multiprocessing
import os
import sys
import tempfile
import time
import warnings
from concurrent.futures import Future, ProcessPoolExecutor
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import jax
import numpy as np
import numpyro

from . import _log, azcompat
from .diagnostics import diagnose, read_run
from .diagnostics.report import verdict_lines
from .inference import predict
from .inference.compilation import CACHE_WARNING
from .inference.convert import run_config
from .inference.distributed import initialize
from .inference.engines import ENGINES, refused
from .inference.plan import DEFAULT_CHAINS, SAMPLERS, TEMPERING, check_num_steps
from .inference.smc import log_evidence
from .inference.units import MOVE_COUNTS, MOVE_OPTIONS
from .models import get_entry, list_entries
from .plots import save_figures
from .plots.report import summary_entry, write_report, write_summary
from .workflows import sample

try:
    import fcntl                     # POSIX only
except ImportError:                  # pragma: no cover
    fcntl = None


_logger = logging.getLogger("bnnzoo.cli")   # not __name__: "__main__" under `python -m bnnzoo.cli`

_SET_BY_CLI = frozenset({"X", "Y", "X_test", "num_outputs", "record"})
"""Model keywords the command sets itself (data from the task, ``--record``): not settable with ``--param``."""


def _keywords(fn, skip=frozenset()) -> list[str]:
    """The keyword arguments ``fn`` takes, in signature order (``skip`` left out)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [n for n, q in inspect.signature(fn).parameters.items() if q.kind in kinds and n not in skip]


def param_names(entry) -> tuple[list[str], list[str]]:
    """The keywords ``--param NAME=VALUE`` can set for a zoo entry.

    Parameters
    ----------
    entry : ZooEntry
        The zoo entry.

    Returns
    -------
    tuple of (list of str, list of str)
        The keyword arguments of ``entry.model`` (less the data, ``X_test``, ``num_outputs`` and ``record``, which
        the command sets itself) and those of ``entry.make_task``, in signature order.
    """
    return _keywords(entry.model, _SET_BY_CLI), _keywords(entry.make_task)


def _short(v, limit: int = 60) -> str:
    """A short readable form of a default value: literals as Python literals, functions by name, other objects by
    their type and name (never an ``<... object at 0x...>`` repr)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_short(x, limit) for x in v)
        return f"({inner}{',' if len(v) == 1 else ''})" if isinstance(v, tuple) else f"[{inner}]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {_short(x, limit)}" for k, x in v.items()) + "}"
    if callable(v) and hasattr(v, "__name__"):
        return v.__name__
    text = repr(v)
    if len(text) <= limit and " at 0x" not in text:
        return text
    name = getattr(v, "name", None)
    return f"{type(v).__name__} {name!r}" if isinstance(name, str) else type(v).__name__


def _kwargs_text(kw: dict) -> str:
    return ", ".join(f"{k}={_short(v)}" for k, v in kw.items())


def _cmd_list(args) -> int:

    entries = list_entries()
    if not args.verbose:
        for e in entries:
            print(f"{e.name:<26} {e.description}")
        return 0
    # one block per family (same model, recorded sites and observables): what the family shares is printed once,
    # then each entry's own description, defaults and whatever else differs (task builder, extra reference)
    families: dict[tuple, list] = {}
    for e in entries:
        families.setdefault((e.model, e.record, e.observables), []).append(e)
    for (model, record, observables), members in families.items():
        builders = {e.make_task for e in members}
        base_ref = min((e.reference for e in members), key=len)
        if not all(e.reference.startswith(base_ref) for e in members):
            base_ref = ""
        model_names, _ = param_names(members[0])
        print(f"== {getattr(model, '__name__', 'model')}: {', '.join(e.name for e in members)}")
        print(f"   --param   model: {', '.join(model_names)}")
        if len(builders) == 1:
            print(f"             task ({members[0].make_task.__name__}): {', '.join(param_names(members[0])[1])}")
        print(f"   record    {','.join(record) if record else '(nothing extra)'}")
        if base_ref:
            print(f"   reference {base_ref}")
        print("   observables:")
        for o in observables:
            print(f"     - {o.name}: {o.description}" + (f"  [theory: {o.theory}]" if o.theory else ""))
        for e in members:
            print(f"   {e.name}: {e.description}")
            print(f"       model: {_kwargs_text(e.defaults)}")
            print(f"       task:  {e.make_task.__name__}({_kwargs_text(e.task_defaults)})")
            if len(builders) > 1:
                print(f"       --param task: {', '.join(param_names(e)[1])}")
            extra = e.reference[len(base_ref):].lstrip("; ")
            if extra:
                print(f"       reference: {'also ' if base_ref else ''}{extra}")
        print()
    return 0


def _literal(text: str):
    """``text`` read as a Python literal (``3``, ``0.5``, ``(1, 2)``, ``None``), else the plain string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def parse_params(items) -> dict:
    """Read ``--param`` arguments.

    Parameters
    ----------
    items : sequence of str or None
        ``"NAME=VALUE"`` strings; NAME may carry a ``model.`` or ``task.`` prefix.  VALUE is read as a Python literal
        (``3``, ``0.5``, ``(1, 2)``, ``None``) and kept as the plain string when it is none (``relu``).

    Returns
    -------
    dict
        {NAME: value} in the order given.

    Raises
    ------
    ValueError
        An item without ``=`` or a NAME, a NAME given twice, or a number that is not finite (``1e400``, ``nan``
        as a literal overflows or is not a number).
    """
    out = {}
    for item in items or ():
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"--param takes NAME=VALUE (e.g. --param width=8), got {item!r}")
        if name in out:
            raise ValueError(f"--param {name} is given twice")
        value = _literal(text.strip())
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"--param {name} must be a finite number, got {text.strip()!r}")
        out[name] = value
    return out


def route_params(entry, params: dict) -> tuple[dict, dict]:
    """Send ``--param`` values to the entry's model or task builder, by their signatures.

    Parameters
    ----------
    entry : ZooEntry
        The zoo entry.
    params : dict
        {NAME: value} from :func:`parse_params`.  ``model.NAME`` / ``task.NAME`` choose the side explicitly; a bare
        NAME goes to whichever of the two takes it (a model that takes ``**kwargs`` gets every name its task
        builder does not take).

    Returns
    -------
    tuple of (dict, dict)
        (model keywords, task-builder keywords).

    Raises
    ------
    ValueError
        A bare NAME both take (the message asks for the prefix), or a NAME neither takes (the message lists the
        names the entry takes).
    """
    model_names, task_names = param_names(entry)
    open_model = any(q.kind is inspect.Parameter.VAR_KEYWORD
                     for q in inspect.signature(entry.model).parameters.values())
    model_kw, task_kw = {}, {}
    for key, value in params.items():
        where, dot, name = key.partition(".")
        if dot and where in ("model", "task"):
            names = model_names if where == "model" else task_names
            if name not in names and not (where == "model" and open_model and name not in _SET_BY_CLI):
                raise ValueError(f"--param {key}: {entry.name!r} has no {where} keyword {name!r}; its {where} "
                                 f"keywords: {', '.join(names)}")
            (model_kw if where == "model" else task_kw)[name] = value
        elif key in model_names and key in task_names:
            raise ValueError(f"--param {key}: both the model and the task builder of {entry.name!r} take {key!r}; "
                             f"write model.{key}= or task.{key}=")
        elif key in model_names or (open_model and key not in task_names and key not in _SET_BY_CLI):
            model_kw[key] = value
        elif key in task_names:
            task_kw[key] = value
        else:
            raise ValueError(f"--param {key}: {entry.name!r} takes model keywords {', '.join(model_names)} and "
                             f"task keywords {', '.join(task_names)}")
    return model_kw, task_kw


def _check_flags(entry, given: dict, fn, what: str) -> None:
    """A clear error, before anything compiles, for a flag the entry's task builder or model does not take."""
    params = inspect.signature(fn).parameters
    if any(q.kind is inspect.Parameter.VAR_KEYWORD for q in params.values()):
        return
    bad = sorted(set(given) - set(params))
    if bad:
        flags = ", ".join("--" + b.replace("_", "-") for b in bad)
        raise ValueError(f"{flags} does not apply to {entry.name!r} (its {what} {fn.__name__} takes "
                         f"{', '.join(_keywords(fn, _SET_BY_CLI))})")


def _flags(args, names) -> dict:
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def _merge(flags: dict, params: dict) -> dict:
    both = sorted(set(flags) & set(params))
    if both:
        raise ValueError(f"{both[0]} is set twice, by its flag and by --param; give it once")
    return {**flags, **params}


def sample_arguments(entry, args) -> tuple[dict, dict]:
    """The task and model settings of ``bnnzoo sample``, checked against the signatures before anything compiles.

    Parameters
    ----------
    entry : ZooEntry
        The zoo entry.
    args : argparse.Namespace
        The parsed ``sample`` arguments: the convenience flags (--P, --N0, --y-neg, --P-test; --width, --depth,
        --temperature, --sigma-a2) and ``--param``.

    Returns
    -------
    tuple of (dict, dict)
        (task-builder keywords: the entry's task defaults updated with the flags and ``--param`` values, model
        keywords that override the entry's defaults).

    Raises
    ------
    ValueError
        A flag the entry does not take, a bad ``--param``, or a name set by both its flag and ``--param``.
    """
    model_params, task_params = route_params(entry, parse_params(getattr(args, "param", None)))
    task_flags = _flags(args, ("P", "N0", "y_neg", "P_test"))
    model_flags = _flags(args, ("width", "depth", "temperature", "sigma_a2"))
    _check_flags(entry, task_flags, entry.make_task, "task builder")
    _check_flags(entry, model_flags, entry.model, "model")
    task_kw = dict(entry.task_defaults, **_merge(task_flags, task_params))
    return task_kw, _merge(model_flags, model_params)


def build_task(entry, task_kw: dict):
    """Build the entry's task.

    Parameters
    ----------
    entry : ZooEntry
        The zoo entry.
    task_kw : dict
        Keywords of ``entry.make_task``.

    Returns
    -------
    Task
        The task; every keyword it was built with is in ``task.meta`` (so the run's provenance holds it), values
        the builder recorded itself left as they are.

    Raises
    ------
    ValueError
        The builder refused the keywords (its own ValueError, or a TypeError for a value of the wrong type), with
        the builder's name.
    """
    try:
        task = entry.make_task(**task_kw)
    except (TypeError, ValueError) as e:           # e.g. a value of the wrong type for the task builder
        raise ValueError(f"task builder {entry.make_task.__name__} of {entry.name!r}: {e}") from None
    for k, v in task_kw.items():
        task.meta.setdefault(k, v)
    return task


def task_model_keywords(entry, task, overrides: dict) -> dict:
    """The model keywords the task fixes.

    A model keyword that the task records in ``task.meta`` under the same name (the attention context length, the
    gated network's graph ``spec``) follows the task unless set explicitly, so ``--param L=8`` or
    ``--param hidden=8`` changes the data and the network together.

    Parameters
    ----------
    entry : ZooEntry
        The zoo entry.
    task : Task
        The task the run samples on.
    overrides : dict
        Model keywords set explicitly (they win).

    Returns
    -------
    dict
        {keyword: value from ``task.meta``}.
    """
    model_names, _ = param_names(entry)
    return {k: task.meta[k] for k in model_names if k in task.meta and k not in overrides}


def _long_run_options(args) -> dict:
    """`sample` options for long runs: --chunk / --store / --resume stream chunks and checkpoints to a folder."""
    kw = {}
    chunk, store, resume = getattr(args, "chunk", None), getattr(args, "store", None), getattr(args, "resume", False)
    if chunk is not None or store is not None or resume:
        kw["store"] = store if store is not None else str(args.out) + ".store"
        kw["resume"] = bool(resume)
        if chunk is not None:
            kw["chunk_size"] = chunk
    if getattr(args, "exclude", None):
        kw["exclude"] = tuple(args.exclude.split(","))
    if getattr(args, "reparam", None):
        kw["reparam"] = tuple(args.reparam.split(","))
    return kw


def _use_cpu_cores(args) -> None:
    """Expose min(chains, CPU cores) host devices so the chains run in parallel on a CPU (one chain per core) instead
    of vectorised on one core.  Only in a ``bnnzoo`` process of its own (not when ``main([...])`` is called from
    Python, where JAX may be running and XLA_FLAGS would leak into child processes); respects an XLA_FLAGS device
    count the user set, and leaves GPUs alone (the flag only adds CPU devices)."""
    user_set = "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "")
    if not getattr(args, "own_process", False) or user_set:
        return
    n = min(int(args.chains or DEFAULT_CHAINS["cpu"]), os.cpu_count() or 1)   # before JAX starts: the CPU's default
    if n > 1:
        numpyro.set_host_device_count(n)


def _check_path(path, flag: str, *, folder: bool = False, overwrite: bool = False) -> Path:
    """Refuse, before anything compiles, an output path that cannot be written: a folder given for a file (or a
    file for a folder), a path below a regular file, a place without write permission, an existing file without
    ``--overwrite``.  Returns the path."""
    path = Path(path)
    if path.exists():
        if folder and not path.is_dir():
            raise ValueError(f"{flag}: {path} is a file, not a folder")
        if not folder and path.is_dir():
            raise ValueError(f"{flag}: {path} is a folder; give a file name")
        if not folder and not overwrite:
            raise ValueError(f"{flag}: {path} exists; pass --overwrite to replace it")
    where = path if folder and path.exists() else path.parent
    while not where.exists() and where != where.parent:
        where = where.parent
    if not where.is_dir():
        raise ValueError(f"{flag}: {path} lies below {where}, which is a file, not a folder")
    if not folder and not path.parent.exists():
        raise ValueError(f"{flag}: the folder {path.parent} does not exist; create it first (mkdir -p "
                         f"{path.parent})")
    if not os.access(where, os.W_OK | os.X_OK):
        why = "a read-only file system" if os.statvfs(where).f_flag & os.ST_RDONLY else "permission denied"
        raise ValueError(f"{flag}: cannot write in {where} ({why})")
    return path


def _write_bytes(data: bytes, path: Path) -> None:
    """Write ``data`` to ``path`` through a hidden temporary file beside it, flushed and renamed into place; on any
    failure the temporary file is removed and the error (``OSError``) raised."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:            # its folder is gone or is a file: there is no temporary file either
            pass
        raise


def _write_run(idata, out: Path, flag: str = "--out", store: Path | None = None, source: Path | None = None,
               lost: str | None = None) -> None:
    """Write ``idata`` to ``out``, never half written: the NetCDF file is built in memory
    (:func:`bnnzoo.azcompat.to_netcdf_bytes`), then written through a temporary file beside ``out`` and renamed into
    place.  When that fails (the folder vanished, the disk is full, a file-size limit), the run goes to a rescue
    file in the system's temporary folder and the error names it; when that fails too, the error says so and names
    the store that holds the draws (``store``), or the run file the diagnostics were read from (``source``, for
    ``diagnose --save``), or says ``lost`` (what was not saved, for ``predict``).  No temporary or partial file is
    left either way."""

    def why(e):
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"

    data = azcompat.to_netcdf_bytes(idata)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        _write_bytes(data, out)
        return
    except OSError as e:
        reason = why(e)
    try:
        fd, rescue = tempfile.mkstemp(prefix="bnnzoo-rescue-", suffix=".nc")
        os.close(fd)
        try:
            _write_bytes(data, Path(rescue))
        except OSError:
            Path(rescue).unlink(missing_ok=True)
            raise
    except OSError as e2:
        if lost is not None:
            kept = f"; {lost}"
        elif source is not None:           # diagnose --save: the run itself is in its own file
            kept = f"; the diagnostics were not saved (the run file {source} is unchanged)"
        elif store is not None and Path(store).exists():
            kept = (f"; the draws are kept in the store {store} (read them with bnnzoo.inference.load_store, or "
                    f"rerun with --resume once there is space)")
        else:
            kept = "; the run is lost (a run with --chunk keeps its draws in a store as it goes)"
        raise ValueError(f"{flag}: could not write {out} ({reason}), nor a rescue copy in "
                         f"{tempfile.gettempdir()} ({why(e2)}){kept}") from None
    raise ValueError(f"{flag}: could not write {out} ({reason}); the run was saved to {rescue}") from None


# flag -> (argparse dest, minimum) for the sample command's integer options
_SAMPLE_INTS = {"--chains": ("chains", 1), "--warmup": ("warmup", 0), "--samples": ("samples", 1),
                "--thin": ("thin", 1), "--seed": ("seed", 0), "--P-test": ("P_test", 0), "--chunk": ("chunk", 1),
                "--num-steps": ("num_steps", 1)}


def _certify_option(args):
    """``--certify`` as the ``certify`` argument of :func:`bnnzoo.sample`: False when left out, True for the bare
    flag (every start family the entry declares), else the list of comma-separated family names."""
    value = getattr(args, "certify", None)
    if value is None:
        return False
    if value is True:
        return True
    names = [f.strip() for f in str(value).split(",") if f.strip()]
    if len(names) < 2:
        raise ValueError(f"--certify takes no value (every start family of the entry) or two or more "
                         f"comma-separated families among prior, annealed, meanfield; got {value!r}")
    return names


_ON_OFF = {"on": True, "true": True, "yes": True, "1": True, "off": False, "false": False, "no": False, "0": False}


def _moves_option(args):
    """``--moves NAME=VALUE,...`` as the ``moves`` argument of :func:`bnnzoo.sample` (None when left out): tries,
    local and radial integers, own on/off, pairs a number; the library checks the values."""
    value = getattr(args, "moves", None)
    if value is None:
        return None
    moves = {}
    for item in (i.strip() for i in str(value).split(",") if i.strip()):
        name, eq, v = (t.strip() for t in item.partition("="))
        if not eq or name not in MOVE_OPTIONS:
            raise ValueError(f"--moves takes comma-separated NAME=VALUE with NAME among {', '.join(MOVE_OPTIONS)}, "
                             f"got {item!r}")
        try:
            moves[name] = (_ON_OFF[v.lower()] if name == "own" else int(v) if name in MOVE_COUNTS else float(v))
        except (KeyError, ValueError):
            kind = "on or off" if name == "own" else "an integer" if name in MOVE_COUNTS else "a number"
            raise ValueError(f"--moves {name}= must be {kind}, got {v!r}") from None
    if not moves:
        raise ValueError(f"--moves takes comma-separated NAME=VALUE with NAME among {', '.join(MOVE_OPTIONS)}, "
                         f"got {value!r}")
    return moves


def _check_sample_flags(args) -> None:
    """One-line errors naming the flag, before anything compiles (the library would name its own argument);
    ``args.moves`` parsed into the dict :func:`bnnzoo.sample` takes."""
    for flag, (dest, lo) in _SAMPLE_INTS.items():
        v = getattr(args, dest, None)
        if v is not None and v < lo:
            raise ValueError(f"{flag} must be >= {lo}, got {v}")
    if args.step_size is not None and not (args.step_size > 0 and args.step_size < float("inf")):
        raise ValueError(f"--step-size must be a finite number > 0, got {args.step_size}")
    check_num_steps(args.sampler, args.num_steps, cli=True)
    if args.sampler in ENGINES and refused(args.sampler, {"step_size": args.step_size}):   # the engine's own rule
        raise ValueError(f"--step-size does not apply to --sampler {args.sampler}")
    if args.exclude is not None and args.exclude.strip() and not [s for s in args.exclude.split(",") if s.strip()]:
        raise ValueError(f"--exclude takes comma-separated site names, got {args.exclude!r}")
    args.moves = _moves_option(args)
    if args.moves is not None and args.sampler in ENGINES and "moves" not in ENGINES[args.sampler].takes:
        takers = ", ".join(n for n, e in ENGINES.items() if "moves" in e.takes)
        raise ValueError(f"--moves applies to --sampler {takers}, not --sampler {args.sampler}")


def out_lock_path(out: Path) -> Path:
    """The lock file that holds an output name while a run writes it: in the system's temporary folder, named by
    the output's absolute path (a killed run leaves no file beside its output)."""

    key = hashlib.sha256(str(Path(out).resolve()).encode()).hexdigest()[:32]
    return Path(tempfile.gettempdir()) / "bnnzoo-out-locks" / f"{key}.lock"


@contextlib.contextmanager
def _reserved(out: Path, flag: str = "--out", *, overwrite: bool = False, active: bool = True):
    """Hold ``out`` for this run until it is written: an exclusive lock (``fcntl.flock``) on a file named by its
    path (:func:`out_lock_path`), taken before anything samples, so that two runs started on one name cannot both write it (the second is
    refused at once, with one line; a killed run's lock goes with its process).  After the lock, ``out`` is checked
    again: a run that finished meanwhile is not overwritten without ``--overwrite``."""
    if not active:
        yield
        return
    if fcntl is None:                # no flock on this platform: the existence check is all there is
        yield
        return
    lock = out_lock_path(out)
    lock.parent.mkdir(parents=True, exist_ok=True)
    fh = open(lock, "a+")
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fh.fileno()).st_ino != os.stat(lock).st_ino:   # the holder removed it as we opened it
            raise OSError
    except OSError:
        fh.close()
        raise ValueError(f"{flag}: {out} is being written by another bnnzoo run (it holds {lock}); wait for it to "
                         f"end or choose another name") from None
    try:
        if out.exists() and not overwrite:
            raise ValueError(f"{flag}: {out} exists; pass --overwrite to replace it")
        yield
    finally:
        lock.unlink(missing_ok=True)
        fh.close()


def _cmd_sample(args) -> int:
    _check_sample_flags(args)
    out = _check_path(args.out, "--out", overwrite=args.overwrite)
    with _reserved(out, overwrite=args.overwrite, active=not args.distributed):
        return _sample_into(args, out)


def _sample_into(args, out: Path) -> int:
    """``bnnzoo sample`` once its output path is checked and held."""

    store = _long_run_options(args).get("store")
    if store is not None:
        store = _check_path(store, "--store", folder=True)
        if store.resolve() == out.resolve() or out.resolve().is_relative_to(store.resolve()):
            raise ValueError(f"--store and --out must differ: --out {out} would be written "
                             f"{'as' if store.resolve() == out.resolve() else 'inside'} the store folder {store}")
    entry = get_entry(args.entry)
    task_kw, overrides = sample_arguments(entry, args)
    explicit = [args.coordinator, args.num_processes, args.process_id]
    if any(v is not None for v in explicit) and not (args.distributed and all(v is not None for v in explicit)):
        raise ValueError("--coordinator, --num-processes and --process-id go together, with --distributed")
    task = build_task(entry, task_kw)
    overrides = {**task_model_keywords(entry, task, overrides), **overrides}
    if args.distributed:                   # before JAX starts its backends; one device per process on a CPU

        initialize(args.coordinator, args.num_processes, args.process_id)
    else:
        _use_cpu_cores(args)
    record = entry.record if args.record is None else tuple(r for r in args.record.split(",") if r)
    long_run = _long_run_options(args)
    if (args.exclude is None and "summaries" in record and entry.unread_sites is not None
            and args.sampler not in TEMPERING):      # these keep every draw: no streamed kernels
        long_run["exclude"] = tuple(entry.unread_sites(dict(entry.defaults, **overrides)))
    precision = None if args.matmul_precision == "jax" else args.matmul_precision
    t0 = time.time()
    idata = sample(entry, task, num_chains=args.chains, num_warmup=args.warmup, num_samples=args.samples,
                   seed=args.seed, thinning=args.thin, record=record, progress=_progress(args),
                   log_likelihood=args.log_likelihood, posterior_predictive=args.posterior_predictive,
                   prior_predictive=args.prior_predictive,
                   sampler=args.sampler, matmul_precision=precision, num_steps=args.num_steps,
                   step_size=args.step_size, moves=args.moves, certify=_certify_option(args), **long_run,
                   **overrides)
    if args.distributed:

        if jax.process_index() != 0:       # every process holds the whole run; one writes it
            _logger.info("process %d done (%.1f s); process 0 writes %s", jax.process_index(), time.time() - t0,
                         out)
            return 0
    _write_run(idata, out, store=store)
    _logger.info("wrote %s (%.1f s; %d chains; %r)", out, time.time() - t0,
                 int(azcompat.get_group(idata, "posterior").sizes["chain"]), task)
    if "log_evidence" in run_config(idata).get("engine", {}):          # smc: checked before it is reported
        _logger.info("%s", log_evidence(idata))
    return 0


DEMO_SAMPLERS = {"deep_linear": "gibbs", "sigmoidal": "units"}
"""The demo's samplers where ``sampler="auto"`` does not give SNAPER: the linear net's exact Gibbs sampler and the
sigmoidal net's unit-wise moves (``sampler="units"``), which mix its populations of codes at the paper's T = 0.01."""
DEMO_SIGMOIDAL_TEMPERATURE = 0.01
"""The demo's sigmoidal net runs at the paper's (and the zoo's) rescaled temperature."""
DEMO_SIGMOIDAL_SIZE = 40
"""N = P of the demo's sigmoidal net: the size at which its certified unit-wise run fits the demo's time
(``benchmarks/results/demo_sigmoidal_units.md``)."""
DEMO_LINEAR_SIZE = 100
"""N and P of the demo's linear net (``width``, ``P``): the toy task's default P, at which the linear net's exact
Gibbs sampler takes seconds (``benchmarks/archive/demo_fast.md``)."""
DEMO_RELU_SIZE = 60
"""N = P of the demo's ReLU net: the size at which its SNAPER run fits the demo's time
(``benchmarks/archive/demo_fast.md``)."""
DEMO_CHAINS = 4
"""Chains per net, and per start family of a certified net: SNAPER tunes across the chains and a certified run
compares them, so at least 2; 4, as :data:`~bnnzoo.inference.plan.DEFAULT_CHAINS` gives a CPU."""
DEMO_CERTIFY = {"units": ("prior", "meanfield")}
"""Start families by sampler of the demo's nets that are certified (``bnnzoo.sample(certify=...)``, ``chains`` chains
each): the sigmoidal net's unit-wise run, from the prior and from the mean field's populations."""

DEMO_WARMUP = {"units": 50}
"""Warm-up steps of the sigmoidal net by sampler where they differ from ``warmup`` (unit-wise sweeps; the shortest run
measured to certify, which leaves the ReLU net's warm-up room in the demo's time:
``benchmarks/results/demo_sigmoidal_units.md``)."""
DEMO_DEFAULT_WARMUP = 400
"""Warm-up steps (Gibbs sweeps) of the demo's linear net, and of its sigmoidal net with a sampler that
:data:`DEMO_WARMUP` does not name: enough for the linear net's verdicts to hold
(``benchmarks/results/demo_wall.md``)."""
DEMO_RELU_WARMUP = 800
"""Warm-up steps of the demo's ReLU net: its chains start with several outlier units per class that merge into one per
class slowly, and fewer steps left its chains disagreeing on the outlier count
(``benchmarks/results/demo_sigmoidal_units.md``, "The whole demo")."""
DEMO_DRAWS = {"gibbs": 500, "units": 100}
"""Kept draws per chain of the demo's nets by sampler where they differ from :data:`DEMO_DEFAULT_DRAWS`: the exact
Gibbs sweeps are cheap but mix the readout norms more slowly per draw (``benchmarks/results/demo_wall.md``); a
unit-wise sweep moves every unit several times (``benchmarks/results/demo_sigmoidal_units.md``)."""
DEMO_DEFAULT_DRAWS = 300
"""Kept draws per chain of the demo's HMC nets."""

DEMO_TRACES = {"trace_a.png": (["a"], {"neuron": [0, 1, 2]})}
"""The ArviZ trace plot the demo writes beside each net's figures: three units' readouts (the order parameters'
trace plot, ``order_parameters.png``, is one of the figures)."""


def run_demo(out: Path, *, width=DEMO_LINEAR_SIZE, P=DEMO_LINEAR_SIZE, chains=DEMO_CHAINS, warmup=DEMO_DEFAULT_WARMUP,
             relu_size=DEMO_RELU_SIZE, relu_warmup=DEMO_RELU_WARMUP, samples=None, seed=0, progress=True,
             entries=("deep_linear", "sigmoidal", "relu"), sampler="auto",
             sigmoidal_temperature=DEMO_SIGMOIDAL_TEMPERATURE, sigmoidal_size=DEMO_SIGMOIDAL_SIZE,
             sigmoidal_warmup=None, background: bool = False) -> dict:
    """Sample the linear, sigmoidal and ReLU nets on the toy task, write NetCDF files, diagnose them and write the
    reports with their figures and trace plots (``<out>/report/<net>/``; every verdict in
    ``<out>/demo_summary.json``).

    Parameters
    ----------
    out : output folder.   seed : the sampling seed.
    width, P : N and P of the linear net (:data:`DEMO_LINEAR_SIZE`).
    chains : chains per net, and per start family of a certified net (:data:`DEMO_CERTIFY`; :data:`DEMO_CHAINS`).
    samples : kept draws per chain of every net; None (default): :data:`DEMO_DRAWS` by sampler, else
        :data:`DEMO_DEFAULT_DRAWS`.
    sampler : "auto" (default: :data:`DEMO_SAMPLERS`, the linear net's exact Gibbs sampler and the sigmoidal net's
        unit-wise moves, SNAPER for the ReLU net), "snaper" or "nuts" (every net).
    warmup : warm-up steps (Gibbs sweeps) of the linear net, and of the sigmoidal net with a sampler that
        :data:`DEMO_WARMUP` does not name (:data:`DEMO_DEFAULT_WARMUP`).
    sigmoidal_size : N = P of the sigmoidal net (:data:`DEMO_SIGMOIDAL_SIZE`).
    sigmoidal_warmup : warm-up steps of the sigmoidal net; None (default): :data:`DEMO_WARMUP` by sampler, else
        ``warmup``.
    relu_size : N = P of the ReLU net (:data:`DEMO_RELU_SIZE`).
    relu_warmup : warm-up steps of the ReLU net (:data:`DEMO_RELU_WARMUP`: its outlier units merge slowly).
    entries : the zoo entries to run.
    sigmoidal_temperature : the sigmoidal net's rescaled temperature (:data:`DEMO_SIGMOIDAL_TEMPERATURE`); the other
        nets run at their entries' default (0.01).
    background : sample and diagnose the certified nets (else the Gibbs-sampled nets and every other HMC net) in one
        spawned worker process, the others in this one, at the same time (tracing, compiling and drawing each use
        one core, so the two processes keep both cores of a 2-core machine busy); the draws and verdicts are the
        same as without it.

    Returns
    -------
    dict : per entry, the run's NetCDF path, sampling seconds, training MSE, divergences, coding scheme and verdicts.
    """
    out.mkdir(parents=True, exist_ok=True)
    settings = dict(width=width, P=P, chains=chains, warmup=warmup, relu_size=relu_size, relu_warmup=relu_warmup,
                    samples=samples, seed=seed, progress=progress, sampler=sampler,
                    sigmoidal_temperature=sigmoidal_temperature, sigmoidal_size=sigmoidal_size,
                    sigmoidal_warmup=sigmoidal_warmup)
    how = {name: _demo_sampler(name, sampler) for name in entries}
    hmc = [name for name in entries if how[name] != "gibbs"]
    # two queues of about equal work, so that one's single-core stretches (tracing, compiling, drawing) overlap the
    # other's sampling.  With a certified net (two start families, the longest run): the worker samples and
    # diagnoses the certified nets, this process samples and diagnoses the others.  Else the worker samples the
    # Gibbs-sampled nets (NumPy, one core) and every other HMC net, and diagnoses its HMC nets; this process samples
    # the other HMC nets, then diagnoses them and the Gibbs-sampled ones
    certified = [name for name in entries if DEMO_CERTIFY.get(how[name])]
    theirs = certified or [name for name in entries if how[name] == "gibbs" or name in hmc[::2]]
    ours = [name for name in entries if name not in theirs]
    summary = {}
    with _demo_pool(background) as pool:
        sampled = {name: pool.submit(_demo_sample, name, out, settings) for name in theirs}
        reported = {name: pool.submit(_demo_report, name, out) for name in theirs if name in hmc}
        summary.update({name: _demo_sample(name, out, settings) for name in ours})
        for name in ours + [name for name in theirs if name not in reported]:
            res = summary[name] if name in ours else sampled[name].result()
            summary[name] = dict(res, **_demo_report(name, out))
        for name, fut in reported.items():
            summary[name] = dict(sampled[name].result(), **fut.result())
    summary = {name: summary[name] for name in entries}

    write_summary(out / "report", {name: summary[name].pop("report_summary") for name in entries})
    for name in entries:
        _logger.info("[demo] %s: %s code", name, summary[name]["coding_scheme"])
        for line in verdict_lines(summary[name]["verdicts"]):
            _logger.info("[demo]   %s", line)
    (out / "demo_summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _demo_sampler(name: str, sampler: str) -> str:
    """The sampler of the demo's net ``name``: ``sampler``, or for "auto" :data:`DEMO_SAMPLERS` (else SNAPER)."""
    return DEMO_SAMPLERS.get(name, "snaper") if sampler == "auto" else sampler


def _demo_sample(name: str, out: Path, settings: dict) -> dict:
    """Sample one of the demo's nets and write ``<out>/<name>.nc``; returns its entry of ``demo_summary.json``."""

    s = settings
    entry = get_entry(name)
    how = _demo_sampler(name, s["sampler"])
    if name == "relu":
        n = p = s["relu_size"]
        n_warm = s["relu_warmup"]
    elif name == "sigmoidal":
        n = p = s["sigmoidal_size"]
        n_warm = s["sigmoidal_warmup"]
        if n_warm is None:
            n_warm = DEMO_WARMUP.get(how, s["warmup"])
    else:
        n, p, n_warm = s["width"], s["P"], s["warmup"]
    task = entry.make_task(**dict(entry.task_defaults, P=p))
    t0 = time.time()
    draws = s["samples"] if s["samples"] is not None else DEMO_DRAWS.get(how, DEMO_DEFAULT_DRAWS)
    families = DEMO_CERTIFY.get(how, ())
    _logger.info("[demo] sampling %s with %s: N=%d, %r, %d chains%s x (%d warm-up + %d draws)", name, how, n, task,
                 s["chains"], f" from each of {', '.join(families)}" if families else "", n_warm, draws)
    extra = dict(exclude=entry.unread_sites(dict(entry.defaults, width=n)))
    if name == "sigmoidal":
        extra["temperature"] = s["sigmoidal_temperature"]
    if families:
        extra["certify"] = list(families)
    idata = sample(entry, task, num_chains=s["chains"], num_warmup=n_warm, num_samples=draws, seed=s["seed"],
                   progress=s["progress"], width=n, sampler=how, **extra)
    dt = time.time() - t0
    nc = out / f"{name}.nc"
    azcompat.to_netcdf(idata, nc)
    post = azcompat.get_group(idata, "posterior")
    ss = azcompat.get_group(idata, "sample_stats")
    res = dict(netcdf=str(nc), seconds=round(dt, 1), mse=float(post["mse"].mean()),
               target_variance=float(task.Y.var()), divergences=int(ss["diverging"].sum()),
               mean_tree_depth=float(ss["tree_depth"].mean()) if "tree_depth" in ss else None,
               warmup=n_warm, draws=draws, sampler=how, width=n, P=task.P,
               temperature=float(extra.get("temperature", entry.defaults.get("temperature", 0.01))),
               start_families=list(families))
    _logger.info("[demo] %s: %.0f s, posterior-mean training MSE %.2e (target variance %.2e), %d divergences",
                 name, dt, res["mse"], res["target_variance"], res["divergences"])
    return res


def _demo_report(name: str, out: Path) -> dict:
    """Diagnose the demo's run ``<out>/<name>.nc`` and write ``<out>/report/<name>/`` (report, figures, trace
    plots); returns its coding scheme, verdicts, report folder and ``report/summary.json`` entry (plain data)."""

    t0 = time.time()
    res = write_report({name: out / f"{name}.nc"}, out / "report", traces=DEMO_TRACES, summary=False)[name]
    rep = res["report"]
    _logger.info("[demo] %s: diagnosed, report and figures written to %s (%.0f s)", name, out / "report" / name,
                 time.time() - t0)
    return dict(coding_scheme=rep.coding_scheme, verdicts=rep.verdicts, report=str(out / "report" / name),
                report_summary=summary_entry(rep, res["files"], out / "report"))


class _InlinePool:
    """The worker pool's ``submit`` run at once, in this process (``run_demo(background=False)``)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @staticmethod
    def submit(fn, *args):

        done = Future()
        done.set_result(fn(*args))
        return done


def _demo_pool(background: bool):
    """One spawned worker process (its log lines on this process's stderr) or :class:`_InlinePool`."""
    if not background:
        return _InlinePool()

    class Worker(ProcessPoolExecutor):
        def __exit__(self, exc_type, exc, tb):
            if exc_type is None:
                return super().__exit__(exc_type, exc, tb)
            # interrupted or failed here: stop the worker at once instead of letting it finish its queue
            for proc in list((getattr(self, "_processes", None) or {}).values()):
                proc.terminate()
            self.shutdown(wait=False, cancel_futures=True)
            return False

    level = logging.getLogger(_log.LOGGER_NAME).level
    handled = bool(logging.getLogger(_log.LOGGER_NAME).handlers)
    return Worker(1, mp_context=multiprocessing.get_context("spawn"), initializer=_demo_worker_init,
                  initargs=(level if handled else None,))


def _demo_worker_init(level) -> None:
    """The worker's log lines go to stderr like the command's own; JAX's warnings there as here."""

    warnings.filterwarnings("ignore", message=CACHE_WARNING, category=UserWarning)
    warnings.showwarning = _show_warning
    if level is not None:
        _log.cli_handler(level)


def _cmd_demo(args) -> int:
    out = _check_path(args.out, "--out", folder=True)
    if out.is_dir() and any(out.iterdir()) and not args.overwrite:
        raise ValueError(f"--out: {out} is not empty (a previous demo?); pass --overwrite to replace its files")
    for flag in ("width", "P", "sigmoidal_size", "relu_size", "warmup", "sigmoidal_warmup", "relu_warmup", "samples"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            raise ValueError(f"--{flag.replace('_', '-')} must be a positive integer, got {getattr(args, flag)}")
    if args.chains < 2:
        raise ValueError(f"--chains must be >= 2 (SNAPER tunes across the chains, a certified run compares them), "
                         f"got {args.chains}")
    if not args.sigmoidal_temperature > 0:
        raise ValueError(f"--sigmoidal-temperature must be > 0, got {args.sigmoidal_temperature}")
    _use_cpu_cores(args)
    run_demo(out, width=args.width, P=args.P, chains=args.chains, warmup=args.warmup, relu_size=args.relu_size,
             relu_warmup=args.relu_warmup, samples=args.samples, seed=args.seed, progress=_progress(args),
             sampler=args.sampler, sigmoidal_temperature=args.sigmoidal_temperature,
             sigmoidal_size=args.sigmoidal_size, sigmoidal_warmup=args.sigmoidal_warmup,
             background=getattr(args, "own_process", False))
    _logger.info("[demo] wrote NetCDF files, trace plots, diagnostics reports (report/) and demo_summary.json to %s/",
                 out)
    return 0


def _keep_freed_memory() -> None:
    """Ask glibc's allocator to keep the memory this process frees for its next allocations, instead of returning it
    to the system (no trimming, no mmap per large block).  The diagnosis makes and drops many arrays of hundreds of MB,
    and each one the system hands out again is paid in page faults (measured in ``benchmarks/results/diagnose_n500.md``,
    "Memory").  The process ends after one command, so nothing is held longer.  No effect without glibc."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.mallopt(-1, -1)                   # M_TRIM_THRESHOLD = -1: never trim the heap
    libc.mallopt(-4, 0)                    # M_MMAP_MAX = 0: large blocks from the heap, not mmap


def _cmd_diagnose(args) -> int:
    _keep_freed_memory()
    figures = _check_path(args.figures, "--figures", folder=True) if args.figures else None
    save = _check_path(args.save, "--save", overwrite=args.overwrite) if args.save else None
    if args.entry is not None:
        try:
            get_entry(args.entry)
        except ValueError as e:
            raise ValueError(f"--entry: {e}") from None
    idata = azcompat.read_run_file(args.run, "run file")
    run = read_run(idata, entry=args.entry)             # read once: the report and the figures share it
    rep = diagnose(run, store=save is not None, kernels=not args.no_kernels)
    if figures is not None:
        save_figures(run, figures, report=rep)
    if save is not None:
        _write_run(idata, save, "--save", source=Path(args.run))
    if args.json:
        print(rep.to_json(indent=1))
    else:
        print(repr(rep))
    return 0


def load_inputs(path) -> np.ndarray:
    """Read the new inputs of ``bnnzoo predict --x``: one array saved with :func:`numpy.save`.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npy`` file.

    Returns
    -------
    numpy.ndarray
        The array as stored (its shape and values are checked by :func:`bnnzoo.predict`).

    Raises
    ------
    ValueError
        One line naming ``--x``: the file does not exist, is a folder, is not a ``.npy`` file or is truncated, holds
        Python objects (never unpickled), or is an ``.npz`` archive.
    """
    p = Path(path)
    if not p.exists():
        raise ValueError(f"--x: there is no file {p} (give the new inputs as a .npy file of shape (n, N0), written "
                         f"with numpy.save)")
    if p.is_dir():
        raise ValueError(f"--x: {p} is a folder; give a .npy file of shape (n, N0), written with numpy.save")
    with open(p, "rb") as fh:
        head = fh.read(6)
    if head != b"\x93NUMPY" and not head.startswith(b"PK"):     # numpy.load would try to unpickle it
        raise ValueError(f"--x: {p} is not a .npy file (no NumPy header); write the new inputs with numpy.save")
    try:
        X = np.load(p, allow_pickle=False)
    except ValueError as e:
        if "pickle" not in str(e):
            raise ValueError(f"--x: {p} is not a readable .npy file (truncated? {_one_line(e)})") from None
        raise ValueError(f"--x: {p} holds Python objects, not numbers; save an array of numbers, shape (n, N0)") \
            from None
    except (OSError, EOFError) as e:
        raise ValueError(f"--x: {p} is not a readable .npy file (truncated? {type(e).__name__}: {_one_line(e)})") \
            from None
    if not isinstance(X, np.ndarray):          # an .npz archive
        names = list(X.files)
        X.close()
        raise ValueError(f"--x: {p} is an .npz archive (arrays {', '.join(names)}); give one array saved with "
                         f"numpy.save (.npy)")
    return X


def _cmd_predict(args) -> int:

    out = _check_path(args.out, "--out", overwrite=args.overwrite)
    run = Path(args.run)
    if run.exists() and out.resolve() == run.resolve():
        raise ValueError(f"--out: {out} is the run file RUN itself; write the predictions to another file")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    X = load_inputs(args.x)
    with _reserved(out, overwrite=args.overwrite):
        idata = azcompat.read_run_file(args.run, "run file")
        t0 = time.time()
        try:
            pred = predict(idata, X, seed=args.seed)
        except ValueError as e:
            # the library names its arguments: X_new is --x here, everything else is about the run
            where = f"--x {args.x}" if str(e).startswith("X_new") else f"run file {args.run}"
            raise ValueError(f"{where}: {e}") from None
        _write_run(pred, out, lost=f"the predictions were not saved (the run file {args.run} is unchanged)")
    sizes = azcompat.get_group(pred, "predictions").sizes
    _logger.info("wrote %s (predictions f, y on %d points, %d chains x %d draws; %.1f s)", out, sizes["test_point"],
                 sizes["chain"], sizes["draw"], time.time() - t0)
    return 0


def _version() -> str:

    try:
        return version("bnnzoo")
    except PackageNotFoundError:
        return "unknown (not installed)"


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows ``(default: ...)`` after every option that has a default; options without one (None) or switches
    (False) say nothing, their help text tells what happens when they are left out."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or action.help is None:
            return action.help
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    fmt = dict(formatter_class=_HelpFormatter)
    p = argparse.ArgumentParser(prog="bnnzoo", description="Sample and understand Bayesian neural networks.", **fmt)
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    loud = p.add_mutually_exclusive_group()
    loud.add_argument("-v", "--verbose", dest="log_verbose", action="store_true",
                      help="also print debug messages (on stderr; before the command: `bnnzoo -v sample ...`)")
    loud.add_argument("-q", "--quiet", dest="log_quiet", action="store_true",
                      help="print only warnings and errors, no progress (before the command)")
    sub = p.add_subparsers(dest="command", required=True)

    pl = sub.add_parser("list", help="list the zoo's models", **fmt)
    pl.add_argument("-v", "--verbose", action="store_true",
                    help="show each entry's model and task defaults, recorded sites, --param names and observables")
    pl.set_defaults(func=_cmd_list)

    ps = sub.add_parser("sample", help="sample a zoo model on its default task and write NetCDF", **fmt,
                        description="Sample a zoo entry on its task and write the run (NetCDF, with provenance). "
                        "Model and task keywords left out take the entry's defaults (`bnnzoo list -v`).")
    ps.add_argument("entry", help="zoo entry name (see `bnnzoo list`)")
    ps.add_argument("--param", action="append", metavar="NAME=VALUE",
                    help="set any keyword of the entry's model or task builder (repeatable; VALUE read as a Python "
                    "literal, else as a string; e.g. --param width1=8 --param P=16 --param activation=relu); a name "
                    "both take needs model.NAME= or task.NAME=; the names are listed by `bnnzoo list -v`. A model "
                    "keyword the task records (attention context_length, gated spec) follows the task")
    ps.add_argument("--width", type=int, help="hidden width N (fully-connected entries; default: the entry's)")
    ps.add_argument("--depth", type=int, help="number of hidden layers L (default: the entry's)")
    ps.add_argument("--P", type=int, help="number of training points (default: the entry's task)")
    ps.add_argument("--N0", type=int, help="input dimension (toy task; default P + 20)")
    ps.add_argument("--P-test", dest="P_test", type=int, help="number of test points (default: the entry's task)")
    ps.add_argument("--temperature", type=float, help="(rescaled) temperature T (default: the entry's)")
    ps.add_argument("--sigma-a2", dest="sigma_a2", type=float,
                    help="readout prior variance (default: the entry's; fully-connected nets: the paper's rule)")
    ps.add_argument("--y-neg", dest="y_neg", type=float, help="target on the wrong classes (toy task)")
    ps.add_argument("--chains", type=int, default=None, help="number of chains (default: the device's, 4 on a CPU, "
                    "64 on a GPU)")
    ps.add_argument("--warmup", type=int, default=300, help="warm-up steps per chain")
    ps.add_argument("--samples", type=int, default=300, help="kept draws per chain")
    ps.add_argument("--thin", type=int, default=1, help="keep every k-th draw")
    ps.add_argument("--sampler", choices=["auto", *SAMPLERS],
                    default="auto",
                    help="auto (default): the benchmark's fastest for the run (>= 2 chains: snaper, chees on "
                    "softmax_attention, units for a --certify run of the one-layer sigmoidal net on orthogonal "
                    "inputs; one chain: nuts); "
                    "nuts: NumPyro's NUTS; hmc: fixed --num-steps leapfrog steps per draw; gibbs: the exact blocked Gibbs sampler, "
                    "linear nets only; units: unit-wise moves with the readout integrated out (one hidden layer, "
                    "non-lazy readout, orthogonal inputs); chees: ChEES-HMC, every chain the same number of leapfrog steps, tuned across "
                    "chains (>= 2 chains); snaper: the same sampler with the trajectory length tuned on the slowest "
                    "direction (better readout mixing); smc: adaptive tempered SMC from the prior, which also stores the log "
                    "evidence")
    ps.add_argument("--num-steps", dest="num_steps", type=int,
                    help="--sampler hmc (required) or smc: leapfrog steps per draw / per HMC move")
    ps.add_argument("--step-size", dest="step_size", type=float,
                    help="fixed leapfrog step size (nuts, hmc, chees, snaper; default: adapted during warm-up)")
    ps.add_argument("--moves", metavar="NAME=VALUE,...",
                    help="--sampler units: its moves per unit and sweep, e.g. 'tries=4,own=on,local=2,pairs=0.5' "
                    "(tries, local: integers >= 0; own: on/off; pairs: >= 0; default: the activation's, 8 tries, "
                    "the own step, 4 local steps, 0.5 pairs; ReLU 16 local steps only)")
    ps.add_argument("--seed", type=int, default=0, help="sampler seed (the task's own seed: --param seed=)")
    ps.add_argument("--record", help="comma-separated extra sites to record ('' for none; default: the entry's, "
                    "'summaries' for the fully-connected nets (per-unit class means, per-draw richness, kernels as "
                    "block means); 'z' adds every preactivation; see `bnnzoo list -v`)")
    ps.add_argument("--log-likelihood", dest="log_likelihood", action="store_true",
                    help="add the group log_likelihood: the pointwise log-likelihood of the training targets at every "
                    "draw, y (chain, draw, point, class), for ArviZ's LOO and (with --posterior-predictive) LOO-PIT")
    ps.add_argument("--posterior-predictive", dest="posterior_predictive", action="store_true",
                    help="add the group posterior_predictive: y drawn from the likelihood at every posterior draw, "
                    "(chain, draw, point, class), for ArviZ's posterior predictive checks")
    ps.add_argument("--prior-predictive", dest="prior_predictive", action="store_true",
                    help="add the groups prior (independent prior draws of every recorded site, as many as the "
                    "posterior's) and prior_predictive (y drawn from them), for prior predictive checks")
    ps.add_argument("--quiet", action="store_true", help="no progress bar")
    ps.add_argument("--out", required=True, help="output NetCDF file (written beside it under a temporary name, "
                    "then renamed; an existing file is refused unless --overwrite)")
    ps.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    ps.add_argument("--chunk", type=int, help="kept draws per chunk, each streamed to the store folder with a "
                    "sampler-state checkpoint")
    ps.add_argument("--store", help="folder for the chunks and checkpoints (default: OUT.store)")
    ps.add_argument("--resume", action="store_true", help="continue the interrupted run in the store folder "
                    "(same arguments)")
    ps.add_argument("--exclude", help="comma-separated sites not to record (default: the sites the diagnostics do "
                    "not read: the hidden weights W1..WL of the fully-connected nets when they record 'summaries'; "
                    "--exclude '' keeps every site)")
    ps.add_argument("--reparam", help="faster exact sampling: 'data_space' or 'readout,data_space'")
    ps.add_argument("--certify", nargs="?", const=True, metavar="FAMILIES",
                    help="run the entry from two or more start families (prior draws, an annealed start, the mean "
                    "field's populations where the entry has one; FAMILIES: a comma-separated choice, default all "
                    "the entry offers), each with --chains chains (default 8), and store the comparison of their "
                    "population observables in the run (bnnzoo.workflows.certify); with --chunk / --store each "
                    "family is kept in its own store as it finishes and --resume runs only what is left")
    ps.add_argument("--matmul-precision", dest="matmul_precision", default="highest",
                    choices=["highest", "high", "tensorfloat32", "bfloat16", "default", "jax"],
                    help="float32 matrix-product precision on GPUs ('highest': exact float32; 'jax': JAX's "
                    "own setting, TensorFloat32 on recent NVIDIA GPUs); no effect on CPU")
    ps.add_argument("--distributed", action="store_true",
                    help="one of several processes (hosts) started together: jax.distributed.initialize, with the "
                    "coordinator read from the cluster environment (SLURM, Open MPI) unless --coordinator is given; "
                    "the chains are split over the processes and process 0 writes OUT (not --sampler gibbs)")
    ps.add_argument("--coordinator", help="with --distributed: HOST:PORT of process 0")
    ps.add_argument("--num-processes", dest="num_processes", type=int, help="with --coordinator: number of processes")
    ps.add_argument("--process-id", dest="process_id", type=int, help="with --coordinator: this process's index")
    ps.set_defaults(func=_cmd_sample)

    pp = sub.add_parser("predict", help="predict a sampled run's network outputs on new inputs and write NetCDF",
                        **fmt, description="At every posterior draw of RUN, compute the network's output f on the "
                        "inputs of --x and draw y from the likelihood around it (bnnzoo.predict), and write the run "
                        "with these predictions (group predictions: f, y (chain, draw, test_point, class); group "
                        "predictions_constant_data: X_test) to --out. The run needs the draws of every latent site: "
                        "`bnnzoo sample` leaves the hidden weights of the fully-connected nets out unless given "
                        "--exclude ''.")
    pp.add_argument("run", metavar="RUN", help="NetCDF file written by `bnnzoo sample` / bnnzoo.sample")
    pp.add_argument("--x", required=True, metavar="FILE.npy",
                    help="the new inputs: one array of shape (n, N0) saved with numpy.save, N0 the run's input "
                    "columns, finite float32 numbers")
    pp.add_argument("--out", required=True, metavar="OUT.nc",
                    help="output NetCDF file (written beside it under a temporary name, then renamed; an existing "
                    "file is refused unless --overwrite)")
    pp.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    pp.add_argument("--seed", type=int, default=0, help="seed of the likelihood noise in y")
    pp.set_defaults(func=_cmd_predict)

    pd = sub.add_parser("demo", help="sample the linear, sigmoidal and ReLU toy nets and write a report", **fmt)
    pd.add_argument("--out", default="bnnzoo_demo", help="output folder")
    pd.add_argument("--width", type=int, default=DEMO_LINEAR_SIZE, help="hidden width N of the linear net")
    pd.add_argument("--P", type=int, default=DEMO_LINEAR_SIZE, help="number of training points of the linear net")
    pd.add_argument("--sigmoidal-size", dest="sigmoidal_size", type=int, default=DEMO_SIGMOIDAL_SIZE,
                    help="N = P of the sigmoidal net")
    pd.add_argument("--relu-size", dest="relu_size", type=int, default=DEMO_RELU_SIZE, help="N = P of the ReLU net")
    pd.add_argument("--chains", type=int, default=DEMO_CHAINS,
                    help="chains per net, and per start family of the certified sigmoidal net (SNAPER tunes across "
                    "them and a certified run compares them: >= 2, 4 advised)")
    pd.add_argument("--warmup", type=int, default=DEMO_DEFAULT_WARMUP,
                    help="warm-up steps per chain of the linear net (and of the sigmoidal net with --sampler snaper "
                    "or nuts)")
    pd.add_argument("--sigmoidal-warmup", dest="sigmoidal_warmup", type=int, default=None,
                    help=f"warm-up steps per chain of the sigmoidal net (default: {DEMO_WARMUP['units']} sweeps of "
                    "the units sampler, else --warmup)")
    pd.add_argument("--relu-warmup", dest="relu_warmup", type=int, default=DEMO_RELU_WARMUP,
                    help="warm-up steps per chain of the ReLU net (its outlier units merge slowly: one per class)")
    pd.add_argument("--samples", type=int, default=None,
                    help=f"kept draws per chain of every net (default: {DEMO_DRAWS['gibbs']} for the linear net's "
                    f"Gibbs sampler, {DEMO_DRAWS['units']} for the sigmoidal net's units sampler, "
                    f"{DEMO_DEFAULT_DRAWS} for the HMC nets)")
    pd.add_argument("--sigmoidal-temperature", dest="sigmoidal_temperature", type=float,
                    default=DEMO_SIGMOIDAL_TEMPERATURE,
                    help="rescaled temperature of the sigmoidal net (the others run at 0.01, the paper's and the "
                    "zoo's default)")
    pd.add_argument("--sampler", choices=["auto", "snaper", "nuts"], default="auto",
                    help="auto (default): the exact Gibbs sampler for the linear net, unit-wise moves (units) for "
                    "the sigmoidal net, certified from the prior's and the mean field's starts, SNAPER (ChEES-HMC "
                    "tuned on the slowest direction) for the ReLU net; snaper or nuts (NumPyro's NUTS): that "
                    "sampler for all three, none certified")
    pd.add_argument("--seed", type=int, default=0, help="sampler seed")
    pd.add_argument("--quiet", action="store_true", help="no progress bar")
    pd.add_argument("--overwrite", action="store_true", help="write into a non-empty --out folder, replacing files")
    pd.set_defaults(func=_cmd_demo)

    pg = sub.add_parser("diagnose", help="diagnose a sampled run (ergodicity, branches, codes, symmetry, kernels, "
                                         "theory)", **fmt)
    pg.add_argument("run", help="NetCDF file written by `bnnzoo sample` / bnnzoo.sample")
    pg.add_argument("--json", action="store_true", help="print the verdicts and numbers as JSON")
    pg.add_argument("--figures", metavar="DIR", help="also write the paper-style figures to DIR")
    pg.add_argument("--save", metavar="FILE", help="write the run with the diagnostics groups added to FILE")
    pg.add_argument("--overwrite", action="store_true", help="replace an existing --save file")
    pg.add_argument("--no-kernels", dest="no_kernels", action="store_true",
                    help="skip kernels, CKA, D_LR and NC1 (the costliest part at large P)")
    pg.add_argument("--entry", metavar="NAME", help="diagnose the run as this zoo entry (a run of a model of your "
                                                    "own whose posterior holds the entry's sites)")
    pg.set_defaults(func=_cmd_diagnose)
    return p


def main(argv=None) -> int:
    """Run the ``bnnzoo`` command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit status: 0, 2 for
    bad input (one line ``bnnzoo: error: ...`` on stderr, as argparse's own usage errors), 1 for an unexpected
    failure (one line too; the environment variable BNNZOO_TRACEBACK=1 shows its traceback)."""
    args = build_parser().parse_args(argv)
    args.own_process = argv is None

    # JAX's compilation cache (JAX_COMPILATION_CACHE_DIR, BNNZOO_COMPILATION_CACHE) on a full disk: the programs
    # compile as without it; its warnings would break the command's one-line messages
    warnings.filterwarnings("ignore", message=CACHE_WARNING, category=UserWarning)
    level = logging.DEBUG if args.log_verbose else logging.WARNING if args.log_quiet else logging.INFO
    handler = _log.cli_handler(level)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return args.func(args)
    except (ValueError, FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError,
            FileExistsError) as e:
        # bad input: one line, exit 2 (argparse's own convention)
        print(f"bnnzoo: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bnnzoo: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001  no traceback reaches a CLI user; BNNZOO_TRACEBACK=1 shows it
        if os.environ.get("BNNZOO_TRACEBACK"):
            raise
        print(f"bnnzoo: error: {type(e).__name__}: {_one_line(e)} (run with BNNZOO_TRACEBACK=1 for the traceback)",
              file=sys.stderr)
        return 1
    finally:
        _log.remove_cli_handler(handler)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning during a command: one line ``warning: ...`` through the ``bnnzoo`` logger, without the Python
    file, line number and source line that :func:`warnings.showwarning` prints."""
    logging.getLogger(_log.LOGGER_NAME).warning("%s", " ".join(str(message).split()))


def _progress(args) -> bool:
    """Whether the command reports progress: not with its own ``--quiet`` nor with ``bnnzoo -q``."""
    return not (args.quiet or args.log_quiet)


def _one_line(e: BaseException) -> str:
    """An exception's message on one line (a FileNotFoundError from the OS also names its file)."""
    msg = str(e)
    if isinstance(e, OSError) and e.filename is not None and e.strerror:
        msg = f"{e.filename}: {e.strerror}"
    return " ".join(msg.split()) or type(e).__name__


if __name__ == "__main__":
    sys.exit(main())
