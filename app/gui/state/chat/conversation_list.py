"""The sidebar's list of chats, most recently used first, without Qt.

Each change returns the rows it touched, which is all a ``QAbstractListModel`` adapter needs to
emit precise insert/move/remove signals (so selection and scroll survive updates).
"""

from __future__ import annotations

from collections.abc import Iterable

from localllm.app.gui.state.chat.records import Conversation

__all__ = ["ConversationList"]


class ConversationList:
    def __init__(self, conversations: Iterable[Conversation] = ()):
        self._items = sorted(conversations, key=lambda c: c.updated_at, reverse=True)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, row: int) -> Conversation:
        return self._items[row]

    def __iter__(self):
        return iter(self._items)

    def row_of(self, conversation_id: str) -> int | None:
        return next((i for i, c in enumerate(self._items) if c.id == conversation_id), None)

    def get(self, conversation_id: str) -> Conversation | None:
        row = self.row_of(conversation_id)
        return None if row is None else self._items[row]

    def insert_row_for(self, conversation: Conversation) -> int:
        """Where ``conversation`` belongs by recency (ties go first)."""
        return next(
            (i for i, c in enumerate(self._items) if c.updated_at <= conversation.updated_at),
            len(self._items),
        )

    def row_after_update(self, conversation: Conversation) -> int:
        """The row ``update(conversation)`` will put it at."""
        others = [c for c in self._items if c.id != conversation.id]
        return next(
            (i for i, c in enumerate(others) if c.updated_at <= conversation.updated_at),
            len(others),
        )

    def add(self, conversation: Conversation) -> int:
        row = self.insert_row_for(conversation)
        self._items.insert(row, conversation)
        return row

    def update(self, conversation: Conversation) -> tuple[int, int]:
        """Replace a chat; returns its old row and its new row (it moves up when used)."""
        old = self.row_of(conversation.id)
        if old is None:
            raise KeyError(conversation.id)
        new = self.row_after_update(conversation)
        del self._items[old]
        self._items.insert(new, conversation)
        return old, new

    def remove(self, conversation_id: str) -> int:
        row = self.row_of(conversation_id)
        if row is None:
            raise KeyError(conversation_id)
        del self._items[row]
        return row

    def reset(self, conversations: Iterable[Conversation]) -> None:
        self._items = sorted(conversations, key=lambda c: c.updated_at, reverse=True)
