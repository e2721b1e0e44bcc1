"""The Models page's "Found on this computer" list: GGUF models other apps downloaded, each
with an Add button. A model on the store's file system is linked in (no second copy); one
elsewhere is copied, and the size is asked about first. The scan and the adding run in
workers; this panel only shows what they report."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.gui.services.found_models import FoundModels
from app.gui.state.found_models import FoundModel, ImportStep
from app.gui.views.plain_text import confirm, plain_label, plain_tooltip

__all__ = ["FoundPanel"]

_COLUMNS = ("Model", "From", "Size", "Quantization", "Adding it", "")


class FoundPanel(QWidget):
    def __init__(self, found: FoundModels, parent: QWidget | None = None):
        super().__init__(parent)
        self.found = found
        self.table = QTableWidget(0, len(_COLUMNS))
        self.table.setHorizontalHeaderLabels(list(_COLUMNS))
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.status = plain_label("", wordWrap=True)
        self.look_again = QPushButton("Look again")
        self.look_again.clicked.connect(found.refresh)
        self.buttons: dict[str, QPushButton] = {}
        found.changed.connect(self._show)
        found.progress.connect(self._progress)
        found.error.connect(self.status.setText)

        header = QHBoxLayout()
        header.addWidget(QLabel("<b>Found on this computer</b>"))
        header.addStretch(1)
        header.addWidget(self.look_again)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(header)
        layout.addWidget(
            plain_label(
                "GGUF models other apps downloaded (Hugging Face, LM Studio, Ollama, the "
                "folders in LOCALLLM_IMPORT_DIRS). Adding one links the file into your models: "
                "no second copy. A file on another disk is copied, and you are asked first.",
                wordWrap=True,
            )
        )
        layout.addWidget(self.table, 1)
        layout.addWidget(self.status)
        self._loaded = False

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._loaded:  # the first look, when the page is first shown
            self._loaded = True
            self.status.setText("Looking for models on this computer…")
            self.found.refresh()

    def _show(self, models: tuple[FoundModel, ...]) -> None:
        self._loaded = True
        self.table.setRowCount(len(models))
        self.buttons = {}
        for row, model in enumerate(models):
            cells = (
                model.name,
                model.source_text,
                model.size_text,
                model.quantization,
                model.how_text,
            )
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)  # file names are anyone's text: never markup
                item.setToolTip(plain_tooltip(model.path))
                self.table.setItem(row, column, item)
            button = QPushButton(model.button_text)
            button.setEnabled(not model.in_store and model.name not in self.found.adding)
            button.clicked.connect(lambda _=False, m=model: self._add(m))
            self.table.setCellWidget(row, len(cells), button)
            self.buttons[model.name] = button
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        waiting = sum(not m.in_store for m in models)
        self.status.setText(
            f"{len(models)} found, {waiting} not added yet." if models else "No GGUF models found."
        )

    def _add(self, model: FoundModel) -> None:
        if not model.linkable:
            question = (
                f"{model.name} is on another disk than your models, so it can only be copied: "
                f"{model.size_text} more disk space. Copy it?"
            )
            if not confirm(self, "Copy model", question):
                return
        button = self.buttons.get(model.name)
        if button is not None:
            button.setEnabled(False)
            button.setText("Adding…")
        self.found.add(model, "auto" if model.linkable else "copy")

    def _progress(self, name: str, step: ImportStep) -> None:
        percent = f" {step.fraction:.0%}" if step.fraction is not None and not step.model else ""
        self.status.setText(f"{name}: {step.text}{percent}")
