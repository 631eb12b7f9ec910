"""Re-judge the stored result files by the present health gate and certification criterion (issue 48, item 4).

Two parts, both from the JSON summaries (no draws are stored, so nothing is re-sampled here):

* **Relabel.** A stored health record that says "equilibrated" while one of its invariant observables has R̂ above
  ``MAX_RHAT`` *and* a bulk ESS below ``MIN_ESS`` is "relaxing" under the present gate whatever the population
  tolerance would have excused: chains apart with too few effective draws cannot tell a frozen population from a
  relaxing one (:mod:`bnnzoo.inference.health`).  That rule needs only the stored R̂ and ESS, so it is applied to
  every stored record; the record keeps what it said as ``status_recorded`` and the reason as ``rejudged``, and a
  summary flag ``all_equilibrated`` above it is recomputed the same way.  Records the rule does not decide stay as
  they are (their R̂ above 1.1 with ESS ≥ 20 needs the draws to judge).
* **Certified runs, before → after.** The certified result files made with 4 chains per family and the earlier
  criterion (binomial floor, population tolerance) against their re-runs with the same settings, 8 chains per family
  and the present criterion (measured scatter; ensemble criterion where populations are frozen), and the files not
  re-run with the reason: one table row per file and row, written to ``reproduce/results/certified_rejudged.json``.

Run: ``python -m reproduce.rejudge`` (prints what would change) or ``python -m reproduce.rejudge --write``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from bnnzoo.inference.health import MAX_RHAT, MIN_ESS

from . import _common as C

RESULTS = Path(__file__).resolve().parent / "results"
RERUNS = {
    "certified_cpu": ("certified_ens_cpu", "certified_ens_cpu_relu"),
    "certified_cpu_sig3": ("certified_ens_cpu_sig3",),
    "certified_cpu_ym0.2": ("certified_ens_cpu_ym0.2",),
    "certified_cpu_ym0.3": ("certified_ens_cpu_ym0.3",),
    "certified_cpu_ym0.4": ("certified_ens_cpu_ym0.4",),
    "certified_cpu_sig1_n100": ("certified_ens_cpu_sig1_n100",),
    "certified_paper_ym01_n100": ("certified_ens_paper_ym01_n100",),
    "certified_paper_sig1_n100": ("certified_ens_paper_sig1_n100",),
}
"""Each certified file made by the earlier criterion (4 chains per family) and the stems of its re-runs (8 chains per
family, the present criterion, the same settings and sampler)."""
NOT_RERUN = {
    "certified_cpu_relu3_n100": "not re-run: no draws stored, and a re-run with 8 chains per family needs about "
                                "twice the 2601 s the 4-chain run took on the 2-core CPU",
    "certified_cpu_mnist_relu": "not re-run: no draws stored, and a re-run with 8 chains per family needs about "
                                "twice the 5349 s the 4-chain run took on the 2-core CPU",
    "certified_cpu_relu_n200": "not re-run: no draws stored, and a re-run with 8 chains per family needs about "
                               "twice the 1510 s the 4-chain run took on the 2-core CPU",
    "certified_gpu_relu200_pt": "not re-run: made on a GPU (parallel tempering, 48 replicas), none lent since",
}
"""The certified files of the earlier criterion that were not re-run, and why: the present criterion cannot judge
them from their stored summaries (the scatter of chain means behind each family's error was not stored apart from
the binomial floor), so they are "not certified by the present criterion" until re-run."""


def relaxing_reason(health: dict) -> str | None:
    """Why a stored "equilibrated" health record is "relaxing" by the present gate, from its R̂ and ESS alone; None
    when the rule does not apply."""
    if health.get("status") != "equilibrated" or not isinstance(health.get("rhat"), dict):
        return None
    ess = health.get("ess") or {}
    bad = [f"{k} R̂ {r:.2f} with bulk ESS {ess[k]:.0f}" for k, r in health["rhat"].items()
           if isinstance(r, (int, float)) and r > MAX_RHAT and isinstance(ess.get(k), (int, float))
           and ess[k] < MIN_ESS]
    if not bad:
        return None
    return (f"relaxing by the present gate: {'; '.join(bad)} (R̂ > {MAX_RHAT} with bulk ESS < {MIN_ESS:g}: too "
            f"short to tell a frozen population from a relaxing one)")


def relabel(node, path: str = "") -> list[tuple[str, str]]:
    """Relabel every stored health record under ``node`` in place; returns [(path, reason)] of the changes."""
    changes: list[tuple[str, str]] = []
    if isinstance(node, dict):
        why = relaxing_reason(node)
        if why is not None:
            node.update(status="relaxing", status_recorded="equilibrated", rejudged=why)
            changes.append((path or ".", why))
        for k, v in node.items():
            changes += relabel(v, f"{path}.{k}")
        if changes and node.get("all_equilibrated") is True:
            node.update(all_equilibrated=False, all_equilibrated_recorded=True)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            changes += relabel(v, f"{path}[{i}]")
    return changes


def relabelled_records(node, path: str = "") -> list[tuple[str, str]]:
    """[(path, reason)] of every record under ``node`` relabelled by :func:`relabel`, now or in an earlier run."""
    out: list[tuple[str, str]] = []
    if isinstance(node, dict):
        if "rejudged" in node and "status_recorded" in node:
            out.append((path or ".", node["rejudged"]))
        for k, v in node.items():
            out += relabelled_records(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += relabelled_records(v, f"{path}[{i}]")
    return out


def _row_verdict(row: dict) -> dict:
    h, c = row["result"]["health"], row["result"]["certification"]
    out = {"status": h["status"], "reason": h.get("reason", ""), "agree": c.get("agree")}
    if "criterion" in h:
        out["criterion"] = h["criterion"].split(":")[0] if h["criterion"] else ""
    return out


def certified_table() -> list[dict]:
    """One entry per (earlier file, row): settings, chains and the verdict before and after (a re-run's, or "not
    re-run" with the reason for the files of :data:`NOT_RERUN`)."""
    table = []
    for old, news in RERUNS.items():
        a = json.loads((RESULTS / f"{old}.json").read_text())
        for new in news:
            fn = RESULTS / f"{new}.json"
            if not fn.exists():
                continue
            b = json.loads(fn.read_text())
            for row, ra in a["rows"].items():
                rb = b["rows"].get(row)
                if rb is None:
                    continue
                before, after = _row_verdict(ra), _row_verdict(rb)
                table.append({"file": old, "row": row, "rerun": new, "N": ra["settings"]["N"],
                              "y_neg": ra["settings"].get("y_neg"), "chains_before": a.get("chains"),
                              "chains_after": b.get("chains"), "status_before": before["status"],
                              "status_after": after["status"], "criterion_after": after.get("criterion", ""),
                              "reason_before": before["reason"], "reason_after": after["reason"]})
    for old, why in NOT_RERUN.items():
        a = json.loads((RESULTS / f"{old}.json").read_text())
        for row, ra in a["rows"].items():
            before = _row_verdict(ra)
            table.append({"file": old, "row": row, "rerun": "", "N": ra["settings"]["N"],
                          "y_neg": ra["settings"].get("y_neg"), "chains_before": a.get("chains"),
                          "chains_after": None, "status_before": before["status"],
                          "status_after": "not certified by the present criterion", "criterion_after": "",
                          "reason_before": before["reason"], "reason_after": why})
    return table


def run(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m reproduce.rejudge", description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true", help="rewrite the relabelled files and write the table")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    relabelled = {}
    for f in sorted(RESULTS.glob("*.json")):
        data = json.loads(f.read_text())
        changes = relabel(data)
        done = relabelled_records(data)
        if done:
            relabelled[f.stem] = [{"record": p, "reason": r} for p, r in done]
        if changes:
            print(f"{f.stem}: " + "; ".join(p for p, _ in changes))
            if args.write:
                tmp = f.with_suffix(".json.tmp")
                tmp.write_text(json.dumps(data, indent=1) + "\n")
                tmp.replace(f)
    table = certified_table()
    for t in table:
        print(f"{t['file']} {t['row']}: {t['status_before']} ({t['chains_before']} chains) -> {t['status_after']} "
              f"({t['chains_after']} chains, {t['criterion_after'] or 'no criterion'})")
    if args.write:
        files = C.ResultFiles(RESULTS, "certified_rejudged", overwrite=True, certified=True)
        files.write({"provenance": {"command": "python -m reproduce.rejudge --write",
                                    "started": datetime.datetime.now().isoformat(timespec="seconds")},
                     "rule": " ".join(relaxing_reason.__doc__.split()), "relabelled": relabelled, "certified": table})
    return 0


if __name__ == "__main__":
    raise SystemExit(run())
