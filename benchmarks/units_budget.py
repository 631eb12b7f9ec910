"""What the moves of sampler="units" buy per second: configurations of tries, own-readout step and local steps run
for the same wall time, side by side.

    python benchmarks/units_budget.py                                          # the defaults below (about 20 min)
    python benchmarks/units_budget.py --runs sig_ym01:8:on:4,sig_ym01:0:off:16 --seconds 30 --out /tmp/ub

A sweep of the unit-wise sampler (:mod:`bnnzoo.inference.units`) moves every unit by ``tries`` independence proposals
from the code mixture, the own-readout step (``own``) and ``local`` MALA steps; the mixture's proposals cost most of a
sweep and the local steps little.  Here every configuration gets the same seconds (``--seconds``, sampling only,
compilation excluded): it sweeps until they are spent, the first quarter of its sweeps is warm-up, the rest are kept,
each kept sweep is one draw.

Per run (``--runs`` net:tries:own:local[:radial], own ``on`` or ``off``, radial steps per unit and sweep 0 when left
out; comma-separated), on the same task, seed and start
(``--chains`` chains from the prior): seconds per sweep and sweeps run; the accepted fraction of each move type
(tries, own-readout step, local steps, radial steps) over the kept sweeps; code changes per unit per sweep and per second (a unit's
code: the class-mean signs of its preactivations, :mod:`bnnzoo.diagnostics.codes`); **persistent code switches**
per unit per second: the kept sweeps are cut into ``--windows`` consecutive windows (of equal time) and a switch is a
change of a unit's modal code from one window to the next (flicker inside a window does not count); the smallest
bulk ESS of q_a (the readout's mean square per class, from a readout drawn given H at every kept sweep) over the
classes and that ESS per second of kept sampling; the largest R̂ of q_a and of the code fractions (per chain and
draw, the fraction of units on a code) of codes held by at least 5 % of the units; the code fractions over the last
window.

Nets: ``sig_half`` sigmoidal, y− = ½; ``sig_ym01`` sigmoidal, y− = 0.1; ``relu`` ReLU, y− = −½; all on the toy task,
N = P = ``--size``, T = 0.01, σ_w² = 1, σ_a² the model's default 1/P (``--sigma-a2``), one hidden layer.

Writes ``benchmarks/results/units_budget.md`` and ``.json`` (or ``--out`` stem), after every run.
"""

from __future__ import annotations

import time

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np

import bnnzoo

from _bench import (TOY_NETS, parse_runs, persistent_switches, rhat_of, run_specs, spec_header, spec_parser,
                    toy_kernel, write_result)

NETS = TOY_NETS
DEFAULT_RUNS = ",".join(f"{net}:{c}" for net in ("sig_ym01", "relu")
                        for c in ("8:on:4", "0:off:16", "0:on:8", "2:on:8"))
MOVES = ("tries", "own", "local", "radial")


def one(net, tries, own, local, size, chains, seconds, windows, seed=0, sigma_a2=None, radial=0):
    """One run of ``seconds`` of sampling with these moves; its measurements as a dict."""
    activation, y_neg = NETS[net]
    task = bnnzoo.toy_task(P=size, y_neg=y_neg)
    m = task.Y.shape[1]
    with jax.enable_x64(True):
        kern = toy_kernel(task, activation, sigma_a2=sigma_a2, tries=tries, own=own, local=local, radial=radial)

        def step(H, key):
            k1, k2 = jax.random.split(key)
            H, acc, changed = kern.sweep(H, k1, by_move=True)[:3]
            a, _ = kern.readout(H, jax.random.normal(k2, ((kern.N + kern.P) * m,), H.dtype))
            return H, acc, changed, jnp.mean(a**2, axis=0), kern.codes(H)

        key = jax.random.PRNGKey(seed)
        k_init, key = jax.random.split(key)
        H = kern.s[None, None, :] * jax.random.normal(k_init, (chains, kern.N, kern.P), jnp.float64)
        keys = lambda t: jax.random.split(jax.random.fold_in(key, t), chains)
        tc = time.perf_counter()
        f = jax.jit(jax.vmap(step)).lower(H, keys(0)).compile()
        compile_s = time.perf_counter() - tc
        rec, times = [], []
        t0, c0 = time.perf_counter(), time.process_time()
        while time.perf_counter() - t0 < seconds:
            H, *out = f(H, keys(len(rec)))
            rec.append([np.asarray(x) for x in out])
            times.append(time.perf_counter() - t0)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    n = len(rec)
    w0 = n // 4                                                    # warm-up: the first quarter of the sweeps
    acc, changed, q, codes = (np.stack([r[j] for r in rec[w0:]], 1) for j in range(4))   # (chain, draw, ...)
    kept_s = times[-1] - times[w0 - 1] if w0 else times[-1]
    w = codes.shape[1] // windows                                  # draws per window: ``windows`` whole windows
    switches, modal = persistent_switches(codes[:, :windows * w], w)
    last = modal[:, -1]                                            # modal codes of the last window
    fracs = {int(k): (codes == k).mean(-1) for k in np.unique(codes)}                 # (chain, draw) each
    frequent = [f for f in fracs.values() if f.mean() >= 0.05]
    ess = min(float(az.ess(q[..., r])) for r in range(m))
    return dict(net=net, tries=tries, own=own, local=local, radial=radial, size=size, chains=chains, seed=seed, seconds=seconds,
                sigma_a2=kern.sa2, pairs_per_unit=kern.n_pairs / kern.N,
                sweeps=n, warmup=w0, kept=n - w0, compile_s=compile_s, wall_s=wall, cpu_s=cpu, kept_s=kept_s,
                s_per_sweep=wall / n,
                acceptance={mv: (None if np.isnan(acc[..., j]).all() else float(np.nanmean(acc[..., j])))
                            for j, mv in enumerate(MOVES)},
                code_changes_per_unit_sweep=float(changed.mean()),
                code_changes_per_unit_s=float(changed.sum(1).mean() / kept_s),
                switches_per_unit_s=float(switches.mean() / kept_s),
                q_a_ess_min=ess, q_a_ess_per_s=ess / kept_s,
                q_a_rhat_max=float(max(rhat_of(q[..., r]) for r in range(m))),
                code_rhat_max=float(max(rhat_of(f) for f in frequent)) if frequent else None,
                code_fractions={f"{k:0{m}b}"[::-1]: round(float((last == k).mean()), 4)
                                for k in np.unique(last)})


def write(stem, args, rows, total):
    pairs = ("" if "pairs_per_unit" not in rows[0] else
             f"; pair rotations {rows[0]['pairs_per_unit']:g} per unit and sweep (the sampler's default)")
    setting = (f"Toy task, T = 0.01, σ_a² = {rows[0]['sigma_a2']:g}, N = P = {args.size}, {args.chains} chains from "
               f"the prior, seed {args.seed}; every run {args.seconds:g} s of sampling (the first quarter of its sweeps "
               f"warm-up), compilation excluded{pairs}.")
    extra = (f" --seconds {args.seconds:g} --windows {args.windows}"
             + ("" if args.sigma_a2 is None else f" --sigma-a2 {args.sigma_a2:g}"))
    md = spec_header("sampler='units': tries, own-readout step, local and radial steps at equal wall time",
                     "units_budget.py",
                     args, total, setting, extra=extra, jax_version=True) + [
          "| net | tries | own | local | radial | s per sweep | sweeps (kept) | acceptance: tries / own / local / radial | "
          "code changes "
          "per unit per sweep | per unit per s | persistent switches per unit per s | min ESS of q_a | ESS per s | "
          "max R̂ of q_a | max R̂ of code fractions ≥ 5 % | code fractions, last window |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        a = " / ".join("–" if r["acceptance"].get(mv) is None else f"{r['acceptance'][mv]:.3f}" for mv in MOVES)
        cr = ("–" if r["code_rhat_max"] is None else "inf (chains constant on different values)"
              if r["code_rhat_max"] == float("inf") else f"{r['code_rhat_max']:.3f}")
        fr = ", ".join(f"{k} {v:.2f}" for k, v in sorted(r["code_fractions"].items(), key=lambda kv: -kv[1])
                       if v >= 0.01)
        md.append(f"| {r['net']} | {r['tries']} | {'on' if r['own'] else 'off'} | {r['local']} | {r.get('radial', 0)} | "
                  f"{r['s_per_sweep']:.3f} | {r['sweeps']} ({r['kept']}) | {a} | "
                  f"{r['code_changes_per_unit_sweep']:.4f} | {r['code_changes_per_unit_s']:.4f} | "
                  f"{r['switches_per_unit_s']:.4f} | {r['q_a_ess_min']:.0f} | {r['q_a_ess_per_s']:.2f} | "
                  f"{r['q_a_rhat_max']:.3f} | {cr} | {fr} |")
    write_result(stem, args, rows, total, md)


def main(argv=None):
    p = spec_parser(__doc__, runs=DEFAULT_RUNS, runs_help=f"net:tries:own:local[:radial] (own: on or off), comma-separated "
                    f"(nets: {', '.join(NETS)})", size=100, out="units_budget")
    p.add_argument("--seconds", type=float, default=120.0, help="seconds of sampling per run (warm-up included)")
    p.add_argument("--windows", type=int, default=10, help="windows of the kept sweeps for the modal codes")
    p.add_argument("--sigma-a2", type=float, default=None, help="the readout's prior variance (default: the "
                                                                  "model's, 1/P)")
    args = p.parse_args(argv)
    runs = parse_runs(args.runs, lambda r: len(r) in (4, 5) and r[0] in NETS and r[2] in ("on", "off")
                      and all(x.isdigit() for x in r[1:2] + r[3:]),
                      f"net:tries:own:local[:radial] (own on or off, tries, local and radial counts), net among "
                      f"{', '.join(NETS)}")
    return run_specs(runs, lambda net, tries, own, local, radial="0": one(
        net, int(tries), own == "on", int(local), args.size, args.chains, args.seconds, args.windows, seed=args.seed,
        sigma_a2=args.sigma_a2, radial=int(radial)), args, write)


if __name__ == "__main__":
    main()
