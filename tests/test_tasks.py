"""Tasks: the paper's toy task, bundled digits, and local-file loaders."""

import gzip
import pickle

import numpy as np
import pytest

from bnnzoo.tasks import Task, binary_toy_task, class_sizes, digits_task, load_cifar10, load_mnist, mnist_task, toy_task


def test_toy_task_is_orthogonal_with_paper_classes():
    t = toy_task(P=100, N0=120, y_pos=1.0, y_neg=0.5, P_test=8, seed=3)
    assert t.X.shape == (100, 120) and t.Y.shape == (100, 3)
    K = np.concatenate([t.X, t.X_test]) @ np.concatenate([t.X, t.X_test]).T / t.N0
    np.testing.assert_allclose(K, np.eye(108), atol=1e-10)
    assert np.bincount(t.labels).tolist() == [50, 25, 25]
    assert (t.labels[:50] == 0).all() and (t.labels[50:75] == 1).all()
    assert set(np.unique(t.Y)) == {0.5, 1.0}
    np.testing.assert_array_equal(t.Y.argmax(1), t.labels)
    np.testing.assert_allclose(t.K0, np.eye(100), atol=1e-10)


def test_binary_toy_task():
    t = binary_toy_task(P=10)
    assert t.Y.shape == (10, 1)
    assert t.Y[:5, 0].tolist() == [1.0] * 5 and t.Y[5:, 0].tolist() == [-1.0] * 5


def test_class_sizes_sum_and_errors():
    assert class_sizes(7, [0.5, 0.25, 0.25]) == [3, 2, 2]  # largest remainders 0.75, 0.75 win
    assert class_sizes(100, [0.5, 0.25, 0.25]) == [50, 25, 25]
    with pytest.raises(ValueError, match="ratios"):
        class_sizes(10, [0.5, -1])
    with pytest.raises(ValueError, match="too small"):
        class_sizes(2, [0.5, 0.25, 0.25])
    with pytest.raises(ValueError, match="N0"):
        toy_task(P=50, N0=40)


def test_task_validation():
    with pytest.raises(ValueError, match="X"):
        Task(X=np.ones(3), Y=np.ones((3, 1)), labels=np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        Task(X=np.full((3, 2), np.nan), Y=np.ones((3, 1)), labels=np.zeros(3))
    with pytest.raises(ValueError, match="rows"):
        Task(X=np.ones((3, 2)), Y=np.ones((4, 1)), labels=np.zeros(3))


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


def test_task_labels_optional():
    X = np.eye(4, 6)
    # one-hot y+ / y- targets: labels are the argmax
    Y = np.full((4, 3), -0.5)
    Y[[0, 1, 2, 3], [2, 0, 1, 2]] = 1.0
    assert Task(X=X, Y=Y).labels.tolist() == [2, 0, 1, 2]
    # regression targets (or one output): one group
    t = Task(X=X, Y=np.arange(4.0)[:, None], X_test=X[:2], Y_test=np.ones((2, 1)))
    assert t.labels.tolist() == [0, 0, 0, 0] and t.labels_test.tolist() == [0, 0]
    Yr = np.random.default_rng(0).standard_normal((4, 3))  # several real-valued outputs: not one-hot
    assert Task(X=X, Y=Yr).labels.tolist() == [0, 0, 0, 0]
    assert Task(X=X, Y=Y, labels=[2, 0, 1, 2]).labels.dtype.kind == "i"


def test_task_labels_validated():
    X, Y = np.eye(4, 6), np.ones((4, 3))
    with pytest.raises(ValueError, match=r"labels must be integers in 0\.\.2, got dtype float64"):
        Task(X=X, Y=Y, labels=np.zeros(4))
    with pytest.raises(ValueError, match=r"labels must be integers in 0\.\.2 \(m = 3 outputs\), got 3"):
        Task(X=X, Y=Y, labels=[0, 1, 2, 3])
    with pytest.raises(ValueError, match="labels must be integers"):
        Task(X=X, Y=Y, labels=[0, -1, 2, 2])
    with pytest.raises(ValueError, match="labels must be integers"):
        Task(X=X, Y=Y, labels=np.array([True, False, True, False]))
    with pytest.raises(ValueError, match=r"labels must have shape \(4,\)"):
        Task(X=X, Y=Y, labels=[0, 1, 2])
    with pytest.raises(ValueError, match="labels_test must be integers"):
        Task(X=X, Y=Y, labels=[0, 1, 2, 2], X_test=X[:2], Y_test=Y[:2], labels_test=[0, 5])
    with pytest.raises(ValueError, match="labels_test given without a test set"):
        Task(X=X, Y=Y, labels_test=[0, 1])
    # one output codes two groups by its sign: labels 0 and 1 are valid there, 2 is not
    assert Task(X=X, Y=np.ones((4, 1)), labels=[0, 1, 1, 0]).labels.tolist() == [0, 1, 1, 0]
    with pytest.raises(ValueError, match=r"0\.\.1"):
        Task(X=X, Y=np.ones((4, 1)), labels=[0, 1, 2, 0])
