"""Richness across a lazy → rich transition (theory page §7; Nam et al.'s D_LR, with NC1): one-hidden-layer nets on
the toy task with the readout prefactor N^{-γ} swept from the lazy (γ = ½) to the rich (γ = 1) end.

The family.  f_r(x) = N^{-γ} Σ_i b_ir φ(z_i(x)), b_ir ~ N(0, σ_a0²), Gaussian likelihood of variance T N^{1−2γ}
per output entry, γ ∈ [½, 1].  It is sampled without a library change through the lazy readout (1/√N) of
:func:`bnnzoo.models.fcn.fcn` with a_ir = N^{½−γ} b_ir, i.e. ``readout="lazy"``,
``sigma_a2 = σ_a0² N^{1−2γ}`` and ``temperature = T N^{1−2γ}`` (:func:`family_kwargs`).  At γ = ½ this is the lazy
model (prior σ_a0², variance T); at γ = 1 it is exactly the non-lazy model (readout 1/N, prior σ_a0², variance T/N)
with its readout written as a = b/√N (:func:`nonlazy_readout`): equal outputs, and log densities that differ by the
constant Jacobian ½ N m log N (checked in ``tests/reproduce/test_reproduce_richness.py``).

The choice of σ_a0².  Interpolated between the two ends' defaults (:func:`sigma_a02`): σ_a0² = P^{1−2γ}, so
σ_a0² = 1 at γ = ½ (the lazy default) and 1/P at γ = 1 (the paper's non-lazy rule for one hidden layer, every
activation); log σ_a0² is linear in γ.  ``--sigma-a02 VALUE`` fixes it instead.  T is the paper's rescaled
temperature (default 0.01) at every γ.

Nets (``--nets``): ``sigmoidal`` (targets 1 / ½), ``relu`` (1 / −½), ``linear`` (1 / 0); N = P, N0 = P + 20, 4
SNAPER chains from prior draws (``_common.sample_toy``).  Sizes: ``ci`` sigmoidal, N = P = 12, γ ∈ {½, ¾, 1}, 100 +
100 draws; ``cpu`` the three nets at N = P ∈ {30, 60}, γ = 0.5, 0.6, …, 1.0, warm-up 400 (ReLU 1000) + 200 draws;
``paper`` N = P ∈ {100, 500}, warm-up 1500 (ReLU 3000) + 500 draws (one GPU).

Measured per (net, N, γ), from the feature-layer activations φ(z¹) on the training points:

* D_LR = 1 − ‖QᵀΦc‖²_F/(‖ΦcᵀΦc‖_F √r) (:func:`bnnzoo.diagnostics.d_lr`), Q the r = 2 leading directions of the
  centred sampled outputs (r = rank of the centred targets, as :func:`bnnzoo.diagnostics.kernels_and_richness`
  takes it), per draw, averaged over the draws of a chain; the rich end's D_LR ≈ 0 rests on this cut: with Q
  spanning all three centred output directions (the outputs' noise direction too) collapsed features score
  1 − √(2/3) ≈ 0.18;
* NC1 = tr(Σ_B⁺ Σ_W)/C (:func:`bnnzoo.diagnostics.nc1`), the same way; it counts the within-class spread only along
  the C − 1 directions of the class means, relative to their spread, so a small NC1 does not show that the
  within-class variability vanishes (the coding-schemes paper states that neural-collapse property 1 is violated);
* CKA of the chain's posterior feature kernel ⟨φφᵀ⟩/N with the prior (NNGP) kernel (lazy features = prior features);
* mean ± standard error **over the 4 chains** (each chain's average is one value);
* the sampler health (``_common.health_summary``: status and R̂ of the permutation-invariant observables).

Theory (the two ends): rich D_LR ≈ 0 (features collapsed onto the outputs; exactly collapsed features with the
targets' own anisotropy give D_LR of the targets, reported as ``collapsed``); lazy: the isotropic value
1 − √(r/N) of theory §7 and, computed here independently of the sampler, D_LR of the NNGP prior kernel (the lazy
posterior's feature kernel at N → ∞; D_LR depends on the features only through their kernel, :func:`kernel_dlr`)
and of prior features at width N (one random first layer drawn from the prior, Q from the targets; mean over
``PRIOR_DRAWS`` draws).  The crossover γ* is where D_LR is half-way between its values at the two ends (linear
interpolation in γ); its change with N says whether the transition sharpens.

Run: ``python -m reproduce richness --size ci|cpu|paper [--nets sigmoidal,relu,linear] [--widths 30,60]
[--gammas 0.5,0.6,...] [--temperature 0.01] [--sigma-a02 interp|VALUE] [--warmup N] [--samples N] [--overwrite]``.
"""

from __future__ import annotations

import math

import numpy as np

from . import _common as C

NAME = "richness"
CLAIMS = ("R1", "R2", "R3")
NETS = ("sigmoidal", "relu", "linear")
ENTRY = {"sigmoidal": "sigmoidal", "relu": "relu", "linear": "deep_linear"}
ACTIVATION = {"sigmoidal": "sigmoid", "relu": "relu", "linear": "linear"}
Y_NEG = {"sigmoidal": 0.5, "relu": -0.5, "linear": 0.0}
MAX_DRAWS = 50          # draws per chain that enter D_LR and NC1 (evenly spaced)
PRIOR_DRAWS = 200       # random first layers for the lazy reference D_LR of prior features
SIZES = {
    "ci": dict(nets=("sigmoidal",), widths=(12,), gammas=(0.5, 0.75, 1.0), warmup=100, warmup_relu=100,
               samples=100),
    "cpu": dict(nets=("sigmoidal", "linear", "relu"), widths=(30, 60), gammas=(0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
                warmup=400, warmup_relu=1000, samples=200),
    "paper": dict(nets=("sigmoidal", "linear", "relu"), widths=(100, 500), gammas=(0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
                  warmup=1500, warmup_relu=3000, samples=500),
}

# --------------------------------------------------------------------------------------------------- the family
def sigma_a02(gamma: float, P: int, fixed: float | None = None) -> float:
    """σ_a0², the prior variance of the γ-family's readout b: ``fixed`` if given, else P^{1−2γ} (1 at γ = ½, the
    lazy default; 1/P at γ = 1, the paper's non-lazy rule for one hidden layer)."""
    return float(fixed) if fixed is not None else float(P) ** (1.0 - 2.0 * gamma)


def family_kwargs(gamma: float, N: int, temperature: float, s2a0: float) -> dict:
    """Model keywords of the γ-family written through the lazy readout of :func:`bnnzoo.models.fcn.fcn`.

    Parameters
    ----------
    gamma : readout exponent in [½, 1]: f = N^{-γ} Σ_i b_i φ(z_i).
    N : hidden width.
    temperature : T, the rescaled temperature (likelihood variance T N^{1−2γ}; T/N at γ = 1, T at γ = ½).
    s2a0 : σ_a0², the prior variance of b.

    Returns
    -------
    dict
        ``readout="lazy"``, ``sigma_a2 = σ_a0² N^{1−2γ}``, ``temperature = T N^{1−2γ}``.
    """
    c = float(N) ** (1.0 - 2.0 * gamma)
    return dict(readout="lazy", sigma_a2=s2a0 * c, temperature=temperature * c)


def nonlazy_readout(a_lazy, N: int):
    """The family's readout b = N^{γ−½} a at γ = 1 (√N a): the non-lazy model's readout for the same function."""
    return np.sqrt(N) * np.asarray(a_lazy)


# ------------------------------------------------------------------------------------------------- references
def prior_feature_dlr(X: np.ndarray, Y: np.ndarray, activation: str, N: int, draws: int = PRIOR_DRAWS,
                      seed: int = 0) -> tuple[float, float]:
    """D_LR of prior features: φ(z) with z = W Xᵀ/√N0, W (N, N0) i.i.d. N(0, 1), Q from the centred targets.

    Returns the mean over ``draws`` random first layers and its standard error.  A lazy posterior keeps the prior's
    random features, so this is the lazy end's value at width N (the isotropic 1 − √(r/N) assumes isotropic
    features, which φ(z) are not)."""
    from bnnzoo.diagnostics import d_lr
    from bnnzoo.diagnostics._data import np_activation

    phi = np_activation(activation)
    r = max(int(np.linalg.matrix_rank(Y - Y.mean(0))), 1)
    rng = np.random.default_rng(seed)
    vals = np.array([d_lr(phi(rng.standard_normal((N, X.shape[1])) @ X.T / math.sqrt(X.shape[1])).T, Y, rank=r)
                     for _ in range(draws)])
    return float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(draws))


def kernel_dlr(K: np.ndarray, Y: np.ndarray) -> float:
    """D_LR of features with kernel K (point, point) and Q from the centred targets Y:
    1 − tr(QᵀK_cQ)/(‖K_c‖_F √r), K_c the centred kernel (D_LR depends on the features only through their kernel).
    With the NNGP prior kernel this is the lazy end at N → ∞."""
    Kc = K - K.mean(0, keepdims=True) - K.mean(1, keepdims=True) + K.mean()
    Yc = Y - Y.mean(0, keepdims=True)
    r = max(int(np.linalg.matrix_rank(Yc)), 1)
    Q = np.linalg.svd(Yc, full_matrices=False)[0][:, :r]
    return float(1.0 - np.trace(Q.T @ Kc @ Q) / (np.linalg.norm(Kc) * math.sqrt(r)))


def crossover(gammas, values, ends: tuple[float, float] | None = None) -> dict:
    """γ where ``values`` (ordered by γ) first cross the half-way level between the two ends, by linear
    interpolation, and the γ range between the quarter and three-quarter levels (the transition's width).
    The ends are the first and last value unless ``ends`` = (value at the first γ, value at the last γ) is given.
    None where a level is not crossed (or the two ends are equal)."""
    g, v = np.asarray(gammas, float), np.asarray(values, float)
    lo, hi = (v[0], v[-1]) if ends is None else (float(ends[0]), float(ends[1]))

    def level(frac):
        if not (np.all(np.isfinite(v)) and hi != lo):
            return None
        target = lo + frac * (hi - lo)
        s = np.sign(v - target)
        for k in range(len(v) - 1):
            if s[k] == 0:
                return float(g[k])
            if s[k] * s[k + 1] < 0:
                return float(g[k] + (target - v[k]) * (g[k + 1] - g[k]) / (v[k + 1] - v[k]))
        return None

    q1, q2, q3 = level(0.25), level(0.5), level(0.75)
    return dict(gamma_half=q2, gamma_quarter=q1, gamma_three_quarter=q3,
                width=(q3 - q1) if q1 is not None and q3 is not None else None, level_half=0.5 * (lo + hi))


# -------------------------------------------------------------------------------------------------- measuring
def measure(rd, K_prior: np.ndarray) -> dict:
    """D_LR, NC1 and CKA with the prior kernel of the feature layer: per chain (averaged over up to ``MAX_DRAWS``
    draws), and their mean ± standard error over the chains."""
    from bnnzoo.diagnostics import cka, d_lr, nc1

    feats = rd.phi(rd.z(1))                                   # (chain, draw, neuron, point)
    Cn, D = feats.shape[:2]
    r = max(int(np.linalg.matrix_rank(rd.Y - rd.Y.mean(0))), 1)
    sub = np.unique(np.linspace(0, D - 1, min(MAX_DRAWS, D)).astype(int))
    per = dict(d_lr=[], nc1=[], cka_prior=[])
    for c in range(Cn):
        per["d_lr"].append(float(np.mean([d_lr(feats[c, t].T, rd.f[c, t], rank=r) for t in sub])))
        per["nc1"].append(float(np.mean([nc1(feats[c, t].T, rd.labels) for t in sub])))
        K = np.einsum("dnp,dnq->pq", feats[c], feats[c], optimize=True) / (D * rd.width)
        per["cka_prior"].append(float(cka(K, K_prior)))
    out = {}
    for k, v in per.items():
        v = np.asarray(v)
        out[k] = float(v.mean())
        out[k + "_se"] = float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else float("nan")
        out[k + "_per_chain"] = v.tolist()
    return out


def entry(net: str, N: int, gamma: float, s: dict, args) -> dict:
    """Sample one (net, N = P, γ) of the family and summarise its richness and health."""
    from bnnzoo.diagnostics.kernels import prior_kernels

    s2a0 = sigma_a02(gamma, N, s["sigma_a02"])
    kw = family_kwargs(gamma, N, s["temperature"], s2a0)
    warmup = s["warmup_relu"] if net == "relu" else s["warmup"]
    run, task, secs = C.sample_toy(ENTRY[net], N=N, P=N, y_neg=Y_NEG[net], warmup=warmup,
                                   samples=s["samples"], seed=args.seed, progress=args.progress, **kw)
    rd = C.run_data_of(run)
    K_prior = prior_kernels(np.asarray(task.X, float), ACTIVATION[net], 1)[0][0]
    mse = np.asarray(rd.f - rd.Y[None, None], float) ** 2
    return dict(net=net, N=N, P=N, gamma=gamma, sigma_a02=s2a0, model_sigma_a2=kw["sigma_a2"],
                model_temperature=kw["temperature"], warmup=warmup, samples=s["samples"],
                seconds=round(secs, 1), train_mse_per_chain=mse.mean(axis=(1, 2, 3)).tolist(),
                **measure(rd, K_prior), health=C.health_summary(run))


def references(net: str, N: int, seed: int) -> dict:
    """The theory ends at width N: isotropic 1 − √(r/N), D_LR of the NNGP prior kernel (lazy, N → ∞) and of
    prior features at width N, D_LR of the targets (collapsed)."""
    import bnnzoo
    from bnnzoo.diagnostics import d_lr
    from bnnzoo.diagnostics.kernels import prior_kernels

    e = bnnzoo.get_entry(ENTRY[net])
    task = e.make_task(**dict(e.task_defaults, P=N, N0=N + 20, y_neg=Y_NEG[net]))
    X, Y = np.asarray(task.X, float), np.asarray(task.Y, float)
    r = max(int(np.linalg.matrix_rank(Y - Y.mean(0))), 1)
    pf, pf_se = prior_feature_dlr(X, Y, ACTIVATION[net], N, seed=seed)
    return dict(rank=r, isotropic=1.0 - math.sqrt(r / N), prior_features=pf, prior_features_se=pf_se,
                nngp=kernel_dlr(prior_kernels(X, ACTIVATION[net], 1)[0][0], Y), collapsed=d_lr(Y, Y, rank=r))


# ------------------------------------------------------------------------------------------------- reporting
def summarise(summary: dict) -> None:
    """From the finished entries: per (net, N) the two ends of the sweep (``ends``: D_LR and NC1 ± s.e. at the
    smallest and largest γ run, and how many entries equilibrated), and the crossover γ* (needs both ends of the
    γ grid and at least 3 γ): half-way between the measured ends, and half-way between the theory ends at N → ∞ (the
    NNGP kernel's D_LR at γ = ½, 0 at γ = 1)."""
    cross, ends = [], []
    for net in summary["settings"]["nets"]:
        for N in summary["settings"]["widths"]:
            es = sorted((e for e in summary["entries"] if e["net"] == net and e["N"] == N), key=lambda e: e["gamma"])
            if es:
                lo, hi = es[0], es[-1]
                ends.append(dict(net=net, N=N, gamma_lazy=lo["gamma"], d_lr_lazy=lo["d_lr"],
                                 d_lr_lazy_se=lo["d_lr_se"], nc1_lazy=lo["nc1"], nc1_lazy_se=lo["nc1_se"],
                                 gamma_rich=hi["gamma"], d_lr_rich=hi["d_lr"], d_lr_rich_se=hi["d_lr_se"],
                                 nc1_rich=hi["nc1"], nc1_rich_se=hi["nc1_se"], n_entries=len(es),
                                 n_equilibrated=sum(e["health"]["status"] == "equilibrated" for e in es)))
            if len(es) >= 3 and es[0]["gamma"] == min(summary["settings"]["gammas"]) \
                    and es[-1]["gamma"] == max(summary["settings"]["gammas"]):
                gs, vs = [e["gamma"] for e in es], [e["d_lr"] for e in es]
                th = crossover(gs, vs, ends=(summary["references"][f"{net}_{N}"]["nngp"], 0.0))
                cross.append(dict(net=net, N=N, **crossover(gs, vs), gamma_half_theory_ends=th["gamma_half"],
                                  width_theory_ends=th["width"]))
    summary["crossover"] = cross
    summary["ends"] = ends


# ------------------------------------------------------------------------------------------------------ main
def _list(text: str, name: str, cast, ok, valid: str) -> tuple:
    try:
        vals = tuple(cast(x) for x in text.split(",") if x.strip())
    except ValueError:
        vals = ()
    if not vals or not all(ok(v) for v in vals):
        raise ValueError(f"{name} must be {valid}, got {text!r}")
    return vals


def run(argv=None) -> int:
    argv = [] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--nets", default=None, help=f"comma-separated, some of {', '.join(NETS)} (default per size)")
    p.add_argument("--widths", default=None, help="comma-separated N = P values, each >= 8 (default per size)")
    p.add_argument("--gammas", default=None, help="comma-separated readout exponents in [0.5, 1] (default per size)")
    p.add_argument("--temperature", type=float, default=0.01, help="rescaled temperature T > 0 (default 0.01)")
    p.add_argument("--sigma-a02", default="interp",
                   help="'interp' (σ_a0² = P^(1−2γ), default) or a fixed positive σ_a0²")
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps of every net (default per size)")
    p.add_argument("--samples", type=int, default=None, help="kept draws per chain (default per size)")
    args = p.parse_args(argv)
    C.check_args(args)
    s = dict(SIZES[args.size])
    if args.nets is not None:
        s["nets"] = _list(args.nets, "--nets", str.strip, lambda v: v in NETS, f"some of {', '.join(NETS)}")
    if args.widths is not None:
        s["widths"] = _list(args.widths, "--widths", int, lambda v: v >= 8, "comma-separated integers >= 8")
    if args.gammas is not None:
        s["gammas"] = tuple(sorted(_list(args.gammas, "--gammas", float, lambda v: 0.5 <= v <= 1.0,
                                         "comma-separated numbers in [0.5, 1]")))
    if not (math.isfinite(args.temperature) and args.temperature > 0):
        raise ValueError(f"--temperature must be a positive number, got {args.temperature!r}")
    if args.sigma_a02 == "interp":
        s["sigma_a02"] = None
    else:
        try:
            v = float(args.sigma_a02)
        except ValueError:
            v = float("nan")
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"--sigma-a02 must be 'interp' or a positive number, got {args.sigma_a02!r}")
        s["sigma_a02"] = v
    for name, lo in (("warmup", 0), ("samples", 2)):
        v = getattr(args, name)
        if v is not None:
            if v < lo:
                raise ValueError(f"--{name} must be >= {lo}, got {v}")
            s[name] = v
            if name == "warmup":
                s["warmup_relu"] = v
    s["temperature"] = args.temperature
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)
    summary = dict(provenance=C.provenance(args, argv), settings=s, chains=C.CHAINS, max_draws=MAX_DRAWS,
                   prior_draws=PRIOR_DRAWS, references={}, entries=[], ends=[], crossover=[])
    for net in s["nets"]:
        for N in s["widths"]:
            summary["references"][f"{net}_{N}"] = references(net, N, args.seed)
    todo = [(net, N, g) for net in s["nets"] for N in s["widths"] for g in s["gammas"]]
    for i, (net, N, g) in enumerate(todo):
        C.log(f"{NAME}: [{i + 1}/{len(todo)}] {net}, N = P = {N}, γ = {g:g}")
        e = entry(net, N, g, s, args)
        summary["entries"].append(e)
        summarise(summary)
        files.write(summary)
        C.log(f"{NAME}: done in {e['seconds']} s: D_LR {e['d_lr']:.3f} ± {e['d_lr_se']:.3f}, NC1 {e['nc1']:.3g}, "
              f"health {e['health']['status']} (max R̂ {e['health']['max_rhat']:.3g})")
    C.log(f"{NAME}: wrote {files.json}")
    return 0
