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
_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="24" height="24" viewBox="0 0 24 24" '
    'fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" '
    'stroke-linejoin="round">{}</svg>'
)
# Lucide's "mic" and "volume-2" (the same ISC licence), until they join assets/icons
_BUILT_IN = {
    "mic": _SVG.format(
        '<path d="M12 19v3"/><path d="M19 10v2a7 7 0 0 1-14 0v-2"/>'
        '<rect x="9" y="2" width="6" height="13" rx="3"/>'
    ),
    "read-aloud": _SVG.format(
        '<path d="M11 4.702a.705.705 0 0 0-1.203-.498L6.413 7.587A1.4 1.4 0 0 1 5.416 8H3a1 '
        "1 0 0 0-1 1v6a1 1 0 0 0 1 1h2.416a1.4 1.4 0 0 1 .997.413l3.383 3.384A.705.705 0 0 0 "
        '11 19.298z"/><path d="M16 9a5 5 0 0 1 0 6"/><path d="M19.364 18.364a9 9 0 0 0 '
        '0-12.728"/>'
    ),
}


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
        if path.is_file():
            return _drawn(path.read_text(encoding="utf-8"), tint)
        return _drawn(_BUILT_IN[name], tint) if name in _BUILT_IN else QIcon()


def _drawn(svg: str, tint: str) -> QIcon:
    svg = svg.replace("currentColor", tint)
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
