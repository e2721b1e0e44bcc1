"""A runner's stderr, kept so every error can say what the runner said before it failed.

The log file may quote prompts and file names, so it is readable by its user only (0600, in
a 0700 folder when the folder is new), whatever the umask. One file per model, appended to at
every load: once it would pass ``max_bytes`` it is renamed ``<name>.1`` (replacing the older
one) and a new one started, so what llama.cpp prints over a long-running daemon's life (a
warning per request it dislikes) cannot fill the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

__all__ = ["RunnerLog", "quotable_lines"]

_KEPT_LINES = 200
_MAX_BYTES = 10 << 20  # of one file; one older file is kept


class RunnerLog:
    """The runner's stderr: the last lines in memory, everything in the log file if given."""

    def __init__(self, path: Path | None, max_bytes: int = _MAX_BYTES):
        self.lines: deque[str] = deque(maxlen=_KEPT_LINES)
        self._path = path
        self._max_bytes = max(max_bytes, 1)
        self._file: BinaryIO | None = None
        self._size = 0
        if path is not None:
            self._file = _open_private(path)
            self._size = self._file.seek(0, os.SEEK_END)

    def note(self, text: str) -> None:
        self._write(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} {text}\n".encode())

    async def pump(self, stream: asyncio.StreamReader) -> None:
        partial = b""
        try:
            while chunk := await stream.read(65536):
                self._write(chunk)
                *complete, partial = (partial + chunk).split(b"\n")
                self.lines.extend(line.decode(errors="replace").rstrip() for line in complete)
        finally:
            if partial:
                self.lines.append(partial.decode(errors="replace").rstrip())
            if self._file:
                self._file.close()

    def _write(self, data: bytes) -> None:
        """Append ``data``, starting a new file where the next whole line would not fit (a
        line longer than a whole file is cut)."""
        while data and self._file is not None:
            room = max(self._max_bytes - self._size, 0)
            cut = len(data) if len(data) <= room else data.rfind(b"\n", 0, room) + 1
            if not cut and self._size and self._roll_over():
                continue
            if self._file is None:  # it could not be opened again
                return
            cut = cut or room or len(data)  # a line longer than a file; or no new file
            self._file.write(data[:cut])
            self._file.flush()
            self._size += cut
            data = data[cut:]

    def _roll_over(self) -> bool:
        """The file becomes ``<name>.1`` (0600 as it was) and a new one is started; False
        where it cannot be renamed (open elsewhere, on Windows): it grows a little longer.
        Where no file can be opened any more, the lines are still kept in memory."""
        if self._file is None or self._path is None:
            return False
        self._file.close()
        self._file = None
        try:
            os.replace(self._path, self._path.with_name(self._path.name + ".1"))
            renamed = True
        except OSError:
            renamed = False
        with contextlib.suppress(OSError):
            self._file = _open_private(self._path)
            self._size = self._file.seek(0, os.SEEK_END)
        return renamed


def _open_private(path: Path) -> BinaryIO:
    """``path`` opened for appending, 0600 (also a file an older version left readable)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags, 0o600)
    os.chmod(path, 0o600)
    return os.fdopen(fd, "ab")


# A native crash report, as ggml prints one before it aborts: its backtrace (glibc's
# "lib.so(symbol+0x1b)[0x7f...]", or gdb's "#3  0x00007f... in f () from lib.so" with the
# "30\tsource line" it could not show) and any other line holding a code address; gdb's own
# session (attached to print it) from its first thread line to its "detached".
_FRAME = re.compile(r"^#\d+\s|^\d+\t|\(\S*\)\s*\[0x[0-9a-fA-F]+\]\s*$|0x[0-9a-fA-F]{6,}")
_GDB_START = re.compile(r"^\[(?:New LWP|New Thread|Thread debugging) ")
_GDB_END = re.compile(r"^\[Inferior \d+ \(process \d+\) detached\]")
# ggml_abort's own line, "<source file>:<line>: <message>" (GGML_ASSERT's "... failed"): the
# rest of the log is the report
_ABORT = re.compile(r"^.+?\.(?:c|cc|cpp|cu|h|hpp|m|mm):\d+: ")


def quotable_lines(lines: Iterable[str]) -> list[str]:
    """``lines`` less a native crash report (backtraces, addresses in the runner's libraries,
    gdb's messages), which no answer may quote; the abort's own line stays. The log file
    keeps everything."""
    kept: list[str] = []
    in_gdb = False
    for line in lines:
        in_gdb = in_gdb or bool(_GDB_START.match(line))
        if in_gdb or _FRAME.search(line):
            in_gdb = in_gdb and not _GDB_END.match(line)
            continue
        kept.append(line)
        if _ABORT.match(line):
            break
    return kept
