"""The Models page's "Found on this computer" list: GGUF models other apps downloaded, one row
each (its name; where it came from, its size and what adding it does) with its Add button at
the row's end. A model on the store's file system is linked in (no second copy); one elsewhere
is copied, and the size is asked about first. The scan and the adding run in workers; this
panel only shows what they report.

Rows are laid out, not a table's cells: the button always has its room and a long name is cut
(its path in the tooltip), so the list reads at 1,024 px as at any width. With nothing found
the panel folds to its header line ("No GGUF models found", Look again): the installed models
above it keep the room.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from localllm.app.gui.design.tokens import SPACE
from localllm.app.gui.services.found_models import FoundModels
from localllm.app.gui.state.found_models import FoundModel, ImportStep
from localllm.app.gui.views.plain_text import confirm, plain_label, plain_tooltip

__all__ = ["FoundPanel", "FoundRow"]

_ROWS_SHOWN = 2  # at the least, however the page is split
QWIDGETSIZE_MAX = (1 << 24) - 1  # Qt's "no maximum"

_ABOUT = (
    "GGUF models other apps downloaded (Hugging Face, LM Studio, Ollama, the folders in "
    "LOCALLLM_IMPORT_DIRS). Adding one links the file into your models: no second copy. A file "
    "on another disk is copied, and you are asked first."
)


def _cut(text: str, name: str) -> QLabel:
    """A one-line label that gives up width rather than asking for it (file names are long)."""
    label = plain_label(text, objectName=name)  # file names are anyone's text: never markup
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    return label


class FoundRow(QWidget):
    """One model found: its name, a quiet line of facts, and the button that adds it."""

    def __init__(self, model: FoundModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.name = _cut(model.name, "rowTitle")
        facts = (model.source_text, model.size_text, model.quantization, model.how_text)
        self.details = _cut(" · ".join(fact for fact in facts if fact), "caption")
        self.button = QPushButton(model.button_text)
        self.button.setAccessibleName(f"Add {model.name}")
        self.button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.setToolTip(plain_tooltip(model.path))
        text = QVBoxLayout()
        text.setSpacing(2)
        text.addWidget(self.name)
        text.addWidget(self.details)
        row = QHBoxLayout(self)
        row.setContentsMargins(SPACE.md, SPACE.sm, SPACE.md, SPACE.sm)
        row.setSpacing(SPACE.md)
        row.addLayout(text, 1)
        row.addWidget(self.button, 0, Qt.AlignmentFlag.AlignVCenter)


class FoundPanel(QWidget):
    folded_changed = Signal(bool)  # True: nothing listed, only the header line shows

    def __init__(self, found: FoundModels, parent: QWidget | None = None):
        super().__init__(parent)
        self.found = found
        self.status = _cut("", "muted")  # how many, or what is being added: in the header
        self.status.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.look_again = QPushButton("Look again")
        self.look_again.clicked.connect(found.refresh)
        self.rows: dict[str, FoundRow] = {}
        self.buttons: dict[str, QPushButton] = {}
        found.changed.connect(self._show)
        found.progress.connect(self._progress)
        found.error.connect(self._say)

        self._list = QVBoxLayout()
        self._list.setContentsMargins(0, 0, 0, 0)
        self._list.setSpacing(0)
        body = QWidget()
        body.setObjectName("foundList")
        column = QVBoxLayout(body)
        column.setContentsMargins(0, 0, 0, 0)
        column.addLayout(self._list)
        column.addStretch(1)
        # not ``scroll``: that would hide QWidget.scroll()
        self.scroll_area = QScrollArea(widgetResizable=True)
        self.scroll_area.setObjectName("card")
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll_area.setWidget(body)
        self.scroll_area.setMinimumHeight(
            _ROWS_SHOWN * (3 * self.fontMetrics().height() + SPACE.sm)
        )
        self.about = plain_label(_ABOUT, wordWrap=True, objectName="muted")
        self.about.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        header = QHBoxLayout()
        title = QLabel("Found on this computer")
        title.setObjectName("sectionTitle")
        header.addWidget(title)
        header.addWidget(self.status, 1)
        header.addWidget(self.look_again)
        self._column = layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(header)
        layout.addWidget(self.about)
        layout.addWidget(self.scroll_area, 1)
        self._loaded = False
        self.folded = False
        self._fold(True)  # until something is found

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._loaded:  # the first look, when the page is first shown
            self._loaded = True
            self._say("Looking for models on this computer…")
            self.found.refresh()

    def _show(self, models: tuple[FoundModel, ...]) -> None:
        self._loaded = True
        while self._list.count():
            item = self._list.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        self.rows, self.buttons = {}, {}
        for number, model in enumerate(models):
            if number:
                rule = QFrame()
                rule.setObjectName("rule")
                rule.setFixedHeight(1)
                self._list.addWidget(rule)
            row = FoundRow(model)
            row.button.setEnabled(not model.in_store and model.name not in self.found.adding)
            row.button.clicked.connect(lambda _=False, m=model: self._add(m))
            self._list.addWidget(row)
            self.rows[model.name], self.buttons[model.name] = row, row.button
        self._fold(not models)
        waiting = sum(not m.in_store for m in models)
        self._say(
            f"{len(models)} found, {waiting} not added yet." if models else "No GGUF models found."
        )

    def _fold(self, folded: bool) -> None:
        """Nothing to list: only the header line, and no more height than it takes."""
        self.about.setVisible(not folded)
        self.scroll_area.setVisible(not folded)
        self.setMaximumHeight(self._column.sizeHint().height() if folded else QWIDGETSIZE_MAX)
        if folded != self.folded:
            self.folded = folded
            self.folded_changed.emit(folded)

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
        self._say(f"{name}: {step.text}{percent}")

    def _say(self, text: str) -> None:
        """The header's line, whole in its tooltip (the line gives way to the title)."""
        self.status.setText(text)
        self.status.setToolTip(plain_tooltip(text))
