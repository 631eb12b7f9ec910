"""reproduce/ym_sweep.py runs at ``--size ci`` and refuses to overwrite (its mean-field search is tested in
tests/theory/test_schemes.py)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "reproduce" / "ym_sweep.py"


def test_script_runs_at_ci_size_and_refuses_to_overwrite(tmp_path):
    cmd = [sys.executable, str(SCRIPT), "--size", "ci", "--part", "meanfield", "--out", str(tmp_path)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads((tmp_path / "ym_sweep.meanfield.json").read_text())
    assert out["meta"]["complete"] and all(len(p["solutions"]) == 1 for p in out["sweeps"])
    assert "Mean field" in (tmp_path / "ym_sweep.md").read_text()
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and again.stderr.startswith("ym_sweep: error:") and "--overwrite" in again.stderr
    assert "Traceback" not in again.stderr
