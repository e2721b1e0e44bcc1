"""The chat list: search, new, chats grouped by day, and each chat's menu (rename in place,
export as Markdown, delete) from the "more" button on the row under the pointer, a right
click, or the keyboard (the Menu key or Shift+F10; F2 renames, Delete deletes).

Emits requests; the chat controller owns the list and does the work.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QModelIndex, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QIcon, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLineEdit,
    QListView,
    QMenu,
    QVBoxLayout,
    QWidget,
)

from localllm.app.gui.design.widgets import icon_button
from localllm.app.gui.item_models.conversations import CONVERSATION_ROLE
from localllm.app.gui.state.chat.export import markdown_file_name
from localllm.app.gui.views.chat_list_delegate import ChatListDelegate
from localllm.app.gui.views.file_dialogs import save_file_name
from localllm.app.gui.views.plain_text import confirm

__all__ = ["ChatSidebar"]


class ChatSidebar(QWidget):
    open_requested = Signal(str)
    new_requested = Signal()
    delete_requested = Signal(str)
    export_requested = Signal(str, object)  # chat id, the Markdown file (Path) to write
    search_changed = Signal(str)

    def __init__(self, model, icons=None, parent=None):
        super().__init__(parent)
        self.setMinimumWidth(170)
        self.search = QLineEdit(placeholderText="Search chats", clearButtonEnabled=True)
        self.search.setAccessibleName("Search chats")
        self.new_button = icon_button(icons, "new", "New chat", "New chat (Ctrl+N)")
        self.new_button.setText("New")
        self.list = QListView(objectName="chats", accessibleName="Chats")
        self.list.setModel(model)
        self.delegate = ChatListDelegate(icons, self.list)
        self.list.setItemDelegate(self.delegate)
        self.list.setMouseTracking(True)
        self.delegate.menu_requested.connect(self._menu_at)
        self.list.setEditTriggers(
            QAbstractItemView.EditTrigger.EditKeyPressed
            | QAbstractItemView.EditTrigger.DoubleClicked
        )
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)  # long titles end in "…"
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._menu)
        self.list.selectionModel().currentChanged.connect(self._current)
        self._icons = icons
        self._selecting = False  # highlighting the open chat, not a click to open one
        self._search_icon = self.search.addAction(QIcon(), QLineEdit.ActionPosition.LeadingPosition)
        self._search_icon.setText("Search chats")
        self.retheme()
        self._debounce = QTimer(self, singleShot=True, interval=250)
        self._debounce.timeout.connect(lambda: self.search_changed.emit(self.search.text()))
        self.search.textChanged.connect(self._debounce.start)
        self.new_button.clicked.connect(self.new_requested)
        for key, action in (
            (
                QKeySequence(Qt.Key.Key_Delete),
                lambda: self._confirm_delete(self.list.currentIndex()),
            ),
            (QKeySequence("Shift+F10"), self._menu_for_current),
            (QKeySequence(Qt.Key.Key_Menu), self._menu_for_current),
        ):
            QShortcut(key, self.list, action, context=Qt.ShortcutContext.WidgetShortcut)

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
        if index.isValid():
            self._menu_at(index, self.list.viewport().mapToGlobal(point))

    def _menu_for_current(self) -> None:
        index = self.list.currentIndex()
        if index.isValid():
            where = self.list.visualRect(index).bottomLeft()
            self._menu_at(index, self.list.viewport().mapToGlobal(where))

    def menu(self, index: QModelIndex) -> QMenu:
        """The chat's menu: rename, export as Markdown, delete."""
        menu = QMenu(self)
        menu.addAction("Rename", lambda: self.list.edit(index))
        menu.addAction("Export as Markdown…", lambda: self._ask_export(index))
        menu.addSeparator()
        menu.addAction("Delete…", lambda: self._confirm_delete(index))
        return menu

    def _menu_at(self, index: QModelIndex, where) -> None:
        self.menu(index).popup(where)

    def _ask_export(self, index: QModelIndex) -> None:
        conversation = index.data(CONVERSATION_ROLE)
        path, _ = save_file_name(
            self,
            "Export chat as Markdown",
            markdown_file_name(conversation.title),
            "Markdown (*.md)",
        )
        if path:
            self.export_requested.emit(conversation.id, Path(path))

    def _confirm_delete(self, index: QModelIndex) -> None:
        if not index.isValid():
            return
        conversation = index.data(CONVERSATION_ROLE)
        question = f"Delete “{conversation.title}” and all its messages?"
        if confirm(self, "Delete chat", question):
            self.delete_requested.emit(conversation.id)
