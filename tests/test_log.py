"""The ``bnnzoo`` logger: the library configures no handler, the command line one stderr handler (``-v`` DEBUG,
default INFO, ``-q`` WARNING), and progress written to a file is log lines, never carriage-return bars."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bnnzoo
from bnnzoo import _log, cli
from bnnzoo._log import Progress, interactive
from bnnzoo.inference import chunked

SRC = str(Path(bnnzoo.__file__).resolve().parents[1])


def _env(tmp_path):
    return dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=1",
                PYTHONPATH=os.pathsep.join([SRC] + [p for p in [os.environ.get("PYTHONPATH")] if p]))


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_progress_off_a_terminal_logs_every_few_seconds(monkeypatch):
    """Off a terminal (pytest captures stderr), Progress logs the start, then a line only when LOG_INTERVAL seconds
    passed (with the phase and an ETA), and the end ("done"); a stage ("compiling") is not shown once work is
    counted."""
    assert not interactive()
    now = [0.0]
    monkeypatch.setattr(_log, "_clock", lambda: now[0])
    log = logging.getLogger("bnnzoo.test_progress")
    rec = _Records()
    log.addHandler(rec)
    log.setLevel(logging.INFO)
    try:
        p = Progress(100, desc="sample", logger=log)
        p.stage("compiling")
        now[0] = 10.0
        p.phase("warm-up")
        for _ in range(100):          # one unit every 0.5 s: a line every LOG_INTERVAL seconds, not every unit
            now[0] += 0.5
            p.update(1)
        p.close()
        counted = [m for m in rec.messages if "%" in m]
        assert rec.messages[:2] == ["sample: 0/100 steps", "sample: compiling (0.0 s)"]
        done = [int(m.split(": ")[1].split("/")[0]) for m in counted]
        assert np.all(np.diff(done[:-1]) == 2 * _log.LOG_INTERVAL), rec.messages    # LOG_INTERVAL s apart
        assert counted[1] == f"sample: {done[1]}/100 steps ({done[1]} %, warm-up, {10 + done[1] / 2:.1f} s, " \
                             f"ETA {(100 - done[1]) / 2:.1f} s)"
        assert not any("compiling" in m for m in counted)
        assert counted[-1] == "sample: 100/100 steps (100 %, done, 1 min 00 s)"
        rec.messages.clear()
        # resumed at 10; an early stop logs where it stopped, without "done"
        p = Progress(40, desc="sample", logger=log, initial=10)
        p.update(15)
        p.close()
        assert rec.messages == ["sample: 10/40 steps", "sample: 25/40 steps (62 %, 0.0 s)"]
        assert all("\r" not in m for m in rec.messages)
    finally:
        log.removeHandler(rec)
        log.setLevel(logging.NOTSET)


def test_bar_moves_and_ends_done_not_compiling(monkeypatch, capsys):
    """On a terminal (the bar forced on), a chunked run moves the bar during each block (several updates per block)
    and the bar's last state is 100 % with "done", never the "compiling" stage."""
    monkeypatch.setattr(_log, "interactive", lambda stream=None: True)
    monkeypatch.setattr(chunked, "PIECE_SECONDS", 0.0)      # a piece per step: the bar moves at every step
    updates = []
    real_update = Progress.update
    monkeypatch.setattr(Progress, "update", lambda self, n: (updates.append(n), real_update(self, n))[1])
    task = bnnzoo.toy_task(P=6, N0=8)
    bnnzoo.sample("deep_linear", task, width=4, num_chains=1, num_warmup=10, num_samples=10, sampler="nuts",
                  chunk_size=10, progress=True, seed=0)
    err = capsys.readouterr().err
    last = err.replace("\n", "\r").split("\r")
    last = [s for s in last if s.strip()][-1]
    assert "100%" in last and "done" in last and "compiling" not in last, last
    assert len(updates) > 2 and sum(updates) == 20, updates        # 2 blocks of 10 steps, more than 2 updates


def test_plain_script_shows_progress_lines(tmp_path):
    """A plain script that configures no logging sees the progress lines on stderr while the run goes (bnnzoo
    attaches its stderr handler for the run), and none with progress=False; afterwards the bnnzoo logger is as it
    was (a NullHandler, no level)."""
    code = ("import logging, bnnzoo, bnnzoo._log, bnnzoo.inference.chunked as ch\n"
            "bnnzoo._log.LOG_INTERVAL = 0.02\n"         # lines (and pieces) often, for a run of a few seconds
            "ch.PIECE_SECONDS = 0.01\n"
            "task = bnnzoo.toy_task(P=6, N0=8)\n"
            "kw = dict(width=4, num_chains=1, num_warmup=60, num_samples=60, sampler='nuts', chunk_size=60)\n"
            "bnnzoo.sample('deep_linear', task, progress=False, **kw)\n"
            "print('quiet run done', flush=True)\n"
            "bnnzoo.sample('deep_linear', task, **kw)\n"
            "print('numpyro loop next', flush=True)\n"
            "kw.pop('chunk_size')\n"                     # NumPyro's own loop: a line at its start and its end
            "bnnzoo.sample('deep_linear', task, **kw)\n"
            "pkg = logging.getLogger('bnnzoo')\n"
            "assert [type(h).__name__ for h in pkg.handlers] == ['NullHandler'] and pkg.level == 0\n")
    r = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    chunked, numpyro_loop = r.stderr.split("sample: 0/120 steps\n")[1:3]
    assert "NumPyro's own loop" in numpyro_loop and "(100 %, done, " in numpyro_loop, r.stderr
    lines = [line for line in ("sample: 0/120 steps\n" + chunked).splitlines() if line.startswith("sample: ")]
    during = [line for line in lines if "%" in line and "/120 steps" in line and "done" not in line]
    assert len(during) >= 2, r.stderr
    assert lines[0] == "sample: 0/120 steps" and "(100 %, done, " in lines[-1], r.stderr
    assert "\r" not in r.stderr


def test_library_unconfigured_emits_nothing(tmp_path):
    """With no logging configured, the library's messages reach neither the root logger nor stderr (Python's
    last-resort handler prints WARNING and above when no handler exists)."""
    code = ("import logging, bnnzoo\n"
            "root = logging.getLogger()\n"
            "assert not root.handlers, root.handlers\n"
            "pkg = logging.getLogger('bnnzoo')\n"
            "assert [type(h).__name__ for h in pkg.handlers] == ['NullHandler'], pkg.handlers\n"
            "logging.getLogger('bnnzoo.inference.sampling').warning('library warning')\n"
            "logging.getLogger('bnnzoo.cli').error('library error')\n"
            "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
    assert "library" not in r.stderr, r.stderr


def test_cli_levels(monkeypatch, capsys):
    """Default INFO, ``-v`` DEBUG, ``-q`` WARNING, all on stderr; the command's own output stays on stdout; the
    handler is gone after the command."""
    def fake_list(args):
        log = logging.getLogger("bnnzoo.inference.sampling")
        log.debug("debug line")
        log.info("info line")
        log.warning("warning line")
        print("result")
        return 0

    monkeypatch.setattr(cli, "_cmd_list", fake_list)
    expect = {(): ["info line", "warning: warning line"],
              ("-v",): ["debug: debug line", "info line", "warning: warning line"],
              ("-q",): ["warning: warning line"]}
    for flags, lines in expect.items():
        assert cli.main([*flags, "list"]) == 0
        out, err = capsys.readouterr()
        assert out == "result\n"
        assert err.splitlines() == lines, (flags, err)
    assert [type(h) for h in logging.getLogger("bnnzoo").handlers] == [logging.NullHandler]
    with pytest.raises(SystemExit):
        cli.main(["-v", "-q", "list"])
    capsys.readouterr()


def test_list_verbose_keeps_its_meaning(capsys):
    """``list -v`` is the long listing; ``bnnzoo -v list`` the short one with debug logging."""
    assert cli.main(["-v", "list"]) == 0
    short = capsys.readouterr().out
    assert cli.main(["list", "-v"]) == 0
    long = capsys.readouterr().out
    assert len(long.splitlines()) > len(short.splitlines()) and "--param" in long and "--param" not in short


SMALL = ["sample", "deep_linear", "--param", "width=4", "--param", "P=6", "--warmup", "20", "--samples", "20"]


@pytest.mark.parametrize("extra, first, last", [
    pytest.param(["--chunk", "10"], "sample: 0/40 steps", "sample: 40/40 steps (100 %,", id="chunked-driver"),
    pytest.param(["--sampler", "nuts", "--chains", "2", "--record", "z"],
                 "sample: nuts, 2 chain(s) in NumPyro's own loop", "sample: 40/40 steps (100 %, done,", id="numpyro",
                 marks=pytest.mark.slow)])
def test_cli_sample_to_a_file_has_no_carriage_returns(tmp_path, extra, first, last):
    """``bnnzoo sample ... 2>log``: progress lines and "wrote FILE" in the log, no '\\r' bar, nothing on stdout
    (``--chunk`` runs through the chunked driver; NUTS with every draw recorded (``--record z``) and no chunks runs
    through NumPyro's MCMC: the default recording, SNAPER and 4 chains would take the chunked driver too)."""
    out, log = tmp_path / "x.nc", tmp_path / "log"
    with open(log, "w") as err:
        r = subprocess.run([sys.executable, "-m", "bnnzoo.cli"] + SMALL + extra + ["--out", str(out)],
                           env=_env(tmp_path), stdout=subprocess.PIPE, stderr=err, text=True, timeout=600)
    text = log.read_text()
    assert r.returncode == 0, text
    assert out.exists()
    assert "\r" not in text
    assert r.stdout == ""
    lines = text.splitlines()
    assert any(line.startswith(first) for line in lines), text
    assert any(line.startswith(last) for line in lines), text
    assert any(line.startswith(f"wrote {out} (") for line in lines), text


def test_cli_quiet_silences_info(tmp_path, capsys):
    """``bnnzoo -q sample``: neither progress nor "wrote FILE" on stderr, nothing on stdout."""
    out = tmp_path / "x.nc"
    assert cli.main(["-q"] + SMALL + ["--chains", "1", "--out", str(out)]) == 0
    assert out.exists()
    o, e = capsys.readouterr()
    assert o == ""
    assert "wrote" not in e and "sample:" not in e, e
