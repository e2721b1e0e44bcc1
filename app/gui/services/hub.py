"""Discover: the curated catalog, searching the hub, a repository's GGUF files, each judged
against this machine.

The catalog comes from the daemon without the internet, so it is there even offline; a hub
call that cannot reach Hugging Face marks the page offline (one plain sentence) until a hub
call succeeds again. Search results can come back out of order when the user types fast; each
request carries a number and only the newest answer is shown.

Whether a quant fits is the daemon's memory plan of it (``/api/plan``: it reads the file's
header on the hub, a few megabytes), asked for the rows a page shows (``plan_files``,
``plan_catalog``) and once per file: a guess from the file size stands until it comes.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QObject, Signal

from localllm.app.gui.item_models.daemon_tables import (
    CatalogTableModel,
    HubFilesModel,
    HubReposModel,
)
from localllm.app.gui.state.gateway import Gateway, GatewayError
from localllm.app.gui.state.preferences import DEFAULT_CONTEXT
from localllm.app.gui.state.records import HubFile, ModelPlan, SystemInfo
from localllm.app.gui.workers import Workers

__all__ = ["OFFLINE", "OFFLINE_BANNER", "HubService"]

# Discover's line offline; the window's banner says what needs the internet (once)
OFFLINE = "This computer could not reach Hugging Face: the search looks through the built-in list."
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
    catalog_planned = Signal(str, object)  # a catalog name, its ModelPlan

    def __init__(self, gateway: Gateway, workers: Workers, parent: QObject | None = None):
        super().__init__(parent)
        self._gateway, self._workers = gateway, workers
        self.catalog = CatalogTableModel(self)
        self.repos = HubReposModel(self)
        self.files = HubFilesModel(self)
        self.system: SystemInfo | None = None
        self.plan_context = DEFAULT_CONTEXT  # the context chats ask for (0: the daemon's)
        self._search_seq = 0
        self._files_seq = 0
        self._checking = False
        self._repo = ""  # whose files are listed
        self._planning: set[tuple[str, str]] = set()  # (repo, file or catalog name) asked
        self._wanted: set[str] = set()  # catalog names to plan once the catalog is in

    @property
    def offline(self) -> bool:
        return self.catalog.offline

    def load_system(self) -> None:
        self._workers.call(self._gateway.system, self._got_system, lambda _e: None)

    def load_catalog(self) -> None:
        def got(found) -> None:
            self.catalog.replace(sorted(found, key=lambda m: m.size))
            self.plan_catalog(self._wanted)

        self._workers.call(self._gateway.hub_catalog, got, lambda _e: None)

    def plan_files(self, files: Iterable[HubFile]) -> None:
        """Ask for the plans of these files of the listed repository (once each)."""
        repo, seq = self._repo, self._files_seq
        for file in files:
            if (repo, file.file) in self._planning:
                continue
            self._planning.add((repo, file.file))
            self._plan_file(repo, file.file, seq)

    def plan_catalog(self, names: Iterable[str]) -> None:
        """Ask for the plans of these catalog models (once each); those not in the catalog
        yet are asked for when it comes."""
        for name in names:
            row = self.catalog.row_of(name)
            if row is None:
                self._wanted.add(name)
                continue
            entry = self.catalog.item(row)
            if ("catalog", name) in self._planning or not (entry.repo and entry.quant):
                continue
            self._planning.add(("catalog", name))
            self._plan_catalog_entry(name, entry.repo, entry.quant)

    def _plan_file(self, repo: str, file: str, seq: int) -> None:
        self._workers.call(
            lambda: self._gateway.hub_plan(repo, file, options=self._options()),
            lambda plan: self._file_planned(seq, file, plan),
            lambda _e: None,  # the guess from the file size stays
        )

    def _plan_catalog_entry(self, name: str, repo: str, quant: str) -> None:
        self._workers.call(
            lambda: self._gateway.hub_plan(repo, quant=quant, options=self._options()),
            lambda plan: self._catalog_planned(name, plan),
            lambda _e: self._planning.discard(("catalog", name)),  # asked again later
        )

    def _options(self) -> dict[str, int]:
        return {"num_ctx": self.plan_context} if self.plan_context else {}

    def _file_planned(self, seq: int, file: str, plan: ModelPlan) -> None:
        if seq == self._files_seq:
            self.files.set_plan(file, plan)

    def _catalog_planned(self, name: str, plan: ModelPlan) -> None:
        self.catalog.set_plan(name, plan)
        self.catalog_planned.emit(name, plan)

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
        self._repo = repo
        self.files.replace(())
        self.files.clear_plans()
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
