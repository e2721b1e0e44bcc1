"""Presets for the window: the list in memory at once, the file written on the disk worker.

Each change replaces the whole list (``Presets`` is immutable) and queues one write of it; the
disk worker runs writes in order, so the file always ends up as the last list shown.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from localllm.app.gui.state.presets import Preset, Presets, PresetStore
from localllm.app.gui.workers import Workers

__all__ = ["PresetService"]


class PresetService(QObject):
    changed = Signal(object)  # Presets
    error = Signal(str)

    def __init__(self, path: Path, disk: Workers, parent: QObject | None = None):
        super().__init__(parent)
        self._store = PresetStore(path)
        self._disk = disk
        self.presets = Presets()

    def load(self) -> None:
        self._disk.call(self._store.load, self._loaded, self._report)

    def save(self, preset: Preset) -> None:
        self._replace(self.presets.saved(preset))

    def delete(self, name: str) -> None:
        self._replace(self.presets.deleted(name))

    def _replace(self, presets: Presets) -> None:
        self.presets = presets
        self.changed.emit(presets)
        self._disk.call(lambda: self._store.save(presets), None, self._report)

    def _loaded(self, presets: Presets) -> None:
        for preset in self.presets:  # saved before the file was read (its write comes later)
            presets = presets.saved(preset)
        self.presets = presets
        self.changed.emit(presets)

    def _report(self, error: Exception) -> None:
        self.error.emit(str(error))
