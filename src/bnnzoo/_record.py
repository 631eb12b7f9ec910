"""Typed result records shared by every diagnostic.

A record is a frozen dataclass (in the spirit of BlackJAX's documented state/info tuples) that also mixes in
:class:`Record`, which gives it

* a readable ``__repr__`` built from the record's own :meth:`Record.summary` lines (numbers and verdicts, no
  thousand-element arrays),
* :meth:`Record.to_dict`: JSON-ready (arrays become lists or are left out, NaN becomes ``None``),
* :meth:`Record.to_dataset` / :meth:`Record.from_dataset`: a lossless round trip through an ``xarray.Dataset``, which is
  how :func:`bnnzoo.diagnostics.diagnose` stores results as extra InferenceData groups that survive NetCDF.

Array fields declare their named dims with :func:`array_field`; every other field must be a JSON value (number,
string, bool, None, tuple/list or dict of those) or another record.
"""

from __future__ import annotations

import dataclasses
import json
import re
import math
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["Record", "array_field", "RECORD_TYPES", "record_from_dataset", "jsonable"]

RECORD_TYPES: dict[str, type] = {}
_SEP = "__"


def array_field(*dims: str, default=dataclasses.MISSING):
    """A dataclass field holding a numpy array with the named ``dims`` (``None`` allowed when optional)."""
    kw = {} if default is dataclasses.MISSING else {"default": default}
    return dataclasses.field(metadata={"dims": tuple(dims)}, **kw)


def jsonable(v: Any):
    """Plain-Python, strict-JSON version of ``v`` (NaN/inf become None; numpy scalars and arrays are converted)."""
    if isinstance(v, Record):
        return v.to_dict()
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return jsonable(v.tolist())
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return v if math.isfinite(v) else None
    if v is None or isinstance(v, str):
        return v
    return repr(v)


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.3g}" if np.isfinite(v) or np.isinf(v) else "n/a"
    return str(v)


_NAN = re.compile(r"(?<![\w.])[+-]?nan(?!\w)")


def nan_as_na(line: str) -> str:
    """A summary line with every printed ``nan`` (a number that could not be computed) written "n/a"."""
    return _NAN.sub("n/a", line)


class Record:
    """Mixin for the frozen dataclasses that diagnostics return (see module docstring)."""

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        RECORD_TYPES[cls.__name__] = cls

    # -- display -----------------------------------------------------------------------------------------------
    def summary(self) -> list[str]:
        """Lines a researcher reads: the verdict and the numbers behind it.  Records override this."""
        out = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if "dims" in f.metadata or isinstance(v, Record):
                continue
            out.append(f"{f.name} = {_fmt(v)}")
        return out

    def __repr__(self) -> str:
        lines = [nan_as_na(ln) for ln in self.summary()]
        return type(self).__name__ + "(\n" + "".join(f"  {ln}\n" for ln in lines) + ")"

    def _repr_pretty_(self, p, cycle):  # IPython
        p.text(repr(self))

    # -- storage -----------------------------------------------------------------------------------------------
    def to_dict(self, arrays: bool = False) -> dict:
        """JSON-ready dict of the record: every scalar field and nested record, plus the arrays if ``arrays``."""
        out = {"record": type(self).__name__}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if "dims" in f.metadata:
                if arrays and v is not None:
                    out[f.name] = jsonable(np.asarray(v))
                continue
            if isinstance(v, Record):
                out[f.name] = v.to_dict(arrays)
            elif isinstance(v, (tuple, list)) and any(isinstance(x, Record) for x in v):
                out[f.name] = [x.to_dict(arrays) for x in v]
            elif isinstance(v, dict) and any(isinstance(x, Record) for x in v.values()):
                out[f.name] = {str(k): x.to_dict(arrays) for k, x in v.items()}
            else:
                out[f.name] = jsonable(v)
        return out

    def _scalar_fields(self) -> dict:
        out = {}
        for f in dataclasses.fields(self):
            if "dims" in f.metadata:
                continue
            v = getattr(self, f.name)
            out[f.name] = _pack(v)
        return out

    def _arrays(self, prefix: str = "") -> dict:
        data = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if "dims" in f.metadata:
                if v is not None:
                    arr = np.asarray(v)
                    d = f.metadata["dims"]
                    if arr.ndim != len(d):
                        raise ValueError(f"{type(self).__name__}.{f.name}: array of rank {arr.ndim} but dims {d}")
                    data[prefix + f.name] = (d, arr)
            elif isinstance(v, Record):
                data.update(v._arrays(prefix + f.name + _SEP))
        return data

    def to_dataset(self) -> xr.Dataset:
        """``xarray.Dataset``: array fields as variables (named dims), everything else as attributes (readable
        scalars one by one, and the full set as JSON in ``bnnzoo_fields``)."""
        attrs = {"bnnzoo_record": type(self).__name__, "bnnzoo_fields": json.dumps(self._scalar_fields())}
        for k, v in self._scalar_fields().items():
            if isinstance(v, (int, float, str)) and not isinstance(v, bool):
                attrs[k] = v
        data = self._arrays()
        if not data:  # ArviZ 0.x drops groups without variables when writing NetCDF
            data["record_marker"] = ((), np.int8(1))
        return xr.Dataset(data, attrs=attrs)

    @classmethod
    def _from_parts(cls, fields: dict, ds: xr.Dataset, prefix: str = ""):
        kw = {}
        for f in dataclasses.fields(cls):
            if "dims" in f.metadata:
                name = prefix + f.name
                kw[f.name] = np.asarray(ds[name].values) if name in ds else None
                continue
            v = fields.get(f.name)
            if isinstance(v, dict) and "__record__" in v:
                kw[f.name] = _unpack(v, ds, prefix + f.name + _SEP)
            elif isinstance(v, list) and v and all(isinstance(x, dict) and "__record__" in x for x in v):
                kw[f.name] = tuple(_unpack(x, ds, None) for x in v)
            elif isinstance(v, dict) and v and all(isinstance(x, dict) and "__record__" in x for x in v.values()):
                kw[f.name] = {k: _unpack(x, ds, None) for k, x in v.items()}
            else:
                kw[f.name] = _untuple(v, f.type)
        return cls(**kw)

    @classmethod
    def from_dataset(cls, ds: xr.Dataset):
        """Rebuild the record written by :meth:`to_dataset` (also after a NetCDF round trip)."""
        name = ds.attrs.get("bnnzoo_record")
        target = RECORD_TYPES.get(name, cls) if cls is Record else cls
        if name is not None and name != target.__name__:
            raise ValueError(f"dataset holds a {name}, not a {target.__name__}")
        fields = json.loads(ds.attrs["bnnzoo_fields"])
        return target._from_parts(fields, ds)


def _pack(v):
    """Scalar-field value → JSON (records nested as {"__record__": name, ...}; a record inside a tuple or dict must
    hold no arrays, since only the record's own and directly nested records' arrays are stored)."""
    if isinstance(v, Record):
        return {"__record__": type(v).__name__, **v._scalar_fields()}
    if isinstance(v, (tuple, list)) and any(isinstance(x, Record) for x in v):
        return [_pack(x) for x in v]
    if isinstance(v, dict) and any(isinstance(x, Record) for x in v.values()):
        return {str(k): _pack(x) for k, x in v.items()}
    return jsonable(v)


def _unpack(v: dict, ds, prefix):
    sub = RECORD_TYPES[v["__record__"]]
    fields = {k: x for k, x in v.items() if k != "__record__"}
    if prefix is None:
        return sub._from_parts(fields, xr.Dataset(), "")
    return sub._from_parts(fields, ds, prefix)


def _untuple(v, annotation):
    """JSON turns tuples into lists: give tuple-typed fields their tuples back (also nested, e.g. tuple[tuple])."""
    ann = str(annotation)
    if isinstance(v, list) and ann.startswith("tuple"):
        return tuple(tuple(x) if isinstance(x, list) else x for x in v)
    if v is None and ann in ("float",):
        return float("nan")
    return v


def record_from_dataset(ds: xr.Dataset) -> Record:
    """Rebuild whichever record ``ds`` holds."""
    return Record.from_dataset(ds)
