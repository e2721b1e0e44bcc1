"""The first-run page: a few models sized for this machine, one click each, or your own GGUF.

Shown while no model is installed. The suggestion that suits the machine best is marked; the
others carry the same fit badge the Discover page uses. A GGUF file can be picked or dropped
anywhere on the page.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.gui.state.downloads import Download
from app.gui.state.fit import Fit
from app.gui.state.records import SystemInfo
from app.gui.state.starter_models import Suggestion, suggest
from app.gui.state.units import bytes_text, duration_text
from app.gui.views.plain_text import plain_label

__all__ = ["WelcomePage", "gguf_paths"]


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

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setAcceptDrops(True)
        self.machine = plain_label(_machine(None), objectName="muted")
        self.cards = QGridLayout()
        self.buttons: dict[str, QPushButton] = {}
        self.problems: dict[str, QLabel] = {}  # a failed download's reason, on its card
        import_button = QPushButton("Import a GGUF file…")
        import_button.clicked.connect(self._pick_file)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(40, 30, 40, 30)
        layout.addWidget(QLabel("Welcome to localllm", objectName="pageTitle"))
        layout.addWidget(
            QLabel(
                "Models run on this computer; nothing you type leaves it. "
                "Pick one to download and start chatting.",
                wordWrap=True,
            )
        )
        layout.addWidget(self.machine)
        layout.addLayout(self.cards)
        row = QHBoxLayout()
        row.addWidget(import_button)
        row.addWidget(QLabel("…or drop a .gguf file here", objectName="muted"))
        row.addStretch(1)
        layout.addLayout(row)
        layout.addStretch(1)
        self.set_system(None)

    def set_system(self, system: SystemInfo | None) -> None:
        while self.cards.count():
            self.cards.takeAt(0).widget().deleteLater()
        self.buttons.clear()
        self.problems.clear()
        self.machine.setText(_machine(system))
        for i, suggestion in enumerate(suggest(system)):
            self.cards.addWidget(self._card(suggestion), i // 3, i % 3)

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
        problem.setText(download.error if download.state == "failed" else "")
        problem.setVisible(download.state == "failed")
        if download.state == "failed":
            button.setEnabled(True)
            button.setText("Retry download")
        elif download.active:
            eta = duration_text(download.eta)
            left = f", {eta} left" if eta else ""
            self.mark_downloading(download.name, f"Downloading… {download.fraction:.0%}{left}")
        else:
            self.mark_downloading(download.name, "Ready")

    def _card(self, s: Suggestion) -> QFrame:
        card = QFrame(objectName="card")
        layout = QVBoxLayout(card)
        title = f"<b>{s.model.name}</b>" + ("  ★ recommended" if s.recommended else "")
        layout.addWidget(QLabel(title))
        layout.addWidget(QLabel(s.model.blurb, wordWrap=True))
        facts = f"{s.model.parameters} parameters · {bytes_text(s.model.size)}"
        layout.addWidget(QLabel(facts, objectName="muted"))
        if s.fit is not Fit.UNKNOWN:
            badge = QLabel(s.fit.label)
            badge.setStyleSheet(f"color: {s.fit.colour}; font-weight: 600;")
            layout.addWidget(badge)
        button = QPushButton("Download" if s.fit is not Fit.TOO_LARGE else "Download anyway")
        button.setDefault(s.recommended)
        button.clicked.connect(lambda: self._pull(s.model.name))
        self.buttons[s.model.name] = button
        layout.addWidget(button, 0, Qt.AlignmentFlag.AlignLeft)
        problem = plain_label(wordWrap=True, objectName="problem")  # the daemon's error
        problem.hide()
        self.problems[s.model.name] = problem
        layout.addWidget(problem)
        layout.addStretch(1)
        return card

    def _pull(self, name: str) -> None:
        self.mark_downloading(name)
        self.pull_requested.emit(name)

    def _pick_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import a GGUF model", "", "GGUF (*.gguf)")
        if path:
            self.import_requested.emit(Path(path))

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if gguf_paths(event):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        for path in gguf_paths(event):
            self.import_requested.emit(path)
        event.acceptProposedAction()
