"""Documents attached to chats, and the sources each reply was given, in the chat history's
SQLite file (tables from migration 7), so both come back with the chat.

Blocking, like ``ConversationStore``: the app calls it from the disk worker. A reply's sources
are kept by message id, written when the reply starts (before its row exists), and removed with
their chat.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from localllm.app.documents.index import Passage, location
from localllm.app.gui.state.chat.migrations import migrate

__all__ = ["AttachmentStore", "SourceRef"]


@dataclass(frozen=True, slots=True)
class SourceRef:
    """One numbered source of a reply: what its citation shows."""

    path: str
    page: int | None
    line_start: int
    line_end: int
    text: str

    @property
    def name(self) -> str:
        return Path(self.path).name

    @property
    def where(self) -> str:
        return location(self.page, self.line_start, self.line_end)

    @classmethod
    def of(cls, passage: Passage) -> SourceRef:
        return cls(passage.path, passage.page, passage.line_start, passage.line_end, passage.text)


class AttachmentStore:
    def __init__(self, path: Path):
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode = WAL")
        migrate(self._conn)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def documents(self, conversation_id: str) -> list[str]:
        """The files and folders attached to a chat, in the order they were added."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT path FROM conversation_documents WHERE conversation_id = ? "
                "ORDER BY added_at, path",
                (conversation_id,),
            ).fetchall()
        return [r[0] for r in rows]

    def attach(self, conversation_id: str, paths: list[str]) -> None:
        now = time.time()
        with self._lock, self._conn:
            self._conn.executemany(
                "INSERT OR IGNORE INTO conversation_documents VALUES (?, ?, ?)",
                [(conversation_id, p, now) for p in paths],
            )

    def detach_all(self, conversation_id: str) -> None:
        with self._lock, self._conn:
            self._conn.execute(
                "DELETE FROM conversation_documents WHERE conversation_id = ?", (conversation_id,)
            )

    def save_sources(
        self, conversation_id: str, message_id: str, sources: tuple[SourceRef, ...]
    ) -> None:
        payload = json.dumps([asdict(s) for s in sources])
        with self._lock, self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO message_sources VALUES (?, ?, ?)",
                (message_id, conversation_id, payload),
            )

    def sources(self, conversation_id: str) -> dict[str, tuple[SourceRef, ...]]:
        """Every reply's sources in a chat, by message id."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT message_id, sources FROM message_sources WHERE conversation_id = ?",
                (conversation_id,),
            ).fetchall()
        return {m: tuple(SourceRef(**s) for s in json.loads(text)) for m, text in rows}
