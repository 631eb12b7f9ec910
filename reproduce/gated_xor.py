"""Gated deep linear net computing XoR (theory page §9; Saxe, Sodhani & Lewallen): the sampled posterior of the
two-pathway XoR net against the exact posterior of the one-hidden-layer linear net on each pathway's gated
effective dataset.

Inputs x ∈ {±1}², target y = −x₁x₂; the gate on x₁ opens pathway a (x → h_a → out) when x₁ = −1 and pathway b when
x₁ = +1 (:func:`bnnzoo.tasks.gated_tasks.xor_task`, :func:`~bnnzoo.tasks.gated_tasks.xor_spec`).  The two pathways
share no edge and see disjoint examples, so the posterior factorises and the edges of each pathway are distributed
exactly as the weights of the lazy-readout one-hidden-layer linear net on its two examples, whose finite-width
moments E[aᵀa/N] and E[f] :func:`bnnzoo.theory.linear_exact_m1` gives in closed form.

Per pathway: E[aᵀa/N] and E[f] sampled (4 chains from prior draws) against the exact finite-N values, with the
largest |z| (Monte Carlo standard errors from the effective sample size); the posterior-mean outputs on the four
inputs against the XoR targets; sampler health.

Run: ``python -m reproduce gated_xor --size ci|cpu|paper [--overwrite]``.
"""

from __future__ import annotations

import time

import numpy as np

from . import _common as C

NAME = "gated_xor"
CLAIMS = ("G1",)
T = 0.01
# hidden width, warm-up, kept draws; the XoR net of the paper's setting is this small, so "paper" is "cpu"
SIZES = {"ci": dict(hidden=4, warmup=300, samples=300), "cpu": dict(hidden=4, warmup=1000, samples=2000),
         "paper": dict(hidden=4, warmup=1000, samples=2000)}


def analyse(run, task, hidden: int) -> dict:
    """Per pathway: sampled vs exact E[aᵀa/N] and E[f]; outputs on the four inputs; sampler health."""
    from bnnzoo import azcompat, theory
    from bnnzoo.testing import z_test

    post = azcompat.get_group(run, "posterior")
    out = dict(health=C.health_summary(run), pathways={})
    for name, edge, on in (("in_a>out_a", "W_out_a", task.X[:, 0] < 0), ("in_b>out_b", "W_out_b", task.X[:, 0] > 0)):
        xe, ye = task.X[on, :2], task.Y[on]
        exact = theory.linear_exact_m1(xe, ye, width=hidden, temperature=T, sigma_a2=1.0, sigma_w2=1.0,
                                       readout="lazy")
        inf = theory.linear_saddle_point(xe, ye, temperature=T, sigma_a2=1.0, sigma_w2=1.0, readout="lazy")
        A = np.asarray(post[edge].values, float)                                # (chain, draw, 1, N) = aᵀ
        U = np.einsum("cdri,cdsi->cdrs", A, A) / hidden
        f = np.asarray(post["f"].values, float)[:, :, on, :]
        zU, zf = z_test(U, exact.U), z_test(f, exact.f_train)
        out["pathways"][name] = dict(U=float(U.mean()), U_exact=float(exact.U[0, 0]), U_infinite_width=float(inf.U[0, 0]),
                                     U_max_abs_z=zU.max_abs_z, f=f.mean(axis=(0, 1))[:, 0].tolist(),
                                     f_exact=np.asarray(exact.f_train)[:, 0].tolist(), f_max_abs_z=zf.max_abs_z)
    f_test = azcompat.get_group(run, "predictions")["f"].values.mean(axis=(0, 1))[:, 0]
    out["outputs"] = [dict(x=[float(v) for v in x], f=float(fv), y=float(y))
                      for x, fv, y in zip(task.X_test[:, :2], f_test, task.Y_test[:, 0])]
    out["max_output_error"] = float(np.max(np.abs(f_test - task.Y_test[:, 0])))
    return out


def run(argv=None) -> int:
    argv = [] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    args = p.parse_args(argv)
    C.check_args(args)
    s = SIZES[args.size]
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)

    import bnnzoo
    from bnnzoo.tasks.gated_tasks import xor_spec, xor_task

    res = dict(provenance=C.provenance(args, argv), size=args.size, settings=s, temperature=T, chains=C.CHAINS,
               result=None)
    task = xor_task(hidden=s["hidden"])
    C.log(f"{NAME}: sampling the XoR net, hidden {s['hidden']}")
    t0 = time.time()
    run = bnnzoo.sample("gdln_xor", task, spec=xor_spec(s["hidden"]), temperature=T, num_chains=C.CHAINS,
                        num_warmup=s["warmup"], num_samples=s["samples"], seed=args.seed, sampler="auto",
                        progress=args.progress)
    res["sampling_s"] = time.time() - t0
    res["result"] = analyse(run, task, s["hidden"])
    files.write(res)
    C.log(f"{NAME}: wrote {files.json}")
    return 0
