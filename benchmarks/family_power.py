"""False alarms and power of the start-family comparison (:func:`bnnzoo.workflows.certify.compare_families`) on
synthetic code fractions with known laws.

Three questions, each answered by repeats over seeds at the certification's family-wise α = 1 % (Bonferroni over
the record's M tests):

1. A planted family whose chains all keep the teacher's population (frozen), the teacher a typical draw of the
   other family's law: how often do the families "disagree" when the planted family is judged by Welch on chain
   means (``planted=None``) and by the planted check's error model (``planted="planted"``), and how large a shift of
   the teacher is caught?
2. The over-dispersion test: how often is a family whose chains scatter k× a binomial sd flagged (k = 1, 3, 3.5)?
3. A code on 10 % of 60 units in every chain of one family and on none in the other, 4 and 8 chains per family:
   the power of Welch's mean test, of an exact permutation test over chains (every split of the 2n chains into two
   families of n) and of Fisher's exact test on the units pooled per family; their false alarms at no difference,
   with binomial chains and with chains 3× over-dispersed (units coupled within a chain).

Usage: ``python benchmarks/family_power.py [--out benchmarks/results/family_power]`` (about a minute on 2 CPU
cores); writes OUT.md.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from bnnzoo.diagnostics.populations import ObservableInfo
from bnnzoo.testing import frozen_planted_families
from bnnzoo.workflows.certify import ALPHA, compare_families


# ------------------------------------------------------------------------------------------ 1. frozen planted family
def part_planted(reps: int) -> list[str]:
    rows = ["| teacher shift (binomial sds) | repeats | disagree, Welch on chain means | disagree, planted error "
            "model |", "|---|---|---|---|"]
    for shift, seed0 in ((0.0, 0), (5.0, 1000), (6.0, 1000), (7.0, 1000), (8.0, 1000), (9.0, 1000)):
        welch = planted = 0
        for s in range(reps):
            v, fam, info = frozen_planted_families(np.random.default_rng(seed0 + s), shift)
            welch += not compare_families(v, fam, info=info)["agree"]
            planted += not compare_families(v, fam, info=info, planted="planted")["agree"]
        rows.append(f"| {shift:g} | {reps} | {welch} | {planted} |")
    return rows


# --------------------------------------------------------------------------------------------- 2. over-dispersion
def part_overdispersion(reps: int) -> list[str]:
    rows = ["| chain scatter (× binomial sd) | repeats | wide family flagged | binomial family flagged |",
            "|---|---|---|---|"]
    for k in (1.0, 3.0, 3.5):
        wide = narrow = 0
        for seed in range(reps):
            rng = np.random.default_rng(seed)
            sd = math.sqrt(0.21 / 60)
            p = np.clip(0.3 + math.sqrt(k ** 2 - 1) * sd * rng.standard_normal(8), 0, 1)
            mu = np.concatenate([rng.binomial(60, p) / 60, rng.binomial(60, 0.3, 8) / 60])
            v = {"code_fraction[z1][011]": np.repeat(mu[:, None], 40, 1),
                 "code_fraction[z1][101]": np.repeat(rng.binomial(60, 0.5, (16, 1)) / 60, 40, 1)}
            rec = compare_families(v, ["wide"] * 8 + ["binomial"] * 8,
                                   info={n: ObservableInfo("fraction", 60) for n in v})
            wide += any(d.startswith("code_fraction[z1][011]: wide over-dispersed") for d in rec["disagreements"])
            narrow += any("binomial over-dispersed" in d for d in rec["disagreements"])
        rows.append(f"| {k:g} | {reps} | {wide} | {narrow} |")
    return rows


# ------------------------------------------------------------------------------------- 3. an exact count test?
def permutation_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of the difference of the two families' mean code fractions over every split of their
    chains into two groups of the families' sizes (chains are the unit of resampling)."""
    x = np.concatenate([a, b])
    n = len(a)
    split = np.array(list(itertools.combinations(range(len(x)), n)))
    sa = x[split].sum(1)
    d = np.abs(sa / n - (x.sum() - sa) / (len(x) - n))
    return float(np.mean(d >= abs(a.mean() - b.mean()) - 1e-12))


def count_case(rng, n, p1, p2, disp=1.0, N=60):
    def draw(p):
        sd = math.sqrt(p * (1 - p) / N)
        pc = p if disp == 1.0 else np.clip(p + math.sqrt(disp ** 2 - 1) * sd * rng.standard_normal(n), 0, 1)
        return rng.binomial(N, pc, n) / N
    rare = np.concatenate([draw(p1), draw(p2)])
    values = {"code_fraction[z1][011]": rng.binomial(N, 0.3, 2 * n)[:, None] / N
              + rng.binomial(1, 0.5, (2 * n, 200)) / N,
              "code_fraction[z1][001]": np.repeat(rare[:, None], 200, 1)}
    return values, rare


def part_counts(reps_power: int, reps_null: int) -> list[str]:
    rows = ["| chains per family | case | repeats | M | α/M | Welch (compare_families) | permutation over chains | "
            "Fisher, units pooled | Welch or permutation |", "|---|---|---|---|---|---|---|---|---|"]
    for n in (4, 8):
        for label, p2, disp, reps, seed0 in (("10 % vs 0 %", 0.0, 1.0, reps_power, 100),
                                             ("10 % vs 10 %, binomial chains", 0.1, 1.0, reps_null, 5000),
                                             ("10 % vs 10 %, chains 3× over-dispersed", 0.1, 3.0, reps_null, 9000)):
            w = pm = fi = both = 0
            for s in range(reps):
                values, rare = count_case(np.random.default_rng(seed0 + s), n, 0.1, p2, disp)
                rec = compare_families(values, ["prior"] * n + ["meanfield"] * n,
                                       info={k: ObservableInfo("fraction", 60) for k in values})
                M = rec["n_comparisons"]
                level = ALPHA / M
                wf = any(d.startswith("code_fraction[z1][001]: prior ") and "over-dispersed" not in d
                         for d in rec["disagreements"])
                pf = permutation_p(rare[:n], rare[n:]) < level
                ka, kb = (int(round(rare[:n].sum() * 60)), int(round(rare[n:].sum() * 60)))
                ff = stats.fisher_exact([[ka, n * 60 - ka], [kb, n * 60 - kb]]).pvalue < level
                w, pm, fi, both = w + wf, pm + pf, fi + ff, both + (wf or pf)
            rows.append(f"| {n} | {label} | {reps} | {M} | {level:.3g} | {w} | {pm} | {fi} | {both} |")
    rows.append("")
    rows.append("Smallest two-sided p of the permutation test over chains: "
                + ", ".join(f"{n} + {n} chains 2/C({2 * n},{n}) = {2 / math.comb(2 * n, n):.3g}" for n in (4, 8))
                + ".")
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/family_power")
    ap.add_argument("--reps", type=int, default=200, help="repeats per case (power of the count tests: half)")
    args = ap.parse_args(argv)
    t0 = time.time()
    parts = {"1. A frozen planted family, the teacher a typical draw (8 + 8 chains, 200 units, p = 0.3)":
             part_planted(args.reps),
             "2. Over-dispersion of 60-unit code fractions (8 + 8 chains, two codes: M = 8)":
             part_overdispersion(args.reps),
             "3. A code on 10 % of 60 units in one family, none in the other: Welch against exact count tests":
             part_counts(args.reps // 2, args.reps)}
    wall = time.time() - t0
    import bnnzoo
    import scipy
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    head = [f"# Power and false alarms of the start-family comparison", "",
            f"Command: `python benchmarks/family_power.py --reps {args.reps} --out {args.out}`.  Machine: "
            f"{os.cpu_count()} CPU cores ({platform.machine()}), load average {load[0]:.1f} at the end; {wall:.0f} s "
            f"wall.  Versions: Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
            f"bnnzoo {bnnzoo.__version__}.  Family-wise α = {ALPHA:g}; counts are runs out of the repeats.", ""]
    body = []
    for title, rows in parts.items():
        body += [f"## {title}", ""] + rows + [""]
    Path(f"{args.out}.md").write_text("\n".join(head + body))
    print("\n".join(head + body))


if __name__ == "__main__":
    sys.exit(main())
