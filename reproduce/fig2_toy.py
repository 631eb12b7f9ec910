"""The paper's Fig. 2 setting (theory page §2–§3): one-hidden-layer linear, sigmoidal and ReLU nets on the toy task.

* Linear (y+ / y− = 1 / 0): the readout second moment U = aᵀa/N against the exact saddle point of the linear theory
  (``bnnzoo.theory.linear.linear_saddle_point``, N → ∞ at the run's T), and ergodicity of the readout (the ratio of a
  neuron's time variance to the pooled variance: 1 when every neuron explores the whole marginal).
* Sigmoidal (1 / ½): fraction of units per code against the single-neuron mean-field branch masses, readout branches
  (BIC), frozen codes and broken ergodicity.
* ReLU (1 / −½): outlier count per chain (theory: at least m − 1, on the toy task one per class) and the outliers'
  readout and preactivation sizes against the bulk (theory: ratio of order √N).

The codes in detail, per chain with the standard error over the 4 chains:

* Linear: the distribution of the class-mean strengths |z̄_i(t)| (quantiles, bimodality coefficient, largest gap
  between units) against the same numbers of the exact N → ∞ theory (analog code: a continuum, no gap); the
  identity correlation between run halves (permutation symmetry restored by the dynamics: ≈ 0).
* Sigmoidal: per code, the within-class spread of a unit's preactivations and activations (over draws and points)
  relative to the between-class variance of its class means, against the single-neuron mean field.
* ReLU: the bulk (units that are not outliers): class-selective fraction, readout ergodicity, E[a²]/σ_a², E[z²] and
  the class-mean power against a task-agnostic unit's; the outliers: count and identity in each fifth of the run,
  code memory, readout fluctuation (frozen).

Every net records the sampler health and the R̂ across chains of its permutation-invariant observables.

Sizes: ``ci`` N = P = 20 (sigmoidal 30); ``cpu`` N = P = 100; ``paper`` the paper's Fig. 2, N = P = 500 (linear
200), N0 = N + 20.
Run: ``python -m reproduce fig2_toy --size ci|cpu|paper [--nets linear,sigmoidal,relu] [--overwrite]``.
"""

from __future__ import annotations

import math

import numpy as np

from . import _common as C

NAME = "fig2_toy"
CLAIMS = ("V1", "V2", "V3", "V4", "S1", "S2", "S3", "Q1", "Q2", "Q3", "Q4", "P1")
NETS = ("linear", "sigmoidal", "relu")
ENTRY = {"linear": "deep_linear", "sigmoidal": "sigmoidal", "relu": "relu"}
Y_NEG = {"linear": 0.0, "sigmoidal": 0.5, "relu": -0.5}
# per size and net: N = P, warm-up, kept draws; thinning of the recorded preactivations.  ci: the sigmoidal net at
# N = P = 30, where more 011 units keep their code over the run (S3's steady units: 6-20 per seed, against 3-7 at 20)
SIZES = {
    "ci": dict(N={"linear": 20, "sigmoidal": 30, "relu": 20}, warmup={"linear": 150, "sigmoidal": 150, "relu": 200},
               samples=100, thin_z=1),
    "cpu": dict(N={"linear": 100, "sigmoidal": 100, "relu": 100},
                warmup={"linear": 500, "sigmoidal": 500, "relu": 2000}, samples=500, thin_z=1),
    "paper": dict(N={"linear": 200, "sigmoidal": 500, "relu": 500},
                  warmup={"linear": 1000, "sigmoidal": 1000, "relu": 3000}, samples=500, thin_z=5),
}


def ergodicity_ratio(rd) -> dict:
    """Readout ergodicity (:func:`bnnzoo.diagnostics.ergodicity.ergodicity` on a): ratio, s.e., verdict."""
    from bnnzoo.diagnostics.ergodicity import ergodicity

    e = ergodicity(rd.a, "a", n_boot=50)
    return dict(ratio=e.ratio, ratio_se=e.ratio_se, verdict=e.verdict)


QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
STEADY = 0.9  # a unit at its modal code on at least this fraction of the draws is "steady"


_chain_mean_se = C.mean_se  # mean ± s.e. over the chains


def _bimodality_coefficient(x: np.ndarray) -> float:
    """Sarle's bimodality coefficient (skew² + 1) / kurtosis of a sample: 1/3 for a normal, 5/9 for a uniform;
    above 5/9 suggests two modes."""
    from scipy import stats

    x = np.asarray(x, float).ravel()
    return float((stats.skew(x) ** 2 + 1.0) / stats.kurtosis(x, fisher=False))


def _largest_gap(s: np.ndarray) -> np.ndarray:
    """Largest spacing between consecutive sorted values inside the 10–90 % quantile range, over that range's
    width, for every row of ``s`` (..., unit): a gap in a continuum of strengths shows as a value near 1."""
    s = np.sort(np.asarray(s, float), axis=-1)
    n = s.shape[-1]
    lo, hi = int(round(0.1 * (n - 1))), int(round(0.9 * (n - 1)))
    inner = s[..., lo:hi + 1]
    return np.max(np.diff(inner, axis=-1), axis=-1) / np.maximum(inner[..., -1] - inner[..., 0], 1e-300)


def identity_summary(rd) -> dict:
    """Permutation symmetry (V4): identity correlation ρ between run halves of the readouts and of the first-layer
    class means, per chain and mean ± s.e. over chains (0: restored, 1: every unit keeps its identity)."""
    from bnnzoo.diagnostics.symmetry import identity_correlation

    out = {}
    for name, x in (("a", rd.a), ("z1", rd.class_means(1))):
        per_chain = identity_correlation(x, n_boot=1)[0]
        mean, se = _chain_mean_se(per_chain)
        out[name] = dict(per_chain=[float(v) for v in per_chain], mean=mean, se=se)
    return out


def strength_summary(rd, task, theory_draws: int = 200_000) -> dict:
    """Analog code of the linear net (V3): the class-mean strengths |z̄_i(t)| (norm over the m classes of a unit's
    class-mean preactivations at one draw) against the N → ∞ linear theory.

    Sampled: quantiles (``QUANTILES``) of the strengths over units and draws, pooled and per chain (± s.e. over
    chains); Sarle's bimodality coefficient; the largest gap between consecutive units' strengths inside the 10–90 %
    range at one draw, relative to that range (median over draws).  Theory (docs/theory.md §4, exact saddle point
    at the run's T): a neuron's readout a ~ N(0, U) and its preactivations h | a ~ N(K0 Λᵀ a, K0), so the class
    means z̄ = B h (B averages over each class's points) are Gaussian with covariance
    B K0 Λᵀ U Λ K0 Bᵀ + B K0 Bᵀ; the same numbers are computed on ``theory_draws`` draws of |z̄| (the gap on sets
    of N draws, as many sets as the run has draws).
    """
    from bnnzoo.theory.linear import linear_saddle_point

    zb = rd.class_means(1)  # (C, D, N, m)
    s = np.linalg.norm(zb, axis=-1)  # (C, D, N)
    C, D, N = s.shape
    per_chain = np.quantile(s.reshape(C, -1), QUANTILES, axis=1).T  # (C, q)
    q_se = per_chain.std(0, ddof=1) / math.sqrt(C)
    th = linear_saddle_point(task.X, task.Y, temperature=rd.temperature, sigma_a2=rd.sigma_a2)
    X = np.asarray(task.X, float)
    K0 = X @ X.T / X.shape[1]
    labels = np.asarray(task.labels, int)
    B = (labels[None, :] == np.arange(rd.m)[:, None]).astype(float)
    B /= B.sum(1, keepdims=True)
    M = B @ K0 @ np.asarray(th.Lambda)  # (m, m): E[z̄ | a] = M a (th.Lambda holds Λᵀ, (P, m))
    cov = M @ np.asarray(th.U) @ M.T + B @ K0 @ B.T
    rng = np.random.default_rng(0)
    st = np.linalg.norm(rng.multivariate_normal(np.zeros(rd.m), cov, size=theory_draws), axis=-1)
    n_sets = min(D, theory_draws // N)
    gap_th = _largest_gap(st[: n_sets * N].reshape(n_sets, N))
    gap = _largest_gap(s)  # (C, D)
    from scipy import stats

    return dict(quantiles=list(QUANTILES), sampled=np.quantile(s, QUANTILES).tolist(), sampled_se=q_se.tolist(),
                per_chain=per_chain.tolist(), theory=np.quantile(st, QUANTILES).tolist(),
                theory_cov=cov.tolist(), mean_square=float(np.mean(s**2)),
                mean_square_se=_chain_mean_se(np.mean(s**2, axis=(1, 2)))[1],
                mean_square_theory=float(np.trace(cov)),
                ks_to_theory=float(stats.ks_2samp(s.ravel(), st).statistic),
                bimodality=_bimodality_coefficient(s), bimodality_theory=_bimodality_coefficient(st),
                largest_gap=float(np.median(gap)), largest_gap_se=_chain_mean_se(np.median(gap, axis=1))[1],
                largest_gap_theory=float(np.median(gap_th)))


def fluctuation_summary(rd) -> dict:
    """Sigmoidal units fluctuating around a class-structured mean (S3), per modal code, for the preactivations z
    and the activations φ(z) of every unit (chain, neuron).

    For one unit: the class-structured mean is its time-and-point average on each class; the *between-class*
    variance v_b is the class-size-weighted variance of those means over the classes; the *temporal* variance v_t
    is the variance over draws of one point's value, averaged over the points; the *point* variance v_p is the
    variance over a class's points of their time averages, averaged over the classes.  Reported per code (median
    over the units with that modal code, then mean ± s.e. over chains): the ratio (v_t + v_p) / v_b of the
    within-class spread to the class structure, the temporal share v_t / (v_t + v_p), and the variance share of
    the class structure v_b / (v_b + v_t + v_p); the median persistence (fraction of draws at the modal code) of the
    code's units, and each ratio's median over the *steady* units alone (persistence ≥ ``STEADY``, all chains
    pooled), which leaves out units that hop between codes.
    """
    from bnnzoo.diagnostics.codes import code_ids, code_string

    ids = code_ids(rd.class_means(1))  # (C, D, N)
    counts = np.stack([(ids == k).sum(1) for k in range(1 << rd.m)], -1)  # (C, N, code)
    modal = np.vectorize(lambda k: code_string(int(k), rd.m))(counts.argmax(-1))  # (C, N)
    persistence = counts.max(-1) / ids.shape[1]  # fraction of draws at the modal code
    labels = np.asarray(rd.labels, int)
    w = np.bincount(labels, minlength=rd.m) / labels.size
    out = {}
    for kind, x in (("z", rd.z(1)), ("phi", rd.phi(rd.z(1)))):
        xt = x.mean(1)  # (C, N, P)
        v_t = x.var(1, ddof=1).mean(-1)  # (C, N)
        cm = np.stack([xt[..., labels == c].mean(-1) for c in range(rd.m)], -1)  # (C, N, m)
        v_p = np.stack([xt[..., labels == c].var(-1, ddof=1) for c in range(rd.m)], -1) @ w
        v_b = ((cm - (cm @ w)[..., None]) ** 2) @ w
        ratios = dict(within_over_between=(v_t + v_p) / np.maximum(v_b, 1e-300),
                      temporal_share=v_t / np.maximum(v_t + v_p, 1e-300),
                      class_share=v_b / np.maximum(v_b + v_t + v_p, 1e-300))
        per_code = {}
        for code in sorted(set(modal.ravel().tolist())):
            mask = modal == code
            steady = mask & (persistence >= STEADY)
            e = dict(n_units=int(mask.sum()), persistence=float(np.median(persistence[mask])),
                     n_steady=int(steady.sum()))
            for name, r in ratios.items():
                pc = [float(np.median(r[c][mask[c]])) if mask[c].any() else None for c in range(modal.shape[0])]
                e[name], e[name + "_se"] = _chain_mean_se(pc)
                e[name + "_per_chain"] = pc
                e[name + "_steady"] = float(np.median(r[steady])) if steady.any() else float("nan")
            per_code[code] = e
        allr = {}
        for name, r in ratios.items():
            allr[name], allr[name + "_se"] = _chain_mean_se([float(np.median(r[c])) for c in range(r.shape[0])])
        out[kind] = dict(per_code=per_code, all=allr)
    out["steady_threshold"] = STEADY
    return out


def fluctuation_theory(th, class_sizes, n_hermite: int = 101) -> dict:
    """The numbers of :func:`fluctuation_summary` in the single-neuron mean field (docs/theory.md §5), per code.

    ``th`` is the :class:`bnnzoo.theory.meanfield.MeanFieldResult` of the sigmoidal net and ``class_sizes`` (m,) the
    number of points per class.  A unit with readout a has independent preactivations on the points of class c with
    the tilted law ∝ N(h | 0, 1) e^{s φ(h)}, s = λ_cᵀ a; its code has bit c set when s > 0 (then E[h] > 0).  Over
    the units of one code (the readout density restricted to the grid points with that code, a moving within its
    branch), the class mean is E_a E[h | s], a point's variance over draws E_a Var(h | s) + Var_a E[h | s] and the
    point variance of the time averages 0; the same for φ(h).
    """
    from scipy import special

    from bnnzoo.theory.meanfield import activation_moments

    g = np.asarray(th.grid, float)
    m = th.lam.shape[1]
    A = np.stack(np.meshgrid(*([g] * m), indexing="ij"), -1).reshape(-1, m)
    p = np.asarray(th.density, float).reshape(-1)
    S = A @ np.asarray(th.lam, float).T  # (G, C)
    w = np.asarray(class_sizes, float) / np.sum(class_sizes)
    # the tilted moments are smooth in s: tabulate them on a fine 1-D grid of s and interpolate
    s_tab = np.linspace(S.min(), S.max(), 4001)
    x, wh = np.polynomial.hermite_e.hermegauss(n_hermite)
    f = 0.5 * (1.0 + special.erf(math.sqrt(math.pi) / 2 * x))
    e = s_tab[:, None] * f + np.log(wh)
    q = np.exp(e - e.max(-1, keepdims=True))
    q /= q.sum(-1, keepdims=True)
    tab_h = q @ x
    tab_vh = q @ x**2 - tab_h**2
    _, tab_phi, tab_vphi = activation_moments(s_tab, "sigmoid", n_hermite=n_hermite)
    mean_h, var_h, mean_phi, var_phi = (np.interp(S, s_tab, t) for t in (tab_h, tab_vh, tab_phi, tab_vphi))
    bits = (S > 0).astype(int)
    codes = np.array(["".join(map(str, b)) for b in bits])
    out = {}
    for kind, mu, var in (("z", mean_h, var_h), ("phi", mean_phi, var_phi)):
        per_code = {}
        for code in sorted(set(codes.tolist())):
            k = codes == code
            pk = p[k] / p[k].sum()
            if p[k].sum() / p.sum() < 1e-3:
                continue
            cm = pk @ mu[k]  # (C,)
            temporal = pk @ var[k] + pk @ (mu[k] - cm) ** 2
            v_b = float(w @ (cm - w @ cm) ** 2)
            v_w = float(w @ temporal)
            per_code[code] = dict(mass=float(p[k].sum() / p.sum()), within_over_between=v_w / v_b,
                                  class_share=v_b / (v_b + v_w), class_mean=cm.tolist())
        out[kind] = per_code
    return out


def bulk_summary(rd) -> dict:
    """The ReLU bulk (Q3): units that are not outliers, per chain and mean ± s.e. over chains.

    Class-selective fraction (:mod:`bnnzoo.diagnostics.codes` criterion: median class mean beyond 3 null standard
    deviations; a task-agnostic unit is selective with probability ≪ 1); readout ergodicity ratio of the bulk alone
    (1 = every bulk unit explores the bulk marginal); E[a²]/σ_a² (readout second moment per class over the prior's);
    E[z²] (the prior's is the input norm xᵀx/N0 = 1); the class-mean power E|z̄|² over its value for units whose
    preactivations are independent of the class, q Σ_c 1/P_c with q the unit's E[z²] (1 when task-agnostic).
    """
    from bnnzoo.diagnostics.branches import find_outliers
    from bnnzoo.diagnostics.codes import neural_codes
    from bnnzoo.diagnostics.ergodicity import ergodicity

    C, N = rd.n_chains, rd.width
    out_mask = np.asarray(find_outliers(rd.a, rd.z(1)).is_outlier, bool).reshape(C, N)
    sel = np.asarray(neural_codes(rd, 1).selective, bool)
    z = rd.z(1)
    zb = rd.class_means(1)
    counts = np.bincount(np.asarray(rd.labels, int), minlength=rd.m)
    cols = dict(n_bulk=[], selective_fraction=[], n_selective_outliers=[], ergodicity=[], a2_over_prior=[], z2=[],
                class_power_over_null=[])
    for c in range(C):
        b = ~out_mask[c]
        cols["n_bulk"].append(int(b.sum()))
        cols["selective_fraction"].append(float(sel[c][b].mean()))
        cols["n_selective_outliers"].append(int(sel[c][~b].sum()))
        cols["ergodicity"].append(ergodicity(rd.a[c:c + 1][:, :, b], "a (bulk)", n_boot=0).ratio
                                  if b.sum() >= 4 else float("nan"))
        cols["a2_over_prior"].append(float(np.mean(rd.a[c][:, b] ** 2) / rd.sigma_a2))
        q = np.mean(z[c][:, b] ** 2, axis=(0, 2))  # (bulk unit,)
        cols["z2"].append(float(q.mean()))
        power = np.mean(np.sum(zb[c][:, b] ** 2, -1), axis=0)  # (bulk unit,)
        cols["class_power_over_null"].append(float(np.mean(power / (q * np.sum(1.0 / counts)))))
    res = {}
    for k, v in cols.items():
        res[k + "_per_chain"] = v
        res[k], res[k + "_se"] = _chain_mean_se(v)
    return res


def outlier_persistence(rd, n_segments: int = 5) -> dict:
    """Frozen outliers (Q4): the outliers of each fifth of the run (criterion of
    :func:`bnnzoo.diagnostics.branches.find_outliers` on that fifth), per chain: their count in every fifth and
    whether the same units are the outliers in every fifth; the code memory and switching rate of the outlier units
    (:mod:`bnnzoo.diagnostics.codes`; memory 1 = codes never change); the relative fluctuation of an outlier's
    readout norm (standard deviation over draws / mean, median over outliers)."""
    from bnnzoo.diagnostics.branches import find_outliers
    from bnnzoo.diagnostics.codes import code_ids, code_memory

    a, z = rd.a, rd.z(1)
    C, D, N, m = a.shape
    bounds = np.linspace(0, D, n_segments + 1).astype(int)
    flags = np.stack([np.asarray(find_outliers(a[:, lo:hi], z[:, lo:hi]).is_outlier, bool).reshape(C, N)
                      for lo, hi in zip(bounds[:-1], bounds[1:])], 1)  # (C, segment, N)
    whole = np.asarray(find_outliers(a, z).is_outlier, bool).reshape(C, N)
    same = [bool(all(np.array_equal(flags[c, k], whole[c]) for k in range(n_segments))) for c in range(C)]
    ids = code_ids(rd.class_means(1))  # (C, D, N)
    mem = code_memory(ids, 1 << m, whole) if whole.any() else float("nan")
    sw = float((ids[:, 1:] != ids[:, :-1]).transpose(0, 2, 1)[whole].mean()) if whole.any() else float("nan")
    norm = np.linalg.norm(a, axis=-1)  # (C, D, N)
    rel = (norm.std(1) / np.maximum(norm.mean(1), 1e-300))[whole]
    return dict(per_segment=flags.sum(-1).tolist(), same_units_every_segment=same, code_memory=mem,
                switching_rate=sw, readout_relative_fluctuation=float(np.median(rel)) if rel.size else float("nan"),
                n_segments=n_segments)


def net_entry(net: str, s: dict, args) -> dict:
    N = s["N"][net]
    run, task, dt = C.sample_toy(ENTRY[net], N=N, P=N, y_neg=Y_NEG[net], warmup=s["warmup"][net],
                                 samples=s["samples"], seed=args.seed, thin_z=s["thin_z"], progress=args.progress)
    rd = C.run_data_of(run)
    e = dict(net=net, N=N, P=N, N0=N + 20, m=rd.m, y_neg=Y_NEG[net], warmup=s["warmup"][net],
             samples=s["samples"], seconds=round(dt, 1), sigma_a2=rd.sigma_a2, temperature=rd.temperature,
             health=C.health_summary(run), ergodicity=ergodicity_ratio(rd), codes=C.code_summary(rd),
             identity=identity_summary(rd))
    if net == "linear":
        e.update(C.linear_U_check(rd, task))
        e.update(strengths=strength_summary(rd, task))
    elif net == "sigmoidal":
        from bnnzoo.theory.meanfield import single_neuron_meanfield

        th = single_neuron_meanfield(task.X, task.Y, labels=task.labels, nonlinearity="sigmoid",
                                     temperature=rd.temperature, sigma_a2=rd.sigma_a2)
        mf = {str(c): float(p) for c, p in zip(th.branch_code, th.branch_mass)}
        fr = e["codes"]["fraction"]
        e.update(meanfield_mass=mf, branches=C.branch_summary(rd),
                 tv_to_meanfield=0.5 * sum(abs(fr.get(c, 0.0) - mf.get(c, 0.0)) for c in set(mf) | set(fr)),
                 fluctuation=fluctuation_summary(rd),
                 fluctuation_theory=fluctuation_theory(th, np.bincount(np.asarray(task.labels, int))))
    else:
        o = C.outlier_summary(rd)
        e.update(outliers=o, readout_ratio=(float(np.median(o["readout"]) / o["bulk_readout"])
                                            if o["readout"] else float("nan")),
                 preactivation_ratio=(float(np.median(o["preactivation"]) / o["bulk_preactivation"])
                                      if o["preactivation"] else float("nan")),
                 sqrt_N=math.sqrt(N), min_outliers_theory=rd.m - 1, bulk=bulk_summary(rd),
                 persistence=outlier_persistence(rd))
    return e


def run(argv=None) -> int:
    argv = [] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--nets", default=",".join(NETS), help="comma-separated: linear, sigmoidal, relu (default all)")
    args = p.parse_args(argv)
    C.check_args(args)
    nets = [x.strip() for x in args.nets.split(",") if x.strip()]
    bad = sorted(set(nets) - set(NETS))
    if bad or not nets:
        raise ValueError(f"--nets must name some of {', '.join(NETS)}, got {args.nets!r}")
    files = C.ResultFiles(args.out, args.name or f"fig2_toy_{args.size}", args.overwrite)
    s = SIZES[args.size]
    summary = dict(provenance=C.provenance(args, argv), settings=s, nets=[])
    for i, net in enumerate(nets):
        C.log(f"{NAME}: [{i + 1}/{len(nets)}] {net}, N = P = {s['N'][net]}")
        e = net_entry(net, s, args)
        summary["nets"].append(e)
        files.write(summary)
        C.log(f"{NAME}: {net} done in {e['seconds']} s: health {e['health']['status']}")
    C.log(f"{NAME}: wrote {files.json}")
    return 0
