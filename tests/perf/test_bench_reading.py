"""A rerun of a benchmark script that rewrites a result page keeps the page's hand-written reading
(``benchmarks/_bench.py``: ``with_reading``), checked on copies of pages that carry one."""

import argparse
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("page", ["units_sharing.md", "units_binary_balance.md", "units_vs_snaper_n500.md"])
def test_a_rerun_keeps_the_hand_written_reading_once(tmp_path, capsys, page, bench):
    b = bench
    path = tmp_path / page
    shutil.copy(ROOT / "benchmarks" / "results" / page, path)
    original = path.read_text()
    reading = original[original.index(b.READING_MARK):]
    assert "Reading" in reading
    new = ["# a rerun", "", "| new | table |"]
    for _ in range(2):                                          # rerun twice: the reading is kept once, unchanged
        path.write_text("\n".join(b.with_reading(path, new)) + "\n")
    text = path.read_text()
    assert text == "\n".join(new) + "\n\n" + reading.rstrip("\n") + "\n"
    assert text.count(b.READING_MARK) == 1
    assert "kept its hand-written reading" in capsys.readouterr().err


def test_a_page_without_a_reading_is_written_as_generated(tmp_path, bench):
    b = bench
    new = ["# a page", "", "numbers"]
    assert b.with_reading(tmp_path / "absent.md", new) == new
    (tmp_path / "plain.md").write_text("# old\n\nReading: not marked\n")
    assert b.with_reading(tmp_path / "plain.md", new) == new


def test_result_pages_keep_a_dotted_stem_whole(tmp_path, bench):
    # a stem such as ``..._T0.035`` names STEM.json and STEM.md; Path.with_suffix would cut it at its last dot
    stem = tmp_path / "units_T0.035"
    bench.write_result(stem, argparse.Namespace(size=3), [{"x": 1.0}], 2.0, ["# page"])
    bench.write_page(tmp_path / "units_T0.045", {"x": 1}, ["# page"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["units_T0.035.json", "units_T0.035.md",
                                                         "units_T0.045.json", "units_T0.045.md"]


def test_no_benchmark_script_cuts_its_output_stem_at_a_dot():
    offenders = [p.name for p in (ROOT / "benchmarks").glob("*.py") if ".with_suffix(" in p.read_text()]
    assert offenders == []
