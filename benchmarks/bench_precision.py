"""Matrix-product precision and the exactness of the sampled posterior (run it on a GPU; on a CPU every row is equal).

    JAX_PLATFORMS=cuda python benchmarks/bench_precision.py            # N = P = 100 and 500, sigmoidal toy net
    python benchmarks/bench_precision.py --sizes 100 --out /tmp/prec   # CPU: a check that the script runs

JAX's default float32 matrix product on recent NVIDIA GPUs (Ampere, Hopper) is computed in TensorFloat32 (10-bit
mantissa).  NUTS then samples the density exp(−U_tf32), not exp(−U).  This script measures how far apart they are at
the paper's settings (sigmoidal toy net, T = 0.01, non-lazy readout, likelihood variance T/N), for the weight-space
model (``fcn``) and the readout-integrated, data-space model (``fcn_fast``), at each precision JAX offers:

* |U − U64| and |ΔU − ΔU64| — the error of the potential energy at a state, and of its change between two nearby
  states (a leapfrog-sized move; what the Metropolis test reads), against a float64 CPU reference of the same model
  and the same state (run in a child process with ``JAX_ENABLE_X64=1``);
* ‖∇U − ∇U64‖ / ‖∇U64‖ — the relative error of the gradient;
* µs per gradient, batched over 8 chains as the sampler runs it.

The weight-space state is a prior draw of W1 with the readout drawn from its exact Gaussian conditional given W1
(float64 numpy), so the residuals y − f have their equilibrium size; the data-space state is a prior draw.
Writes ``benchmarks/results/results_precision.md`` and ``.json`` (or ``--out``).  ``bnnzoo.sample`` samples with
``matmul_precision="highest"`` by default because of what this table shows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
PRECISIONS = ("default", "tensorfloat32", "bfloat16", "highest")
MODELS = ("fcn", "fcn_fast")


def _setup(N, model_name):
    """Task, model kwargs and the sampled function for the sigmoidal toy net at N = P."""
    import bnnzoo
    from bnnzoo.models import fcn, get_entry
    from bnnzoo.models.fcn_fast import fcn_fast

    task = bnnzoo.toy_task(P=N, y_neg=0.5, seed=0)
    entry = get_entry("sigmoidal")
    kw = entry.kwargs(width=N, temperature=0.01)
    if entry.resolve is not None:
        kw = entry.resolve(task.X, kw)
    fn = fcn if model_name == "fcn" else partial(fcn_fast, integrate_readout=True, data_space=True)
    return task, kw, fn


def _state(N, model_name, seed, chains):
    """Float64 numpy states (a dict of arrays with a leading chain axis) and a nearby second state."""
    import numpy as np
    from scipy.special import erf

    from bnnzoo.models.fcn import likelihood_variance, readout_scale

    task, kw, _ = _setup(N, model_name)
    rng = np.random.default_rng(seed)
    P, N0, m = task.P, task.N0, task.m
    sw = np.sqrt(kw.get("sigma_w2", 1.0))
    if model_name == "fcn_fast":
        z = {"u1": rng.standard_normal((chains, N, P))}
    else:
        s2a, c = kw["sigma_a2"], readout_scale(kw.get("readout", "nonlazy"), N)
        v = likelihood_variance(kw.get("readout", "nonlazy"), N, kw["temperature"])
        W1 = sw * rng.standard_normal((chains, N, N0))
        a = np.empty((chains, N, m))
        for ch in range(chains):
            phi = 0.5 * (1 + erf(np.sqrt(np.pi) / 2 * (W1[ch] @ task.X.T / np.sqrt(N0))))   # (N, P)
            lam = np.eye(N) / s2a + (c * c / v) * phi @ phi.T
            L = np.linalg.cholesky(lam)
            mean = np.linalg.solve(lam, (c / v) * phi @ task.Y)
            a[ch] = mean + np.linalg.solve(L.T, rng.standard_normal((N, m)))
        z = {"W1": W1, "a": a}
    step = {k: 0.01 * np.std(v) * rng.standard_normal(v.shape) for k, v in z.items()}
    z2 = {k: z[k] + step[k] for k in z}
    return z, z2


def _potential_and_grad(N, model_name, z, z2, precision):
    """U(z), U(z2) and ∇U(z) per chain on the default JAX device at one precision (None: the reference run)."""
    import contextlib

    import jax
    import jax.numpy as jnp
    import numpy as np
    from numpyro.infer.util import initialize_model

    task, kw, fn = _setup(N, model_name)
    dtype = jnp.float64 if jax.config.read("jax_enable_x64") else jnp.float32
    ctx = jax.default_matmul_precision(precision) if precision else contextlib.nullcontext()
    with ctx:
        info = initialize_model(jax.random.PRNGKey(0), fn, dynamic_args=True, model_args=(task.X, task.Y),
                                model_kwargs=kw)
        pe = info.potential_fn(task.X, task.Y, **kw)
        vg = jax.jit(jax.vmap(jax.value_and_grad(pe)))
        zz = {k: jnp.asarray(v, dtype) for k, v in z.items()}
        u, g = vg(zz)
        u2, _ = vg({k: jnp.asarray(v, dtype) for k, v in z2.items()})
        jax.block_until_ready(g)
        reps = 50
        t0 = time.perf_counter()
        for _ in range(reps):
            out = vg(zz)
        jax.block_until_ready(out)
        t_grad = (time.perf_counter() - t0) / reps
    return dict(u=np.asarray(u, float), u2=np.asarray(u2, float),
                g={k: np.asarray(v, float) for k, v in g.items()}, t_grad_s=t_grad)


def _reference(N, model_name, path):
    """Float64 CPU reference in a child process (x64 must be set before JAX starts)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_ENABLE_X64="1")
    res = subprocess.run([sys.executable, __file__, "--reference", json.dumps(dict(N=N, model=model_name,
                                                                                  path=path))],
                         capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise RuntimeError(f"reference run failed: {res.stderr.strip()[-2000:]}")
    import numpy as np

    ref = np.load(path + ".ref.npz")
    return dict(u=ref["u"], u2=ref["u2"], g={k[2:]: ref[k] for k in ref.files if k.startswith("g_")})


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reference", help=argparse.SUPPRESS)
    p.add_argument("--sizes", default="100,500")
    p.add_argument("--chains", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(HERE / "results" / "results_precision"))
    args = p.parse_args(argv)
    import numpy as np

    if args.reference:
        cfg = json.loads(args.reference)
        st = np.load(cfg["path"] + ".npz")
        z = {k[2:]: st[k] for k in st.files if k.startswith("z_")}
        z2 = {k[3:]: st[k] for k in st.files if k.startswith("z2_")}
        r = _potential_and_grad(cfg["N"], cfg["model"], z, z2, None)
        np.savez(cfg["path"] + ".ref.npz", u=r["u"], u2=r["u2"], **{f"g_{k}": v for k, v in r["g"].items()})
        return 0

    import jax

    dev = jax.devices()[0]
    device = f"{dev.platform}: {getattr(dev, 'device_kind', '?')}"
    rows = []
    tmp = tempfile.mkdtemp(prefix="bnnzoo_prec_")
    for N in [int(s) for s in args.sizes.split(",")]:
        for model_name in MODELS:
            z, z2 = _state(N, model_name, args.seed, args.chains)
            path = os.path.join(tmp, f"{model_name}_{N}")
            np.savez(path + ".npz", **{f"z_{k}": v for k, v in z.items()}, **{f"z2_{k}": v for k, v in z2.items()})
            ref = _reference(N, model_name, path)
            du_ref = ref["u2"] - ref["u"]
            gn = np.sqrt(sum((v ** 2).sum(axis=tuple(range(1, v.ndim))) for v in ref["g"].values()))
            for prec in PRECISIONS:
                r = _potential_and_grad(N, model_name, z, z2, prec)
                gerr = np.sqrt(sum(((r["g"][k] - ref["g"][k]) ** 2).sum(axis=tuple(range(1, v.ndim)))
                                   for k, v in ref["g"].items())) / gn
                row = dict(N=N, model=model_name, precision=prec, device=device,
                           u_ref_mean=float(np.mean(ref["u"])),
                           du_ref_rms=float(np.sqrt(np.mean(du_ref ** 2))),
                           u_err_max=float(np.max(np.abs(r["u"] - ref["u"]))),
                           du_err_max=float(np.max(np.abs((r["u2"] - r["u"]) - du_ref))),
                           g_relerr_max=float(np.max(gerr)), t_grad_us=1e6 * r["t_grad_s"])
                rows.append(row)
                print(f"[precision] N=P={N} {model_name:8s} {prec:13s} |U-U64| {row['u_err_max']:.3g}  "
                      f"|dU-dU64| {row['du_err_max']:.3g}  grad rel.err {row['g_relerr_max']:.2g}  "
                      f"{row['t_grad_us']:.0f} us/grad", flush=True)
    meta = dict(command="python benchmarks/bench_precision.py " + " ".join(sys.argv[1:] if argv is None else argv),
                device=device, jax=jax.__version__, chains=args.chains, seed=args.seed)
    Path(args.out + ".json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    lines = ["# Matrix-product precision vs the exact potential energy", "",
             f"Generated by `{meta['command'].strip()}` on **{device}** (jax {meta['jax']}). Sigmoidal toy net, "
             f"T = 0.01, non-lazy readout, {args.chains} chains (states), errors against a float64 CPU reference of "
             "the same model at the same state; max over the chains. ΔU: change of U over a leapfrog-sized move "
             "(what the Metropolis test reads); its float64 rms is given for scale. 'default' is JAX's own setting "
             + ("(on a CPU every precision computes in float32, so the rows agree)" if dev.platform == "cpu" else
                "(TensorFloat32 on Ampere and newer NVIDIA GPUs)") + "; `bnnzoo.sample` uses 'highest'.", "",
             "| N = P | model | precision | U (float64) | |U − U64| | |ΔU − ΔU64| (ΔU64 rms) | ‖∇U − ∇U64‖/‖∇U64‖ | "
             "µs / gradient (8 chains) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['N']} | {r['model']} | {r['precision']} | {r['u_ref_mean']:.4g} | {r['u_err_max']:.3g} | "
                     f"{r['du_err_max']:.3g} ({r['du_ref_rms']:.3g}) | {r['g_relerr_max']:.2g} | "
                     f"{r['t_grad_us']:.0f} |")
    Path(args.out + ".md").write_text("\n".join(lines) + "\n")
    print(f"[precision] wrote {args.out}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
