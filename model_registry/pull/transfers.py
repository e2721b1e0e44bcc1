"""Blob transfers shared between pulls: one download per blob, however many pulls want it.

Inside one process a :class:`TransferRegistry` (owned by a ``Puller``) hands every pull of a
digest the same :class:`Transfer`, which runs in its own thread and stops only when its last
pull leaves. Across processes a lock file per digest (``sha256-<hex>.partial.lock``) makes the
second process wait; meanwhile it reports the first one's progress from the sidecar, and once
it gets the lock it usually finds the blob already committed and fetches nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from enum import Enum
from pathlib import Path

import filelock

from localllm.model_registry.digests import Digest
from localllm.model_registry.pull.downloader import BlobDownload
from localllm.model_registry.pull.partial import PartialState
from localllm.model_registry.store import Store

__all__ = ["BlobLock", "Outcome", "Transfer", "TransferRegistry"]

_LOCK_POLL = 0.2


class Outcome(Enum):
    RUNNING = "running"
    DONE = "done"
    PAUSED = "paused"
    CANCELLED = "cancelled"
    FAILED = "failed"


class BlobLock:
    """The inter-process lock that one download of a blob holds while it runs.

    The lock file is removed just before the lock is released; filelock notices a waiter
    that locked the removed file and retries on a new one, so no lock files pile up.
    """

    def __init__(self, store: Store, digest: Digest):
        partial = store.layout.partial_path(digest)
        self._path = partial.with_name(partial.name + ".lock")
        self._lock = filelock.FileLock(self._path)

    def acquire(self, timeout: float) -> bool:
        try:
            self._lock.acquire(timeout=timeout)
        except filelock.Timeout:
            return False
        return True

    def release(self) -> None:
        self._path.unlink(missing_ok=True)
        self._lock.release()


class Transfer:
    """Gets one blob into the store, in a thread of its own."""

    def __init__(self, store: Store, digest: Digest, size: int, make: Callable[[], BlobDownload]):
        self.digest, self.size = digest, size
        self._store, self._make = store, make
        self._download: BlobDownload | None = None
        self._stop_requested = False
        self._cancel = False
        self._observed = 0
        self._done = threading.Event()
        self.outcome = Outcome.RUNNING
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="localllm-transfer", daemon=True)

    def start(self) -> Transfer:
        self._thread.start()
        return self

    @property
    def completed(self) -> int:
        if self.outcome is Outcome.DONE:
            return self.size
        download = self._download
        return download.completed if download is not None else self._observed

    @property
    def fetched(self) -> int:
        download = self._download
        return download.fetched if download is not None else 0

    @property
    def downloaded(self) -> bool:
        """Whether this transfer fetched (rather than found) the blob."""
        return self._download is not None

    @property
    def verifying(self) -> bool:
        download = self._download
        return download is not None and download.verifying

    def stop(self, cancel: bool = False) -> None:
        self._cancel = self._cancel or cancel
        self._stop_requested = True
        download = self._download
        if download is not None:
            download.stop()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def _run(self) -> None:
        try:
            self.outcome = self._locked_fetch()
        except BaseException as error:
            self.error, self.outcome = error, Outcome.FAILED
        finally:
            self._done.set()

    def _locked_fetch(self) -> Outcome:
        lock = BlobLock(self._store, self.digest)
        state_path = self._store.layout.partial_state_path(self.digest)
        while not lock.acquire(_LOCK_POLL):
            if self._stop_requested:
                return Outcome.CANCELLED if self._cancel else Outcome.PAUSED
            self._observe(state_path)  # another process is downloading it
        try:
            return self._fetch()
        finally:
            lock.release()

    def _fetch(self) -> Outcome:
        if self._store.blobs.exists(self.digest):
            return Outcome.DONE
        download = self._make()
        self._download = download
        if self._stop_requested:
            download.stop()
        if download.run():
            partial = self._store.layout.partial_path(self.digest)
            self._store.blobs.commit_verified_file(partial, self.digest)
            self._store.layout.partial_state_path(self.digest).unlink(missing_ok=True)
            return Outcome.DONE
        if self._cancel:
            download.discard()
            return Outcome.CANCELLED
        return Outcome.PAUSED

    def _observe(self, state_path: Path) -> None:
        state = PartialState.load(state_path, self.size)
        if state is not None:
            self._observed = state.completed


class TransferRegistry:
    """The transfers running for one puller, by digest, counting the pulls that use each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: dict[Digest, tuple[Transfer, int]] = {}

    def join(self, digest: Digest, create: Callable[[], Transfer]) -> Transfer:
        """The running transfer of ``digest`` (one more user), or a new one from ``create``."""
        with self._lock:
            transfer, users = self._active.get(digest, (None, 0))
            if transfer is None or transfer.wait(0):  # none, or one that has just ended
                transfer, users = create().start(), 0
            self._active[digest] = (transfer, users + 1)
            return transfer

    def leave(self, transfer: Transfer, *, stop: bool = False, cancel: bool = False) -> None:
        """One user is done with ``transfer``; the last one to leave may stop it, and then
        waits until it has (so the partial file and its sidecar are settled on return)."""
        with self._lock:
            current, users = self._active.get(transfer.digest, (None, 0))
            if current is not transfer:
                return
            if users > 1:
                self._active[transfer.digest] = (transfer, users - 1)
                return
            del self._active[transfer.digest]
        if stop or cancel:
            transfer.stop(cancel=cancel)
            transfer.wait()
