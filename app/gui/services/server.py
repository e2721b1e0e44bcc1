"""The Server page's data: address and port, loaded models, remotes (``RemotesService``),
local-network switch, API key, starting and stopping the daemon, its log.

Everything is a worker call; results arrive as signals the page binds to. Switching the local
network on or off, or moving the daemon to another port, restarts it, so it goes through the
monitor (the status bar says "starting" meanwhile, and the pages reload when it is back); the
choice is remembered only once the daemon runs with it.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from localllm.app.gui.item_models.daemon_tables import RunningModelsModel
from localllm.app.gui.services.daemon_monitor import DaemonMonitor
from localllm.app.gui.services.remotes import RemotesService
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.records import ServerInfo
from localllm.app.gui.workers import Job, Workers

__all__ = ["ServerService"]


class ServerService(QObject):
    info_changed = Signal(object)  # ServerInfo
    switching = Signal(bool)  # a local-network switch is under way
    api_key_ready = Signal(str)
    log_ready = Signal(str)
    log_failed = Signal(str)  # apart from ``error``: the next log that comes makes it stale
    error = Signal(str)

    def __init__(
        self,
        gateway: Gateway,
        workers: Workers,
        monitor: DaemonMonitor,
        remember_lan: Callable[[bool], None] | None = None,
        parent: QObject | None = None,
        remember_port: Callable[[int], None] | None = None,
    ):
        super().__init__(parent)
        self._gateway, self._workers, self._monitor = gateway, workers, monitor
        self._remember = remember_lan
        self._remember_port = remember_port
        self.running = RunningModelsModel(self)
        self.remotes = RemotesService(gateway, workers, self)
        self.info: ServerInfo | None = None
        self._running_job: Job | None = None

    def refresh(self) -> None:
        self._workers.call(self._gateway.server_info, self._got_info, lambda _e: None)
        self.refresh_running()
        self.remotes.refresh()

    def refresh_running(self) -> None:
        if self._running_job is None:
            self._running_job = self._workers.call(
                self._gateway.running, self._got_running, self._running_failed
            )

    def unload(self, name: str) -> None:
        self._workers.call(
            lambda: self._gateway.unload(name), lambda _: self.refresh_running(), self._report
        )

    @property
    def remote(self) -> bool:
        """The daemon runs on another computer: this window can neither start nor stop it."""
        control = self._gateway.control
        return control is None or control.remote

    @property
    def port_movable(self) -> bool:
        """Whether this window may move the daemon to another port (it is local, and no
        --host or LOCALLLM_HOST named the address)."""
        control = self._gateway.control
        return control is not None and not control.remote and not control.port_fixed

    def set_lan(self, enabled: bool) -> None:
        """Restart the daemon on every interface (with the API key) or on this machine only."""
        self.switching.emit(True)
        self._monitor.restart(
            lambda: self._gateway.set_lan(enabled), self._lan_switched, self._switch_failed
        )

    def set_port(self, port: int) -> None:
        """Restart the daemon on ``port``, remembered for the next start once it runs there."""
        self.switching.emit(True)
        self._monitor.restart(
            lambda: self._gateway.move_daemon(port), self._port_moved, self._switch_failed
        )

    def stop_daemon(self) -> None:
        self._monitor.stop_daemon(self._report)

    def start_daemon(self) -> None:
        self._monitor.restart()

    def fetch_api_key(self) -> None:
        self._workers.call(self._gateway.api_key, self.api_key_ready.emit, self._report)

    def fetch_log(self, lines: int = 2000) -> None:
        self._workers.call(
            lambda: self._gateway.logs(lines),
            self.log_ready.emit,
            lambda error: self.log_failed.emit(str(error)),
        )

    def _lan_switched(self, info: ServerInfo) -> None:
        self.switching.emit(False)
        if self._remember is not None:
            self._remember(info.lan)
        self._got_info(info)

    def _port_moved(self, info: ServerInfo) -> None:
        self.switching.emit(False)
        if self._remember_port is not None:
            self._remember_port(info.port)
        self._got_info(info)

    def _switch_failed(self, error: Exception) -> None:
        self.switching.emit(False)
        self._report(error)
        if self.info is not None:
            self.info_changed.emit(self.info)  # the switch goes back to what really runs

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
