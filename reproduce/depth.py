"""Depth (theory page §3, "Deeper nets"; Figs. 3 and 5): codes in every hidden layer of two- and three-hidden-layer
nets on the toy task, switching in the lower layers, sharpening toward the feature layer, and the feature-layer
scheme of the two-hidden-layer sigmoidal net.

Nets (``--nets``, comma-separated):

* ``sig3``: three hidden layers, sigmoidal, y− = −½ (Fig. 3); ``relu3``: the same with ReLU (Fig. 3, N = P = 100 in
  the paper); ``relu2``: two hidden ReLU layers at ``relu3``'s setting (the frozen first-layer codes are stated for
  two and three hidden layers); ``lin3``: three hidden layers with a linear φ at y− = 0, whose readout second moment U and layer
  kernels are compared with the N → ∞ theory of the deep linear net at T → 0 and at the run's T
  (``bnnzoo.theory.deep_linear``: ``deep_linear_zero_temperature``, ``deep_linear_saddle_point``);
  ``lin3_paper``: the same at Fig. 3's y− = −½ (every target row sums to zero, Yᵀ K0⁻¹ Y is singular: the
  T → 0 theory is ``deep_linear_saddle_point`` at T = 0); ``lin3_paper_N05``, ``lin3_paper_N2``: the same at half
  and twice the width, ``lin3_paper_T``: at a tenth of the temperature (which of N and T sets the error).  Every
  linear net also records the readout's second moment split given the sampled feature kernels (variance term, mean
  term, the null direction of Y; :func:`readout_given_kernel`);
* ``sig2``: two hidden layers, sigmoidal, y− = ½ (Fig. 5), σ_a² = 1/P (the sigmoidal rule, any depth);
  ``sig2_sa``: the same with σ_a² = P^{-1/2} (the linear/ReLU rule at depth 2); ``sig2_N``: the same as ``sig2``
  at half the width (N = P/2); ``sig2_T``: the same as ``sig2`` at half the temperature; ``sig1``: the one-hidden-
  layer net at the ``sig2`` setting (the reference scheme of the feature layer); ``sig1_fk``: ``sig1`` on inputs
  with the kernel the feature layer of ``sig2`` receives under the prior (correlated: diagonal 0.355, off-diagonal
  ¼; :func:`feature_layer_inputs`), ``sig1_fs``: ``sig1`` on orthogonal inputs of that norm only.

For every hidden layer l: the fraction of units on each code (modal code of a unit over its draws;
``bnnzoo.diagnostics.codes``) over all units and over the selective ones, with its binomial standard error and its
spread across the 4 chains; the per-draw fraction per code in the first and the last fifth of the draws; the code
switches per unit per draw, the code memory μ (1 frozen, 0 codes redrawn) and the verdict (frozen / switching); and
the sharpening measures of ``bnnzoo.diagnostics.kernels``: the learned part of the kernel ‖K − K_GP‖/‖K‖,
CKA(K, YYᵀ) and NC1.  Every net records the sampler health (R̂ across chains of the training error, the readout norm
per class, the outputs and the outlier count) and the R̂ of every layer's mean squared preactivation q_z<l>, so that
frozen codes are told from an unequilibrated run.

Run: ``python -m reproduce depth --size ci|cpu|paper [--nets sig3,relu3,sig2] [--chains K] [--sampler snaper|gibbs]
[--overwrite]``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from . import _common as C

NAME = "depth"
CLAIMS = ("D1", "D2", "D3", "D4", "D5", "P2")
T0 = 0.01
# net -> zoo entry, depth, y−, σ_a² rule ("paper": the zoo's default; "sqrtP": P^{-1/2}), width factor N/P,
# temperature factor
NETS = {
    "sig3": dict(entry="sigmoidal", depth=3, y_neg=-0.5, sa="paper", nf=1.0, tf=1.0),
    "relu3": dict(entry="relu", depth=3, y_neg=-0.5, sa="paper", nf=1.0, tf=1.0),
    # two hidden layers: the paper states the frozen first-layer ReLU codes for two as well as three
    "relu2": dict(entry="relu", depth=2, y_neg=-0.5, sa="paper", nf=1.0, tf=1.0),
    "lin3": dict(entry="deep_linear", depth=3, y_neg=0.0, sa="paper", nf=1.0, tf=1.0),
    "lin3_paper": dict(entry="deep_linear", depth=3, y_neg=-0.5, sa="paper", nf=1.0, tf=1.0),
    # lin3_paper at half and twice the width and a tenth of the temperature: which of N and T sets its error
    "lin3_paper_N05": dict(entry="deep_linear", depth=3, y_neg=-0.5, sa="paper", nf=0.5, tf=1.0),
    "lin3_paper_N2": dict(entry="deep_linear", depth=3, y_neg=-0.5, sa="paper", nf=2.0, tf=1.0),
    "lin3_paper_T": dict(entry="deep_linear", depth=3, y_neg=-0.5, sa="paper", nf=1.0, tf=0.1),
    "sig2": dict(entry="sigmoidal", depth=2, y_neg=0.5, sa="paper", nf=1.0, tf=1.0),
    "sig2_sa": dict(entry="sigmoidal", depth=2, y_neg=0.5, sa="sqrtP", nf=1.0, tf=1.0),
    "sig2_N": dict(entry="sigmoidal", depth=2, y_neg=0.5, sa="paper", nf=0.5, tf=1.0),
    "sig2_T": dict(entry="sigmoidal", depth=2, y_neg=0.5, sa="paper", nf=1.0, tf=0.5),
    "sig1": dict(entry="sigmoidal", depth=1, y_neg=0.5, sa="paper", nf=1.0, tf=1.0),
    # the one-layer net fed what the feature layer of sig2 is fed under the prior (inputs="feature_kernel") or only
    # its scale (inputs="feature_scale"): does the one-layer scheme change on the feature layer's kind of inputs?
    "sig1_fk": dict(entry="sigmoidal", depth=1, y_neg=0.5, sa="paper", nf=1.0, tf=1.0, inputs="feature_kernel"),
    "sig1_fs": dict(entry="sigmoidal", depth=1, y_neg=0.5, sa="paper", nf=1.0, tf=1.0, inputs="feature_scale"),
}
# per size: P per net (N = nf · P), warm-up per net, kept draws, z thinning, default nets
SIZES = {
    "ci": dict(P={"sig3": 20, "relu3": 20, "lin3": 20, "lin3_paper": 20, "sig2": 20,
                  "sig2_sa": 20, "sig2_N": 20, "sig2_T": 20,
                  "sig1": 20, "sig1_fk": 20, "sig1_fs": 20},
               warmup={k: 150 for k in NETS}, samples=100, thin_z=2, nets=("sig3", "relu3", "lin3", "sig2")),
    "cpu": dict(P={"sig3": 50, "relu3": 50, "lin3": 50, "lin3_paper": 50, "sig2": 100,
                   "sig2_sa": 100, "sig2_N": 100, "sig2_T": 100,
                   "sig1": 100, "sig1_fk": 100, "sig1_fs": 100},
                warmup={"sig3": 2000, "relu3": 2000, "lin3": 500, "lin3_paper": 500,
                        "sig2": 1000, "sig2_sa": 1000, "sig2_N": 1000,
                        "sig2_T": 1000, "sig1": 500, "sig1_fk": 500, "sig1_fs": 500},
                samples=400, thin_z=2, nets=("sig3", "relu3", "sig2", "sig1")),
    "paper": dict(P={"sig3": 200, "relu3": 100, "lin3": 200, "lin3_paper": 200,
                     "sig2": 500, "sig2_sa": 500, "sig2_N": 500,
                     "sig2_T": 500, "sig1": 500, "sig1_fk": 500, "sig1_fs": 500},
                  warmup={"sig3": 2000, "relu3": 3000, "lin3": 1000,
                          "lin3_paper": 1000, "sig2": 2000, "sig2_sa": 2000, "sig2_N": 2000,
                          "sig2_T": 2000, "sig1": 1000, "sig1_fk": 1000, "sig1_fs": 1000},
                  samples=500, thin_z=5, nets=("sig3", "relu3", "lin3", "sig2", "sig1")),
}

for _net in ("lin3_paper_N05", "lin3_paper_N2", "lin3_paper_T"):      # the lin3_paper variants: its P and warm-up
    for _s in SIZES.values():
        _s["P"][_net], _s["warmup"][_net] = _s["P"]["lin3_paper"], _s["warmup"]["lin3_paper"]
for _s in SIZES.values():                                               # relu2 at relu3's P and warm-up
    _s["P"]["relu2"], _s["warmup"]["relu2"] = _s["P"]["relu3"], _s["warmup"]["relu3"]


def feature_layer_inputs(task, kind: str):
    """The toy task with its orthogonal inputs replaced by inputs whose kernel xᵀx'/N0 is what the second hidden
    layer of a sigmoidal net receives under the prior, K_φ = E[φ(z)φ(z')] on orthogonal unit inputs
    (:func:`bnnzoo.theory.nngp_kernel`: diagonal k₀, off-diagonal k₁): ``kind="feature_kernel"`` gives
    x'_μ = √(k₀ − k₁) x_μ + √(k₁ N0) u with u a unit vector orthogonal to every x_μ (so x'ᵀx'/N0 = K_φ);
    ``kind="feature_scale"`` only rescales, x'_μ = √k₀ x_μ (orthogonal inputs of the same norm)."""
    import dataclasses

    from bnnzoo import theory

    X = np.asarray(task.X, float)
    P, N0 = X.shape
    K = theory.nngp_kernel(X, nonlinearity="sigmoid")
    k0, k1 = float(np.mean(np.diag(K))), float((K.sum() - np.trace(K)) / (P * (P - 1)))
    if kind == "feature_scale":
        return dataclasses.replace(task, X=np.sqrt(k0) * X)
    _, _, Vt = np.linalg.svd(X)                              # rows P.. of Vt span the complement of the inputs
    u = Vt[P]
    return dataclasses.replace(task, X=np.sqrt(k0 - k1) * X + np.sqrt(k1 * N0) * u[None, :])


def sample_net(net: str, s: dict, args):
    """Sample one net of :data:`NETS` at the size ``s``; returns (run, task, N, P, settings, seconds)."""
    import bnnzoo
    from bnnzoo.models.fcn import default_sigma_a2

    d = NETS[net]
    P = s["P"][net]
    N = max(int(round(d["nf"] * P)), 2)
    entry = bnnzoo.get_entry(d["entry"])
    task = entry.make_task(**dict(entry.task_defaults, P=P, N0=P + 20, y_neg=d["y_neg"]))
    if d.get("inputs"):
        task = feature_layer_inputs(task, d["inputs"])
    act = entry.defaults["activation"]
    sa2 = default_sigma_a2(act, "nonlazy", P, d["depth"]) if d["sa"] == "paper" else P ** -0.5
    T = T0 * d["tf"]
    thin = s["thin_z"]
    sampler = getattr(args, "sampler", "snaper")
    if sampler == "gibbs":          # in memory, every draw of z (the Gibbs sampler takes no HMC chunking/thinning)
        kw = {}
    else:
        kw = dict(chunk_size=min(100, s["samples"]),
                  **(dict(site_thinning={f"z{l}": thin for l in range(1, d["depth"] + 1)}) if thin > 1 else {}))
    t0 = time.time()
    run = bnnzoo.sample(entry, task, num_chains=args.chains, num_warmup=s["warmup"][net], num_samples=s["samples"],
                        seed=args.seed, sampler=sampler, record=("z",), exclude=("W1",), progress=args.progress,
                        width=N, depth=d["depth"], sigma_a2=sa2, temperature=T, **kw)
    return run, task, N, P, dict(sigma_a2=sa2, temperature=T), time.time() - t0


def thinned_draws(run) -> np.ndarray | None:
    """Indices of the kept draws the (thinned) preactivations were recorded on; None when z is not thinned."""
    from bnnzoo import azcompat

    if "posterior_thinned" not in azcompat.group_names(run):
        return None
    th = azcompat.get_group(run, "posterior_thinned")
    if "z1" not in th:
        return None
    return np.asarray(th[th["z1"].dims[1]].values, int)


def run_data_all_layers(run):
    """:class:`~bnnzoo.diagnostics._data.RunData` of a run whose preactivations may be thinned: every layer's z from
    ``posterior_thinned`` when it is there, and the readout and outputs restricted to the same draws."""
    import dataclasses

    from bnnzoo import azcompat
    from bnnzoo.diagnostics._data import run_data

    rd = run_data(run)
    if len(rd.recorded_z) == rd.depth:
        return rd
    th = azcompat.get_group(run, "posterior_thinned")
    z = {l: np.asarray(th[f"z{l}"].values, float) for l in range(1, rd.depth + 1)}
    idx = thinned_draws(run)
    return dataclasses.replace(rd, recorded_z=z, a=rd.a[:, idx], f=None if rd.f is None else rd.f[:, idx],
                               _cache={})


def layer_outliers(run, rd, layer: int) -> dict:
    """The one-layer net's outlier analysis (``bnnzoo.diagnostics.branches.find_outliers``) applied to one hidden
    layer of a deep net: a unit of layer l is an outlier when both the RMS norm of its outgoing weights (the readout
    a for the feature layer, the column of W^(l+1) otherwise) and the RMS of its preactivation exceed N^(1/4) times
    the layer's median.  Returns the count per chain, the outliers' scales over the bulk (medians), the classes of
    the feature-layer outliers, and how many outliers are class-selective units (``neural_codes``) with their modal
    codes."""
    from bnnzoo import azcompat
    from bnnzoo.diagnostics.codes import code_string, neural_codes

    if layer == rd.depth:
        out = rd.a
    else:
        W = np.asarray(azcompat.get_group(run, "posterior")[f"W{layer + 1}"].values, float)
        idx = thinned_draws(run)
        if idx is not None:
            W = W[:, idx]
        out = np.swapaxes(W, 2, 3)                 # (chain, draw, unit of layer l, unit of layer l + 1)
    cr = neural_codes(rd, layer)
    codes = np.vectorize(lambda k: code_string(int(k), rd.m))(np.asarray(cr.modal))
    return dict(layer=layer, **outlier_stats(out, rd.z(layer), np.asarray(cr.selective, bool), codes,
                                             feature_layer=layer == rd.depth))


def outlier_stats(out: np.ndarray, z: np.ndarray, selective: np.ndarray, codes: np.ndarray,
                  feature_layer: bool) -> dict:
    """:func:`layer_outliers` on arrays: ``out`` (chain, draw, unit, outgoing) outgoing weights, ``z`` (chain, draw,
    unit, point) preactivations, ``selective`` and ``codes`` (chain, unit) the units' selectivity and modal code
    strings; the classes of the outliers only for the feature layer (whose outgoing weights are the readout)."""
    from bnnzoo.diagnostics.branches import find_outliers

    o = find_outliers(out, z)
    flag = o.is_outlier.astype(bool)
    sel = np.asarray(selective, bool).reshape(-1)
    return dict(n_outliers=o.n_outliers, per_chain=list(o.per_chain), n_units=int(flag.size),
                n_outgoing=o.n_readout, n_preactivation=o.n_preactivation, threshold_factor=o.threshold_factor,
                outgoing_over_bulk=[float(v / o.bulk_readout) for v in o.readout_scale[flag]],
                preactivation_over_bulk=[float(v / o.bulk_preactivation) for v in o.preact_scale[flag]],
                max_outgoing_over_bulk=float(o.readout_scale.max() / o.bulk_readout),
                max_preactivation_over_bulk=float(o.preact_scale.max() / o.bulk_preactivation),
                classes=list(o.classes) if feature_layer else None,
                n_selective=int(sel.sum()), n_selective_outliers=int(np.sum(sel & flag)),
                outlier_codes=sorted(np.asarray(codes).reshape(-1)[flag].tolist()))


def _fractions(modal: np.ndarray, mask: np.ndarray) -> tuple[dict, dict, dict, dict]:
    """Fraction of the units in ``mask`` (chain, neuron) per modal code string, its binomial s.e., the per-chain
    fractions and their standard deviation over chains."""
    n = int(mask.sum())
    frac, se, chain_sd, per_chain = {}, {}, {}, {}
    if n == 0:
        return frac, se, chain_sd, per_chain
    for c in sorted(set(modal[mask].tolist())):
        p = float(np.mean(modal[mask] == c))
        frac[c] = p
        se[c] = math.sqrt(max(p * (1 - p), 1.0 / n) / n)
        pc = [float(np.mean(modal[k][mask[k]] == c)) if mask[k].any() else float("nan")
              for k in range(modal.shape[0])]
        per_chain[c] = pc
        chain_sd[c] = float(np.nanstd(pc, ddof=1)) if np.sum(np.isfinite(pc)) > 1 else float("nan")
    return frac, se, chain_sd, per_chain


def layer_codes(rd, layer: int) -> dict:
    """Codes of one layer (``bnnzoo.diagnostics.codes.neural_codes``).

    Fractions of units per modal code over all units of the layer (``fraction``, binomial s.e., the per-chain
    fractions and their spread) and over its selective units only (``selective_fraction``; a unit is selective when
    its class means stand 3 standard deviations above those of a task-agnostic unit); switches per unit per draw,
    code memory μ and the verdict (over the selective units, or all units when none is selective); the per-draw
    fraction per code averaged over the first and the last fifth of the draws (a scheme still relaxing after
    warm-up drifts between them); the number of codes held by at least 1 % and 5 % of the units.
    """
    from bnnzoo.diagnostics.codes import code_string, neural_codes

    cr = neural_codes(rd, layer)
    modal = np.vectorize(lambda k: code_string(int(k), rd.m))(np.asarray(cr.modal))
    sel = np.asarray(cr.selective, bool)
    frac, se, chain_sd, per_chain = _fractions(modal, np.ones_like(sel))
    sfrac, sse, _, _ = _fractions(modal, sel)
    ids = np.asarray(cr.ids)  # (chain, draw, unit)
    k5 = max(ids.shape[1] // 5, 1)
    early = {code_string(k, rd.m): float(np.mean(ids[:, :k5] == k)) for k in range(1 << rd.m)}
    late = {code_string(k, rd.m): float(np.mean(ids[:, -k5:] == k)) for k in range(1 << rd.m)}
    return dict(layer=layer, fraction=frac, fraction_se=se, fraction_chain_sd=chain_sd, per_chain=per_chain,
                selective_fraction=sfrac, selective_fraction_se=sse,
                n_units=cr.n_units, n_selective=cr.n_selective, switching_rate=cr.switching_rate,
                switching_rate_se=cr.switching_rate_se, code_memory=cr.code_memory, turnover=cr.turnover,
                verdict=cr.verdict, scheme_drift=cr.scheme_drift, scheme_drift_null=cr.scheme_drift_null,
                per_draw_first_fifth={c: v for c, v in early.items() if v > 0 or late[c] > 0},
                per_draw_last_fifth={c: v for c, v in late.items() if v > 0 or early[c] > 0},
                n_codes_1pct=sum(v >= 0.01 for v in frac.values()), n_codes_5pct=sum(v >= 0.05 for v in frac.values()))


def sharpening(rd) -> dict:
    """Per layer: learned part of the kernel ‖K − K_GP‖/‖K‖, CKA(K, YYᵀ) with s.e., NC1 with s.e."""
    from bnnzoo.diagnostics.kernels import kernels_and_richness

    k = kernels_and_richness(rd)
    return dict(learned_fraction=k.learned_fraction.tolist(), target_cka=k.target_cka.tolist(),
                target_cka_se=k.target_cka_se.tolist(), nc1=k.nc1.tolist(), nc1_se=k.nc1_se.tolist(),
                d_lr=k.d_lr.tolist(), d_lr_se=k.d_lr_se.tolist())


def rhat_q_z(rd) -> dict:
    """Between-chain rank-normalised R̂ of every layer's mean squared preactivation q_z<l> (chain, draw), from the
    recorded (possibly thinned) preactivations; the sampler health sees q_z<l> only when z is not thinned."""
    import xarray as xr

    from bnnzoo import azcompat

    out = {}
    for l in range(1, rd.depth + 1):
        q = np.mean(rd.z(l) ** 2, axis=(2, 3))
        out[f"q_z{l}"] = float(azcompat.rhat(xr.Dataset({"x": (("chain", "draw"), q)}))["x"].values)
    return out


def worst_rhat(health: dict) -> str | None:
    """The name of the observable with the largest R̂ of a health summary, +inf (chains constant and different)
    included, the one its ``max_rhat`` is (None when no R̂ is a number)."""
    r = {k: v for k, v in health["rhat"].items() if v is not None and not math.isnan(v)}
    return max(r, key=r.get) if r else None


def net_entry(net: str, s: dict, args) -> dict:
    run, task, N, P, st, dt = sample_net(net, s, args)
    health = C.health_summary(run)
    rd = run_data_all_layers(run)
    d = NETS[net]
    e = dict(net=net, entry=d["entry"], depth=d["depth"], N=N, P=P, N0=P + 20, y_neg=d["y_neg"],
             sigma_a2_rule=d["sa"], warmup=s["warmup"][net], samples=s["samples"], thin_z=s["thin_z"],
             seconds=round(dt, 1), health=health, max_rhat_which=worst_rhat(health), rhat_q_z=rhat_q_z(rd), **st,
             chains=args.chains,
             layers=[layer_codes(rd, l) for l in range(1, d["depth"] + 1)], sharpening=sharpening(rd))
    if d["entry"] == "relu":
        e["outliers"] = [layer_outliers(run, rd, l) for l in range(1, d["depth"] + 1)]
    if rd.f is not None:
        mse = np.mean((np.asarray(rd.f, float) - rd.Y) ** 2, axis=(2, 3))   # (chain, draw)
        e["chain_disagreement"] = C.chain_disagreement(mse, e["layers"])
    if d["entry"] == "deep_linear":
        e.update(linear_theory_check(rd, task, d["depth"], st["sigma_a2"], st["temperature"]))
    return e


def linear_theory_check(rd, task, depth: int, sigma_a2: float, temperature: float) -> dict:
    """The sampled readout second moment U = aᵀa/N and layer kernels K_l = z_lᵀz_l/N of a deep linear net against
    the N → ∞ theory at T → 0 (``U_theory``, ``U_relative_error``, ``K_relative_error``) and at the run's T
    (``..._finite_T``), with ``theory_T_shift`` = ‖U(T) − U(0)‖/‖U(0)‖.  The T → 0 theory is
    ``deep_linear_zero_temperature`` when Yᵀ K0⁻¹ Y is invertible and ``deep_linear_saddle_point`` at T = 0
    otherwise (y− = −½: every target row sums to zero); both are in ``bnnzoo.theory.deep_linear``."""
    from bnnzoo.theory.deep_linear import deep_linear_saddle_point, deep_linear_zero_temperature

    U, se = C.readout_U(rd)
    if np.linalg.matrix_rank(task.Y) == task.Y.shape[1]:
        th0 = deep_linear_zero_temperature(task.X, task.Y, depth=depth, sigma_a2=sigma_a2)
    else:
        th0 = deep_linear_saddle_point(task.X, task.Y, depth=depth, temperature=0.0, sigma_a2=sigma_a2)
    thT = deep_linear_saddle_point(task.X, task.Y, depth=depth, temperature=temperature, sigma_a2=sigma_a2)
    K = []
    for l in range(1, depth + 1):
        z = rd.z(l)
        K.append(np.einsum("cdnp,cdnq->pq", z, z, optimize=True) / (z.shape[0] * z.shape[1] * rd.width))
    out = {}
    for suffix, th in (("", th0), ("_finite_T", thT)):
        nrm = float(np.linalg.norm(th.U))
        out.update({f"U_theory{suffix}": th.U.tolist(),
                    f"U_relative_error{suffix}": float(np.linalg.norm(U - th.U) / nrm),
                    f"U_relative_error_se{suffix}": float(np.sqrt(np.sum(se ** 2)) / nrm),
                    f"K_relative_error{suffix}": [float(np.linalg.norm(K[l] - th.K[l]) / np.linalg.norm(th.K[l]))
                                                  for l in range(depth)]})
    return dict(U=U.tolist(), U_se=se.tolist(), **out,
                theory_T_shift=float(np.linalg.norm(thT.U - th0.U) / np.linalg.norm(th0.U)),
                readout_given_kernel=readout_given_kernel(rd, task.Y, sigma_a2, temperature, thT.U, U))


def readout_given_kernel(rd, Y: np.ndarray, sigma_a2: float, temperature: float, U_theory: np.ndarray,
                         U: np.ndarray, every: int = 5) -> dict:
    """Where the finite-N readout second moment parts from the N → ∞ theory: given the feature kernel
    K_L = z_Lᵀz_L/N of a draw the readout is Gaussian and, exactly at any N,
    E[aᵀa/N | K_L] = v I + M with the variance term v = σ_a²(1 − n_pin/N), n_pin = tr(σ_a² K_L G), and the mean term
    M = σ_a⁴ Yᵀ G K_L G Y, G = (σ_a² K_L + T)⁻¹ (docs/theory.md §4).  The theory has v = σ_a² (n_pin/N → 0) and M at
    its own K_L.  Averaged over every ``every``-th draw: v, n_pin, M's relative error against the theory's
    U − σ_a² I (Frobenius, over ‖U_theory‖), the Rao–Blackwell estimate v I + M of U (a check of the sampled U, the
    posterior mean of aᵀa/N given as ``U``, ``_common.readout_U``), and, for rank-deficient Y, the second moment along
    the null direction of Y (sampled, Rao–Blackwell, theory)."""
    zL = rd.z(rd.depth)
    P, m, N = zL.shape[-1], Y.shape[1], rd.width
    vs, npins, Ms = [], [], []
    for c in range(zL.shape[0]):
        for d in range(0, zL.shape[1], every):
            KL = zL[c, d].T @ zL[c, d] / N
            G = np.linalg.inv(sigma_a2 * KL + temperature * np.eye(P))
            n_pin = float(np.trace(sigma_a2 * KL @ G))
            npins.append(n_pin)
            vs.append(sigma_a2 * (1.0 - n_pin / N))
            Ms.append(sigma_a2 ** 2 * Y.T @ G @ KL @ G @ Y)
    v, M = float(np.mean(vs)), np.mean(Ms, axis=0)
    U_rb = v * np.eye(m) + M
    nrm = float(np.linalg.norm(U_theory))
    out = dict(draws_used=len(vs), variance_term=v, variance_term_theory=float(sigma_a2),
               n_pinned=float(np.mean(npins)),
               mean_term_relative_error=float(np.linalg.norm(M - (U_theory - sigma_a2 * np.eye(m))) / nrm),
               U_rao_blackwell=U_rb.tolist(), U_rao_blackwell_vs_sampled=float(np.linalg.norm(U_rb - U) / nrm))
    if np.linalg.matrix_rank(Y) < m:
        w, V = np.linalg.eigh(Y.T @ Y)
        n = V[:, 0]                                        # Y n = 0
        out.update(null_direction=n.tolist(), null_U=float(n @ U @ n), null_U_rao_blackwell=float(n @ U_rb @ n),
                   null_U_theory=float(n @ U_theory @ n))
    return out


def _codes_text(lc: dict, k: int = 6, key: str = "fraction") -> str:
    fr, se = lc[key], lc[key + "_se"]
    sd = lc["fraction_chain_sd"] if key == "fraction" else {}
    top = sorted(fr, key=lambda c: -fr[c])[:k]
    parts = []
    for c in top:
        v = sd.get(c, math.nan)
        parts.append(f"{c} {fr[c]:.2f} ± {se[c]:.2f}" + (f" (chains sd {v:.2f})" if math.isfinite(v) else ""))
    return ", ".join(parts) or "—"


def run(argv=None) -> int:
    argv = [] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--nets", default=None,
                   help=f"comma-separated, some of {', '.join(NETS)} (default: the size's list; ci: "
                        f"{','.join(SIZES['ci']['nets'])}; cpu: {','.join(SIZES['cpu']['nets'])})")
    p.add_argument("--chains", type=int, default=C.CHAINS,
                   help=f"chains, each from its own prior draw (default {C.CHAINS}; more chains test whether the "
                        "training error follows the frozen code populations)")
    p.add_argument("--sampler", default="snaper", choices=("snaper", "gibbs"),
                   help="snaper (default) or gibbs: the exact blocked Gibbs sampler, for the linear nets lin3 and "
                        "lin3_paper only")
    args = p.parse_args(argv)
    C.check_args(args)
    if args.chains < 2:
        raise ValueError(f"--chains must be >= 2, got {args.chains}")
    s = SIZES[args.size]
    nets = [x.strip() for x in args.nets.split(",") if x.strip()] if args.nets is not None else list(s["nets"])
    bad = sorted(set(nets) - set(NETS))
    if bad or not nets:
        raise ValueError(f"--nets must name some of {', '.join(NETS)}, got {args.nets!r}")
    if args.sampler == "gibbs" and any(NETS[n]["entry"] != "deep_linear" for n in nets):
        raise ValueError(f"--sampler gibbs samples the linear nets only: --nets lin3 or lin3_paper, got "
                         f"{args.nets!r}")
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)
    summary = dict(provenance=C.provenance(args, argv), settings=s, planned=nets, nets=[], unfinished=list(nets),
                   sampler=args.sampler, chains=args.chains)
    for i, net in enumerate(nets):
        d = NETS[net]
        C.log(f"{NAME}: [{i + 1}/{len(nets)}] {net}: L = {d['depth']} {d['entry']}, P = {s['P'][net]}")
        e = net_entry(net, s, args)
        summary["nets"].append(e)
        summary["unfinished"] = nets[i + 1:]
        files.write(summary)
        C.log(f"{NAME}: {net} done in {e['seconds']} s: health {e['health']['status']}, codes per layer "
              + "; ".join(_codes_text(lc, 3) for lc in e["layers"]))
    C.log(f"{NAME}: wrote {files.json}")
    return 0
