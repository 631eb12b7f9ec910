"""Argument checks shared by the model functions of the zoo and their ``check_*_args``.

The same functions run in :func:`bnnzoo.sample`'s validation and inside the models, so a user calling a model
directly gets the same one-line ``ValueError`` as ``bnnzoo.sample``.  A hyperparameter may be a traced JAX value (a
user's prior on the temperature, inside ``jit`` or MCMC): such values cannot be inspected and are skipped; only
concrete values are checked.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["is_traced", "check_int", "check_positive", "check_data", "check_num_outputs", "check_record",
           "check_bool", "sqrt"]


def is_traced(value) -> bool:
    """True when ``value`` is (or holds) an abstract JAX tracer, whose value cannot be read."""
    return isinstance(value, jax.core.Tracer)


def check_int(name: str, value, minimum: int = 1) -> None:
    """``value`` must be an integer >= ``minimum`` (booleans, floats and strings refused)."""
    if is_traced(value):
        raise ValueError(f"{name} sets an array shape and must be a concrete integer >= {minimum}, got a traced value")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def check_positive(name: str, value) -> None:
    """``value`` must be a finite number > 0 (a Python/NumPy scalar or a scalar array); traced values are skipped."""
    if is_traced(value):
        return
    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
        raise ValueError(f"{name} must be a number > 0, got {value!r}")
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001 - anything that is not array-like is refused below
        arr = None
    if arr is None or arr.shape != () or arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a number > 0, got {value!r}")
    if not (np.isfinite(arr) and arr > 0):
        raise ValueError(f"{name} must be a number > 0, got {value!r}")


def check_bool(name: str, value) -> None:
    """``value`` must be True or False."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def check_data(name: str, value, shape_msg: str, ndim: int = 2):
    """Return ``value`` as a NumPy array after checking its rank, numeric type and finiteness.  A traced value (a
    user's ``jit``) is returned as it is after the rank check: its entries cannot be read.  ``shape_msg`` describes
    the expected shape, e.g. "(P, N0)"."""
    if is_traced(value):
        if value.ndim != ndim:
            raise ValueError(f"{name} must have shape {shape_msg}, got shape {value.shape}")
        return value
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be an array of shape {shape_msg}, got a string")
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001
        raise ValueError(f"{name} must be an array of shape {shape_msg}, got {type(value).__name__}") from None
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have shape {shape_msg}, got shape {arr.shape}")
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold numbers, got dtype {arr.dtype}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def check_num_outputs(num_outputs, Y) -> None:
    """With ``Y`` None, ``num_outputs`` is required (>= 1); with ``Y`` given it must agree with Y's columns."""
    if Y is None:
        if num_outputs is None:
            raise ValueError("with Y=None (prior / predictive / no likelihood) give num_outputs, the number of "
                             "outputs m >= 1")
        check_int("num_outputs", num_outputs, 1)
    elif num_outputs is not None:
        check_int("num_outputs", num_outputs, 1)
        if num_outputs != Y.shape[1]:
            raise ValueError(f"num_outputs={num_outputs} disagrees with Y, which has {Y.shape[1]} columns")


def check_targets_and_test(X, Y, num_outputs, X_test):
    """Check ``Y`` (P, m) against the P rows of the checked inputs ``X``, ``num_outputs`` against Y, and ``X_test``
    (P_test, X's columns); the common part of every model's argument check."""
    if Y is not None:
        Y = check_data("Y", Y, f"(P, m) with P = {X.shape[0]} (rows of X)")
        if Y.shape[0] != X.shape[0]:
            raise ValueError(f"Y must have shape (P, m) with P = {X.shape[0]} (rows of X), got {Y.shape}")
    check_num_outputs(num_outputs, Y)
    if X_test is not None:
        X_test = check_data("X_test", X_test, f"(P_test, {X.shape[1]})")
        if X_test.shape[1] != X.shape[1]:
            raise ValueError(f"X_test must have shape (P_test, {X.shape[1]}), got {X_test.shape}")


def check_record(record, allowed_msg: str, ok) -> tuple[str, ...]:
    """``record`` as a tuple of names (a single string is one name); ``ok(name)`` says whether a name is known."""
    if isinstance(record, str):
        record = (record,)
    try:
        record = tuple(record)
    except TypeError:
        raise ValueError(f"record must be a name or a list of names ({allowed_msg}), got {record!r}") from None
    for r in record:
        if not isinstance(r, str) or not ok(r):
            raise ValueError(f"record: unknown entry {r!r}; use {allowed_msg}")
    return record


def sqrt(value):
    """√value: Python float arithmetic for concrete scalars (bit-identical to :func:`math.sqrt`), ``jnp.sqrt`` for
    arrays and traced values (a prior on a hyperparameter)."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return math.sqrt(value)
    return jnp.sqrt(value)
