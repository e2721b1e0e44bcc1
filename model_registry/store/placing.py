"""Putting a file the user already has into the blob directory without copying its bytes.

A hard link shares the file's inode (no new space, same device only); a reflink (Linux
``FICLONE``) shares the extents copy-on-write, so a later edit of the original does not reach
the store. Either way the new name is a temp name next to the blobs: the caller hashes it,
verifies it and only then renames it into place, as every other blob write does.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import os
import secrets
import sys
from pathlib import Path
from typing import BinaryIO, Literal

from localllm.model_registry.store.atomic import TEMP_PREFIX

__all__ = ["AddMode", "Placement", "hard_link", "reflink", "same_device"]

_FICLONE = 0x40049409  # from linux/fs.h: _IOW(0x94, 9, int)
# Why a link or a clone could not be made where copying is still the right answer.
_CANNOT_SHARE = frozenset(
    {errno.EXDEV, errno.EPERM, errno.EACCES, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP,
     errno.EINVAL, errno.ENOTTY, errno.ENOSYS, errno.EBADF}
)  # fmt: skip


#: How a file the user has may go into the store: see :meth:`BlobStore.add_file`.
AddMode = Literal["auto", "link", "copy"]


class Placement(enum.Enum):
    """How a blob came to be in the store."""

    LINKED = "linked"  # a hard link: the same inode as the original
    CLONED = "cloned"  # a reflink: shared extents, copy-on-write
    COPIED = "copied"  # its bytes were copied
    PRESENT = "present"  # the store already held this content


def same_device(path: Path, directory: Path) -> bool:
    """Whether ``path`` and ``directory`` are on one file system (a link is possible)."""
    try:
        return os.stat(path).st_dev == os.stat(directory).st_dev
    except OSError:
        return False


def _temp_name(directory: Path) -> Path:
    return directory / f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(8)}"


def hard_link(source: Path, directory: Path) -> Path | None:
    """A new temp-named hard link to ``source`` in ``directory``; None where none can be made
    (another device, a file system without links, a file another user owns)."""
    temp = _temp_name(directory)
    try:
        os.link(source, temp)  # ``source`` is resolved already: no link is followed
    except OSError as error:
        if error.errno in _CANNOT_SHARE:
            return None
        raise
    return temp


def reflink(source: Path | BinaryIO, directory: Path) -> Path | None:
    """A new temp-named copy-on-write clone of ``source`` (a path, or the file already open);
    None where cloning is unsupported. Readable by its owner only, as a copied blob is."""
    if not sys.platform.startswith("linux"):
        return None
    import fcntl

    temp = _temp_name(directory)
    with contextlib.ExitStack() as stack:
        src = source if not isinstance(source, Path) else stack.enter_context(open(source, "rb"))
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            fcntl.ioctl(fd, _FICLONE, src.fileno())
        except OSError as error:
            os.close(fd)
            temp.unlink(missing_ok=True)
            if error.errno in _CANNOT_SHARE:
                return None
            raise
        os.fchmod(fd, 0o600)  # whatever the umask
        os.close(fd)
    return temp
