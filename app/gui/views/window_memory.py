"""The main window's size, place and maximised state, kept in ``QSettings`` between runs
(``WindowPlace`` says why not Qt's ``saveGeometry``)."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSettings, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

from localllm.app.gui.state.window_place import Area, WindowPlace

__all__ = ["DEFAULT_SIZE", "PLACE_KEY", "remember_place", "restore_place"]

PLACE_KEY = "window/place"  # QSettings: "x y width height normal|maximized"
_QT_GEOMETRY_KEY = "window/geometry"  # Qt's saveGeometry, written by earlier versions
DEFAULT_SIZE = (1180, 760)  # the first run's, made to fit a smaller screen


def _area(rect: QRect) -> Area:
    return Area(rect.x(), rect.y(), rect.width(), rect.height())


def _screens() -> list[Area]:
    primary = QGuiApplication.primaryScreen()
    others = [s for s in QGuiApplication.screens() if s is not primary]
    return [_area(s.availableGeometry()) for s in ([primary] if primary else []) + others]


def restore_place(window: QWidget, settings: QSettings) -> None:
    """Size, place and maximised state as the last run left them; call it before the window
    is shown (it is then shown maximised)."""
    place = WindowPlace.parse(settings.value(PLACE_KEY))
    earlier = settings.value(_QT_GEOMETRY_KEY) if place is None else None
    if earlier is not None and window.restoreGeometry(earlier):
        return  # an earlier version's, restored once (Qt refuses it on another screen)
    fitted, kept = (place or WindowPlace(Area(0, 0, *DEFAULT_SIZE))).fitted(_screens())
    window.resize(fitted.area.width, fitted.area.height)
    if kept and place is not None:  # else the window manager places it
        window.move(fitted.area.x, fitted.area.y)
    if fitted.maximized:
        window.setWindowState(window.windowState() | Qt.WindowState.WindowMaximized)


def remember_place(window: QWidget, settings: QSettings) -> None:
    """Keep the window's place (shown, hidden to the tray or maximised)."""
    maximized = window.isMaximized()
    if maximized:  # the size it goes back to; its frame's corner, as ``move`` takes it
        normal = window.normalGeometry()
        frame = window.pos() - window.geometry().topLeft()
        area = Area(normal.x() + frame.x(), normal.y() + frame.y(), normal.width(), normal.height())
    else:
        area = Area(window.x(), window.y(), window.width(), window.height())
    settings.setValue(PLACE_KEY, WindowPlace(area, maximized).text())
    settings.remove(_QT_GEOMETRY_KEY)
