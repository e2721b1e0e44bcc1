"""Icons from ``assets/icons``: Lucide's SVGs (see its README), tinted to the current text
colour.

The icons stroke with ``currentColor``; we substitute the palette's colour (and a slightly
finer stroke, which reads better at 16 px) before rendering, so the same files serve light and
dark themes.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QRectF, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtSvg import QSvgRenderer

__all__ = ["ASSETS", "Icons"]

ASSETS = Path(__file__).resolve().parents[2] / "assets"
_SIZES = (16, 24, 32, 48)  # 1x and 2x of the sizes the app shows
_STROKE = 'stroke-width="1.75"'


class Icons:
    def __init__(self, assets: Path = ASSETS):
        self._assets = assets
        self._color = QColor("#1f2328")
        self._cache: dict[tuple[str, str], QIcon] = {}

    def set_color(self, color: QColor) -> None:
        self._color = QColor(color)

    def app_icon(self) -> QIcon:
        return QIcon(str(self._assets / "app.svg"))

    def tray_icon(self) -> QIcon:
        return QIcon(str(self._assets / "tray.svg"))

    def get(self, name: str, color: str | None = None) -> QIcon:
        """``name`` in the text colour, or in ``color`` (e.g. white on the accent)."""
        tint = color or self._color.name()
        key = (name, tint)
        if key not in self._cache:
            self._cache[key] = self._render(name, tint)
        return self._cache[key]

    def _render(self, name: str, tint: str) -> QIcon:
        path = self._assets / "icons" / f"{name}.svg"
        if not path.is_file():
            return QIcon()
        svg = path.read_text(encoding="utf-8").replace("currentColor", tint)
        renderer = QSvgRenderer(QByteArray(svg.replace('stroke-width="2"', _STROKE).encode()))
        icon = QIcon()
        for size in _SIZES:
            pixmap = QPixmap(size, size)
            pixmap.fill(Qt.GlobalColor.transparent)
            painter = QPainter(pixmap)
            renderer.render(painter, QRectF(0, 0, size, size))
            painter.end()
            icon.addPixmap(pixmap)
        return icon
