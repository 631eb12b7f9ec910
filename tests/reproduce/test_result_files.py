"""The committed result files of ``reproduce/`` and the marking of uncertified populations: no result page says
"equilibrated" of populations that no run certified (several start families, ``certify=True``)."""

import json
import re

import pytest

from tests.reproduce.reproduce_scripts import REPRO, load_script

C = load_script("_common.py")
RESULTS = REPRO / "results"
BARE = re.compile(r"(?<![\w_])(?<!not )(?<!never )equilibrated(?![\w_†])")


def _pages():
    return sorted(RESULTS.glob("*.md"))


def _jsons(md):
    return [p for p in [RESULTS / f"{md.stem}.json", *RESULTS.glob(f"{md.stem}.*.json")] if p.exists()]


@pytest.mark.parametrize("md", _pages(), ids=lambda p: p.stem)
def test_every_page_says_whether_its_populations_are_certified(md):
    """Each page has its JSON, every JSON says ``populations_certified``, and a page whose runs were not certified
    marks every "equilibrated" and carries the note that says what the mark means."""
    jsons = _jsons(md)
    assert jsons, f"{md.name} has no JSON summary"
    flags = {json.loads(p.read_text())["populations_certified"] for p in jsons}
    assert len(flags) == 1, f"{md.name}: its JSON files disagree on populations_certified"
    text = md.read_text()
    if flags == {True}:
        assert md.stem.startswith("certified_")
        return
    assert not BARE.search(text), f"{md.name}: an unmarked 'equilibrated' in a page of uncertified runs"
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
def test_result_files_mark_uncertified_runs(tmp_path, certified):
    files = C.ResultFiles(tmp_path, "r", overwrite=False, certified=certified)
    files.write({"rows": {}}, "# R\n\nCommand.\n\nHealth: equilibrated.\n")
    assert json.loads(files.json.read_text())["populations_certified"] is certified
    assert ("equilibrated†" in files.md.read_text()) is (not certified)
