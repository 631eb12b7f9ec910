"""The one renderer of ``reproduce/``: the committed reproduction page is what the claims and the JSON results give,
every verdict is a word of the vocabulary, and the checks that keep a row from saying more than its result files."""

import copy
import json
from collections import Counter

import pytest

from tests.reproduce.reproduce_scripts import ROOT, load_script, run_script

R = load_script("render")
CLAIMS = R.load_claims()


def test_render_check_passes_on_the_committed_page():
    """``python -m reproduce render --check`` exits 0: docs/reproduction.md is up to date, the claims are valid."""
    r = run_script("render", "--check", timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]


def test_the_page_lists_every_claim_with_a_verdict_of_the_vocabulary():
    rows = CLAIMS["claim"]
    assert len(rows) >= 60
    assert {c["verdict"] for c in rows} <= set(R.VERDICTS)
    page = (ROOT / "docs" / "reproduction.md").read_text()
    for c in rows:
        assert f"| {c['id']} |" in page


def _one(**changes):
    claims = copy.deepcopy(CLAIMS)
    row = next(c for c in claims["claim"] if c.get("runs") and c["verdict"] != "not run")
    row.update(changes)
    return claims, row["id"]


@pytest.mark.parametrize("changes, message", [
    (dict(verdict="reproduced"), "verdict must be one of"),
    (dict(runs=["no_such_run"]), "no result file for run(s) no_such_run"),
    (dict(paper="Somebody"), "paper must be one of"),
    (dict(section="nowhere"), "is not a [[section]] id"),
    (dict(verdict="not run", note=""), "must say why"),
])
def test_claims_errors_name_the_row_and_the_fault(changes, message):
    claims, cid = _one(**changes)
    errs = R.claims_errors(claims)
    assert any(e.startswith(f"{cid}:") and message in e for e in errs), errs


def test_a_quoted_number_must_match_its_result_file(tmp_path):
    (tmp_path / "r_cpu.json").write_text(json.dumps({"populations_certified": False, "a": {"b": [1.0, 2.5]}}))
    base = dict(id="X1", section="s", paper=R.PAPERS[0], claim="c", paper_setting="p", setting="s", value="2.5",
                theory="t", verdict="reproduced at reduced size", note="n", runs=["r_cpu"])
    claims = dict(section=[dict(id="s", title="S")], claim=[dict(base, check=[dict(run="r_cpu", path="a.b.1",
                                                                                    value=2.5, tol=0.01)])])
    assert R.claims_errors(claims, tmp_path) == []
    claims["claim"][0]["check"][0]["value"] = 3.0
    assert any("the result file has 2.5" in e for e in R.claims_errors(claims, tmp_path))
    claims["claim"][0]["check"][0]["path"] = "a.c"
    assert any("not found" in e for e in R.claims_errors(claims, tmp_path))


def _row(**kw):
    return dict(dict(id="X1", section="s", paper=R.PAPERS[0], claim="c", paper_setting="p", setting="s", value="v",
                     theory="t", verdict="partly", note="n", runs=["r_cpu"]), **kw)


def _errs(row, tmp_path):
    return R.claims_errors(dict(section=[dict(id="s", title="S")], claim=[row]), tmp_path)


def test_a_population_claim_is_reproduced_only_on_a_certified_run(tmp_path):
    """Uncertified populations: 'agrees, not certified', whatever the note says; a certificate of the earlier
    criterion (a health record naming no criterion) does not count."""
    (tmp_path / "r_cpu.json").write_text(json.dumps({"populations_certified": False}))
    row = _row(verdict="reproduced at reduced size", note="fine; populations not certified", populations=True,
               certificate="not certified: one start family")
    assert any("'reproduced' only on a certified run" in e for e in _errs(row, tmp_path))
    assert _errs(dict(row, verdict="agrees, not certified"), tmp_path) == []
    for health, ok in (({"status": "equilibrated", "criterion": "ensemble: ..."}, True),
                       ({"status": "equilibrated"}, False)):
        (tmp_path / "c_cpu.json").write_text(json.dumps({"populations_certified": True,
                                                         "rows": {"r": {"result": {"health": health}}}}))
        errs = _errs(dict(row, runs=["c_cpu"], certificate="certified by the ensemble criterion"), tmp_path)
        assert (errs == []) if ok else any("none of its runs" in e for e in errs), (health, errs)


def test_contradicted_exactly_when_the_row_says_where(tmp_path):
    (tmp_path / "r_cpu.json").write_text(json.dumps({"populations_certified": False}))
    assert any("'contradicted' exactly when" in e for e in _errs(_row(verdict="contradicted"), tmp_path))
    assert any("'contradicted' exactly when" in e
               for e in _errs(_row(contradiction="2.1 outliers per class against 1"), tmp_path))
    assert _errs(_row(verdict="contradicted", contradiction="2.1 outliers per class against 1"), tmp_path) == []


def test_a_quoted_slope_states_its_fit_without_its_most_influential_point(tmp_path):
    (tmp_path / "r_cpu.json").write_text(json.dumps({"populations_certified": False}))
    row = _row(value="log–log slope 1.14 ± 0.08")
    assert any("slope or exponent" in e for e in _errs(row, tmp_path))
    assert _errs(dict(row, influence="slope 1.14; without d = 16: 0.53"), tmp_path) == []
    assert _errs(dict(row, value="exponents 0.51 over two widths", influence="two points: nothing to leave out"),
                 tmp_path) == []
    assert _errs(_row(value="the loss falls exponentially"), tmp_path) == []


def test_the_counts_table_follows_from_the_rows():
    """The committed page's table of verdicts per paper: each cell the number of rows of that paper with that
    verdict, the last row the totals."""
    page = (ROOT / "docs" / "reproduction.md").read_text().splitlines()
    head = next(i for i, line in enumerate(page) if line.startswith("| paper |"))
    cols = [c.strip() for c in page[head].strip("|").split("|")]
    assert cols[1:-1] == list(R.VERDICTS)
    table = {}
    for line in page[head + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        table[cells[0]] = [int(x) for x in cells[1:]]
    rows = CLAIMS["claim"]
    for paper, counts in table.items():
        mine = rows if paper == "all" else [c for c in rows if c["paper"] == paper]
        n = Counter(c["verdict"] for c in mine)
        assert counts == [n[v] for v in R.VERDICTS] + [len(mine)], paper
    assert set(table) == {c["paper"] for c in rows} | {"all"}


def test_render_check_fails_when_the_page_is_stale(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "reproduction.md"
    stale.write_text((ROOT / "docs" / "reproduction.md").read_text().replace("| A1 |", "| A1x |", 1))
    monkeypatch.setattr(R, "PAGE", stale)
    assert R.main(["--check"]) == 1
    assert "differs" in capsys.readouterr().err


def test_every_result_file_renders_a_page_with_its_command():
    pages = R.result_pages()
    assert set(pages) == set(R.result_files())
    for stem, text in pages.items():
        assert text.startswith(f"# {stem}\n") and ("Command: `" in text or "Provenance: not recorded" in text)


def test_the_audit_finds_a_number_its_result_file_does_not_give(tmp_path):
    (tmp_path / "r_cpu.json").write_text(json.dumps({"populations_certified": False, "a": [0.2714, -1.5], "p": 0.123}))
    row = dict(id="X1", runs=["r_cpu"], value="0.271, −1.50, 12.3 %, and 0.99")
    n, missing = R.untraced_numbers(row, tmp_path)
    assert n == 4 and missing == ["0.99"]   # 0.271 rounds 0.2714, −1.50 is −1.5, 12.3 % is 0.123


def test_every_population_row_states_its_certificate(tmp_path):
    """A population row's certificate starts with "certified by", "metastable:" or "not certified"; "certified by"
    needs a certified result file with an equilibrated row among its runs."""
    assert all(str(c.get("certificate", "")).startswith(R.CERTIFICATES) for c in CLAIMS["claim"] if c.get("populations"))
    for stem, status, certified in (("certified_ok", "equilibrated", True), ("certified_relax", "relaxing", True),
                                    ("plain", "equilibrated", False)):
        (tmp_path / f"{stem}.json").write_text(json.dumps({"populations_certified": certified, "rows": {
            "r": {"result": {"health": {"status": status, "criterion": "rhat: ..."}}}}}))
    base = dict(id="X1", section="s", paper=R.PAPERS[0], claim="c", paper_setting="p", setting="s", value="v",
                theory="t", verdict="partly", note="n", populations=True)
    claims = dict(section=[dict(id="s", title="S")])
    cases = [({"runs": ["certified_ok"], "certificate": "certified by the ensemble criterion"}, None),
             ({"runs": ["certified_relax"], "certificate": "certified by the ensemble criterion"}, "none of its runs"),
             ({"runs": ["plain"], "certificate": "certified by the R̂ gate"}, "none of its runs"),
             ({"runs": ["plain"], "certificate": "equilibrated"}, "must start with one of"),
             ({"runs": ["plain"]}, "must start with one of"),
             ({"runs": ["certified_relax"], "certificate": "not certified: relaxing"}, None)]
    for change, message in cases:
        errs = R.claims_errors(dict(claims, claim=[dict(base, **change)]), tmp_path)
        assert (errs == []) if message is None else any(message in e for e in errs), (change, errs)


@pytest.mark.parametrize("verdict, field, text, stated", [
    ("contradicted", "note", "three schemes, not four. Verdict *partly*: the schemes change", ["partly"]),
    ("partly", "note", "the ReLU run; verdict: reproduced at reduced size", ["reproduced at reduced size"]),
    ("partly", "note", "The verdict stayed *unresolved* while the runs were metastable", ["unresolved"]),
    ("contradicted", "note", "whether there are three or four is **unresolved** until", ["unresolved"]),
    ("partly", "value", "0.31 ± 0.02; the count stays unresolved", ["unresolved"]),
    ("contradicted", "note", "the claim of this row (codes frozen) is reproduced at Fig. 3's size", ["reproduced"]),
    ("partly", "note", "reproduced (qualitatively); the exponent is 2.4 s.e. below 3", ["reproduced"]),
    ("partly", "contradiction", "both runs are *metastable* by the present criterion", ["metastable"]),
])
def test_a_row_states_no_verdict_but_its_own(tmp_path, verdict, field, text, stated):
    """A value, note or contradiction that states another verdict is refused; the same words as the row's own
    verdict, and verdict words in running text or qualified, are not."""
    (tmp_path / "r_cpu.json").write_text(json.dumps({"populations_certified": False}))
    assert R.stated_verdicts(text) == stated
    extra = dict(contradiction="beyond its error") if verdict == "contradicted" else {}
    row = _row(verdict=verdict, **dict(extra, **{field: text}))
    assert any(f"its {field} states the verdict" in e and repr(stated[0]) in e for e in _errs(row, tmp_path))
    own = stated[0] if stated[0] != "reproduced" else "reproduced at reduced size"
    if field != "contradiction" or own == "contradicted":
        kw = dict(contradiction="beyond its error") if own == "contradicted" else {}
        assert _errs(_row(verdict=own, **dict(kw, **{field: text})), tmp_path) == []


@pytest.mark.parametrize("text", [
    "the SNAPER runs were metastable (code 100 on 0.177 / 0.083 / 0.005 by family)",
    "relaxing by the present gate; *populations not certified* (one start family)",
    "the combined verdict \"metastable\" comes from one code's scatter; row C1's verdict quotes ½; no verdict",
    "GD: reproduced at every width. Bayesian: not reproduced; the d³ law is not reproduced",
    "an earlier SNAPER run was metastable and a longer one relaxing, so they are superseded",
    "the sigmoidal net at N = P = 200 was not run",
])
def test_verdict_words_in_running_text_state_no_verdict(text):
    assert R.stated_verdicts(text) == []
