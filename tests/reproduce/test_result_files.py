"""The committed result files of ``reproduce/`` and their pages: every JSON says whether its populations were
certified, a JSON that says they were carries the certification record that backs it (several start families,
``certify=True``), and no rendered page says "equilibrated" of populations that no run certified."""

import json
import math
import re

import numpy as np
import pytest
import xarray as xr

from bnnzoo import azcompat
from tests.reproduce.reproduce_scripts import load_script

C = load_script("_common")
R = load_script("render")
BARE = re.compile(r"(?<![\w_])(?<!not )(?<!never )equilibrated(?![\w_†])")
FILES = R.result_files()


def test_results_are_json_only():
    """``reproduce/results/`` holds JSON result files only (pages are rendered, never stored)."""
    assert FILES
    others = [p.name for p in R.RESULTS.iterdir() if p.suffix != ".json"]
    assert not others, f"not JSON: {others}"


def _row_certifications(d: dict) -> dict:
    """{row: its certification record} of the rows of a result summary that carry one."""
    rows = d.get("rows")
    return {k: r["result"]["certification"] for k, r in (rows.items() if isinstance(rows, dict) else ())
            if isinstance(r, dict) and isinstance(r.get("result"), dict) and "certification" in r["result"]}


def certification_gaps(d: dict, results: dict) -> list[str]:
    """What a result summary lacks of the certification record behind its ``populations_certified``.

    A summary saying true must either carry, for every one of its ``rows``, a ``certification`` with two or more
    start families and an ``agree`` flag, or be made from certified result files that do and name them: the
    ``settings.runs`` it reads (each of its ``entries`` naming one of them, with that run's families and agreement)
    or the ``file`` / ``rerun`` of its ``certified`` table.  A summary saying false carries no certification record.

    Parameters
    ----------
    d : dict
        The summary.
    results : dict
        {stem: summary} of the result files the summary may name.

    Returns
    -------
    list of str
        One line per gap; empty when the summary is backed.
    """
    certs = _row_certifications(d)
    if not d.get("populations_certified"):
        return [f"says populations_certified false but row {k} carries a certification" for k in certs]
    gaps = []
    rows = d.get("rows")
    if isinstance(rows, dict):
        for k in rows:
            c = certs.get(k)
            if c is None:
                gaps.append(f"row {k} carries no certification")
            elif len(set(c.get("families", ()))) < 2 or not isinstance(c.get("agree"), bool):
                gaps.append(f"row {k}: its certification has families {c.get('families')} and agree "
                            f"{c.get('agree')!r} (needs 2 or more families and a true/false agree)")
        return gaps or ([] if rows else ["populations_certified true with no rows"])
    named = list((d.get("settings") or {}).get("runs") or [])
    named += [t[k] for t in d.get("certified") or () for k in ("file", "rerun") if t.get(k)]
    if not named:
        return ["populations_certified true but neither rows with a certification nor the certified files it "
                "reads (settings.runs, a certified table)"]
    for stem in sorted(set(named)):
        src = results.get(stem)
        if src is None:
            gaps.append(f"names {stem}, which is no result file")
        elif not src.get("populations_certified") or not isinstance(src.get("rows"), dict) \
                or certification_gaps(src, results):
            gaps.append(f"names {stem}, which is no certified result file with a certification per row")
    for e in d.get("entries") or ():
        src = results.get(e.get("run"))
        if e.get("run") not in named or src is None:
            gaps.append(f"an entry reads {e.get('run')!r}, which settings.runs does not name")
            continue
        if not any(c.get("families") == e.get("families") and c.get("agree") == e.get("agree")
                   for c in _row_certifications(src).values()):
            gaps.append(f"the entry of {e['run']} has families {e.get('families')} and agree {e.get('agree')!r}, "
                        f"which no row of {e['run']} certifies")
    return gaps


SUMMARIES = {stem: json.loads(p.read_text()) for stem, files in FILES.items() for part, p in files if not part}


@pytest.mark.parametrize("stem", sorted(FILES))
def test_every_page_says_whether_its_populations_are_certified(stem):
    """Each result file says ``populations_certified`` and carries the certification behind it
    (:func:`certification_gaps`); the page of a certified one has no mark, the page of an uncertified one marks
    every "equilibrated" and carries the note that says what the mark means."""
    parts = [(part, json.loads(p.read_text())) for part, p in FILES[stem]]
    flags = {d["populations_certified"] for _, d in parts}
    assert len(flags) == 1, f"{stem}: its JSON files disagree on populations_certified"
    for part, d in parts:
        assert certification_gaps(d, SUMMARIES) == [], f"{stem}{'.' + part if part else ''}"
    text = R.page(stem, parts)
    if flags == {True}:
        assert C.UNCERTIFIED_NOTE not in text and C.UNCERTIFIED_MARK not in text
        return
    assert not BARE.search(text), f"{stem}: an unmarked 'equilibrated' in a page of uncertified runs"
    assert C.UNCERTIFIED_NOTE in text


def test_certification_gaps_of_made_up_summaries():
    """The content rule on summaries with known gaps, whatever their names."""
    cert = dict(families=["prior", "annealed"], agree=True)
    row = dict(result=dict(health=dict(status="equilibrated"), certification=cert))
    run = dict(populations_certified=True, rows=dict(sig1=row))
    results = dict(any_name=run, plain=dict(populations_certified=False, rows=dict(sig1=dict(result={}))))
    assert certification_gaps(run, results) == []
    one_family = dict(run, rows=dict(sig1=dict(result=dict(certification=dict(families=["prior"], agree=True)))))
    assert certification_gaps(one_family, results) == [
        "row sig1: its certification has families ['prior'] and agree True (needs 2 or more families and a "
        "true/false agree)"]
    assert certification_gaps(dict(run, rows=dict(sig1=dict(result={}))), results) == [
        "row sig1 carries no certification"]
    assert certification_gaps(dict(run, populations_certified=False), results) == [
        "says populations_certified false but row sig1 carries a certification"]
    assert certification_gaps(dict(populations_certified=True, entries=[]), results)[0].startswith(
        "populations_certified true but neither")
    # an analysis of certified runs: each entry must match its run's certification
    entry = dict(run="any_name", families=["prior", "annealed"], agree=True)
    analysis = dict(populations_certified=True, settings=dict(runs=["any_name"]), entries=[entry])
    assert certification_gaps(analysis, results) == []
    assert certification_gaps(dict(analysis, entries=[dict(entry, agree=False)]), results) == [
        "the entry of any_name has families ['prior', 'annealed'] and agree False, which no row of any_name "
        "certifies"]
    assert certification_gaps(dict(analysis, settings=dict(runs=["plain"]), entries=[]), results) == [
        "names plain, which is no certified result file with a certification per row"]
    assert certification_gaps(dict(populations_certified=True, certified=[dict(file="gone", rerun=None)]),
                              results) == ["names gone, which is no result file"]


def test_an_infinite_rhat_is_the_largest_and_reaches_the_page_as_a_dash(tmp_path):
    """Chains each constant at a different count (n_outliers frozen per chain) have R̂ = +inf exactly, chains all
    at one value NaN (ArviZ's 0/0); the health record's largest R̂ is then +inf (not the largest finite one), which
    the result file writes as null (JSON has no inf) and the page shows as "—", never as a number near 1e16."""
    frozen = np.repeat(np.array([0.0, 0.0, 1.0, 1.0])[:, None], 40, axis=1)         # (chain, draw)
    rh = float(azcompat.rhat(xr.Dataset({"x": (("chain", "draw"), frozen)}))["x"].values)
    one = float(azcompat.rhat(xr.Dataset({"x": (("chain", "draw"), np.full((4, 40), 2.0))}))["x"].values)
    assert rh == math.inf and math.isnan(one)
    rhat = {"q_a[0]": 1.004, "n_outliers": rh, "mse": one}
    assert C.largest_rhat(rhat) == math.inf
    assert C.largest_rhat({"q_a[0]": 1.004, "mse": one, "f": None}) == 1.004
    assert math.isnan(C.largest_rhat({"mse": one})) and math.isnan(C.largest_rhat({}))
    files = C.ResultFiles(tmp_path, "r", overwrite=False, certified=True)
    files.write({"health": {"rhat": rhat, "max_rhat": C.largest_rhat(rhat)}})
    d = json.loads(files.json.read_text())
    assert d["health"] == {"rhat": {"q_a[0]": 1.004, "n_outliers": None, "mse": None}, "max_rhat": None}
    text = R.page("r", [("", d)])
    assert "| n_outliers | — |" in text and "| max_rhat | — |" in text and "e+16" not in text, text


def test_mark_uncertified_marks_every_claim_once():
    page = ("# Title\n\nCommand: `x`.\n\nAll runs equilibrated (R̂ 1.01); n_equilibrated = 3; run 2 was not "
            "equilibrated.\n\n| net | health |\n|---|---|\n| a | equilibrated |\n")
    out = C.mark_uncertified(page)
    assert out.replace(C.UNCERTIFIED_NOTE, "").count("equilibrated†") == 2
    assert "n_equilibrated = 3" in out and "was not equilibrated." in out
    assert out.index(C.UNCERTIFIED_NOTE) > out.index("Command:")            # below the title and the command
    assert C.mark_uncertified(out) == out                                   # idempotent
    assert C.EARLIER_GATE_NOTE not in out and C.EARLIER_GATE_NOTE in C.mark_uncertified(page, earlier_gate=True)


@pytest.mark.parametrize("certified", [False, True])
def test_result_files_write_json_only_and_refuse_to_overwrite(tmp_path, certified):
    files = C.ResultFiles(tmp_path, "r", overwrite=False, certified=certified)
    files.write({"rows": {"a": {"status": "equilibrated"}}})
    assert json.loads(files.json.read_text())["populations_certified"] is certified
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
    text = R.page("r", [("", json.loads(files.json.read_text()))])
    assert ("equilibrated†" in text) is (not certified)
    with pytest.raises(ValueError, match="--overwrite"):
        C.ResultFiles(tmp_path, "r", overwrite=False)
    C.ResultFiles(tmp_path, "r", overwrite=True).write({"rows": {}})
    assert json.loads(files.json.read_text())["rows"] == {}


REJUDGE = load_script("rejudge")


def test_rejudge_relabels_by_the_stored_rhat_and_ess_only():
    """A stored "equilibrated" record with an invariant observable at R̂ > 1.1 and bulk ESS < 20 is relaxing by the
    present gate; R̂ > 1.1 with ESS ≥ 20 (needs the draws) and records already relaxing are left alone; the summary
    flag above a relabelled record follows."""
    rec = {"all_equilibrated": True, "samples": [
        {"health": {"status": "equilibrated", "rhat": {"mse": 1.0, "q_a[1]": 1.61}, "ess": {"mse": 300, "q_a[1]": 7}}},
        {"health": {"status": "equilibrated", "rhat": {"q_a[1]": 1.12}, "ess": {"q_a[1]": 24}}},
        {"health": {"status": "relaxing", "rhat": {"q_a[1]": 2.0}, "ess": {"q_a[1]": 3}}}]}
    changes = REJUDGE.relabel(rec)
    assert [p for p, _ in changes] == [".samples[0].health"]
    h = rec["samples"][0]["health"]
    assert h["status"] == "relaxing" and h["status_recorded"] == "equilibrated" and "q_a[1] R̂ 1.61" in h["rejudged"]
    assert rec["samples"][1]["health"]["status"] == "equilibrated" and rec["all_equilibrated"] is False


@pytest.mark.parametrize("stem", sorted(FILES))
def test_no_stored_record_is_equilibrated_by_an_older_gate(stem):
    """Every committed result file has been re-judged: no "equilibrated" record the present gate calls relaxing
    from its stored R̂ and ESS alone (``python -m reproduce.rejudge --write``)."""
    for _, p in FILES[stem]:
        assert REJUDGE.relabel(json.loads(p.read_text())) == [], stem


def test_every_certified_file_is_re_judged():
    """Every certified result file is either a re-run by the present criterion (its health names the criterion),
    an earlier file with a re-run in the before → after table, or an earlier file the table lists as not re-run;
    the committed table is what ``python -m reproduce.rejudge --write`` makes from the files."""
    table = REJUDGE.certified_table()
    covered = {t["file"] for t in table} | {t["rerun"] for t in table}
    for f in sorted(REJUDGE.RESULTS.glob("*.json")):
        stem, d = f.name[:-len(".json")], json.loads(f.read_text())
        if not d.get("populations_certified") or not isinstance(d.get("rows"), dict):
            continue
        present = all(r["result"]["health"].get("criterion") for r in d["rows"].values())
        assert present or stem in covered, stem
    stored = json.loads((REJUDGE.RESULTS / "certified_rejudged.json").read_text())["certified"]
    assert stored == json.loads(json.dumps(table))
