"""Figures of entries diagnosed through their unit layers (three-layer, attention, gated networks).

* :func:`plot_units`: per unit layer, the units' time-averaged features (units sorted by cluster), each unit's share
  of the pooled variance it covers over time (ergodicity), and the trajectories of a few units
  along the feature with the largest variance.
* :func:`plot_representations`: the posterior kernel of every unit layer with values on the training points, with
  its CKA with the target kernel YYᵀ.
* :func:`plot_theory`: every agreement of the entry's theory comparison, sampled (± standard error) against
  predicted.

Each takes the run and the :class:`~bnnzoo.diagnostics.DiagnosticReport` of :func:`bnnzoo.diagnose` and returns a
matplotlib Figure.
"""

from __future__ import annotations

import textwrap

import numpy as np

from .. import azcompat
from ..diagnostics.units import unit_trajectories
from ..models.zoo import ZOO

__all__ = ["plot_units", "plot_representations", "plot_theory"]


def _plt():
    import matplotlib.pyplot as plt  # matplotlib kept off `import bnnzoo` (docs/contract.md, Imports)

    return plt


def _wrap(text: str, width: int) -> str:
    return textwrap.fill(text, width)


def _layer_sites(report) -> dict:
    entry = ZOO.get(report.config.get("entry", report.config.get("model")))
    return {u.name: u for u in entry.units} if entry is not None else {}


def plot_units(idata, report, chain: int = 0, n_traces: int = 5):
    """Per unit layer (rows): time-averaged features of every unit of ``chain`` (units sorted by cluster), the share
    of the pooled variance each unit covers over time, and trajectories of a few units (the feature with the largest
    variance)."""
    from matplotlib.ticker import MaxNLocator  # matplotlib kept off `import bnnzoo` (as _plt)

    plt = _plt()
    post = azcompat.get_group(idata, "posterior")
    sites = _layer_sites(report)
    names = [n for n in report.ergodicity if n in sites]
    if not names:
        raise ValueError("the report has no unit layers to plot (diagnose a run of a zoo entry with units)")
    fig, axes = plt.subplots(len(names), 3, figsize=(13, 3.2 * len(names)), squeeze=False, constrained_layout=True,
                             gridspec_kw={"width_ratios": [2, 1.3, 2]})
    for row, name in enumerate(names):
        t = unit_trajectories(post, sites[name])
        x = t.features[chain]  # (D, U, F)
        D, U, F = x.shape
        cl = report.clusters.get(name)
        lab = np.asarray(cl.labels).reshape(-1, U)[chain] if cl is not None else np.zeros(U, int)
        order = np.lexsort((np.arange(U), lab))
        avg = x.mean(0)[order]
        ax = axes[row, 0]
        lim = np.max(np.abs(avg)) or 1.0
        im = ax.imshow(avg, aspect="auto", cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
        fig.colorbar(im, ax=ax, shrink=0.8)
        ax.set_ylabel(f"{name}\nunit ({t.dim}, by cluster)")
        ax.set_xlabel("feature" + (" (training point × other dims)" if t.representation is not None else ""))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(f"time-averaged features — {cl.n_clusters if cl else '?'} cluster(s)", fontsize=9)
        er = report.ergodicity[name]
        ax = axes[row, 1]
        ax.bar(np.arange(U), np.asarray(er.ratio_per_neuron)[chain], color="#1f77b4")
        ax.axhline(er.threshold, color="k", ls="--", lw=1, label=f"threshold {er.threshold}")
        ax.set_xlabel("unit")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("time / pooled variance")
        ax.set_title(f"ergodicity: r = {er.ratio:.2f} ({er.verdict}); symmetry "
                     f"{report.symmetry[name].verdict}", fontsize=9)
        ax.legend(fontsize=7)
        ax = axes[row, 2]
        k = int(np.argmax(x.reshape(D * U, F).var(0)))  # the feature that moves most
        for i in np.linspace(0, U - 1, min(n_traces, U)).astype(int):
            ax.plot(x[:, i, k], lw=0.9, label=f"unit {i}")
        ax.set_xlabel("draw")
        ax.set_ylabel(f"feature {k}")
        ax.legend(fontsize=7, ncol=2)
        ax.set_title(f"trajectories (chain {chain})", fontsize=9)
    fig.suptitle(_wrap(report.run, 160), fontsize=9)
    return fig


def plot_representations(report):
    """Posterior kernel of every unit layer with values on the training points (report.kernels)."""
    plt = _plt()
    kr = report.kernels
    if kr is None:
        raise ValueError("the report has no kernels (diagnose with kernels=True a run whose unit layers have values "
                         "on the training points)")
    L = len(kr.K)
    fig, axes = plt.subplots(1, L, figsize=(4.2 * L + 0.5, 3.8), squeeze=False, constrained_layout=True)
    for i in range(L):
        ax = axes[0, i]
        im = ax.imshow(kr.K[i], cmap="magma", interpolation="nearest")
        fig.colorbar(im, ax=ax, shrink=0.8)
        ax.set_title(f"{kr.kernel_names[i + 1]}: kernel, CKA with YYᵀ {kr.target_cka[i]:.3f}", fontsize=9)
        ax.set_xlabel("point μ")
    fig.suptitle(_wrap(report.run, 45 * L + 10), fontsize=8)
    return fig


def plot_theory(report):
    """Each agreement of ``report.theory``: sampled ± standard error (blue) and predicted (black cross)."""
    plt = _plt()
    comp = report.theory
    if comp is None or not comp.agreements:
        raise ValueError("the report has no theory agreements")
    ag = list(comp.agreements)
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(ag) + 1.6), constrained_layout=True)
    y = np.arange(len(ag))
    sampled = np.array([a.sampled for a in ag])
    se = np.array([a.sampled_se for a in ag])
    pred = np.array([a.predicted for a in ag])
    ax.errorbar(sampled, y, xerr=np.where(np.isfinite(se), se, 0.0), fmt="o", color="#1f77b4", label="sampled ± se")
    ax.plot(pred, y, "kx", ms=8, label="theory")
    ax.set_yticks(y)
    ax.set_yticklabels([f"{a.quantity} {'✓' if a.within else '✗'}" for a in ag], fontsize=8)
    ax.invert_yaxis()
    ax.legend(fontsize=8)
    ax.set_title(f"theory: {', '.join(comp.theories)} — {sum(a.within for a in ag)}/{len(ag)} within tolerance",
                 fontsize=9)
    return fig
