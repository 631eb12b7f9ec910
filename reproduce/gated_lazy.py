"""Gated deep linear networks in the lazy regime (theory page §9; Saxe, Sodhani & Lewallen 2022): zero-shot
generalization to untrained pathways of the routing net as the weight scale grows.

The routing net of notebook 06 (7 input modules of 4 one-hot items → h1 → shared edge → h2 → 7 output modules of 7
hierarchical features; input i trained on outputs (i + k) mod 7, k ∈ {−1, 0, 1, 2}: 28 trained pathways, the other
21 untrained).  Every trained pathway has the same effective dataset, whose least-squares map is the item-target
matrix Yᵢᵀ; an untrained pathway generalizes zero-shot when its map is that matrix as well.

Two parts (``--parts``):

* ``bayes``: the Bayesian net (zoo entry ``gdln_routing``, standard scales c_q = 1/√fan-in, temperature T) with the
  prior variance σ² of every edge swept over ``--sigma2``.  The prior variance plays the role of the initialisation
  scale: a prior draw's end-to-end map has entries of variance (σ²)³/4 (three edges, one-hot inputs), so at σ² = 1
  the data's map (singular values up to 13.6) lies far outside the prior's typical maps and the prior acts as a
  weight decay pulling the posterior onto small-norm solutions (rich); for σ² ≫ 1 the prior no longer binds, and the
  question tested is whether the posterior then keeps weights of the size of their prior draws, with untrained maps
  left at random (lazy).  ``sampler="auto"``, 4 chains from prior draws: a chain starts at the large weights of a
  prior draw, so at large σ² the training error and the R̂ of the health check tell an equilibrated posterior from
  chains still relaxing from their start.
  Measured per σ²: the relative error of the trained pathways' posterior-mean maps against the least-squares map;
  on the untrained pathways the error of the posterior-mean predictor and the mean error of single draws, each
  relative to the error of predicting 0 (as notebook 06 measures it), next to the expected relative error of a
  prior draw, 1 + (σ²)³/(4 ⟨y²⟩); the sampler health (status, R̂ of the training error and outputs, divergences).
* ``gd``: the independent check with the library's dynamics code (``bnnzoo.theory.dynamics.gdln_gradient_descent``):
  full-batch gradient descent on the effective edge maps from i.i.d. N(0, s²) entries, for several initial scales s,
  at the paper's hidden width 64; the relative error of the untrained pathways' maps at the end, next to its value
  at the start (a random map's expected relative error, 1 + H² s⁶/⟨y²⟩) and the final training loss.

Run: ``python -m reproduce gated_lazy --size ci|cpu|paper [--parts bayes,gd] [--sigma2 1,10,100,1000]
[--warmup N] [--samples N] [--overwrite]``.
"""

from __future__ import annotations

import time

import numpy as np

from . import _common as C

NAME = "gated_lazy"
CLAIMS = ("G4", "G5")
PARTS = ("bayes", "gd")
# per size: Bayesian hidden width, temperature, σ² values, warm-up and kept draws; GD hidden width, initial scales
# with their learning rates, steps
SIZES = {
    "ci": dict(hidden=16, temperature=0.1, sigma2=(1.0, 1000.0), warmup=100, samples=100,
               gd_hidden=64, gd=((0.01, 0.1), (1.0, 0.002)), gd_steps=6000),
    "cpu": dict(hidden=16, temperature=0.1, sigma2=(1.0, 10.0, 100.0, 1000.0), warmup=600, samples=300,
                gd_hidden=64, gd=((0.01, 0.1), (0.1, 0.1), (0.3, 0.02), (1.0, 0.002)), gd_steps=20000),
    "paper": dict(hidden=64, temperature=0.01, sigma2=(1.0, 10.0, 100.0, 1000.0), warmup=2000, samples=500,
                  gd_hidden=64, gd=((0.01, 0.1), (0.1, 0.1), (0.3, 0.02), (1.0, 0.002)), gd_steps=20000),
}


def _pairs(task):
    tr = [f"in{i}>shared>out{j}" for i, j in task.meta["trained_pairs"]]
    un = [f"in{i}>shared>out{j}" for i, j in task.meta["untrained_pairs"]]
    return tr, un


def target_second_moment() -> float:
    """⟨y²⟩: the mean squared target entry of a routed item (the error of predicting 0)."""
    from bnnzoo.tasks.gated_tasks import ROUTING_ITEM_TARGETS

    return float(np.mean(ROUTING_ITEM_TARGETS**2))


def prior_draw_error(sigma2: float) -> float:
    """Expected relative error of a prior draw of the Bayesian net on one pathway: 1 + (σ²)³/(4 ⟨y²⟩).

    With standard scales each edge multiplies the second moment of a unit by σ² (in-edge fan-in 4 on a one-hot
    item: σ²/4), so an output entry of a prior draw has variance (σ²)³/4, independent of the target."""
    return 1.0 + sigma2**3 / (4.0 * target_second_moment())


def init_error(scale: float, hidden: int) -> float:
    """Expected relative error of a random map with i.i.d. N(0, s²) edge-map entries: 1 + H² s⁶/⟨y²⟩."""
    return 1.0 + hidden**2 * scale**6 / target_second_moment()


def bayes_entry(sigma2: float, s: dict, args) -> dict:
    """Sample the routing net at prior variance σ² and summarise its pathway maps and health."""
    import bnnzoo
    from bnnzoo import azcompat
    from bnnzoo.diagnostics.alignment import pathway_generalization, pathway_maps
    from bnnzoo.tasks.gated_tasks import ROUTING_ITEM_TARGETS, routing_spec, routing_task

    H = s["hidden"]
    spec, task = routing_spec(hidden=H), routing_task(hidden=H)
    tr, un = _pairs(task)
    t0 = time.time()
    run = bnnzoo.sample("gdln_routing", task, spec=spec, temperature=s["temperature"], sigma2=sigma2,
                        num_chains=C.CHAINS, num_warmup=s["warmup"], num_samples=s["samples"], seed=args.seed,
                        sampler="auto", progress=args.progress)
    secs = time.time() - t0
    Yi = ROUTING_ITEM_TARGETS.T                                       # (outputs, items): the least-squares map
    maps = pathway_maps(run)                                          # {pathway: (chain, draw, out, in)}
    nrm = float(np.sum(Yi**2))

    def map_err(names):
        mean = [float(np.sum((maps[n].mean(axis=(0, 1)) - Yi) ** 2) / nrm) for n in names]
        draw = [float(np.mean(np.sum((maps[n] - Yi) ** 2, axis=(-2, -1))) / nrm) for n in names]
        return mean, draw

    tr_mean, tr_draw = map_err(tr)
    un_mean, un_draw = map_err(un)
    gen = [g for g in pathway_generalization(run) if g.pathway in un]
    f = np.asarray(azcompat.get_group(run, "predictions")["f"].values)  # (chain, draw, test row, outputs)
    pc = azcompat.get_group(run, "predictions_constant_data")
    Xt, Yt = np.asarray(pc["X_test"].values), np.asarray(pc["y_test"].values)
    per_draw = []
    for g in gen:
        on = spec.pathway_gate(Xt, g.pathway) > 0
        sl = spec.output_slices[spec.pathway(g.pathway).output]
        per_draw.append(float(np.mean((f[:, :, on, sl] - Yt[on][:, sl]) ** 2)) / g.baseline)
    rel_mean = [g.mse / g.baseline for g in gen]
    mse = np.asarray(azcompat.get_group(run, "posterior")["mse"].values)
    # the untrained error of the posterior mean per chain: does every chain tell the same story?
    per_chain = [float(np.mean([np.sum((maps[n][c].mean(axis=0) - Yi) ** 2) / nrm for n in un]))
                 for c in range(f.shape[0])]
    return dict(sigma2=sigma2, hidden=H, temperature=s["temperature"], warmup=s["warmup"], samples=s["samples"],
                seconds=round(secs, 1), prior_draw_error=prior_draw_error(sigma2),
                train_mse=float(mse.mean()), train_mse_per_chain=mse.mean(axis=1).tolist(),
                trained_map_error=float(np.mean(tr_mean)), trained_map_error_draws=float(np.mean(tr_draw)),
                untrained_map_error=float(np.mean(un_mean)), untrained_map_error_draws=float(np.mean(un_draw)),
                untrained_map_error_per_chain=per_chain,
                untrained_error_mean=float(np.mean(rel_mean)), untrained_error_mean_max=float(np.max(rel_mean)),
                untrained_error_draws=float(np.mean(per_draw)), untrained_error_draws_max=float(np.max(per_draw)),
                n_untrained=len(gen), health=C.health_summary(run))


def gd_entry(scale: float, lr: float, s: dict) -> dict:
    """Gradient descent on the routing net (hidden ``gd_hidden``) from i.i.d. N(0, scale²) edge maps."""
    from bnnzoo.tasks.gated_tasks import ROUTING_ITEM_TARGETS, routing_spec, routing_task
    from bnnzoo.theory.dynamics import gdln_gradient_descent

    H = s["gd_hidden"]
    spec, task = routing_spec(hidden=H), routing_task(hidden=H)
    tr, un = _pairs(task)
    t0 = time.time()
    g = gdln_gradient_descent(spec, task.X, task.Y, steps=s["gd_steps"], lr=lr, init_scale=scale, seed=0,
                              record_every=max(s["gd_steps"] // 20, 1), pathways=tr + un)
    Yi = ROUTING_ITEM_TARGETS.T
    nrm = float(np.sum(Yi**2))

    def err(names, k):
        return float(np.mean([np.sum((g.maps[n][k] - Yi) ** 2) / nrm for n in names]))

    loss = np.asarray(g.loss, float)
    return dict(init_scale=scale, lr=lr, steps=s["gd_steps"], hidden=H, seconds=round(time.time() - t0, 1),
                init_error_expected=init_error(scale, H), loss_start=float(loss[0]), loss_end=float(loss[-1]),
                loss_monotone=bool(np.all(np.diff(loss) <= 1e-6 * np.abs(loss[:-1]) + 1e-12)),
                trained_error_start=err(tr, 0), trained_error_end=err(tr, -1),
                untrained_error_start=err(un, 0), untrained_error_end=err(un, -1))


def _floats(text: str, name: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        vals = ()
    if not vals or not all(np.isfinite(v) and v > 0 for v in vals):
        raise ValueError(f"{name} must be comma-separated positive numbers, got {text!r}")
    return vals


def run(argv=None) -> int:
    argv = [] if argv is None else list(argv)
    p = C.parser(f"python -m reproduce {NAME}", __doc__.split("\n\n")[0])
    p.add_argument("--parts", default="bayes,gd", help="comma-separated, some of bayes, gd (default both)")
    p.add_argument("--sigma2", default=None,
                   help="comma-separated prior variances (default per size: ci 1,1000; cpu and paper 1,10,100,1000)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps of the Bayesian runs (default per size)")
    p.add_argument("--samples", type=int, default=None, help="kept draws per chain (default per size)")
    args = p.parse_args(argv)
    C.check_args(args)
    for name in ("warmup", "samples"):
        v = getattr(args, name)
        if v is not None and v < (1 if name == "samples" else 0):
            raise ValueError(f"--{name} must be >= {1 if name == 'samples' else 0}, got {v}")
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    if not parts or set(parts) - set(PARTS):
        raise ValueError(f"--parts must name some of {', '.join(PARTS)}, got {args.parts!r}")
    s = dict(SIZES[args.size])
    if args.sigma2 is not None:
        s["sigma2"] = _floats(args.sigma2, "--sigma2")
    s.update({k: getattr(args, k) for k in ("warmup", "samples") if getattr(args, k) is not None})
    files = C.ResultFiles(args.out, args.name or f"{NAME}_{args.size}", args.overwrite)
    summary = dict(provenance=C.provenance(args, argv), settings=s, parts=parts, chains=C.CHAINS, sampler="auto",
                   target_second_moment=target_second_moment(), bayes=[], gd=[], equilibrated_sigma2=[])
    if "gd" in parts:
        for scale, lr in s["gd"]:
            C.log(f"{NAME}: gradient descent, hidden {s['gd_hidden']}, init scale {scale}")
            e = gd_entry(scale, lr, s)
            summary["gd"].append(e)
            files.write(summary)
            C.log(f"{NAME}: untrained map error {e['untrained_error_start']:.3g} → {e['untrained_error_end']:.3g}, "
                  f"loss → {e['loss_end']:.3g}")
    if "bayes" in parts:
        for i, s2 in enumerate(s["sigma2"]):
            C.log(f"{NAME}: [{i + 1}/{len(s['sigma2'])}] Bayesian routing net, hidden {s['hidden']}, σ² = {s2}")
            e = bayes_entry(s2, s, args)
            summary["bayes"].append(e)
            summary["equilibrated_sigma2"] = [x["sigma2"] for x in summary["bayes"]
                                              if x["health"]["status"] == "equilibrated"]
            files.write(summary)
            C.log(f"{NAME}: σ² = {s2} done in {e['seconds']} s: untrained error (draws) "
                  f"{e['untrained_error_draws']:.3g}, health {e['health']['status']}")
    C.log(f"{NAME}: wrote {files.json}")
    return 0
