"""The mouse wheel scrolls the page, not the field under the pointer.

Qt gives spin boxes, combo boxes and dials the wheel (and the focus, through
``Qt.FocusPolicy.WheelFocus``) as soon as the pointer is over them, so scrolling a settings
panel changes whichever number passes under the pointer. Careful Qt apps let a field take the
wheel only once the user has clicked or tabbed into it: the field's focus policy becomes
``StrongFocus`` (the wheel no longer focuses it), and a wheel over an unfocused field is
ignored, so Qt hands it on to the widget behind it, the scroll area. One application event
filter does both for every field, those built before it and those built after (as each is
polished), so no page has to remember it.
"""

from __future__ import annotations

from typing import TypeGuard

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (
    QAbstractSlider,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QScrollBar,
    QWidget,
)

__all__ = ["WheelGuard", "is_value_field"]


def is_value_field(widget: QObject) -> TypeGuard[QWidget]:
    """A field whose value the wheel would change: spin boxes (double, date and time too),
    combo boxes, sliders and dials; never a scroll bar, whose job the wheel is."""
    if isinstance(widget, QScrollBar):
        return False
    return isinstance(widget, (QAbstractSpinBox, QComboBox, QAbstractSlider))


class WheelGuard(QObject):
    """Installed on the application at once; ``parent`` (the window) holds it, and it leaves
    with it."""

    def __init__(self, app: QApplication, parent: QObject | None = None) -> None:
        super().__init__(parent)
        for widget in app.allWidgets():  # those made before it
            self._calm(widget)
        app.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()  # every event of the app passes here: the common case first
        if kind == QEvent.Type.Wheel:
            if is_value_field(watched) and not watched.hasFocus():
                event.ignore()  # Qt offers it to the parents: the scroll area scrolls
                return True
        elif kind == QEvent.Type.Polish:
            self._calm(watched)
        return False

    @staticmethod
    def _calm(widget: QObject) -> None:
        """No focus from the wheel; a click or Tab still focuses the field."""
        if is_value_field(widget) and widget.focusPolicy() == Qt.FocusPolicy.WheelFocus:
            widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
