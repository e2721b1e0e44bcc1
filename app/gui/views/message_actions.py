"""The buttons of one message, shown over its footer while the pointer is on it or the keyboard
picked it (Alt+Up and Alt+Down in the conversation, then Tab): Copy, Read aloud (an answer,
while a voice is installed: ``can_read``), Edit, Regenerate (or Answer), Delete, and the version
switcher beside them, last (where the footer shows it): a reply's, or an edited question's. Each
has a screen-reader name and a tooltip; the transcript decides where they go and what they act
on."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

from localllm.app.gui.design.widgets import icon_button
from localllm.app.gui.icons import Icons
from localllm.app.gui.state.chat.records import Message
from localllm.app.gui.state.chat.transcript_actions import (
    CopyMessage,
    DeleteMessage,
    EditMessage,
    ReadAloud,
    Regenerate,
    ShowVersion,
)

__all__ = ["MessageActions"]


class MessageActions(QFrame):
    triggered = Signal(object)  # the typed action (``transcript_actions``): CopyMessage, ...

    def __init__(self, icons: Icons | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("messageActions")
        self.setAutoFillBackground(True)
        self.message_id = ""
        self.can_read = False  # a voice is installed to read answers aloud
        self._icons = icons
        self.back = icon_button(icons, "back", "Previous version", on_click=lambda: self._go(-1))
        self.version = QLabel()
        self.version.setObjectName("caption")
        self.ahead = icon_button(icons, "forward", "Next version", on_click=lambda: self._go(1))
        self.copy = icon_button(
            icons, "copy", "Copy", "Copy the message", lambda: self._do(CopyMessage)
        )
        self.read = icon_button(
            icons, "read-aloud", "Read aloud", "Read the answer aloud", lambda: self._do(ReadAloud)
        )
        self.edit = icon_button(
            icons,
            "edit",
            "Edit",
            "Send it changed; this version stays",
            lambda: self._do(EditMessage),
        )
        self.regenerate = icon_button(
            icons,
            "regenerate",
            "Regenerate",
            "Write a new version",
            lambda: self.triggered.emit(Regenerate()),
        )
        self.delete = icon_button(
            icons, "delete", "Delete", "Delete the message", lambda: self._do(DeleteMessage)
        )
        row = QHBoxLayout(self)
        row.setContentsMargins(2, 1, 4, 1)
        row.setSpacing(2)
        for widget in (
            self.copy,
            self.read,
            self.edit,
            self.regenerate,
            self.delete,
            self.back,
            self.version,
            self.ahead,
        ):
            row.addWidget(widget, 0, Qt.AlignmentFlag.AlignVCenter)
        self._message: Message | None = None
        self.hide()

    def buttons(self) -> list[QToolButton]:
        """The ones shown, in order (what Tab goes through)."""
        every = [self.copy, self.read, self.edit, self.regenerate, self.delete]
        every += [self.back, self.ahead]
        return [b for b in every if not b.isHidden()]

    def show_for(self, message: Message, last: bool, streaming: bool) -> None:
        """The buttons that apply to ``message`` (the conversation's ``last`` one or not)."""
        self._message, self.message_id = message, message.id
        versions = len(message.others) + 1
        for widget in (self.back, self.version, self.ahead):
            widget.setVisible(versions > 1)
        self.version.setText(f"{message.version + 1}/{versions}")
        self.back.setEnabled(message.version > 0 and not streaming)
        self.ahead.setEnabled(message.version < versions - 1 and not streaming)
        self.edit.setVisible(message.role == "user")
        answer = message.role == "assistant" and bool(message.content) and not message.failed
        self.read.setVisible(answer and self.can_read)
        reply = message.role == "assistant" and last and not message.failed
        self.regenerate.setVisible(reply)
        for button in (self.edit, self.regenerate, self.delete):
            button.setEnabled(not streaming)
        self.adjustSize()

    def retheme(self) -> None:
        if self._icons is not None:
            for button in (
                self.back,
                self.ahead,
                self.copy,
                self.read,
                self.edit,
                self.regenerate,
                self.delete,
            ):
                button.setIcon(self._icons.get(button.property("icon_name")))

    def _do(self, action: type[CopyMessage | ReadAloud | EditMessage | DeleteMessage]) -> None:
        self.triggered.emit(action(self.message_id))

    def _go(self, step: int) -> None:
        if self._message is not None and self._message.version + step >= 0:
            self.triggered.emit(ShowVersion(self.message_id, self._message.version + step))
