"""Files the hub keeps in git rather than LFS: a Whisper model's ``config.json``,
``tokenizer.json``, vocabulary.

The hub publishes no sha256 for them, only their git blob id (the sha1 of ``blob <size>\\0``
and the bytes). Each is downloaded whole (the hub keeps files over 10 MB in LFS), hashed both
ways while it is written to a temp file in the store, and committed only if the git id
matches; from then on its sha256 is its address, as every blob's is.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import DigestMismatchError, DownloadError, PullError
from localllm.model_registry.pull.fetch import BlobSource, DownloadOptions, RetryableError
from localllm.model_registry.store import BlobFile, Store
from localllm.model_registry.store.locking import Lease

__all__ = ["GitFile", "fetch_git_file"]

_GIT_OID = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True, slots=True)
class GitFile:
    """A file of the plan checked by its git blob id (no LFS record, so no sha256)."""

    path: str
    size: int
    git_oid: str
    url: str

    def __post_init__(self) -> None:
        if not _GIT_OID.fullmatch(self.git_oid) or self.size < 0:
            raise PullError(f"{self.path} has an invalid git blob id or size on the hub")


def fetch_git_file(
    store: Store, lease: Lease, source: BlobSource, file: GitFile, options: DownloadOptions
) -> BlobFile:
    """Download ``file`` into the store (leased as soon as it is hashed), retrying dropped
    connections as a download does; :class:`DigestMismatchError` if it is not the file the
    hub listed."""
    failures = 0
    while True:
        try:
            return _fetch_once(store, lease, source, file)
        except RetryableError as error:
            failures += 1
            if failures >= options.max_attempts:
                raise DownloadError(
                    f"downloading {file.path} failed {failures} times in a row ({error}); "
                    "check the connection and run the pull again"
                ) from error
            threading.Event().wait(options.backoff(failures))


def _fetch_once(store: Store, lease: Lease, source: BlobSource, file: GitFile) -> BlobFile:
    with source.open(0, None) as response:
        reader = _GitHashingReader(response.iter_bytes(), file)

        def accept(digest: Digest) -> None:  # called before the blob is committed
            reader.check()
            lease.add(digest)

        return store.blobs.write_stream(reader, size_hint=file.size, on_hashed=accept)


class _GitHashingReader:
    """The response's bytes as a stream, hashed as git does, never more than announced."""

    def __init__(self, chunks: Iterator[bytes], file: GitFile):
        self._chunks, self._file = chunks, file
        self._buffer = bytearray()
        self._sha1 = hashlib.sha1(b"blob %d\0" % file.size)
        self._read = 0

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._buffer += chunk
            if self._read + len(self._buffer) > self._file.size:
                raise DigestMismatchError(
                    f"{self._file.path} is larger on the hub than its listing says; "
                    "run the pull again"
                )
        count = len(self._buffer) if size < 0 else min(size, len(self._buffer))
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        self._sha1.update(data)
        self._read += len(data)
        return data

    def check(self) -> None:
        if self._read != self._file.size or self._sha1.hexdigest() != self._file.git_oid:
            raise DigestMismatchError(
                f"downloaded {self._file.path} did not match its git blob id "
                f"{self._file.git_oid[:12]}; nothing was stored, run the pull again"
            )
