"""Where the user types: one rounded box that grows with its text (up to a few lines, then
it scrolls), with its tools inside it: attach images (offered only when the chat's model can
see: its capabilities include "vision"), the microphone (``set_voice``: its row shows while it
listens or transcribes), the chat's documents and tools (``add_tool``), and the round send
button, which stops a reply while one is coming. Enter or Ctrl+Enter sends, Shift+Enter adds a
line, Esc stops a recording, else a reply.

Also the edit-and-resend mode (a line says what is being edited; Esc leaves it). Attachments
are kept as paths; the controller reads them on the disk worker.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QSize, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from localllm.app.gui.design.tokens import SPACE
from localllm.app.gui.design.widgets import icon_button, set_kind
from localllm.app.gui.icons import Icons
from localllm.app.gui.views.file_dialogs import open_file_names
from localllm.app.gui.views.plain_text import plain_label
from localllm.app.gui.views.voice_input import VoiceInput

__all__ = ["Composer"]

_IMAGES = "Images (*.png *.jpg *.jpeg *.webp *.gif *.bmp)"
_SEND_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter)
_LINES = (1, 8)  # the editor grows from one line to this many, then scrolls


class Composer(QWidget):
    send_requested = Signal(str, object)  # text, tuple[Path, ...]
    edit_requested = Signal(str, str)  # message id, new text
    stop_requested = Signal()

    def __init__(self, icons: Icons | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._editing: str | None = None
        self._images: list[Path] = []
        self._streaming = False
        self.voice: VoiceInput | None = None

        self.banner = QLabel()
        self.banner.setObjectName("caption")
        self.banner.hide()
        self.editor = QPlainTextEdit(placeholderText="Message the model…")
        self.editor.setObjectName("composerEditor")
        self.editor.setAccessibleName("Message")
        self.editor.setTabChangesFocus(True)
        self.editor.setFrameShape(QFrame.Shape.NoFrame)
        self.editor.installEventFilter(self)
        self.editor.document().documentLayout().documentSizeChanged.connect(lambda _s: self._grow())
        self.attach = icon_button(
            icons,
            "attach",
            "Attach images",
            "Attach images (this model can see)",
            self._pick_images,
        )
        self.attach.setText("Attach")
        self.attach.hide()
        self.attachments = plain_label(objectName="caption")  # file names may hold anything
        self.button = QToolButton()
        self.button.setAccessibleName("Send")
        self.button.setToolTip("Send (Enter)")
        self.button.setText("Send")
        self.button.setIconSize(QSize(18, 18))
        set_kind(self.button, "send")
        self.button.clicked.connect(self._primary)
        self._icons = icons
        self.retheme()

        self.box = QFrame()
        self.box.setObjectName("composer")
        self.tools = QHBoxLayout()
        self.tools.setSpacing(SPACE.xs)
        self.tools.addWidget(self.attach)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addLayout(self.tools)
        row.addStretch(1)
        row.addWidget(self.button)
        inside = QVBoxLayout(self.box)
        inside.setContentsMargins(SPACE.md, SPACE.sm, SPACE.sm, SPACE.sm)
        inside.setSpacing(SPACE.xs)
        inside.addWidget(self.banner)
        self._rows = inside  # the microphone's row goes above the editor
        inside.addWidget(self.attachments)
        inside.addWidget(self.editor)
        inside.addLayout(row)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.box)
        self._grow()
        self._refresh()

    def add_tool(self, widget: QWidget) -> None:
        """A control for this chat inside the box, after Attach (documents, tools)."""
        self.tools.addWidget(widget)

    def set_voice(self, voice: VoiceInput) -> None:
        """The microphone after Attach, and its row (level, time, errors) above the text."""
        self.voice = voice
        self.tools.insertWidget(1, voice.button)
        self._rows.insertWidget(self._rows.indexOf(self.editor), voice)

    def _grow(self) -> None:
        lines = self.editor.document().documentLayout().documentSize().height()
        shown = max(_LINES[0], min(_LINES[1], int(lines)))
        margins = self.editor.contentsMargins()
        frame = 2 * self.editor.document().documentMargin() + margins.top() + margins.bottom() + 6
        self.editor.setFixedHeight(int(shown * self.editor.fontMetrics().lineSpacing() + frame))

    def set_vision(self, enabled: bool) -> None:
        self.attach.setVisible(enabled)
        if not enabled:
            self._images.clear()
        self._refresh()

    def set_streaming(self, streaming: bool) -> None:
        self._streaming = streaming
        self.button.setText("Stop" if streaming else "Send")
        self.button.setAccessibleName(self.button.text())
        self.button.setToolTip("Stop the reply (Esc)" if streaming else "Send (Enter)")
        self.retheme()

    def retheme(self) -> None:
        if self._icons is not None:
            name = "stop" if self._streaming else "send"
            self.button.setIcon(self._icons.get(name, "#ffffff"))
            self.button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
            self.attach.setIcon(self._icons.get("attach"))
            self.attach.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)

    def add_images(self, paths: list[Path]) -> None:
        self._images.extend(Path(p) for p in paths)
        self._refresh()

    def begin_edit(self, message_id: str, text: str) -> None:
        self._editing = message_id
        self.editor.setPlainText(text)
        self.editor.setFocus()
        self._refresh()

    @property
    def editing(self) -> bool:
        return self._editing is not None

    @property
    def streaming(self) -> bool:
        return self._streaming

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
        if (
            watched is self.editor
            and isinstance(event, QKeyEvent)
            and event.type() == QEvent.Type.KeyPress
        ):
            return self._key(event)
        if watched is self.editor and event.type() in (QEvent.Type.FocusIn, QEvent.Type.FocusOut):
            self.box.setProperty("focused", "true" if event.type() == QEvent.Type.FocusIn else "")
            self.box.style().polish(self.box)
        return super().eventFilter(watched, event)

    def _key(self, event: QKeyEvent) -> bool:
        if event.key() in _SEND_KEYS and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submit()
            return True
        if event.key() == Qt.Key.Key_Escape:
            self._escape()
            return True
        return False

    def _escape(self) -> None:
        """Esc stops a recording, else a reply, else leaves the edit."""
        if self.voice is not None and self.voice.stop():
            return
        if self._streaming:
            self.stop_requested.emit()
        else:
            self.cancel_edit()

    def _primary(self) -> None:
        if self._streaming:
            self.stop_requested.emit()
        else:
            self.submit()

    def _pick_images(self) -> None:
        paths, _ = open_file_names(self, "Attach images", _IMAGES)
        self.add_images([Path(p) for p in paths])

    def _refresh(self) -> None:
        editing = self._editing is not None
        self.banner.setText(
            "Editing your message: sending makes a new version of it; this one and what "
            "followed it stay, a click on its arrows away. Esc cancels."
        )
        self.banner.setVisible(editing)
        names = ", ".join(p.name for p in self._images)
        self.attachments.setText(f"Attached: {names}" if names else "")
        self.attachments.setVisible(bool(names))
