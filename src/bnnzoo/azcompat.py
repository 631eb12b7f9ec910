"""The one place bnnzoo talks to ArviZ, so both lines work.

Python 3.11 resolves ArviZ 0.23 (``InferenceData``); Python >= 3.12 resolves ArviZ 1.x (``xarray.DataTree``;
``plot_trace`` draws traces only there and the classic trace + density plot is ``plot_trace_dist``).  Everything
else in bnnzoo builds plain ``xarray.Dataset`` groups and goes through the functions below.
"""

from __future__ import annotations

import io
import os
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable, Mapping

import h5py
import numpy as np
import xarray as xr

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import arviz as az

__all__ = ["AZ_VERSION", "AZ_MAJOR", "make_idata", "group_names", "get_group", "set_groups", "shallow_copy",
           "get_attrs", "to_netcdf", "to_netcdf_bytes", "group_datasets", "COMPRESSION", "from_netcdf", "read_run_file",
           "plot_trace", "save_plot", "ess", "rhat", "is_idata", "plot_ppc", "loo_pit", "plot_loo_pit"]

AZ_VERSION: str = az.__version__
AZ_MAJOR: int = int(AZ_VERSION.split(".")[0])


def is_idata(obj) -> bool:
    """True for an ArviZ InferenceData (0.x) or an xarray DataTree (1.x)."""
    if AZ_MAJOR == 0:
        return isinstance(obj, az.InferenceData)
    return isinstance(obj, xr.DataTree)


def make_idata(groups: Mapping[str, xr.Dataset], attrs: Mapping | None = None):
    """Build the installed line's container from datasets; ``attrs`` go on every group (0.x has no global attrs)
    and, on 1.x, on the root too."""
    attrs = dict(attrs or {})
    groups = {k: v for k, v in groups.items() if v is not None}
    for ds in groups.values():
        ds.attrs.update(attrs)
    if AZ_MAJOR == 0:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return az.InferenceData(**groups)
    tree = xr.DataTree.from_dict({f"/{k}": v for k, v in groups.items()})
    tree.attrs.update(attrs)
    return tree


def group_names(idata) -> list[str]:
    if AZ_MAJOR == 0:
        return list(idata.groups())
    return list(idata.children)


def get_group(idata, name: str) -> xr.Dataset:
    """The group ``name`` as an ``xarray.Dataset`` (KeyError naming the groups present if missing)."""
    if name not in group_names(idata):
        raise KeyError(f"no group {name!r}; groups: {group_names(idata)}")
    if AZ_MAJOR == 0:
        return getattr(idata, name)
    return idata[name].to_dataset()


def set_groups(idata, groups: Mapping[str, xr.Dataset]):
    """Add (or replace) groups in place and return ``idata``."""
    if AZ_MAJOR == 0:
        for name in groups:
            if name in idata.groups():
                delattr(idata, name)
                idata._groups = [g for g in idata._groups if g != name]
                idata._groups_warmup = [g for g in idata._groups_warmup if g != name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata.add_groups(dict(groups))
        return idata
    for name, ds in groups.items():
        idata[name] = xr.DataTree(dataset=ds)
    return idata


def shallow_copy(idata):
    """A new container holding the same group datasets (not copied): adding or replacing groups in it leaves
    ``idata`` unchanged."""
    if AZ_MAJOR == 0:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return az.InferenceData(**{name: getattr(idata, name) for name in idata.groups()})
    return idata.copy(deep=False)


def get_attrs(idata) -> dict:
    """Run-level attributes (provenance): the posterior group's attrs on 0.x, the root's on 1.x."""
    if AZ_MAJOR == 0:
        return dict(idata.posterior.attrs) if "posterior" in idata.groups() else {}
    return dict(idata.attrs) or (dict(idata["posterior"].attrs) if "posterior" in idata.children else {})


COMPRESSION = {"zlib": True, "complevel": 1, "shuffle": True}
"""How :func:`to_netcdf` and :func:`to_netcdf_bytes` store every numeric variable: HDF5's byte shuffle, then zlib at
level 1 (a run's float draws compress about as well as at zlib's default level, in less time: the docs'
Benchmarks page, "NetCDF encodings")."""


def group_datasets(idata) -> dict:
    """{NetCDF group path: Dataset} of every group in the order they are written, the run-level attributes first
    (an empty dataset at the root, when there are any)."""
    out = {}
    if AZ_MAJOR == 0:
        if getattr(idata, "_attrs", None):
            out["/"] = xr.Dataset(attrs=idata._attrs)
        for g in idata._groups_all:
            out[f"//{g}"] = getattr(idata, g)
        return out
    for node in idata.subtree:
        try:
            out[node.path] = node.to_dataset(inherit=False)      # the node's own variables (xarray >= 2024.10)
        except TypeError:
            out[node.path] = node.to_dataset()
    return out


def _write(idata, target, compression: dict = COMPRESSION) -> None:
    """Write every group to ``target`` (a path or a binary buffer), each numeric variable encoded with
    ``compression`` (an empty dict: stored uncompressed, whatever encoding the variable was read with)."""
    mode = "w"
    for group, ds in group_datasets(idata).items():
        enc = {k: dict(compression) for k, v in ds.variables.items()
               if np.issubdtype(v.dtype, np.number) or v.dtype == np.bool_}
        ds.to_netcdf(target, mode=mode, group=group, engine="h5netcdf", encoding=enc)
        mode = "a"


def to_netcdf(idata, path) -> str:
    """Write every group (with attributes) to one NetCDF file, numeric variables compressed (``COMPRESSION``)."""
    path = str(path)
    _write(idata, path)
    return path


def to_netcdf_bytes(idata) -> bytes:
    """Every group (with attributes) as the bytes of one NetCDF file, built in memory: a caller writes them with
    plain file I/O, so a full disk or a file-size limit is one ``OSError`` and HDF5 never writes to the disk.  The
    file is the one :func:`to_netcdf` writes."""
    bio = io.BytesIO()
    _write(idata, bio)
    return bio.getvalue()


def from_netcdf(path):
    """Read a file written by :func:`to_netcdf` into the installed line's container (loaded into memory).  On the
    0.x line the large variables (:func:`_read_chunks_in_parallel`) are decompressed on every core first, the rest
    read by xarray."""
    if AZ_MAJOR == 0:
        idata = az.from_netcdf(str(path), engine="h5netcdf")
        if not hasattr(az.InferenceData, "load"):
            return idata
        _read_chunks_in_parallel(path, {g: getattr(idata, g) for g in idata.groups()})
        idata.load(inplace=True)         # in place: a copy would copy every array just read
        return idata
    tree = xr.open_datatree(str(path), engine="h5netcdf")
    return tree.load()


PARALLEL_READ_BYTES = 1 << 22
"""Variables at least this large (4 MiB) are read by :func:`_read_chunks_in_parallel`."""

_CHUNKS_PER_JOB = 64
"""Chunks one thread reads in a row: few hand-overs between the threads, enough jobs to share the cores."""

_H5_SHUFFLE, _H5_DEFLATE = 2, 1
"""HDF5's filter codes of the byte shuffle and of zlib's deflate."""

_DECODED_ATTRS = {"missing_value", "scale_factor", "add_offset", "units", "calendar", "_Unsigned", "dtype",
                  "_Encoding", "compress", "flag_values"}
"""Attributes that make xarray change a variable's stored values when it reads them (CF decoding): a variable with
one of them is left to xarray."""


def _read_chunks_in_parallel(path, groups: Mapping[str, xr.Dataset]) -> None:
    """Read the large variables of the lazily opened ``groups`` ({group: dataset} of the file ``path``) in place:
    each compressed chunk's bytes read from the file and inflated by zlib on a thread of a pool with one thread per
    core (zlib, unlike HDF5's own reader, lets threads inflate at once), then un-shuffled and put in its place.

    Only a variable whose values xarray would return exactly as stored is read here: chunked, compressed by deflate
    alone or after HDF5's byte shuffle, every chunk filtered, native byte order, no CF-decoding attribute, and a
    ``_FillValue`` only as NaN of a float variable (masking NaN with NaN changes nothing); anything else (and every
    variable smaller than :data:`PARALLEL_READ_BYTES`) is left to xarray, which reads it when the container is
    loaded.  The bytes are those HDF5 would inflate, so the values are the same."""
    jobs, targets = [], []
    if not hasattr(os, "pread"):        # not on Windows: xarray reads everything
        return
    with h5py.File(path, "r") as fh:
        for gname, ds in groups.items():
            for name, var in ds.variables.items():
                d = fh.get(f"{gname}/{name}")
                if not isinstance(d, h5py.Dataset) or var.nbytes < PARALLEL_READ_BYTES or var.dtype != d.dtype:
                    continue
                shuffle = _plain_chunked(d)
                if shuffle is None:
                    continue
                out = np.empty(d.shape, d.dtype)
                chunks: list = []
                if hasattr(d.id, "chunk_iter"):      # HDF5 >= 1.12.3: the chunk index in one pass
                    d.id.chunk_iter(chunks.append)
                else:
                    chunks = [d.id.get_chunk_info(i) for i in range(d.id.get_num_chunks())]
                n_expected = int(np.prod([-(-s // c) for s, c in zip(d.shape, d.chunks)]))
                if len(chunks) != n_expected or any(ci.filter_mask for ci in chunks):
                    continue     # chunks never written (fill values) or with a filter skipped: HDF5 reads them
                shape = d.chunks
                jobs += [(out, shape, shuffle, chunks[i:i + _CHUNKS_PER_JOB])
                         for i in range(0, len(chunks), _CHUNKS_PER_JOB)]
                targets.append((var, out))
    if not jobs:
        return
    fd = os.open(path, os.O_RDONLY)

    def read(job):
        out, shape, shuffle, chunks = job
        for ci in chunks:
            raw = np.frombuffer(zlib.decompress(os.pread(fd, ci.size, ci.byte_offset)), np.uint8)
            if shuffle:         # byte j of every element stored together: gather each element's bytes again
                planes, raw = raw.reshape(out.itemsize, -1), np.empty((raw.size // out.itemsize, out.itemsize),
                                                                     np.uint8)
                for j, plane in enumerate(planes):   # a copy per byte: 3x faster than one transposed copy
                    raw[:, j] = plane
                raw = raw.reshape(-1)
            block = raw.view(out.dtype).reshape(shape)
            region = tuple(slice(o, min(o + c, s)) for o, c, s in zip(ci.chunk_offset, shape, out.shape))
            out[region] = block[tuple(slice(0, r.stop - r.start) for r in region)]

    try:
        with ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
            for _ in pool.map(read, jobs):
                pass
    finally:
        os.close(fd)
    for var, out in targets:
        var.data = out


def _plain_chunked(d) -> bool | None:
    """For an h5py dataset ``d``: whether its chunks are byte-shuffled (True) or not (False) when they are
    compressed by deflate alone or after the shuffle and its values need no decoding (:func:`_read_chunks_in_parallel`);
    None for anything else."""
    if d.chunks is None or not d.dtype.isnative or d.dtype.kind not in "fiub":
        return None
    attrs = set(d.attrs)
    if attrs & _DECODED_ATTRS:
        return None
    if "_FillValue" in attrs:
        fill = np.asarray(d.attrs["_FillValue"])
        if d.dtype.kind != "f" or fill.size != 1 or not np.isnan(fill).all():
            return None
    plist = d.id.get_create_plist()
    codes = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
    if codes == [_H5_DEFLATE]:
        return False
    if codes == [_H5_SHUFFLE, _H5_DEFLATE]:
        return True
    return None


def read_run_file(path: str | os.PathLike, label: str = "idata"):
    """Read a run's NetCDF file (written by :func:`to_netcdf` or ``bnnzoo sample --out``), with a one-line error for
    anything that is not one.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    label : str
        The argument or option the path came from, named at the start of every error (``"idata"``, ``"run file"``).

    Returns
    -------
    InferenceData or DataTree
        The run, loaded into memory.

    Raises
    ------
    ValueError
        One line starting with ``label``: the file does not exist, is a folder, is empty, or is not a readable NetCDF
        run (truncated, or another kind of file).
    """
    p = Path(path)
    if not p.exists():
        raise ValueError(f"{label}: there is no file {p} (write a run with `bnnzoo sample ... --out FILE` or "
                         f"bnnzoo.azcompat.to_netcdf)")
    if p.is_dir():
        raise ValueError(f"{label}: {p} is a folder, not a NetCDF file")
    if p.stat().st_size == 0:
        raise ValueError(f"{label}: {p} is empty")
    try:
        return from_netcdf(p)
    except Exception as e:  # noqa: BLE001  h5py / xarray raise OSError, ValueError, KeyError ... for a bad file
        first = str(e).splitlines()[0] if str(e) else ""
        raise ValueError(f"{label}: {p} is not a readable NetCDF run (truncated, or not written by bnnzoo.sample? "
                         f"{type(e).__name__}: {first})") from None


def plot_trace(idata, var_names: Iterable[str] | None = None, coords: Mapping | None = None, **kwargs):
    """The classic trace plot (density + trace per variable): ``az.plot_trace`` on 0.x, ``az.plot_trace_dist`` on
    1.x.  Returns what ArviZ returns (axes on 0.x, a PlotCollection on 1.x)."""
    var_names = list(var_names) if var_names is not None else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if AZ_MAJOR == 0:
            return az.plot_trace(idata, var_names=var_names, coords=coords, **kwargs)
        return az.plot_trace_dist(idata, var_names=var_names, coords=coords, **kwargs)


def save_plot(result, path, dpi: int = 90) -> str:
    """Save what :func:`plot_trace` returned (axes on 0.x, a PlotCollection on 1.x) to ``path`` and close it."""
    import matplotlib.pyplot as plt  # matplotlib kept off `import bnnzoo` (docs/contract.md, Imports)

    if hasattr(result, "savefig"):
        result.savefig(str(path), dpi=dpi, bbox_inches="tight")
    else:
        fig = result.ravel()[0].figure if hasattr(result, "ravel") else plt.gcf()
        fig.tight_layout()
        fig.savefig(str(path), dpi=dpi, bbox_inches="tight")
    plt.close("all")
    return str(path)


def _stat(fn_name, idata, var_names, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = getattr(az, fn_name)
        if AZ_MAJOR == 0:
            return fn(idata, var_names=list(var_names) if var_names else None, **kw)
        return fn(idata, var_names=list(var_names) if var_names else None, **kw)


def ess(idata, var_names=None, method: str = "bulk") -> xr.Dataset:
    """Effective sample size per variable and coordinate (ArviZ's rank-normalised bulk/tail ESS)."""
    out = _stat("ess", idata, var_names, method=method)
    return out.to_dataset() if isinstance(out, xr.DataTree) else out


def rhat(idata, var_names=None) -> xr.Dataset:
    """Rank-normalised split R-hat per variable and coordinate (ArviZ's), exact where it is degenerate.

    Where every split chain (the first and the last ``draw // 2`` draws of each chain, as ArviZ splits them) is
    constant, the within-chain variance is zero: R-hat is then +inf when the split chains hold different values
    (between-chain variance > 0) and NaN when they all hold one value (0/0).  ArviZ divides by that zero, or by the
    rounding noise of the rank-normalised values' variance, and returns inf, NaN or a number near 1e16 by chance of
    rounding.  Elsewhere, and with fewer than 2 chains or 4 draws (NaN), ArviZ's value is returned unchanged.

    Parameters
    ----------
    idata : a run (InferenceData / DataTree: its posterior) or an ``xarray.Dataset`` with (chain, draw, ...)
        variables.
    var_names : the variables (default all).

    Returns
    -------
    xarray.Dataset
        R-hat per variable, with each variable's dims after (chain, draw).
    """
    out = _stat("rhat", idata, var_names)
    out = out.to_dataset() if isinstance(out, xr.DataTree) else out
    post = idata if isinstance(idata, xr.Dataset) else get_group(idata, "posterior")
    for name in out.data_vars:
        x = post[name]
        C, D = x.sizes.get("chain", 0), x.sizes.get("draw", 0)
        if C < 2 or D < 4:
            continue
        x = x.transpose("chain", "draw", ...)
        v = np.asarray(x.values, float)
        h = D // 2
        halves = np.concatenate([v[:, :h], v[:, D - h:]], axis=0)            # (2C, h, ...)
        constant = np.all(halves == halves[:, :1], axis=(0, 1))
        if not constant.any():
            continue
        one_value = np.all(halves == halves[:1, :1], axis=(0, 1))
        r = out[name].transpose(*x.dims[2:])
        out[name] = r.copy(data=np.where(constant, np.where(one_value, np.nan, np.inf), np.asarray(r.values, float)))
    return out


def plot_ppc(idata, var_names: Iterable[str] = ("y",), group: str = "posterior", **kwargs):
    """Posterior (``group="posterior"``) or prior (``"prior"``) predictive check of ``var_names`` against the
    observed data: ``az.plot_ppc`` on 0.x, ``az.plot_ppc_dist`` on 1.x (which reads the ``posterior_predictive`` /
    ``prior_predictive`` group).  Returns what ArviZ returns (axes on 0.x, a PlotCollection on 1.x); save it with
    :func:`save_plot`."""
    if group not in ("posterior", "prior"):
        raise ValueError(f"group must be 'posterior' or 'prior', got {group!r}")
    var_names = list(var_names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if AZ_MAJOR == 0:
            return az.plot_ppc(idata, var_names=var_names, group=group, **kwargs)
        return az.plot_ppc_dist(idata, var_names=var_names, group=f"{group}_predictive", **kwargs)


def loo_pit(idata, var_name: str = "y"):
    """LOO probability integral transform of each observation of ``var_name`` (needs the ``log_likelihood``,
    ``posterior_predictive`` and ``observed_data`` groups): an ``xarray.DataArray`` with the observation's dims,
    values in [0, 1] (uniform when the model is calibrated).  The zoo's likelihood is tempered (variance T/N): on data
    not drawn from it the PIT piles up at 0 and 1 and PSIS-LOO's Pareto k is large (each point weighs N/T), which
    says the targets lie beyond T/N of the net, not that sampling failed (the user guide's "Calibration")."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if AZ_MAJOR == 0:
            out = az.loo_pit(idata, y=var_name)
            if not isinstance(out, xr.DataArray):
                obs = get_group(idata, "observed_data")[var_name]
                out = xr.DataArray(out, dims=obs.dims, coords=obs.coords)
            return out
        out = az.loo_pit(idata, var_names=[var_name])
        return out[var_name]


def plot_loo_pit(idata, var_name: str = "y", **kwargs):
    """The LOO-PIT plot of ``var_name`` (``az.plot_loo_pit`` on both lines; same groups as :func:`loo_pit`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if AZ_MAJOR == 0:
            return az.plot_loo_pit(idata, y=var_name, **kwargs)
        return az.plot_loo_pit(idata, var_names=[var_name], **kwargs)
