"""Print each notebook's execution time from the documentation build's jupyter-cache, and check the notebook count.

Usage: notebook_times.py CACHE_DIR TIMES_FILE.  Appends one ``notebook:NAME SECONDS`` line per notebook in the
build's cache (executed by this build; on a clean clone, every notebook) to TIMES_FILE, the per-part table ``.ci/run``
prints at the end, and fails when a notebook of ``notebooks/`` is not in the cache or fewer notebooks are stored than
the floor in ``tests/collected.txt``.
"""

import sys
from pathlib import Path

from jupyter_cache import get_cache

ROOT = Path(__file__).resolve().parents[1]


def floor(key: str) -> int:
    for line in (ROOT / "tests" / "collected.txt").read_text().splitlines():
        name, _, value = line.partition("=")
        if name.strip() == key:
            return int(value)
    raise SystemExit(f"tests/collected.txt has no {key} line")


def main(cache_dir: str, times_file: str) -> int:
    records = {Path(r.uri).stem: r.data.get("execution_seconds") for r in get_cache(cache_dir).list_cache_records()}
    with open(times_file, "a") as fh:
        for name in sorted(records):
            fh.write(f"notebook:{name} {records[name]:.0f}\n")
    stored = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    missing = [n for n in stored if n not in records]
    if missing or len(stored) < floor("notebooks"):
        print(f"notebooks not executed by the docs build: {missing}; {len(stored)} stored, "
              f"floor {floor('notebooks')} (tests/collected.txt)")
        return 1
    print(f"notebooks executed: {len(records)} (floor {floor('notebooks')})")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
