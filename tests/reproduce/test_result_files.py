"""The committed result files of ``reproduce/`` and their pages: every JSON says whether its populations were
certified, and no rendered page says "equilibrated" of populations that no run certified (several start families,
``certify=True``)."""

import json
import re

import pytest

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


@pytest.mark.parametrize("stem", sorted(FILES))
def test_every_page_says_whether_its_populations_are_certified(stem):
    """Each result file says ``populations_certified``; the page of an uncertified one marks every "equilibrated"
    and carries the note that says what the mark means."""
    parts = [(part, json.loads(p.read_text())) for part, p in FILES[stem]]
    flags = {d["populations_certified"] for _, d in parts}
    assert len(flags) == 1, f"{stem}: its JSON files disagree on populations_certified"
    text = R.page(stem, parts)
    if flags == {True}:
        assert stem.startswith("certified_")
        assert C.UNCERTIFIED_NOTE not in text
        return
    assert not BARE.search(text), f"{stem}: an unmarked 'equilibrated' in a page of uncertified runs"
    assert C.UNCERTIFIED_NOTE in text


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
