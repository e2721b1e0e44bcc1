"""The long-chat notice above the message box (``state.chat.memory_notice``): a banner saying
the chat has outgrown its context, and buttons for what to do ("Drop the oldest messages",
"Use 8,192 tokens"). Amber while the chat goes on, red when a reply failed for it; hidden
when there is nothing to say."""

from __future__ import annotations

from PySide6.QtCore import Signal

from localllm.app.gui.design.widgets import Banner
from localllm.app.gui.state.chat.memory_notice import MemoryNotice

__all__ = ["MemoryNoticeBar"]


class MemoryNoticeBar(Banner):
    drop_requested = Signal()
    context_requested = Signal(int)  # the context length to use

    def __init__(self, icons=None, parent=None):
        super().__init__(icons, dismissible=False, tone="warning", parent=parent)
        self.drop = self.add_action("Drop the oldest messages", self.drop_requested.emit)
        self.drop.setToolTip(
            "From now on this chat keeps the system prompt and the latest messages "
            "that fit, and answers again"
        )
        self.larger = self.add_action("", self._larger_clicked)
        self.larger.setToolTip("Set this chat's Context length (uses more memory)")
        self.finish_actions()
        self._larger = 0
        self.show_notice(None)

    def show_notice(self, notice: MemoryNotice | None) -> None:
        if notice is None:
            self.show_text("")
            return
        # a reply that failed is a problem (red); a chat that goes on is only worth knowing
        self.show_text(notice.text, "danger" if notice.offer_drop else "warning")
        self.drop.setVisible(notice.offer_drop)
        self._larger = notice.larger or 0
        self.larger.setText(notice.larger_label)
        self.larger.setVisible(bool(notice.larger))

    def _larger_clicked(self) -> None:
        if self._larger:
            self.context_requested.emit(self._larger)
