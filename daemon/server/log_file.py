"""The daemon's log file, ``<log dir>/daemon.log``: rotated by the daemon itself, by size, and
readable by its user only.

However the daemon was started (in a terminal, by the launcher, by a launchd agent whose
output is that very file), it writes the file through this handler, so the file is rotated
while the daemon runs and nothing it is asked can fill the disk: at most the file and
``BACKUPS`` older ones, each about ``max_bytes``. Every one of them, a file made by a rollover
too, is 0600 whatever the umask: the log quotes model names, paths and clients' errors.

A daemon started in the background has no terminal to show anything on: it takes over its
own stdout and stderr (``take_output``) and points them at the current file, again at every
rollover, so what native code or Python prints outside logging is rotated with the rest.
"""

from __future__ import annotations

import contextlib
import io
import logging.handlers
import os
import sys
from pathlib import Path

__all__ = ["BACKUPS", "LOG_NAME", "PrivateLogFile"]

LOG_NAME = "daemon.log"
# With the default size (``Settings.log_max_bytes``, 10 MiB) a file holds tens of thousands of
# request lines (a few hundred bytes each, tens of kilobytes at most: ``server.metrics``), and
# three older ones keep a burst of large lines from rotating the history away: 40 MiB on disk.
BACKUPS = 3
_PRIVATE = 0o600
_OUTPUT_FDS = (1, 2)  # stdout, stderr


class PrivateLogFile(logging.handlers.RotatingFileHandler):
    """Appends to ``path``, rolling it over to ``path.1`` .. ``path.<BACKUPS>`` once it would
    pass ``max_bytes``; every file 0600. Raises ``OSError`` when the file cannot be opened."""

    def __init__(self, path: Path, max_bytes: int, *, take_output: bool = False):
        self._take_output = take_output  # before the file is first opened
        super().__init__(path, maxBytes=max_bytes, backupCount=BACKUPS, encoding="utf-8")
        self._tighten_backups()  # an older version's rollover made them with the umask's mode

    def _open(self) -> io.TextIOWrapper:
        stream = open(  # noqa: SIM115 (the handler keeps it open, and closes it)
            self.baseFilename,
            self.mode,
            encoding=self.encoding,
            errors=self.errors,
            opener=_open_private,
        )
        if not isinstance(stream, io.TextIOWrapper):  # the handler's mode is a text one
            raise TypeError(f"mode {self.mode!r} opens no text file")
        if self._take_output:
            _redirect_output(stream.fileno())
        return stream

    def shouldRollover(self, record: logging.LogRecord) -> bool:
        """Never for an empty file: a rollover would only push a backup out of the window."""
        if self.stream is not None and self.stream.seek(0, os.SEEK_END) == 0:
            return False
        return bool(super().shouldRollover(record))

    def doRollover(self) -> None:
        if self._take_output and os.name == "nt":  # Windows renames no file that is open
            with open(os.devnull, "wb") as nowhere:
                _redirect_output(nowhere.fileno())
        super().doRollover()  # opens the new file, and points the output there
        self._tighten_backups()

    def _tighten_backups(self) -> None:
        for number in range(1, BACKUPS + 1):
            with contextlib.suppress(OSError):
                os.chmod(f"{self.baseFilename}.{number}", _PRIVATE)


def _redirect_output(fd: int) -> None:
    """stdout and stderr write to ``fd`` from now on (Python's and native code's alike)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.flush()  # what Python holds for where they wrote so far
    for target in _OUTPUT_FDS:
        with contextlib.suppress(OSError):
            os.dup2(fd, target)


def _open_private(path: str, flags: int) -> int:
    """``os.open`` for the log: 0600 when new, and tightened if an older version (or a
    rollover under the umask) left the file readable to others."""
    fd = os.open(path, flags, _PRIVATE)
    if hasattr(os, "fchmod"):
        os.fchmod(fd, _PRIVATE)
    else:  # Windows: the mode bits are (almost) meaningless there anyway
        os.chmod(path, _PRIVATE)
    return fd
