"""Light and dark, following the system (Qt 6.5+ ``QStyleHints.colorScheme``) unless the user
chose one on the Settings page.

Fusion with our palette and the design system's stylesheet (``design``) looks the same on every
platform; when the system or the user switches, both follow and ``changed`` tells the views that
draw their own colours (the transcript, the icons) to redraw.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontDatabase, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from localllm.app.gui.design.stylesheet import stylesheet
from localllm.app.gui.design.tokens import TYPE, Palette, palette
from localllm.app.gui.icons import ASSETS

__all__ = ["THEMES", "Theme", "load_fonts"]

THEMES = (("system", "Follow the system"), ("light", "Light"), ("dark", "Dark"))
_FONT = "Inter"
# the drawn parts the stylesheet needs as files, as SVG in ``currentColor``
_PARTS = {
    "check": '<path d="M4 12.5l5 5L20 6.5" stroke-width="3"/>',
    "down": '<path d="M6 9l6 6 6-6" stroke-width="2.5"/>',
    "up": '<path d="M6 15l6-6 6 6" stroke-width="2.5"/>',
}


def load_fonts(app: QApplication, folder: Path = ASSETS / "fonts") -> bool:
    """Use the bundled Inter as the application font; False (the system font stays) if it
    cannot be loaded."""
    loaded = [QFontDatabase.addApplicationFont(str(f)) for f in sorted(folder.glob("*.woff2"))]
    if not loaded or min(loaded) < 0:
        return False
    font = QFont(_FONT)
    font.setPointSizeF(TYPE.body)
    font.setStyleStrategy(QFont.StyleStrategy.PreferAntialias)
    app.setFont(font)
    return True


def _roles(p: Palette) -> dict[QPalette.ColorRole, str]:
    R = QPalette.ColorRole
    return {
        R.Window: p.window,
        R.WindowText: p.text,
        R.Base: p.surface,
        R.AlternateBase: p.surface_alt,
        R.Text: p.text,
        R.Button: p.surface,
        R.ButtonText: p.text,
        R.ToolTipBase: p.surface,
        R.ToolTipText: p.text,
        R.PlaceholderText: p.faint,
        R.Highlight: p.accent,
        R.HighlightedText: p.on_accent,
        R.Link: p.link,
        R.Mid: p.border_strong,
        R.Midlight: p.border,
        R.Dark: p.border_strong,
        R.Light: p.surface,
        R.Shadow: p.border_strong,
    }


class Theme(QObject):
    changed = Signal(bool)  # dark?

    def __init__(self, app: QApplication, forced: str | None = None):
        super().__init__(app)
        self._app = app
        self._forced = forced  # "dark" | "light" | None (follow the system)
        self._parts = tempfile.TemporaryDirectory(prefix="localllm-theme-")
        app.setStyle("Fusion")
        app.styleHints().colorSchemeChanged.connect(lambda _scheme: self.apply())
        self.dark = False
        self.palette: Palette = palette(False)

    @property
    def mode(self) -> str:
        return self._forced or "system"

    def set_mode(self, mode: str) -> None:
        """ "system", "light" or "dark"; applied at once."""
        self._forced = None if mode == "system" else mode
        self.apply()

    def system_is_dark(self) -> bool:
        if self._forced is not None:
            return self._forced == "dark"
        return QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark

    def apply(self) -> None:
        """The palette and the stylesheet; ``changed`` tells the views."""
        p = self.apply_palette()
        self._app.setStyleSheet(stylesheet(p, self._images(p)))
        self.changed.emit(self.dark)

    def apply_palette(self) -> Palette:
        """Only the colours (cheap: the stylesheet polishes every widget there is)."""
        self.dark = self.system_is_dark()
        self.palette = p = palette(self.dark)
        qt = QPalette()
        for role, colour in _roles(p).items():
            qt.setColor(role, QColor(colour))
        for role in (
            QPalette.ColorRole.Text,
            QPalette.ColorRole.ButtonText,
            QPalette.ColorRole.WindowText,
        ):
            qt.setColor(QPalette.ColorGroup.Disabled, role, QColor(p.faint))
        self._app.setPalette(qt)
        return p

    def _images(self, p: Palette) -> dict[str, str]:
        folder = Path(self._parts.name)
        paths = {}
        for name, body in _PARTS.items():
            colour = p.on_accent if name == "check" else p.muted
            path = folder / f"{name}-{'dark' if p.dark else 'light'}.svg"
            path.write_text(
                '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" '
                f'stroke="{colour}" stroke-linecap="round" stroke-linejoin="round">{body}</svg>',
                encoding="utf-8",
            )
            paths[name] = path.as_posix()
        return paths
