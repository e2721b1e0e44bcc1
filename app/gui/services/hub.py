"""Discover: search the hub, list a repository's GGUF files, judge each against this machine.

Search results can come back out of order when the user types fast; each request carries a
number and only the newest answer is shown.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.gui.item_models.daemon_tables import HubFilesModel, HubReposModel
from app.gui.state.gateway import Gateway
from app.gui.state.records import SystemInfo
from app.gui.workers import Workers

__all__ = ["HubService"]


class HubService(QObject):
    searching = Signal(bool)
    system_changed = Signal(object)  # SystemInfo
    error = Signal(str)

    def __init__(self, gateway: Gateway, workers: Workers, parent: QObject | None = None):
        super().__init__(parent)
        self._gateway, self._workers = gateway, workers
        self.repos = HubReposModel(self)
        self.files = HubFilesModel(self)
        self.system: SystemInfo | None = None
        self._search_seq = 0
        self._files_seq = 0

    def load_system(self) -> None:
        self._workers.call(self._gateway.system, self._got_system, lambda _e: None)

    def search(self, query: str) -> None:
        self._search_seq += 1
        seq = self._search_seq
        query = query.strip()
        if not query:
            self.repos.replace(())
            return
        self.searching.emit(True)
        self._workers.call(
            lambda: self._gateway.hub_search(query),
            lambda found: self._latest(seq, self._search_seq, lambda: self.repos.replace(found)),
            lambda exc: self._latest(seq, self._search_seq, lambda: self._report(exc)),
        )

    def open_repo(self, repo: str) -> None:
        self._files_seq += 1
        seq = self._files_seq
        self.files.replace(())
        self._workers.call(
            lambda: self._gateway.hub_files(repo),
            lambda files: self._files_ready(seq, files),
            lambda exc: self._latest(seq, self._files_seq, lambda: self._report(exc)),
        )

    def _files_ready(self, seq: int, files) -> None:
        if seq == self._files_seq:
            self.files.replace(sorted(files, key=lambda f: f.size))

    def _latest(self, seq: int, current: int, action) -> None:
        if seq == current:
            self.searching.emit(False)
            action()

    def _got_system(self, system: SystemInfo) -> None:
        self.system = system
        self.files.set_system(system)
        self.system_changed.emit(system)

    def _report(self, error: Exception) -> None:
        self.error.emit(str(error))
