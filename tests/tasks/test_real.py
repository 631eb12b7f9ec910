"""Tasks: bundled digits and the local-file loaders (MNIST, CIFAR-10)."""

import gzip
import pickle

import numpy as np
import pytest

from bnnzoo.tasks import digits_task, load_cifar10, load_mnist, mnist_task


def test_digits_bundled():
    t = digits_task(P=60, P_test=40, seed=1)
    assert t.X.shape == (60, 64) and t.X_test.shape == (40, 64)
    assert set(np.unique(t.labels)) == {0, 1, 2}
    np.testing.assert_allclose(np.mean(np.sum(t.X**2, 1)) / t.N0, 1.0, rtol=1e-10)
    tp = digits_task(P=30, P_test=10, projection_dim=20)
    assert tp.X.shape == (30, 20)


def test_loaders_fail_clearly_without_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        load_mnist(tmp_path)
    with pytest.raises(FileNotFoundError, match="data_batch_1"):
        load_cifar10(tmp_path)


def _write_idx(path, arr):
    header = bytes([0, 0, 8, arr.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in arr.shape)
    with gzip.open(str(path) + ".gz", "wb") as fh:
        fh.write(header + arr.astype(np.uint8).tobytes())


def test_mnist_idx_reader(tmp_path):
    rng = np.random.default_rng(0)
    imgs = rng.integers(0, 256, (30, 28, 28))
    labs = np.arange(30) % 4
    for split in ("train", "t10k"):
        _write_idx(tmp_path / f"{split}-images-idx3-ubyte", imgs)
        _write_idx(tmp_path / f"{split}-labels-idx1-ubyte", labs)
    Xtr, ytr, Xte, yte = load_mnist(tmp_path)
    np.testing.assert_array_equal(Xtr, imgs)
    np.testing.assert_array_equal(ytr, labs)
    t = mnist_task(tmp_path, P=12, P_test=6)
    assert t.X.shape == (12, 784) and set(np.unique(t.labels)) <= {0, 1, 2}


def test_cifar_pickle_reader(tmp_path):
    base = tmp_path / "cifar-10-batches-py"
    base.mkdir()
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        with open(base / name, "wb") as fh:
            pickle.dump({b"data": rng.integers(0, 256, (4, 3072), dtype=np.uint8),
                         b"labels": list(rng.integers(0, 10, 4))}, fh)
    Xtr, ytr, Xte, yte = load_cifar10(tmp_path)
    assert Xtr.shape == (20, 3072) and Xte.shape == (4, 3072)


class _Planted:
    """A pickle that would run code when loaded (os.system on unpickling)."""

    def __reduce__(self):
        import os

        return (os.system, ("touch PLANTED_RAN",))


@pytest.mark.parametrize("payload", ["code", "layout"])
def test_cifar_reader_refuses_planted_and_unexpected_files(tmp_path, monkeypatch, payload):
    """A batch file that names another global (it would run code) is refused before anything runs; a pickle with
    another layout is refused with one line naming the file."""
    monkeypatch.chdir(tmp_path)
    base = tmp_path / "cifar-10-batches-py"
    base.mkdir()
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        with open(base / name, "wb") as fh:
            pickle.dump({b"data": rng.integers(0, 256, (4, 3072), dtype=np.uint8), b"labels": [1, 2, 3, 4]}, fh)
    with open(base / "data_batch_3", "wb") as fh:
        pickle.dump(_Planted() if payload == "code" else {b"data": np.zeros((4, 10)), b"labels": [0] * 4}, fh)
    with pytest.raises(ValueError, match=r"data_batch_3 is not a CIFAR-10 python batch"):
        load_cifar10(tmp_path)
    assert not (tmp_path / "PLANTED_RAN").exists()
