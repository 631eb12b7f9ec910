"""Fixtures of the benchmark tests: ``bench``, the benchmarks' shared helpers (``benchmarks/_bench.py``), loaded from
its file because ``benchmarks/`` is not a package."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def bench():
    """The module ``benchmarks/_bench.py``."""
    spec = importlib.util.spec_from_file_location("_bench_under_test", ROOT / "benchmarks" / "_bench.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
