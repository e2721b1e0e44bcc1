"""The chat list: search, new, rename in place (F2 or double-click), delete.

Emits requests; the chat controller owns the list and does the work.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLineEdit,
    QListView,
    QMenu,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.gui.item_models.conversations import CONVERSATION_ROLE
from app.gui.views.plain_text import confirm

__all__ = ["ChatSidebar"]


class ChatSidebar(QWidget):
    open_requested = Signal(str)
    new_requested = Signal()
    delete_requested = Signal(str)
    search_changed = Signal(str)

    def __init__(self, model, icons=None, parent=None):
        super().__init__(parent)
        self.search = QLineEdit(placeholderText="Search chats (Ctrl+F)", clearButtonEnabled=True)
        self.new_button = QToolButton(toolTip="New chat (Ctrl+N)", text="New")
        self.list = QListView()
        self.list.setModel(model)
        self.list.setEditTriggers(
            QAbstractItemView.EditTrigger.EditKeyPressed
            | QAbstractItemView.EditTrigger.DoubleClicked
        )
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)  # long titles end in "…"
        self.list.setUniformItemSizes(True)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._menu)
        self.list.selectionModel().currentChanged.connect(self._current)
        self._icons = icons
        self._selecting = False  # highlighting the open chat, not a click to open one
        self._search_icon = self.search.addAction(QIcon(), QLineEdit.ActionPosition.LeadingPosition)
        self.retheme()
        self._debounce = QTimer(self, singleShot=True, interval=250)
        self._debounce.timeout.connect(lambda: self.search_changed.emit(self.search.text()))
        self.search.textChanged.connect(self._debounce.start)
        self.new_button.clicked.connect(self.new_requested)

        top = QHBoxLayout()
        top.addWidget(self.search, 1)
        top.addWidget(self.new_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.list, 1)

    def retheme(self) -> None:
        """Icons in the current text colour (light on dark, dark on light)."""
        if self._icons is not None:
            self.new_button.setIcon(self._icons.get("new"))
            self._search_icon.setIcon(self._icons.get("search"))

    def select(self, conversation_id: str | None) -> None:
        """Highlight the chat on screen without asking to open it again."""
        model = self.list.model()
        for row in range(model.rowCount()):
            index = model.index(row, 0)
            if index.data(CONVERSATION_ROLE).id == conversation_id:
                # not by blocking the selection's signals: the view redraws on them
                self._selecting = True
                self.list.setCurrentIndex(index)
                self._selecting = False
                return
        self.list.clearSelection()

    def focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    def _current(self, index: QModelIndex, _previous: QModelIndex) -> None:
        if index.isValid() and not self._selecting:
            self.open_requested.emit(index.data(CONVERSATION_ROLE).id)

    def _menu(self, point: QPoint) -> None:
        index = self.list.indexAt(point)
        if not index.isValid():
            return
        menu = QMenu(self)
        menu.addAction("Rename", lambda: self.list.edit(index))
        menu.addAction("Delete…", lambda: self._confirm_delete(index))
        menu.popup(self.list.viewport().mapToGlobal(point))

    def _confirm_delete(self, index: QModelIndex) -> None:
        conversation = index.data(CONVERSATION_ROLE)
        question = f"Delete “{conversation.title}” and all its messages?"
        if confirm(self, "Delete chat", question):
            self.delete_requested.emit(conversation.id)
