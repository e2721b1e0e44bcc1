"""Keep a scroll area at its end while the user is there, and leave them be when they are not.

Following is decided by where the user last put the scroll bar, not by where the bar happens
to be when new content arrives: Qt lays a long document out lazily and re-lays it out when the
width changes (the settings panel opening), so the range keeps moving after each redraw. Every
range change while following goes to the new end; a scroll the user makes decides whether
they still follow.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QScrollBar

__all__ = ["BottomFollower"]

_AT_END = 4  # pixels from the end that still count as "at the end"


class BottomFollower(QObject):
    def __init__(self, bar: QScrollBar, parent: QObject | None = None):
        super().__init__(parent)
        self._bar = bar
        self.following = True
        self._moving = 0  # > 0 while the change is ours, not the user's
        bar.rangeChanged.connect(self._range_changed)
        bar.valueChanged.connect(self._value_changed)

    def to_end(self) -> None:
        """Follow again (a chat opened, the user sent a message)."""
        self.following = True
        self._move(self._bar.maximum())

    def hold(self) -> None:
        """Stay where the user is, even at the end (they opened a long message to read it)."""
        self.following = False

    @contextlib.contextmanager
    def redrawing(self) -> Iterator[None]:
        """Around replacing the content: keep the user's place (replacing resets it)."""
        kept = self._bar.value()
        self._moving += 1
        try:
            yield
        finally:
            self._bar.setValue(self._bar.maximum() if self.following else kept)
            self._moving -= 1

    def _move(self, value: int) -> None:
        self._moving += 1
        try:
            self._bar.setValue(value)
        finally:
            self._moving -= 1

    def _range_changed(self, _minimum: int, maximum: int) -> None:
        if self.following:
            self._move(maximum)

    def _value_changed(self, value: int) -> None:
        if not self._moving:
            self.following = value >= self._bar.maximum() - _AT_END
