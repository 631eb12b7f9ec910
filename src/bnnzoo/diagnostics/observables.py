"""The entry-specific part of :func:`bnnzoo.diagnose`: each function takes a run (a
:class:`~bnnzoo.diagnostics.run.Run`, or a run or path :func:`~bnnzoo.diagnostics.run.as_run` reads) and returns
``{"numbers": {name: JSON value}, "theory": TheoryComparison}`` — the entry's own observables and their comparison
with the theory that predicts them.  :data:`bnnzoo.diagnostics.analyses.ANALYSES` runs them for the entries that
declare the matching ``ZooEntry.analysis``.

* :func:`three_layer_observables` — alignment A_f on the test set, first-layer specialists and second-layer
  overlaps (:mod:`bnnzoo.diagnostics.alignment`); theory: the NNGP posterior of the two-hidden-layer network
  (:func:`bnnzoo.theory.gp.gp_posterior`, standard readout only: the N1, N2 → ∞ limit at fixed κ).
* :func:`attention_observables` — alignment, and per head the overlap of its query–key matrix Q_hᵀK_h with the
  teacher's w_q w_kᵀ and of its values with w_v; a head is a *specialist* when |cos(Q_hᵀK_h, w_q w_kᵀ)| exceeds
  3/d, three prior standard deviations (the prior of Q_hᵀK_h is invariant under rotations of both sides, so its
  cosine with any fixed unit matrix u vᵀ has mean 0 and variance exactly 1/d²).  No NNGP kernel of softmax
  attention is implemented: the theory comparison is empty, with the reason.
* :func:`gated_observables` — pathway singular values against those of the effective dataset, generalization per
  pathway; theory per pathway: a two-edge pathway that shares no edge with another pathway and is the only one open
  into its output node on its examples has a posterior of its own, the one-hidden-layer linear network of width
  n_hidden on its examples, with effective prior variances σ_in² c_in² n_in and σ_out² c_out² n_hidden, lazy
  readout and likelihood variance T.  For one output unit :func:`bnnzoo.theory.linear.linear_exact_m1` gives its
  posterior moments exactly at finite width: E[f] on the pathway's training examples and U = E[|a|²]/n_hidden.
"""

from __future__ import annotations

import math

import numpy as np

from ..models.gated import edge_prior_variances, edge_scales
from ..tasks.gated_tasks import get_spec
from ..theory import gp as gpt
from ..theory.linear import linear_exact_m1
from ._data import mean_se
from .alignment import (alignment_from_arrays, first_layer_overlaps, pathway_generalization,
                        pathway_spectra, second_layer_overlaps)
from .compare import Agreement, TheoryComparison, _matrix_agreement, _scalar_agreement
from .run import as_run

__all__ = ["three_layer_observables", "attention_observables", "gated_observables"]


def _alignment_numbers(run, numbers: dict):
    """Alignment on the test set (None when the run has no test outputs or no test targets)."""
    if run.f_test is None or run.Y_test is None:
        return None
    al = alignment_from_arrays(run.f_test, run.Y_test)
    numbers.update(alignment=al.mean_predictor, alignment_sd=al.sd, alignment_chain_means=list(al.chain_means),
                   test_rel_error=al.rel_error, n_test=al.n_test)
    return al


def _comparison(out: list, used: list, skipped: dict) -> TheoryComparison:
    return TheoryComparison(theories=tuple(used), skipped=skipped, agreements=tuple(out),
                            all_within=bool(all(a.within for a in out)))


# ------------------------------------------------------------------------------------------------------ three-layer
def three_layer_observables(idata, max_test: int = 500) -> dict:
    """Observables and NNGP comparison of a three-layer run (module docstring)."""
    run = as_run(idata)
    mk = run.model_kwargs
    w_star = run.config.get("task", {}).get("w_star")
    numbers: dict = {}
    al = _alignment_numbers(run, numbers)
    if w_star is not None:
        fo = first_layer_overlaps(run.idata, w_star)
        numbers.update(specialists=fo.mean_specialists, specialists_chance=fo.chance,
                       specialist_threshold=fo.threshold, q_star=fo.q_star)
        if run.X_test is not None and run.f_test is not None:
            so = second_layer_overlaps(run.idata, w_star, max_test=max_test)
            numbers.update(second_layer_q3=so.q3, second_layer_q1=so.q1, second_layer_max_r3=so.max_r3)
    out, used, skipped = [], [], {}
    name = "theory.gp.gp_posterior"
    act = mk.get("activation", "erf")

    if al is None:
        skipped[name] = "the run has no test set with targets"
    elif mk.get("readout", "standard") != "standard":
        skipped[name] = "the mean-field readout has no NNGP limit (only the standard readout does)"
    elif act not in gpt.NONLINEARITIES:
        skipped[name] = f"no NNGP kernel for {act!r}"
    else:
        X, Y, Xt, Yt, f = run.X, run.Y, run.X_test, run.Y_test, run.f_test
        gp = gpt.gp_posterior(X, Y, Xt, nonlinearity=act, depth=2, temperature=float(mk.get("kappa", 0.01)),
                              sigma_w2=(float(mk.get("sigma_w1", 1.0)), float(mk.get("sigma_w2", 1.0))),
                              sigma_a2=float(mk.get("sigma_a2", 1.0)))
        used.append(name)
        A_gp = float(np.sum(gp.mean * Yt) / np.sum(Yt * Yt))
        numbers["alignment_nngp"] = A_gp
        A_mu, A_se = mean_se(al.draws)
        note = "finite widths N1, N2: the NNGP is their infinite-width limit (reported, not tested)"
        out.append(_scalar_agreement("alignment_vs_NNGP", name, float(A_mu), float(A_se), A_gp, float("inf"), note))
        out.append(_matrix_agreement("f_test_vs_NNGP", name, f, gp.mean, float("inf"), note,
                                     scale=np.linalg.norm(Yt)))
    return {"numbers": numbers, "theory": _comparison(out, used, skipped)}


# ------------------------------------------------------------------------------------------------------ attention
def attention_observables(idata) -> dict:
    """Observables of a softmax-attention run (module docstring)."""
    run = as_run(idata)
    task = run.config.get("task", {})
    numbers: dict = {}
    _alignment_numbers(run, numbers)
    post = run.posterior
    if all(k in task for k in ("w_q", "w_k", "w_v")) and all(s in post for s in ("Q", "K", "V")):
        wq, wk, wv = (np.asarray(task[k], float) for k in ("w_q", "w_k", "w_v"))
        Q, K, V = (np.asarray(post[s].transpose("chain", "draw", "head", "key_dim", "input").values, float)
                   for s in ("Q", "K", "V"))
        d = Q.shape[-1]
        M = np.einsum("cdhki,cdhkj->cdhij", Q, K)  # Q_hᵀ K_h, (C, D, H, d, d)
        cos_qk = np.einsum("cdhij,i,j->cdh", M, wq, wk) / np.maximum(np.linalg.norm(M, axis=(-2, -1)), 1e-300)
        v_over = np.linalg.norm(V @ wv, axis=-1) ** 2 / np.maximum(np.sum(V**2, axis=(-2, -1)), 1e-300)
        thr = 3.0 / d
        numbers.update(qk_cosine_per_head=list(np.abs(cos_qk).mean((0, 1))), qk_specialist_threshold=thr,
                       specialist_heads=float((np.abs(cos_qk) > thr).sum(-1).mean()),
                       value_overlap_per_head=list(v_over.mean((0, 1))), value_overlap_prior=1.0 / d)
    skipped = {"theory.gp": "no NNGP kernel of softmax attention is implemented in bnnzoo.theory.gp"}
    return {"numbers": numbers, "theory": _comparison([], [], skipped)}


# ------------------------------------------------------------------------------------------------------ gated
def _isolated(spec, X, p) -> str:
    """'' when pathway ``p`` has a posterior of its own on the packed rows X, else the reason it has not."""
    others = [q for q in spec.pathways if q.name != p.name]
    shared = sorted({e for q in others for e in q.edges} & set(p.edges))
    if shared:
        return f"shares edges {shared} with other pathways"
    g = spec.pathway_gate(X, p) > 0
    for q in others:
        if q.nodes[-1] == p.nodes[-1] and np.any(g & (spec.pathway_gate(X, q) > 0)):
            return f"open together with {q.name} into {p.nodes[-1]}"
    return ""


def gated_observables(idata) -> dict:
    """Pathway spectra, generalization and per-pathway linear theory of a gated-network run (module docstring)."""
    run = as_run(idata)
    mk = run.model_kwargs
    if mk.get("spec") is None:
        raise ValueError("idata: the run's provenance does not record the gated network's spec")
    spec = get_spec(mk["spec"])
    X, Y = run.X, run.Y
    numbers: dict = {}
    for s in pathway_spectra(run.idata, X, Y, spec=spec):
        numbers[f"pathway[{s.pathway}]"] = dict(n_active=s.n_active, sv_data=list(s.sv_data), sv_ls=list(s.sv_ls),
                                                sv_mean_map=list(s.sv_mean_map),
                                                sv_draws_mean=list(s.sv_draws_mean))
    if run.Y_test is not None and run.f_test is not None:
        _alignment_numbers(run, numbers)
        for g in pathway_generalization(run.idata, spec=spec):
            numbers[f"pathway[{g.pathway}]"] = {**numbers.get(f"pathway[{g.pathway}]", {}),
                                                "test_mse": g.mse, "test_baseline": g.baseline,
                                                "trained": g.trained}
    edge_scale = mk.get("edge_scale")
    c = edge_scales(spec, mk.get("readout", "standard"), edge_scale if isinstance(edge_scale, dict) else None)
    s2 = edge_prior_variances(spec, mk.get("sigma2", 1.0) if isinstance(mk.get("sigma2", 1.0), (int, float, dict))
                              else 1.0)
    T = float(mk.get("temperature", 0.01))
    post = run.posterior
    f = np.asarray(post["f"].values, float)
    out: list[Agreement] = []
    used, skipped = [], {}
    name = "theory.linear.linear_exact_m1"
    for p in spec.pathways:
        why = _isolated(spec, X, p)
        if not why and len(p.edges) != 2:
            why = f"{len(p.edges)} edges (the exact per-pathway theory covers two-edge pathways)"
        sl = spec.output_slices[p.nodes[-1]]
        if not why and sl.stop - sl.start != 1:
            why = "more than one output unit (linear_exact_m1 needs m = 1)"
        g = spec.pathway_gate(X, p) > 0
        if not why and g.sum() == 0:
            why = "never open on the training data"
        if why:
            skipped[f"{name}[{p.name}]"] = why
            continue
        e_in, e_out = p.edges
        n_in, n_h = spec.sizes[p.nodes[0]], spec.sizes[p.nodes[1]]
        sw2 = s2[e_in] * c[e_in] ** 2 * n_in
        sa2 = s2[e_out] * c[e_out] ** 2 * n_h
        x_in = spec.unpack(X)[0][:, spec.input_slices[p.nodes[0]]][g]
        th = linear_exact_m1(x_in, Y[g][:, sl], width=n_h, temperature=T, sigma_a2=sa2, sigma_w2=sw2,
                             readout="lazy")
        if name not in used:
            used.append(name)
        a_eff = np.asarray(post[f"W_{e_out}"].values, float) * c[e_out] * math.sqrt(n_h)
        U = np.sum(a_eff**2, axis=(-2, -1)) / n_h  # (C, D)
        U_mu, U_se = mean_se(U)
        tolU = 3 * U_se + 0.02 * float(th.U[0, 0])
        out.append(_scalar_agreement(f"U[{p.name}]", name, float(U_mu), float(U_se), float(th.U[0, 0]), tolU,
                                     "E[|a|²]/n_hidden, exact at finite width; tolerance 3 se + 2 %"))
        fp = f[:, :, g][..., sl]
        rel_se_scale = float(np.linalg.norm(th.f_train)) or 1.0
        _, f_se = mean_se(fp)
        tolf = 3 * float(np.sqrt(np.sum(f_se**2))) / rel_se_scale + 0.02
        out.append(_matrix_agreement(f"f_train[{p.name}]", name, fp, th.f_train, tolf,
                                     "posterior-mean output on the pathway's examples, exact at finite width; "
                                     "tolerance 3 se + 0.02"))
    return {"numbers": numbers, "theory": _comparison(out, used, skipped)}
