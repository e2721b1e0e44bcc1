"""The chat page's columns, fitted to its width: the chat list, the conversation (the header,
the transcript, then the notices and the composer in the transcript's reading width, centred),
and the chat settings.

Where the page has room, the list and the settings are columns beside the conversation. Below
``LIST_FROM`` pixels of page (a window of about 1,150) the list folds away: the header's Chats
button shows it as a drawer over the conversation, which goes once a chat is picked. The
settings are a column only where the conversation keeps ``CONVERSATION_LEAST`` pixels beside
them; elsewhere the settings button opens them as a drawer over the conversation's right side.
Drawers float between the header and the composer, so the model picker, the settings button
and the message box stay in reach.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QSplitter, QVBoxLayout, QWidget

from localllm.app.gui.design.tokens import READING_WIDTH, SPACE
from localllm.app.gui.views.chat_header import ChatHeader
from localllm.app.gui.views.drawer import Drawer
from localllm.app.gui.views.sidebar import ChatSidebar

__all__ = ["CONVERSATION_LEAST", "LIST_FROM", "ChatColumns"]

LIST_FROM = 940  # pixels of chat page from which the chat list has a column
CONVERSATION_LEAST = 560  # pixels the conversation keeps beside the settings' column
_LIST_WIDTH = 220
_SETTINGS_WIDTH = 300


class ChatColumns(QObject):
    def __init__(
        self,
        sidebar: ChatSidebar,
        header: ChatHeader,
        transcript: QWidget,
        lower: Sequence[QWidget],
        settings: QWidget,
        parent: QObject | None = None,
    ):
        """``lower``: what goes under the transcript, in its reading width (notices, the
        composer); ``settings``: the chat settings' (scrolling) panel."""
        super().__init__(parent)
        self.header, self.transcript = header, transcript
        self.center = QWidget(minimumWidth=340)
        column = QVBoxLayout(self.center)
        column.setContentsMargins(SPACE.sm, 0, SPACE.sm, SPACE.sm)
        column.setSpacing(SPACE.sm)
        column.addWidget(header)
        column.addWidget(transcript, 1)
        self.lower = self._reading_column(lower)
        self.lower.installEventFilter(self)
        column.addWidget(self.lower)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(False)
        for part in (sidebar, self.center, settings):
            self.splitter.addWidget(part)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([_LIST_WIDTH, 640, _SETTINGS_WIDTH])
        left, right = Qt.Edge.LeftEdge, Qt.Edge.RightEdge
        self.chats = Drawer(sidebar, self.splitter, self.center, edge=left, widths=(240, 300))
        self.settings = Drawer(settings, self.splitter, self.center, edge=right, widths=(240, 340))
        header.list_button.toggled.connect(self.chats.set_open)
        header.settings_button.toggled.connect(self.settings.set_open)
        sidebar.open_requested.connect(lambda _id: self.fold_list())
        sidebar.new_requested.connect(self.fold_list)
        transcript.installEventFilter(self)  # the drawers follow its room

    def _reading_column(self, parts: Sequence[QWidget]) -> QWidget:
        """The notices and the composer, under the transcript's text and no wider (the
        margins that centre them follow the column's width: ``eventFilter``)."""
        lower = QWidget()
        column = self._lower_column = QVBoxLayout(lower)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(SPACE.sm)
        for part in parts:
            column.addWidget(part)
        return lower

    def fit(self, width: int) -> None:
        """Columns or drawers, for a chat page ``width`` pixels wide."""
        list_docked = width >= LIST_FROM
        beside = width - (_LIST_WIDTH if list_docked else 0) - _SETTINGS_WIDTH
        moved = self.chats.set_floating(not list_docked)
        if moved:
            self.header.list_button.setChecked(False)
            self.chats.set_open(list_docked)
        self.header.list_button.setVisible(not list_docked)
        moved |= self.settings.set_floating(beside < CONVERSATION_LEAST)
        if moved:
            self._share(width)
        self.place()

    def _share(self, width: int) -> None:
        """The columns' widths once one came or went: the conversation has the rest."""
        widths = {self.chats.panel: _LIST_WIDTH, self.settings.panel: _SETTINGS_WIDTH}
        shown = [w for i in range(self.splitter.count()) if (w := self.splitter.widget(i))]
        rest = width - sum(widths.get(part, 0) for part in shown)
        self.splitter.setSizes([widths.get(part, max(rest, 340)) for part in shown])

    def show_list(self) -> None:
        """The list on screen: its drawer opens where it is folded away."""
        if self.chats.floating:
            self.header.list_button.setChecked(True)

    def fold_list(self) -> None:
        """A chat was picked: the list's drawer has done its job."""
        if self.chats.floating:
            self.header.list_button.setChecked(False)

    def close_drawer(self) -> bool:
        """Close an open drawer (the settings' first); False when none was open."""
        for drawer, button in (
            (self.settings, self.header.settings_button),
            (self.chats, self.header.list_button),
        ):
            if drawer.floating and drawer.is_open:
                button.setChecked(False)
                return True
        return False

    def place(self) -> None:
        """The drawers float over the transcript, between the header and the composer."""
        area = self.transcript.geometry()
        self.chats.place(area, CONVERSATION_LEAST)
        self.settings.place(area, CONVERSATION_LEAST)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.transcript and event.type() in (QEvent.Type.Resize, QEvent.Type.Move):
            self.place()
        elif watched is self.lower and event.type() == QEvent.Type.Resize:
            side = max(0, (self.lower.width() - READING_WIDTH) // 2)
            self._lower_column.setContentsMargins(side, 0, side, 0)
        return super().eventFilter(watched, event)
