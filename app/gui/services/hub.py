"""Discover: the curated catalog, searching the hub, a repository's GGUF files, each judged
against this machine.

The catalog comes from the daemon without the internet, so it is there even offline; a hub
call that cannot reach Hugging Face marks the page offline (one plain sentence, and the
catalog marked "needs internet to download") until a hub call succeeds again. Search results
can come back out of order when the user types fast; each request carries a number and only
the newest answer is shown.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.gui.item_models.daemon_tables import CatalogTableModel, HubFilesModel, HubReposModel
from app.gui.state.gateway import Gateway, GatewayError
from app.gui.state.records import SystemInfo
from app.gui.workers import Workers

__all__ = ["OFFLINE", "OFFLINE_BANNER", "HubService"]

OFFLINE = (
    "This computer could not reach Hugging Face: the search below looks through the built-in "
    "list, and downloads start once the internet connection is back."
)
OFFLINE_BANNER = (
    "You are offline: downloads and the Hugging Face search need the internet. The models you "
    "have work as usual, and you can import a GGUF file you already have."
)
_UNREACHABLE = 502  # the daemon's answer when the hub cannot be reached


class HubService(QObject):
    searching = Signal(bool)
    system_changed = Signal(object)  # SystemInfo
    offline_changed = Signal(bool)
    error = Signal(str)

    def __init__(self, gateway: Gateway, workers: Workers, parent: QObject | None = None):
        super().__init__(parent)
        self._gateway, self._workers = gateway, workers
        self.catalog = CatalogTableModel(self)
        self.repos = HubReposModel(self)
        self.files = HubFilesModel(self)
        self.system: SystemInfo | None = None
        self._search_seq = 0
        self._files_seq = 0
        self._checking = False

    @property
    def offline(self) -> bool:
        return self.catalog.offline

    def load_system(self) -> None:
        self._workers.call(self._gateway.system, self._got_system, lambda _e: None)

    def load_catalog(self) -> None:
        self._workers.call(
            self._gateway.hub_catalog,
            lambda found: self.catalog.replace(sorted(found, key=lambda m: m.size)),
            lambda _e: None,
        )

    def check_online(self) -> None:
        """Ask the hub something small, to know whether downloads can work (the answer only
        moves ``offline``); once at a time."""
        if self._checking:
            return
        self._checking = True

        def done(offline: bool) -> None:
            self._checking = False
            self._set_offline(offline)

        def failed(error: Exception) -> None:
            self._checking = False
            if isinstance(error, GatewayError) and error.status == _UNREACHABLE:
                self._set_offline(True)

        self._workers.call(
            lambda: self._gateway.hub_search("gguf", limit=1), lambda _f: done(False), failed
        )

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
            lambda found: self._latest(seq, self._search_seq, lambda: self._found(found)),
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

    def _found(self, found) -> None:
        self._set_offline(False)
        self.repos.replace(found)

    def _files_ready(self, seq: int, files) -> None:
        if seq == self._files_seq:
            self._set_offline(False)
            self.files.replace(sorted(files, key=lambda f: f.size))

    def _latest(self, seq: int, current: int, action) -> None:
        if seq == current:
            self.searching.emit(False)
            action()

    def _got_system(self, system: SystemInfo) -> None:
        self.system = system
        self.files.set_system(system)
        self.catalog.set_system(system)
        self.system_changed.emit(system)

    def _set_offline(self, offline: bool) -> None:
        if offline != self.offline:
            self.catalog.set_offline(offline)
            self.offline_changed.emit(offline)

    def _report(self, error: Exception) -> None:
        if isinstance(error, GatewayError) and error.status == _UNREACHABLE:
            self._set_offline(True)
            self.error.emit(OFFLINE)
        else:
            self.error.emit(str(error))
