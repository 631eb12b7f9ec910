"""The Δ example of Saxe's talk "Models of representation learning dynamics" (claim G15: "nonlinear representations
emerge before they are strictly necessary"): full-batch gradient descent on a gated deep linear network whose task
has a linear part of strength s_lin = Δ/2 and an XoR part of strength s_XoR = √(2 + Δ²)/P, over several Δ.

The task (:func:`bnnzoo.tasks.gated_tasks.delta_xor_task`, our reconstruction of the talk's example, which gives both
of its strengths): P = 4 points x ∈ {±1}² with a constant input Δ, so the input is (x₁, x₂, Δ); target
y = (1 − x₁x₂)/2 ∈ {0, 1}, the XoR.  Its linear part is the mean ½ (the best linear fit, through the constant
input), the rest z/2 with z = −x₁x₂ is the XoR part no linear map fits.  The net: an always-open linear pathway
x → h_lin → out and four gated pathways x → h_k → out, pathway k open on example k only; every pathway has one
hidden layer (two weight matrices) of width ``hidden`` and no pathway shares an edge.  The linear pathway's effective
dataset has the one mode s_lin = Δ/2 with input variance λ_lin = Δ²; the gated pathways of the two examples with
y = 1 have s_XoR = √(2 + Δ²)/4 with λ_XoR = (2 + Δ²)/4, those with y = 0 none.

Gradient descent (numpy, float64, deterministic given the start) on ½⟨(y − f)²⟩ (mean over the 4 points) from
i.i.d. N(0, σ0²) weights, ``seeds`` starts per Δ, learning rate ``lr`` (time t = lr × step).  Measured per Δ:

* the output f(t) split into its mean (linear part, target ½) and its XoR component ⟨f z⟩ (target ½), and the same
  split of the gated pathways' summed output; the times at which the mean reaches half (t½ mean) and 90 % (t90 mean)
  of ½, and the XoR component half (t½ XoR) and 90 %;
* **"strictly necessary" (our operational definition; the talk's statement gives none and the theory page does not
  define it)**: the gated (nonlinear) pathways are strictly necessary only for the XoR residual z/2, and only once
  the linear part is learned.  A net that used its nonlinear pathways only when strictly necessary would carry the
  whole mean in the linear pathway (gated share of the mean 0) and learn the XoR part after the linear part
  (t½ XoR > t90 mean).  We report the fraction of seeds with t½ XoR < t90 mean ("emerges before necessary") and
  the gated pathways' share of the output's mean when the XoR component is half learned and at the end, the linear
  pathway's mean output and the largest |output| of a y = 0 point's own gated pathway at the end;
* emergence of each pathway: the time its strength (its end-to-end map along its input mode) reaches 10 % of its
  isolated endpoint s/λ, against the closed form of the isolated pathway (D = 2, τ du/dt = 2u(s − λu)) from its
  start's effective strength u0 = ‖A v + Bᵀ‖²/4 (the growing combination of the unbalanced start, [derived] as in
  ``deep_linear_dynamics``); the pathways race (they share the output's error), so the slower pathway departs from
  its isolated time;
* the isolated mode strengths' order: s_XoR > s_lin below Δ* = √(2/3) ≈ 0.816 (P = 4), where the XoR pathways are
  predicted to emerge first.

No sampling: no sampler health and no population certificate (the JSON says so).

Run: ``python -m reproduce gated_delta --size ci|cpu|paper [--deltas 0.5,1,2] [--seeds 5] [--overwrite]``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from . import _common as C

NAME = "gated_delta"
CLAIMS = ("G15",)
SAMPLER = "gradient descent (deterministic)"
# Δ values, starts per Δ, hidden width of every pathway, per-entry start scale σ0, learning rate, record spacing in
# steps, longest time, stop (loss below this fraction of its start for every seed); the talk's net sizes are not
# known to us, so "paper" only widens the net and adds starts
SIZES = {
    "ci": dict(deltas=(0.5, 2.0), seeds=2, hidden=4, sigma0=1e-3, lr=0.01, record=2, t_max=150.0, stop=1e-8),
    "cpu": dict(deltas=(0.25, 0.5, 0.816, 1.0, 2.0, 4.0, 8.0), seeds=5, hidden=8, sigma0=1e-3, lr=0.01, record=2,
                t_max=300.0, stop=1e-8),
    "paper": dict(deltas=(0.25, 0.5, 0.816, 1.0, 2.0, 4.0, 8.0), seeds=10, hidden=32, sigma0=1e-3, lr=0.01,
                  record=2, t_max=300.0, stop=1e-8),
}
P = 4
DELTA_STAR = math.sqrt(2.0 / 3.0)
"""Δ at which s_XoR = √(2 + Δ²)/4 equals s_lin = Δ/2."""
EMERGE_Q = 0.1
"""Fraction of the isolated endpoint s/λ at which a pathway counts as emerged."""


def strengths(delta: float) -> dict:
    """The isolated mode strengths s and input variances λ of the linear and the (y = 1) gated pathways."""
    return dict(s_lin=delta / 2.0, lam_lin=delta**2, s_xor=math.sqrt(2.0 + delta**2) / P, lam_xor=(2.0 + delta**2) / P)


def isolated_time(s: float, lam: float, u0: float, q: float) -> float | None:
    """Time at which an isolated two-layer mode (τ du/dt = 2u(s − λu)) from u0 reaches q · s/λ; None if it starts
    there already."""
    a = q * (s / (lam * u0) - 1.0) / (1.0 - q)
    return math.log(a) / (2.0 * s) if a > 1.0 else None


def gradient_descent(A, B, x, y, G, *, lr: float, steps_max: int, record_every: int, stop: float) -> dict:
    """Full-batch gradient descent on ½⟨(y − f)²⟩ of pathways k with maps M_k = B_k A_k (one output).

    Parameters
    ----------
    A : (S, K, H, n_in) first-layer weights of the K pathways for S starts.
    B : (S, K, H) second-layer weights (the output is one-dimensional).
    x : (P, n_in) inputs; y : (P,) targets; G : (P, K) pathway gates.

    Returns
    -------
    dict
        t (n_rec,), maps (S, n_rec, K, n_in), loss (S, n_rec), steps, stopped.
    """
    A, B = np.array(A, float), np.array(B, float)
    n = x.shape[0]
    ts, maps, losses = [], [], []
    step = 0
    while True:
        M = np.einsum("skh,skhi->ski", B, A)
        f = np.einsum("ski,ni,nk->sn", M, x, G)
        e = y[None] - f
        loss = 0.5 * np.mean(e**2, axis=1)
        if step % record_every == 0:
            ts.append(step * lr)
            maps.append(M)
            losses.append(loss)
            if step >= steps_max or np.all(loss <= stop * losses[0]):
                break
        gM = -np.einsum("sn,nk,ni->ski", e, G, x) / n
        gA = B[..., None] * gM[:, :, None, :]
        gB = np.einsum("ski,skhi->skh", gM, A)
        A -= lr * gA
        B -= lr * gB
        step += 1
    return dict(t=np.asarray(ts), maps=np.stack(maps, axis=1), loss=np.stack(losses, axis=1), steps=step,
                stopped=bool(np.all(losses[-1] <= stop * losses[0])))


def crossing(t, v, level) -> float | None:
    """First time the series ``v`` reaches ``level`` (from below), linearly interpolated; None if never."""
    idx = np.nonzero(v >= level)[0]
    if idx.size == 0:
        return None
    i = int(idx[0])
    if i == 0:
        return float(t[0])
    return float(t[i - 1] + (level - v[i - 1]) / (v[i] - v[i - 1]) * (t[i] - t[i - 1]))


def _ms(vals) -> dict:
    m, se = C.mean_se(vals)
    return dict(mean=m, se=se, per_seed=list(vals))


def delta_entry(delta: float, s_: dict, seed: int) -> dict:
    """Gradient descent on the Δ task from ``seeds`` random starts and its measures (module docstring)."""
    from bnnzoo.tasks.gated_tasks import delta_xor_task, effective_dataset, get_spec

    task = delta_xor_task(delta, hidden=s_["hidden"])
    spec = get_spec(task.meta["spec"])
    paths = spec.pathways
    names = [p.name for p in paths]
    used = [e for p in paths for e in p.edges]
    if len(used) != len(set(used)):
        raise ValueError("the pathways of the Δ net must share no edge")
    xs, _, _ = spec.unpack(task.X)
    x = xs[:, spec.input_slices["x"]]
    y = task.Y[:, 0]
    G = np.stack([spec.pathway_gate(task.X, p) for p in paths], axis=1)          # (P, K)
    lin = names.index("in_lin>out_lin")
    gated = [i for i in range(len(names)) if i != lin]
    eff = {p.name: effective_dataset(spec, task.X, task.Y, p) for p in paths}
    st = strengths(delta)
    # the isolated strengths from the effective datasets, against the talk's formulas
    s_lin_eff = float(eff[names[lin]].sv[0])
    s_xor_eff = [float(eff[names[k]].sv[0]) for k in gated if y[int(np.argmax(G[:, k]))] > 0]

    S, K, H, n_in = s_["seeds"], len(paths), s_["hidden"], x.shape[1]
    rng = np.random.default_rng([seed, int(round(delta * 1e6))])
    A0 = s_["sigma0"] * rng.standard_normal((S, K, H, n_in))
    B0 = s_["sigma0"] * rng.standard_normal((S, K, H))
    t0 = time.time()
    g = gradient_descent(A0, B0, x, y, G, lr=s_["lr"], steps_max=int(round(s_["t_max"] / s_["lr"])),
                         record_every=s_["record"], stop=s_["stop"])
    t, maps = g["t"], g["maps"]                                                  # maps (S, n_rec, K, n_in)
    out = np.einsum("srki,ni->srkn", maps, x)                                    # each pathway's output per point
    f = np.einsum("srkn,nk->srn", out, G)
    f_lin = out[:, :, lin, :]
    f_gated = f - f_lin
    z = -x[:, 0] * x[:, 1]
    mean_f, xor_f = f.mean(axis=-1), (f * z).mean(axis=-1)
    mean_g, xor_g = f_gated.mean(axis=-1), (f_gated * z).mean(axis=-1)
    lin_comp = np.abs(f @ x[:, :2] / P).max(axis=-1)                            # x₁, x₂ components (target 0)

    tm50 = [crossing(t, m, 0.25) for m in mean_f]
    tm90 = [crossing(t, m, 0.45) for m in mean_f]
    tx50 = [crossing(t, c, 0.25) for c in xor_f]
    tx90 = [crossing(t, c, 0.45) for c in xor_f]
    before = [None if (a is None or b is None) else bool(a < b) for a, b in zip(tx50, tm90)]

    def at(series, times):
        return [float(np.interp(tt, t, v)) if tt is not None else None for v, tt in zip(series, times)]

    share_half = [a / b if (a is not None and b) else None for a, b in zip(at(mean_g, tx50), at(mean_f, tx50))]
    share_end = (mean_g[:, -1] / mean_f[:, -1]).tolist()
    # at the end: the linear pathway's mean output, and the largest |output| of a y = 0 point's own gated pathway
    lin_end = f_lin[:, -1].mean(axis=-1).tolist()
    y0 = [k for k in gated if y[int(np.argmax(G[:, k]))] <= 0]
    y0_end = [float(max(abs(out[si, -1, k, int(np.argmax(G[:, k]))]) for k in y0)) for si in range(S)]

    # emergence of each pathway against its isolated closed form
    v_lin = np.array([0.0, 0.0, 1.0])
    emerge = dict(linear=[], xor=[])
    for si in range(S):
        u_lin = maps[si, :, lin] @ v_lin
        a = A0[si, lin] @ v_lin + B0[si, lin]
        u0 = float(a @ a) / 4.0
        th = isolated_time(st["s_lin"], st["lam_lin"], u0, EMERGE_Q)
        ms = crossing(t, u_lin, EMERGE_Q * st["s_lin"] / st["lam_lin"])
        emerge["linear"].append(dict(u0=u0, closed_form=th, measured=ms,
                                     rel_error=(abs(ms - th) / th if (ms is not None and th) else None)))
        for k in gated:
            pt = int(np.argmax(G[:, k]))
            if y[pt] <= 0:
                continue
            v = x[pt] / np.linalg.norm(x[pt])
            u = maps[si, :, k] @ v
            a = A0[si, k] @ v + B0[si, k]
            u0 = float(a @ a) / 4.0
            th = isolated_time(st["s_xor"], st["lam_xor"], u0, EMERGE_Q)
            ms = crossing(t, u, EMERGE_Q * st["s_xor"] / st["lam_xor"])
            emerge["xor"].append(dict(start=si, u0=u0, closed_form=th, measured=ms,
                                      rel_error=(abs(ms - th) / th if (ms is not None and th) else None)))

    def col(rows, key):
        return [r[key] for r in rows]

    # per start: which pathway emerged first (the earlier of its two XoR pathways against the linear one; a pathway
    # that never emerges within t_max comes second)
    first = []
    for si in range(S):
        xm = [r["measured"] for r in emerge["xor"] if r["start"] == si and r["measured"] is not None]
        lm = emerge["linear"][si]["measured"]
        if xm and (lm is None or min(xm) < lm):
            first.append("xor")
        elif lm is not None:
            first.append("linear")
        else:
            first.append(None)                                       # neither emerged within t_max
    loss = g["loss"]
    return dict(
        delta=delta, **st, s_lin_effective_dataset=s_lin_eff, s_xor_effective_dataset=s_xor_eff,
        isolated_order="xor first" if st["s_xor"] > st["s_lin"] else "linear first",
        steps=g["steps"], stopped=g["stopped"], seconds=round(time.time() - t0, 2),
        loss_end_rel=_ms((loss[:, -1] / loss[:, 0]).tolist()),
        loss_monotone=bool(np.all(np.diff(loss, axis=1) <= 1e-12 * loss[:, :-1] + 1e-15)),
        max_abs_linear_input_component=float(lin_comp.max()),
        t_half_mean=_ms(tm50), t90_mean=_ms(tm90), t_half_xor=_ms(tx50), t90_xor=_ms(tx90),
        ratio_t_half_xor_over_t_half_mean=_ms([a / b if (a is not None and b) else None for a, b in zip(tx50, tm50)]),
        ratio_t_half_xor_over_t90_mean=_ms([a / b if (a is not None and b) else None for a, b in zip(tx50, tm90)]),
        xor_half_before_mean_90=dict(fraction=(sum(bool(b) for b in before if b is not None)
                                               / max(1, sum(b is not None for b in before))), per_seed=before),
        gated_share_of_mean_at_t_half_xor=_ms(share_half), gated_share_of_mean_end=_ms(share_end),
        xor_component_end=_ms(xor_f[:, -1].tolist()), mean_end=_ms(mean_f[:, -1].tolist()),
        linear_pathway_mean_end=_ms(lin_end), y0_gated_output_end_max_abs=_ms(y0_end),
        emergence=dict(
            q=EMERGE_Q,
            linear_measured=_ms(col(emerge["linear"], "measured")),
            linear_closed_form=_ms(col(emerge["linear"], "closed_form")),
            linear_rel_error=_ms(col(emerge["linear"], "rel_error")),
            xor_measured=_ms(col(emerge["xor"], "measured")),
            xor_closed_form=_ms(col(emerge["xor"], "closed_form")),
            xor_rel_error=_ms(col(emerge["xor"], "rel_error")),
            linear_per_start=emerge["linear"], xor_per_pathway=emerge["xor"],
            first_per_seed=first,
            xor_first_fraction=(sum(f_ == "xor" for f_ in first if f_ is not None)
                                / max(1, sum(f_ is not None for f_ in first)))),
    )


def summarise(entries: list[dict]) -> dict:
    """Per Δ, the numbers the claim row quotes, in Δ order."""
    es = sorted(entries, key=lambda e: e["delta"])
    return dict(
        deltas=[e["delta"] for e in es], delta_star=DELTA_STAR,
        s_lin=[e["s_lin"] for e in es], s_xor=[e["s_xor"] for e in es],
        t_half_mean=[e["t_half_mean"]["mean"] for e in es], t90_mean=[e["t90_mean"]["mean"] for e in es],
        t_half_xor=[e["t_half_xor"]["mean"] for e in es],
        xor_half_before_mean_90=[e["xor_half_before_mean_90"]["fraction"] for e in es],
        gated_share_of_mean_at_t_half_xor=[e["gated_share_of_mean_at_t_half_xor"]["mean"] for e in es],
        gated_share_of_mean_end=[e["gated_share_of_mean_end"]["mean"] for e in es],
        y0_gated_output_end_max_abs=[max(e["y0_gated_output_end_max_abs"]["per_seed"]) for e in es],
        xor_first_fraction=[e["emergence"]["xor_first_fraction"] for e in es],
        isolated_order=[e["isolated_order"] for e in es],
        emergence_rel_error_faster_pathway=[
            e["emergence"]["xor_rel_error"]["mean"] if e["isolated_order"] == "xor first"
            else e["emergence"]["linear_rel_error"]["mean"] for e in es],
        all_stopped=all(e["stopped"] for e in es), all_monotone=all(e["loss_monotone"] for e in es))


def run(argv=None) -> int:
    argv = [] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--deltas", default=None, help="comma-separated Δ values > 0 (default per size)")
    p.add_argument("--seeds", type=int, default=None, help="random starts per Δ, >= 1 (default per size)")
    args = p.parse_args(argv)
    C.check_args(args)
    s_ = dict(SIZES[args.size])
    if args.deltas is not None:
        try:
            ds = tuple(sorted({float(v) for v in args.deltas.split(",") if v.strip()}))
        except ValueError:
            ds = ()
        if not ds or not all(math.isfinite(d) and d > 0 for d in ds):
            raise ValueError(f"--deltas must be comma-separated numbers > 0, got {args.deltas!r}")
        s_["deltas"] = ds
    if args.seeds is not None:
        if args.seeds < 1:
            raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
        s_["seeds"] = args.seeds
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)
    res = dict(provenance=C.provenance(args, argv), size=args.size, settings=s_, sampler=SAMPLER,
               strictly_necessary_definition=(
                   "ours (the talk's statement gives none): the gated pathways are strictly necessary only for the "
                   "XoR residual z/2 and only once the linear part (the mean 1/2) is learned; they emerge before "
                   "strictly necessary when the XoR component is half learned before the mean reaches 90 % "
                   "(t_half_xor < t90_mean), and carry a share of the mean that a linear pathway could carry"),
               entries=[], summary={})
    t_all = time.time()
    for d in s_["deltas"]:
        C.log(f"{NAME}: Δ = {d}, {s_['seeds']} start(s), hidden {s_['hidden']}")
        e = delta_entry(d, s_, args.seed)
        res["entries"].append(e)
        res["summary"] = summarise(res["entries"])
        files.write(res)
        C.log(f"{NAME}: t½ mean {C.fmt(e['t_half_mean']['mean'])}, t90 mean {C.fmt(e['t90_mean']['mean'])}, "
              f"t½ XoR {C.fmt(e['t_half_xor']['mean'])} ({e['steps']} steps, {e['seconds']} s)")
    res["seconds"] = round(time.time() - t_all, 1)
    files.write(res)
    C.log(f"{NAME}: wrote {files.json}")
    return 0
