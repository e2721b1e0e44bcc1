"""A runner's stderr, kept so every error can say what the runner said before it failed.

The log file may quote prompts and file names, so it is readable by its user only (0600, in
a 0700 folder when the folder is new), whatever the umask.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from pathlib import Path
from typing import BinaryIO

__all__ = ["RunnerLog"]

_KEPT_LINES = 200


class RunnerLog:
    """The runner's stderr: the last lines in memory, everything in the log file if given."""

    def __init__(self, path: Path | None):
        self.lines: deque[str] = deque(maxlen=_KEPT_LINES)
        self._file: BinaryIO | None = None
        if path is not None:
            self._file = _open_private(path)

    def note(self, text: str) -> None:
        if self._file:
            self._file.write(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} {text}\n".encode())
            self._file.flush()

    async def pump(self, stream: asyncio.StreamReader) -> None:
        partial = b""
        try:
            while chunk := await stream.read(65536):
                if self._file:
                    self._file.write(chunk)
                    self._file.flush()
                *complete, partial = (partial + chunk).split(b"\n")
                self.lines.extend(line.decode(errors="replace").rstrip() for line in complete)
        finally:
            if partial:
                self.lines.append(partial.decode(errors="replace").rstrip())
            if self._file:
                self._file.close()


def _open_private(path: Path) -> BinaryIO:
    """``path`` opened for appending, 0600 (also a file an older version left readable)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags, 0o600)
    os.chmod(path, 0o600)
    return os.fdopen(fd, "ab")
