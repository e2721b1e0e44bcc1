"""The Server page's data: address, loaded models, local-network switch, API key, log.

Everything is a worker call; results arrive as signals the page binds to.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.gui.gateway import Gateway
from app.gui.item_models.daemon_tables import RunningModelsModel
from app.gui.records import ServerInfo
from app.gui.workers import Workers

__all__ = ["ServerService"]


class ServerService(QObject):
    info_changed = Signal(object)  # ServerInfo
    api_key_ready = Signal(str)
    log_ready = Signal(str)
    error = Signal(str)

    def __init__(self, gateway: Gateway, workers: Workers, parent: QObject | None = None):
        super().__init__(parent)
        self._gateway, self._workers = gateway, workers
        self.running = RunningModelsModel(self)
        self.info: ServerInfo | None = None
        self._running_job = None

    def refresh(self) -> None:
        self._workers.call(self._gateway.server_info, self._got_info, lambda _e: None)
        self.refresh_running()

    def refresh_running(self) -> None:
        if self._running_job is None:
            self._running_job = self._workers.call(
                self._gateway.running, self._got_running, self._running_failed
            )

    def unload(self, name: str) -> None:
        self._workers.call(
            lambda: self._gateway.unload(name), lambda _: self.refresh_running(), self._report
        )

    def set_lan(self, enabled: bool) -> None:
        self._workers.call(lambda: self._gateway.set_lan(enabled), self._got_info, self._report)

    def fetch_api_key(self) -> None:
        self._workers.call(self._gateway.api_key, self.api_key_ready.emit, self._report)

    def fetch_log(self, lines: int = 400) -> None:
        self._workers.call(lambda: self._gateway.logs(lines), self.log_ready.emit, self._report)

    def _got_info(self, info: ServerInfo) -> None:
        self.info = info
        self.info_changed.emit(info)
        if info.lan or info.api_key_set:
            self.fetch_api_key()

    def _got_running(self, running) -> None:
        self._running_job = None
        self.running.replace(running)

    def _running_failed(self, _error: Exception) -> None:
        self._running_job = None
        self.running.replace(())

    def _report(self, error: Exception) -> None:
        self.error.emit(str(error))
