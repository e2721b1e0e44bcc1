"""A stdio MCP server's stderr, kept in a log file of bounded size.

The server writes to a pipe, not to the file: a thread copies what comes through into
``mcp-NAME.log`` (0600, as the app's other logs), and when the file would pass ``limit`` bytes
it becomes ``mcp-NAME.log.1`` (replacing the one before) and a new file starts. A server that
writes without end costs at most twice ``limit`` on disk.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import BinaryIO, TextIO

__all__ = ["LOG_LIMIT", "BoundedLog"]

LOG_LIMIT = 1 << 20
_CHUNK = 64 << 10


class BoundedLog:
    """``stream`` is what the server's stderr is given: close it when the server is gone (the
    copy ends once the server has closed its end too)."""

    def __init__(self, path: Path, limit: int = LOG_LIMIT):
        self.path, self.limit = path, limit
        read_end, write_end = os.pipe()
        self.stream: TextIO = os.fdopen(write_end, "w", encoding="utf-8")
        self._source = os.fdopen(read_end, "rb")
        self._copier = threading.Thread(target=self._copy, name=f"log:{path.name}", daemon=True)
        self._copier.start()

    def _copy(self) -> None:
        with self._source as source:
            out = self._open()
            try:
                while chunk := source.read1(_CHUNK):
                    if out.tell() + len(chunk) > self.limit:
                        out.close()
                        os.replace(self.path, self.path.with_name(self.path.name + ".1"))
                        out = self._open()
                    out.write(chunk[: self.limit])
                    out.flush()
            finally:
                out.close()

    def _open(self) -> BinaryIO:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)  # a log kept from before this rule
        out = os.fdopen(fd, "ab")
        out.seek(0, os.SEEK_END)
        return out
