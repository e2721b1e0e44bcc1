"""Hashing a download while it is still arriving, and handing it to the disk early.

A :class:`PrefixHasher` follows the contiguous filled prefix of a ``.partial`` file in its own
thread, reading back what the downloaders wrote (from the page cache) while the network is
still busy; when the last byte lands only the tail is left to hash. hashlib releases the GIL,
so this runs on another core. Each hashed range is also handed to the kernel for writeback
(Linux), so the fsync before the blob is committed has little left to wait for.
"""

from __future__ import annotations

import ctypes
import hashlib
import io
import threading
from collections.abc import Callable
from pathlib import Path

from localllm.model_registry.digests import Digest

__all__ = ["PrefixHasher", "start_writeback"]

_HASH_STEP = 4 << 20  # wake the hasher for at least this much new data (or the end)
_READ_SIZE = 8 << 20
_WRITEBACK_STEP = 32 << 20
_SYNC_FILE_RANGE_WRITE = 2


def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    try:
        function = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):  # not Linux: the final fsync does all the work
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    function.restype = ctypes.c_int
    return function


_SYNC_FILE_RANGE = _sync_file_range()


def start_writeback(fd: int, offset: int, length: int) -> None:
    """Ask the kernel to start writing a finished range to disk now. Best effort."""
    if _SYNC_FILE_RANGE is not None and length > 0:
        _SYNC_FILE_RANGE(fd, offset, length, _SYNC_FILE_RANGE_WRITE)


class PrefixHasher:
    """sha256 of the first ``size`` bytes of a file being written through ``fd`` (at
    ``path``), computed as :meth:`advance` allows."""

    def __init__(self, fd: int, path: Path, size: int):
        self._fd, self._path, self._size = fd, path, size
        self._ready = threading.Condition()
        self._prefix = 0  # bytes from offset 0 that may be read
        self._wanted = 0  # the prefix the thread is waiting for
        self._stopped = False
        self._result: Digest | None = None
        self._thread = threading.Thread(target=self._run, name="localllm-hash", daemon=True)

    def start(self, prefix: int) -> None:
        self._prefix = prefix
        self._thread.start()

    def advance(self, prefix: int) -> None:
        """The first ``prefix`` bytes are final; wake the thread if that is enough to do."""
        with self._ready:
            self._prefix = max(self._prefix, prefix)  # writers may report out of order
            if self._prefix >= self._wanted:
                self._ready.notify()

    def cancel(self) -> None:
        """Stop soon (the result will be None); does not wait."""
        with self._ready:
            self._stopped = True
            self._ready.notify()

    def stop(self) -> None:
        self.cancel()
        if self._thread.is_alive():
            self._thread.join()

    def result(self) -> Digest | None:
        """Wait for the whole file to be hashed; None if stopped before that."""
        self._thread.join()
        return self._result

    def _run(self) -> None:
        # One reusable buffer, read front to back through a file (and offset) of our own.
        with open(self._path, "rb", buffering=0) as reader:
            self._hash(reader, memoryview(bytearray(_READ_SIZE)))

    def _hash(self, reader: io.FileIO, buffer: memoryview) -> None:
        hasher, hashed, flushed = hashlib.sha256(), 0, 0
        while hashed < self._size:
            with self._ready:
                self._wanted = min(self._size, hashed + _HASH_STEP)
                self._ready.wait_for(lambda: self._stopped or self._prefix >= self._wanted)
                if self._stopped:
                    return
                target = self._prefix
            while hashed < target and not self._stopped:
                count = reader.readinto(buffer[: min(len(buffer), target - hashed)])
                if not count:
                    return
                hasher.update(buffer[:count])
                hashed += count
            if hashed - flushed >= _WRITEBACK_STEP or hashed == self._size:
                start_writeback(self._fd, flushed, hashed - flushed)
                flushed = hashed
        if not self._stopped:
            self._result = Digest(hasher.hexdigest())
