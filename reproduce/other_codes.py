"""The binary task of the paper's Fig. 1 and the sparse codes of softplus and ReLU² (theory page §1–§3).

Two parts (``--parts``):

* ``binary`` (Fig. 1): one hidden layer, m = 1 output, targets y = ±1 on two classes of half the points each, N0 = P
  + 10; a linear, a sigmoidal and a ReLU net.  For each: the coding scheme as :func:`bnnzoo.diagnose` names it
  (``sparse`` when every chain has outlier neurons, else ``redundant`` when the readout posterior has two or more
  branches, else ``analog``), the fraction of units per code (codes over the two classes: ``"10"`` = active on the
  y = +1 class only), the readout branches (BIC) and outliers, readout ergodicity, sampler health with the R̂ of the
  permutation-invariant observables, and the posterior feature kernel (Fig. 1e: CKA with yyᵀ, learned part,
  class blocks).  Theory computed here: the linear readout second moment U against the exact
  saddle point (``bnnzoo.theory.linear.linear_saddle_point``, N → ∞); the sigmoidal code fractions against the
  single-neuron mean-field branch masses (``bnnzoo.theory.meanfield.single_neuron_meanfield``); the linear kernel
  against the saddle point's K1 and the sigmoidal kernel's class blocks against the mean field's.
* ``sparse``: softplus log(1 + eᶻ) and max(0, z)² nets on the toy task with the ReLU targets (classes ½, ¼, ¼,
  y+ / y− = 1 / −½, m = 3, N0 = P + 20): outliers per chain and per class (theory for ReLU: at least m − 1, on the
  toy task one per class), outlier |a| and preactivation against the bulk (ReLU: ratio of order √N), how many units
  are class-selective (a task-agnostic bulk leaves only the outliers selective), health.

Sizes: ``ci`` N = P = 16 (the ReLU-like nets 24); ``cpu`` N = P = 60; ``paper`` N = P = 500 (the paper's Fig. 1
and Fig. 2 sizes); ``--width`` sets another N = P (every net) with the size's warm-up and draws.
Run: ``python -m reproduce other_codes --size ci|cpu|paper [--parts binary,sparse] [--nets ...] [--width N]
[--overwrite]``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from . import _common as C

NAME = "other_codes"
CLAIMS = ("B1", "B2", "B3")
PARTS = {"binary": ("linear", "sigmoidal", "relu"), "sparse": ("softplus", "relu2")}
NETS = PARTS["binary"] + PARTS["sparse"]
ENTRY = {"linear": "deep_linear", "sigmoidal": "sigmoidal", "relu": "relu", "softplus": "relu", "relu2": "relu"}
ACTIVATION = {"linear": "linear", "sigmoidal": "sigmoid", "relu": "relu", "softplus": "softplus", "relu2": "relu2"}
SPARSE_LIKE = ("relu", "softplus", "relu2")  # unbounded nets: longer warm-up (the outliers form slowly)
# N = P of the nets, N_sparse of the ReLU-like ones.  At ci the ReLU-like nets run at N = P = 24 with 1000 warm-up
# steps: at N = 16 the binary ReLU net's two outlier roles hop between units within the 100 draws (4 of 4 seeds left
# a chain without an outlier of one sign), and 200 warm-up steps left some chains at N = 20-32 in split states of
# several medium units (readout and preactivation under the outlier threshold), which merged by 1000 steps.
SIZES = {
    "ci": dict(N=16, N_sparse=24, warmup=150, warmup_sparse=1000, samples=100, thin_z=1),
    "cpu": dict(N=60, N_sparse=60, warmup=400, warmup_sparse=800, samples=300, thin_z=1),
    "paper": dict(N=500, N_sparse=500, warmup=1000, warmup_sparse=3000, samples=500, thin_z=5),
}


def width_of(net: str, s: dict) -> int:
    """N = P of ``net`` under the settings ``s`` (``N_sparse`` for the ReLU-like nets)."""
    return s["N_sparse"] if net in SPARSE_LIKE else s["N"]


def part_of(net: str) -> str:
    """``"binary"`` or ``"sparse"``: the part a net belongs to."""
    return "binary" if net in PARTS["binary"] else "sparse"


def make_task(net: str, P: int):
    """The binary task (m = 1, ±1, N0 = P + 10) or the toy task with the ReLU targets (N0 = P + 20)."""
    from bnnzoo.tasks import binary_toy_task, toy_task

    if part_of(net) == "binary":
        return binary_toy_task(P=P, N0=P + 10)
    return toy_task(P=P, N0=P + 20, y_pos=1.0, y_neg=-0.5)


def sample_net(net: str, task, N: int, warmup: int, samples: int, seed: int, thin_z: int, progress: bool):
    """SNAPER, 4 vectorised chains from prior draws, draws streamed in chunks of 100, W1 not recorded."""
    import bnnzoo

    chunk = min(100, samples)
    kw = dict(site_thinning={"z1": thin_z}) if thin_z > 1 else {}
    t0 = time.time()
    run = bnnzoo.sample(ENTRY[net], task, num_chains=C.CHAINS, num_warmup=warmup, num_samples=samples, seed=seed,
                        sampler="snaper", record=("z",), exclude=("W1",), chunk_size=chunk, progress=progress,
                        width=N, activation=ACTIVATION[net], **kw)
    return run, time.time() - t0


def class_codes(rd) -> tuple[dict, np.ndarray]:
    """Codes over the task's classes (not its outputs: the binary task has m = 1 output and two classes):
    :func:`bnnzoo.diagnostics.codes.codes_from_preactivations` on the feature layer; fractions of all units per
    modal code with binomial standard errors, per chain, and the selective units (all units for the fraction)."""
    from bnnzoo.diagnostics.codes import code_string, codes_from_preactivations

    n_cls = int(np.max(rd.labels)) + 1
    cr = codes_from_preactivations(rd.z(1), rd.labels, n_cls, layer=1, activation=rd.activation, phi=rd.phi,
                                   analog=rd.activation == "linear")
    modal = np.vectorize(lambda k: code_string(int(k), n_cls))(np.asarray(cr.modal))  # (chain, neuron)
    n = modal.size
    frac, se, per_chain = {}, {}, {}
    for c in sorted(set(modal.ravel().tolist())):
        p = float(np.mean(modal == c))
        frac[c], se[c] = p, math.sqrt(max(p * (1 - p), 1.0 / n) / n)
        per_chain[c] = [float(np.mean(modal[k] == c)) for k in range(modal.shape[0])]
    sel = np.asarray(cr.selective, bool)
    return dict(fraction=frac, fraction_se=se, per_chain=per_chain, verdict=cr.verdict, kind=cr.kind,
                code_memory=cr.code_memory, switching_rate=cr.switching_rate, n_units=n,
                selective_per_chain=sel.sum(1).tolist(), n_selective=int(sel.sum()),
                selective_scheme=dict(cr.scheme)), modal


def outliers(rd, n_cls: int) -> dict:
    """:func:`bnnzoo.diagnostics.branches.find_outliers` with counts per chain and class.  The class of an outlier
    is its largest readout component (m ≥ 2) or, with one output, the sign of its readout (+ → the y = +1 class 0,
    − → the y = −1 class 1)."""
    from bnnzoo.diagnostics.branches import find_outliers

    o = find_outliers(rd.a, rd.z(1))
    flag = o.is_outlier.astype(bool)
    if rd.m == 1:
        cls = np.where(np.asarray(o.outlier_readout)[:, 0] > 0, 0, 1)
    else:
        cls = np.asarray(o.outlier_class)
    chains = np.asarray(o.outlier_chain)
    per_class = [[int(np.sum((chains == c) & (cls == k))) for k in range(n_cls)] for c in range(rd.n_chains)]
    r_ratio = float(np.median(o.readout_scale[flag]) / o.bulk_readout) if flag.any() else float("nan")
    z_ratio = float(np.median(o.preact_scale[flag]) / o.bulk_preactivation) if flag.any() else float("nan")
    return dict(n_outliers=o.n_outliers, per_chain=list(o.per_chain), per_chain_class=per_class,
                one_per_class=all(all(v == 1 for v in row) for row in per_class),
                n_readout=o.n_readout, n_preactivation=o.n_preactivation, threshold_factor=o.threshold_factor,
                bulk_readout=o.bulk_readout, bulk_preactivation=o.bulk_preactivation,
                readout=o.readout_scale[flag].tolist(), preactivation=o.preact_scale[flag].tolist(),
                readout_ratio=r_ratio, preactivation_ratio=z_ratio,
                max_readout_ratio=float(np.max(o.readout_scale) / o.bulk_readout), sqrt_N=math.sqrt(rd.width))


def net_entry(net: str, s: dict, args) -> dict:
    """Sample ``net`` with the settings ``s`` and return its summary (JSON values): health, coding scheme (the
    rule of :mod:`bnnzoo.diagnostics.analyses`), ergodicity, codes, branches, outliers and the theory comparison."""
    from bnnzoo.diagnostics.branches import readout_branches
    from bnnzoo.diagnostics.ergodicity import ergodicity
    from bnnzoo.diagnostics.analyses import coding_scheme

    N = width_of(net, s)
    warmup = s["warmup_sparse"] if net in SPARSE_LIKE else s["warmup"]
    task = make_task(net, N)
    run, dt = sample_net(net, task, N, warmup, s["samples"], args.seed, s["thin_z"], args.progress)
    rd = C.run_data_of(run)
    n_cls = int(np.max(rd.labels)) + 1
    codes, modal = class_codes(rd)
    b = readout_branches(rd, codes=modal)
    erg = ergodicity(rd.a, "a", n_boot=50)
    e = dict(net=net, part=part_of(net), activation=ACTIVATION[net], N=N, P=N, N0=task.X.shape[1], m=rd.m,
             classes=n_cls, y=sorted(set(np.asarray(task.Y).ravel().tolist()), reverse=True), warmup=warmup,
             samples=s["samples"], seconds=round(dt, 1), sigma_a2=rd.sigma_a2, temperature=rd.temperature,
             health=C.health_summary(run), coding_scheme=coding_scheme(b, n_cls),
             ergodicity=dict(ratio=erg.ratio, ratio_se=erg.ratio_se, verdict=erg.verdict), codes=codes,
             branches=dict(n_branches=b.n_branches, masses=b.masses.tolist(), mass_se=b.mass_se.tolist(),
                           centres=b.centres.tolist(), codes=list(b.codes), silhouette=b.silhouette),
             outliers=outliers(rd, n_cls))
    if e["part"] == "binary":
        e["kernel"] = kernel_summary(run, rd, task, net)
    if net == "linear":
        e.update(C.linear_U_check(rd, task))
    elif net == "sigmoidal":
        from bnnzoo.theory.meanfield import single_neuron_meanfield

        th = single_neuron_meanfield(task.X, task.Y, labels=task.labels, nonlinearity="sigmoid",
                                     temperature=rd.temperature, sigma_a2=rd.sigma_a2)
        mf = {str(c): float(p) for c, p in zip(th.branch_code, th.branch_mass)}
        fr = codes["fraction"]
        e.update(meanfield_mass=mf, meanfield_status=th.status,
                 tv_to_meanfield=0.5 * sum(abs(fr.get(c, 0.0) - mf.get(c, 0.0)) for c in set(mf) | set(fr)))
    return e


def kernel_summary(run, rd, task, net: str) -> dict:
    """The posterior feature kernel K = φφᵀ/N (Fig. 1e): CKA with the targets' kernel yyᵀ (± s.e. over blocks of
    draws) against the NNGP prior kernel's, the learned part ‖K − K_prior‖/‖K‖, the class-block means of K
    (off-diagonal entries; the diagonal per class), and the theory where there is one: the linear net's exact
    N → ∞ kernel K1 (``linear_saddle_point``), the sigmoidal net's mean-field class blocks (``feature_kernel``)."""
    from bnnzoo.diagnostics.kernels import cka, kernels_and_richness

    k = kernels_and_richness(run)
    K, Kp = np.asarray(k.K[0]), np.asarray(k.K_prior[0])
    Y = np.asarray(task.Y, float)
    lab = np.asarray(rd.labels)
    n_cls = int(lab.max()) + 1
    off = ~np.eye(len(lab), dtype=bool)
    block = np.array([[K[np.ix_(lab == c, lab == d)][off[np.ix_(lab == c, lab == d)]].mean() for d in range(n_cls)]
                      for c in range(n_cls)])
    diag = np.array([np.diag(K)[lab == c].mean() for c in range(n_cls)])
    out = dict(target_cka=float(k.target_cka[0]), target_cka_se=float(k.target_cka_se[0]),
               prior_target_cka=float(cka(Kp, Y @ Y.T)), learned_fraction=float(k.learned_fraction[0]),
               block=block.tolist(), diag=diag.tolist())
    if net == "linear":
        from bnnzoo.theory.linear import linear_saddle_point

        th = linear_saddle_point(task.X, task.Y, temperature=rd.temperature, sigma_a2=rd.sigma_a2)
        out["theory_relative_error"] = float(np.linalg.norm(K - th.K1) / np.linalg.norm(th.K1))
    elif net == "sigmoidal":
        from bnnzoo.theory.meanfield import single_neuron_meanfield

        th = single_neuron_meanfield(task.X, task.Y, labels=task.labels, nonlinearity="sigmoid",
                                     temperature=rd.temperature, sigma_a2=rd.sigma_a2)
        tb, td = np.asarray(th.feature_kernel), np.asarray(th.feature_kernel_diag)
        out.update(theory_block=tb.tolist(), theory_diag=td.tolist(),
                   theory_relative_error=float(np.linalg.norm(block - tb) / np.linalg.norm(tb)))
    return out


def run(argv=None) -> int:
    argv = [] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--parts", default="binary,sparse", help="comma-separated: binary, sparse (default both)")
    p.add_argument("--nets", default=None,
                   help=f"comma-separated subset of {', '.join(NETS)} (default: every net of --parts)")
    p.add_argument("--width", type=int, default=None,
                   help="N = P of every net instead of the size's (>= 8; the --size keeps its warm-up and draws)")
    args = p.parse_args(argv)
    C.check_args(args)
    if args.width is not None and args.width < 8:
        raise ValueError(f"--width must be an integer >= 8, got {args.width}")
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    if not parts or set(parts) - set(PARTS):
        raise ValueError(f"--parts must name some of {', '.join(PARTS)}, got {args.parts!r}")
    allowed = [n for p_ in PARTS for n in PARTS[p_] if p_ in parts]
    if args.nets is None:
        nets = allowed
    else:
        nets = [x.strip() for x in args.nets.split(",") if x.strip()]
        if not nets or set(nets) - set(allowed):
            raise ValueError(f"--nets must name some of {', '.join(allowed)} (the nets of --parts), "
                             f"got {args.nets!r}")
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)
    s = dict(SIZES[args.size], **({"N": args.width, "N_sparse": args.width} if args.width is not None else {}))
    summary = dict(provenance=C.provenance(args, argv), settings=s, nets=[])
    for i, net in enumerate(nets):
        C.log(f"{NAME}: [{i + 1}/{len(nets)}] {net} ({part_of(net)}), N = P = {width_of(net, s)}")
        e = net_entry(net, s, args)
        summary["nets"].append(e)
        files.write(summary)
        C.log(f"{NAME}: {net} done in {e['seconds']} s: health {e['health']['status']}, scheme "
              f"{e['coding_scheme']}")
    C.log(f"{NAME}: wrote {files.json}")
    return 0
