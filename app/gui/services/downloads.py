"""Pulls and imports, watched from the window; the daemon does the work and owns the pulls.

A pull this window starts is followed through its progress stream; every pull the daemon
knows about (including ones started before the window opened, or from the command line) is
picked up by polling ``pulls()``. The list is polled often only while a pull runs that no
stream of ours follows; otherwise now and then (``quiet_ms``), to find pulls started
elsewhere. Closing the window only stops the watching.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from localllm.app.gui.item_models.daemon_tables import DownloadsModel
from localllm.app.gui.state.downloads import Downloads, download_key
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.records import PullProgress
from localllm.app.gui.workers import Job, Workers

__all__ = ["DownloadService"]

_QUIET_FACTOR = 10  # quiet_ms defaults to ten times poll_ms


class DownloadService(QObject):
    finished = Signal(str)  # a model name, now installed
    error = Signal(str)
    active_changed = Signal(int)  # how many are running or paused

    def __init__(
        self,
        gateway: Gateway,
        workers: Workers,
        poll_ms: int = 1500,
        parent: QObject | None = None,
        quiet_ms: int | None = None,
    ):
        super().__init__(parent)
        self._gateway, self._workers = gateway, workers
        self.state = Downloads()
        self.table = DownloadsModel(self)
        self._streams: dict[str, Job] = {}
        self._polling: Job | None = None
        self._poll_ms = poll_ms
        self._quiet_ms = quiet_ms if quiet_ms is not None else poll_ms * _QUIET_FACTOR
        self._timer = QTimer(self)
        self._timer.setInterval(self._quiet_ms)
        self._timer.timeout.connect(self.poll)

    @property
    def poll_interval_ms(self) -> int:
        return self._timer.interval()

    def start(self) -> None:
        self.poll()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        for job in self._streams.values():
            job.cancel()  # stops watching; the daemon keeps pulling

    def pull(self, name: str) -> None:
        self._follow(name, lambda: self._gateway.pull(name))

    def import_file(self, name: str, path: Path) -> None:
        self.state.mark(name, "running", kind="import")  # listed as an import, not a download
        self._follow(name, lambda: self._gateway.import_gguf(name, path))

    def pause(self, name: str) -> None:
        self._forget_stream(name)
        self._workers.call(
            lambda: self._gateway.pause_pull(name),
            lambda _: self._mark(name, "paused"),
            self._report,
        )

    def resume(self, name: str) -> None:
        self._follow(name, lambda: self._gateway.resume_pull(name))

    def resume_paused(self, names: list[str]) -> None:
        """Resume those of ``names`` the daemon holds paused (the others finished or failed
        meanwhile)."""
        wanted = {download_key(n) for n in names}

        def listed(pulls) -> None:
            for pull in pulls:
                if pull.state == "paused" and download_key(pull.name) in wanted:
                    self.resume(pull.name)

        if wanted:
            self._workers.call(self._gateway.pulls, listed, self._report)

    def cancel(self, name: str) -> None:
        self._forget_stream(name)

        def cancelled(_result: object) -> None:
            self.state.remove(name)
            self._sync()

        self._workers.call(lambda: self._gateway.cancel_pull(name), cancelled, self._report)

    def clear_finished(self) -> None:
        self.state.clear_finished()
        self._sync()

    def poll(self) -> None:
        if self._polling is None:
            self._polling = self._workers.call(self._gateway.pulls, self._polled, self._poll_failed)

    def _follow(self, name: str, start: Callable[[], Iterator[PullProgress]]) -> None:
        self._forget_stream(name)
        self.state.mark(name, "running")
        self._sync()
        self._streams[download_key(name)] = self._workers.stream(
            start,
            self._progress,
            lambda _: self._ended(name),
            lambda exc: self._failed(name, exc),
        )
        self._pace()

    def _progress(self, event: PullProgress) -> None:
        self.state.on_progress(event)
        self._sync()

    def _ended(self, name: str) -> None:
        self._streams.pop(download_key(name), None)
        self._pace()
        current = self.state.get(name)
        if current is not None and current.state == "done":
            self.finished.emit(current.name)

    def _failed(self, name: str, error: Exception) -> None:
        self._streams.pop(download_key(name), None)
        self._mark(name, "failed", str(error))
        self.error.emit(f"{name}: {error}")

    def _polled(self, pulls) -> None:
        self._polling = None
        finished = self.state.on_snapshot(tuple(pulls), watched=set(self._streams))
        self._sync()
        for name in finished:
            self.finished.emit(name)

    def _poll_failed(self, _error: Exception) -> None:
        self._polling = None  # the status bar already says when the daemon is down

    def _mark(self, name: str, state: str, error: str = "") -> None:
        self.state.mark(name, state, error)
        self._sync()

    def _forget_stream(self, name: str) -> None:
        job = self._streams.pop(download_key(name), None)
        if job is not None:
            job.cancel()

    def _sync(self) -> None:
        self.table.replace(self.state.items())
        self.active_changed.emit(sum(1 for d in self.state.items() if d.active))
        self._pace()

    def _pace(self) -> None:
        """Poll often only while a pull runs that no stream of ours reports."""
        unwatched = any(
            d.state == "running" and download_key(d.name) not in self._streams
            for d in self.state.items()
        )
        wanted = self._poll_ms if unwatched else self._quiet_ms
        if self._timer.interval() != wanted:  # setting it restarts the timer
            self._timer.setInterval(wanted)

    def _report(self, error: Exception) -> None:
        self.error.emit(str(error))
