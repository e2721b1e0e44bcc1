"""Downloading one blob: parallel range requests into a resumable, verified ``.partial`` file.

The blob is cut into parts; up to ``connections`` workers each take the lowest unfinished
part and fill it from where it stopped, so the file fills roughly front to back and the
:class:`~model_registry.pull.hashing.PrefixHasher` can follow the filled prefix while the
download goes on. Progress goes to the sidecar (see :mod:`localllm.model_registry.pull.partial`) at
most every ``save_interval`` and whenever a part completes. A server that ignores ``Range``
gets one sequential stream instead, which skips (never rewrites) the bytes already on disk,
so nothing hashed is ever changed underneath the hasher.
"""

from __future__ import annotations

import errno
import os
import threading
from collections import deque
from pathlib import Path

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import (
    DigestMismatchError,
    DownloadError,
    InsufficientSpaceError,
)
from localllm.model_registry.pull.fetch import (
    BlobSource,
    DownloadOptions,
    RangeNotSupported,
    RetryableError,
)
from localllm.model_registry.pull.hashing import PrefixHasher
from localllm.model_registry.pull.partial import PartialProgress, PartialState

__all__ = ["BlobDownload"]

_WRITE_SIZE = 1 << 20  # gather network chunks into writes of this size
_MAX_PARTS = 16384  # a 100 GB file still has 16 MiB parts
_HAS_PWRITE = hasattr(os, "pwrite")  # not on Windows


class _Pending:
    """Received bytes not yet written (in one reusable buffer), where they go, and how many
    bytes came off the network for them."""

    def __init__(self) -> None:
        self.buffer = memoryview(bytearray(_WRITE_SIZE))
        self.offset = self.length = self.fetched = 0

    def fits(self, count: int) -> bool:
        return self.length + count <= len(self.buffer)

    def add(self, offset: int, data: memoryview, fetched: int) -> None:
        if not self.length:
            self.offset = offset
        self.buffer[self.length : self.length + len(data)] = data
        self.length += len(data)
        self.fetched += fetched

    @property
    def data(self) -> memoryview:
        return self.buffer[: self.length]

    def clear(self) -> None:
        self.length = self.fetched = 0


class BlobDownload:
    """One run of one blob's download; :meth:`run` may be called once."""

    def __init__(
        self,
        source: BlobSource,
        digest: Digest,
        size: int,
        partial_path: Path,
        state_path: Path,
        options: DownloadOptions,
        names: tuple[str, ...] = (),
    ):
        self._source, self._digest, self._size = source, digest, size
        self._partial_path, self._state_path = partial_path, state_path
        self._options, self._names = options, names
        self._lock = threading.Lock()
        self._halt = threading.Event()  # everything stops: paused or failed
        self._mode_halt = threading.Event()  # the current mode's workers stop
        self._stopped = False
        self._error: BaseException | None = None
        self._no_ranges = False
        placeholder = PartialState(size, max(1, size))  # one part; run() loads the real state
        self._progress = PartialProgress(placeholder, state_path, options.save_interval)
        self._hasher: PrefixHasher | None = None
        self._fd = -1
        self.verifying = False  #: all bytes are in; hashing the tail

    @property
    def completed(self) -> int:
        """Bytes on disk."""
        return self._progress.completed

    @property
    def fetched(self) -> int:
        """Bytes received from the network in this run."""
        return self._progress.fetched

    def stop(self) -> None:
        """Stop soon, keeping the partial file and its sidecar (pause)."""
        self._stopped = True
        self._halt_all()
        if self._hasher is not None:
            self._hasher.cancel()

    def discard(self) -> None:
        self._partial_path.unlink(missing_ok=True)
        self._state_path.unlink(missing_ok=True)

    def run(self) -> bool:
        """True when the ``.partial`` file is complete and verified; False if stopped."""
        self._progress = progress = PartialProgress(
            self._load_state(), self._state_path, self._options.save_interval
        )
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0)  # binary on Windows
        self._fd = os.open(self._partial_path, flags, 0o644)
        self._hasher = PrefixHasher(self._fd, self._partial_path, self._size)
        try:
            if os.fstat(self._fd).st_size != self._size:
                os.ftruncate(self._fd, self._size)
            progress.save()
            self._hasher.start(progress.prefix)
            self._parallel()
            if self._no_ranges and not self._halt.is_set():
                self._sequential()
            return self._finish(self._hasher)
        finally:
            self._halt_all()
            self._hasher.stop()
            os.close(self._fd)

    # -- start and end ----------------------------------------------------------------------
    def _load_state(self) -> PartialState:
        state = None
        if self._partial_path.is_file():
            state = PartialState.load(self._state_path, self._size)
        if state is None:  # parts of the configured size, but never too many of them
            part_size = max(self._options.part_size, -(-self._size // _MAX_PARTS))
            state = PartialState(self._size, part_size)
        state.names = sorted({*state.names, *self._names})
        return state

    def _finish(self, hasher: PrefixHasher) -> bool:
        progress = self._progress
        if self._error is None and progress.completed == self._size:
            self.verifying = True
            actual = hasher.result()
            if actual is not None:  # None: stopped while hashing
                self._verify(actual)
                return True
        progress.save()
        if self._error is not None:
            if progress.completed == 0:
                self.discard()  # nothing worth resuming (refused, gone): leave no trace
            raise self._error
        return False

    def _verify(self, actual: Digest) -> None:
        if actual != self._digest:
            self.discard()
            raise DigestMismatchError(
                f"downloaded data did not match its sha256 digest {self._digest.short} "
                f"(got {actual.short}); the partial download was deleted, run the pull again"
            )
        os.fsync(self._fd)

    # -- parallel range requests ------------------------------------------------------------
    def _parallel(self) -> None:
        queue = deque(self._state.pending())  # lowest first: the prefix grows
        count = min(self._options.connections, len(queue))
        workers = [
            threading.Thread(target=self._work, args=(queue,), name="localllm-fetch", daemon=True)
            for _ in range(count)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()

    def _work(self, queue: deque[int]) -> None:
        try:
            while not self._mode_halt.is_set():
                try:
                    index = queue.popleft()
                except IndexError:
                    return
                self._fetch_part(index)
        except RangeNotSupported:
            self._no_ranges = True
            self._mode_halt.set()
        except BaseException as error:
            self._fail(error)

    def _fetch_part(self, index: int) -> None:
        failures = 0
        end = self._state.part_range(index)[1]
        while not self._mode_halt.is_set():
            offset = self._state.next_offset(index)  # only this worker moves it
            if offset >= end:
                return
            try:
                self._stream(offset, end)
            except RetryableError as error:
                progressed = self._state.next_offset(index) > offset
                failures = 1 if progressed else failures + 1
                self._wait_before_retry(failures, error)

    def _wait_before_retry(self, failures: int, error: RetryableError) -> None:
        if failures >= self._options.max_attempts:
            raise DownloadError(
                f"downloading blob {self._digest.short} failed {failures} times in a row "
                f"({error}); check the connection and run the pull again to resume"
            ) from error
        self._mode_halt.wait(self._options.backoff(failures))

    def _stream(self, offset: int, end: int | None) -> None:
        """Store the response for ``[offset, end)`` (or, if ``end`` is None, the whole file).

        Network chunks (64 KiB) are gathered into writes of up to ``_WRITE_SIZE``; whatever
        arrived is written even when the connection fails, so no received byte is lost.
        """
        limit = self._size if end is None else end
        pending = _Pending()
        with self._source.open(offset, end) as response:
            position = 0 if end is None else offset
            try:
                for chunk in response.iter_raw():
                    if self._mode_halt.is_set():
                        return
                    view = memoryview(chunk)[: max(0, limit - position)]
                    skip = max(0, self._prefix() - position) if end is None else 0
                    if not pending.fits(len(view)):
                        self._write(pending)
                    if pending.fits(len(view)):
                        pending.add(position + skip, view[skip:], len(chunk))
                    else:  # a chunk larger than the buffer: write it as it is
                        self._write_at(position + skip, view[skip:], len(chunk))
                    position += len(view)
                    if position >= limit:
                        return
            finally:
                self._write(pending)
        raise RetryableError("the connection closed before the data was complete")

    # -- one sequential stream (servers without Range support) ------------------------------
    def _sequential(self) -> None:
        self._mode_halt = self._halt
        progress = self._progress
        progress.keep_prefix_only()
        failures = 0
        try:
            while not self._halt.is_set() and progress.completed < self._size:
                before = progress.completed
                try:
                    self._stream(0, None)
                except RetryableError as error:
                    failures = 1 if progress.completed > before else failures + 1
                    self._wait_before_retry(failures, error)
        except BaseException as error:
            self._fail(error)

    # -- bookkeeping ------------------------------------------------------------------------
    def _write(self, pending: _Pending) -> None:
        """Put the gathered bytes in place and account for them; empties ``pending``."""
        if pending.fetched:
            try:
                self._write_at(pending.offset, pending.data, pending.fetched)
            finally:
                pending.clear()

    def _write_at(self, offset: int, data: memoryview, fetched: int) -> None:
        written = 0
        try:
            while written < len(data):
                written += self._pwrite(data[written:], offset + written)
        except OSError as error:
            if error.errno == errno.ENOSPC:
                missing = self._size - self.completed
                raise InsufficientSpaceError(missing, 0, "this download") from None
            raise
        finally:
            self._record(offset, written, fetched)

    def _pwrite(self, data: memoryview, offset: int) -> int:
        if _HAS_PWRITE:
            return os.pwrite(self._fd, data, offset)
        with self._lock:  # Windows: seek and write must not interleave between threads
            os.lseek(self._fd, offset, os.SEEK_SET)
            return os.write(self._fd, data)

    def _record(self, offset: int, count: int, fetched: int) -> None:
        if self._progress.record(offset, count, fetched) and self._hasher is not None:
            self._hasher.advance(self._progress.prefix)

    @property
    def _state(self) -> PartialState:
        return self._progress.state

    def _prefix(self) -> int:
        return self._progress.prefix

    def _fail(self, error: BaseException) -> None:
        with self._lock:
            if self._error is None:
                self._error = error
        self._halt_all()

    def _halt_all(self) -> None:
        self._halt.set()
        self._mode_halt.set()
