"""The first-run page: a few models sized for this machine, one click each, or your own GGUF.

Shown while no model is installed. The suggestion that suits the machine best is marked; the
others carry the same fit badge the Discover page uses: the daemon's memory plan of each
(``plans_wanted`` asks for them when the page first shows; ``set_plan`` brings each), a guess
from the file size until it comes. Importing a GGUF file you have is a choice of its own (a
card, and a drop anywhere on the page); offline it is the one offered, and the downloads are
off (the window's banner says why, once). A failed download says what happened in one sentence.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from localllm.app.gui.design.tokens import SPACE
from localllm.app.gui.design.widgets import badge, set_kind
from localllm.app.gui.state.downloads import Download
from localllm.app.gui.state.fit import Fit
from localllm.app.gui.state.model_plan import memory_text, plan_tip
from localllm.app.gui.state.records import ModelPlan, SystemInfo
from localllm.app.gui.state.starter_models import STARTERS, Suggestion, suggest
from localllm.app.gui.state.units import bytes_text, duration_text
from localllm.app.gui.views.file_dialogs import open_file_name
from localllm.app.gui.views.plain_text import plain_label, plain_tooltip

__all__ = ["OFFLINE_REASON", "WelcomePage", "download_problem", "gguf_paths"]

OFFLINE_REASON = "Downloads need the internet, and this computer is offline."


def download_problem(error: str) -> str:
    """A failed download's reason as one sentence with the next step."""
    if "could not reach" in error or "internet" in error:
        return (
            "This computer could not reach Hugging Face: import a GGUF file you have, or "
            "retry once it is online."
        )
    first = error.split(". ")[0].strip().rstrip(".")
    return f"{first[:1].upper()}{first[1:]}; retry it, or see the Downloads page."


def gguf_paths(event: QDragEnterEvent | QDropEvent) -> list[Path]:
    """The local .gguf files being dragged, if any."""
    mime = event.mimeData()
    if not mime.hasUrls():
        return []
    paths = [Path(u.toLocalFile()) for u in mime.urls() if u.isLocalFile()]
    return [p for p in paths if p.suffix.lower() == ".gguf"]


def _machine(system: SystemInfo | None) -> str:
    if system is None:
        return "Checking this computer's memory…"
    parts = [f"{bytes_text(system.ram_total)} RAM"]
    parts += [f"{g.name} ({bytes_text(g.vram_total)})" for g in system.gpus] or ["no GPU found"]
    return "This computer: " + ", ".join(parts)


class WelcomePage(QWidget):
    pull_requested = Signal(str)
    import_requested = Signal(object)  # Path
    plans_wanted = Signal(object)  # the starters' names, the first time the page shows

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAcceptDrops(True)
        self.offline = False
        self.system: SystemInfo | None = None
        self.plans: dict[str, ModelPlan] = {}
        self._asked = False
        self.machine = plain_label(_machine(None), objectName="muted")
        self.cards = QGridLayout()
        self.cards.setSpacing(SPACE.md)
        self.buttons: dict[str, QPushButton] = {}
        self.problems: dict[str, QLabel] = {}  # a failed download's reason, on its card
        self.import_button = QPushButton("Import a GGUF file…")
        self.import_button.clicked.connect(self._pick_file)
        self.import_card = self._import_card()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(SPACE.xxl, SPACE.xl, SPACE.xxl, SPACE.xl)
        layout.setSpacing(SPACE.sm)
        title = QLabel("Welcome to localllm")
        title.setObjectName("pageTitle")
        layout.addWidget(title)
        intro = QLabel(
            "Models run on this computer; nothing you type leaves it. "
            "Pick one to download, or use a GGUF file you already have.",
            wordWrap=True,
        )
        layout.addWidget(intro)
        layout.addWidget(self.machine)
        layout.addSpacing(SPACE.sm)
        layout.addLayout(self.cards)
        layout.addStretch(1)
        self.set_system(None)

    def retheme(self) -> None:
        """Nothing of its own to redraw: its colours come from the stylesheet."""

    def set_offline(self, offline: bool) -> None:
        """Offline, the downloads are off and importing a file becomes the main choice; the
        window's banner above says why, once (a button's tooltip says it too)."""
        self.offline = offline
        set_kind(self.import_button, "primary" if offline else "")
        for name, button in self.buttons.items():  # the tooltip says why; no card repeats it
            if button.text() in ("Download", "Download anyway", "Retry download"):
                button.setEnabled(not offline)
                button.setToolTip(OFFLINE_REASON if offline else f"Download {name}")
            button.setAccessibleDescription(OFFLINE_REASON if offline else "")

    def _import_card(self) -> QFrame:
        card = QFrame()
        card.setObjectName("card")
        layout = QVBoxLayout(card)
        layout.setContentsMargins(SPACE.lg, SPACE.lg, SPACE.lg, SPACE.lg)
        layout.addWidget(QLabel("<b>Import a GGUF you have</b>"))
        about = QLabel(
            "From LM Studio, Ollama, Hugging Face or anywhere on disk: linked in, no "
            "second copy. Works offline.",
            wordWrap=True,
        )
        about.setObjectName("muted")
        layout.addWidget(about)
        layout.addStretch(1)
        layout.addWidget(self.import_button, 0, Qt.AlignmentFlag.AlignLeft)
        drop = QLabel("or drop a .gguf file anywhere here")
        drop.setObjectName("caption")
        layout.addWidget(drop)
        return card

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._asked:
            self._asked = True
            self.plans_wanted.emit([m.name for m in STARTERS])

    def set_plan(self, name: str, plan: ModelPlan) -> None:
        """The daemon's plan of a starter: its badge, and maybe which one is recommended."""
        if name in {m.name for m in STARTERS}:
            self.plans[name] = plan
            self.set_system(self.system)

    def set_system(self, system: SystemInfo | None) -> None:
        self.system = system
        self.cards.removeWidget(self.import_card)
        while self.cards.count():
            item = self.cards.takeAt(0)
            card = item.widget() if item is not None else None
            if card is not None:  # the cards are all widgets
                card.deleteLater()
        self.buttons.clear()
        self.problems.clear()
        self.machine.setText(_machine(system))
        suggestions = suggest(system, self.plans)
        for i, suggestion in enumerate(suggestions):
            self.cards.addWidget(self._card(suggestion), i // 3, i % 3)
        place = len(suggestions)
        self.cards.addWidget(self.import_card, place // 3, place % 3)
        for column in range(3):
            self.cards.setColumnStretch(column, 1)
        self.set_offline(self.offline)

    def mark_downloading(self, name: str, text: str = "Downloading…") -> None:
        button = self.buttons.get(name)
        if button is not None:
            button.setEnabled(False)
            button.setText(text)

    def show_download(self, download: Download) -> None:
        """Progress on the card itself, and a retry when it failed."""
        button = self.buttons.get(download.name)
        if button is None:
            return
        problem = self.problems[download.name]
        failed = download.state == "failed"
        problem.setText(download_problem(download.error) if failed else "")
        problem.setToolTip(plain_tooltip(download.error) if failed else "")
        problem.setObjectName("problem")
        problem.style().polish(problem)
        problem.setVisible(failed)
        if failed:
            button.setEnabled(not self.offline)
            button.setText("Retry download")
        elif download.active:
            eta = duration_text(download.eta)
            left = f", {eta} left" if eta else ""
            self.mark_downloading(download.name, f"Downloading… {download.fraction:.0%}{left}")
        else:
            self.mark_downloading(download.name, "Ready")

    def _card(self, s: Suggestion) -> QFrame:
        card = QFrame()
        card.setObjectName("card")
        card.setProperty("chosen", "true" if s.recommended else "false")
        layout = QVBoxLayout(card)
        layout.setContentsMargins(SPACE.lg, SPACE.lg, SPACE.lg, SPACE.lg)
        title = QHBoxLayout()
        title.addWidget(plain_label(s.model.name, objectName="sectionTitle"))
        title.addStretch(1)
        if s.recommended:
            title.addWidget(badge("recommended", "accent"))
        layout.addLayout(title)
        blurb = QLabel(s.model.blurb, wordWrap=True)
        blurb.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout.addWidget(blurb)
        facts = QHBoxLayout()
        plan = plan_tip(s.plan, s.model.size)
        size = QLabel(f"{s.model.parameters} · {bytes_text(s.model.size)}")
        size.setObjectName("muted")
        facts.addWidget(size)
        if s.fit is not Fit.UNKNOWN:
            facts.addWidget(badge(s.fit.label, s.fit.tone or "neutral", plan))
        facts.addStretch(1)
        layout.addLayout(facts)
        runs = plain_label(f"runs in {memory_text(s.plan, s.model.size)}", objectName="muted")
        runs.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        runs.setToolTip(plan)
        layout.addWidget(runs)
        layout.addStretch(1)
        button = QPushButton("Download" if s.fit is not Fit.TOO_LARGE else "Download anyway")
        button.setAccessibleName(f"Download {s.model.name}")
        if s.recommended:
            set_kind(button, "primary")
        button.clicked.connect(lambda: self._pull(s.model.name))
        self.buttons[s.model.name] = button
        layout.addWidget(button, 0, Qt.AlignmentFlag.AlignLeft)
        problem = plain_label(wordWrap=True, objectName="problem")  # the daemon's error
        problem.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        problem.hide()
        self.problems[s.model.name] = problem
        layout.addWidget(problem)
        return card

    def _pull(self, name: str) -> None:
        self.mark_downloading(name)
        self.pull_requested.emit(name)

    def _pick_file(self) -> None:
        path, _ = open_file_name(self, "Import a GGUF model", "GGUF (*.gguf)")
        if path:
            self.import_requested.emit(Path(path))

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if gguf_paths(event):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        for path in gguf_paths(event):
            self.import_requested.emit(path)
        event.acceptProposedAction()
