"""Logging and progress reporting of bnnzoo.

Every message the library writes goes through the ``bnnzoo`` logger (one child logger per module,
``logging.getLogger(__name__)``).  The package logger carries a :class:`logging.NullHandler`, so an application that
configures nothing sees none of bnnzoo's messages, and one that configures the root logger (``logging.basicConfig``)
sees them there.  The command line installs one stderr handler (:func:`cli_handler`).

Progress over a long loop is a tqdm bar when stderr is a terminal (or a Jupyter kernel), and otherwise an INFO log
line every :data:`LOG_INTERVAL` seconds (and at the start and the end), so that log files carry no carriage-return
bars.  A plain script that configured no logging would see none of these lines: while a :class:`Progress` runs in
such a process, bnnzoo attaches one stderr handler to its own logger (and sets that logger to INFO when its level
is unset), and removes both when the progress ends.  ``progress=False`` silences it, and so does a level set on the
``bnnzoo`` logger (``logging.getLogger("bnnzoo").setLevel(logging.WARNING)``); any handler configured by the
application (on the root logger or on ``bnnzoo``) takes over from it.
"""

from __future__ import annotations

import logging
import os
import sys
import time

from tqdm.auto import tqdm

LOGGER_NAME = "bnnzoo"

LOG_INTERVAL = 3.0
"""Seconds between two progress lines off a terminal: a line every few seconds shows that a run advances without
filling a log file (a tenth of the work per line gave one line in a minute, or ten in a second)."""

_clock = time.perf_counter        # the progress clock (a test replaces it)

logging.getLogger(LOGGER_NAME).addHandler(logging.NullHandler())

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a :func:`warnings.warn` issued by the calling function point at the first frame
    outside the bnnzoo package: the user's own line, however many bnnzoo layers (workflows, inference) lie between.

    Returns
    -------
    int
        1 when the caller is itself outside the package.
    """
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def interactive(stream=None) -> bool:
    """Whether progress bars can be drawn on ``stream`` (default: the current ``sys.stderr``).

    Parameters
    ----------
    stream : file-like, optional
        The stream the bar would be written to.

    Returns
    -------
    bool
        True when ``stream`` is a terminal or the process runs a Jupyter kernel (where tqdm draws widgets).
    """
    stream = sys.stderr if stream is None else stream
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):     # no isatty, or a closed stream
        pass
    return "ipykernel" in sys.modules


class _StderrHandler(logging.StreamHandler):
    """A stream handler that writes to the current ``sys.stderr`` (as Python's last-resort handler does), so that a
    redirected stderr (pytest's capture, ``contextlib.redirect_stderr``) receives the lines."""

    def __init__(self):
        logging.Handler.__init__(self)
        self.setFormatter(_Formatter("%(message)s"))

    @property
    def stream(self):
        return sys.stderr


_SCRIPT = {"users": 0, "handler": None, "level_set": False}


def _unconfigured(logger: logging.Logger) -> bool:
    """Whether no handler but a :class:`logging.NullHandler` would receive ``logger``'s records."""
    node = logger
    while node is not None:
        if any(not isinstance(h, logging.NullHandler) for h in node.handlers):
            return False
        if not node.propagate:
            return True
        node = node.parent
    return True


def _script_handler_acquire(logger: logging.Logger) -> bool:
    """Attach the stderr handler of a plain script to the ``bnnzoo`` logger when logging is unconfigured (see the
    module docstring); True when this progress holds it (release it with :func:`_script_handler_release`)."""
    pkg = logging.getLogger(LOGGER_NAME)
    if _SCRIPT["users"] == 0:
        if not _unconfigured(logger):
            return False
        _SCRIPT["handler"] = _StderrHandler()
        pkg.addHandler(_SCRIPT["handler"])
        _SCRIPT["level_set"] = pkg.level == logging.NOTSET
        if _SCRIPT["level_set"]:
            pkg.setLevel(logging.INFO)
    _SCRIPT["users"] += 1
    return True


def _script_handler_release() -> None:
    _SCRIPT["users"] -= 1
    if _SCRIPT["users"] == 0:
        pkg = logging.getLogger(LOGGER_NAME)
        pkg.removeHandler(_SCRIPT["handler"])
        if _SCRIPT["level_set"]:
            pkg.setLevel(logging.NOTSET)
        _SCRIPT.update(handler=None, level_set=False)


def _seconds(t: float) -> str:
    """``t`` seconds as ``12.3 s``, ``4 min 05 s`` or ``2 h 03 min``."""
    if t < 60:
        return f"{t:.1f} s"
    if t < 3600:
        return f"{int(t // 60)} min {int(t % 60):02d} s"
    return f"{int(t // 3600)} h {int(t % 3600 // 60):02d} min"


class Progress:
    """Progress over ``total`` units of work: a tqdm bar when :func:`interactive`, else log lines.

    Off a terminal it logs (INFO) a line at the start, then at most one every :data:`LOG_INTERVAL` seconds while
    work is counted, and one at the end: ``sample: 120/1000 steps (12 %, warm-up, 4.2 s, ETA 31.0 s)``.  On a
    terminal the bar's postfix says the stage or phase and ``done`` once the work is.

    Parameters
    ----------
    total : int
        Units of work in all (> 0 for meaningful fractions; 0 logs only the start and the end).
    desc : str
        What is being done, the prefix of the bar or of each log line.
    logger : logging.Logger
        Where the log lines go (level INFO).
    initial : int
        Units already done (a resumed run).
    unit : str
        Name of one unit, for the bar and the log lines.
    """

    def __init__(self, total: int, *, desc: str, logger: logging.Logger, initial: int = 0, unit: str = "step"):
        self.total, self.n, self.desc, self.unit, self.log = int(total), int(initial), desc, unit, logger
        self.t0 = _clock()
        self.what = ""                     # the stage or phase shown with the counts
        self._staged = False               # ``what`` is a stage (cleared by the first counted work)
        self._work = None                  # (time, units) when counted work started: the rate behind the ETA
        self.bar = None
        self._script = False
        if interactive():
            self.bar = tqdm(total=self.total, initial=self.n, unit=unit, desc=desc)
        else:
            self._script = _script_handler_acquire(logger)
            self._logged = self.n
            self._last = self.t0
            self.log.info("%s: %d/%d %ss", desc, self.n, self.total, unit)

    def stage(self, text: str) -> None:
        """Say what is happening before the counted work starts (e.g. "compiling"): the bar's postfix, or a log line
        with the seconds since the start."""
        self.what, self._staged = text, True
        if self.bar is not None:
            self.bar.set_postfix_str(text)
        else:
            self.log.info("%s: %s (%.1f s)", self.desc, text, _clock() - self.t0)

    def phase(self, text: str) -> None:
        """Name the counted work now under way (e.g. "warm-up", "sampling"): the bar's postfix and the phase of the
        next log lines; the ETA counts from the first phase."""
        if self._work is None:
            self._work = (_clock(), self.n)
        if text != self.what:
            self.what, self._staged = text, False
            if self.bar is not None:
                self.bar.set_postfix_str(text)

    def resume_at(self, n: int) -> None:
        """Set the units done without counting them as new work (a resumed run found ``n`` done)."""
        self.n = self._logged = int(n)
        if self.bar is not None:
            self.bar.n = self.n
            self.bar.refresh()

    def update(self, n: int) -> None:
        """Record ``n`` more units done; logs a line when :data:`LOG_INTERVAL` seconds passed since the last."""
        self.n += int(n)
        if self._staged:                   # the stage ("compiling") is over once work is counted
            self.what, self._staged = "", False
            if self.bar is not None:
                self.bar.set_postfix_str("", refresh=False)
        if self.bar is not None:
            self.bar.update(n)
        elif self.n < self.total and _clock() - self._last >= LOG_INTERVAL:    # (the end: close's line)
            self._line()

    def _line(self, done: bool = False) -> None:
        now = _clock()
        self._logged, self._last = self.n, now
        pct = 100 * self.n // self.total if self.total > 0 else 100
        parts = [f"{pct} %"] + ([self.what] if self.what else []) + [_seconds(now - self.t0)]
        if not done and self._work is not None and self.n > self._work[1] and self.n < self.total:
            rate = (now - self._work[0]) / (self.n - self._work[1])
            parts.append(f"ETA {_seconds(rate * (self.total - self.n))}")
        self.log.info("%s: %d/%d %ss (%s)", self.desc, self.n, self.total, self.unit, ", ".join(parts))

    def close(self) -> None:
        """End the bar (a terminal; its postfix then says ``done`` when all the work was), or log the last line."""
        done = self.total > 0 and self.n >= self.total
        if done:
            self.what = "done"
        if self.bar is not None:
            if done:
                self.bar.set_postfix_str("done", refresh=False)
            self.bar.close()
            self.bar = None
        elif self._logged != self.n or done:
            self._line(done=done)
        if self._script:
            self._script = False
            _script_handler_release()


class _Formatter(logging.Formatter):
    """INFO lines as the message alone; other levels prefixed with the level name (``warning: ...``)."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return text if record.levelno == logging.INFO else f"{record.levelname.lower()}: {text}"


def cli_handler(level: int, stream=None) -> logging.Handler:
    """Install the command line's one stderr handler on the ``bnnzoo`` logger and set its level.

    Parameters
    ----------
    level : int
        ``logging.INFO`` (default), ``logging.DEBUG`` (``-v``) or ``logging.WARNING`` (``-q``).
    stream : file-like, optional
        Where the lines go (default: the current ``sys.stderr``).

    Returns
    -------
    logging.Handler
        The handler; pass it to :func:`remove_cli_handler` when the command ends.
    """
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(_Formatter("%(message)s"))
    logger = logging.getLogger(LOGGER_NAME)
    logger.addHandler(handler)
    logger.setLevel(level)
    return handler


def remove_cli_handler(handler: logging.Handler) -> None:
    """Undo :func:`cli_handler`: remove ``handler`` and reset the ``bnnzoo`` logger's level."""
    logger = logging.getLogger(LOGGER_NAME)
    logger.removeHandler(handler)
    logger.setLevel(logging.NOTSET)
