"""The long-chat notice above the message box (``state.chat.memory_notice``): one line saying
the chat has outgrown its context, and buttons for what to do ("Drop the oldest messages",
"Use 8,192 tokens"). Hidden when there is nothing to say."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from app.gui.state.chat.memory_notice import MemoryNotice
from app.gui.views.plain_text import plain_label

__all__ = ["MemoryNoticeBar"]

_INFO = "color: #b45309;"  # the divider's amber


class MemoryNoticeBar(QWidget):
    drop_requested = Signal()
    context_requested = Signal(int)  # the context length to use

    def __init__(self, parent=None):
        super().__init__(parent)
        self.label = plain_label(objectName="problem", wordWrap=True)
        self.drop = QPushButton(
            "Drop the oldest messages",
            toolTip="From now on this chat keeps the system prompt and the latest messages "
            "that fit, and answers again",
        )
        self.larger = QPushButton(toolTip="Set this chat's Context length (uses more memory)")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.drop)
        layout.addWidget(self.larger)
        self.drop.clicked.connect(self.drop_requested)
        self.larger.clicked.connect(self._larger_clicked)
        self._larger = 0
        self.show_notice(None)

    def show_notice(self, notice: MemoryNotice | None) -> None:
        self.setVisible(notice is not None)
        if notice is None:
            return
        self.label.setText(notice.text)
        # a reply that failed is a problem (red); a chat that goes on is only worth knowing
        self.label.setStyleSheet("" if notice.offer_drop else _INFO)
        self.drop.setVisible(notice.offer_drop)
        self._larger = notice.larger or 0
        self.larger.setText(notice.larger_label)
        self.larger.setVisible(bool(notice.larger))

    def _larger_clicked(self) -> None:
        if self._larger:
            self.context_requested.emit(self._larger)
