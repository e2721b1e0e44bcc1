"""The Models page: what is installed, each model's details, delete, copy, import; the
remote engines' models too, marked with their remote's name (chat only: no copy or delete).

Each row has badges: whether the model fits this computer (the daemon's memory plan of it) and
what it can do beyond chat (vision, thinking, tools). Details are fetched when a row is
selected: an Overview that reads as a summary (what it can do, as badges; its size; the context
chats run at next to the one it was trained for; what loading it takes, as the daemon plans
it: a bar per device, RAM or GPU, its parts coloured by what they are, and the figures in
words), then the template, system prompt, parameters, license and Modelfile, with the raw GGUF
keys last. GGUF files can be imported with the button
or by dropping them; the buttons that act on a model are enabled only while one is selected.
"""

from __future__ import annotations

import html
from functools import partial

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from localllm.app.gui.design.tokens import SPACE
from localllm.app.gui.design.widgets import badge, set_kind
from localllm.app.gui.services.library import ModelLibrary
from localllm.app.gui.state.abilities import abilities_of
from localllm.app.gui.state.model_plan import memory_text
from localllm.app.gui.state.records import InstalledModel, ModelDetails, ModelPlan
from localllm.app.gui.views.found_panel import FoundPanel
from localllm.app.gui.views.plain_text import ask_text, confirm, plain_label, rich_label
from localllm.app.gui.views.plan_bar import PlanView
from localllm.app.gui.views.record_table import selected_record, table_view
from localllm.app.gui.views.welcome import gguf_paths

__all__ = ["ModelsPage", "delete_question"]


def delete_question(name: str) -> str:
    """What deleting ``name`` does. The daemon does not say whether a model came in as a hard
    link to a file of the user's, so this says what happens either way: that file (a link is
    the same file under a second name) stays where it is."""
    return (
        f"Delete {name}?\n\n"
        "Its files are removed from localllm's Models folder, except those another model "
        "shares. If you imported it from a file on this computer, that file stays where it "
        "was: only localllm's link to it or copy of it is removed. Chats that use the model "
        "are kept."
    )


def _text_tab(text: str, empty: str) -> QPlainTextEdit:
    box = QPlainTextEdit(text or empty, readOnly=True)
    box.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
    return box


class ModelsPage(QWidget):
    chat_requested = Signal(str)
    import_requested = Signal(object)  # Path; the window asks for a name

    def __init__(self, library: ModelLibrary, parent=None):
        super().__init__(parent)
        self.setAcceptDrops(True)
        self.library = library
        self.table = table_view(library.table, self, stretch=0)  # the name gives way
        self.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._selected())
        self.tabs = QTabWidget()
        self.metadata: QTableWidget | None = None  # the raw GGUF keys, the last tab
        self.plan_view: PlanView | None = None  # the memory plan, on the Overview
        self.summary = rich_label("Select a model to see its details.", wordWrap=True)
        self.chat_button = QPushButton("Chat with it")
        set_kind(self.chat_button, "primary")
        self.copy_button = QPushButton("Copy…")
        self.delete_button = QPushButton("Delete…")
        import_button = QPushButton("Import GGUF…")
        refresh = QPushButton("Refresh")
        self.chat_button.clicked.connect(self._chat)
        self.copy_button.clicked.connect(self._copy)
        self.delete_button.clicked.connect(self._delete)
        import_button.clicked.connect(lambda: self.import_requested.emit(None))
        refresh.clicked.connect(library.refresh)
        library.details_ready.connect(self._show_details)

        buttons = QHBoxLayout()
        for b in (self.chat_button, self.copy_button, self.delete_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(import_button)
        buttons.addWidget(refresh)
        details = QWidget()
        right = QVBoxLayout(details)
        right.addWidget(self.summary)
        right.addWidget(self.tabs, 1)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(details)
        self.splitter.setSizes([260, 420])  # the details need the room more than a short list
        layout = QVBoxLayout(self)
        title = QLabel("Models")
        title.setObjectName("pageTitle")
        layout.addWidget(title)
        layout.addLayout(buttons)
        layout.addWidget(self.splitter, 1)
        self._enable(False)

    def add_panel(self, panel: FoundPanel) -> None:
        """The section under the installed models ("Found on this computer")."""
        self.splitter.insertWidget(1, panel)
        self.panel = panel
        self.splitter.setSizes([220, 220, 300])
        panel.folded_changed.connect(self._panel_folded)
        self._panel_folded(panel.folded)

    def _panel_folded(self, folded: bool) -> None:
        """An empty panel is a line and the installed models take its room; a panel with
        models found gets a quarter (the details keep two fifths either way)."""
        total = sum(self.splitter.sizes())
        details = total * 2 // 5
        panel = self.panel.maximumHeight() if folded else total // 4
        self.splitter.setSizes([total - details - panel, panel, details])

    def selected(self) -> InstalledModel | None:
        return selected_record(self.table)

    def _enable(self, on: bool) -> None:
        for b in (self.chat_button, self.copy_button, self.delete_button):
            b.setEnabled(on)

    def _selected(self) -> None:
        model = self.selected()
        self._enable(model is not None)
        if model is not None and model.remote:
            self._show_remote(model)
        elif model is not None:
            self.summary.setText(f"<b>{html.escape(model.name)}</b> · loading details…")
            self.library.details(model.name)

    def _show_remote(self, model: InstalledModel) -> None:
        """A remote engine's model: chat with it, nothing to copy or delete here."""
        self.copy_button.setEnabled(False)
        self.delete_button.setEnabled(False)
        self.tabs.clear()
        where = html.escape(model.remote)
        self.summary.setText(
            f"<b>{html.escape(model.name)}</b> · served by the remote <b>{where}</b>; its "
            "engine holds the weights (its health is on the Server page)"
        )

    def _show_details(self, d: ModelDetails) -> None:
        model = self.selected()
        if model is None or model.name != d.name or model.remote:
            return
        abilities = ", ".join(sorted(d.capabilities)) or "completion"
        context = self.library.defaults(d).context_text()  # "runs at 4,096 of 32,768 tokens"
        parts = (  # from the GGUF file: anyone's text, never markup
            model.family or "unknown family",
            model.parameter_size,
            model.quantization,
            f"context {context}",
            f"can: {abilities}",
        )
        facts = " · ".join(part for part in parts if part)
        self.summary.setText(f"<b>{html.escape(d.name)}</b> · {html.escape(facts)}")
        self.tabs.clear()
        overview = QScrollArea()  # a short window scrolls it rather than squeezing its lines
        overview.setWidgetResizable(True)
        overview.setFrameShape(QScrollArea.Shape.NoFrame)
        overview.setWidget(self._overview(model, d))
        self.tabs.addTab(overview, "Overview")
        metadata = QTableWidget(len(d.metadata), 2)
        metadata.setHorizontalHeaderLabels(["Key", "Value"])
        metadata.horizontalHeader().setStretchLastSection(True)
        metadata.verticalHeader().hide()
        metadata.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for row, (key, value) in enumerate(d.metadata):
            metadata.setItem(row, 0, QTableWidgetItem(key))
            metadata.setItem(row, 1, QTableWidgetItem(value))
        metadata.resizeColumnToContents(0)  # keys are long: "llama.attention.head_count_kv"
        metadata.resizeRowsToContents()
        metadata.setShowGrid(False)
        self.metadata = metadata
        self.tabs.addTab(_text_tab(d.template, "(no template)"), "Template")
        self.tabs.addTab(_text_tab(d.system, "(no system prompt)"), "System prompt")
        self.tabs.addTab(_text_tab(d.parameters, "(defaults)"), "Parameters")
        self.tabs.addTab(_text_tab(d.license, "(no license text)"), "License")
        self.tabs.addTab(_text_tab(d.modelfile, ""), "Modelfile")
        self.tabs.addTab(metadata, "All GGUF keys")

    def _overview(self, model: InstalledModel, d: ModelDetails) -> QWidget:
        """The model in a few readable lines (its GGUF's own words are plain text)."""
        page = QWidget()
        form = QFormLayout(page)
        form.setContentsMargins(SPACE.md, SPACE.md, SPACE.md, SPACE.md)
        form.setVerticalSpacing(SPACE.sm)
        abilities = QHBoxLayout()
        abilities.setSpacing(SPACE.xs)
        basic = "chat" if d.has_chat_template else "completion"  # what every model does
        abilities.addWidget(badge(basic, "neutral"))
        for ability in abilities_of(d.capabilities):
            abilities.addWidget(badge(ability.label, ability.tone, ability.why))
        abilities.addStretch(1)
        form.addRow("Can", abilities)
        size = " · ".join(part for part in (model.parameter_size, model.quantization) if part)
        form.addRow("Model", plain_label(f"{model.family or 'unknown family'} · {size}"))
        defaults = self.library.defaults(d)
        form.addRow("Context", plain_label(defaults.context_text()))
        guess = memory_text(None, model.size)  # "about ...", from the file size
        self.plan_view = PlanView()
        self.plan_view.show_text(
            f"{guess} (the daemon is planning it)" if guess else "The daemon is planning it…"
        )
        form.addRow("Memory", self.plan_view)
        self.library.plan(
            d.name,
            partial(self._show_plan, d.name),
            partial(self._plan_failed, d.name),
        )
        template = "its own" if d.has_chat_template else "none: a base model, made to continue text"
        form.addRow("Chat template", plain_label(template))
        return page

    def _show_plan(self, name: str, plan: ModelPlan) -> None:
        """The daemon's plan, if its model is still the one shown."""
        model = self.selected()
        if self.plan_view is not None and model is not None and model.name == name:
            self.plan_view.show_plan(plan)

    def _plan_failed(self, name: str, error: Exception) -> None:
        """No figure rather than a guess: what it takes is not known."""
        model = self.selected()
        if self.plan_view is not None and model is not None and model.name == name:
            self.plan_view.show_text(f"Not known: the daemon could not plan it ({error}).")

    def _chat(self) -> None:
        model = self.selected()
        if model is not None:
            self.chat_requested.emit(model.name)

    def _copy(self) -> None:
        model = self.selected()
        if model is None:
            return
        name = ask_text(
            self, "Copy model", f"New name for {model.name}:", f"{model.name.split(':')[0]}-copy"
        )
        if name:
            self.library.copy(model.name, name)

    def _delete(self) -> None:
        model = self.selected()
        if model is None:
            return
        if confirm(self, "Delete model", delete_question(model.name), "Delete", "Cancel"):
            self.library.delete(model.name)

    def dragEnterEvent(self, event) -> None:
        if gguf_paths(event):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        for path in gguf_paths(event):
            self.import_requested.emit(path)
        event.acceptProposedAction()
