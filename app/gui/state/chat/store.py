"""Chat history on disk: one SQLite file in the user's data directory.

Blocking by nature, so the app calls it from its single disk worker (one thread, in order);
the lock only keeps direct callers (tests, start-up) honest. Messages are keyed by their place
in the conversation so "edit and resend" can drop everything after the edited message.
Chats are private: the file is readable by its user only (0600, in a 0700 folder when the
folder is new), whatever the umask, and SQLite gives its -wal and -shm files the same mode.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from pathlib import Path

from app.gui.state.chat.migrations import migrate
from app.gui.state.chat.records import ChatOptions, Conversation, Message, ReplyStats

__all__ = ["ConversationStore"]

_CONVERSATION_COLUMNS = "id, title, model, system_prompt, options, created_at, updated_at"
_MESSAGE_COLUMNS = "id, role, content, images, stats, error, hint, created_at"


def _conversation(row: tuple) -> Conversation:
    id_, title, model, system_prompt, options, created, updated = row
    return Conversation(
        id_,
        title,
        model,
        system_prompt,
        ChatOptions.from_json(json.loads(options)),
        created,
        updated,
    )


def _message(row: tuple) -> Message:
    id_, role, content, images, stats, error, hint, created = row
    return Message(
        id_,
        role,
        content,
        tuple(json.loads(images)),
        ReplyStats.from_json(json.loads(stats) if stats else None),
        error,
        hint,
        created,
    )


def _make_private(path: Path) -> None:
    """Create the database file 0600 before SQLite does (it would make it 0644), and
    tighten one an older version left readable to others, with its -wal and -shm files."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))  # an empty file is an empty db
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            file.chmod(0o600)


class ConversationStore:
    def __init__(self, path: Path):
        path = Path(path)
        _make_private(path)
        self.path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, check_same_thread=False)
        self._conn.execute("PRAGMA foreign_keys = ON")
        self._conn.execute("PRAGMA journal_mode = WAL")
        migrate(self._conn)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def conversations(self) -> list[Conversation]:
        """Most recently used first."""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_CONVERSATION_COLUMNS} FROM conversations ORDER BY updated_at DESC"
            ).fetchall()
        return [_conversation(r) for r in rows]

    def save_conversation(self, c: Conversation) -> None:
        with self._lock, self._conn:
            self._conn.execute(
                f"INSERT INTO conversations ({_CONVERSATION_COLUMNS}) VALUES (?,?,?,?,?,?,?) "
                "ON CONFLICT(id) DO UPDATE SET title=excluded.title, model=excluded.model, "
                "system_prompt=excluded.system_prompt, options=excluded.options, "
                "updated_at=excluded.updated_at",
                (
                    c.id,
                    c.title,
                    c.model,
                    c.system_prompt,
                    json.dumps(c.options.to_json()),
                    c.created_at,
                    c.updated_at,
                ),
            )

    def delete_conversation(self, conversation_id: str) -> None:
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    def messages(self, conversation_id: str) -> list[Message]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? "
                "ORDER BY position",
                (conversation_id,),
            ).fetchall()
        return [_message(r) for r in rows]

    def save_message(self, conversation_id: str, position: int, m: Message) -> None:
        """Insert or replace the message at ``position``."""
        stats = json.dumps(m.stats.to_json()) if m.stats else None
        with self._lock, self._conn:
            self._conn.execute(
                "DELETE FROM messages WHERE conversation_id = ? AND position = ? AND id != ?",
                (conversation_id, position, m.id),
            )
            self._conn.execute(
                f"INSERT INTO messages (conversation_id, position, {_MESSAGE_COLUMNS}) "
                "VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET "
                "position=excluded.position, content=excluded.content, images=excluded.images,"
                " stats=excluded.stats, error=excluded.error, hint=excluded.hint",
                (
                    conversation_id,
                    position,
                    m.id,
                    m.role,
                    m.content,
                    json.dumps(list(m.images)),
                    stats,
                    m.error,
                    m.hint,
                    m.created_at,
                ),
            )

    def truncate(self, conversation_id: str, position: int) -> None:
        """Forget the messages at ``position`` and after (edit, regenerate)."""
        with self._lock, self._conn:
            self._conn.execute(
                "DELETE FROM messages WHERE conversation_id = ? AND position >= ?",
                (conversation_id, position),
            )

    def search(self, text: str) -> set[str]:
        """Ids of the conversations whose title or messages contain ``text`` (any case)."""
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self._lock:
            rows = self._conn.execute(
                "SELECT id FROM conversations WHERE title LIKE ?1 ESCAPE '\\' UNION "
                "SELECT conversation_id FROM messages WHERE content LIKE ?1 ESCAPE '\\'",
                (pattern,),
            ).fetchall()
        return {r[0] for r in rows}
