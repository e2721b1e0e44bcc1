"""Downloads: a progress bar per pull with bytes, speed and time left; pause, resume, cancel.

Pulls run in the daemon, so they carry on when this window closes and show up here again when
it reopens.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRectF, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from localllm.app.gui.design.widgets import EmptyState, page_palette
from localllm.app.gui.item_models.table import ITEM_ROLE
from localllm.app.gui.services.downloads import DownloadService
from localllm.app.gui.state.downloads import Download
from localllm.app.gui.views.plain_text import confirm, plain_label
from localllm.app.gui.views.record_table import selected_record, table_view

__all__ = ["DownloadsPage", "ProgressDelegate"]


class ProgressDelegate(QStyledItemDelegate):
    """Draws the Progress column as a thin rounded bar in the download's tone (the accent while
    it runs, amber paused, green done, red failed) with its words beside it; a failed or
    finished import has no bar, only its words."""

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> None:
        download: Download = index.data(ITEM_ROLE)
        p = page_palette()
        plain = QStyleOptionViewItem(option)  # the row's own background: hover, chosen
        self.initStyleOption(plain, index)
        plain.text = ""
        widget = option.widget
        if widget is not None:
            item = QStyle.ControlElement.CE_ItemViewItem
            widget.style().drawControl(item, plain, painter, widget)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = option.rect.adjusted(8, 0, -8, 0)
        bar = download.state != "failed" and not (
            download.kind == "import" and download.state == "done"
        )
        if bar:
            track = QRectF(rect.left(), rect.center().y() - 3, rect.width() * 0.4, 6)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(p.surface_alt if not p.dark else p.hover))
            painter.drawRoundedRect(track, 3, 3)
            done = 1.0 if download.state == "done" else download.fraction
            colour = {"done": p.success, "paused": p.warning}.get(download.state, p.accent)
            painter.setBrush(QColor(colour))
            painter.drawRoundedRect(
                QRectF(track.left(), track.top(), track.width() * done, 6), 3, 3
            )
            rect = rect.adjusted(int(track.width()) + 10, 0, 0, 0)
        painter.setPen(QColor(p.danger if download.state == "failed" else p.muted))
        text = option.fontMetrics.elidedText(
            index.data(), Qt.TextElideMode.ElideRight, rect.width()
        )
        painter.drawText(rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)
        painter.restore()


class DownloadsPage(QWidget):
    def __init__(self, downloads: DownloadService, parent=None):
        super().__init__(parent)
        self.downloads = downloads
        self.table = table_view(downloads.table, self)
        self.table.setItemDelegateForColumn(1, ProgressDelegate(self.table))
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Fixed)
        self.table.setColumnWidth(1, 380)
        self.pause = QPushButton("Pause")
        self.resume = QPushButton("Resume")
        self.cancel = QPushButton("Cancel")
        self.clear = clear = QPushButton("Clear finished")
        self.empty = EmptyState(
            "No downloads yet",
            "Pick a model on the Discover page to download it, or import a GGUF file you have "
            "on the Models page. Downloads carry on when this window is closed.",
        )
        self.message = plain_label(objectName="muted", wordWrap=True)  # the daemon's errors
        self.pause.clicked.connect(lambda: self._act(downloads.pause))
        self.resume.clicked.connect(lambda: self._act(downloads.resume))
        self.cancel.clicked.connect(self._cancel)
        clear.clicked.connect(downloads.clear_finished)
        downloads.error.connect(self.message.setText)
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._update_buttons())
        for signal in (
            downloads.table.dataChanged,
            downloads.table.rowsInserted,
            downloads.table.rowsRemoved,
            downloads.table.modelReset,
        ):
            signal.connect(lambda *_: self._update_buttons())

        buttons = QHBoxLayout()
        for b in (self.pause, self.resume, self.cancel):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(clear)
        layout = QVBoxLayout(self)
        title = QLabel("Downloads")
        title.setObjectName("pageTitle")
        layout.addWidget(title)
        about = QLabel(
            "Downloads run in the background service: they continue when this window is closed."
        )
        about.setObjectName("muted")
        layout.addWidget(about)
        layout.addLayout(buttons)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.empty, 1)
        layout.addWidget(self.message)
        self._update_buttons()

    def selected(self) -> Download | None:
        return selected_record(self.table)

    def _update_buttons(self) -> None:
        d = self.selected()
        self.pause.setEnabled(d is not None and d.state in ("queued", "running"))
        self.resume.setEnabled(d is not None and d.state in ("paused", "failed"))
        self.cancel.setEnabled(d is not None and d.active)
        items = self.downloads.state.items()
        self.clear.setEnabled(any(not item.active for item in items))
        self.table.setVisible(bool(items))
        self.empty.setVisible(not items)

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
