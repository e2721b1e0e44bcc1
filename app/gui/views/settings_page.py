"""The Settings page: the theme (the one in effect, saying so when ``--theme`` chose it), the
context length chats ask for (with what the chat's model would take at it, as the daemon plans
it, and what the loaded models take now, and why), the Voice choices (``voice_settings``), the
server's switch and port, the folders the app keeps its data in, and the daemon's prompt cache
on disk (asked each time the page is shown, and cleared on request, in workers).

Drawing and wiring only: the window applies and remembers what changes here.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QAbstractItemModel, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from localllm.app.gui.design.tokens import SPACE
from localllm.app.gui.item_models.table import ITEM_ROLE
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.preferences import CONTEXT_CHOICES, Preferences
from localllm.app.gui.state.prompt_cache_view import (
    PROMPT_CACHE_NOTE,
    PromptCacheFreed,
    PromptCacheUse,
    freed_text,
    usage_text,
)
from localllm.app.gui.state.quit_choice import QuitChoice
from localllm.app.gui.state.records import RunningModel, ServerInfo
from localllm.app.gui.state.units import bytes_text
from localllm.app.gui.theme import THEMES
from localllm.app.gui.views.environment_section import EnvironmentSection
from localllm.app.gui.views.plain_text import plain_label
from localllm.app.gui.workers import Job, Workers

__all__ = ["PromptCacheRow", "SettingsPage", "running_text"]


def running_text(model: RunningModel) -> str:
    """One loaded model's memory and why: 'gemma3:270m: 2.8 GB, 32,768 tokens of context'."""
    if model.remote:
        return f"{model.name}: on the remote {model.remote}"
    context = f", {model.context_length:,} tokens of context" if model.context_length else ""
    return f"{model.name}: {bytes_text(model.size)}{context} ({model.processor})"


def _whole_list(box: QComboBox) -> None:
    """Its choices open as a list under it with every one in full: not the style's menu over
    the box, which scrolls to put the current choice on the box and can leave the last one
    half under a scroll arrow ("Dark" was)."""
    box.setStyleSheet("QComboBox { combobox-popup: 0; }")
    box.setMaxVisibleItems(max(box.count(), 1))


def _wrapped(text: str = "", name: str = "muted") -> QLabel:
    label = plain_label(text, objectName=name, wordWrap=True)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    return label


_ON_QUIT = (
    ("Ask each time", None),
    ("Keep the server running (models stay loaded until their keep-alive ends)", QuitChoice.KEEP),
    ("Stop the server and unload every model", QuitChoice.STOP),
)


class SettingsPage(QScrollArea):
    theme_changed = Signal(str)
    context_changed = Signal(int)
    lan_changed = Signal(bool)
    quit_changed = Signal(object)  # QuitChoice, or None: ask at each quit
    page_requested = Signal(str)
    message = Signal(str)  # for the window's status line: what clearing the prompt cache did

    def __init__(
        self,
        preferences: Preferences,
        running: QAbstractItemModel,
        folders,
        gateway: Gateway,
        workers: Workers,
        parent=None,
        voice: QWidget | None = None,
    ):
        """``folders``: (what, path) pairs to show with an Open button; ``gateway`` and
        ``workers``: how the prompt cache row asks the daemon; ``voice``: the Voice section."""
        super().__init__(parent)
        self.voice = voice
        self.setWidgetResizable(True)
        self.setFrameShape(QScrollArea.Shape.NoFrame)
        self._running = running
        self.theme = QComboBox()
        self.theme.setAccessibleName("Theme")
        for value, label in THEMES:
            self.theme.addItem(label, value)
        _whole_list(self.theme)
        self.theme_note = _wrapped()  # when --theme chose the theme of this run
        self.theme_note.hide()
        self.context = QComboBox()
        self.context.setAccessibleName("Context length for chats")
        for tokens, text in CONTEXT_CHOICES:
            self.context.addItem(text, tokens)
        _whole_list(self.context)
        self.cost = _wrapped("Pick a model in a chat to see what it takes in memory.")
        self.loaded = _wrapped("No model is loaded.")
        self.lan = QCheckBox("Serve on the local network (other devices need the API key)")
        self.server_status = _wrapped()
        self.on_quit = QComboBox()
        self.on_quit.setAccessibleName("When the app quits")
        for label, choice in _ON_QUIT:
            self.on_quit.addItem(label, choice)
        self.on_quit.activated.connect(
            lambda _i: self.quit_changed.emit(self.on_quit.currentData())
        )
        self.prompt_cache = PromptCacheRow(gateway, workers)
        self.environment = EnvironmentSection()  # filled by open_window: the app's settings
        self.prompt_cache.message.connect(self.message)
        self.show_preferences(preferences)
        self.theme.activated.connect(lambda _i: self._theme_picked())
        self.context.activated.connect(
            lambda _i: self.context_changed.emit(self.context.currentData())
        )
        self.lan.clicked.connect(self.lan_changed)
        for signal in (running.rowsInserted, running.rowsRemoved, running.dataChanged):
            signal.connect(lambda *_: self._show_loaded())
        running.modelReset.connect(self._show_loaded)
        self.setWidget(self._build(folders))

    def _build(self, folders) -> QWidget:
        body = QWidget()
        column = QVBoxLayout(body)
        column.setContentsMargins(SPACE.xl, SPACE.xl, SPACE.xl, SPACE.xl)
        column.setSpacing(SPACE.lg)
        title = QLabel("Settings")
        title.setObjectName("pageTitle")
        column.addWidget(title)
        look = QFormLayout()
        look.addRow("Theme", self.theme)
        look.addRow("", self.theme_note)
        column.addWidget(_section("Appearance", look))
        memory = QVBoxLayout()
        form = QFormLayout()
        form.addRow("Context length", self.context)
        memory.addLayout(form)
        memory.addWidget(
            _wrapped(
                "What chats that set no Context length of their own ask for. Every token of "
                "context takes memory in each slot (the requests a model serves at once); "
                "4,096 suits most chats, like LM Studio's and Ollama's defaults."
            )
        )
        memory.addWidget(self.cost)
        loaded_title = QLabel("Loaded now")
        loaded_title.setObjectName("sectionTitle")
        memory.addWidget(loaded_title)
        memory.addWidget(self.loaded)
        column.addWidget(_section("Chats and memory", memory))
        if self.voice is not None:
            column.addWidget(self.voice)
        server = QVBoxLayout()
        server.addWidget(self.server_status)
        server.addWidget(self.lan)
        quitting = QFormLayout()
        quitting.addRow("When the app quits", self.on_quit)
        server.addLayout(quitting)
        more = QPushButton("Port, API key and log on the Server page")
        more.clicked.connect(lambda: self.page_requested.emit("Server"))
        server.addWidget(more, 0, Qt.AlignmentFlag.AlignLeft)
        column.addWidget(_section("Server", server))
        places = QFormLayout()
        for what, path in folders:
            places.addRow(what, _folder_row(Path(path)))
        places.addRow("Prompt cache", self.prompt_cache)
        places.addRow("", _wrapped(PROMPT_CACHE_NOTE))
        column.addWidget(_section("Data folders", places))
        environment = QVBoxLayout()
        environment.addWidget(self.environment)
        column.addWidget(_section("Environment", environment))
        column.addStretch(1)
        return body

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.prompt_cache.refresh()  # other runs and `localllm prune` change it too

    def show_quit(self, choice: QuitChoice | None) -> None:
        self.on_quit.setCurrentIndex(max(0, self.on_quit.findData(choice)))

    def show_preferences(self, preferences: Preferences) -> None:
        self.theme.setCurrentIndex(max(0, self.theme.findData(preferences.theme)))
        self.context.setCurrentIndex(max(0, self.context.findData(preferences.context)))

    def show_theme(self, mode: str, flag: str | None = None) -> None:
        """The theme in effect ("system", "light" or "dark"); ``flag``: the ``--theme`` that
        chose it for this run over the saved choice (None: the saved choice is in effect)."""
        self.theme.setCurrentIndex(max(0, self.theme.findData(mode)))
        self.theme_note.setText(
            f"Set by --theme {flag} for this run. A choice here applies at once and is kept "
            "for the next runs started without --theme."
            if flag
            else ""
        )
        self.theme_note.setVisible(bool(flag))

    def _theme_picked(self) -> None:
        self.theme_note.hide()  # the choice made here is the one in effect now
        self.theme_changed.emit(self.theme.currentData())

    def show_cost(self, text: str) -> None:
        """What the chat's model would take at the chosen context, in the daemon's figures
        (``state.setting_plan``; "": nothing to show, or the daemon could not plan it)."""
        self.cost.setText(text)
        self.cost.setVisible(bool(text))

    def show_server(self, info: ServerInfo) -> None:
        where = "on the local network" if info.lan else "on this computer only"
        self.server_status.setText(f"The API answers at {info.base_url}/v1, {where}.")
        self.lan.setChecked(info.lan)

    def _show_loaded(self) -> None:
        model = self._running
        rows = [model.index(r, 0).data(ITEM_ROLE) for r in range(model.rowCount())]
        lines = [running_text(m) for m in rows if m is not None]
        self.loaded.setText("\n".join(lines) or "No model is loaded.")


def _section(title: str, layout) -> QGroupBox:
    box = QGroupBox(title)
    box.setLayout(layout)
    return box


def _folder_row(path: Path) -> QWidget:
    row = QWidget()
    line = QHBoxLayout(row)
    line.setContentsMargins(0, 0, 0, 0)
    where = plain_label(str(path), objectName="muted")
    where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    where.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    button = QPushButton("Open")
    button.setAccessibleName(f"Open {path.name}")
    button.clicked.connect(lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))))
    line.addWidget(where, 1)
    line.addWidget(button)
    return row


class PromptCacheRow(QWidget):
    """The daemon's prompt cache on disk: what it holds against its limit, and a Clear button.
    Both calls run in workers; a failure is shown (the count as unknown, a failed clear as a
    message), never raised."""

    message = Signal(str)  # what clearing freed, or why it failed

    def __init__(self, gateway: Gateway, workers: Workers, parent: QWidget | None = None):
        super().__init__(parent)
        self._gateway, self._workers = gateway, workers
        self._asking: Job | None = None
        self._clearing = False
        self.usage = plain_label("Not read yet", objectName="muted")
        self.usage.setAccessibleName("Prompt cache use")
        self.usage.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.clear_button = QPushButton("Clear")
        self.clear_button.setAccessibleName("Clear the prompt cache")
        self.clear_button.setEnabled(False)  # until a count says there is something to clear
        self.clear_button.clicked.connect(self.clear)
        line = QHBoxLayout(self)
        line.setContentsMargins(0, 0, 0, 0)
        line.addWidget(self.usage, 1)
        line.addWidget(self.clear_button)

    def refresh(self) -> None:
        """Ask the daemon again; an answer still out is dropped (the last ask wins)."""
        if self._clearing:
            return  # the clear asks once it is done
        if self._asking is not None:
            self._asking.cancel()
        self._asking = self._workers.call(self._gateway.prompt_cache, self._show, self._unknown)

    def clear(self) -> None:
        if self._asking is not None:  # a count from before the clear must not show after it
            self._asking.cancel()
            self._asking = None
        self._clearing = True
        self.clear_button.setEnabled(False)
        self.usage.setText("Clearing…")
        self._workers.call(self._gateway.clear_prompt_cache, self._cleared, self._clear_failed)

    def _show(self, use: PromptCacheUse) -> None:
        self._asking = None
        self.usage.setText(usage_text(use))
        self.clear_button.setEnabled(use.files > 0)

    def _unknown(self, error: Exception) -> None:
        self._asking = None
        self.usage.setText(f"Not known now: {getattr(error, 'message', error)}")
        self.clear_button.setEnabled(False)

    def _cleared(self, freed: PromptCacheFreed) -> None:
        self._clearing = False
        self.message.emit(freed_text(freed))
        self.refresh()

    def _clear_failed(self, error: Exception) -> None:
        self._clearing = False
        self.message.emit(f"The prompt cache was not cleared: {error}")
        self.refresh()
