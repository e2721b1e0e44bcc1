"""Models already on this computer: the daemon's list of what it found, and adding one, in
workers so the window never waits on a scan or on hashing a few gigabytes."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from localllm.app.gui.state.found_models import FoundModel, ImportStep
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.workers import Workers
from localllm.daemon.api.local_models import ImportMode

__all__ = ["FoundModels"]


class FoundModels(QObject):
    changed = Signal(object)  # tuple[FoundModel, ...]
    progress = Signal(str, object)  # the model's name, ImportStep
    added = Signal(str)  # the model's name, once it is in the store
    error = Signal(str)

    def __init__(self, gateway: Gateway, workers: Workers, parent: QObject | None = None):
        super().__init__(parent)
        self._gateway, self._workers = gateway, workers
        self.models: tuple[FoundModel, ...] = ()
        self.adding: set[str] = set()  # names being added now
        self.scanning = False

    def refresh(self) -> None:
        if self.scanning:
            return
        self.scanning = True
        self._workers.call(self._gateway.local_models, self._listed, self._failed)

    def add(self, model: FoundModel, mode: ImportMode = "auto") -> None:
        """``auto`` links where the store's file system allows, else copies."""
        if model.name in self.adding:
            return
        self.adding.add(model.name)
        self._workers.stream(
            lambda: self._gateway.import_found(model.path, model.name, mode),
            lambda step: self._step(model.name, step),
            lambda _: self._done(model.name),
            lambda error: self._add_failed(model.name, error),
        )

    def _listed(self, models: tuple[FoundModel, ...]) -> None:
        self.scanning = False
        self.models = models
        self.changed.emit(models)

    def _failed(self, error: Exception) -> None:
        self.scanning = False
        self.error.emit(str(error))

    def _step(self, name: str, step: ImportStep) -> None:
        self.progress.emit(name, step)

    def _done(self, name: str) -> None:
        self.adding.discard(name)
        self.added.emit(name)
        self.refresh()

    def _add_failed(self, name: str, error: Exception) -> None:
        self.adding.discard(name)
        self.error.emit(f"{name}: {error}")
        self.refresh()
