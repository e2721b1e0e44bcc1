"""Chat history on disk: one SQLite file in the user's data directory.

Blocking by nature, so the app calls it from its single disk worker (one thread, in order);
the lock only keeps direct callers (tests, start-up) honest. Messages are keyed by their place
in the conversation so what follows a message can be cut and written again (an edit, another
version of a question); a message's other versions hang off its row in ``message_versions``
(and go with it), an edited question's each with the messages that followed it (its branch,
as JSON).
Chats are private: the file is readable by its user only (0600, in a 0700 folder when the
folder is new), whatever the umask, and SQLite gives its -wal and -shm files the same mode.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from dataclasses import replace
from pathlib import Path

from localllm.app.gui.state.chat.memory import ChatMemory
from localllm.app.gui.state.chat.message_json import branch_from_json, branch_json
from localllm.app.gui.state.chat.migrations import migrate
from localllm.app.gui.state.chat.records import ChatOptions, Conversation, Message, ReplyStats
from localllm.app.gui.state.chat.tool_calls import calls_from_json, calls_json

__all__ = ["ConversationStore"]

_CONVERSATION_COLUMNS = (
    "id, title, model, system_prompt, options, created_at, updated_at, think, memory"
)
_MESSAGE_COLUMNS = (
    "id, role, content, images, stats, error, hint, created_at, version, thinking,"
    " thinking_seconds, tool_calls"
)
_VERSION_COLUMNS = (
    "id, content, stats, error, hint, created_at, thinking, thinking_seconds, images, branch"
)
_IN_VERSIONS = ", ".join(f"v.{column}" for column in _VERSION_COLUMNS.split(", "))


def _conversation(row: tuple) -> Conversation:
    id_, title, model, system_prompt, options, created, updated, think, memory = row
    return Conversation(
        id_,
        title,
        model,
        system_prompt,
        ChatOptions.from_json(json.loads(options)),
        created,
        updated,
        think,
        ChatMemory.from_json(json.loads(memory)),
    )


def _stats(text: str | None) -> ReplyStats | None:
    return ReplyStats.from_json(json.loads(text) if text else None)


def _message(row: tuple, others: tuple[Message, ...]) -> Message:
    id_, role, content, images, stats, error, hint, created, version, thinking, seconds, calls = row
    return Message(
        id_,
        role,
        content,
        tuple(json.loads(images)),
        _stats(stats),
        error,
        hint,
        created,
        others,
        min(version, len(others)),
        thinking,
        seconds,
        calls_from_json(calls),
    )


def _version(row: tuple, role: str) -> Message:
    id_, content, stats, error, hint, created, thinking, seconds, images, branch = row
    pictures = tuple(json.loads(images))
    version = Message(id_, role, content, pictures, _stats(stats), error, hint, created)
    return replace(
        version, thinking=thinking, thinking_seconds=seconds, branch=branch_from_json(branch)
    )


def _version_row(v: Message) -> tuple:
    """A message's other version as ``_VERSION_COLUMNS`` hold it."""
    return (
        v.id,
        v.content,
        _stats_json(v.stats),
        v.error,
        v.hint,
        v.created_at,
        v.thinking,
        v.thinking_seconds,
        json.dumps(list(v.images)),
        branch_json(v.branch),
    )


def _stats_json(stats: ReplyStats | None) -> str | None:
    return json.dumps(stats.to_json()) if stats else None


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
                f"INSERT INTO conversations ({_CONVERSATION_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT(id) DO UPDATE SET title=excluded.title, model=excluded.model, "
                "system_prompt=excluded.system_prompt, options=excluded.options, "
                "updated_at=excluded.updated_at, think=excluded.think, memory=excluded.memory",
                (
                    c.id,
                    c.title,
                    c.model,
                    c.system_prompt,
                    json.dumps(c.options.to_json()),
                    c.created_at,
                    c.updated_at,
                    c.think,
                    json.dumps(c.memory.to_json()),
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
            version_rows = self._conn.execute(
                f"SELECT v.message_id, m.role, {_IN_VERSIONS} FROM message_versions v "
                "JOIN messages m ON m.id = v.message_id "
                "WHERE m.conversation_id = ? ORDER BY v.message_id, v.number",
                (conversation_id,),
            ).fetchall()
        versions: dict[str, list[Message]] = {}
        for message_id, role, *row in version_rows:
            versions.setdefault(message_id, []).append(_version(tuple(row), role))
        return [_message(r, tuple(versions.get(r[0], ()))) for r in rows]

    def save_message(self, conversation_id: str, position: int, m: Message) -> None:
        """Insert or replace the message at ``position``, with its other versions."""
        with self._lock, self._conn:
            self._conn.execute(
                "DELETE FROM messages WHERE conversation_id = ? AND position = ? AND id != ?",
                (conversation_id, position, m.id),
            )
            self._conn.execute(
                f"INSERT INTO messages (conversation_id, position, {_MESSAGE_COLUMNS}) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET "
                "position=excluded.position, content=excluded.content, images=excluded.images,"
                " stats=excluded.stats, error=excluded.error, hint=excluded.hint,"
                " version=excluded.version, thinking=excluded.thinking,"
                " thinking_seconds=excluded.thinking_seconds, tool_calls=excluded.tool_calls",
                (
                    conversation_id,
                    position,
                    m.id,
                    m.role,
                    m.content,
                    json.dumps(list(m.images)),
                    _stats_json(m.stats),
                    m.error,
                    m.hint,
                    m.created_at,
                    m.version,
                    m.thinking,
                    m.thinking_seconds,
                    calls_json(m.tool_calls),
                ),
            )
            self._conn.execute("DELETE FROM message_versions WHERE message_id = ?", (m.id,))
            self._conn.executemany(
                f"INSERT INTO message_versions (message_id, number, {_VERSION_COLUMNS}) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [(m.id, n, *_version_row(v)) for n, v in enumerate(m.others)],
            )

    def remove_message(self, conversation_id: str, position: int) -> None:
        """Forget the message at ``position``; the ones after it move up one place."""
        with self._lock, self._conn:
            self._conn.execute(
                "DELETE FROM messages WHERE conversation_id = ? AND position = ?",
                (conversation_id, position),
            )
            self._conn.execute(
                "UPDATE messages SET position = position - 1 "
                "WHERE conversation_id = ? AND position > ?",
                (conversation_id, position),
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
                "SELECT conversation_id FROM messages WHERE content LIKE ?1 ESCAPE '\\' UNION "
                "SELECT m.conversation_id FROM message_versions v "
                "JOIN messages m ON m.id = v.message_id "
                "WHERE v.content LIKE ?1 ESCAPE '\\' OR v.branch LIKE ?1 ESCAPE '\\'",
                (pattern,),
            ).fetchall()
        return {r[0] for r in rows}
