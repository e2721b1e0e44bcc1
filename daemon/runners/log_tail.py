"""A runner's stderr, kept so every error can say what the runner said before it failed."""

from __future__ import annotations

import asyncio
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
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("ab")

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
