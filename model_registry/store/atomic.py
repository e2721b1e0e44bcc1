"""Crash-safe file writes: temp file in the same directory, fsync, rename, fsync the directory.

A reader therefore sees either the old file or the complete new one, never a half-written one,
even if the writing process is killed or the machine loses power.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "TEMP_PREFIX",
    "atomic_write_bytes",
    "fsync_directory",
    "temp_file_in",
    "temp_file_owner",
]

TEMP_PREFIX = ".tmp-"


def temp_file_owner(name: str) -> int | None:
    """The pid of the process that created a temp file, so cleanup spares live writers."""
    pid, sep, _ = name.removeprefix(TEMP_PREFIX).partition("-")
    return int(pid) if name.startswith(TEMP_PREFIX) and sep and pid.isdigit() else None


def fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(fd)


@contextlib.contextmanager
def temp_file_in(directory: Path) -> Iterator[tuple[BinaryIO, Path]]:
    """Yield an open temp file next to its destination; it is removed unless renamed away."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", dir=directory)
    path = Path(name)
    try:
        with os.fdopen(fd, "wb") as stream:
            yield stream, path
    finally:
        path.unlink(missing_ok=True)


def atomic_write_bytes(destination: Path, data: bytes) -> None:
    with temp_file_in(destination.parent) as (stream, temp_path):
        stream.write(data)
        stream.flush()
        os.fsync(stream.fileno())
        os.replace(temp_path, destination)
    fsync_directory(destination.parent)
