"""CIFAR-10 with a two-hidden-layer sigmoidal net (the paper's Fig. 7 setting; theory page §2 figure settings, §3):
codes in both hidden layers on real images, on the training and on the test images, and the generalization of the
sampled mean predictor against the NNGP (lazy, N → ∞) predictor.

Run: ``python -m reproduce cifar10 --size ci|cpu|paper [--root DIR] [--gp-max-p P] [--overwrite]``:

    python -m reproduce cifar10 --root DIR --size paper     # N = 1000, P = 50 000, N0 = 3072, m = 10 (one GPU)
    python -m reproduce cifar10 --root DIR --size cpu       # N = 100, P = 1000 (a 2-core CPU, about an hour)
    python -m reproduce cifar10 --root DIR --size ci        # N = 20, P = 60: a smoke run (the tests use fake files)

Data: CIFAR-10 read from local files (``bnnzoo.tasks.cifar10_task``: ``cifar10.npz`` or the python batches in
``DIR``, default $BNNZOO_CIFAR10 or ~/.bnnzoo/data/cifar10; bnnzoo downloads nothing), all ten classes, images
centred and scaled to mean xᵀx/N0 = 1, targets y+ = 1 / y− = −1/10, training and test images drawn at random.
Net: two hidden layers of width N, the paper's sigmoid, non-lazy readout, σ_a² = 1/P (the sigmoidal rule),
rescaled temperature T = 0.01; 4 SNAPER chains from prior draws, draws streamed in chunks.

Storage at the paper's size: the preactivations of 50 000 images × 1000 units per layer do not fit in memory for
every draw, so nothing but the weights is recorded, W1 and W2 on every ``thin``-th kept draw only, and the
preactivations of both layers are recomputed after sampling on ``code_points`` training and test images.  The
recomputed network output is compared with the recorded output f at the same draws (``f_recompute_error``), which
checks the recomputation.

Per run (summaries only, no draws): sampler health (:func:`bnnzoo.inference.health.sampler_health`); test MSE per
output and 0/1 error of the sampled mean predictor and of the NNGP predictor of the same depth and nonlinearity with
noise T (:func:`bnnzoo.theory.gp_posterior`, computed when P ≤ ``--gp-max-p``: it solves a P × P system), the
predictor variance; per hidden layer, on the training and on the test images: the coding scheme (fraction of the
selective units on each modal code; :func:`bnnzoo.diagnostics.codes_from_preactivations`), code memory and verdict
(frozen / switching), the fraction of units selective on both sets whose modal code is the same on both; the CKA of
the posterior-averaged feature-layer kernel on the test images with the targets' kernel YYᵀ, next to the NNGP
prior kernel's.

Writes ``<out>/<name>.json`` (default name ``cifar10_<size>``); refuses to replace it unless ``--overwrite``.  A missing data file, a bad argument or an existing result is a one-line error before anything
compiles.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from . import _common as C

NAME = "cifar10"
CLAIMS = ("E3",)
T = 0.01
Y_NEG = -0.1
SIZES = {
    # N, P, P_test, warm-up, kept draws, W thinning (divides the chunk of 100), images for the codes
    "ci": dict(N=20, P=60, P_test=60, warmup=100, samples=100, thin=10, code_points=60),
    "cpu": dict(N=100, P=1000, P_test=1000, warmup=500, samples=300, thin=10, code_points=1000),
    "paper": dict(N=1000, P=50_000, P_test=10_000, warmup=1000, samples=500, thin=50, code_points=2000),
}


def preactivations(W1, W2, X, phi):
    """z1 (chain, draw, N, n) = W1 xᵀ/√N0 and z2 = W2 φ(z1)/√N for weights W1 (chain, draw, N, N0), W2 (chain,
    draw, N, N) and inputs X (n, N0): the forward pass of ``bnnzoo.models.fcn``."""
    z1 = np.einsum("cdni,pi->cdnp", W1, X, optimize=True) / np.sqrt(X.shape[1])
    z2 = np.einsum("cdnk,cdkp->cdnp", W2, phi(z1), optimize=True) / np.sqrt(W1.shape[2])
    return z1, z2


def _scheme(c) -> dict:
    return {k: round(float(v), 4) for k, v in sorted(c.scheme_fraction.items(), key=lambda kv: -kv[1])}


def analyse(run, task, s: dict, gp_max_p: int) -> dict:
    """Summaries of one run (module docstring)."""
    from bnnzoo import azcompat, run_config, theory
    from bnnzoo.diagnostics._data import np_activation
    from bnnzoo.diagnostics.codes import codes_from_preactivations
    from bnnzoo.diagnostics.kernels import cka

    phi = np_activation("sigmoid")
    out = dict(health=C.health_summary(run))
    f_test = azcompat.get_group(run, "predictions")["f"].values                # (chain, draw, test, class)
    flat = f_test.reshape((-1,) + f_test.shape[2:])
    f_mean = flat.mean(0)
    g_s = theory.gp_generalization(f_mean, task.Y_test, task.labels_test)
    out.update(test_mse=g_s.mse, test_error=g_s.class_error, predictor_variance=float(flat.var(0).mean()),
               test_error_per_class=g_s.class_error_per_class.tolist(),
               sigma_a2=float(run_config(run)["model_kwargs"]["sigma_a2"]))
    out["gp_computed"] = task.P <= gp_max_p                                    # the NNGP solves a P × P system
    if out["gp_computed"]:
        gp = theory.gp_posterior(task.X, task.Y, task.X_test, nonlinearity="sigmoid", depth=2, temperature=T,
                                 sigma_a2=1.0, Y_test=task.Y_test, labels_test=task.labels_test)
        out.update(gp_test_mse=gp.generalization.mse, gp_test_error=gp.generalization.class_error,
                   gp_predictor_variance=float(np.mean(gp.var)),
                   rel_diff_vs_gp=float(np.linalg.norm(f_mean - gp.mean) / np.linalg.norm(gp.mean)))
    # the preactivations of both layers on code_points images, from the thinned weights
    th = azcompat.get_group(run, "posterior_thinned")
    W1, W2 = np.asarray(th["W1"].values, float), np.asarray(th["W2"].values, float)
    idx = np.asarray(th[th["W1"].dims[1]].values, int)                          # kept-draw index of each W draw
    post = azcompat.get_group(run, "posterior")
    n = min(s["code_points"], task.P)
    # index before converting: at the paper's size f holds 4 × 500 × 50 000 × 10 values
    a = np.asarray(post["a"].values[:, idx], float)                             # (chain, draw_k, N, m)
    f_rec = np.asarray(post["f"].values[:, idx, :n], float)                     # (chain, draw_k, n, m)
    z1, z2 = preactivations(W1, W2, task.X[:n], phi)
    f_re = np.einsum("cdnp,cdnm->cdpm", phi(z2), a, optimize=True) / W1.shape[2]   # non-lazy readout 1/N
    out["f_recompute_error"] = float(np.max(np.abs(f_re - f_rec)) / max(np.max(np.abs(f_rec)), 1e-12))
    n_te = min(s["code_points"], task.X_test.shape[0])
    z1_te, z2_te = preactivations(W1, W2, task.X_test[:n_te], phi)
    layers = {}
    for l, (ztr, zte) in enumerate(((z1, z1_te), (z2, z2_te)), start=1):
        c_tr = codes_from_preactivations(ztr, task.labels[:n], task.m, layer=l, activation="sigmoid", phi=phi)
        c_te = codes_from_preactivations(zte, task.labels_test[:n_te], task.m, layer=l, activation="sigmoid",
                                         phi=phi)
        sel = c_tr.selective.astype(bool) & c_te.selective.astype(bool)
        layers[l] = dict(
            train=dict(scheme=_scheme(c_tr), n_selective=c_tr.n_selective, n_units=c_tr.n_units,
                       code_memory=c_tr.code_memory, verdict=c_tr.verdict),
            test=dict(scheme=_scheme(c_te), n_selective=c_te.n_selective, n_units=c_te.n_units,
                      code_memory=c_te.code_memory, verdict=c_te.verdict),
            same_code_train_test=float((c_tr.modal == c_te.modal)[sel].mean()) if sel.any() else None,
            n_selective_both=int(sel.sum()))
    out["layers"] = layers
    p2 = phi(z2_te)
    K = np.einsum("cdnp,cdnq->pq", p2, p2, optimize=True) / (p2.shape[0] * p2.shape[1] * p2.shape[2])
    Yt = task.Y_test[:n_te]
    out.update(code_points=n, code_points_test=n_te, w_draws_per_chain=int(W1.shape[1]),
               feature_kernel_cka_test=cka(K, Yt @ Yt.T),
               feature_kernel_cka_test_prior=cka(theory.nngp_kernel(task.X_test[:n_te], nonlinearity="sigmoid",
                                                                    depth=2), Yt @ Yt.T))
    return out


def run(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--root", default=None,
                   help="folder (or .npz file) with the local CIFAR-10 files (default $BNNZOO_CIFAR10 or "
                        "~/.bnnzoo/data/cifar10)")
    p.add_argument("--gp-max-p", type=int, default=20_000, help="compute the NNGP baseline only when P <= this")
    args = p.parse_args(argv)
    C.check_args(args)
    if args.gp_max_p < 0:
        raise ValueError(f"--gp-max-p must be >= 0, got {args.gp_max_p}")
    s = SIZES[args.size]
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)

    from bnnzoo.tasks import cifar10_task

    root = args.root if args.root is not None else os.environ.get("BNNZOO_CIFAR10")
    if root is not None and not Path(root).exists():
        raise FileNotFoundError(f"--root: {root} does not exist")
    task = cifar10_task(root, P=s["P"], P_test=s["P_test"], y_neg=Y_NEG, seed=args.seed)
    if task.P < s["P"] or task.X_test.shape[0] < s["P_test"]:
        raise ValueError(f"--root: the files hold {task.P} training / {task.X_test.shape[0]} test images, "
                         f"size {args.size} needs {s['P']} / {s['P_test']}")
    import bnnzoo

    warnings.simplefilter("ignore")
    prov = C.provenance(args, argv)
    res = dict(provenance=prov, size=args.size, settings=dict(s, chains=C.CHAINS, gp_max_p=args.gp_max_p),
               temperature=T, y_neg=Y_NEG, result=None)
    C.log(f"sampling N = {s['N']}, P = {s['P']}")
    t0 = time.time()
    chunk = min(100, s["samples"])
    sampled = bnnzoo.sample("sigmoidal", task, width=s["N"], depth=2, temperature=T, num_chains=C.CHAINS,
                            num_warmup=s["warmup"], num_samples=s["samples"], seed=args.seed, sampler="snaper",
                            exclude=(), site_thinning={"W1": s["thin"], "W2": s["thin"]}, chunk_size=chunk,
                            progress=args.progress)
    res["sampling_s"] = time.time() - t0
    C.log(f"sampled in {res['sampling_s']:.0f} s; analysing")
    res["result"] = analyse(sampled, task, s, args.gp_max_p)
    res["wall_s"] = time.time() - t0
    files.write(res)
    C.log(f"{NAME}: wrote {files.json}")
    return 0
