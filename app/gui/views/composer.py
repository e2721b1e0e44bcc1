"""Where the user types: Enter or Ctrl+Enter sends, Shift+Enter adds a line, Esc stops.

Also the edit-and-resend mode (a banner says what is being edited; Esc leaves it) and image
attachments, offered only when the chat's model can see (its capabilities include "vision").
Attachments are kept as paths; the controller reads them on the disk worker.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.gui.views.plain_text import plain_label

__all__ = ["Composer"]

_IMAGES = "Images (*.png *.jpg *.jpeg *.webp *.gif *.bmp)"
_SEND_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter)


class Composer(QWidget):
    send_requested = Signal(str, object)  # text, tuple[Path, ...]
    edit_requested = Signal(str, str)  # message id, new text
    stop_requested = Signal()

    def __init__(self, icons=None, parent=None):
        super().__init__(parent)
        self._editing: str | None = None
        self._images: list[Path] = []
        self._streaming = False

        self.banner = QLabel(objectName="muted")
        self.banner.hide()
        self.editor = QPlainTextEdit(placeholderText="Message the model…")
        self.editor.setTabChangesFocus(True)
        self.editor.setFixedHeight(76)
        self.editor.installEventFilter(self)
        self.attach = QToolButton(toolTip="Attach images (this model can see)")
        self.attach.setText("Attach")
        self.attach.clicked.connect(self._pick_images)
        self.attach.hide()
        self.attachments = plain_label(objectName="muted")  # file names may hold anything
        self.button = QPushButton("Send")
        self.button.setDefault(True)
        self.button.clicked.connect(self._primary)
        self._icons = icons
        self.retheme()

        row = QHBoxLayout()
        row.addWidget(self.attach)
        row.addWidget(self.editor, 1)
        row.addWidget(self.button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.banner)
        layout.addLayout(row)
        layout.addWidget(self.attachments)
        self._refresh()

    def set_vision(self, enabled: bool) -> None:
        self.attach.setVisible(enabled)
        if not enabled:
            self._images.clear()
        self._refresh()

    def set_streaming(self, streaming: bool) -> None:
        self._streaming = streaming
        self.button.setText("Stop" if streaming else "Send")
        self.retheme()

    def retheme(self) -> None:
        if self._icons is not None:
            self.button.setIcon(self._icons.get("stop" if self._streaming else "send"))
            self.attach.setIcon(self._icons.get("attach"))

    def add_images(self, paths: list[Path]) -> None:
        self._images.extend(Path(p) for p in paths)
        self._refresh()

    def begin_edit(self, message_id: str, text: str) -> None:
        self._editing = message_id
        self.editor.setPlainText(text)
        self.editor.setFocus()
        self._refresh()

    def cancel_edit(self) -> None:
        if self._editing is not None:
            self._editing = None
            self.editor.clear()
            self._refresh()

    def submit(self) -> None:
        """Ask to send; the text stays until the page calls ``clear_sent`` (a refused send,
        say with no model picked, must not eat what the user typed)."""
        text = self.editor.toPlainText().strip()
        if not text or self._streaming:
            return
        if self._editing is not None:
            self.edit_requested.emit(self._editing, text)
        else:
            self.send_requested.emit(text, tuple(self._images))

    def clear_sent(self) -> None:
        self._editing = None
        self._images.clear()
        self.editor.clear()
        self._refresh()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.editor and event.type() == QEvent.Type.KeyPress:
            return self._key(event)
        return super().eventFilter(watched, event)

    def _key(self, event: QKeyEvent) -> bool:
        if event.key() in _SEND_KEYS and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submit()
            return True
        if event.key() == Qt.Key.Key_Escape:
            if self._streaming:
                self.stop_requested.emit()
            else:
                self.cancel_edit()
            return True
        return False

    def _primary(self) -> None:
        if self._streaming:
            self.stop_requested.emit()
        else:
            self.submit()

    def _pick_images(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Attach images", "", _IMAGES)
        self.add_images([Path(p) for p in paths])

    def _refresh(self) -> None:
        editing = self._editing is not None
        self.banner.setText(
            "Editing your message: sending replaces it and everything after it. Esc cancels."
        )
        self.banner.setVisible(editing)
        names = ", ".join(p.name for p in self._images)
        self.attachments.setText(f"Attached: {names}" if names else "")
        self.attachments.setVisible(bool(names))
