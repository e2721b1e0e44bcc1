"""Immutable, content-addressed blobs: ``blobs/sha256-<hex>``.

Content is written to a temp file while it is hashed, fsynced, checked against the digest it
should have, and only then renamed into place under the store lock. A blob file therefore
always holds exactly the bytes its name promises, and identical content is stored once.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from localllm.model_registry.digests import Digest, Readable, sha256_of_file
from localllm.model_registry.errors import (
    BlobNotFoundError,
    DigestMismatchError,
    InsufficientSpaceError,
    NotLinkableError,
)
from localllm.model_registry.store.atomic import fsync_directory, temp_file_in, temp_file_owner
from localllm.model_registry.store.layout import StoreLayout
from localllm.model_registry.store.locking import StoreLock, process_alive
from localllm.model_registry.store.placing import AddMode, Placement, hard_link, reflink

__all__ = ["BlobFile", "BlobStore", "ensure_free_space"]

OnHashed = Callable[[Digest], None]
OnProgress = Callable[[int], None]  # bytes read so far
_CHUNK = 1 << 20
_DISK_RESERVE = 64 << 20  # keep this much free so the system (and our manifests) can still write


@dataclass(frozen=True, slots=True)
class BlobFile:
    digest: Digest
    size: int
    mtime: float


def ensure_free_space(directory: Path, needed: int, what: str = "this model") -> None:
    """Raise :class:`InsufficientSpaceError` unless ``needed`` bytes (plus a reserve) fit."""
    directory.mkdir(parents=True, exist_ok=True)
    available = shutil.disk_usage(directory).free
    if needed + _DISK_RESERVE > available:
        raise InsufficientSpaceError(needed, max(0, available - _DISK_RESERVE), what)


class BlobStore:
    def __init__(self, layout: StoreLayout, lock: StoreLock):
        self._layout = layout
        self._lock = lock

    def path(self, digest: Digest | str) -> Path:
        """The blob's file; raises :class:`BlobNotFoundError` if the store does not hold it."""
        path = self._layout.blob_path(digest)
        if not path.is_file():
            raise BlobNotFoundError(f"blob {Digest.parse(digest).short} is not in the store")
        return path

    def exists(self, digest: Digest | str) -> bool:
        return self._layout.blob_path(digest).is_file()

    def write_bytes(
        self, data: bytes, expected: Digest | None = None, on_hashed: OnHashed | None = None
    ) -> BlobFile:
        return self.write_stream(io.BytesIO(data), expected, len(data), on_hashed)

    def write_stream(
        self,
        source: Readable,
        expected: Digest | None = None,
        size_hint: int = 0,
        on_hashed: OnHashed | None = None,
    ) -> BlobFile:
        """Copy ``source`` into the store, hashing on the way; verify, then commit."""
        return self._write(source, expected, size_hint, on_hashed)[0]

    def _write(
        self, source: Readable, expected: Digest | None, size_hint: int, on_hashed: OnHashed | None
    ) -> tuple[BlobFile, bool]:
        """:meth:`write_stream`, and whether the store held the content already."""
        ensure_free_space(self._layout.blobs_dir, size_hint)
        hasher = hashlib.sha256()
        size = 0
        with temp_file_in(self._layout.blobs_dir) as (stream, temp_path):
            try:
                while chunk := source.read(_CHUNK):
                    hasher.update(chunk)
                    stream.write(chunk)
                    size += len(chunk)
                stream.flush()
                os.fsync(stream.fileno())
            except OSError as error:
                if error.errno == errno.ENOSPC:
                    raise InsufficientSpaceError(size_hint or size, 0, "this blob") from None
                raise
            actual = _accepted(Digest(hasher.hexdigest()), expected, on_hashed)
            present = self._commit(temp_path, actual)
        return BlobFile(actual, size, self._layout.blob_path(actual).stat().st_mtime), present

    def add_file(
        self,
        path: Path,
        mode: AddMode = "copy",
        expected: Digest | None = None,
        on_hashed: OnHashed | None = None,
        on_progress: OnProgress | None = None,
        opened: BinaryIO | None = None,
    ) -> tuple[BlobFile, Placement]:
        """Add a file the user has: ``copy``; ``link`` (hard link, else reflink, else
        :class:`NotLinkableError`); ``auto`` (link, else reflink, else copy). Linked or not, the
        content is hashed (read once) and checked against ``expected`` before it is committed.

        ``opened`` is the file already open (the one its caller checked): the copy or clone is
        made from it, and a hard link (made by name) is kept only if it is that very file."""
        if mode != "copy":
            shared, placement = self._share(path, opened)
            if shared is not None:
                return self._commit_shared(shared, placement, expected, on_hashed, on_progress)
            if mode == "link":
                raise NotLinkableError(
                    f"{path.name} cannot be linked into the store (another file system, a file "
                    "another user owns, or one that changed while it was added); add it as a "
                    "copy instead"
                )
        with contextlib.ExitStack() as stack:
            stream = opened if opened is not None else stack.enter_context(path.open("rb"))
            stream.seek(0)
            size = os.fstat(stream.fileno()).st_size
            reader = _ProgressReader(stream, on_progress)
            blob, present = self._write(reader, expected, size, on_hashed)
        return blob, Placement.PRESENT if present else Placement.COPIED

    def _share(self, path: Path, opened: BinaryIO | None) -> tuple[Path | None, Placement]:
        """A temp-named hard link or clone of the file in the blob directory, or None."""
        source = path.resolve(strict=True)  # a Hugging Face snapshot link: its blob
        linked = hard_link(source, self._layout.blobs_dir)
        if linked is not None and (opened is None or _same_file(linked, opened)):
            return linked, Placement.LINKED
        if linked is not None:
            linked.unlink()  # the name leads elsewhere now: not the file that was checked
        return reflink(opened or source, self._layout.blobs_dir), Placement.CLONED

    def _commit_shared(
        self,
        temp: Path,
        placement: Placement,
        expected: Digest | None,
        on_hashed: OnHashed | None,
        on_progress: OnProgress | None,
    ) -> tuple[BlobFile, Placement]:
        try:
            with temp.open("rb") as stream:
                actual = sha256_of_file(_ProgressReader(stream, on_progress))
            _accepted(actual, expected, on_hashed)
            if self._commit(temp, actual):
                placement = Placement.PRESENT
        finally:
            temp.unlink(missing_ok=True)
        stat = self._layout.blob_path(actual).stat()
        return BlobFile(actual, stat.st_size, stat.st_mtime), placement

    def commit_verified_file(self, path: Path, digest: Digest) -> None:
        """Move a file already verified to hash to ``digest`` (a finished download) into place."""
        self._commit(path, digest)

    def _commit(self, temp_path: Path, digest: Digest) -> bool:
        """Rename into place; True when the store already held the content."""
        destination = self._layout.blob_path(digest)
        with self._lock.held():
            if destination.is_file():
                # Refresh the prune grace period for the new user; not where the blob is a
                # hard link to another app's file, whose time is that app's (such a blob
                # belongs to a model, so prune keeps it without the grace period anyway).
                if destination.stat().st_nlink == 1:
                    os.utime(destination)
                temp_path.unlink(missing_ok=True)
                return True
            os.replace(temp_path, destination)
        fsync_directory(destination.parent)
        return False

    def matches_digest(self, digest: Digest) -> bool:
        """Re-hash a stored blob; False if it is corrupt, :class:`BlobNotFoundError` if gone."""
        with self.path(digest).open("rb") as stream:
            return sha256_of_file(stream) == digest

    def delete(self, digest: Digest) -> int:
        """Remove a blob; returns the bytes freed (0 if it was already gone)."""
        path = self._layout.blob_path(digest)
        try:
            size = path.stat().st_size
            path.unlink()
        except FileNotFoundError:
            return 0
        return size

    def committed(self) -> Iterator[BlobFile]:
        for path in self._entries():
            try:
                digest = Digest.parse(path.name)
            except ValueError:
                continue
            stat = path.stat()
            yield BlobFile(digest, stat.st_size, stat.st_mtime)

    def stale_temp_files(self, older_than: float) -> Iterator[Path]:
        """Temp files left by writers that were killed (never partial downloads)."""
        for path in self._entries():
            owner = temp_file_owner(path.name)
            if owner is None or process_alive(owner):
                continue
            if path.stat().st_mtime < older_than:
                yield path

    def _entries(self) -> Iterator[Path]:
        if self._layout.blobs_dir.is_dir():
            yield from (path for path in self._layout.blobs_dir.iterdir() if path.is_file())


def _same_file(path: Path, opened: BinaryIO) -> bool:
    here, there = os.stat(path), os.fstat(opened.fileno())
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


class _ProgressReader:
    """A read-only stream that reports how far it has been read."""

    def __init__(self, stream: BinaryIO, on_progress: OnProgress | None):
        self._stream, self._on_progress, self._done = stream, on_progress, 0

    def read(self, size: int = -1) -> bytes:
        chunk = self._stream.read(size)
        self._done += len(chunk)
        if self._on_progress is not None and chunk:
            self._on_progress(self._done)
        return chunk


def _accepted(actual: Digest, expected: Digest | None, on_hashed: OnHashed | None) -> Digest:
    """``actual``, once it is the digest the caller expected (and has been told of it)."""
    if expected is not None and actual != expected:
        raise DigestMismatchError(
            f"content hashed to {actual.short}, expected {expected.short}; nothing was stored"
        )
    if on_hashed is not None:
        on_hashed(actual)
    return actual
