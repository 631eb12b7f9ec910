"""The checkpoint store of a chunked run (:func:`bnnzoo.inference.chunked.run_chunked`): one folder per run.

Layout::

    run.json              configuration, fingerprint of configuration and data, progress ("complete")
    state.npz             sampler state after the last finished block, with the checksums of every chunk file
    previous_state.npz    the checkpoint before it (kept, so a damaged latest checkpoint costs one block)
    chunks/warmup_00000.nc, chunks/draws_00004.nc, ...   one NetCDF file per finished block
    lock                  held (``fcntl.flock``) by the process running the store

Every file is written to a ``.tmp`` file, flushed to disk and renamed into place, so a kill (also during a write)
leaves either the old file or the new one.  A checkpoint carries a SHA-256 digest of its own arrays and the SHA-256
of every chunk file written up to it, so a truncated, altered or missing checkpoint or chunk is recognised, not
read: :meth:`RunStore.good_checkpoint` picks the latest checkpoint whose own digest and whose chunks all check out
(the previous one when the latest is damaged or refers to a damaged chunk), or stops with a message naming the
damaged file.  Nothing in the store is deleted by a resume except half-written ``.tmp`` files; a block that is redone
replaces its chunk file with the same draws.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

try:
    import fcntl                 # POSIX only
except ImportError:              # no flock on this platform: RunStore.lock cannot guard against a second process
    fcntl = None

__all__ = ["RunStore", "StoreError", "load_store", "save_state", "load_state", "read_checkpoint", "fingerprint",
           "file_sha256", "describe_differences", "manifest_digest", "version_changes", "check_store"]

_STATE_FILE = "state.npz"
_MANIFEST = "run.json"
_LOCK = "lock"
# every name the store writes (and the only files it ever deletes or renames), relative to its folder
_OWNED = re.compile(r"^(run\.json|state\.npz|previous_state\.npz|state\.npz\.damaged|lock|"
                    r"chunks/(warmup|draws)_\d{5}\.nc)(\.tmp)?$")
# manifest keys that do not identify a run (a resume may differ in them)
_NOT_IDENTITY = ("fingerprint", "versions", "complete", "timing")


class StoreError(ValueError):
    """A store that cannot be used as asked (damaged beyond its previous checkpoint, locked, another run's)."""


def file_sha256(path: Path) -> str:
    """The SHA-256 hex digest of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _write_failed(tmp: Path, final: Path, e: OSError) -> StoreError:
    """The one-line error of a store file that could not be written (a full disk); its half-written ``tmp`` is
    removed, what the store held before is kept."""
    tmp.unlink(missing_ok=True)
    return StoreError(f"could not write the store file {final} ({e.strerror or e}); the blocks finished before "
                      f"are kept: free space and resume the run (resume=True, CLI: --resume)")


def _fsync_replace(tmp: Path, final: Path) -> None:
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, final)


# ------------------------------------------------------------------------------------------------ state on disk

def _leaf_to_numpy(x):
    if jax.dtypes.issubdtype(getattr(x, "dtype", np.float32), jax.dtypes.prng_key):
        return np.asarray(jax.random.key_data(x)), True
    return np.asarray(x), False


def _digest(meta_json: str, arrays: Sequence[np.ndarray]) -> str:
    h = hashlib.sha256(meta_json.encode())
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.shape}{a.dtype}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save_state(path: Path, state, meta: dict, previous: Path | None = None) -> None:
    """Write the sampler state (any pytree of arrays) and ``meta`` to ``path`` atomically, with a digest of both.

    Parameters
    ----------
    path : the checkpoint file (``.npz``).
    state : the sampler state (host or device arrays; typed PRNG keys are stored as their key data).
    meta : JSON-serialisable information stored with it (the driver stores ``block_done``, ``timing`` and
        ``chunks``, the SHA-256 of every chunk file written so far).
    previous : where the checkpoint being replaced is kept (None: it is replaced).
    """
    leaves = jax.tree.leaves(state)
    arrays, typed = {}, []
    for i, leaf in enumerate(leaves):
        arr, is_key = _leaf_to_numpy(leaf)
        arrays[f"leaf{i:04d}"] = arr
        typed.append(is_key)
    meta_json = json.dumps(dict(meta, n_leaves=len(leaves), typed_keys=typed))
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, __meta__=np.array(meta_json), __digest__=np.array(_digest(meta_json, list(arrays.values()))),
                     **arrays)
    except OSError as e:
        raise _write_failed(tmp, path, e) from e
    if previous is not None and path.exists():
        # the current checkpoint becomes the previous one by a second name (a hard link, else a copy) first, so
        # that at every moment `path` holds a complete checkpoint: a kill here costs nothing
        keep = previous.with_name(previous.name + ".tmp")
        keep.unlink(missing_ok=True)
        try:
            os.link(path, keep)
        except OSError:
            shutil.copyfile(path, keep)
        _fsync_replace(keep, previous)
    _fsync_replace(tmp, path)


def read_checkpoint(path: Path) -> tuple[dict, dict]:
    """Read and verify a checkpoint: ``(meta, arrays)``.

    Raises
    ------
    StoreError
        The file is missing, unreadable (truncated) or its digest does not match its content; the message names
        the file.
    """
    if not path.exists():
        raise StoreError(f"{path} is missing")
    try:
        with np.load(path) as f:
            meta_json = str(f["__meta__"])
            meta = json.loads(meta_json)
            arrays = {k: f[k] for k in f.files if k.startswith("leaf")}
            digest = str(f["__digest__"]) if "__digest__" in f.files else None
    except Exception as e:  # noqa: BLE001  a truncated zip raises BadZipFile, EOFError, ValueError or OSError
        raise StoreError(f"{path} is unreadable ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
                         ) from None
    if digest is None:
        raise StoreError(f"{path} carries no checksum (written by an older bnnzoo); it cannot be checked")
    if digest != _digest(meta_json, [arrays[k] for k in sorted(arrays)]):
        raise StoreError(f"{path} is corrupt (its checksum does not match its content)")
    return meta, arrays


def load_state(path: Path, template, checked: tuple[dict, dict] | None = None):
    """Read a checkpoint written by :func:`save_state` into the structure of ``template`` (a freshly initialised
    state of the same run), checking its digest and every leaf's shape and dtype.  Returns ``(state, meta)``.

    Raises
    ------
    StoreError
        The file is damaged (see :func:`read_checkpoint`) or belongs to a run with another state layout.
    """
    meta, arrays = checked if checked is not None else read_checkpoint(path)
    leaves_t, treedef = jax.tree.flatten(template)
    if meta["n_leaves"] != len(leaves_t):
        raise StoreError(f"{path}: checkpoint has {meta['n_leaves']} arrays, this run's state has {len(leaves_t)}")
    leaves = []
    for i, (lt, is_key) in enumerate(zip(leaves_t, meta["typed_keys"])):
        arr = arrays[f"leaf{i:04d}"]
        ref, _ = _leaf_to_numpy(lt)
        if arr.shape != ref.shape or arr.dtype != ref.dtype:
            raise StoreError(f"{path}: state array {i} has shape {arr.shape} {arr.dtype}, expected "
                             f"{ref.shape} {ref.dtype}: the checkpoint belongs to a different run")
        leaves.append(jax.random.wrap_key_data(arr) if is_key else jnp.asarray(arr))
    return jax.tree.unflatten(treedef, leaves), meta


# ------------------------------------------------------------------------------------------------ the store

def _fingerprint(config: Mapping, arrays: Sequence[np.ndarray]) -> str:
    h = hashlib.sha256(json.dumps(config, sort_keys=True, default=repr).encode())
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a))
        h.update(str(a.shape).encode() + str(a.dtype).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def fingerprint(config: Mapping, arrays: Sequence[np.ndarray]) -> str:
    """A hash of a run's configuration and data (a store refuses to resume a different run)."""
    return _fingerprint(config, arrays)


def _flat(d: Mapping, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if k in _NOT_IDENTITY and not prefix:
            continue
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def manifest_digest(manifest: Mapping) -> str:
    """SHA-256 of a run's manifest less its progress keys ("complete", "timing"): stored in every checkpoint, so a
    resume notices a ``run.json`` edited after the run started (its versions, its settings)."""
    keep = {k: v for k, v in manifest.items() if k not in ("complete", "timing")}
    return hashlib.sha256(json.dumps(keep, sort_keys=True, default=repr).encode()).hexdigest()


VERSION_KEYS = ("bnnzoo", "jax", "numpyro", "python")


def version_changes(stored: Mapping, current: Mapping) -> dict:
    """{library: (the store's version, this process's)} for the libraries whose versions differ."""
    a, b = stored.get("versions", {}) or {}, current.get("versions", {}) or {}
    return {k: (a.get(k), b.get(k)) for k in VERSION_KEYS if a.get(k) != b.get(k)}


def describe_differences(stored: Mapping, new: Mapping) -> str:
    """``"the store holds a run with seed=0, this call has seed=1"`` for two manifests (their identifying keys,
    nested ones as ``model_kwargs.width``); the data when only the fingerprints differ."""
    a = _flat(json.loads(json.dumps(stored, default=repr)))
    b = _flat(json.loads(json.dumps(new, default=repr)))
    keys = [k for k in dict.fromkeys(list(a) + list(b)) if a.get(k, "<unset>") != b.get(k, "<unset>")]
    if not keys:
        return "the store holds a run on other data (X, Y or X_test differ)"
    show = lambda d: ", ".join(f"{k}={d[k]!r}" if k in d else f"{k} unset" for k in keys)  # noqa: E731
    return f"the store holds a run with {show(a)}, this call has {show(b)}"


class RunStore:
    """A run's folder (see the module docstring for its layout).

    Parameters
    ----------
    path : the folder (created on the first write).
    """

    def __init__(self, path):
        self.path = Path(path)
        self.chunks = self.path / "chunks"
        self._lock_fh = None
        self._created = False

    @property
    def manifest_path(self) -> Path:
        return self.path / _MANIFEST

    @property
    def state_path(self) -> Path:
        return self.path / _STATE_FILE

    @property
    def previous_state_path(self) -> Path:
        """The checkpoint before the last one."""
        return self.path / ("previous_" + _STATE_FILE)

    @property
    def lock_path(self) -> Path:
        return self.path / _LOCK

    def exists(self) -> bool:
        return self.manifest_path.exists()

    def manifest(self) -> dict:
        try:
            return json.loads(self.manifest_path.read_text())
        except (OSError, ValueError) as e:
            raise StoreError(f"{self.manifest_path} is unreadable ({type(e).__name__}); this store cannot be "
                             f"resumed") from None

    def write_manifest(self, manifest: dict) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        self.chunks.mkdir(exist_ok=True)
        tmp = self.manifest_path.with_name(_MANIFEST + ".tmp")
        tmp.write_text(json.dumps(manifest, indent=1, default=repr))
        _fsync_replace(tmp, self.manifest_path)

    # ---- lock
    def lock(self) -> bool:
        """Take the store's lock: ``fcntl.flock`` on its ``lock`` file and on the folder itself (a deleted ``lock``
        file does not let a second process in), released by :meth:`unlock` or when the process ends.  The folder is
        created if missing.

        Returns
        -------
        bool
            True when this call created the folder (:meth:`unlock` with ``remove_if_new`` removes it again).

        Raises
        ------
        StoreError
            Another process holds it.
        """
        if self._lock_fh is not None:      # already held by this object
            return False
        created = not self.path.exists()
        self.path.mkdir(parents=True, exist_ok=True)
        self._created = created
        if fcntl is None:        # no flock on this platform: no protection against a second process
            return created
        fh = open(self.lock_path, "a+")
        dir_fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            os.close(dir_fd)
            raise StoreError(f"{self.path} is in use by another process (it holds {self.lock_path}); wait for that "
                             f"run to end, or use another folder") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        self._lock_fh, self._dir_fd = fh, dir_fd
        return created

    def unlock(self, remove_if_new: bool = False) -> None:
        """Release the lock; with ``remove_if_new``, remove the folder again when :meth:`lock` created it and
        nothing but the lock file was written there (a refused run leaves no empty store behind)."""
        if self._lock_fh is not None:
            self._lock_fh.close()       # closing the files releases the flocks
            os.close(self._dir_fd)
            self._lock_fh = None
        if remove_if_new and getattr(self, "_created", False):
            try:
                if [p.name for p in self.path.iterdir()] in ([], [_LOCK]):
                    self.lock_path.unlink(missing_ok=True)
                    self.path.rmdir()
            except OSError:
                pass

    def foreign_files(self) -> list[str]:
        """Files of the folder that carry a store's names although it holds no run (no ``run.json``): a folder
        that is not a store, or one whose ``run.json`` was lost; a new run there would overwrite them."""
        if self.exists():
            return []
        names = [_STATE_FILE, "previous_" + _STATE_FILE]
        found = [n for n in names if (self.path / n).exists()]
        found += [f"chunks/{p.name}" for p in sorted(self.chunks.glob("*.nc"))] if self.chunks.is_dir() else []
        return found

    # ---- chunks
    def block_path(self, block) -> Path:
        return self.chunks / f"{block.kind}_{block.index:05d}.nc"

    def write_block(self, block, groups: Mapping[str, Any]) -> str:
        """Write one block's datasets as groups of one NetCDF file, atomically; returns the file's SHA-256."""
        final = self.block_path(block)
        tmp = final.with_name(final.name + ".tmp")
        bio, mode = io.BytesIO(), "w"    # built in memory: HDF5 never writes to a disk that may be full
        for g, ds in groups.items():
            if ds is None or not len(ds.data_vars):
                continue
            ds.to_netcdf(bio, group=g, mode=mode, engine="h5netcdf")
            mode = "a"
        if mode == "w":  # nothing to write: still mark the block as done
            xr.Dataset().to_netcdf(bio, engine="h5netcdf")
        try:
            with open(tmp, "wb") as fh:
                fh.write(bio.getvalue())
        except OSError as e:
            raise _write_failed(tmp, final, e) from e
        digest = file_sha256(tmp)
        _fsync_replace(tmp, final)
        return digest

    def remove_partial_writes(self) -> None:
        """Remove the ``.tmp`` files a killed write of this store left behind: only the store's own names
        (``state.npz.tmp``, ``chunks/draws_00003.nc.tmp``, ...), never a finished file or a file it did not write."""
        for d in (self.path, self.chunks):
            if not d.is_dir():
                continue
            for p in d.glob("*.tmp"):
                if _OWNED.match(p.relative_to(self.path).as_posix()):
                    p.unlink(missing_ok=True)

    def check_checkpoint(self, path: Path) -> tuple[dict, dict]:
        """Verify the checkpoint ``path`` and every chunk file it lists; ``(meta, arrays)``.

        Raises
        ------
        StoreError
            naming the first damaged file (the checkpoint, or a chunk missing or differing from its checksum).
        """
        meta, arrays = read_checkpoint(path)
        for name, digest in sorted(meta.get("chunks", {}).items()):
            p = self.chunks / name
            if not p.exists():
                raise StoreError(f"chunk file {p} is missing")
            if file_sha256(p) != digest:
                raise StoreError(f"chunk file {p} is corrupt (its checksum differs from the one in {path.name})")
        return meta, arrays

    def good_checkpoint(self) -> tuple[Path, dict, dict] | None:
        """The checkpoint to resume from: ``(state_path, meta, arrays)``, or None when the store holds no checkpoint
        (a run killed before its first checkpoint: it starts afresh, with a warning when it had written chunk files,
        which the new run writes again).

        The latest checkpoint when it and its chunks check out; otherwise the previous one, which then becomes the
        latest (the damaged checkpoint is kept as ``state.npz.damaged``) and a ``RuntimeWarning`` names the damaged
        file.

        Raises
        ------
        StoreError
            No checkpoint checks out although the store holds chunks; the message names the damaged files.
        """
        problems = []
        for p in (self.state_path, self.previous_state_path):
            try:
                meta, arrays = self.check_checkpoint(p)
            except StoreError as e:
                problems.append(e)
                continue
            if p != self.state_path:
                if self.state_path.exists():
                    os.replace(self.state_path, self.state_path.with_name(_STATE_FILE + ".damaged"))
                os.replace(p, self.state_path)
                warnings.warn(f"{problems[0]}: resuming from the previous checkpoint (after block "
                              f"{meta['block_done']}); the block after it is redone", RuntimeWarning, stacklevel=3)
            return self.state_path, meta, arrays
        if not self.state_path.exists() and not self.previous_state_path.exists():
            written = sorted(self.chunks.glob("*.nc")) if self.chunks.is_dir() else []
            if written:      # killed after its first chunk, before its first checkpoint: nothing is verifiable
                warnings.warn(f"{self.path} holds {len(written)} chunk file(s) but no checkpoint (the run was "
                              f"stopped before its first checkpoint): the run starts again from its first block "
                              f"and writes them anew", RuntimeWarning, stacklevel=3)
            return None
        raise StoreError(f"cannot resume {self.path}: {problems[0]}" + (
            f", and the previous checkpoint too ({problems[1]})" if len(problems) > 1 else "")
            + f"; the chunk files are kept: read the intact ones with bnnzoo.inference.load_store('{self.path}'), "
              f"or start the run again in a new folder")

    def read_blocks(self, kind: str, groups: Sequence[str], upto: int | None = None,
                    names: Sequence[str] | None = None) -> dict[str, list]:
        """The datasets of the finished blocks of ``kind`` (in order), per group.

        Parameters
        ----------
        kind : "warmup" or "draws".
        groups : the NetCDF groups to read (a group a file lacks is skipped).
        upto : only blocks with index <= upto.
        names : the chunk file names to read (those a checkpoint lists); None: every file of ``kind``.

        Raises
        ------
        StoreError
            A listed file cannot be read (named in the message).
        """
        paths = (sorted(self.chunks.glob(f"{kind}_*.nc")) if names is None
                 else sorted(self.chunks / n for n in names if n.startswith(kind + "_")))
        out: dict[str, list] = {g: [] for g in groups}
        for p in paths:
            idx = int(p.stem.split("_")[1])
            if upto is not None and idx > upto:
                continue
            for g in groups:
                try:
                    with xr.open_dataset(p, group=g, engine="h5netcdf") as ds:
                        out[g].append(ds.load())
                except OSError as e:
                    if "group" in str(e).lower() or "not found" in str(e).lower():
                        continue   # the file has no such group (e.g. no posterior_thinned)
                    raise StoreError(f"chunk file {p} is unreadable ({type(e).__name__})") from None
                except (KeyError, ValueError):
                    continue
        return out


def load_store(path):
    """Read what a store holds so far (also while its run is going on, or after it was killed or damaged).

    Only draws a checkpoint vouches for are read: the chunk files listed in the latest checkpoint that checks out;
    when no checkpoint checks out (a damaged chunk that both need), the blocks of draws up to the first damaged one,
    with a ``RuntimeWarning`` naming it.  A store without a readable checkpoint gives no draws.

    Parameters
    ----------
    path : the store folder.

    Returns
    -------
    dict with ``manifest``, ``block_done`` (the last block whose draws are included, -1 for none) and the
    ``posterior``, ``sample_stats`` and ``posterior_thinned`` datasets of those draws (concatenated along ``draw``;
    None for a group without draws).

    Raises
    ------
    FileNotFoundError
        ``path`` is not a run folder.
    ValueError
        ``path`` is the top folder of a certification (``bnnzoo.sample(certify=..., store=path)``), whose start
        families are runs of their own in ``path/family_<name>``.
    """
    store = RunStore(path)
    if not store.exists():
        raise FileNotFoundError(f"{path} is not a bnnzoo run folder (no {_MANIFEST})")
    man = store.manifest()
    if "certify" in man:          # a certification's top folder: each start family's run is a store of its own
        fams = man["certify"].get("families", [])
        raise ValueError(f"{path} is a certification folder: load_store reads one family's run, "
                         f"{', '.join(str(Path(path) / f'family_{f}') for f in fams)}")
    names, upto = [], -1
    for p in (store.state_path, store.previous_state_path):   # read-only: nothing is renamed here
        try:
            meta, _ = store.check_checkpoint(p)
        except StoreError:
            continue
        names, upto = list(meta.get("chunks", {})), meta["block_done"]
        break
    else:          # no checkpoint checks out: the intact blocks of the latest readable one, up to the first damage
        for p in (store.state_path, store.previous_state_path):
            try:
                meta, _ = read_checkpoint(p)
            except StoreError:
                continue
            for name, digest in sorted(meta.get("chunks", {}).items(), key=lambda kv: int(kv[0][-8:-3])):
                f = store.chunks / name
                if not f.exists() or file_sha256(f) != digest:
                    warnings.warn(f"chunk file {f} is {'missing' if not f.exists() else 'corrupt'}: the draws "
                                  f"before it are read, none after", RuntimeWarning, stacklevel=2)
                    break
                names.append(name)
                upto = int(name[-8:-3])
            break
        else:
            warnings.warn(f"{path} holds no readable checkpoint: no draws can be vouched for", RuntimeWarning,
                          stacklevel=2)
    parts = (store.read_blocks("draws", ("posterior", "sample_stats", "posterior_thinned"), upto=upto, names=names)
             if names else {g: [] for g in ("posterior", "sample_stats", "posterior_thinned")})
    out = {"manifest": man, "block_done": upto}
    for g, lst in parts.items():
        out[g] = _concat_blocks(g, lst) if lst else None
    return out


def _concat_blocks(group: str, blocks: list):
    """One group's block datasets joined in draw order: along ``draw``, or for ``posterior_thinned`` each site along
    its own kept-draw dim ``draw_<site>`` (its blocks hold different numbers of kept draws)."""
    if group != "posterior_thinned":
        return xr.concat(blocks, dim="draw", join="exact")
    return xr.Dataset({k: xr.concat([b[k] for b in blocks], dim=f"draw_{k}", join="exact")
                       for k in blocks[0].data_vars})


def check_store(store: RunStore, resume: bool, manifest: dict | None) -> None:
    """Refuse (:class:`StoreError`, one line) a store this call may not use: one that holds a run (without
    ``resume``), holds none or another run (with ``resume``; the message names the settings that differ)."""
    if not resume:
        if store.exists():
            raise StoreError(f"{store.path} already holds a run; pass resume=True (CLI: --resume) to continue it, or "
                             f"choose a new folder")
        foreign = store.foreign_files()
        if foreign:
            raise StoreError(f"{store.path} holds {', '.join(foreign[:3])}{' ...' if len(foreign) > 3 else ''} but "
                             f"no run.json: it is not a bnnzoo store this run may write into; use another folder")
        return
    if not store.exists():
        raise StoreError(f"cannot resume {store.path}: it holds no run (no run.json); drop resume (CLI: --resume) to "
                         f"start a new run there")
    stored = store.manifest()
    if manifest is not None and stored.get("fingerprint") != manifest.get("fingerprint"):
        if _edited(store, stored):        # an edited run.json differs from every call: say so, not "other data"
            raise StoreError(f"cannot resume {store.path}: its run.json was edited after the run started (its "
                             f"checksum differs from the one in its checkpoint); restore it, or start the run again "
                             f"in a new folder")
        raise StoreError(f"cannot resume {store.path}: {describe_differences(stored, manifest)}; resume with the "
                         f"same arguments, or use a new folder")


def _edited(store: RunStore, stored: Mapping) -> bool:
    """True when a readable checkpoint of ``store`` carries a digest of ``run.json`` other than ``stored``'s."""
    for path in (store.state_path, store.previous_state_path):
        try:
            meta, _ = read_checkpoint(path)
        except StoreError:
            continue
        return "manifest" in meta and meta["manifest"] != manifest_digest(stored)
    return False
