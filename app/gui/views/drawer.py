"""A side panel of the chat page (the chat list, the chat settings) that is a column where the
page has room and floats over the conversation where it has not.

Docked, the panel is a column of the page's splitter, shown while it is open. Floating, it sits
in a framed drawer over ``host`` (the conversation column), against one edge, only while it is
open: the conversation keeps its width, and the drawer goes once the user is done. The page
decides which (from its own width) and where the drawer floats (``place``).
"""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QFrame, QSplitter, QVBoxLayout, QWidget

from localllm.app.gui.design.tokens import SPACE

__all__ = ["Drawer"]


class Drawer(QFrame):
    def __init__(
        self,
        panel: QWidget,
        splitter: QSplitter,
        host: QWidget,
        *,
        edge: Qt.Edge,
        widths: tuple[int, int],
    ):
        """``panel``: a column of ``splitter`` now (its first or last); ``widths``: the least
        and the most it floats at (it leaves the conversation the rest, within them)."""
        super().__init__(host)
        self.setObjectName("drawer")
        self.panel, self.splitter, self.edge, self.widths = panel, splitter, edge, widths
        self.floating = False
        self.is_open = panel.isVisibleTo(splitter)
        self._frame = QVBoxLayout(self)
        self._frame.setContentsMargins(SPACE.xs, SPACE.xs, SPACE.xs, SPACE.xs)
        self.hide()

    def set_floating(self, floating: bool) -> bool:
        """Float over the host, or be a column again; True if that changed anything."""
        if floating == self.floating:
            return False
        self.floating = floating
        if floating:
            self._frame.addWidget(self.panel)  # out of the splitter
        else:
            at = 0 if self.edge == Qt.Edge.LeftEdge else self.splitter.count()
            self.splitter.insertWidget(at, self.panel)
        self.set_open(self.is_open)
        return True

    def set_open(self, is_open: bool) -> None:
        self.is_open = is_open
        self.panel.setVisible(is_open or self.floating)
        self.setVisible(is_open and self.floating)
        if self.isVisible():
            self.raise_()

    def place(self, area: QRect, keep: int) -> None:
        """Float within ``area`` (the host's coordinates) against the drawer's edge, leaving
        ``keep`` pixels of it uncovered where the drawer's least width allows."""
        least, most = self.widths
        width = min(area.width(), max(least, min(most, area.width() - keep)))
        left = area.left() if self.edge == Qt.Edge.LeftEdge else area.right() + 1 - width
        self.setGeometry(left, area.top(), width, area.height())
