"""Downloading one blob: parallel range requests into a resumable, verified ``.partial`` file.

The blob is cut into parts; up to ``connections`` workers each take the lowest unfinished
part and fill it from where it stopped, so the file fills roughly front to back. A hasher
thread follows the contiguous filled prefix, reading it back while the network is still busy,
so when the last byte lands only the tail is left to hash. Progress goes to the sidecar (see
:mod:`model_registry.pull.partial`) at most every ``save_interval`` and whenever a part
completes. A server that ignores ``Range`` gets one sequential stream instead, which skips
(never rewrites) the bytes already on disk, so nothing hashed is ever changed underneath.
"""

from __future__ import annotations

import errno
import hashlib
import os
import threading
import time
from collections import deque
from pathlib import Path

from model_registry.digests import Digest
from model_registry.errors import DigestMismatchError, DownloadError, InsufficientSpaceError
from model_registry.pull.fetch import BlobSource, DownloadOptions, RangeNotSupported, RetryableError
from model_registry.pull.partial import PartialState

__all__ = ["BlobDownload"]

_HASH_STEP = 4 << 20  # hash at least this much at a time (unless at the end)
_READ_SIZE = 8 << 20


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
        self._changed = threading.Condition(self._lock)
        self._save_lock = threading.Lock()
        self._halt = threading.Event()  # everything stops: paused or failed
        self._mode_halt = threading.Event()  # the current mode's workers stop
        self._stopped = False
        self._error: BaseException | None = None
        self._no_ranges = False
        self._state = PartialState(size, options.part_size)
        self._first_pending = 0
        self._prefix = 0
        self._last_save = 0.0
        self._hash_result: Digest | None = None
        self._fd = -1
        self.completed = 0  #: bytes on disk
        self.fetched = 0  #: bytes received from the network in this run
        self.verifying = False  #: all bytes are in; hashing the tail

    def stop(self) -> None:
        """Stop soon, keeping the partial file and its sidecar (pause)."""
        self._stopped = True
        self._halt_all()

    def discard(self) -> None:
        self._partial_path.unlink(missing_ok=True)
        self._state_path.unlink(missing_ok=True)

    def run(self) -> bool:
        """True when the ``.partial`` file is complete and verified; False if stopped."""
        self._state = self._load_state()
        self.completed = self._state.completed
        self._fd = os.open(self._partial_path, os.O_RDWR | os.O_CREAT, 0o644)
        hasher = threading.Thread(target=self._hash, name="localllm-hash", daemon=True)
        try:
            if os.fstat(self._fd).st_size != self._size:
                os.ftruncate(self._fd, self._size)
            self._save()
            self._advance_prefix()
            hasher.start()
            self._parallel()
            if self._no_ranges and not self._halt.is_set():
                self._sequential()
            return self._finish(hasher)
        finally:
            self._halt_all()
            if hasher.is_alive():
                hasher.join()
            os.close(self._fd)

    # -- start and end ----------------------------------------------------------------------
    def _load_state(self) -> PartialState:
        state = None
        if self._partial_path.is_file():
            state = PartialState.load(self._state_path, self._size)
        if state is None:
            state = PartialState(self._size, self._options.part_size)
        state.names = sorted({*state.names, *self._names})
        return state

    def _finish(self, hasher: threading.Thread) -> bool:
        if self._error is None and self._state.completed == self._size:
            self.verifying = True
            hasher.join()
            if self._hash_result is not None:  # None: stopped while hashing
                self._verify()
                return True
        self._save()
        if self._error is not None:
            if self._state.completed == 0:
                self.discard()  # nothing worth resuming (refused, gone): leave no trace
            raise self._error
        return False

    def _verify(self) -> None:
        if self._hash_result != self._digest:
            self.discard()
            raise DigestMismatchError(
                f"downloaded data did not match its sha256 digest {self._digest.short} "
                f"(got {self._hash_result.short if self._hash_result else '?'}); the partial "
                "download was deleted, run the pull again"
            )
        os.fsync(self._fd)

    # -- parallel range requests ------------------------------------------------------------
    def _parallel(self) -> None:
        queue = deque(self._state.pending())
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
        start, end = self._state.part_range(index)
        while not self._mode_halt.is_set():
            offset = start + self._state.received[index]
            if offset >= end:
                return
            try:
                self._stream(offset, end)
            except RetryableError as error:
                progressed = start + self._state.received[index] > offset
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
        """Store the response for ``[offset, end)`` (or, if ``end`` is None, the whole file)."""
        limit = self._size if end is None else end
        with self._source.open(offset, end) as response:
            position = 0 if end is None else offset
            for chunk in response.iter_raw():
                if self._mode_halt.is_set():
                    return
                with self._lock:
                    self.fetched += len(chunk)
                view = memoryview(chunk)[: max(0, limit - position)]
                skip = max(0, self._prefix - position) if end is None else 0
                if skip < len(view):
                    self._write(position + skip, view[skip:])
                position += len(view)
                if position >= limit:
                    return
        raise RetryableError("the connection closed before the data was complete")

    # -- one sequential stream (servers without Range support) ------------------------------
    def _sequential(self) -> None:
        self._mode_halt = self._halt
        with self._lock:
            self._state.reset_to_prefix(self._prefix)
            self.completed = self._state.completed
            self._first_pending = 0
            self._advance_prefix()
        failures = 0
        try:
            while not self._halt.is_set() and self._state.completed < self._size:
                before = self._state.completed
                try:
                    self._stream(0, None)
                except RetryableError as error:
                    failures = 1 if self._state.completed > before else failures + 1
                    self._wait_before_retry(failures, error)
        except BaseException as error:
            self._fail(error)

    # -- bookkeeping ------------------------------------------------------------------------
    def _write(self, offset: int, data: memoryview) -> None:
        try:
            while data:
                written = os.pwrite(self._fd, data, offset)
                self._record(offset, written)
                data, offset = data[written:], offset + written
        except OSError as error:
            if error.errno == errno.ENOSPC:
                missing = self._size - self.completed
                raise InsufficientSpaceError(missing, 0, "this download") from None
            raise

    def _record(self, offset: int, count: int) -> None:
        part_size = self._state.part_size
        due = False
        with self._changed:
            while count > 0:
                index = offset // part_size
                piece = min(count, (index + 1) * part_size - offset)
                self._state.add(index, piece)
                offset, count = offset + piece, count - piece
                self.completed += piece
                due = due or self._state.is_done(index)
            if self._advance_prefix():
                self._changed.notify_all()
            due = due or time.monotonic() - self._last_save >= self._options.save_interval
        if due:
            self._save()

    def _advance_prefix(self) -> bool:
        """Move the contiguous-prefix mark forward (call with the lock held)."""
        state, before = self._state, self._prefix
        while self._first_pending < state.part_count and state.is_done(self._first_pending):
            self._first_pending += 1
        if self._first_pending < state.part_count:
            self._prefix = state.next_offset(self._first_pending)
        else:
            self._prefix = self._size
        return self._prefix != before

    def _save(self) -> None:
        with self._save_lock:
            with self._lock:
                snapshot = self._state.to_bytes()
                self._last_save = time.monotonic()
            self._state.save(self._state_path, snapshot)

    def _fail(self, error: BaseException) -> None:
        with self._lock:
            if self._error is None:
                self._error = error
        self._halt_all()

    def _halt_all(self) -> None:
        self._halt.set()
        self._mode_halt.set()
        with self._changed:
            self._changed.notify_all()

    # -- hashing, overlapped with the download ----------------------------------------------
    def _hash(self) -> None:
        hasher, hashed = hashlib.sha256(), 0
        while hashed < self._size:
            with self._changed:
                self._changed.wait_for(lambda done=hashed: self._hash_ready(done))
                target = self._prefix
            if self._halt.is_set():
                return
            while hashed < target:
                data = os.pread(self._fd, min(_READ_SIZE, target - hashed), hashed)
                if not data:
                    return
                hasher.update(data)
                hashed += len(data)
        self._hash_result = Digest(hasher.hexdigest())

    def _hash_ready(self, hashed: int) -> bool:
        prefix = self._prefix
        return self._halt.is_set() or prefix >= self._size or prefix - hashed >= _HASH_STEP
