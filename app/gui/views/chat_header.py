"""The chat's header: the Chats button (shown where the chat list is folded away), the model
picker, what the model can do (badges: sees images, thinks, uses tools), how full the context
is, and the button that opens the chat's settings."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QWidget

from localllm.app.gui.design.widgets import badge, icon_button
from localllm.app.gui.state.records import ModelDetails
from localllm.app.gui.views.context_meter import ContextMeter

__all__ = ["ChatHeader"]


class ChatHeader(QWidget):
    def __init__(self, models, icons=None, parent=None):
        """``models``: the installed models' table (the picker's list)."""
        super().__init__(parent)
        self._icons = icons
        self.model_picker = QComboBox(
            placeholderText="Pick a model", minimumWidth=160, accessibleName="Model"
        )
        self.model_picker.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.model_picker.setMinimumContentsLength(18)
        self.model_picker.setModel(models)
        self.model_picker.setCurrentIndex(-1)
        self.vision_badge = badge("sees images", "info")
        self.thinking_badge = badge("thinks", "accent", "It reasons before it answers (Think)")
        self.tools_badge = badge("uses tools", "accent", "It can call the Tools page's servers")
        self.context_meter = ContextMeter()
        self.settings_button = icon_button(
            icons, "chat-settings", "Chat settings", "System prompt and parameters"
        )
        self.settings_button.setCheckable(True)
        self.list_button = icon_button(icons, "chat", "Chats", "Show the chat list")
        self.list_button.setCheckable(True)
        self.list_button.hide()  # while the list has a column of its own
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.list_button)
        row.addWidget(self.model_picker)
        for shown in (self.vision_badge, self.thinking_badge, self.tools_badge):
            row.addWidget(shown)
        row.addWidget(self.context_meter, 1)
        row.addWidget(self.settings_button)
        self.show_abilities(None)

    def show_abilities(self, details: ModelDetails | None) -> None:
        """The badges of the chat's model (None: not known yet, so none)."""
        self.vision_badge.setVisible(details is not None and details.has_vision)
        self.thinking_badge.setVisible(details is not None and details.has_thinking)
        self.tools_badge.setVisible(details is not None and "tools" in details.capabilities)

    def retheme(self) -> None:
        if self._icons is not None:
            self.settings_button.setIcon(self._icons.get("chat-settings"))
            self.list_button.setIcon(self._icons.get("chat"))
