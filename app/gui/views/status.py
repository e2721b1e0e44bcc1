"""The status bar's daemon indicator: a coloured dot, what is happening, and a Restart button
when the daemon has stopped or failed to start.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from localllm.app.gui.state.daemon_health import DaemonState, DaemonStatus
from localllm.app.gui.views.plain_text import plain_label, plain_tooltip

__all__ = ["DaemonIndicator"]

_TEXT_WIDTH = 420  # pixels: the status bar never pushes the window wider
_DOTS = {
    DaemonState.RUNNING: "#16a34a",
    DaemonState.CONNECTING: "#9ca3af",
    DaemonState.STARTING: "#d97706",
    DaemonState.STOPPING: "#d97706",
    DaemonState.STOPPED: "#dc2626",
    DaemonState.FAILED: "#dc2626",
}


class DaemonIndicator(QWidget):
    restart_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.dot = QLabel()
        self.text = plain_label()  # may quote why the daemon failed to start
        self.restart = QPushButton("Restart")
        self.restart.clicked.connect(self.restart_requested)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        layout.addWidget(self.dot)
        layout.addWidget(self.text)
        layout.addWidget(self.restart)
        self.show_status(DaemonStatus(DaemonState.CONNECTING))

    def show_status(self, status: DaemonStatus) -> None:
        self.dot.setText(f"<span style='color:{_DOTS[status.state]}; font-size:14pt;'>●</span>")
        text = status.text()  # a failure's reason can be long: elided, whole in the tooltip
        metrics = self.text.fontMetrics()
        self.text.setText(metrics.elidedText(text, Qt.TextElideMode.ElideRight, _TEXT_WIDTH))
        self.text.setToolTip(plain_tooltip(text))
        self.restart.setVisible(status.can_restart)
