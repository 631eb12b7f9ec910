"""The ``bnnzoo`` logger: the library configures no handler, the command line one stderr handler (``-v`` DEBUG,
default INFO, ``-q`` WARNING), and progress written to a file is log lines, never carriage-return bars."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bnnzoo
from bnnzoo import cli
from bnnzoo._log import Progress, interactive

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


def test_progress_off_a_terminal_logs_each_tenth():
    """Off a terminal (pytest captures stderr), Progress logs the start, every tenth reached, and nothing else."""
    assert not interactive()
    log = logging.getLogger("bnnzoo.test_progress")
    rec = _Records()
    log.addHandler(rec)
    log.setLevel(logging.INFO)
    try:
        p = Progress(20, desc="sample", logger=log)
        for _ in range(20):
            p.update(1)
        p.close()
        done = [int(m.split(": ")[1].split("/")[0]) for m in rec.messages]
        assert done == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20]
        assert "(100 %," in rec.messages[-1]
        rec.messages.clear()
        # chunks larger than a tenth: one line per chunk; resumed at 10; an early stop logs where it stopped
        p = Progress(40, desc="sample", logger=log, initial=10)
        p.update(15)
        p.update(3)                 # 28/40: still in the 7th tenth reached at 25 -> no line
        p.close()
        assert [int(m.split(": ")[1].split("/")[0]) for m in rec.messages] == [10, 25, 28]
        assert all("\r" not in m for m in rec.messages)
    finally:
        log.removeHandler(rec)
        log.setLevel(logging.NOTSET)


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
                 "sample: nuts, 2 chains x (20 warm-up + 20 sampling steps)", "sample: done (", id="numpyro",
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
