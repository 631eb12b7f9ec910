"""Softmax attention: how the context length L enters the sample complexity P* (theory page §8; Rubin, Davidovich &
Ringel report P* ∝ √(L d³)), and which architectural choice sets the exponent of L.

Model (zoo entry ``softmax_attention``, module ``bnnzoo.models.attention``): query = first token, H = 2 heads,
key dimension d_h = d, standard readout c = 1/√(H d_h), prior N(0, σ²/d) on Q, K, V::

    s_hℓ = β q_h·k_hℓ / √d_h,    α_hℓ = softmax_ℓ(s_hℓ),    f = c Σ_h a_hᵀ Σ_ℓ α_hℓ v_hℓ

Target (``bnnzoo.tasks.attention_task``): y = q Σ_ℓ (k_ℓ − k̄)(v_ℓ − v̄) / √(L − 1), E[y²] = 1, q = w_q·x_1,
k_ℓ = w_k·x_ℓ, v_ℓ = w_v·x_ℓ with orthonormal teacher directions.

First-order analysis (expansion of the softmax in the scores).  α_ℓ(s) = (1/L)(1 + s_ℓ − s̄) + O(s²), so two heads
with opposite scores ±u q k_ℓ (u = β g_q g_k/√d_h: Q_h = ±g_q e₁w_qᵀ, K_h = g_k e₁w_kᵀ), common values
V_h = g_v e₁w_vᵀ and readouts a_h = ±g_a e₁ give::

    f = (2 c g_a g_v u / L) · q Σ_ℓ (k_ℓ − k̄)(v_ℓ − v̄) · (1 + O(u²))

(α(s) − α(−s) is odd in s: the error is relative O(u²)).  Matching the target needs the weight product::

    G = g_q g_k g_v g_a = L √d_h / (2 c β √(L − 1)) = L d_h / (√2 β √(L − 1))        (H = 2, standard readout)

Three choices set how L enters G, all through one factor at first order:

* the softmax's own 1/L (uniform attention weights) multiplies the learnable cubic part: G ∝ L/√(L − 1) ≈ √L;
* the target normalisation 1/√(L − 1) (E[y²] = 1; the sum over the context has L − 1 independent terms) divides it:
  with a mean over the context (1/(L − 1)) instead, G would not grow with L (exponent lowered by γ/2 in the
  notation below) but E[y²] would fall as 1/(L − 1) against a fixed ridge κ (which raises P*);
* the score scale β divides it: β fixed (the model's default, β = 1) leaves G ∝ √L; β ∝ √L makes G independent of
  L; β ∝ L makes G ∝ 1/√L.  Moving the softmax's 1/L (e.g. an unnormalised or 1/√L-normalised attention sum) is the
  same as rescaling β at first order, and the readout normalisation (c = 1/√(H d_h) or 1/(H d_h)) does not involve L.

Under the prior the scores are O(β), not small: the prior's attention is not in the first-order regime.  Its
token-mean (uniform attention) part c Σ_h a_hᵀ V_h x̄ has variance E|x̄|²/d = 1/L exactly, while the rest, f − f(β → 0),
does not fall with L at β = 1 and grows with L at β = √L (the experiment estimates both from prior draws).  The data
do not depend on β: at a given seed and L both variants see the same contexts.  So if P* ∝ G^γ · D(L), with D(L)
whatever the data contribute (e.g. the L − 1 key-value products per context), then the difference of the log-log
slopes of P* in L between β = 1 and β = √L is Δ = γ/2 exactly, and the first-order prediction is *the faster β
grows with L, the smaller the exponent* (the result file says whether it holds).  If γ ≈ 1 and D(L) saturated,
β fixed would give P* ∝ √L.

The experiment measures, for the variants ``fixed`` (β = 1) and ``sqrtL`` (β = √L) (``L``, β = L, is available):
per (variant, seed, L) the alignment A_f of the posterior-mean predictor on a test set on a ladder of P, searched in
strides from a start point until A_f crosses 0.25 (start: the previous seed's P* of the same variant and L), then
refined at the ladder point halfway between the bracketing points, P*(0.25)
by log-linear interpolation between the bracketing points, the log-log slope of P* in L per seed, its mean ± standard
error over seeds, and Δ = slope(fixed) − slope(sqrtL) with its standard error over seeds.  It also checks the
first-order formula numerically: f of the hand-built teacher weights through ``attention_forward`` against the target,
whose relative error must fall by 4 when u halves, and records G per variant and L.  Every sampled entry: 4 chains
from prior draws (sampler "auto" = ChEES for this entry), the sampler health (status, R̂ of the training error, the
readout norm and the outputs) stored and shown next to A_f.

Run: ``python -m reproduce attention_context --size ci|cpu|paper [--variants fixed,sqrtL] [--L 2,4,8,16]
[--seeds 0,1,2] [--seed 0] [--resume] [--overwrite]``.  ``--seeds`` draws the tasks (teacher and contexts); an
entry's sampler seed is its task seed plus ``--seed``.  ``--resume`` continues a stopped run from its JSON file (same
sampling settings: d, warm-up, draws, test contexts, κ), reusing the entries it already holds; the search settings
(L, seeds, variants, ladder, evaluations per curve) may change, e.g. to refine a finished run.  On a loaded CPU the
compilations take much of an entry's time; set ``JAX_COMPILATION_CACHE_DIR`` (the cpu run here did) so that entries
of the same P and L (other seeds, other β) reuse them.
"""

from __future__ import annotations

import math
import time

import numpy as np

from . import _common as C

NAME = "attention_context"
CLAIMS = ("C8",)
LEVEL = 0.25
THEORY_SLOPE = 0.5      # the paper's P* ∝ √L
HEADS = 2
VARIANTS = {"fixed": "β = 1", "sqrtL": "β = √L", "L": "β = L"}
# per size: token dimension d, context lengths, seeds, variants, the P ladder (P ≈ 8·2^(k/2)) and the search stride on
# it, the start P, the most evaluations per curve, warm-up and kept draws, test contexts, ridge κ
ENTRY_KEYS = ("d", "warmup", "samples", "P_test", "kappa")     # what an entry's result depends on besides its key
SIZES = {
    "ci": dict(d=4, L=(2, 3), seeds=(0,), variants=("fixed",), ladder=(16,), stride=1, start=16, max_evals=1,
               warmup=30, samples=20, P_test=100, kappa=0.05),
    "cpu": dict(d=4, L=(2, 4, 8, 16), seeds=(0, 1, 2), variants=("fixed", "sqrtL"),
                ladder=(8, 11, 16, 23, 32, 45, 64, 91, 128, 181, 256), stride=2, start=32, max_evals=4, warmup=250,
                samples=100, P_test=500,
                kappa=0.05),
    "paper": dict(d=8, L=(2, 4, 8, 16, 32), seeds=(0, 1, 2, 3, 4), variants=("fixed", "sqrtL", "L"),
                  ladder=(16, 23, 32, 45, 64, 91, 128, 181, 256, 362, 512, 724, 1024), stride=2, start=64, max_evals=6,
                  warmup=1000, samples=500, P_test=2000, kappa=0.05),
}


def score_scale(variant: str, L: int) -> float:
    """β of a variant at context length L."""
    return {"fixed": 1.0, "sqrtL": math.sqrt(L), "L": float(L)}[variant]


def readout_c(d_h: int, heads: int = HEADS) -> float:
    """Standard readout prefactor c = 1/√(H d_h)."""
    return 1.0 / math.sqrt(heads * d_h)


def required_product(L: int, beta: float, d_h: int, heads: int = HEADS) -> float:
    """G = g_q g_k g_v g_a = L √d_h / (2 c β √(L − 1)): the weight product of the two-head teacher whose first-order
    output is the target (module docstring)."""
    return L * math.sqrt(d_h) / (2.0 * readout_c(d_h, heads) * beta * math.sqrt(L - 1))


def teacher_params(w_q, w_k, w_v, *, L: int, beta: float, u: float) -> dict:
    """Two-head teacher weights (H = 2, d_h = d, m = 1) with score amplitude u whose first-order output is the target.

    Head 1 has scores +u q k_ℓ and readout +g_a, head 2 scores −u q k_ℓ and readout −g_a; g_q = g_k = √(u √d_h/β),
    g_v = g_a = √(G/(g_q g_k)) with G from :func:`required_product`.  Returns {"Q", "K", "V": (2, d, d), "a":
    (2, d, 1)}.
    """
    d = len(w_q)
    gqk = math.sqrt(u * math.sqrt(d) / beta)
    gva = math.sqrt(required_product(L, beta, d) / gqk**2)
    e1 = np.zeros(d)
    e1[0] = 1.0
    Q1 = gqk * np.outer(e1, w_q)
    K1 = gqk * np.outer(e1, w_k)
    V1 = gva * np.outer(e1, w_v)
    a1 = gva * e1[:, None]
    return dict(Q=np.stack([Q1, -Q1]), K=np.stack([K1, K1]), V=np.stack([V1, V1]), a=np.stack([a1, -a1]))


def first_order_check(variant: str, L: int, d: int, seed: int = 0, n: int = 2000, u: float = 0.1) -> dict:
    """f of the teacher weights (:func:`teacher_params`) through ``attention_forward`` against the target, at score
    amplitudes u and u/2: relative errors ‖f − y‖/‖y‖ (each O(u²)), their ratio (4 to leading order), and the
    alignment A_f of the teacher and of the exact target with the target (1 for the target)."""
    from bnnzoo.diagnostics.alignment import alignment_from_arrays
    from bnnzoo.models.attention import attention_forward
    from bnnzoo.tasks.attention_task import attention_task

    task = attention_task(L=L, d=d, P=n, P_test=0, seed=seed)
    w = [np.asarray(task.meta[k]) for k in ("w_q", "w_k", "w_v")]
    beta = score_scale(variant, L)
    y = task.Y[:, 0]
    errs, A = [], []
    for uu in (u, u / 2):
        p = teacher_params(*w, L=L, beta=beta, u=uu)
        f = np.asarray(attention_forward(task.X, p, context_length=L, score_scale=beta, xp=np))[:, 0]
        errs.append(float(np.linalg.norm(f - y) / np.linalg.norm(y)))
        A.append(alignment_from_arrays(f, y[:, None]).mean_predictor)
    return dict(variant=variant, L=L, beta=beta, G=required_product(L, beta, d), u=u, rel_error=errs[0],
                rel_error_half=errs[1], ratio=errs[0] / errs[1], A_teacher=A[0],
                A_target=alignment_from_arrays(y, y[:, None]).mean_predictor)


def prior_parts(variant: str, L: int, d: int, seed: int = 0, n: int = 400, draws: int = 300) -> dict:
    """Variance of f under the prior (σ² = σ_a² = 1, H = 2, d_h = d, m = 1) split into the token-mean part f(β → 0)
    = c Σ_h a_hᵀ V_h x̄ (expected variance E|x̄|²/d = 1/L) and the rest f(β) − f(β → 0); Monte Carlo over ``draws``
    prior draws and ``n`` Gaussian contexts."""
    from bnnzoo.models.attention import attention_forward

    rng = np.random.default_rng(seed)
    beta = score_scale(variant, L)
    tok = rng.standard_normal((n, L, d))
    Q, K, V = (rng.standard_normal((draws, HEADS, d, d)) / math.sqrt(d) for _ in range(3))
    a = rng.standard_normal((draws, HEADS, d, 1))
    f = attention_forward(tok, Q, K, V, a, score_scale=beta, xp=np)[0]
    f0 = attention_forward(tok, Q, K, V, a, score_scale=1e-12, xp=np)[0]
    return dict(variant=variant, L=L, beta=beta, var_mean_part=float(np.mean(f0**2)), var_mean_part_theory=1.0 / L,
                var_rest=float(np.mean((f - f0) ** 2)), var_total=float(np.mean(f**2)))


def crossing(P, A, level: float = LEVEL):
    """(P*, flag): P where A first reaches ``level`` going up in P (log-linear interpolation); flag "" inside the
    range, "<" when A ≥ level already at the smallest P (P* ≤ that P, returned), ">" when A never reaches it
    (P* > the largest P, returned)."""
    order = np.argsort(P)
    P, A = np.asarray(P, float)[order], np.asarray(A, float)[order]
    if A[0] >= level:
        return float(P[0]), "<"
    for i in range(1, len(P)):
        if A[i - 1] < level <= A[i]:
            x0, x1 = math.log(P[i - 1]), math.log(P[i])
            return float(math.exp(x0 + (level - A[i - 1]) * (x1 - x0) / (A[i] - A[i - 1]))), ""
    return float(P[-1]), ">"


def next_P(evaluated: dict, ladder, level: float = LEVEL, stride: int = 1):
    """The next ladder point of a bracket search, or None when the crossing is bracketed between neighbouring ladder
    points or the ladder ends.

    ``evaluated`` maps P to A_f (points off the ladder are ignored).  All A < level: ``stride`` ladder steps above
    the largest P; A ≥ level at the smallest P: ``stride`` steps below it; otherwise the ladder point halfway
    between the two points of the first crossing, while they are not neighbours on the ladder."""
    Ps = sorted(p for p in evaluated if p in ladder)
    if not Ps:
        return None
    A = [evaluated[p] for p in Ps]
    idx = [ladder.index(p) for p in Ps]
    if all(a < level for a in A):
        return ladder[min(idx[-1] + stride, len(ladder) - 1)] if idx[-1] < len(ladder) - 1 else None
    if A[0] >= level:
        return ladder[max(idx[0] - stride, 0)] if idx[0] > 0 else None
    for j in range(1, len(Ps)):
        if A[j - 1] < level <= A[j]:
            return ladder[(idx[j - 1] + idx[j]) // 2] if idx[j] - idx[j - 1] > 1 else None
    return None


def start_P(ladder, prev: float | None, start: int) -> int:
    """The ladder point nearest (in log) to the previous seed's P*, or ``start``."""
    if prev is None:
        return start
    return min(ladder, key=lambda p: abs(math.log(p) - math.log(prev)))


def entry(variant: str, L: int, seed: int, P: int, s: dict, progress: bool = False, seed_offset: int = 0) -> dict:
    """Sample the attention head at one (variant, L, seed, P): A_f on the test set and the sampler health.  ``seed``
    draws the task (teacher, contexts); the sampler's seed is ``seed + seed_offset``."""
    import bnnzoo
    from bnnzoo.diagnostics.alignment import alignment
    from bnnzoo.tasks.attention_task import attention_task

    beta = score_scale(variant, L)
    task = attention_task(L=L, d=s["d"], P=P, P_test=s["P_test"], seed=seed)
    t0 = time.time()
    run = bnnzoo.sample("softmax_attention", task, num_chains=C.CHAINS, num_warmup=s["warmup"],
                        num_samples=s["samples"], seed=seed + seed_offset, sampler="auto", progress=progress,
                        context_length=L, heads=HEADS, kappa=s["kappa"], score_scale=beta)
    secs = time.time() - t0
    A = alignment(run)
    cm = np.asarray(A.chain_means, float)
    return dict(variant=variant, L=L, seed=seed, P=P, beta=beta, A=A.mean_predictor, A_sd=A.sd,
                A_chains=cm.tolist(), A_se_chains=float(cm.std(ddof=1) / math.sqrt(len(cm))),
                rel_error=A.rel_error, seconds=round(secs, 1), health=C.health_summary(run))


_slope = C.loglog_slope


def _mean_se(v):
    """Mean, standard error over seeds and the number of seeds with a value."""
    m, se = C.mean_se(v)
    return m, se, sum(x is not None for x in v)


def analyse(summary: dict) -> dict:
    """P* per (variant, seed, L), slopes per seed, their mean ± s.e. over seeds, and Δ between variants, with what
    follows from them.

    Per variant: ``by_L`` (β, the first-order weight product G, geometric-mean P* over seeds, entries and how many
    equilibrated per L) and ``sqrt_L_holds`` (the mean slope within 2 s.e. of ½; None without a slope or its s.e.).
    ``delta_fixed_minus_sqrtL``: Δ = slope(β = 1) − slope(β = √L) over seeds, ``gamma`` = 2Δ (the exponent γ of
    P* ∝ G^γ D(L)), ``beta_exponent_for_sqrt_L`` = (slope(β = 1) − ½)/γ (a score scale β ∝ L^b with this b would
    give P* ∝ √L, an extrapolation that assumes β acts only through G; None unless Δ > 0),
    ``beta_decides_exponent`` (|Δ| > 2 s.e.) and ``contradicts_first_order`` (Δ < 0: the first-order argument
    predicts Δ = γ/2 > 0).  ``health_counts``: entries per sampler-health status."""
    s = summary["settings"]
    curves = {}
    for e in summary["entries"]:
        curves.setdefault((e["variant"], e["seed"], e["L"]), {})[e["P"]] = e["A"]
    pstar = {}
    for (v, seed, L), ev in curves.items():
        p, flag = crossing(list(ev), list(ev.values()))
        pstar.setdefault(v, {}).setdefault(seed, {})[L] = dict(P_star=p, flag=flag)
    out = {}
    for v in s["variants"]:
        per_seed = {}
        for seed, byL in sorted(pstar.get(v, {}).items()):
            Ls = [L for L in sorted(byL) if byL[L]["flag"] == ""]
            b, se = _slope(Ls, [byL[L]["P_star"] for L in Ls]) if len(Ls) >= 3 else (None, None)
            short = [L for L in Ls if L < max(s["L"])]
            b_short = _slope(short, [byL[L]["P_star"] for L in short])[0] if len(short) >= 3 else None
            per_seed[seed] = dict(slope=b, slope_fit_se=se, L_used=Ls, slope_without_largest_L=b_short)
        m, se, n = _mean_se([r["slope"] for r in per_seed.values()])
        m_short, se_short, _ = _mean_se([r["slope_without_largest_L"] for r in per_seed.values()])
        byL = {}
        for L in s["L"]:
            logs = [math.log(pstar[v][sd][L]["P_star"]) for sd in pstar.get(v, {})
                    if L in pstar[v][sd] and pstar[v][sd][L]["flag"] == ""]
            lm, lse, ln = _mean_se(logs)
            st = [e["health"]["status"] for e in summary["entries"] if e["variant"] == v and e["L"] == L]
            beta = score_scale(v, L)
            byL[L] = dict(beta=beta, G=required_product(L, beta, s["d"]), log_P_star=lm, log_P_star_se=lse,
                          n_seeds=ln, P_star_geo=math.exp(lm) if lm is not None else None,
                          n_entries=len(st), n_equilibrated=st.count("equilibrated"))
        holds = abs(m - THEORY_SLOPE) <= 2 * se if m is not None and se else None
        out[v] = dict(P_star=pstar.get(v, {}), per_seed=per_seed, slope_mean=m, slope_se=se, n_seeds=n,
                      slope_without_largest_L_mean=m_short, slope_without_largest_L_se=se_short,
                      sqrt_L_holds=holds, by_L=byL)
    delta = None
    if "fixed" in out and "sqrtL" in out:
        fx, sq = out["fixed"]["per_seed"], out["sqrtL"]["per_seed"]
        d = [fx[sd]["slope"] - sq[sd]["slope"] for sd in fx
             if sd in sq and fx[sd]["slope"] is not None and sq[sd]["slope"] is not None]
        m, se, n = _mean_se(d)
        d2 = [fx[sd]["slope_without_largest_L"] - sq[sd]["slope_without_largest_L"] for sd in fx
              if sd in sq and fx[sd]["slope_without_largest_L"] is not None
              and sq[sd]["slope_without_largest_L"] is not None]
        m2, se2, _ = _mean_se(d2)
        fixed_slope = out["fixed"]["slope_mean"]
        delta = dict(mean=m, se=se, n_seeds=n, per_seed=d, without_largest_L=m2, without_largest_L_se=se2,
                     gamma=2 * m if m is not None else None, gamma_se=2 * se if se else None,
                     beta_exponent_for_sqrt_L=((fixed_slope - THEORY_SLOPE) / (2 * m)
                                               if m is not None and m > 0 and fixed_slope is not None else None),
                     beta_decides_exponent=bool(abs(m) > 2 * se) if m is not None and se else None,
                     contradicts_first_order=bool(m < 0) if m is not None else None)
    health = [e["health"]["status"] for e in summary["entries"]]
    return dict(variants=out, delta_fixed_minus_sqrtL=delta, theory_slope=THEORY_SLOPE,
                health_counts={h: health.count(h) for h in sorted(set(health))})


def run(argv=None) -> int:
    argv = [] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--variants", default=None,
                   help=f"comma-separated, some of {', '.join(VARIANTS)} (default per size: ci fixed; cpu "
                        "fixed,sqrtL; paper all)")
    p.add_argument("--L", default=None, help="comma-separated context lengths >= 2 (default per size)")
    p.add_argument("--seeds", default=None, help="comma-separated task seeds >= 0 (default per size); the sampler's "
                                                  "seed of an entry is its task seed + --seed")
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps (default per size)")
    p.add_argument("--samples", type=int, default=None, help="kept draws per chain (default per size)")
    p.add_argument("--resume", action="store_true", help="continue a stopped run from its JSON file")
    args = p.parse_args(argv)
    C.check_args(args)
    s = dict(SIZES[args.size])
    if args.variants is not None:
        vs = tuple(x.strip() for x in args.variants.split(",") if x.strip())
        if not vs or set(vs) - set(VARIANTS) or len(set(vs)) != len(vs):
            raise ValueError(f"--variants must name some of {', '.join(VARIANTS)}, got {args.variants!r}")
        s["variants"] = vs
    if args.L is not None:
        s["L"] = C.int_list(args.L, "--L", 2)
    if args.seeds is not None:
        s["seeds"] = C.int_list(args.seeds, "--seeds", 0)
    for name, lo in (("warmup", 0), ("samples", 1)):
        v = getattr(args, name)
        if v is not None:
            if v < lo:
                raise ValueError(f"--{name} must be >= {lo}, got {v}")
            s[name] = v
    stem = args.name or f"{NAME}_{args.size}"
    old = C.previous_run(args, stem, s, ENTRY_KEYS) if args.resume else None
    files = C.ResultFiles(args.out, stem, args.overwrite or args.resume)
    prov = C.provenance(args, argv)
    if old:                    # keep the original command and start; list the resumptions
        prov = C.continued_provenance(old, prov)
    summary = dict(provenance=prov, settings=s, heads=HEADS, level=LEVEL, chains=C.CHAINS, sampler="auto",
                   first_order=[first_order_check(v, L, s["d"]) for v in s["variants"] for L in s["L"]],
                   prior_parts=[prior_parts(v, L, s["d"]) for v in s["variants"] for L in s["L"]],
                   entries=list(old["entries"]) if old else [])
    done = {(e["variant"], e["L"], e["seed"], e["P"]): e for e in summary["entries"]}
    ladder, st = list(s["ladder"]), s["stride"]
    summary["analysis"] = analyse(summary)
    files.write(summary)
    prev = {}
    for seed in s["seeds"]:
        for v in s["variants"]:
            for L in s["L"]:
                ev = {P: e["A"] for (vv, LL, sd, P), e in done.items() if (vv, LL, sd) == (v, L, seed)}
                P = start_P(ladder, prev.get((v, L)), s["start"]) if not ev else next_P(ev, ladder, stride=st)
                while P is not None and len(ev) < s["max_evals"]:
                    C.log(f"{NAME}: {v} (β = {score_scale(v, L):.3g}), L = {L}, seed {seed}, P = {P}")
                    e = entry(v, L, seed, P, s, args.progress, args.seed)
                    summary["entries"].append(e)
                    done[(v, L, seed, P)] = e
                    ev[P] = e["A"]
                    summary["analysis"] = analyse(summary)
                    files.write(summary)
                    C.log(f"{NAME}: A_f = {e['A']:.3f} ({e['seconds']} s, {e['health']['status']})")
                    P = next_P(ev, ladder, stride=st)
                if ev:
                    pst, flag = crossing(list(ev), list(ev.values()))
                    if flag == "":
                        prev[(v, L)] = pst
    summary["analysis"] = analyse(summary)
    files.write(summary)
    C.log(f"{NAME}: wrote {files.json}")
    return 0
