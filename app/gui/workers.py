"""Run blocking work off the UI thread and hear back through Qt signals.

Every daemon call and every disk write goes through ``Workers``: ``call`` for one result,
``stream`` for an iterator (a chat reply, a pull). Results arrive on the UI thread by queued
signals, so the window keeps painting while a request hangs. A cancelled job delivers nothing
more, and a cancelled stream closes its iterator (which closes the HTTP response) as soon as
the next item arrives; nobody waits for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from PySide6.QtCore import QObject, Qt, QThreadPool, Signal

__all__ = ["Job", "Workers"]

Callback = Callable[[Any], object]  # what it returns is ignored


class _Signals(QObject):
    item = Signal(object)
    done = Signal(object)
    failed = Signal(object)
    finished = Signal()


class Job:
    """A handle on one piece of background work."""

    def __init__(self) -> None:
        self._cancelled = threading.Event()
        self.signals = _Signals()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def cancel(self) -> None:
        self._cancelled.set()

    def _guard(self, callback: Callback | None) -> Callback:
        def deliver(value: Any) -> None:
            if callback is not None and not self.cancelled:
                callback(value)

        return deliver


class Workers(QObject):
    """A thread pool of its own, so a slow stream can never starve the other calls."""

    def __init__(self, max_threads: int = 8, parent: QObject | None = None):
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(max_threads)
        self._jobs: set[Job] = set()

    @property
    def busy(self) -> int:
        return len(self._jobs)

    def call(
        self,
        fn: Callable[[], Any],
        on_done: Callback | None = None,
        on_error: Callback | None = None,
    ) -> Job:
        job = self._track(on_done, on_error)

        def run() -> None:
            try:
                result = fn()
            except Exception as exc:  # reported to the UI, never raised in a pool thread
                self._emit(job, job.signals.failed, exc)
            else:
                self._emit(job, job.signals.done, result)
            finally:
                job.signals.finished.emit()

        self._pool.start(run)
        return job

    def stream(
        self,
        fn: Callable[[], Iterable[Any]],
        on_item: Callback,
        on_done: Callback | None = None,
        on_error: Callback | None = None,
    ) -> Job:
        """``on_done(None)`` when the iterator ends, ``on_error(exc)`` when it raises."""
        job = self._track(on_done, on_error)
        job.signals.item.connect(job._guard(on_item), Qt.ConnectionType.QueuedConnection)

        def run() -> None:
            iterator = None
            try:
                iterator = iter(fn())
                for item in iterator:
                    if job.cancelled:
                        break
                    job.signals.item.emit(item)
            except Exception as exc:
                self._emit(job, job.signals.failed, exc)
            else:
                self._emit(job, job.signals.done, None)
            finally:
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()
                job.signals.finished.emit()

        self._pool.start(run)
        return job

    def shutdown(self, wait_ms: int = 500, drop_queued: bool = True) -> None:
        """Stop delivering results and give running jobs ``wait_ms`` to finish. Jobs not yet
        started are dropped, unless ``drop_queued`` is False (the disk pool: a queued history
        write must still land)."""
        for job in list(self._jobs):
            job.cancel()
        if drop_queued:
            self._pool.clear()
        self._pool.waitForDone(wait_ms)

    def wait(self, wait_ms: int) -> bool:
        """Until no job runs (at most ``wait_ms``); False if one still does."""
        return self._pool.waitForDone(wait_ms)

    def _track(self, on_done: Callback | None, on_error: Callback | None) -> Job:
        job = Job()
        queued = Qt.ConnectionType.QueuedConnection
        job.signals.done.connect(job._guard(on_done), queued)
        job.signals.failed.connect(job._guard(on_error), queued)
        job.signals.finished.connect(lambda: self._jobs.discard(job), queued)
        self._jobs.add(job)
        return job

    @staticmethod
    def _emit(job: Job, signal, value: Any) -> None:
        if not job.cancelled:
            signal.emit(value)
