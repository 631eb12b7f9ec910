"""What the own-readout step and the local steps of sampler="units" buy: units that stay stuck, code changes,
mixing — side by side.

    python benchmarks/units_own.py                                   # the defaults below (about 20 min on 2 cores)
    python benchmarks/units_own.py --runs sig_half:off,sig_half:on --sweeps 10,20 --out /tmp/uo
    python benchmarks/units_own.py --runs sig_half:on:0,sig_half:on:4 --out benchmarks/results/units_local

The unit-wise sampler moves a unit by independence proposals from a mixture of code templates tilted by the cavity
field (:mod:`bnnzoo.inference.units`).  An independence sampler stays where the target has much more mass than the
proposal: a unit whose readout is unlike its code's template can reject every proposal for hundreds of sweeps.  The
own-readout step (``own=True``) adds one MH step per unit whose proposal is tilted by the unit's own posterior-mean
readout (its reverse density in the ratio).  The local steps (``local``) add MALA steps per unit on its conditional
given the others, which move a unit whatever its proposal mixture offers.

Per run (``--runs`` net:own[:local], own ``on`` or ``off``, local the number of local steps per unit and sweep,
default 0; comma-separated): the same task, seed and start (``--chains``
chains from the prior, ``--sweeps`` warm-up + kept sweeps), 8 tries per unit and sweep and no pair rotations (the
sampler as it was when these results were made, whatever its defaults are now).  Measured: the acceptance of the unit moves (the
own-readout step counted as one more move), code changes per unit per sweep, units whose code did not change in any
kept sweep (and of them those on codes with at most one class — for the sigmoidal nets the codes the mean field gives
no mass), units whose preactivations did not move at all in the kept sweeps (no move accepted), the largest R̂ and
smallest bulk ESS of q_a (readout norm per class) over the classes, the largest R̂ of the code fractions held by at
least 5 % of the units, and seconds per sweep (compilation excluded; the machine may be shared).

Nets: ``sig_half`` sigmoidal, y− = ½; ``sig_ym01`` sigmoidal, y− = 0.1; ``relu`` ReLU, y− = −½; all on the toy task,
N = P = ``--size``, T = 0.01, one hidden layer.

Writes ``benchmarks/results/units_own.md`` and ``.json`` (or ``--out`` stem), after every run.
"""

from __future__ import annotations

import arviz as az
import numpy as np

import bnnzoo
from bnnzoo.inference import units as U

from _bench import (TOY_NETS, codes_of, parse_runs, rhat_of, run_specs, spec_header, spec_parser, sweeps_of,
                    toy_kernel, toy_setting, write_result)

NETS = TOY_NETS
DEFAULT_RUNS = "sig_half:off,sig_half:on,sig_ym01:off,sig_ym01:on,relu:off,relu:on"


def never_moved(z, task, size, activation):
    """(chain, unit) True where no unit move was accepted in the kept sweeps: the direction of the unit's
    preactivations off the signal directions (prior-whitened), which the common-scale and signal moves leave alone,
    stayed the same."""
    kern = toy_kernel(task, activation, sigma_a2=1.0)
    s, Q = np.asarray(kern.s), np.asarray(kern.Q)
    G = z / s
    R = G - (G @ Q) @ Q.T
    R /= np.linalg.norm(R, axis=-1, keepdims=True)
    return np.all(np.abs(R - R[:, :1]).max(axis=-1) < 1e-4, axis=1)


def one(net, own, size, chains, warmup, samples, seed=0, local=0):
    """One run of the unit-wise sampler with the own-readout step on or off and ``local`` local steps; its
    measurements as a dict."""
    activation, y_neg = NETS[net]
    task = bnnzoo.toy_task(P=size, y_neg=y_neg)
    out, st, info = U.units_chains(task.X, task.Y, num_chains=chains, num_warmup=warmup, num_samples=samples,
                                   seed=seed, width=size, activation=activation, temperature=0.01,
                                   tries=U.TRIES, own=own, local=local, pairs=0, record=("z",), exclude=("W1",))
    z = np.asarray(out["z1"], float)
    codes = codes_of(z, np.asarray(task.Y))
    frozen = never_moved(z, task, size, activation)
    stuck = np.all(codes == codes[:, :1], axis=1)                                   # (chain, unit)
    classes = np.array([bin(k).count("1") for k in range(1 << task.Y.shape[1])])
    fracs = {int(k): (codes == k).mean(-1) for k in np.unique(codes)}
    frequent = {k: f for k, f in fracs.items() if f.mean() >= 0.05}
    q = np.asarray(out["q_a"])
    t = info["timing"]
    return dict(net=net, own=own, local=local, size=size, chains=chains, warmup=warmup, samples=samples, seed=seed,
                acceptance=float(np.mean(st["acceptance_rate"])),
                code_changes_per_unit_sweep=float(np.mean(st["code_change_rate"])),
                stuck_units=int(stuck.sum()), stuck_on_one_class=int((stuck & (classes[codes[:, 0]] <= 1)).sum()),
                units=int(stuck.size), never_moved=int(frozen.sum()),
                q_a_rhat_max=float(max(rhat_of(q[..., r]) for r in range(q.shape[-1]))),
                q_a_ess_min=float(min(az.ess(q[..., r]) for r in range(q.shape[-1]))),
                code_rhat_max=float(max(rhat_of(f) for f in frequent.values())),
                code_fractions={f"{k:0{task.Y.shape[1]}b}"[::-1]: round(float(f.mean()), 4) for k, f in fracs.items()},
                s_per_sweep=(t["warmup_s"] + t["sampling_s"]) / (warmup + samples))


def write(stem, args, rows, total):
    md = spec_header("sampler='units': the own-readout step and the local steps", "units_own.py", args, total,
                     toy_setting(args) + ".") + [
          "| net | own-readout step | local steps | acceptance | code changes per unit per sweep | units stuck on one "
          "code (on a code of ≤ 1 class) / units | units never moved | max R̂ of q_a | min ESS of q_a | "
          "max R̂ of code fractions ≥ 5 % | s per sweep |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['net']} | {'on' if r['own'] else 'off'} | {r.get('local', 0)} | {r['acceptance']:.3f} | "
                  f"{r['code_changes_per_unit_sweep']:.4f} "
                  f"| {r['stuck_units']} ({r['stuck_on_one_class']}) / {r['units']} | {r['never_moved']} | "
                  f"{r['q_a_rhat_max']:.3f} | "
                  f"{r['q_a_ess_min']:.0f} | {r['code_rhat_max']:.3f} | {r['s_per_sweep']:.3f} |")
    write_result(stem, args, rows, total, md)


def main(argv=None):
    p = spec_parser(__doc__, runs=DEFAULT_RUNS, runs_help=f"net:own (own: on or off), comma-separated (nets: "
                    f"{', '.join(NETS)})", size=60, sweeps="100,400", out="units_own")
    args = p.parse_args(argv)
    runs = parse_runs(args.runs, lambda r: len(r) in (2, 3) and r[0] in NETS and r[1] in ("on", "off")
                      and (len(r) == 2 or r[2].isdigit()),
                      f"net:on or net:off, optionally :local (a count), with net among {', '.join(NETS)}")
    warmup, samples = sweeps_of(args)
    return run_specs(runs, lambda net, own, *local: one(
        net, own == "on", args.size, args.chains, warmup, samples, seed=args.seed,
        local=int(local[0]) if local else 0), args, write)


if __name__ == "__main__":
    main()
