"""The one renderer of ``reproduce/``: every result page and the reproduction page, made from the JSON results.

* A **result page** (``docs/repro_results/<stem>.md``, made when the documentation builds, never stored) shows one
  result file ``reproduce/results/<stem>.json`` (with its parts ``<stem>.<part>.json``) as it is: the experiment and
  its command, machine and versions, then every entry of the summary — scalars as key/value tables, lists of records
  and records of records as tables, nested records as sections.  A page of runs whose populations were not certified
  marks every "equilibrated" with † and says what that means.
* The **reproduction page** (``docs/reproduction.md``, committed) is made from ``reproduce/claims.toml``: one row per
  claim of the papers with the paper's setting, ours, the sampled value, the theory, the verdict (one word of
  :data:`VERDICTS`) and the result files behind it.  Rendering refuses a claims file whose verdict is not in the
  vocabulary, whose runs have no result file, whose quoted numbers (``[[claim.check]]``) differ from the JSON, which
  calls a population claim reproduced on runs the present criterion did not certify, which is "contradicted" without
  saying where (or says where and is not "contradicted"), whose value, note or contradiction states a verdict other
  than its own (:data:`STATED_VERDICT`), or which quotes a slope without its fit less its most influential point.

``python -m reproduce render`` writes both; ``--check`` writes nothing and exits 1 when the committed reproduction
page differs from what the claims and the JSON give (or the claims fail a check above).
"""

from __future__ import annotations

import argparse
import difflib
import json
import ast
import math
import re
import sys
import tomllib
from pathlib import Path

from . import _common as C
from . import experiment_of

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "reproduce" / "results"
CLAIMS = ROOT / "reproduce" / "claims.toml"
PAGE = ROOT / "docs" / "reproduction.md"
PAGES = ROOT / "docs" / "repro_results"

VERDICTS = ("reproduced at paper size", "reproduced at reduced size", "agrees, not certified", "partly",
            "contradicted", "unresolved", "metastable", "not run", "out of scope")
"""The verdict vocabulary of the reproduction page, strongest first.  "agrees, not certified" is the verdict of a
population row whose sampled value agrees with the theory on runs whose populations no certification vouches for:
a population claim is "reproduced" only on a certified run (:func:`claims_errors`)."""
SLOPE = re.compile(r"\b(slope|exponent)s?\b", re.IGNORECASE)
"""A row whose sampled value quotes a fitted slope or exponent: it must state the fit without its most influential
point (field ``influence``, made by ``python -m reproduce.influence``)."""
_WORD = ("(reproduced at paper size|reproduced at reduced size|reproduced|agrees, not certified|partly|contradicted"
         "|unresolved|metastable|not run|out of scope)")
STATED_VERDICT = (
    re.compile(r"(?:^|[.;:(—]\s*|\b(?:the|this|its|our)\s+(?:row's\s+)?)verdict\s*(?:(?:is|was|stays|stayed|remains"
               r"|remained|becomes|became|would be|goes|went|moves|moved)\s+)?(?:from\s+)?[:=]?\s*[*\"“]*" + _WORD
               + r"\b", re.IGNORECASE),
    re.compile(r"(?<![*\w])\*{1,2}" + _WORD + r"[.,;:]?\*{1,2}(?![*\w])", re.IGNORECASE),
    re.compile(r"\b(?:stays|stayed|remains|remained)\s+\**(reproduced|partly|contradicted|unresolved|not run"
               r"|out of scope)\b", re.IGNORECASE),
    re.compile(r"\b(?:the claim of this row|this row's claim|this row|this claim)(?:\s*\([^)]*\))?\s+(?:is|was|stays"
               r"|stayed|remains|remained)\s+(?:still\s+|now\s+)?\**" + _WORD + r"\b", re.IGNORECASE),
    re.compile(r"^\W*" + _WORD + r"\b", re.IGNORECASE),
)
"""What states a verdict in a row's text (its ``value``, ``note`` and ``contradiction``): "verdict" as the row's own
(at the start of a clause or after "the", "this", "its", "our" or "this row's"), with an optional verb ("is", "stays",
"stayed", "became", ...) and a verdict word ("Verdict *partly*", "verdict: reproduced", "The verdict stayed
*unresolved*"); a verdict word set in emphasis as a whole ("**unresolved**", "*metastable*": the page sets verdicts in
emphasis); "stays", "remains" (or their past) followed by a verdict word other than "metastable" and "agrees" (which are
also health labels and plain English); "this row (or claim) is / stays ..." followed by a verdict word; and a verdict
word opening the text.  A row may state only its own verdict this way (:func:`stated_verdicts`).  Not caught: a verdict
word in running text ("SNAPER runs were metastable", "the d³ law is not reproduced"), a qualified verdict ("the combined
verdict", "row C1's verdict", "no verdict"), and health labels that are not verdict words ("relaxing",
"equilibrated")."""
PAPERS = ("van Meegen & Sompolinsky", "Nam et al.", "Rubin, Davidovich & Ringel", "Saxe, Sodhani & Lewallen",
          "Saxe, McClelland & Ganguli")
MAX_LIST = 12
"""Lists longer than this are shown by their first entries and their length (the JSON holds them all)."""


# ------------------------------------------------------------------------------------------------- result files
def result_files(results: Path = RESULTS) -> dict[str, list[tuple[str, Path]]]:
    """Every result stem with its files: ``{stem: [(part, path), ...]}`` (part "" for ``<stem>.json``)."""
    out: dict[str, list[tuple[str, Path]]] = {}
    for p in sorted(results.glob("*.json")):
        stem, _, part = p.name[: -len(".json")].rpartition(".")
        if not (stem and part.isalpha()):  # "<stem>.<part>.json" has a named part; "certified_cpu_ym0.2" none
            stem, part = p.name[: -len(".json")], ""
        out.setdefault(stem, []).append((part, p))
    return out


def _num(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return "—"
        if v == 0 or 1e-3 <= abs(v) < 1e5:
            return f"{v:.4g}"
        return f"{v:.3e}"
    return str(v)


def _cell(v, width: int = 160) -> str:
    """A value written compactly on one line (a table cell); long values are cut with "…"."""
    if isinstance(v, dict):
        s = "; ".join(f"{k}: {_cell(x, width)}" for k, x in v.items())
    elif isinstance(v, (list, tuple)):
        items = [_cell(x, width) for x in v[:MAX_LIST]]
        s = "[" + ", ".join(items) + (f", … ({len(v)} values)" if len(v) > MAX_LIST else "") + "]"
    else:
        s = _num(v)
    s = s.replace("|", "\\|").replace("\n", " ")
    return s if len(s) <= width else s[: width - 1] + "…"


def _is_scalar(v) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def _is_flat(v) -> bool:
    """Scalars, or a short list of scalars: what fits a table cell."""
    return _is_scalar(v) or (isinstance(v, list) and len(v) <= MAX_LIST and all(_is_scalar(x) for x in v))


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(h.replace("|", "\\|") for h in header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(r) + " |" for r in rows] + [""])


def _records_table(key_name: str, records: dict | list) -> list[str] | None:
    """A table of records (a list of dicts, or a dict of dicts) whose fields are flat; None when they are not."""
    items = list(records.items()) if isinstance(records, dict) else [(str(i), r) for i, r in enumerate(records)]
    if not items or not all(isinstance(r, dict) and r for _, r in items):
        return None
    cols: list[str] = []
    for _, r in items:
        cols += [k for k in r if k not in cols]
    if len(cols) > 14 or not all(_is_flat(v) for _, r in items for v in r.values()):
        return None
    first = [] if isinstance(records, list) else [key_name]
    return _table(first + cols, [([] if isinstance(records, list) else [_cell(k)])
                                 + [_cell(r.get(c)) for c in cols] for k, r in items])


def _section(title: str, value, level: int) -> list[str]:
    """Markdown of one entry of a summary: a heading (level ≤ 6) and its content."""
    head = [f"{'#' * min(level, 6)} {title}", ""]
    if _is_flat(value):
        return head + [_cell(value, 2000), ""]
    if isinstance(value, list):
        tab = _records_table("", value)
        if tab is not None:
            return head + tab
        if all(_is_scalar(x) for x in value):
            return head + [_cell(value, 2000), ""]
        if (all(isinstance(x, list) and all(_is_scalar(y) for y in x) for x in value)
                and len({len(x) for x in value}) == 1 and 0 < len(value[0]) <= 14 and len(value) <= 60):
            return head + _table(["row"] + [str(j) for j in range(len(value[0]))],  # a matrix
                                 [[str(i)] + [_cell(y) for y in x] for i, x in enumerate(value)])
        if level >= 5 or len(value) > 40:
            return head + [f"- {_cell(x, 400)}" for x in value] + [""]
        out = head
        for i, x in enumerate(value):
            out += _section(f"{title} [{_item_label(value, i)}]", x, level + 1)
        return out
    # a dict
    tab = _records_table("entry", value) if len(value) > 1 else None
    return head + (tab if tab is not None else _dict_lines(title, value, level))


def _item_label(items: list, i: int) -> str:
    """A label for record ``i`` of a list of records: the scalar fields that tell the records apart (at most 3,
    e.g. "net = relu, P = 60"), or its index."""
    if not all(isinstance(r, dict) for r in items):
        return str(i)
    keys = [k for k in items[0] if all(k in r and isinstance(r[k], (str, int, float)) and not isinstance(r[k], bool)
                                       for r in items)]
    varying = [k for k in keys if len({json.dumps(r[k]) for r in items}) > 1
               and not any(w in k for w in ("second", "time", "wall")) and not k.endswith("_s")][:3]
    return ", ".join(f"{k} = {_num(items[i][k])}" for k in varying) if varying else str(i)


def _dict_lines(title: str, value: dict, level: int) -> list[str]:
    """A record's flat entries as one key/value table, its records of flat entries (e.g. R̂, ESS and drift per
    observable) as one table, then a section per other nested entry."""
    flat = {k: v for k, v in value.items() if _is_flat(v)}
    out = _table(["entry", "value"], [[_cell(k), _cell(v, 400)] for k, v in flat.items()]) if flat else []
    small = {k: v for k, v in value.items() if k not in flat and isinstance(v, dict) and v
             and all(_is_flat(x) for x in v.values())}
    cols = list(dict.fromkeys(c for v in small.values() for c in v))
    if len(small) >= 2 and len(cols) <= 14:
        out += _table(["entry"] + cols, [[_cell(k)] + [_cell(v.get(c)) for c in cols] for k, v in small.items()])
        flat = dict(flat, **small)
    for k, v in value.items():
        if k in flat:
            continue
        if level >= 6:
            out += [f"**{k}**: {_cell(v, 600)}", ""]
        else:
            out += _section(f"{title} › {k}" if level >= 4 and title else str(k), v, level + 1)
    return out


def _provenance(d: dict) -> str:
    prov = d.get("provenance") or {k: d[k] for k in ("command", "machine", "size", "seed") if k in d}
    if not prov:
        return "Provenance: not recorded in this file."
    v = prov.get("versions") or {k: d[k] for k in ("python", "jax", "numpyro", "bnnzoo") if k in d}
    text = f"Command: `{prov.get('command', '?')}`"
    if "size" in prov:
        text += f" (size `{prov['size']}`, seed {prov.get('seed', '?')})"
    if "started" in prov:
        text += f", started {prov['started']}"
    text += "."
    if "machine" in prov:
        text += f"  Machine: {prov['machine']}."
    if v:
        text += "  " + ", ".join(f"{k} {x}" for k, x in v.items()) + "."
    for h in prov.get("history", []):
        text += f"  Then `{h['command']}` ({h['mode']}), started {h['started']}."
    return text


def page(stem: str, parts: list[tuple[str, dict]]) -> str:
    """The markdown page of result ``stem`` from its JSON summaries ``parts`` [(part name or "", summary), ...]."""
    name = experiment_of(stem)
    what = ""
    if name is not None:
        src = (ROOT / "reproduce" / f"{name}.py").read_text()
        doc = (ast.get_docstring(ast.parse(src)) or "").strip().split("\n\n")[0]
        what = " ".join(doc.split())
    certified = all(d.get("populations_certified") for _, d in parts)
    lines = [f"# {stem}", ""]
    if what:
        lines += [f"Experiment `{name}`: {what}", ""]
    lines += [f"Result file: `reproduce/results/{stem}.json`" + (
        " with its parts " + ", ".join(f"`{stem}.{p}.json`" for p, _ in parts if p) if any(p for p, _ in parts)
        else "") + ".  This page shows the JSON as it is (rendered by `python -m reproduce render`).", ""]
    skip = {"provenance", "populations_certified", "command", "machine", "python", "jax", "numpyro", "bnnzoo"}
    for part, d in parts:
        level = 2
        if part:
            lines += [f"## part `{part}`", ""]
            level = 3
        lines += [_provenance(d), ""]
        lines += _dict_lines("", {k: v for k, v in d.items() if k not in skip}, level - 1)
    text = "\n".join(lines).rstrip() + "\n"
    if not certified:
        earlier = any(str(d.get("health_gate", "")).startswith("before") for _, d in parts)
        text = C.mark_uncertified(text, earlier_gate=earlier)
    return text


def result_pages(results: Path = RESULTS) -> dict[str, str]:
    """Every result page: ``{stem: markdown}``."""
    return {stem: page(stem, [(part, json.loads(p.read_text())) for part, p in files])
            for stem, files in result_files(results).items()}


# ------------------------------------------------------------------------------------------ the reproduction page
def _json_at(d, path: str | list):
    """The entry of ``d`` at ``path``: keys joined by dots, or a list of keys (for keys holding a dot)."""
    for key in (path.split(".") if isinstance(path, str) else path):
        if isinstance(d, list):
            d = d[int(key)]
        else:
            d = d[key]
    return d


CERTIFICATES = ("certified by", "metastable:", "not certified")
"""How a population row's ``certificate`` starts: certified (by which criterion, on which run), metastable (the
families' disagreement) or not certified (why)."""


def _certified_equilibrated(d: dict) -> bool:
    """A certified result file with at least one row whose health is "equilibrated" by the present criterion (its
    health record names the criterion that judged it; records of the earlier criterion name none)."""
    if not d.get("populations_certified"):
        return False
    return any(isinstance(r, dict) and r.get("result", {}).get("health", {}).get("status") == "equilibrated"
               and r.get("result", {}).get("health", {}).get("criterion")
               for r in (d.get("rows") or {}).values())


def stated_verdicts(text: str) -> list[str]:
    """The verdict words ``text`` states as a row's verdict, by the patterns of :data:`STATED_VERDICT`.

    Parameters
    ----------
    text : str
        A row's ``value``, ``note`` or ``contradiction``.

    Returns
    -------
    list of str
        Each verdict word stated (lower case), in the order of the text; a word that several patterns catch at
        one place counts once.
    """
    text = " ".join(str(text).split())
    found = {m.start(1): m.group(1).lower() for pat in STATED_VERDICT for m in pat.finditer(text)}
    return [found[i] for i in sorted(found)]


def _states_other_verdict(word: str, verdict: str) -> bool:
    """Whether stating ``word`` contradicts the row's ``verdict`` ("reproduced" alone fits both reproduced verdicts)."""
    return not (word == verdict or (word == "reproduced" and verdict.startswith("reproduced")))


def claims_errors(claims: dict, results: Path = RESULTS) -> list[str]:
    """Every way ``claims`` (parsed ``claims.toml``) disagrees with the vocabulary or the result files; [] if none."""
    errs = []
    files = result_files(results)
    sections = {s["id"] for s in claims.get("section", [])}
    seen = set()
    need = ("id", "section", "paper", "claim", "paper_setting", "setting", "value", "theory", "verdict", "note")
    for c in claims.get("claim", []):
        cid = c.get("id", "?")
        errs += [f"{cid}: field {k!r} missing" for k in need if k not in c]
        if cid in seen:
            errs.append(f"{cid}: id used twice")
        seen.add(cid)
        if c.get("section") not in sections:
            errs.append(f"{cid}: section {c.get('section')!r} is not a [[section]] id")
        if c.get("paper") not in PAPERS:
            errs.append(f"{cid}: paper must be one of {', '.join(PAPERS)}, got {c.get('paper')!r}")
        v = c.get("verdict")
        if v not in VERDICTS:
            errs.append(f"{cid}: verdict must be one of {', '.join(VERDICTS)}, got {v!r}")
        if v in ("not run", "out of scope") and not c.get("note", "").strip():
            errs.append(f"{cid}: a '{v}' row must say why in its note")
        runs = c.get("runs", [])
        missing = [r for r in runs if r not in files]
        if missing:
            errs.append(f"{cid}: no result file for run(s) {', '.join(missing)}")
        if v not in ("not run", "out of scope") and not runs and not c.get("links"):
            errs.append(f"{cid}: verdict {v!r} names no run or link behind it")
        if c.get("populations") and str(v).startswith("reproduced") \
                and not str(c.get("certificate", "")).startswith("certified by"):
            errs.append(f"{cid}: a population claim is 'reproduced' only on a certified run; on uncertified "
                        f"populations say 'agrees, not certified' (got {v!r})")
        if (v == "contradicted") != bool(str(c.get("contradiction", "")).strip()):
            errs.append(f"{cid}: a row is 'contradicted' exactly when its field 'contradiction' states where the "
                        f"run disagrees with the paper beyond its error (verdict {v!r})")
        for field in ("value", "note", "contradiction"):
            other = sorted({w for w in stated_verdicts(c.get(field, "")) if _states_other_verdict(w, str(v))})
            if other:
                errs.append(f"{cid}: its {field} states the verdict {', '.join(repr(w) for w in other)}, its verdict "
                            f"is {v!r}: say it as evidence, or as an earlier run's result in running text")
        if SLOPE.search(str(c.get("value", ""))) and not re.search(r"\bwithout\b|\btwo points\b",
                                                                    str(c.get("influence", ""))):
            errs.append(f"{cid}: its value quotes a slope or exponent: state the fit with and without its most "
                        f"influential point in the field 'influence' (python -m reproduce.influence), or that it "
                        f"rests on two points")
        if c.get("populations"):
            cert = str(c.get("certificate", ""))
            if not cert.startswith(CERTIFICATES):
                errs.append(f"{cid}: a population row's certificate must start with one of "
                            f"{', '.join(repr(k) for k in CERTIFICATES)}, got {cert[:40]!r}")
            elif cert.startswith("certified by") and not any(
                    _certified_equilibrated(json.loads(p.read_text())) for r in runs if r in files
                    for _, p in files[r]):
                errs.append(f"{cid}: certificate says {cert[:40]!r} but none of its runs is a certified run whose "
                            "health is 'equilibrated'")
        for chk in c.get("check", []):
            run = chk.get("run")
            if run not in files:
                errs.append(f"{cid}: check names run {run!r} without a result file")
                continue
            part = chk.get("part", "")
            path = dict(files[run]).get(part)
            try:
                got = _json_at(json.loads(path.read_text()), chk["path"])
            except (KeyError, IndexError, ValueError, TypeError, AttributeError):
                errs.append(f"{cid}: check path {chk.get('path')!r} not found in {run}")
                continue
            want, tol = chk["value"], chk.get("tol", 0)
            if not isinstance(got, (int, float)) or got is None or abs(got - want) > tol:
                errs.append(f"{cid}: quotes {want} ± {tol} for {run}:{chk['path']}, the result file has {got}")
    return errs


_DECIMAL = re.compile(r"(?<![\w.])[−-]?\d+\.\d+")


def _numbers(x, out: list) -> list:
    if isinstance(x, dict):
        for v in x.values():
            _numbers(v, out)
    elif isinstance(x, list):
        for v in x:
            _numbers(v, out)
    elif isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
        out.append(abs(float(x)))
    return out


def untraced_numbers(claim: dict, results: Path = RESULTS) -> tuple[int, list[str]]:
    """The decimal numbers of a row's sampled value that no number of its result files gives when rounded to the
    digits quoted (nor as a percentage): (numbers quoted, the untraced ones).  Theory values, notebook numbers and
    hand-derived ratios show up here too: the audit points at what to read, it does not judge."""
    files = result_files(results)
    pool = sorted({v for r in claim.get("runs", []) for _, p in files.get(r, [])
                   for v in _numbers(json.loads(p.read_text()), [])})
    quoted = [t.replace("−", "-") for t in _DECIMAL.findall(claim.get("value", ""))]
    missing = []
    for t in quoted:
        v, tol = abs(float(t)), 0.5 * 10.0 ** -len(t.split(".")[1]) + 1e-12
        if not any(abs(x - v) <= tol or abs(100 * x - v) <= tol for x in pool):
            missing.append(t)
    return len(quoted), missing


def _counts_table(claims: list[dict]) -> list[str]:
    papers = [p for p in PAPERS if any(c["paper"] == p for c in claims)]
    rows = []
    for p in papers:
        mine = [c for c in claims if c["paper"] == p]
        rows.append([p] + [str(sum(c["verdict"] == v for c in mine)) for v in VERDICTS] + [str(len(mine))])
    rows.append(["all"] + [str(sum(c["verdict"] == v for c in claims)) for v in VERDICTS] + [str(len(claims))])
    return _table(["paper"] + list(VERDICTS) + ["rows"], rows)


def _text(s: str) -> str:
    return " ".join(str(s).split()).replace("|", "\\|")


def reproduction_page(claims: dict) -> str:
    """The reproduction page (markdown) from the parsed ``claims.toml``."""
    rows = claims["claim"]
    lines = ["# Reproduction", "",
             "<!-- Generated by `python -m reproduce render` from reproduce/claims.toml and reproduce/results/*.json;"
             " edit those, not this page. -->", "", claims["intro"].strip(), "",
             "Verdicts per paper:", ""] + _counts_table(rows) + [
             "```{toctree}", ":hidden:", ":glob:", "", "repro_results/*", "```", ""]
    header = ["id", "claim", "paper's setting", "our setting", "sampled", "theory", "verdict", "runs"]
    for s in claims["section"]:
        mine = [c for c in rows if c["section"] == s["id"]]
        if not mine:
            continue
        lines += [f"## {s['title']}", ""]
        if s.get("intro"):
            lines += [s["intro"].strip(), ""]
        body = []
        for c in mine:
            runs = [f"[{r}](repro_results/{r}.md)" for r in c.get("runs", [])] + list(c.get("links", []))
            body.append([c["id"], _text(c["claim"]), _text(c["paper_setting"]), _text(c["setting"]),
                         _text(c["value"]), _text(c["theory"]),
                         f"**{c['verdict']}**" + (f" — *populations {_text(c['certificate'])}*"
                                                   if c.get("certificate") else "")
                         + (f" — *contradicted: {_text(c['contradiction'])}*" if c.get("contradiction") else "")
                         + (f" — *{_text(c['influence'])}*" if c.get("influence") else "")
                         + (f": {_text(c['note'])}" if c.get("note") else ""),
                         ", ".join(runs) or "—"])
        lines += _table(header, body)
    return "\n".join(lines).rstrip() + "\n"


def load_claims(path: Path = CLAIMS) -> dict:
    """The parsed claims file; ValueError naming the file when it is not valid TOML."""
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: not valid TOML ({e})") from None


def write_result_pages(dest: Path = PAGES, results: Path = RESULTS) -> int:
    """Write every result page into ``dest`` (dropping pages whose result file is gone); the number written."""
    pages = result_pages(results)
    dest.mkdir(parents=True, exist_ok=True)
    for stem, text in pages.items():
        f = dest / f"{stem}.md"
        if not f.exists() or f.read_text() != text:
            f.write_text(text)
    for old in dest.glob("*.md"):
        if old.stem not in pages:
            old.unlink()
    return len(pages)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m reproduce render", description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 when docs/reproduction.md differs from what the claims and results give")
    p.add_argument("--audit", action="store_true",
                   help="write nothing; list, per row, the quoted numbers its result files do not give")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    claims = load_claims()
    if args.audit:
        total = traced = 0
        for c in claims["claim"]:
            if c.get("runs"):
                n, missing = untraced_numbers(c)
                total, traced = total + n, traced + n - len(missing)
                if missing:
                    print(f"{c['id']}: {n - len(missing)} of {n} numbers traced; not in its result files: "
                          + ", ".join(missing))
        print(f"{traced} of {total} numbers quoted in rows with result files are in those files")
        return 0
    errs = claims_errors(claims)
    want = reproduction_page(claims)
    if args.check:
        have = PAGE.read_text() if PAGE.exists() else ""
        for e in errs:
            print(f"claims: {e}", file=sys.stderr)
        if have != want:
            diff = list(difflib.unified_diff(have.splitlines(), want.splitlines(), "docs/reproduction.md",
                                             "rendered", lineterm="", n=0))
            print("docs/reproduction.md differs from `python -m reproduce render` "
                  f"({len(diff)} diff lines; first ones below)", file=sys.stderr)
            print("\n".join(line[:200] for line in diff[:12]), file=sys.stderr)
        result_pages()  # every result file must render
        return 1 if errs or have != want else 0
    if errs:
        raise ValueError(f"reproduce/claims.toml: {errs[0]} (and {len(errs) - 1} more)" if len(errs) > 1
                         else f"reproduce/claims.toml: {errs[0]}")
    PAGE.write_text(want)
    n = write_result_pages()
    print(f"wrote docs/reproduction.md ({len(claims['claim'])} claims) and {n} result pages in docs/repro_results/")
    return 0

