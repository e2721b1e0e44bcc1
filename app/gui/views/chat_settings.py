"""Per-chat settings: a preset, the system prompt, temperature, context length, max tokens,
and the Advanced section (sampling, seed, GPU offload).

Zero (or "default") means "leave it to the model", so a chat never pins a value the user did
not choose; each says what the model's default is (``set_defaults``). Edits are reported once
the user pauses, not on every keystroke, as the settings alone: the chat they belong to may have
been renamed or given a title since the panel showed it. A preset is a named copy of these
settings: picking one fills them in at once; the list shows which preset the chat's settings
match, if any. The panel also knows the chat's model, for the notice shown in the chat when the
model has no chat template, and for the Think setting, offered only for a model that thinks (a
chat moved to one that does not drops its setting). Under the context it says what the model
would take in memory with these settings, and in Advanced how many of its layers go on the GPU,
as the daemon plans it: every edit is told at once (``options_edited``), and the window asks
for the plan once the user pauses (``services.setting_plan``).
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from localllm.app.gui.design.widgets import Banner, padded_number
from localllm.app.gui.icons import Icons
from localllm.app.gui.state.chat.memory import OVERFLOW_CHOICES
from localllm.app.gui.state.chat.records import ChatOptions, Conversation
from localllm.app.gui.state.chat.thinking import THINK_CHOICES
from localllm.app.gui.state.fit import GpuLayers
from localllm.app.gui.state.model_defaults import ModelDefaults
from localllm.app.gui.state.presets import Preset, PresetError, Presets, preset_name
from localllm.app.gui.state.records import ModelDetails, SystemInfo
from localllm.app.gui.state.setting_plan import PlanPreview
from localllm.app.gui.views.advanced_settings import AdvancedSettings, settings_form
from localllm.app.gui.views.plain_text import plain_label

__all__ = ["ChatSettingsPanel", "no_template_notice"]

NO_PRESET = "No preset"
_DEFAULT = "model default"


def _spin(maximum: int, step: int, suffix: str) -> QSpinBox:
    box = QSpinBox(maximum=maximum, singleStep=step, suffix=suffix)
    box.setSpecialValueText(_DEFAULT)
    padded_number(box)
    return box


def no_template_notice(model: str) -> str:
    """One line in the chat (it asks nothing of the user); the rest is in its tooltip."""
    return (
        f"{model} has no chat template: a completion (base) model, made to continue text, so "
        "replies may wander; its instruct or chat version answers better."
    )


class ChatSettingsPanel(QWidget):
    changed = Signal(str, str, object)  # conversation id, system prompt, ChatOptions
    preset_saved = Signal(object)  # Preset
    preset_deleted = Signal(str)
    think_changed = Signal(str, str)  # conversation id, its Think setting (THINK_CHOICES)
    overflow_changed = Signal(str, str)  # conversation id, its Long chats choice
    options_edited = Signal(object)  # ChatOptions, at every edit (before the pause)

    def __init__(self, parent: QWidget | None = None, icons: Icons | None = None) -> None:
        super().__init__(parent)
        self._conversation: Conversation | None = None
        self._loading = False
        self._presets = Presets()
        self._system: SystemInfo | None = None
        self._layers: GpuLayers | None = None  # where the plan of these settings puts them
        self.preset = QComboBox()
        self.preset.setToolTip("Named settings to use in any chat")
        self.save_preset = QPushButton("Save as…")
        self.save_preset.setToolTip("Keep these settings as a preset")
        self.delete_preset = QPushButton("Delete")
        self.delete_preset.setToolTip("Forget the chosen preset")
        self.system_prompt = QPlainTextEdit(placeholderText="e.g. You are a concise assistant.")
        self.temperature = QDoubleSpinBox(minimum=-0.1, maximum=2.0, singleStep=0.1, decimals=2)
        self.temperature.setSpecialValueText(_DEFAULT)
        padded_number(self.temperature)
        self.context = _spin(1_048_576, 1024, " tokens")
        self.max_tokens = _spin(131_072, 256, " tokens")
        self.think = QComboBox()
        self.think.setToolTip(
            "Whether the model reasons before it answers. Low, medium and high set "
            "the effort of a model that has one (gpt-oss); others just think."
        )
        for value, label in THINK_CHOICES:
            self.think.addItem(label, value)
        self.overflow = QComboBox()
        self.overflow.setToolTip(
            "When the chat grows past the Context length: drop the oldest messages "
            "(the system prompt stays), stop with an error, or let the model summarize them"
        )
        for value, label in OVERFLOW_CHOICES:
            self.overflow.addItem(label, value)
        self.advanced = AdvancedSettings()
        self.problem = plain_label(objectName="problem", wordWrap=True)
        self.problem.hide()
        self.memory = plain_label(objectName="muted", wordWrap=True)  # the daemon's plan
        # shown in the chat itself (the chat page places it), not in this panel
        self.model_notice = Banner(icons, shape="line")  # names the model: plain text

        self._debounce = QTimer(self, singleShot=True, interval=400)
        self._debounce.timeout.connect(self._emit)
        self.system_prompt.textChanged.connect(self._edited)
        for box in (self.temperature, self.context, self.max_tokens):
            box.valueChanged.connect(self._edited)
        self.advanced.edited.connect(self._edited)
        self.think.activated.connect(self._think_picked)
        self.overflow.activated.connect(self._overflow_picked)
        self.preset.activated.connect(self._pick)
        self.save_preset.clicked.connect(self._ask_preset_name)
        self.delete_preset.clicked.connect(self._delete_preset)
        self._build()
        self.set_presets(Presets())

    def _build(self) -> None:
        presets = QHBoxLayout()
        presets.addWidget(self.save_preset)
        presets.addWidget(self.delete_preset)
        presets.addStretch(1)
        form = settings_form()
        form.addRow("Temperature", self.temperature)
        form.addRow("Context length", self.context)
        form.addRow(self.memory)
        form.setRowVisible(self.memory, False)  # until there is a plan to tell
        form.addRow("Max reply tokens", self.max_tokens)
        form.addRow("Think", self.think)
        form.setRowVisible(self.think, False)  # until the model is known to think
        form.addRow("Long chats", self.overflow)
        self._form = form
        layout = QVBoxLayout(self)
        preset_title = QLabel("Preset")
        preset_title.setObjectName("sectionTitle")
        layout.addWidget(preset_title)
        layout.addWidget(self.preset)
        layout.addLayout(presets)
        layout.addWidget(self.problem)
        prompt_title = QLabel("System prompt")
        prompt_title.setObjectName("sectionTitle")
        layout.addWidget(prompt_title)
        layout.addWidget(self.system_prompt, 1)
        layout.addLayout(form)
        layout.addWidget(self.advanced)
        hint = QLabel(
            "Longer context and GPU layers take memory; the model reloads when they change.",
            wordWrap=True,
        )
        hint.setObjectName("muted")
        layout.addWidget(hint)

    # what the window tells it

    def show_conversation(self, conversation: Conversation | None) -> None:
        self._debounce.stop()
        self._conversation = conversation
        self._loading = True
        options = conversation.options if conversation else ChatOptions()
        self.system_prompt.setPlainText(conversation.system_prompt if conversation else "")
        self._show_options(options)
        self._show_think(conversation.think if conversation else "")
        mode = conversation.memory.overflow if conversation else "drop"
        self.overflow.setCurrentIndex(max(0, self.overflow.findData(mode)))
        self._loading = False
        self.setEnabled(conversation is not None)
        self._mark_preset()
        self.show_model(None)

    def follow(self, conversation: Conversation) -> None:
        """The open chat changed elsewhere (its model, its title): keep the edits under way;
        a new model's facts (GPU layers, chat template) are unknown until its details come."""
        if self._conversation is None or conversation.id != self._conversation.id:
            return
        if conversation.model != self._conversation.model:
            self.show_model(None)
        self._conversation = conversation

    def set_presets(self, presets: Presets) -> None:
        self._presets = presets
        self.preset.clear()
        self.preset.addItem(NO_PRESET)
        self.preset.addItems(presets.names())
        self._mark_preset()

    def set_system(self, system: SystemInfo | None) -> None:
        self._system = system
        self._show_gpu()

    def show_model(self, details: ModelDetails | None) -> None:
        """The chat's model, once its details are known (None: not known yet)."""
        model = self._conversation.model if self._conversation else ""
        if details is not None and details.name != model:
            return  # a late answer about a model this chat no longer uses
        notice = details is not None and not details.has_chat_template
        self.model_notice.setText(no_template_notice(model) if notice else "")
        self.model_notice.setVisible(notice)
        thinks = details is not None and details.has_thinking
        self._form.setRowVisible(self.think, thinks)
        if details is not None and not thinks and self.think.currentData():
            self._show_think("")
            self._think_picked()

    def show_plan(self, preview: PlanPreview) -> None:
        """The daemon's plan of the chat's model with these settings: what it would take,
        and the GPU layers it places (nothing of either until it comes)."""
        self.show_memory(preview.text("Memory"))
        self._layers = preview.gpu_layers()
        self._show_gpu()

    def show_memory(self, text: str) -> None:
        """What the chat's model would take with these settings ("": nothing to say)."""
        self.memory.setText(text)
        self._form.setRowVisible(self.memory, bool(text))

    def _show_gpu(self) -> None:
        has_gpu = self._system is not None and bool(self._system.gpus)
        self.advanced.show_gpu(self._layers, has_gpu=has_gpu)

    # what it reports

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
            box.updateGeometry()  # Qt does not: the layout would cut "model default (2,048)"

    def options(self) -> ChatOptions:
        temperature = self.temperature.value()
        return ChatOptions(
            temperature=None if temperature < 0 else round(temperature, 2),
            num_ctx=self.context.value() or None,
            num_predict=self.max_tokens.value() or None,
            **self.advanced.values(),
        )

    def flush(self) -> None:
        """Report a pending edit now (before sending a message)."""
        if self._debounce.isActive():
            self._debounce.stop()
            self._emit()

    # internals

    def _show_options(self, options: ChatOptions) -> None:
        self.temperature.setValue(-0.1 if options.temperature is None else options.temperature)
        self.context.setValue(options.num_ctx or 0)
        self.max_tokens.setValue(options.num_predict or 0)
        self.advanced.load(options)

    def _overflow_picked(self) -> None:
        if self._conversation is not None:
            self.overflow_changed.emit(self._conversation.id, self.overflow.currentData())

    def _show_think(self, value: str) -> None:
        self.think.setCurrentIndex(max(0, self.think.findData(value)))

    def _think_picked(self, _row: int = 0) -> None:
        value = self.think.currentData()
        if self._conversation is not None and value != self._conversation.think:
            self._conversation = replace(self._conversation, think=value)
            self.think_changed.emit(self._conversation.id, value)

    def _edited(self) -> None:
        if not self._loading and self._conversation is not None:
            self._debounce.start()
            self.options_edited.emit(self.options())

    def _emit(self) -> None:
        self._mark_preset()
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

    def _mark_preset(self) -> None:
        """Show the preset these settings are, or "No preset"."""
        used = self._presets.matching(self.system_prompt.toPlainText(), self.options())
        self.preset.setCurrentIndex(self.preset.findText(used.name) if used else 0)
        self.delete_preset.setEnabled(used is not None)

    def _pick(self, row: int) -> None:
        preset = self._presets.get(self.preset.itemText(row)) if row > 0 else None
        if preset is None:
            return self._mark_preset()
        self._debounce.stop()
        self._loading = True
        self.system_prompt.setPlainText(preset.system_prompt)
        self._show_options(preset.options)
        self._loading = False
        self._emit()

    def _ask_preset_name(self) -> None:
        current = self.preset.currentText() if self.preset.currentIndex() > 0 else ""
        name, ok = QInputDialog.getText(self, "Save as a preset", "Preset name:", text=current)
        if ok:
            self.save_as_preset(name)

    def save_as_preset(self, name: str) -> bool:
        """Keep the settings shown as a preset called ``name`` (replacing one so named)."""
        try:
            preset = Preset(preset_name(name), self.system_prompt.toPlainText(), self.options())
        except PresetError as error:
            self.problem.setText(str(error).capitalize() + ".")
            self.problem.show()
            return False
        self.problem.hide()
        self.preset_saved.emit(preset)
        return True

    def _delete_preset(self) -> None:
        if self.preset.currentIndex() > 0:
            self.preset_deleted.emit(self.preset.currentText())
