"""Light and dark, following the system (Qt 6.5+ ``QStyleHints.colorScheme``).

Fusion with our own palette looks the same on every platform; when the system switches, the
palette follows and ``changed`` tells the views that draw their own colours (the transcript,
the icons) to redraw.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

__all__ = ["Theme"]

_ACCENT = "#4f46e5"
_DARK = {
    QPalette.ColorRole.Window: "#1f2024",
    QPalette.ColorRole.WindowText: "#e6e7ea",
    QPalette.ColorRole.Base: "#17181b",
    QPalette.ColorRole.AlternateBase: "#24262b",
    QPalette.ColorRole.Text: "#e6e7ea",
    QPalette.ColorRole.Button: "#2a2c31",
    QPalette.ColorRole.ButtonText: "#e6e7ea",
    QPalette.ColorRole.ToolTipBase: "#2a2c31",
    QPalette.ColorRole.ToolTipText: "#e6e7ea",
    QPalette.ColorRole.PlaceholderText: "#8b8f98",
    QPalette.ColorRole.Highlight: "#6366f1",
    QPalette.ColorRole.HighlightedText: "#ffffff",
    QPalette.ColorRole.Link: "#93a4ff",
}
_LIGHT = {
    QPalette.ColorRole.Window: "#f6f7f9",
    QPalette.ColorRole.WindowText: "#1f2328",
    QPalette.ColorRole.Base: "#ffffff",
    QPalette.ColorRole.AlternateBase: "#f1f3f5",
    QPalette.ColorRole.Text: "#1f2328",
    QPalette.ColorRole.Button: "#eceef2",
    QPalette.ColorRole.ButtonText: "#1f2328",
    QPalette.ColorRole.ToolTipBase: "#ffffff",
    QPalette.ColorRole.ToolTipText: "#1f2328",
    QPalette.ColorRole.PlaceholderText: "#6b7280",
    QPalette.ColorRole.Highlight: _ACCENT,
    QPalette.ColorRole.HighlightedText: "#ffffff",
    QPalette.ColorRole.Link: _ACCENT,
}
_STYLE = """
QListView#nav { border: none; background: transparent; font-size: 11pt; outline: 0; }
QListView#nav::item { padding: 8px 10px; border-radius: 6px; }
QListView#nav::item:selected { background: palette(highlight); color: palette(highlighted-text); }
QLabel#pageTitle { font-size: 15pt; font-weight: 600; }
QLabel#muted { color: palette(placeholder-text); }
QLabel#problem { color: #dc2626; }
QFrame#card { border: 1px solid palette(mid); border-radius: 8px; }
"""


class Theme(QObject):
    changed = Signal(bool)  # dark?

    def __init__(self, app: QApplication, forced: str | None = None):
        super().__init__(app)
        self._app = app
        self._forced = forced  # "dark" | "light" | None (follow the system)
        app.setStyle("Fusion")
        app.styleHints().colorSchemeChanged.connect(lambda _scheme: self.apply())
        self.dark = False

    def system_is_dark(self) -> bool:
        if self._forced is not None:
            return self._forced == "dark"
        return QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark

    def apply(self) -> None:
        self.dark = self.system_is_dark()
        palette = QPalette()
        for role, colour in (_DARK if self.dark else _LIGHT).items():
            palette.setColor(role, QColor(colour))
        disabled = QColor("#6b6f78" if self.dark else "#9aa0a6")
        for role in (
            QPalette.ColorRole.Text,
            QPalette.ColorRole.ButtonText,
            QPalette.ColorRole.WindowText,
        ):
            palette.setColor(QPalette.ColorGroup.Disabled, role, disabled)
        self._app.setPalette(palette)
        self._app.setStyleSheet(_STYLE)
        self.changed.emit(self.dark)
