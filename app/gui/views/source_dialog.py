"""One cited passage: which file, where in it, the passage itself, and a way to open the file."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
)

from localllm.app.gui.state.chat.attachments import SourceRef
from localllm.app.gui.views.plain_text import plain_label

__all__ = ["SourceDialog"]


class SourceDialog(QDialog):
    def __init__(self, number: int, source: SourceRef, parent=None):
        super().__init__(parent)
        self.source = source
        self.setWindowTitle(f"Source [{number}]: {source.name}")
        self.resize(560, 380)
        self.heading = plain_label(f"[{number}] {source.name}, {source.where}")
        self.heading.setObjectName("heading")
        self.folder = plain_label(str(Path(source.path).parent), objectName="muted")
        self.passage = QPlainTextEdit(source.text, readOnly=True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.open_button = QPushButton("Open file")
        self.open_button.clicked.connect(self.open_file)
        buttons.addButton(self.open_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.folder)
        passage_title = QLabel("The passage the reply was given:")
        passage_title.setObjectName("muted")
        layout.addWidget(passage_title)
        layout.addWidget(self.passage, 1)
        layout.addWidget(buttons)

    def open_file(self) -> bool:
        """In the program the system opens such files with."""
        return QDesktopServices.openUrl(QUrl.fromLocalFile(self.source.path))
