"""The per-draw summaries the fcn model computes in the sampling loop (bnnzoo.models.summaries) against the
diagnostics' own NumPy definitions on the same draw's preactivations: class means, mean squares, kernels, and D_LR,
NC1 and the CKA with YYᵀ recovered from the recorded projections of the centred kernel.  Tolerance: float32
rounding (relative 1e-5, 1e-4 for the recovered scalars; the centred kernel is formed from centred activations, so
the sigmoid's large mean costs no precision)."""

import numpy as np
import pytest
from numpyro import handlers

import bnnzoo
from bnnzoo.diagnostics._data import class_means
from bnnzoo.diagnostics.kernels import cka, d_lr, nc1, richness_from_projections
from bnnzoo.models.activations import np_activation
from bnnzoo.models.fcn import fcn, fcn_dims


@pytest.mark.parametrize("activation,y_neg,depth", [("sigmoid", 0.5, 1), ("relu", -0.5, 2), ("linear", 0.0, 1)])
def test_summaries_equal_the_numpy_definitions(activation, y_neg, depth):
    task = bnnzoo.toy_task(P=30, y_neg=y_neg)
    N, m = 40, task.Y.shape[1]
    tr = handlers.trace(handlers.seed(fcn, 1)).get_trace(task.X, task.Y, width=N, depth=depth, activation=activation,
                                                         record=("summaries", "kernels", "z"))
    v = {k: np.asarray(s["value"], float) for k, s in tr.items()}
    phi = np_activation(activation)
    rank = int(np.linalg.matrix_rank(task.Y - task.Y.mean(0)))
    close = dict(rtol=1e-5, atol=1e-5)
    for l in range(1, depth + 1):
        z = v[f"z{l}"]
        h = phi(z)
        np.testing.assert_allclose(v[f"zbar{l}"], class_means(z, task.labels, m), **close)
        np.testing.assert_allclose(v[f"hbar{l}"], class_means(h, task.labels, m), **close)
        np.testing.assert_allclose(v[f"zsq{l}"], np.mean(z**2, -1), **close)
        np.testing.assert_allclose(v[f"K{l}"], h.T @ h / N, **close)
        np.testing.assert_allclose(v[f"Kz{l}"], z.T @ z / N, **close)
        proj = [v[f"{p}{l}"] for p in ("kc_ff", "kc_yy", "kc_mm", "kc_mw", "kc_norm")]
        got = richness_from_projections(v["f"], task.Y, *proj, rank=rank)
        assert got[0] == pytest.approx(d_lr(h.T, v["f"], rank=rank), rel=1e-4)
        assert got[1] == pytest.approx(nc1(h.T, task.labels), rel=1e-4)
        assert got[2] == pytest.approx(cka(h.T @ h / N, task.Y @ task.Y.T), rel=1e-4)
    dims = fcn_dims(depth, ("summaries", "kernels"))
    assert dims["zbar1"] == ["neuron", "class"] and dims["zsq1"] == ["neuron"] and dims["kc_norm1"] == []
    assert dims["kc_mm1"] == ["class", "class_b"]
    assert dims["K1"] == ["point", "point_b"] and "z1" not in dims


def test_unknown_record_names_the_summaries():
    task = bnnzoo.toy_task(P=10)
    with pytest.raises(ValueError, match="'summaries', 'kernels', 'z'"):
        fcn(task.X, task.Y, width=4, record=("zz",))
