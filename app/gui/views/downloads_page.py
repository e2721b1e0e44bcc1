"""Downloads: a progress bar per pull with bytes, speed and time left; pause, resume, cancel.

Pulls run in the daemon, so they carry on when this window closes and show up here again when
it reopens.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionProgressBar,
    QVBoxLayout,
    QWidget,
)

from app.gui.item_models.table import ITEM_ROLE
from app.gui.services.downloads import DownloadService
from app.gui.state.downloads import Download
from app.gui.views.plain_text import confirm, plain_label
from app.gui.views.record_table import selected_record, table_view

__all__ = ["DownloadsPage", "ProgressDelegate"]


class ProgressDelegate(QStyledItemDelegate):
    """Draws the Progress column as a bar with its text on it."""

    def paint(self, painter, option, index: QModelIndex) -> None:
        download: Download = index.data(ITEM_ROLE)
        bar = QStyleOptionProgressBar()
        bar.rect = option.rect.adjusted(2, 3, -2, -3)
        bar.minimum, bar.maximum = 0, 1000
        done = download.state == "done"
        bar.progress = 1000 if done else int(download.fraction * 1000)
        bar.text = index.data()
        bar.textVisible = True
        bar.state = option.state | QStyle.StateFlag.State_Horizontal  # else drawn vertical
        style = option.widget.style() if option.widget else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ProgressBar, bar, painter)


class DownloadsPage(QWidget):
    def __init__(self, downloads: DownloadService, parent=None):
        super().__init__(parent)
        self.downloads = downloads
        self.table = table_view(downloads.table, self)
        self.table.setItemDelegateForColumn(1, ProgressDelegate(self.table))
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Fixed)
        self.table.setColumnWidth(1, 300)
        self.pause = QPushButton("Pause")
        self.resume = QPushButton("Resume")
        self.cancel = QPushButton("Cancel")
        clear = QPushButton("Clear finished")
        self.message = plain_label(objectName="muted", wordWrap=True)  # the daemon's errors
        self.pause.clicked.connect(lambda: self._act(downloads.pause))
        self.resume.clicked.connect(lambda: self._act(downloads.resume))
        self.cancel.clicked.connect(self._cancel)
        clear.clicked.connect(downloads.clear_finished)
        downloads.error.connect(self.message.setText)
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._update_buttons())
        downloads.table.dataChanged.connect(lambda *_: self._update_buttons())

        buttons = QHBoxLayout()
        for b in (self.pause, self.resume, self.cancel):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(clear)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Downloads", objectName="pageTitle"))
        layout.addWidget(
            QLabel(
                "Downloads run in the background service: they continue "
                "when this window is closed.",
                objectName="muted",
            )
        )
        layout.addLayout(buttons)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.message)
        self._update_buttons()

    def selected(self) -> Download | None:
        return selected_record(self.table)

    def _update_buttons(self) -> None:
        d = self.selected()
        self.pause.setEnabled(d is not None and d.state in ("queued", "running"))
        self.resume.setEnabled(d is not None and d.state in ("paused", "failed"))
        self.cancel.setEnabled(d is not None and d.active)

    def _act(self, action) -> None:
        d = self.selected()
        if d is not None:
            action(d.name)

    def _cancel(self) -> None:
        d = self.selected()
        if d is None:
            return
        question = f"Stop downloading {d.name} and delete what was fetched?"
        if confirm(self, "Cancel download", question):
            self.downloads.cancel(d.name)
