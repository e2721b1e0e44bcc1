"""``python installers/icons.py SVG OUT``: render the app icon into a .ico, .icns or .png file.

Windows and macOS executables take their icon in their own formats, and the project keeps only
``assets/app.svg``; Qt (already a dependency) renders the SVG and writes all three formats, so
the build needs no image tool. Runs in its own process: Qt wants a (headless) application.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["SIZES", "render"]

SIZES = {".ico": 256, ".icns": 1024, ".png": 512}  # the largest size each format holds


def render(svg: Path, out: Path) -> None:
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication(["icons", "-platform", "offscreen"])
    size = SIZES[out.suffix.lower()]
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(0)
    painter = QPainter(image)
    QSvgRenderer(str(svg)).render(painter)
    painter.end()
    out.parent.mkdir(parents=True, exist_ok=True)
    if not image.save(str(out)):
        raise SystemExit(f"icons: Qt could not write {out}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or Path(sys.argv[2]).suffix.lower() not in SIZES:
        raise SystemExit("usage: python installers/icons.py SVG OUT.(ico|icns|png)")
    render(Path(sys.argv[1]), Path(sys.argv[2]))
