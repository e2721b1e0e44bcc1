"""Reading a document's bytes without leaving the folder the user chose.

A chosen folder may hold links to files elsewhere (``notes.md -> ~/.ssh/id_rsa``), pipes and
devices (a FIFO or ``/dev/zero`` never ends), or files swapped for such things between the scan
and the read. So a file is opened once, without following a link (``O_NOFOLLOW``) and without
waiting on a pipe (``O_NONBLOCK``); the open file must be a regular file, still inside the
chosen folder, of at most the size its type allows; and everything after (the hash, the
parse) works on the bytes read from it.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from localllm.app.documents.errors import DocumentError

__all__ = ["Document", "is_regular_file", "read_document"]

_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Document:
    data: bytes
    size: int
    mtime: float


def is_regular_file(path: Path) -> bool:
    """A regular file itself, not a link to one (nor a pipe, a device, a folder)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def read_document(path: Path, root: Path, limit: int) -> Document:
    """The bytes of ``path``, a regular file inside ``root`` of at most ``limit`` bytes;
    ``DocumentError`` (naming the file only) otherwise."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError as error:
        if error.errno == errno.ELOOP:
            message = f"{path.name}: a link; only files inside the folder are read"
            raise DocumentError(message) from None
        raise
    try:
        opened = os.fstat(fd)
        _check_opened(path, root, opened, limit)
        data = _read(fd, limit)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise _too_big(path, limit)
    return Document(data, len(data), opened.st_mtime)


def _check_opened(path: Path, root: Path, opened: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(opened.st_mode):
        raise DocumentError(f"{path.name}: not a regular file (a pipe, a device or a folder)")
    if opened.st_size > limit:
        raise _too_big(path, limit)
    real = Path(os.path.realpath(path))
    try:
        same = os.stat(real)
    except OSError:
        same = None
    identity = (opened.st_dev, opened.st_ino)
    if not real.is_relative_to(root) or same is None or (same.st_dev, same.st_ino) != identity:
        raise DocumentError(f"{path.name}: no longer inside the chosen folder")


def _read(fd: int, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


def _too_big(path: Path, limit: int) -> DocumentError:
    return DocumentError(f"{path.name}: larger than {limit >> 20} MB, the most read of this type")
