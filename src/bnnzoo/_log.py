"""Logging and progress reporting of bnnzoo.

Every message the library writes goes through the ``bnnzoo`` logger (one child logger per module,
``logging.getLogger(__name__)``).  The library never configures handlers: the package logger carries a
:class:`logging.NullHandler`, so an application that configures nothing sees nothing, and one that configures the
root logger (``logging.basicConfig``) sees bnnzoo's messages there.  The command line installs one stderr handler
(:func:`cli_handler`).

Progress over a long loop is a tqdm bar when stderr is a terminal (or a Jupyter kernel), and otherwise an INFO log
line at every tenth of the work (at least once per update), so that log files carry no carriage-return bars.
"""

from __future__ import annotations

import logging
import os
import sys
import time

from tqdm.auto import tqdm

LOGGER_NAME = "bnnzoo"

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


class Progress:
    """Progress over ``total`` units of work: a tqdm bar when :func:`interactive`, else log lines.

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
        self.t0 = time.perf_counter()
        self.bar = None
        if interactive():
            self.bar = tqdm(total=self.total, initial=self.n, unit=unit, desc=desc)
        else:
            self._next_tenth = self._tenth(self.n) + 1
            self._logged = self.n
            self.log.info("%s: %d/%d %ss", desc, self.n, self.total, unit)

    def stage(self, text: str) -> None:
        """Say what is happening before the counted work starts (e.g. "compiling"): the bar's postfix, or a log line
        with the seconds since the start."""
        if self.bar is not None:
            self.bar.set_postfix_str(text)
        else:
            self.log.info("%s: %s (%.1f s)", self.desc, text, time.perf_counter() - self.t0)

    def resume_at(self, n: int) -> None:
        """Set the units done without counting them as new work (a resumed run found ``n`` done)."""
        self.n = self._logged = int(n)
        if self.bar is not None:
            self.bar.n = self.n
            self.bar.refresh()
        else:
            self._next_tenth = self._tenth(self.n) + 1

    def _tenth(self, n: int) -> int:
        return 10 * n // self.total if self.total > 0 else 0

    def update(self, n: int) -> None:
        """Record ``n`` more units done; logs a line when a further tenth of ``total`` is reached."""
        self.n += int(n)
        if self.bar is not None:
            self.bar.update(n)
        elif self._tenth(self.n) >= self._next_tenth:
            self._next_tenth = self._tenth(self.n) + 1
            self._line()

    def _line(self) -> None:
        self._logged = self.n
        pct = 100 * self.n // self.total if self.total > 0 else 100
        self.log.info("%s: %d/%d %ss (%d %%, %.1f s)", self.desc, self.n, self.total, self.unit, pct,
                      time.perf_counter() - self.t0)

    def close(self) -> None:
        """End the bar (a terminal), or log the units done if the last log line did not show them."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        elif self._logged != self.n:
            self._line()


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
