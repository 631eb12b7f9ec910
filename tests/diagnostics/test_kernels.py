"""bnnzoo.diagnostics.kernels: CKA, D_LR and NC1 on arrays with known values (no NUTS sampling)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bnnzoo.diagnostics import cka, d_lr, nc1
from tests._helpers import rng


def test_cka_d_lr_nc1_known_values():
    r = rng()
    F = r.standard_normal((50, 7))
    K = F @ F.T
    assert cka(K, K) == pytest.approx(1.0) and cka(K, 3 * K + 0) == pytest.approx(1.0)
    # features that span exactly the centred outputs with equal singular values: D_LR = 0
    n = 60
    lab = np.repeat(np.arange(3), n // 3)
    Y = np.eye(3)[lab]
    Q, _ = np.linalg.qr(Y - Y.mean(0))
    assert d_lr(Q[:, :2] * 5.0, Y) == pytest.approx(0.0, abs=1e-10)
    # an isotropic p-dimensional representation that contains the output span: D_LR = 1 − √(r/p)
    p = 12
    B, _ = np.linalg.qr(np.concatenate([Q[:, :2], r.standard_normal((n, p - 2))], axis=1))
    B = B - B.mean(0)
    B, _ = np.linalg.qr(B)
    assert d_lr(B, Y) == pytest.approx(1 - math.sqrt(2 / p), abs=1e-8)
    # noisy outputs have centred rank 3: counting the noise direction scores the collapsed features 1 − √(2/3),
    # keeping the targets' rank 2 scores them 0
    noisy = Y + 1e-3 * r.standard_normal(Y.shape)
    assert d_lr(Q[:, :2], noisy) == pytest.approx(1 - math.sqrt(2 / 3), abs=1e-4)
    assert d_lr(Q[:, :2], noisy, rank=2) == pytest.approx(0.0, abs=1e-4)
    with pytest.raises(ValueError, match="rank"):
        d_lr(B, Y, rank=0)
    # NC1 by hand: 1-D features, class means ±1, within-class spread e → NC1 = e²/C
    e = 0.2
    feats = np.array([[-1 - e], [-1 + e], [1 - e], [1 + e]])
    assert nc1(feats, np.array([0, 0, 1, 1])) == pytest.approx(e**2 / 2)
    assert nc1(np.eye(3)[lab], lab) == pytest.approx(0.0, abs=1e-12)
