"""The chat history on disk: ordered migrations, upgrades that keep data, and the queries."""

from __future__ import annotations

import sqlite3
import sys

import pytest

from localllm.app.gui.state.chat.migrations import (
    MIGRATIONS,
    NewerSchemaError,
    migrate,
    schema_version,
)
from localllm.app.gui.state.chat.records import ChatOptions, Conversation, Message, ReplyStats
from localllm.app.gui.state.chat.store import ConversationStore
from tests.support.modes import mode_of, umask


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def test_migrations_run_in_order_and_record_the_version(tmp_path):
    conn = sqlite3.connect(tmp_path / "h.db")
    seen = []
    for number in range(1, len(MIGRATIONS) + 1):
        assert migrate(conn, MIGRATIONS[:number]) == number
        seen.append(set(_columns(conn, "conversations")) | set(_columns(conn, "messages")))
    assert seen[0] < seen[1] < seen[2] < seen[3] < seen[4]  # each step only adds
    assert "options" in seen[1] and "stats" in seen[2] and "version" in seen[3]
    assert "thinking" in seen[4] and "think" in seen[4]
    assert _columns(conn, "message_versions")


def test_migrating_twice_changes_nothing(tmp_path):
    conn = sqlite3.connect(tmp_path / "h.db")
    migrate(conn)
    schema = conn.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
    assert migrate(conn) == len(MIGRATIONS)
    assert conn.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall() == schema


def test_upgrade_from_version_one_keeps_conversations_and_messages(tmp_path):
    path = tmp_path / "h.db"
    conn = sqlite3.connect(path)
    migrate(conn, MIGRATIONS[:1])
    conn.execute("INSERT INTO conversations VALUES ('c1', 'Old chat', 'qwen:0.5b', 1.0, 2.0)")
    conn.execute("INSERT INTO messages VALUES ('m1', 'c1', 0, 'user', 'hello', 1.5)")
    conn.commit()
    conn.close()

    store = ConversationStore(path)
    assert schema_version(store._conn) == len(MIGRATIONS)
    [chat] = store.conversations()
    assert (chat.title, chat.model, chat.system_prompt, chat.options) == (
        "Old chat",
        "qwen:0.5b",
        "",
        ChatOptions(),
    )
    [message] = store.messages("c1")
    assert (message.content, message.images, message.stats, message.error) == (
        "hello",
        (),
        None,
        "",
    )


def test_a_failed_step_leaves_the_last_good_version(tmp_path):
    conn = sqlite3.connect(tmp_path / "h.db")
    broken = (*MIGRATIONS[:1], "CREATE TABLE extra (x); CREATE TABLE conversations (y);")
    with pytest.raises(sqlite3.Error):
        migrate(conn, broken)
    assert schema_version(conn) == 1
    assert "extra" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}


def test_a_newer_history_is_refused_rather_than_guessed(tmp_path):
    conn = sqlite3.connect(tmp_path / "h.db")
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(NewerSchemaError, match="update localllm"):
        migrate(conn)


@pytest.fixture
def store(tmp_path):
    s = ConversationStore(tmp_path / "data" / "chats.db")
    yield s
    s.close()


def test_conversations_round_trip_most_recent_first(store):
    store.save_conversation(
        Conversation("a", "First", "m", "be brief", ChatOptions(0.2, 4096, 64), 1.0, 1.0)
    )
    store.save_conversation(Conversation("b", "Second", "m", created_at=2.0, updated_at=2.0))
    assert [c.id for c in store.conversations()] == ["b", "a"]
    store.save_conversation(
        Conversation("a", "Renamed", "m", "be brief", ChatOptions(0.2), 1.0, 3.0)
    )
    first = store.conversations()[0]
    assert (first.id, first.title, first.options) == ("a", "Renamed", ChatOptions(0.2))


def test_messages_keep_order_stats_images_and_errors(store):
    store.save_conversation(Conversation("c", created_at=1, updated_at=1))
    stats = ReplyStats(12, 40.0, 0.08, 0.5, 7, "stop")
    store.save_message("c", 0, Message("u", "user", "hi", ("aW1n",), created_at=1))
    store.save_message("c", 1, Message("r", "assistant", "yo", stats=stats, created_at=2))
    store.save_message("c", 2, Message("e", "assistant", "", error="boom", hint="retry"))
    assert store.messages("c") == [
        Message("u", "user", "hi", ("aW1n",), created_at=1),
        Message("r", "assistant", "yo", stats=stats, created_at=2),
        Message("e", "assistant", "", error="boom", hint="retry"),
    ]


def test_truncate_and_replace_support_edit_and_regenerate(store):
    store.save_conversation(Conversation("c", created_at=1, updated_at=1))
    for i, text in enumerate(["q1", "a1", "q2", "a2"]):
        store.save_message("c", i, Message(f"m{i}", "user" if i % 2 == 0 else "assistant", text))
    store.truncate("c", 3)
    store.save_message("c", 3, Message("new", "assistant", "a2 again"))
    assert [m.content for m in store.messages("c")] == ["q1", "a1", "q2", "a2 again"]


def test_deleting_a_conversation_deletes_its_messages(store):
    store.save_conversation(Conversation("c", created_at=1, updated_at=1))
    store.save_message("c", 0, Message("m", "user", "hi"))
    store.delete_conversation("c")
    assert store.conversations() == [] and store.messages("c") == []


def test_search_matches_titles_and_message_text_literally(store):
    store.save_conversation(Conversation("t", "Python tips", created_at=1, updated_at=1))
    store.save_conversation(Conversation("m", "Other", created_at=2, updated_at=2))
    store.save_conversation(Conversation("p", "100% sure", created_at=3, updated_at=3))
    store.save_message("m", 0, Message("x", "user", "how do I reverse a LIST?"))
    assert store.search("list") == {"m"}
    assert store.search("PYTHON") == {"t"}
    assert store.search("%") == {"p"}  # wildcards are literal


def test_a_reply_keeps_its_versions_and_which_one_is_shown(store):
    store.save_conversation(Conversation("c", created_at=1, updated_at=1))
    store.save_message("c", 0, Message("q", "user", "joke"))
    first = Message("a1", "assistant", "bad joke", stats=ReplyStats(2, 9.0, 0.1, 0.3, 5))
    store.save_message("c", 1, first)
    second = Message("a2", "assistant", "better joke").with_versions(first.versions)
    store.save_message("c", 1, second)  # regenerated: a new row at the same place
    [_, reply] = store.messages("c")
    assert reply == second and [v.content for v in reply.versions] == ["bad joke", "better joke"]
    assert reply.others[0].stats == first.stats
    store.save_message("c", 1, reply.showing(0))  # flipped back
    [_, reply] = store.messages("c")
    assert (reply.id, reply.content, reply.version) == ("a1", "bad joke", 0)
    assert [v.id for v in reply.versions] == ["a1", "a2"]
    assert store.search("better") == {"c"}  # a version that is not shown is still found
    store.truncate("c", 1)  # edit and resend: the reply goes with all its versions
    assert store.search("better") == set() and len(store.messages("c")) == 1


def test_removing_a_message_moves_the_later_ones_up(store):
    store.save_conversation(Conversation("c", created_at=1, updated_at=1))
    for i, text in enumerate(["q1", "a1", "q2", "a2"]):
        store.save_message("c", i, Message(f"m{i}", "user" if i % 2 == 0 else "assistant", text))
    store.remove_message("c", 1)
    store.save_message("c", 3, Message("m5", "user", "q3"))  # where the session puts it next
    assert [m.content for m in store.messages("c")] == ["q1", "q2", "a2", "q3"]


def test_upgrade_from_version_three_keeps_replies_and_their_stats(tmp_path):
    path = tmp_path / "h.db"
    conn = sqlite3.connect(path)
    migrate(conn, MIGRATIONS[:3])
    conn.execute(
        "INSERT INTO conversations (id, title, created_at, updated_at) VALUES ('c', 't', 1, 1)"
    )
    old_stats = (
        '{"tokens": 3, "tokens_per_second": 5.0, "first_token_seconds": 0.1, '
        '"total_seconds": 1.0, "prompt_tokens": 4, "done_reason": "length"}'
    )
    conn.execute(
        "INSERT INTO messages (id, conversation_id, position, role, content, created_at, stats)"
        " VALUES ('r', 'c', 0, 'assistant', 'old reply', 1, ?)",
        (old_stats,),
    )
    conn.commit()
    conn.close()
    [reply] = ConversationStore(path).messages("c")
    assert (reply.content, reply.others, reply.version) == ("old reply", (), 0)
    assert reply.stats.context_used == 7 and reply.can_continue


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_the_history_is_readable_by_its_user_only_whatever_the_umask(tmp_path):
    folder = tmp_path / "data"
    with umask(0):
        store = ConversationStore(folder / "chats.db")
        store.save_conversation(Conversation("c", "Secrets", "m", created_at=1, updated_at=1))
        store.save_message("c", 0, Message("m1", "user", "my bank password is hunter2"))
        files = [folder / name for name in ("chats.db", "chats.db-wal", "chats.db-shm")]
        try:
            assert [mode_of(path) for path in files] == [0o600] * 3
            assert mode_of(folder) == 0o700
        finally:
            store.close()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_a_history_an_older_version_left_readable_is_made_private(tmp_path):
    path = tmp_path / "chats.db"
    sqlite3.connect(path).close()
    path.chmod(0o644)
    ConversationStore(path).close()
    assert mode_of(path) == 0o600
