"""Discover: search Hugging Face for GGUF models, see each quant's size and whether it fits
this machine, and pull it.

Typing searches after a short pause; picking a repository lists its files, smallest first,
each with its badge ("fits in VRAM", "fits in RAM", "too large").
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.gui.services.hub import HubService
from app.gui.state.records import HubFile, SystemInfo
from app.gui.state.units import bytes_text
from app.gui.views.plain_text import plain_label
from app.gui.views.record_table import selected_record, table_view

__all__ = ["DiscoverPage"]


def _machine(system: SystemInfo) -> str:
    gpus = ", ".join(f"{g.name} {bytes_text(g.vram_total)}" for g in system.gpus) or "no GPU"
    return f"This computer: {bytes_text(system.ram_total)} RAM · {gpus}"


class DiscoverPage(QWidget):
    pull_requested = Signal(str)

    def __init__(self, hub: HubService, parent=None):
        super().__init__(parent)
        self.hub = hub
        self.query = QLineEdit(
            placeholderText="Search Hugging Face for GGUF models, e.g. qwen",
            clearButtonEnabled=True,
        )
        self.machine = plain_label(objectName="muted")  # GPU names, as the daemon reports them
        self.state = plain_label(objectName="muted")  # the hub's errors
        self.repos = table_view(hub.repos, self, stretch=0)
        self.files = table_view(hub.files, self)
        self.files.sortByColumn(1, Qt.SortOrder.AscendingOrder)
        self.pull_button = QPushButton("Download")
        self.pull_button.setEnabled(False)
        self._debounce = QTimer(self, singleShot=True, interval=400)
        self._debounce.timeout.connect(self.search_now)
        self.query.textChanged.connect(self._debounce.start)
        self.query.returnPressed.connect(self.search_now)
        self.repos.selectionModel().selectionChanged.connect(lambda *_: self._open_repo())
        self.files.selectionModel().selectionChanged.connect(lambda *_: self._file_selected())
        self.files.doubleClicked.connect(lambda _i: self._pull())
        self.pull_button.clicked.connect(self._pull)
        hub.searching.connect(lambda busy: self.state.setText("Searching…" if busy else ""))
        hub.error.connect(self.state.setText)
        hub.system_changed.connect(lambda s: self.machine.setText(_machine(s)))

        right = QWidget()
        column = QVBoxLayout(right)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.files, 1)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.pull_button)
        column.addLayout(row)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.repos)
        splitter.addWidget(right)
        splitter.setSizes([520, 480])
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Discover", objectName="pageTitle"))
        layout.addWidget(self.query)
        layout.addWidget(self.machine)
        layout.addWidget(self.state)
        layout.addWidget(splitter, 1)

    def search_now(self) -> None:
        self._debounce.stop()
        self.hub.search(self.query.text())

    def selected_file(self) -> HubFile | None:
        return selected_record(self.files)

    def _open_repo(self) -> None:
        repo = selected_record(self.repos)
        if repo is not None:
            self.hub.open_repo(repo.repo)

    def _file_selected(self) -> None:
        f = self.selected_file()
        self.pull_button.setEnabled(f is not None)
        if f is not None:
            self.pull_button.setText(f"Download {f.quant or f.file} ({bytes_text(f.size)})")

    def _pull(self) -> None:
        f = self.selected_file()
        if f is not None:
            self.pull_requested.emit(f.name_to_pull)
