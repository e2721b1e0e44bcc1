"""Watches the daemon from the UI: a version check every few seconds, in a worker.

Starts the daemon when the first check finds nothing, reports every status change for the
status bar, and announces ``came_up`` so the pages reload what they show.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from app.gui.daemon_health import DaemonHealth, DaemonStatus
from app.gui.gateway import Gateway, GatewayError
from app.gui.workers import Job, Workers

__all__ = ["DaemonMonitor"]


class DaemonMonitor(QObject):
    status_changed = Signal(object)  # DaemonStatus
    came_up = Signal()

    def __init__(
        self,
        gateway: Gateway,
        workers: Workers,
        interval_ms: int = 3000,
        autostart: bool = True,
        parent: QObject | None = None,
    ):
        super().__init__(parent)
        self._gateway, self._workers = gateway, workers
        self._health = DaemonHealth(autostart)
        self._check: Job | None = None
        self._starting = False
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check)

    @property
    def status(self) -> DaemonStatus:
        return self._health.status

    def start(self) -> None:
        self.status_changed.emit(self.status)
        self.check()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def check(self) -> None:
        """One version check, unless one is in flight or we are starting the daemon."""
        if self._check is not None or self._starting:
            return
        self._check = self._workers.call(self._gateway.version, self._answered, self._silent)

    def restart(self) -> None:
        self._set(self._health.restarting())
        self._launch()

    def _answered(self, version: str) -> None:
        self._check = None
        was_up = self.status.up
        self._set(self._health.answered(version))
        if not was_up:
            self.came_up.emit()

    def _silent(self, error: Exception) -> None:
        self._check = None
        before = self.status
        should_start = self._health.no_answer(str(error))
        if self.status != before:
            self.status_changed.emit(self.status)
        if should_start:
            self._launch()

    def _launch(self) -> None:
        self._starting = True
        self._workers.call(self._gateway.start_daemon, self._launched, self._launch_failed)

    def _launched(self, _result: object) -> None:
        self._starting = False
        self.check()

    def _launch_failed(self, error: Exception) -> None:
        self._starting = False
        reason = error.message if isinstance(error, GatewayError) else str(error)
        self._set(self._health.start_failed(reason))

    def _set(self, status: DaemonStatus) -> None:
        self.status_changed.emit(status)
