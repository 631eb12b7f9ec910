"""Figures in the style of van Meegen & Sompolinsky (2025).

* :func:`plot_codes` (their Fig. 2): readout vectors and feature-layer activations of one network at one draw,
  neurons sorted by code — the coding scheme at a glance.
* :func:`plot_layers` (Fig. 3): activations of every layer sorted by that layer's code, the posterior-averaged
  kernel of every layer and its learned part (kernel minus the NNGP prior kernel).
* :func:`plot_readout` (Fig. 4): histograms of the readout weights pooled over neurons and draws with the theory's
  single-neuron density on top (mean field for the one-layer toy task, N(0, U) for linear nets), and the
  trajectories of readout weights and class-mean preactivations of selected neurons.
* :func:`plot_code_switching` (Fig. 5): codes of every neuron over the draws, in fixed neuron order (switching
  breaks the rows) and re-sorted at every draw (a persistent population scheme gives straight bands), per layer.
* :func:`plot_order_parameters`: ArviZ trace plot of scalar order parameters (no thousand-weight plots).

Every function takes a run (a :class:`~bnnzoo.diagnostics.run.Run`, or an InferenceData / DataTree / NetCDF path,
read once with :func:`~bnnzoo.diagnostics.run.as_run`) and optionally the
:class:`~bnnzoo.diagnostics.DiagnosticReport` of :func:`bnnzoo.diagnostics.diagnose` (to reuse its results), and
returns a matplotlib Figure.  :func:`save_figures` writes all that apply to a folder.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import azcompat
from ..diagnostics._data import RunData, run_data
from ..diagnostics.codes import code_ids, code_string, neural_codes
from ..diagnostics.compare import compare_with_theory
from ..diagnostics.kernels import kernels_and_richness
from ..diagnostics.populations import outlier_mask
from ..diagnostics.report import GROUP_PREFIX, diagnose, order_parameters
from ..diagnostics.run import as_run
from .units import plot_representations, plot_theory, plot_units

__all__ = ["plot_codes", "plot_layers", "plot_readout", "plot_code_switching", "plot_order_parameters",
           "save_figures"]

_CLASS_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f",
                 "#bcbd22", "#17becf"]


def _activations(rd, layer: int, chain: int, draw: int):
    """(activations (neuron, point) of one draw, their name): φ(z) when z can be had, else each unit's class-mean
    activation spread over its class's points (a run that recorded the summaries only)."""
    if rd.has_z(layer):
        return rd.phi(rd.z(layer)[chain, draw]), "activations"
    hb = rd.class_means(layer, activated=True)[chain, draw]      # (N, m)
    return hb[:, np.asarray(rd.labels)], "class-mean activations"


def _plt():
    # matplotlib kept off `import bnnzoo` (docs/contract.md, Imports); headless machines fall back to the Agg
    # backend by themselves
    import matplotlib.pyplot as plt

    return plt


def _code_cmap(m: int):
    import matplotlib.colors  # matplotlib kept off `import bnnzoo` (docs/contract.md, Imports)

    n = 1 << m
    base = ["#f0f0f0", "#1f77b4", "#d62728", "#9467bd", "#2ca02c", "#17becf", "#ff7f0e", "#3d3d3d"]
    if n > len(base):
        base = [matplotlib.colormaps["tab20"](i % 20) for i in range(n)]
    return matplotlib.colors.ListedColormap(base[:n])


def _class_edges(labels: np.ndarray) -> list[float]:
    return [i - 0.5 for i in range(1, len(labels)) if labels[i] != labels[i - 1]]


def _selective(rd: RunData, report, layer: int, chain: int) -> np.ndarray:
    cr = getattr(report, "codes", {}).get(f"z{layer}") if report is not None else None
    if cr is None:
        cr = neural_codes(rd, layer)
    return np.asarray(cr.selective).astype(bool)[chain]


def _sort_units(rd: RunData, layer: int, chain: int, draw: int, selective=None) -> tuple[np.ndarray, np.ndarray]:
    """Order of the neurons of ``chain`` by their code at ``draw`` in ``layer`` — outliers (feature layer) first,
    non-selective (task-agnostic) neurons last — and the group key of each neuron (code id; 2^m = non-selective;
    −1 = outlier)."""
    zb = rd.class_means(layer)[chain, draw]  # (N, m)
    ids = code_ids(zb)
    a = rd.a[chain, draw]
    scale = np.sqrt(np.sum(a**2, -1))
    outl = outlier_mask(scale) if layer == rd.depth else np.zeros(rd.width, bool)
    key = ids.copy()
    if selective is not None:
        key = np.where(selective, key, 1 << rd.m)
    key = np.where(outl, -1, key)
    # within a group, order by the strongest class-mean preactivation
    order = np.lexsort((-np.max(zb, axis=-1), key))
    return order, key


def plot_codes(idata, report=None, chain: int = 0, draw: int = -1):
    """Fig. 2: readout vectors (neuron × class) and feature-layer activations (neuron × point) of one network at one
    draw, neurons sorted by code; the code of each group is written on the left."""
    plt = _plt()
    rd = run_data(idata)
    L, m = rd.depth, rd.m
    draw = draw % rd.n_draws
    sel = _selective(rd, report, L, chain)
    order, key = _sort_units(rd, L, chain, draw, sel)
    ids = code_ids(rd.class_means(L)[chain, draw])
    a = rd.a[chain, draw][order]
    act, what = _activations(rd, L, chain, draw)
    act = act[order]
    fig, axes = plt.subplots(1, 3, figsize=(11, 5.2), gridspec_kw={"width_ratios": [0.5, 1.3, 4]},
                             constrained_layout=True)
    cmap = _code_cmap(m)
    strip = np.where(key[order] == (1 << m), np.nan, ids[order].astype(float))
    cm = cmap.with_extremes(bad="#b0b0b0")
    axes[0].imshow(strip[:, None], aspect="auto", cmap=cm, vmin=-0.5, vmax=(1 << m) - 0.5,
                   interpolation="nearest")
    axes[0].set_xticks([])
    axes[0].set_ylabel("neuron (sorted by code)")
    axes[0].set_title("code")
    sk = key[order]
    starts = [0] + [i for i in range(1, len(sk)) if sk[i] != sk[i - 1]]
    for s0, e in zip(starts, starts[1:] + [len(sk)]):
        k = sk[s0]
        label = "bulk" if k == (1 << m) else ("out" if k == -1 else code_string(k, m))
        if k == -1 or e - s0 >= max(2, len(sk) // 40):
            axes[0].text(0, (s0 + e - 1) / 2, label, ha="center", va="center", fontsize=7 if k == -1 else 8,
                         color="black" if k in (0, 1 << m) else "white", rotation=90 if e - s0 < 6 else 0)
    lim = np.max(np.abs(a)) or 1.0
    im = axes[1].imshow(a, aspect="auto", cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
    axes[1].set_xticks(range(m))
    axes[1].set_xlabel("class r")
    axes[1].set_yticks([])
    axes[1].set_title("readout $a_{ir}$")
    fig.colorbar(im, ax=axes[1], location="bottom", shrink=0.9, pad=0.02)
    bulk_rows = key[order] != -1
    vmax = np.quantile(act[bulk_rows] if bulk_rows.any() else act, 0.99) \
        if rd.activation in ("relu", "relu2", "softplus") else None
    im2 = axes[2].imshow(act, aspect="auto", cmap="viridis" if rd.activation != "linear" else "RdBu_r",
                         interpolation="nearest", vmax=vmax,
                         vmin=-np.max(np.abs(act)) if rd.activation == "linear" else None)
    for x in _class_edges(rd.labels):
        axes[2].axvline(x, color="white", lw=1.2)
    axes[2].set_xlabel("training point μ (grouped by class)")
    axes[2].set_yticks([])
    axes[2].set_title((f"activations $\\phi(z^{{{L}}}_{{i\\mu}})$" if what == "activations" else
                       "class-mean activations (z not recorded)") + f" (layer {L})"
                      + (" — colour scale saturates on outliers" if (~bulk_rows).any() else ""))
    fig.colorbar(im2, ax=axes[2], location="bottom", shrink=0.5, pad=0.02)
    scheme = getattr(report, "coding_scheme", None)
    fig.suptitle(f"{rd.config.get('model', rd.activation)}: φ = {rd.activation}, N = {rd.width}, P = {rd.P}"
                 + (f" — {scheme} code" if scheme else "") + f"  (chain {chain}, draw {draw})")
    return fig


def plot_layers(idata, report=None, chain: int = 0, draw: int = -1):
    """Fig. 3: per layer, activations sorted by code (top), posterior kernel K_l (middle) and its learned part
    K_l − K_l^NNGP (bottom)."""
    plt = _plt()
    rd = run_data(idata)
    L = rd.depth
    draw = draw % rd.n_draws
    kr = getattr(report, "kernels", None)
    if kr is None:
        kr = kernels_and_richness(rd)
    fig, axes = plt.subplots(3, L, figsize=(max(3.6 * L + 1, 5.0), 9.5), squeeze=False, constrained_layout=True)
    edges = _class_edges(rd.labels)
    for l in range(1, L + 1):
        order, key = _sort_units(rd, l, chain, draw, _selective(rd, report, l, chain))
        act, what = _activations(rd, l, chain, draw)
        act = act[order]
        bulk_rows = key[order] != -1
        ax = axes[0, l - 1]
        lim = np.max(np.abs(act))
        ax.imshow(act, aspect="auto", interpolation="nearest",
                  cmap="RdBu_r" if rd.activation == "linear" else "viridis",
                  vmin=-lim if rd.activation == "linear" else None,
                  vmax=np.quantile(act[bulk_rows], 0.99) if rd.activation in ("relu", "relu2", "softplus")
                  else None)
        for x in edges:
            ax.axvline(x, color="white", lw=1)
        ax.set_title(f"layer {l}: {what} (sorted by code)")
        ax.set_xlabel("point μ")
        ax.set_ylabel("neuron" if l == 1 else "")
        K = kr.K[l - 1]
        ax = axes[1, l - 1]
        im = ax.imshow(K, cmap="magma", interpolation="nearest")
        ax.set_title(f"kernel $K_{l}$ (CKA with YYᵀ {kr.target_cka[l - 1]:.3f})", fontsize=9)
        fig.colorbar(im, ax=ax, shrink=0.8)
        dK = K - kr.K_prior[l - 1]
        lim = np.max(np.abs(dK)) or 1.0
        ax = axes[2, l - 1]
        im = ax.imshow(dK, cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
        ax.set_title(f"learned part $K_{l} - K_{l}^{{GP}}$ (‖ΔK‖/‖K‖ = {kr.learned_fraction[l - 1]:.2f})",
                     fontsize=9)
        fig.colorbar(im, ax=ax, shrink=0.8)
        for r in (1, 2):
            for x in edges:
                axes[r, l - 1].axvline(x, color="white", lw=0.6)
                axes[r, l - 1].axhline(x, color="white", lw=0.6)
    fig.suptitle(f"{rd.config.get('model', rd.activation)}: φ = {rd.activation}, L = {L}, N = {rd.width}, "
                 f"P = {rd.P}\nD_LR per layer {', '.join(f'{v:.2f}' for v in kr.d_lr)}", fontsize=10)
    return fig


def _theory_marginals(rd: RunData, report=None):
    """(label, grid, densities (m, G)) of the single-neuron readout marginal the run's theory comparison solved (the
    report's, or a comparison made here when no report is given), or None."""
    comp = getattr(report, "theory", None)
    if comp is None:
        comp = compare_with_theory(rd)
    if comp.marginal_grid is None or comp.marginal_density is None:
        return None
    return comp.marginal_label, np.asarray(comp.marginal_grid), np.asarray(comp.marginal_density)


def _select_neurons(rd: RunData, report, chain: int, k: int = 5) -> list[int]:
    br = getattr(report, "branches", None)
    chosen: list[int] = []
    if br is not None:
        o = br.outliers
        if o is not None and o.n_outliers:
            chosen += [int(n) for c, n in zip(o.outlier_chain, o.outlier_neuron) if c == chain]
        lab = np.asarray(br.labels).reshape(rd.n_chains, rd.width)[chain]
        for b in range(br.n_branches):
            idx = np.flatnonzero(lab == b)
            if len(idx):
                chosen.append(int(idx[0]))
    rng = np.random.default_rng(0)
    rest = [i for i in rng.permutation(rd.width) if i not in chosen]
    chosen += rest[: max(0, k - len(chosen))]
    return chosen[: max(k, len(chosen))][:8]


def plot_readout(idata, report=None, chain: int = 0, neurons=None):
    """Fig. 4: readout histograms with the theory density (top) and trajectories of selected neurons (bottom)."""
    plt = _plt()
    rd = run_data(idata)
    m = rd.m
    th = _theory_marginals(rd, report)
    fig = plt.figure(figsize=(4 * m, 7.5), constrained_layout=True)
    gs = fig.add_gridspec(2, max(m, 2))
    sparse = getattr(report, "coding_scheme", None) == "sparse" or rd.activation == "relu"
    for r in range(m):
        ax = fig.add_subplot(gs[0, r])
        vals = rd.a[..., r].ravel()
        ax.hist(vals, bins=120, density=True, color=_CLASS_COLORS[r % 10], alpha=0.55, label="samples",
                histtype="stepfilled")           # one polygon, not 120 bars to lay out and draw
        if th is not None:
            lab, g, dens = th
            ax.plot(g, dens[r], "k-", lw=1.4, label=lab)
            lo, hi = np.quantile(vals, [0.0005, 0.9995])
            ax.set_xlim(min(lo, g[0] if sparse else lo) - 0.1, max(hi, hi) + 0.1)
        if sparse:
            ax.set_yscale("log")
        ax.set_xlabel(f"readout $a_{{i{r}}}$")
        ax.set_title(f"class {r}")
        if r == 0:
            ax.set_ylabel("density (all neurons, draws, chains)")
            ax.legend(fontsize=8)
    sel = list(neurons) if neurons is not None else _select_neurons(rd, report, chain)
    ax1 = fig.add_subplot(gs[1, : max(m, 2) // 2 + (max(m, 2) % 2)])
    ax2 = fig.add_subplot(gs[1, max(m, 2) // 2 + (max(m, 2) % 2):])
    zb = rd.class_means(rd.depth)[chain]  # (D, N, m)
    abar = rd.a.mean(1).reshape(-1, m)
    # the class whose readout component differs most between neurons (it tells the branches apart)
    r = int(np.argmax(abar.var(0)))
    t = np.arange(rd.n_draws)
    for j, i in enumerate(sel):
        col = f"C{j % 10}"
        ax1.plot(t, rd.a[chain, :, i, r], color=col, lw=0.8, label=f"neuron {i}")
        ax2.plot(t, zb[:, i, r], color=col, lw=0.8, label=f"neuron {i}")
    ax1.set_xlabel("draw")
    ax1.set_ylabel(f"readout weight $a_{{i{r}}}$")
    ax1.legend(fontsize=7, ncol=2)
    ax2.set_xlabel("draw")
    ax2.set_ylabel(f"class-{r} mean preactivation $\\bar z^{{{rd.depth}}}_{{i{r}}}$")
    ax2.legend(fontsize=7, ncol=2)
    ax1.set_title(f"trajectories (chain {chain})")
    fig.suptitle(f"{rd.config.get('model', rd.activation)}: readout posterior, φ = {rd.activation}, "
                 f"N = {rd.width}, P = {rd.P}")
    return fig


def plot_code_switching(idata, report=None, chain: int = 0, layers=None):
    """Fig. 5: codes of all neurons over the draws for each layer — fixed neuron order (left; switching breaks the
    rows), neurons re-sorted by code at every draw (middle; a persistent scheme gives straight bands), and the
    fraction of neurons per code over the draws (right)."""
    plt = _plt()
    rd = run_data(idata)
    m = rd.m
    layers = list(range(1, rd.depth + 1)) if layers is None else list(layers)
    fig, axes = plt.subplots(len(layers), 3, figsize=(13, 3.6 * len(layers)), squeeze=False,
                             gridspec_kw={"width_ratios": [2, 2, 1.6]}, constrained_layout=True)
    cmap = _code_cmap(m)
    n_codes = 1 << m
    for row, l in enumerate(layers):
        ids = code_ids(rd.class_means(l)[chain])  # (D, N)
        cr = getattr(report, "codes", {}).get(f"z{l}") if report is not None else None
        first = np.lexsort((np.arange(rd.width), ids[0]))
        ax = axes[row, 0]
        ax.imshow(ids[:, first].T, aspect="auto", cmap=cmap, vmin=-0.5, vmax=n_codes - 0.5,
                  interpolation="nearest")
        ax.set_ylabel(f"layer {l}\nneuron (order of draw 0)")
        ax.set_xlabel("draw")
        stats = "" if cr is None else \
            f" — memory {max(cr.code_memory, 0.0):.2f}, {cr.switching_rate:.3f} switches/draw"
        ax.set_title(f"codes, fixed neuron order{stats}", fontsize=9)
        ax = axes[row, 1]
        ax.imshow(np.sort(ids, axis=1).T, aspect="auto", cmap=cmap, vmin=-0.5, vmax=n_codes - 0.5,
                  interpolation="nearest")
        ax.set_xlabel("draw")
        ax.set_title("re-sorted by code at every draw" + ("" if cr is None else
                                                          f" — scheme drift {cr.scheme_drift:.3f}"), fontsize=9)
        ax = axes[row, 2]
        frac = np.stack([(ids == k).mean(1) for k in range(n_codes)], -1)
        for k in range(n_codes):
            if frac[:, k].max() > 0.01:
                ax.plot(frac[:, k], color=cmap(k), lw=1.2, label=code_string(k, m))
        ax.set_ylim(0, max(0.05, frac.max() * 1.15))
        ax.set_xlabel("draw")
        ax.set_ylabel("fraction of neurons")
        ax.legend(fontsize=7, ncol=2, title="code", title_fontsize=7)
    fig.suptitle(f"{rd.config.get('model', rd.activation)}: code switching, φ = {rd.activation}, L = {rd.depth}, "
                 f"N = {rd.width} (chain {chain})")
    return fig


def plot_order_parameters(idata, report=None, var_names=None):
    """ArviZ trace plot of the scalar order parameters of :func:`bnnzoo.diagnostics.order_parameters`; returns what
    :func:`bnnzoo.azcompat.plot_trace` returns."""
    run = as_run(idata)
    if f"{GROUP_PREFIX}_order_parameters" in azcompat.group_names(run.idata):
        ds = azcompat.get_group(run.idata, f"{GROUP_PREFIX}_order_parameters")
    else:
        ds = order_parameters(run)
    if var_names is None:
        var_names = [v for v in ds.data_vars if v in ("mse", "q_a") or v.startswith(("target_alignment",
                                                                                          "code_switches"))]
    ds = ds[list(var_names)].copy()
    if "draw" in ds.dims and ds.sizes["draw"] > 1:  # the switching series has no value at draw 0
        ds = ds.isel(draw=slice(1, None))
    tmp = azcompat.make_idata({"posterior": ds})
    return azcompat.plot_trace(tmp, var_names=list(var_names))


def save_figures(idata, outdir, report=None, dpi: int = 110, entry=None) -> list[str]:
    """Write every figure that applies to ``outdir`` and return their paths: for the fully-connected nets
    fig2_codes, fig3_layers, fig4_readout, fig5_switching and order_parameters; for entries diagnosed through their
    unit layers units.png (when a unit layer was recorded), kernels.png (layers with values on the training points), theory.png (when the entry
    has a theory comparison) and order_parameters.png.  ``idata``: a :class:`~bnnzoo.diagnostics.run.Run` (the
    one :func:`bnnzoo.plots.write_report` diagnosed: not read again), a run or its path; ``entry``: as for
    :func:`bnnzoo.diagnose`.  ``report`` (the run's DiagnosticReport) is computed when not given."""
    plt = _plt()

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    run = as_run(idata, entry=entry)
    idata = run.idata
    if report is None:
        report = diagnose(run, store=False)
    paths = []
    if getattr(report, "family", "fcn") == "units":
        todo = [("units.png", lambda: plot_units(idata, report))] if report.ergodicity else []
        if report.kernels is not None:
            todo.append(("kernels.png", lambda: plot_representations(report)))
        if report.theory is not None and report.theory.agreements:
            todo.append(("theory.png", lambda: plot_theory(report)))
        for name, fn in todo:
            fig = fn()
            p = outdir / name
            fig.savefig(p, dpi=dpi)
            plt.close(fig)
            paths.append(str(p))

        if f"{GROUP_PREFIX}_order_parameters" in azcompat.group_names(idata):
            ds = azcompat.get_group(idata, f"{GROUP_PREFIX}_order_parameters")
        else:
            ds = order_parameters(run)
        if ds.data_vars:
            p = outdir / "order_parameters.png"
            tmp = azcompat.make_idata({"posterior": ds.copy()})
            azcompat.save_plot(azcompat.plot_trace(tmp, var_names=list(ds.data_vars)), p, dpi=dpi)
            paths.append(str(p))
        return paths
    todo = [("fig2_codes.png", plot_codes), ("fig3_layers.png", plot_layers), ("fig4_readout.png", plot_readout)]
    todo.append(("fig5_switching.png", plot_code_switching))
    for name, fn in todo:
        fig = fn(run, report=report)
        p = outdir / name
        fig.savefig(p, dpi=dpi)
        plt.close(fig)
        paths.append(str(p))
    p = outdir / "order_parameters.png"
    azcompat.save_plot(plot_order_parameters(run, report=report), p, dpi=dpi)
    paths.append(str(p))
    return paths
