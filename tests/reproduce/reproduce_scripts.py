"""Running and importing the experiments of ``reproduce/`` from the tests (shared by the tests in ``tests/reproduce/``).

An experiment runs in a subprocess (``python -m reproduce NAME ...`` from the repository root) with this checkout's
``src`` first on the path and JAX on the CPU, so a test sees what a user sees: the exit status, the one-line error on
stderr, the files.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPRO = ROOT / "reproduce"


def _name(script: str | Path) -> str:
    return Path(script).stem


def run_script(script: str | Path, *args: str, timeout: int = 900,
               drop_env: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Run ``python -m reproduce <script> args`` (``script``: an experiment name, with or without ``.py``);
    ``drop_env`` names environment variables to remove (e.g. a data-folder default that must not leak into the
    test)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT),
                                                       os.environ.get("PYTHONPATH", "")]),
               JAX_PLATFORMS="cpu")
    for k in drop_env:
        env.pop(k, None)
    return subprocess.run([sys.executable, "-m", "reproduce", _name(script), *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=ROOT)


def load_script(script: str | Path, name: str | None = None):
    """Import experiment ``reproduce.<script>`` (``script``: a module name, with or without ``.py``)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module(f"reproduce.{_name(script)}")
