"""Watches the daemon from the UI: a version check now and then, in a worker.

Starts the daemon when the first check finds nothing, reports every status change for the
status bar, and announces ``came_up`` so the pages reload what they show. While the daemon
keeps answering the checks space out (``interval_ms`` doubling up to ``quiet_ms``), so a
quiet app does not fill the daemon's log; any change brings them back to ``interval_ms``. A
restart or a stop (the status bar's button, the Server page's port, start/stop and
local-network controls) pauses the checks until it is done, so the status says "starting" or
"stopping" rather than "stopped" meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from localllm.app.gui.state.daemon_health import DaemonHealth, DaemonStatus
from localllm.app.gui.state.gateway import Gateway, GatewayError
from localllm.app.gui.workers import Job, Workers

__all__ = ["DaemonMonitor"]

_QUIET_FACTOR = 5  # quiet_ms defaults to five times interval_ms


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
        quiet_ms: int | None = None,
    ):
        super().__init__(parent)
        self._gateway, self._workers = gateway, workers
        self._health = DaemonHealth(autostart)
        self._check: Job | None = None
        self._busy = False  # starting, restarting or stopping the daemon
        self._interval = interval_ms
        self._quiet = quiet_ms if quiet_ms is not None else interval_ms * _QUIET_FACTOR
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check)

    @property
    def status(self) -> DaemonStatus:
        return self._health.status

    @property
    def interval_ms(self) -> int:
        """The time between two checks now."""
        return self._timer.interval()

    def start(self) -> None:
        self.status_changed.emit(self.status)
        self.check()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def check(self) -> None:
        """One version check, unless one is in flight or the daemon is being (re)started."""
        if self._check is not None or self._busy:
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

    def stop_daemon(self, on_error: Callable[[Exception], None] | None = None) -> None:
        """Stop the daemon (in a worker); the status says so until the user starts it."""
        self._set(self._health.stopping())
        self._busy = True

        def stopped(_result: Any) -> None:
            self._busy = False
            self._set(self._health.stopped())

        def failed(error: Exception) -> None:
            self._busy = False
            self.check()
            if on_error is not None:
                on_error(error)

        self._workers.call(self._gateway.stop_daemon, stopped, failed)

    def _answered(self, version: str) -> None:
        self._check = None
        if self._busy:
            return  # from before the restart: the check after it decides
        was_up = self.status.up
        self._set(self._health.answered(version))
        if not was_up:
            self.came_up.emit()
        else:
            self._timer.setInterval(min(self._timer.interval() * 2, self._quiet))

    def _silent(self, error: Exception) -> None:
        self._check = None
        if self._busy:
            return
        self._watch_closely()
        before = self.status
        should_start = self._health.no_answer(str(error))
        if self.status != before:
            self.status_changed.emit(self.status)
        if should_start:
            self._launch()

    def _launch(self, action=None, then=None, on_error=None) -> None:
        self._busy = True

        def launched(result: Any) -> None:
            self._busy = False
            self.check()
            if then is not None:
                then(result)

        def failed(error: Exception) -> None:
            self._busy = False
            reason = error.message if isinstance(error, GatewayError) else str(error)
            self._set(self._health.start_failed(reason))
            if on_error is not None:
                on_error(error)
            self.check()  # a refused switch leaves the daemon running as it was

        self._workers.call(action or self._gateway.start_daemon, launched, failed)

    def _set(self, status: DaemonStatus) -> None:
        if not status.up:
            self._watch_closely()
        self.status_changed.emit(status)

    def _watch_closely(self) -> None:
        if self._timer.interval() != self._interval:  # setting it restarts the timer
            self._timer.setInterval(self._interval)
