"""Per-chat settings: system prompt, temperature, context length, max tokens.

Zero (or "default") means "leave it to the model", so a chat never pins a value the user did
not choose; each says what the model's default is (``set_defaults``). Edits are reported once
the user pauses, not on every keystroke, as the settings alone: the chat they belong to may have
been renamed or given a title since the panel showed it.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QPlainTextEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.gui.state.chat.records import ChatOptions, Conversation
from app.gui.state.model_defaults import ModelDefaults

__all__ = ["ChatSettingsPanel"]


_DEFAULT = "model default"


def _spin(maximum: int, step: int, suffix: str) -> QSpinBox:
    box = QSpinBox(maximum=maximum, singleStep=step, suffix=suffix)
    box.setSpecialValueText(_DEFAULT)
    return box


class ChatSettingsPanel(QWidget):
    changed = Signal(str, str, object)  # conversation id, system prompt, ChatOptions

    def __init__(self, parent=None):
        super().__init__(parent)
        self._conversation: Conversation | None = None
        self._loading = False
        self.system_prompt = QPlainTextEdit(placeholderText="e.g. You are a concise assistant.")
        self.temperature = QDoubleSpinBox(minimum=-0.1, maximum=2.0, singleStep=0.1, decimals=2)
        self.temperature.setSpecialValueText(_DEFAULT)
        self.context = _spin(1_048_576, 1024, " tokens")
        self.max_tokens = _spin(131_072, 256, " tokens")
        self._debounce = QTimer(self, singleShot=True, interval=400)
        self._debounce.timeout.connect(self._emit)
        self.system_prompt.textChanged.connect(self._edited)
        for box in (self.temperature, self.context, self.max_tokens):
            box.valueChanged.connect(self._edited)

        form = QFormLayout()
        form.addRow("Temperature", self.temperature)
        form.addRow("Context length", self.context)
        form.addRow("Max reply tokens", self.max_tokens)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("<b>System prompt</b>"))
        layout.addWidget(self.system_prompt, 1)
        layout.addLayout(form)
        hint = QLabel(
            "Longer context uses more memory; the model reloads when it changes.",
            objectName="muted",
            wordWrap=True,
        )
        layout.addWidget(hint)

    def show_conversation(self, conversation: Conversation | None) -> None:
        self._debounce.stop()
        self._conversation = conversation
        self._loading = True
        options = conversation.options if conversation else ChatOptions()
        self.system_prompt.setPlainText(conversation.system_prompt if conversation else "")
        self.temperature.setValue(-0.1 if options.temperature is None else options.temperature)
        self.context.setValue(options.num_ctx or 0)
        self.max_tokens.setValue(options.num_predict or 0)
        self._loading = False
        self.setEnabled(conversation is not None)

    def set_defaults(self, defaults: ModelDefaults | None) -> None:
        """Say what "model default" means for the chat's model (None: not known yet)."""
        if defaults is None:
            texts = (_DEFAULT,) * 3
        else:
            limit = f"{defaults.reply_limit:,}" if defaults.reply_limit else "no limit"
            texts = (
                f"{_DEFAULT} ({defaults.temperature:g})",
                f"{_DEFAULT} ({defaults.context:,})",
                f"{_DEFAULT} ({limit})",
            )
        for box, text in zip((self.temperature, self.context, self.max_tokens), texts, strict=True):
            box.setSpecialValueText(text)

    def options(self) -> ChatOptions:
        temperature = self.temperature.value()
        return ChatOptions(
            temperature=None if temperature < 0 else round(temperature, 2),
            num_ctx=self.context.value() or None,
            num_predict=self.max_tokens.value() or None,
        )

    def flush(self) -> None:
        """Report a pending edit now (before sending a message)."""
        if self._debounce.isActive():
            self._debounce.stop()
            self._emit()

    def _edited(self) -> None:
        if not self._loading and self._conversation is not None:
            self._debounce.start()

    def _emit(self) -> None:
        if self._conversation is None:
            return
        updated = replace(
            self._conversation,
            system_prompt=self.system_prompt.toPlainText(),
            options=self.options(),
        )
        if updated != self._conversation:
            self._conversation = updated
            self.changed.emit(updated.id, updated.system_prompt, updated.options)
