"""The chat history's schema, as an ordered list of steps (the simonw/llm way).

``PRAGMA user_version`` records how many steps a database has had; opening it runs the rest, in
order, each in its own transaction with the version bump, so an interrupted upgrade leaves the
database at the last step that finished. Never edit or reorder a released step: append one.
"""

from __future__ import annotations

import sqlite3

__all__ = ["MIGRATIONS", "NewerSchemaError", "migrate", "schema_version"]

MIGRATIONS: tuple[str, ...] = (
    # 1: conversations and their messages
    """
    CREATE TABLE conversations (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        model TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE TABLE messages (
        id TEXT PRIMARY KEY,
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE INDEX messages_by_conversation ON messages(conversation_id, position);
    """,
    # 2: per-chat system prompt and sampling parameters
    """
    ALTER TABLE conversations ADD COLUMN system_prompt TEXT NOT NULL DEFAULT '';
    ALTER TABLE conversations ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
    """,
    # 3: attached images, reply statistics and in-place errors
    """
    ALTER TABLE messages ADD COLUMN images TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE messages ADD COLUMN stats TEXT;
    ALTER TABLE messages ADD COLUMN error TEXT NOT NULL DEFAULT '';
    ALTER TABLE messages ADD COLUMN hint TEXT NOT NULL DEFAULT '';
    CREATE INDEX conversations_by_update ON conversations(updated_at);
    """,
    # 4: a regenerated reply keeps its earlier versions; the row in messages is the one shown
    """
    ALTER TABLE messages ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE message_versions (
        message_id TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        number INTEGER NOT NULL,
        id TEXT NOT NULL,
        content TEXT NOT NULL,
        stats TEXT,
        error TEXT NOT NULL DEFAULT '',
        hint TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL,
        PRIMARY KEY (message_id, number)
    );
    """,
    # 5: a thinking model's reasoning beside each reply (and each version), how long it took,
    # and a chat's Think setting
    """
    ALTER TABLE messages ADD COLUMN thinking TEXT NOT NULL DEFAULT '';
    ALTER TABLE messages ADD COLUMN thinking_seconds REAL;
    ALTER TABLE message_versions ADD COLUMN thinking TEXT NOT NULL DEFAULT '';
    ALTER TABLE message_versions ADD COLUMN thinking_seconds REAL;
    ALTER TABLE conversations ADD COLUMN think TEXT NOT NULL DEFAULT '';
    """,
    # 6: a long chat's state: what to do past the context, where the model's memory starts,
    # and the summary of what it no longer sees (``memory.ChatMemory``, as JSON)
    """
    ALTER TABLE conversations ADD COLUMN memory TEXT NOT NULL DEFAULT '{}';
    """,
    # 7: documents attached to a chat (files and folders), and the numbered sources each reply
    # was given (its citations); both go with their chat or message
    """
    CREATE TABLE conversation_documents (
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        added_at REAL NOT NULL,
        PRIMARY KEY (conversation_id, path)
    );
    CREATE TABLE message_sources (
        message_id TEXT PRIMARY KEY,
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        sources TEXT NOT NULL
    );
    """,
    # 8: the tools a reply called through MCP: each call's arguments, approval and result
    """
    ALTER TABLE messages ADD COLUMN tool_calls TEXT NOT NULL DEFAULT '[]';
    """,
    # 9: an edited question keeps its earlier versions as a regenerated reply does: each with
    # its pictures and the messages that followed it (its branch, as JSON: ``message_json``)
    """
    ALTER TABLE message_versions ADD COLUMN images TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE message_versions ADD COLUMN branch TEXT NOT NULL DEFAULT '[]';
    """,
)


class NewerSchemaError(RuntimeError):
    """The history was written by a newer localllm; we refuse to guess at its schema."""


def schema_version(conn: sqlite3.Connection) -> int:
    return conn.execute("PRAGMA user_version").fetchone()[0]


def migrate(conn: sqlite3.Connection, steps: tuple[str, ...] = MIGRATIONS) -> int:
    """Apply the steps this database has not had yet; return the resulting version."""
    version = schema_version(conn)
    if version > len(steps):
        raise NewerSchemaError(
            f"the chat history has schema version {version}, newer than this localllm "
            f"understands ({len(steps)}); update localllm to open it"
        )
    for number, sql in enumerate(steps[version:], start=version + 1):
        try:
            conn.executescript(f"BEGIN;\n{sql}\nPRAGMA user_version = {number};\nCOMMIT;")
        except sqlite3.Error:
            if conn.in_transaction:
                conn.rollback()
            raise
    return schema_version(conn)
