"""Neural collapse in the feature layer of sampled one-hidden-layer nets (theory page §7; Papyan, Han & Donoho's
NC1–NC3): within-class variability of the population (NC1), simplex-ETF class means (NC2) and self-duality of the
readout (NC3), against the per-neuron posterior fluctuation that the coding-schemes paper says is kept.

The toy task with balanced classes (ratios ⅓, ⅓, ⅓, so that the global mean of the data is the mean of the class
means and the simplex ETF is the collapsed configuration; the paper's ½, ¼, ¼ would make the data mean a weighted
one, Σ_c n_c μ_c = 0, under which equal-norm class means cannot have the equal cosines −1/(C−1)), N = P,
N0 = P + 20, non-lazy readout with the zoo's σ_a² = 1/P, T = 0.01, 4 SNAPER chains from prior draws
(``_common.sample_toy`` with class ratios).  Nets (``--nets``): ``linear`` (targets 1 / 0),
``sigmoidal`` (1 / ½), ``relu`` (1 / −½).  Sizes: ``ci`` N = P = 12, 100 + 100 draws; ``cpu`` N = P = 60, warm-up
400 (ReLU 1000) + 300 draws; ``paper`` N = P = 500, warm-up 1500 (ReLU 3000) + 500 draws, preactivations kept on
every 5th draw (one GPU).

Measured on the feature-layer activations φ(z) (N units × P training points) of each posterior draw, C = 3 classes,
class means μ_c (N-vectors) centred on their mean (= the data mean here), per draw then averaged over a chain's
draws; every number is given as the mean ± standard error over the 4 chains (each chain's average is one value):

* NC1 = tr(Σ_W Σ_B⁺)/C (:func:`bnnzoo.diagnostics.nc1`);
* NC2: the spread of the class-mean norms ‖μ_c‖ (standard deviation / mean; 0 for an ETF), their pairwise cosines
  (mean, and the largest |cos + 1/(C−1)|; the ETF has every cosine −1/(C−1) = −½), and the centred class-mean Gram
  matrix Gc = μᵀμ/N (C × C, per unit);
* NC3: the cosine between the readout vector a_c (over units) and μ_c, averaged over classes; also with the readout
  centred over classes (a_c − ā), the form in which Papyan et al.'s classifier (which has a bias) meets the ETF.
  Note a_cᵀμ_c/N is the centred class-mean output of class c on output c, ≈ (y+ − y−)(1 − 1/C), in every net, so
  NC3 = that / √(U_cc Gc_cc) with U = aᵀa/N;
* per-neuron variability (unit i, chain k): ``posterior``: the variance over the chain's draws of φ(z_i(x_μ)) at
  each training point, averaged over the points (classes equally weighted), over the variance over classes of the
  unit's posterior-mean class means — whether a single neuron's class-conditional activation is collapsed across
  the posterior; ``class_mean``: the same with the unit's class-mean activation at each draw in place of the
  point's; ``single_draw``: at one draw, the unit's within-class variance over the points over its between-class
  variance (the per-neuron NC1 of one draw), averaged over draws before the ratio.  Per net: the median over the
  units of all chains, the quartiles, the fraction of units below 1 and the per-chain medians (mean ± s.e.); units
  with no between-class variance (silent ReLU units) are counted, not used.  In the linear net the unit's
  posterior-mean class means vanish by the a → −a, z → −z symmetry as the unit explores its marginal, so its
  ``posterior`` ratio grows with the run length;
* a prior reference: the same numbers on features and readouts drawn from the prior at the same N, P
  (``PRIOR_DRAWS`` draws; the untrained net);
* the sampler health (``_common.health_summary``).

Theory (linear net only; none exists here for the sigmoidal and ReLU nets): the exact N → ∞ saddle point at the
run's T and σ_a² (``bnnzoo.theory.linear_saddle_point``) gives the posterior kernel K1 = E[zᵀz/N]; its class-block
means E K1 Eᵀ, centred, are the theory's Gc (E the C × P class-averaging matrix); compared with the sampled Gc
(draw-averaged, then over chains) by the relative Frobenius error (finite-N bias O(1/N)), with the theory's NC2
numbers and NC3 = F̄c_cc/√(U_cc Gc_cc) (F the saddle point's mean output) [derived here], and the readout U
(``_common.linear_U_check``).  At N → ∞ the mean kernel K1 = K0 + Y U⁻¹ Yᵀ has no within-class part along the
class-mean directions (K0 = I on the toy task), so the linear net's NC1 → 0; its finite-N value is not predicted.

``--ratios 0.5,0.25,0.25`` runs the paper's toy task instead of the balanced one; the NC2 numbers are then given
twice: centred on the (unweighted) mean of the class means, where an ETF is possible, and centred on the data mean
(suffix ``_data_mean``, the class means weighted by the class sizes, Papyan et al.'s global mean), where equal
norms with equal cosines −1/(C−1) are not.

Run: ``python -m reproduce neural_collapse --size ci|cpu|paper [--nets linear,sigmoidal,relu] [--ratios 0.5,0.25,0.25]
[--overwrite]``.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from . import _common as C

NAME = "neural_collapse"
CLAIMS = ("A2", "A3")
NETS = {"linear": ("deep_linear", 0.0), "sigmoidal": ("sigmoidal", 0.5), "relu": ("relu", -0.5)}
"""net -> (zoo entry, y−); y+ = 1."""
RATIOS = (1 / 3, 1 / 3, 1 / 3)
PRIOR_DRAWS = 50
SIZES = {
    "ci": dict(N=12, P=12, warmup=100, relu_warmup=100, samples=100, thin_z=1, temperature=0.01),
    "cpu": dict(N=60, P=60, warmup=400, relu_warmup=1000, samples=300, thin_z=1, temperature=0.01),
    "paper": dict(N=500, P=500, warmup=1500, relu_warmup=3000, samples=500, thin_z=5, temperature=0.01),
}


# ------------------------------------------------------------------------------------------------------ sampling
# ----------------------------------------------------------------------------------------------------- measuring
def class_average(labels: np.ndarray, n_classes: int) -> np.ndarray:
    """E: (P, C) with column c the average over the points of class c."""
    onehot = (np.asarray(labels)[:, None] == np.arange(n_classes)[None, :]).astype(float)
    return onehot / onehot.sum(0)


def centred_gram(G: np.ndarray) -> np.ndarray:
    """H G H with H = I − 11ᵀ/C: the Gram matrix of the class means centred on their (unweighted) mean."""
    H = np.eye(G.shape[-1]) - 1.0 / G.shape[-1]
    return H @ G @ H


def etf_numbers(Gc: np.ndarray) -> dict:
    """NC2 numbers of a centred class-mean Gram matrix (C, C): norm spread (std / mean of the norms), mean pairwise
    cosine and the largest |cos + 1/(C−1)|."""
    n = np.sqrt(np.maximum(np.diag(Gc), 0.0))
    Cn = Gc.shape[0]
    iu = np.triu_indices(Cn, 1)
    cos = Gc[iu] / np.maximum(n[iu[0]] * n[iu[1]], 1e-300)
    return dict(norm_spread=float(n.std() / n.mean()) if n.mean() > 0 else float("nan"),
                cos_mean=float(cos.mean()), cos_etf_dev=float(np.max(np.abs(cos + 1.0 / (Cn - 1)))))


def _cos(u: np.ndarray, v: np.ndarray) -> float:
    d = float(np.linalg.norm(u) * np.linalg.norm(v))
    return float(u @ v) / d if d > 0 else float("nan")


def draw_numbers(phi: np.ndarray, a: np.ndarray, labels: np.ndarray, E: np.ndarray) -> tuple[dict, np.ndarray]:
    """NC1, NC2, NC3 of one draw, and its centred class-mean Gram matrix (C, C): features ``phi`` (N, P), readout
    ``a`` (N, m), class averaging ``E`` (P, C)."""
    from bnnzoo.diagnostics import nc1

    N = phi.shape[0]
    M = phi @ E                                          # (N, C) class means
    Mc = M - M.mean(1, keepdims=True)                    # centred on the mean of the class means
    Gc = Mc.T @ Mc / N
    out = dict(nc1=nc1(phi.T, labels), **etf_numbers(Gc))
    # the same centred on the data mean (class means weighted by the class sizes; Papyan et al.'s global mean), which
    # differs from the above only for unequal classes
    w = np.bincount(np.asarray(labels), minlength=E.shape[1]) / len(labels)
    Mw = M - (M @ w)[:, None]
    out.update({k + "_data_mean": v for k, v in etf_numbers(Mw.T @ Mw / N).items()})
    Cn = E.shape[1]
    ac = a[:, :Cn] - a[:, :Cn].mean(1, keepdims=True)
    out["nc3"] = float(np.mean([_cos(a[:, c], Mc[:, c]) for c in range(Cn)]))
    out["nc3_centred"] = float(np.mean([_cos(ac[:, c], Mc[:, c]) for c in range(Cn)]))
    return out, Gc


def unit_ratios(feats: np.ndarray, E: np.ndarray) -> dict:
    """Per-neuron variability of features ``feats`` (chain, draw, N, P) with class averaging ``E`` (P, C): the
    ratios ``posterior``, ``class_mean`` and ``single_draw`` (module docstring), each (chain, N); NaN where the
    unit has no between-class variance."""
    pw = E.sum(1) / E.shape[1]                           # (P,) weight 1/(C P_c): classes weighted equally
    h = feats @ E                                        # (chain, draw, N, C) class means per draw
    post_mean = h.mean(1)                                # (chain, N, C)
    between = post_mean.var(-1)                          # (chain, N)
    var_point = feats.var(1)                             # (chain, N, P): over draws at each point
    within_post = var_point @ pw                         # (chain, N)
    within_cm = h.var(1).mean(-1)                        # (chain, N)
    # single draw: within-class variance over the points, between-class variance of the draw's class means
    sq = (feats ** 2) @ E                                # (chain, draw, N, C)
    w_draw = (sq - h ** 2).mean(-1).mean(1)              # (chain, N)
    b_draw = h.var(-1).mean(1)                           # (chain, N)
    with np.errstate(divide="ignore", invalid="ignore"):
        tiny = 1e-12 * max(float(np.max(feats ** 2)), 1e-300)
        r = dict(posterior=np.where(between > tiny, within_post / between, np.nan),
                 class_mean=np.where(between > tiny, within_cm / between, np.nan),
                 single_draw=np.where(b_draw > tiny, np.maximum(w_draw, 0.0) / b_draw, np.nan))
    return r


def ratio_stats(r: np.ndarray) -> dict:
    """Median over units (all chains) of a per-unit ratio (chain, N), quartiles, fraction below 1, per-chain
    medians (mean ± s.e. over chains), units used and units without a ratio (NaN)."""
    ok = np.isfinite(r)
    v = r[ok]
    chains = [float(np.median(x[np.isfinite(x)])) if np.isfinite(x).any() else None for x in r]
    m, se = C.mean_se(chains)
    if v.size == 0:
        return dict(median=None, q25=None, q75=None, frac_below_1=None, median_chains=chains, median_mean=m,
                    median_se=se, n_units=0, n_undefined=int((~ok).sum()))
    return dict(median=float(np.median(v)), q25=float(np.quantile(v, 0.25)), q75=float(np.quantile(v, 0.75)),
                frac_below_1=float(np.mean(v < 1)), median_chains=chains, median_mean=m, median_se=se,
                n_units=int(v.size), n_undefined=int((~ok).sum()))


def measure(feats: np.ndarray, a: np.ndarray, labels: np.ndarray, n_classes: int) -> dict:
    """Every collapse number of features ``feats`` (chain, draw, N, P) with readouts ``a`` (chain, draw, N, m):
    per chain (mean over draws) and mean ± s.e. over the chains; the draw-averaged centred class-mean Gram matrix
    per chain; the per-neuron ratios."""
    E = class_average(labels, n_classes)
    Cn, D = feats.shape[:2]
    per = {}
    grams = []
    for c in range(Cn):
        rows, gs = [], []
        for t in range(D):
            d, g = draw_numbers(feats[c, t], a[c, t], labels, E)
            rows.append(d)
            gs.append(g)
        for k in rows[0]:
            per.setdefault(k, []).append(float(np.nanmean([r[k] for r in rows])))
        grams.append(np.mean(gs, 0))
    out = {}
    for k, v in per.items():
        out[k], out[k + "_se"] = C.mean_se(v)
        out[k + "_chains"] = v
    grams = np.asarray(grams)
    out["gram"] = grams.mean(0).tolist()
    out["gram_se"] = (grams.std(0, ddof=1) / math.sqrt(Cn) if Cn > 1 else np.full(grams.shape[1:], np.nan)).tolist()
    out["gram_etf"] = etf_numbers(grams.mean(0))
    out["units"] = {k: ratio_stats(v) for k, v in unit_ratios(feats, E).items()}
    return out


def prior_reference(task, activation: str, N: int, sigma_a2: float, seed: int, draws: int = PRIOR_DRAWS) -> dict:
    """The collapse numbers of the untrained net: ``draws`` draws of the first layer and readout from the prior at
    width N (one pseudo-chain)."""
    from bnnzoo.diagnostics._data import np_activation

    rng = np.random.default_rng(10_000 + seed)
    X = np.asarray(task.X, float)
    m = task.Y.shape[1]
    W = rng.standard_normal((draws, N, X.shape[1]))
    feats = np_activation(activation)(W @ X.T / math.sqrt(X.shape[1]))[None]    # (1, draw, N, P)
    a = math.sqrt(sigma_a2) * rng.standard_normal((1, draws, N, m))
    r = measure(feats, a, np.asarray(task.labels), m)
    return {k: v for k, v in r.items() if not k.endswith("_se") and not k.endswith("_chains")}


def linear_theory(rd, task, gram: np.ndarray, gram_se: np.ndarray) -> dict:
    """The exact N → ∞ saddle point of the linear net against the sampled centred class-mean Gram matrix: the
    theory's Gc, its NC2 numbers and NC3, the relative Frobenius error of the sampled Gc and its standard error,
    and the readout U check."""
    from bnnzoo.theory.linear import linear_saddle_point

    th = linear_saddle_point(task.X, task.Y, temperature=rd.temperature, sigma_a2=rd.sigma_a2)
    Cn = task.Y.shape[1]
    E = class_average(task.labels, Cn)
    Gc = centred_gram(E.T @ np.asarray(th.K1) @ E)
    Fbar = E.T @ np.asarray(th.f_train)                       # (class, output) class-mean outputs
    Fc = Fbar - Fbar.mean(0, keepdims=True)                   # centred over the classes
    U = np.asarray(th.U)
    nc3 = float(np.mean([Fc[c, c] / math.sqrt(U[c, c] * Gc[c, c]) for c in range(Cn)]))
    nrm = float(np.linalg.norm(Gc))
    gram, gram_se = np.asarray(gram), np.asarray(gram_se)
    return dict(gram_theory=Gc.tolist(), gram_relative_error=float(np.linalg.norm(gram - Gc) / nrm),
                gram_relative_error_se=float(np.sqrt(np.nansum(gram_se ** 2)) / nrm),
                etf_theory=etf_numbers(Gc), nc3_theory=nc3, **C.linear_U_check(rd, task))


def entry(net: str, s: dict, args) -> dict:
    """Sample one net and measure its collapse."""
    name, y_neg = NETS[net]
    warm = s["relu_warmup"] if net == "relu" else s["warmup"]
    run, task, secs = C.sample_toy(name, N=s["N"], P=s["P"], y_neg=y_neg, warmup=warm, samples=s["samples"],
                                   seed=args.seed, thin_z=s["thin_z"], progress=args.progress, ratios=s["ratios"],
                                   temperature=s["temperature"])
    rd = C.run_data_of(run)
    z = rd.z(1)
    a = rd.a[:, s["thin_z"] - 1::s["thin_z"]]               # the draws whose preactivations were kept
    feats = rd.phi(z)
    labels = np.asarray(task.labels)
    m = task.Y.shape[1]
    mse = np.mean((np.asarray(rd.f, float) - rd.Y[None, None]) ** 2, axis=(1, 2, 3))
    e = dict(net=net, entry=name, y_neg=y_neg, warmup=warm, samples=s["samples"], draws_measured=int(z.shape[1]),
             sigma_a2=rd.sigma_a2, temperature=rd.temperature, seconds=round(secs, 1),
             etf_cos=-1.0 / (m - 1), train_mse_chains=mse.tolist(), **measure(feats, a, labels, m))
    if rd.activation == "linear":
        e["theory"] = linear_theory(rd, task, e["gram"], e["gram_se"])
    e["prior"] = prior_reference(task, rd.activation, s["N"], rd.sigma_a2, args.seed)
    e["health"] = C.health_summary(run)
    return e


def run(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--nets", default=",".join(NETS), help=f"comma-separated, some of {', '.join(NETS)} (default all)")
    p.add_argument("--ratios", default=None,
                   help="comma-separated class fractions, >= 2 positive numbers summing to 1 (default 1/3,1/3,1/3; "
                        "the paper's toy task: 0.5,0.25,0.25)")
    args = p.parse_args(argv)
    C.check_args(args)
    nets = C.name_list(args.nets, "--nets", NETS)
    s = dict(SIZES[args.size], ratios=RATIOS)
    if args.ratios is not None:
        try:
            r = tuple(float(v) for v in args.ratios.split(","))
        except ValueError:
            r = ()
        if len(r) < 2 or not all(math.isfinite(v) and v > 0 for v in r) or abs(sum(r) - 1) > 1e-6:
            raise ValueError(f"--ratios must be >= 2 positive numbers summing to 1, got {args.ratios!r}")
        s["ratios"] = r
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)
    summary = dict(provenance=C.provenance(args, argv), settings=dict(s, ratios=list(s["ratios"]), chains=C.CHAINS,
                                                                     prior_draws=PRIOR_DRAWS, nets=nets),
                   results={})
    for net in nets:
        C.log(f"{NAME}: {net}, N = P = {s['N']}")
        e = entry(net, s, args)
        summary["results"][net] = e
        files.write(summary)
        u = e["units"]["posterior"]
        C.log(f"{NAME}: {net}: NC1 {C.fmt(e['nc1'], e['nc1_se'])}, norm spread {C.fmt(e['norm_spread'])}, "
              f"cos {C.fmt(e['cos_mean'])} (ETF {e['etf_cos']:.3g}), NC3 {C.fmt(e['nc3'], e['nc3_se'])}, "
              f"unit ratio median {C.fmt(u['median'])}"
              + (f", Gram error {C.fmt(e['theory']['gram_relative_error'])}" if "theory" in e else "")
              + f", health {e['health']['status']} ({e['seconds']} s)")
    C.log(f"{NAME}: wrote {files.json}")
    return 0
