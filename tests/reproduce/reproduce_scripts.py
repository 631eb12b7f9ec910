"""Running and importing the scripts of ``reproduce/`` from the tests (shared by the tests in ``tests/reproduce/``).

A script runs in a subprocess with this checkout's ``src`` first on the path and JAX on the CPU, so a test sees what
a user running ``python reproduce/<script>.py`` sees: the exit status, the one-line error on stderr, the files.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPRO = ROOT / "reproduce"


def run_script(script: str | Path, *args: str, timeout: int = 900,
               drop_env: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Run ``reproduce/<script>`` (a file name or a path) with ``args``; ``drop_env`` names environment variables
    to remove (e.g. a data-folder default that must not leak into the test)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
               JAX_PLATFORMS="cpu")
    for k in drop_env:
        env.pop(k, None)
    return subprocess.run([sys.executable, str(REPRO / script), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def load_script(script: str | Path, name: str | None = None):
    """Import ``reproduce/<script>`` as a module (its folder goes on ``sys.path`` for ``_common``)."""
    path = REPRO / script
    if str(REPRO) not in sys.path:
        sys.path.insert(0, str(REPRO))
    spec = importlib.util.spec_from_file_location(name or f"reproduce_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
