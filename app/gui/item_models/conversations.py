"""The sidebar's chats for Qt views, and the search filter over them.

A thin adapter: ``ConversationList`` decides order; this turns each change into the matching
insert/move/remove signal. Renaming in place (the view's editor) comes back as ``edited`` so
the controller can save it.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)

from localllm.app.gui.state.chat.conversation_list import ConversationList
from localllm.app.gui.state.chat.records import Conversation

__all__ = ["CONVERSATION_ROLE", "ConversationFilter", "ConversationListModel"]

CONVERSATION_ROLE = Qt.ItemDataRole.UserRole + 1
Index = QModelIndex | QPersistentModelIndex


class ConversationListModel(QAbstractListModel):
    edited = Signal(object)  # Conversation, after an in-place rename

    def __init__(self, conversations: ConversationList | None = None, parent=None):
        super().__init__(parent)
        self._list = conversations if conversations is not None else ConversationList()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._list)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        conversation = self._list[index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return conversation.title
        if role == Qt.ItemDataRole.ToolTipRole:
            used = datetime.fromtimestamp(conversation.updated_at).strftime("%Y-%m-%d %H:%M")
            return f"{conversation.model or 'no model'} · {used}"
        if role == CONVERSATION_ROLE:
            return conversation
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        base = super().flags(index)
        return base | Qt.ItemFlag.ItemIsEditable if index.isValid() else base

    def setData(self, index: Index, value, role: int = Qt.ItemDataRole.EditRole) -> bool:
        title = str(value).strip()
        if not index.isValid() or role != Qt.ItemDataRole.EditRole or not title:
            return False
        renamed = replace(self._list[index.row()], title=title)
        self.update(renamed)
        self.edited.emit(renamed)
        return True

    def conversation(self, conversation_id: str) -> Conversation | None:
        return self._list.get(conversation_id)

    def index_of(self, conversation_id: str) -> QModelIndex:
        row = self._list.row_of(conversation_id)
        return QModelIndex() if row is None else self.index(row, 0)

    def add(self, conversation: Conversation) -> QModelIndex:
        row = self._list.insert_row_for(conversation)
        self.beginInsertRows(QModelIndex(), row, row)
        self._list.add(conversation)
        self.endInsertRows()
        return self.index(row, 0)

    def update(self, conversation: Conversation) -> None:
        """Replace a chat; it moves up the list when it has just been used."""
        old = self._list.row_of(conversation.id)
        if old is None:
            return
        new = self._list.row_after_update(conversation)
        if new != old:
            self.beginMoveRows(
                QModelIndex(), old, old, QModelIndex(), new if new < old else new + 1
            )
        self._list.update(conversation)
        if new != old:
            self.endMoveRows()
        self.dataChanged.emit(self.index(new, 0), self.index(new, 0))

    def remove(self, conversation_id: str) -> None:
        row = self._list.row_of(conversation_id)
        if row is None:
            return
        self.beginRemoveRows(QModelIndex(), row, row)
        self._list.remove(conversation_id)
        self.endRemoveRows()

    def reset(self, conversations: list[Conversation]) -> None:
        self.beginResetModel()
        self._list.reset(conversations)
        self.endResetModel()


class ConversationFilter(QSortFilterProxyModel):
    """Matches titles as you type; the store's full-text matches are added when they arrive."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._query = ""
        self._matches: set[str] = set()

    def set_query(self, text: str, matches: set[str] | None = None) -> None:
        modern = hasattr(self, "beginFilterChange")  # Qt 6.9+; invalidateFilter is deprecated
        if modern:
            self.beginFilterChange()
        self._query = text.strip().casefold()
        self._matches = matches or set()
        if modern:
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        else:
            self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        if not self._query:
            return True
        index = self.sourceModel().index(source_row, 0, source_parent)
        conversation: Conversation = index.data(CONVERSATION_ROLE)
        return self._query in conversation.title.casefold() or conversation.id in self._matches
