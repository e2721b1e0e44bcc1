"""The remotes on the Server page: list, add, remove, in workers.

Adding or removing one changes the model list too, and so does a remote listing its models
(the daemon fetches them in the background): each ends with ``models_changed``, which the
services pass on to the library (the Models page and the chat's model picker).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from localllm.app.gui.item_models.remotes import RemotesModel
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.remotes import RemoteStatus
from localllm.app.gui.workers import Job, Workers
from localllm.daemon.api.remotes import RemoteAddRequest

__all__ = ["RemotesService"]


class RemotesService(QObject):
    added = Signal(object)  # RemoteStatus
    add_failed = Signal(str)  # for the Add dialog, which stays open to fix it
    models_changed = Signal()
    error = Signal(str)

    def __init__(self, gateway: Gateway, workers: Workers, parent: QObject | None = None):
        super().__init__(parent)
        self._gateway, self._workers = gateway, workers
        self.table = RemotesModel(self)
        self._listing: Job | None = None

    def refresh(self) -> None:
        if self._listing is None:  # one list at a time: a slow daemon gets no pile-up
            self._listing = self._workers.call(self._gateway.remotes, self._listed, self._failed)

    def add(self, request: RemoteAddRequest) -> None:
        self._workers.call(
            lambda: self._gateway.add_remote(request),
            self._added,
            lambda error: self.add_failed.emit(str(error)),
        )

    def remove(self, name: str) -> None:
        self._workers.call(
            lambda: self._gateway.remove_remote(name), lambda _: self._changed(), self._report
        )

    def _added(self, remote: RemoteStatus) -> None:
        self.table.upsert(remote)
        self.added.emit(remote)
        self._changed()

    def _changed(self) -> None:
        self.models_changed.emit()
        self.refresh()

    def _listed(self, remotes: tuple[RemoteStatus, ...]) -> None:
        self._listing = None
        served = {(r.name, m) for r in self.table.items() for m in r.models}
        self.table.replace(remotes)
        if served != {(r.name, m) for r in remotes for m in r.models}:
            self.models_changed.emit()  # a remote listed its models, or lost some

    def _failed(self, error: Exception) -> None:
        self._listing = None
        self._report(error)

    def _report(self, error: Exception) -> None:
        self.error.emit(str(error))
