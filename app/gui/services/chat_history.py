"""The chat store behind the disk worker: every read and write queued on one thread.

One thread means writes land in the order they were made and a read queued after a write sees
it. The database is opened (and migrated) by the first job, on that thread, so start-up never
waits for the disk.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from localllm.app.gui.state.chat.records import Conversation, Message
from localllm.app.gui.state.chat.session import Persist
from localllm.app.gui.state.chat.store import ConversationStore
from localllm.app.gui.workers import Workers

__all__ = ["ChatHistory"]


class ChatHistory:
    def __init__(self, disk: Workers, path: Path, on_error: Callable[[Exception], Any]):
        self._disk, self._path, self._on_error = disk, Path(path), on_error
        self._store: ConversationStore | None = None

    def conversations(self, then: Callable[[list[Conversation]], Any]) -> None:
        self._run(lambda s: s.conversations(), then)

    def messages(self, conversation_id: str, then: Callable[[list[Message]], Any]) -> None:
        self._run(lambda s: s.messages(conversation_id), then)

    def search(self, text: str, then: Callable[[set[str]], Any]) -> None:
        self._run(lambda s: s.search(text), then)

    def save_conversation(self, conversation: Conversation) -> None:
        self._run(lambda s: s.save_conversation(conversation))

    def delete(self, conversation_id: str) -> None:
        self._run(lambda s: s.delete_conversation(conversation_id))

    def save(self, persist: Persist) -> None:
        """Write one change: the chat, then the cut or the removal, then the messages, in one
        job."""
        conversation = persist.conversation
        if conversation is None:
            return

        def write(store: ConversationStore) -> None:
            store.save_conversation(conversation)
            if persist.truncate_from is not None:
                store.truncate(conversation.id, persist.truncate_from)
            if persist.removed is not None:
                store.remove_message(conversation.id, persist.removed)
            for position, message in persist.messages:
                store.save_message(conversation.id, position, message)

        self._run(write)

    def close(self) -> None:
        self._disk.call(lambda: self._store.close() if self._store is not None else None)

    def _run(self, job: Callable[[ConversationStore], Any], then=None) -> None:
        self._disk.call(lambda: job(self._open()), then, self._on_error)

    def _open(self) -> ConversationStore:
        if self._store is None:
            self._store = ConversationStore(self._path)
        return self._store
