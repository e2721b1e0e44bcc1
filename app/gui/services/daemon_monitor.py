"""Watches the daemon from the UI: a version check every few seconds, in a worker.

Starts the daemon when the first check finds nothing, reports every status change for the
status bar, and announces ``came_up`` so the pages reload what they show. A restart (the status
bar's button, or the Server page re-binding the daemon for the local network) pauses the
checks until it is done, so the status says "starting" rather than "stopped" meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from app.gui.state.daemon_health import DaemonHealth, DaemonStatus
from app.gui.state.gateway import Gateway, GatewayError
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

    def restart(
        self,
        action: Callable[[], Any] | None = None,
        then: Callable[[Any], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        """Run ``action`` (default: start the daemon) in a worker as a restart; ``then`` gets
        its result once the daemon answers again, ``on_error`` its failure."""
        self._set(self._health.restarting())
        self._launch(action, then, on_error)

    def _answered(self, version: str) -> None:
        self._check = None
        if self._starting:
            return  # from before the restart: the check after it decides
        was_up = self.status.up
        self._set(self._health.answered(version))
        if not was_up:
            self.came_up.emit()

    def _silent(self, error: Exception) -> None:
        self._check = None
        if self._starting:
            return
        before = self.status
        should_start = self._health.no_answer(str(error))
        if self.status != before:
            self.status_changed.emit(self.status)
        if should_start:
            self._launch()

    def _launch(self, action=None, then=None, on_error=None) -> None:
        self._starting = True

        def launched(result: Any) -> None:
            self._starting = False
            self.check()
            if then is not None:
                then(result)

        def failed(error: Exception) -> None:
            self._starting = False
            reason = error.message if isinstance(error, GatewayError) else str(error)
            self._set(self._health.start_failed(reason))
            if on_error is not None:
                on_error(error)

        self._workers.call(action or self._gateway.start_daemon, launched, failed)

    def _set(self, status: DaemonStatus) -> None:
        self.status_changed.emit(status)
