# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Sample complexity: three-layer erf net and softmax attention (Rubin, Davidovich & Ringel)
#
# **What the paper reports** (Rubin, Davidovich & Ringel, arXiv 2512.04165, as summarised in docs/theory.md §8; the
# exact equations were not available to us, so the architectures below are our documented choices):
#
# * A three-layer (two hidden layers) erf network learning the single-index target y = He₃(w*·x), x ∈ ℝᵈ Gaussian,
#   at equilibrium (Langevin with weight decay = our Gaussian prior, ridge κ = our likelihood variance), needs
#   **P\* ∝ d** samples; the alignment curves A_f(P) = ⟨f, y⟩/⟨y, y⟩ **collapse when plotted against P/d**; the
#   first-layer weights develop "specialist" neurons (overlap with w* beyond 3 NNGP standard deviations).
#   A kernel (the NNGP, no feature learning) needs P ∼ d³.
# * A softmax attention head learning a cubic target of its context needs **P\* ∝ √(L d³)** (L = context length):
#   at fixed d, P\* should grow like √L.
#
# **What this notebook measures** (computed below, at CI size by default): NUTS posteriors (`bnnzoo.sample`) of the
# zoo entries `three_layer_erf` (on `tasks.hermite_task`) and `softmax_attention` (on `tasks.attention_task`) over a
# small grid of P; the alignment of the posterior-mean predictor on fresh test inputs
# (`bnnzoo.diagnostics.alignment.alignment`), the number of specialist first-layer neurons
# (`first_layer_overlaps`), and, for contrast, the alignment of the NNGP posterior mean (`bnnzoo.theory.gp_posterior`,
# erf kernel, two hidden layers, the same κ — the N → ∞ limit of this standard-readout net), which is cheap enough to
# sweep to large P. P\* is read off where A_f crosses 0.25 (log-linear interpolation). The stored results of the
# larger sweep `python -m reproduce sample_complexity` are shown next to them, labelled as such.

# %% tags=["parameters"]
PAPER_SIZE = False        # True: the larger sweep of `python -m reproduce sample_complexity` (tens of minutes on a CPU)
SEED = 0
SHOW_STORED = True        # also load and display reproduce/results/sample_complexity.json when present

# %%
import os
import json
import math
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import bnnzoo
from bnnzoo import theory
from bnnzoo.diagnostics.alignment import alignment, alignment_from_arrays, first_layer_overlaps
from bnnzoo.tasks.attention_task import attention_task
from bnnzoo.tasks.hermite import hermite_task

KAPPA = 0.05              # ridge / likelihood variance κ (as in the benchmark)
LEVEL = 0.25              # A_f level that defines P*
if PAPER_SIZE:
    DS, RATIOS, WIDTH = (8, 16, 32), (2, 4, 8, 16, 32), 32
    LS, ATT_D, ATT_PS = (2, 4, 8), 8, (32, 64, 128, 256, 512)
    CHAINS_3L, CHAINS_ATT, WARMUP, SAMPLES, P_TEST = 2, 2, 150, 100, 1000
else:
    DS, RATIOS, WIDTH = (8, 16), (2, 8, 32), 16
    LS, ATT_D, ATT_PS = (2, 8), 8, (32, 64, 128)
    # compiling the sampler (≈ 8 s of CPU per P) dominates at CI size: one chain for the three-layer net (its chains
    # agree to ±0.02 in the stored sweep), two for attention (whose chains can disagree)
    CHAINS_3L, CHAINS_ATT, WARMUP, SAMPLES, P_TEST = 1, 2, 100, 60, 500
NUTS_KW = dict(num_warmup=WARMUP, num_samples=SAMPLES, seed=SEED, progress=False, max_tree_depth=8, sampler="nuts")
OUT = Path(os.environ.get("BNNZOO_NB_OUT", "figures"))
OUT.mkdir(parents=True, exist_ok=True)


def crossing(P, A, level=LEVEL):
    """P where A first rises through ``level`` (log-linear interpolation); None if it never does in range."""
    P, A = np.asarray(P, float), np.asarray(A, float)
    if A[0] >= level:
        return float(P[0])
    for i in range(1, len(P)):
        if A[i - 1] < level <= A[i]:
            x0, x1 = math.log(P[i - 1]), math.log(P[i])
            return float(math.exp(x0 + (level - A[i - 1]) * (x1 - x0) / (A[i] - A[i - 1])))
    return None


def nngp_alignment(task):
    """A_f of the NNGP posterior mean (erf kernel, two hidden layers, noise κ) on the task's test set."""
    gp = theory.gp_posterior(task.X, task.Y, task.X_test, nonlinearity="erf", depth=2, temperature=KAPPA)
    return alignment_from_arrays(gp.mean, task.Y_test).mean_predictor


# %% [markdown]
# ## Three-layer erf net on He₃: alignment versus P at two input dimensions
#
# Standard readout f = aᵀ erf(h²)/√N2, all prior variances 1, N1 = N2 = `WIDTH`, κ = 0.05.

# %%
t0 = time.time()
three = []
for d in DS:
    for r in RATIOS:
        P = int(r * d)
        task = hermite_task(d=d, P=P, P_test=P_TEST, seed=SEED)
        idata = bnnzoo.sample("three_layer_erf", task, width1=WIDTH, width2=WIDTH, kappa=KAPPA, num_chains=CHAINS_3L,
                              **NUTS_KW)
        A = alignment(idata)
        ov = first_layer_overlaps(idata, task.meta["w_star"])
        three.append(dict(d=d, P=P, P_over_d=P / d, A=A.mean_predictor, A_sd=A.sd, A_chains=A.chain_means.tolist(),
                          A_nngp=nngp_alignment(task), specialists=ov.mean_specialists, chance=ov.chance, q_star=ov.q_star))
        print(f"d={d:3d} P={P:5d} P/d={P / d:4.0f}  A_f={A.mean_predictor:6.3f} (chains "
              f"{' / '.join(f'{a:.2f}' for a in A.chain_means)})  NNGP A_f={three[-1]['A_nngp']:6.3f}  "
              f"specialists={ov.mean_specialists:.2f} (chance {ov.chance:.2f})  <m_j^2>={ov.q_star:.2f} (prior 1)",
              flush=True)
print(f"three-layer sweep: {time.time() - t0:.0f} s")


def curve(rows, d, key="A"):
    rs = sorted((r for r in rows if r["d"] == d), key=lambda r: r["P"])
    return np.array([r["P"] for r in rs]), np.array([r[key] for r in rs])


pstar = {d: crossing(*curve(three, d)) for d in DS}
print("BNN P*(A=0.25):", {d: (round(p, 1) if p else None) for d, p in pstar.items()},
      " P*/d:", {d: (round(p / d, 2) if p else None) for d, p in pstar.items()})

# %% [markdown]
# ## The NNGP baseline on a dense grid of P (no sampling needed)
#
# The kernel predictor is one linear solve, so we can follow it to P ≫ d and fit how its P\* grows with d.

# %%
t0 = time.time()
GP_DS = (8, 12, 16) if not PAPER_SIZE else (8, 12, 16, 24)
gp_curves = {}
for d in GP_DS:
    Ps = np.unique(np.round(d * np.geomspace(2, 128 if d <= 16 else 256, 11)).astype(int))
    gp_curves[d] = (Ps, np.array([nngp_alignment(hermite_task(d=d, P=int(P), P_test=P_TEST, seed=SEED))
                                  for P in Ps]))
pstar_gp = {d: crossing(*gp_curves[d]) for d in GP_DS}
ok = [d for d in GP_DS if pstar_gp[d]]
gp_exponent = float(np.polyfit(np.log(ok), np.log([pstar_gp[d] for d in ok]), 1)[0]) if len(ok) > 1 else None
print("NNGP P*(A=0.25):", {d: (round(p) if p else None) for d, p in pstar_gp.items()},
      f" fitted exponent P* ∝ d^{gp_exponent:.2f}" if gp_exponent else "", f"({time.time() - t0:.0f} s)")
bnn_exponent = (math.log(pstar[DS[-1]] / pstar[DS[0]]) / math.log(DS[-1] / DS[0])
                if pstar[DS[0]] and pstar[DS[-1]] else None)
print(f"BNN: P* ∝ d^{bnn_exponent:.2f} between d = {DS[0]} and {DS[-1]}" if bnn_exponent else "BNN: no P* in range")

# %% [markdown]
# ## Softmax attention on the cubic context target: alignment versus P at two context lengths
#
# Query = first token, H = 2 heads, key dimension d, linear readout (standard 1/√(H d_h)), prior N(0, 1/d) on
# Q, K, V, κ = 0.05; target y = (w_q·x₁) Σ_ℓ (k_ℓ − k̄)(v_ℓ − v̄)/√(L − 1) (see `bnnzoo.tasks.attention_task`).

# %%
t0 = time.time()
att = []
for L in LS:
    for P in ATT_PS:
        task = attention_task(L=L, d=ATT_D, P=P, P_test=P_TEST, seed=SEED)
        idata = bnnzoo.sample("softmax_attention", task, context_length=L, heads=2, kappa=KAPPA,
                              num_chains=CHAINS_ATT, **NUTS_KW)
        A = alignment(idata)
        att.append(dict(L=L, P=P, A=A.mean_predictor, A_sd=A.sd, A_chains=A.chain_means.tolist()))
        print(f"L={L} d={ATT_D} P={P:4d}  A_f={A.mean_predictor:6.3f} (chains "
              f"{' / '.join(f'{a:.2f}' for a in A.chain_means)})", flush=True)
print(f"attention sweep: {time.time() - t0:.0f} s")
pstar_att = {}   # (level, L) -> P*; two levels, since a single crossing of a noisy 3-point curve is fragile
for lv in (0.25, 0.5):
    for L in LS:
        rs = sorted((r for r in att if r["L"] == L), key=lambda r: r["P"])
        pstar_att[lv, L] = crossing([r["P"] for r in rs], [r["A"] for r in rs], lv)
    print(f"attention P*(A={lv}):", {L: (round(pstar_att[lv, L], 1) if pstar_att[lv, L] else None) for L in LS},
          " P*/sqrt(L d^3):", {L: (round(pstar_att[lv, L] / math.sqrt(L * ATT_D**3), 3) if pstar_att[lv, L]
                                   else None) for L in LS})

# %% [markdown]
# ## Stored results of the larger sweep (not recomputed here)
#
# Produced by `python -m reproduce sample_complexity` (N1 = N2 = 32, 2 chains × (150 warm-up + 100 draws), max tree
# depth 8, κ = 0.05, 1000 test points, seed 0; three-layer d = 8, 16, 32 with P/d = 2 … 64; attention d = 8,
# L = 2, 4, 8, P = 32 … 512). Shown only when the file is present.

# %%
stored = None
for base in (Path(".."), Path("."), Path("../..")):  # run from notebooks/, the root or docs/gallery/
    f = base / "reproduce" / "results" / "sample_complexity.json"
    if SHOW_STORED and f.exists():
        stored = json.loads(f.read_text())
        break
def attention_by_L(sweep):
    """{L: {"P*@0.25": .., "P*@0.5": ..}} and d of a stored sweep (older files: one d; newer: keyed by d, then L)."""
    d = sweep["settings"]["attn_d"]
    att = sweep["summary"]["attention"]
    if isinstance(d, list):
        d = d[0]
        att = att[str(d)]
    return att, d


if stored is not None:
    s = stored["settings"]
    print(f"stored sweep settings: {s}")
    for d, v in sorted(stored["summary"]["three_layer"].items(), key=lambda kv: int(kv[0])):
        p, pg = v["P*@0.25"], v["P*_nngp@0.25"]
        print(f"  three-layer d={int(d):3d}: P*(A=0.25) = {p:7.1f}  P*/d = {p / int(d):5.2f}   NNGP P* = "
              + (f"{pg:7.1f}" if pg else "  > range"))
    att_stored, d_att = attention_by_L(stored)
    for L, v in sorted(att_stored.items(), key=lambda kv: int(kv[0])):
        p = v["P*@0.25"]
        print(f"  attention   L={int(L)} d={d_att}: P*(A=0.25) = {p:6.1f}   "
              f"P*/sqrt(L d^3) = {p / math.sqrt(int(L) * d_att ** 3):.3f}")
else:
    print("reproduce/results/sample_complexity.json not found: stored sweep not shown")
for base in (Path(".."), Path("."), Path("../..")):  # run from notebooks/, the root or docs/gallery/
    d_files = sorted((base / "reproduce" / "results").glob("sample_complexity_attention_d_fine*.json"))
    if d_files:
        break
for f in d_files:
    sweep = json.loads(f.read_text())
    for L, fit in sweep["summary"]["attention_d_exponent"].items():
        print(f"  attention d-sweep {f.stem} (seed {sweep['settings']['seed']}, L={L}, d={fit['P*@0.25']['d']}): "
              f"P* ∝ d^{fit['P*@0.25']['slope']:.2f} (A=0.25), d^{fit['P*@0.5']['slope']:.2f} (A=0.5); paper d^1.5")

# %% [markdown]
# ## Figure
#
# (a) A_f against P: sampled net (solid) and NNGP (dashed). (b) The same against P/d: the net's curves should
# collapse, the NNGP's should not (dense NNGP grid, thin lines). (c) Attention: A_f against P for each L; the paper's
# scaling would shift the L = 8 curve right by a factor 2 relative to L = 2. (d) The stored larger sweep against P/d.

# %%
from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

fig, axes = plt.subplots(2, 2, figsize=(10, 7.4))
axes = axes.ravel()
colors = {8: "C0", 12: "C2", 16: "C1", 24: "C4", 32: "C3"}


def log_x(ax, label):
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=2))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(label)
    ax.axhline(LEVEL, color="gray", lw=0.6, ls=":")


ax = axes[0]
for d in DS:
    P, A = curve(three, d)
    ax.plot(P, A, "o-", color=colors.get(d, "k"), label=f"BNN d={d}")
    ax.plot(*curve(three, d, "A_nngp"), "s--", color=colors.get(d, "k"), mfc="none", label=f"NNGP d={d}")
log_x(ax, "P")
ax.set(ylabel="alignment $A_f$", title=f"(a) three-layer erf net on He$_3$ (N1 = N2 = {WIDTH})")
ax.legend(fontsize=8)
ax = axes[1]
for d in DS:
    P, A = curve(three, d)
    ax.plot(P / d, A, "o-", color=colors.get(d, "k"), label=f"BNN d={d}")
for d in GP_DS:
    ax.plot(gp_curves[d][0] / d, gp_curves[d][1], "-", lw=1, color=colors.get(d, "k"), alpha=0.8,
            label=f"NNGP d={d}")
log_x(ax, "P / d")
ax.set(ylabel="alignment $A_f$", title="(b) against P/d: the BNN curves collapse near P*, the NNGP's do not")
ax.title.set_fontsize(9)
ax.legend(fontsize=8)
ax = axes[2]
for L, c in zip(LS, ["C0", "C1", "C3"]):
    rs = sorted((r for r in att if r["L"] == L), key=lambda r: r["P"])
    ax.errorbar([r["P"] for r in rs], [r["A"] for r in rs], [r["A_sd"] for r in rs], fmt="o-", color=c,
                capsize=2, label=f"L={L}")
log_x(ax, "P")
ax.set(ylabel="alignment $A_f$", title=f"(c) softmax attention, d={ATT_D} (bars: sd over draws)")
ax.legend(fontsize=8, title=f"paper: P* ∝ √L", title_fontsize=8)
ax = axes[3]
if stored is not None:
    for d in sorted({r["config"]["d"] for r in stored["three_layer"]}):
        rs = sorted((r for r in stored["three_layer"] if r["config"]["d"] == d), key=lambda r: r["config"]["P"])
        x = [r["config"]["P"] / d for r in rs]
        ax.plot(x, [r["A"] for r in rs], "o-", color=colors.get(d, "k"), label=f"BNN d={d}")
        ax.plot(x, [r["A_nngp"] for r in rs], "s--", color=colors.get(d, "k"), mfc="none", lw=0.8)
    log_x(ax, "P / d")
    ax.set(ylabel="alignment $A_f$", title="(d) STORED, not recomputed: reproduce sample_complexity")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8, title="N1 = N2 = 32; dashed: NNGP", title_fontsize=8)
else:
    ax.axis("off")
fig.tight_layout()
fig.savefig(OUT / "05_sample_complexity.png", dpi=100)

# %% [markdown]
# ## Paper vs measured
#
# At CI size, seed 0, we measured (three-layer net N1 = N2 = 16, one chain per P; d = 8 and 16, P/d = 2, 8, 32):
# the alignment rises from 0.02 / 0.07 at P/d = 2 to 0.31 / 0.28 at P/d = 8, so P\*(A = 0.25)/d = 6.1 / 6.7 and
# P\* ∝ d^1.15 between d = 8 and 16 — consistent with the paper's P\* ∝ d (the stored larger sweep gives
# P\*/d = 5.7 / 7.2 / 6.4 at d = 8 / 16 / 32). The NNGP at the same P has A_f = 0.06 / 0.01 and its P\* grows like
# d^2.3 (d = 8, 12, 16; the stored sweep gives the same exponent), the kernel's P ∼ d³ at these small d. The
# curves collapse against P/d near P\* (spread 0.03 at P/d = 8) but **not at large P/d**: at P/d = 32 the d = 8 net
# is at A_f = 0.97, the d = 16 net at 0.43 (the stored sweep shows the same: 0.85 vs 0.49). First-layer specialists
# (|W¹_j·w\*| > 3σ₁) appear, 1–2 per net against 0.04 by chance, but their count is not monotone in P (0 at d = 8,
# P/d = 32, where the overlap is spread over many neurons: the mean squared overlap ⟨m_j²⟩ is still above its prior
# value 1); the paper's (N1/d)^{1/3} law is tested at larger N1 in row C4 of the reproduction page: there the count grows as N1^0.52 ± 0.04, not N1^{1/3}.
#
# These CI-size numbers rest on one data set per point and three points per curve, and they are noisy: with seed 1
# we measured A_f = 0.22 / 0.52 at P/d = 8 (d = 8 / 16) and P\*/d = 8.4 / 3.9, i.e. no growth of P\* between d = 8
# and 16, while the NNGP exponent stayed at 2.35. What is robust at CI size is the gap to the kernel (the net learns
# at P/d = 8, where the NNGP has A_f ≤ 0.06, and its P\* grows much slower than the NNGP's); the P\* ∝ d law itself
# is better judged from the stored larger sweep (panel d).
#
# For attention (d = 8, two chains per P) the paper's P\* ∝ √(L d³) predicts P\*(L = 8)/P\*(L = 2) = 2. We measured
# ratios 1.39 (A = 0.25) and 0.71 (A = 0.5) at CI size, and 0.66 / 0.78 in the stored larger sweep: **the √L growth
# is not reproduced**; P\* barely depends on L here. The two chains can also disagree at L = 2 (0.38 vs 0.75 at
# P = 128), a sign of a multimodal posterior at these short chains. Our attention architecture and target are our
# own choice (the paper's equations were not available, docs/theory.md §8), so this is a non-reproduction of the scaling
# for this model, not a refutation of the paper: the reproduction page calls the √L claim *unresolved* (row C8).
#
# The d part of the law was measured outside CI (`python -m reproduce sample_complexity --which attention --L 4
# --attn-d 4 8 16 --P 16 23 32 45 64 91 128 181 256 362 512 --seed S --name sample_complexity_attention_d_fine…`,
# seeds 0, 1, 2; 4–8 minutes each; files `reproduce/results/sample_complexity_attention_d_fine*.json`): at L = 4 the
# log-log slope of P\* in d (d = 4, 8, 16) is 1.39 / 1.05 / 1.60 at A = 0.25 (mean 1.35 ± 0.28) and 1.30 / 1.05 /
# 1.67 at A = 0.5 (1.34 ± 0.31), against the paper's 3/2 and the kernel's 3: **compatible with d^{3/2}** within the
# seed scatter, over only a factor 4 in d, with one chain of seed 2 stuck in a non-aligned mode at two points. The
# reproduction page's row C7 (five seeds, d = 4 … 16, SNAPER/ChEES runs of `python -m reproduce attention_dim`) finds
# the slope below 3/2 over the whole range and consistent with it over d = 8 … 16: *partly*. The cell below prints
# these slopes from the stored files.

# %%
def row(d, r):
    return next(x for x in three if x["d"] == d and x["P_over_d"] == r)


print("THREE-LAYER ERF NET, He3 target")
print(f"  paper: P* ∝ d (exponent 1)          measured BNN exponent between d={DS[0]} and {DS[-1]}: "
      + (f"{bnn_exponent:.2f}" if bnn_exponent else "n/a")
      + f";  P*/d = {', '.join(f'{pstar[d] / d:.2f} (d={d})' for d in DS if pstar[d])}")
print(f"  kernel needs P ∼ d^3                measured NNGP exponent (d = {', '.join(map(str, ok))}): "
      + (f"{gp_exponent:.2f}" if gp_exponent else "n/a")
      + f";  NNGP P* = {', '.join(f'{pstar_gp[d]:.0f} (d={d})' for d in ok)}")
for r in RATIOS:
    vals = [row(d, r)["A"] for d in DS]
    print(f"  collapse vs P/d: P/d = {r:3.0f}: A_f = {' / '.join(f'{v:.3f}' for v in vals)} (d = "
          f"{' / '.join(map(str, DS))}), spread {max(vals) - min(vals):.3f};  NNGP "
          + " / ".join(f"{row(d, r)['A_nngp']:.3f}" for d in DS))
print("  specialists (|W1_j·w*| > 3σ₁), chance level "
      f"{three[0]['chance']:.2f}: " + ", ".join(f"d={x['d']} P/d={x['P_over_d']:.0f}: {x['specialists']:.2f}"
                                                  for x in three))
print("SOFTMAX ATTENTION, cubic target")
print(f"  paper: P* ∝ sqrt(L d^3) -> P*(L={LS[-1]})/P*(L={LS[0]}) = {math.sqrt(LS[-1] / LS[0]):.2f}")
ratios_att = {}
for lv in (0.25, 0.5):
    a, b = pstar_att[lv, LS[0]], pstar_att[lv, LS[-1]]
    ratios_att[lv] = b / a if a and b else None
    cells = [f"{pstar_att[lv, L]:.1f} (L={L})" if pstar_att[lv, L] else f"n/a (L={L})" for L in LS]
    print(f"  measured P*(A={lv}) = {', '.join(cells)}" + (f";  ratio {ratios_att[lv]:.2f}" if ratios_att[lv] else ""))
if stored is not None:
    sa = attention_by_L(stored)[0]
    Ls = sorted(sa, key=int)
    print(f"  stored larger sweep: P*(A=0.25) ratio L={Ls[-1]}/L={Ls[0]} = "
          f"{sa[Ls[-1]]['P*@0.25'] / sa[Ls[0]]['P*@0.25']:.2f}, P*(A=0.5) ratio "
          f"{sa[Ls[-1]]['P*@0.5'] / sa[Ls[0]]['P*@0.5']:.2f}")
grows = [r for r in ratios_att.values() if r is not None]
print("  verdict: " + ("P* grows with L roughly like sqrt L" if grows and min(grows) > 1.5 else
                       "not reproduced at this size: P* does not grow like sqrt L (it barely changes or shrinks); "
                       "the reproduction page: unresolved (row C8)"))

# %% [markdown]
# Checks (loose enough for other seeds at CI size, tight enough to catch a broken model, sampler or observable):

# %%
for d in DS:
    assert row(d, RATIOS[0])["A"] < 0.15, f"d={d}: alignment at P/d={RATIOS[0]} should start near 0"
    assert row(d, RATIOS[-1])["A"] > 0.3, f"d={d}: the net does not learn He3 at P/d={RATIOS[-1]}"
    mid = row(d, 8)
    assert mid["A"] > mid["A_nngp"] + 0.1, f"d={d}: no feature-learning advantage over the NNGP at P/d=8"
    assert max(x["specialists"] for x in three if x["d"] == d) > 3 * three[0]["chance"], "no specialist neurons"
# one data set per point: the CI-size collapse and exponent are noisy (seed 1 gave A_f = 0.22 / 0.52 at P/d = 8),
# so these two checks are loose; the kernel-like scaling (exponent ≈ 2.3) would still fail them
assert abs(row(DS[0], 8)["A"] - row(DS[-1], 8)["A"]) < 0.35, "no collapse versus P/d near P*"
assert bnn_exponent is not None and bnn_exponent < 1.7, f"BNN P* exponent {bnn_exponent} is kernel-like"
assert gp_exponent is not None and gp_exponent > 1.7, f"NNGP P* exponent {gp_exponent} should be ≫ 1"
for L in LS:
    rs = sorted((r for r in att if r["L"] == L), key=lambda r: r["P"])
    assert rs[-1]["A"] > 0.3, f"attention L={L} does not learn the target at P={rs[-1]['P']}"
    assert rs[-1]["A"] > rs[0]["A"] + 0.1, f"attention L={L}: alignment does not rise with P"
