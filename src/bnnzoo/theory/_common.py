"""Small helpers shared by the theory modules (input checking, default prior scales, matrix functions, attrs)."""

from __future__ import annotations

import numpy as np

from ..models.fcn import default_sigma_a2 as _rule

__all__ = ["as_xy", "default_sigma_a2", "sym_fun", "json_attrs", "check_readout"]


def as_xy(X, Y=None, name: str = "X"):
    """Return (X, Y) float arrays from arrays or from a Task given as ``X`` (with ``Y`` omitted); check shapes."""
    if Y is None:
        if not (hasattr(X, "X") and hasattr(X, "Y")):
            raise TypeError(f"give {name} and Y arrays, or a Task as the only positional argument")
        X, Y = X.X, X.Y
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[0] != Y.shape[0]:
        raise ValueError(f"X must be (P, N0) and Y (P, m) with the same P, got {X.shape} and {Y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(Y))):
        raise ValueError("X and Y must be finite")
    return X, Y


def as_test(X_test, N0: int):
    """Check optional test inputs (P*, N0)."""
    if X_test is None:
        return None
    Xt = np.asarray(X_test, dtype=float)
    if Xt.ndim != 2 or Xt.shape[1] != N0:
        raise ValueError(f"X_test must be (P*, {N0}), got shape {Xt.shape}")
    return Xt


def check_readout(readout: str) -> str:
    if readout not in ("nonlazy", "lazy"):
        raise ValueError(f"readout must be 'nonlazy' or 'lazy', got {readout!r}")
    return readout


def default_sigma_a2(P: int, depth: int = 1, nonlinearity: str = "linear", readout: str = "nonlazy") -> float:
    """The paper's readout prior variance (docs/theory.md §1), the same rule the models use
    (:func:`bnnzoo.models.fcn.default_sigma_a2`); "erf" is the sigmoid's kernel name."""
    check_readout(readout)
    return _rule("sigmoid" if nonlinearity == "erf" else nonlinearity, readout, P, depth)


def sym_fun(A: np.ndarray, fun) -> np.ndarray:
    """f(A) for a symmetric matrix A through its eigendecomposition (f applied to the eigenvalues)."""
    A = 0.5 * (A + A.T)
    w, V = np.linalg.eigh(A)
    return (V * fun(w)) @ V.T


def json_attrs(**kw) -> dict:
    """Attributes for an xarray Dataset: JSON-serialisable scalars only (None becomes the string 'none')."""
    out = {}
    for k, v in kw.items():
        if v is None:
            out[k] = "none"
        elif isinstance(v, (bool, np.bool_)):
            out[k] = int(bool(v))
        elif isinstance(v, (int, np.integer)):
            out[k] = int(v)
        elif isinstance(v, (float, np.floating)):
            out[k] = float(v)
        elif isinstance(v, str):
            out[k] = v
        else:
            raise TypeError(f"attr {k!r} is not a JSON scalar: {type(v)}")
    return out
