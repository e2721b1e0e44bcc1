"""Documents attached to a chat and each reply's sources live in the chat history (migration
6): they survive a restart and go with their chat."""

from __future__ import annotations

import sqlite3

from localllm.app.gui.state.chat.attachments import AttachmentStore, SourceRef
from localllm.app.gui.state.chat.migrations import MIGRATIONS, migrate
from localllm.app.gui.state.chat.records import Conversation, Message
from localllm.app.gui.state.chat.store import ConversationStore

SOURCE = SourceRef("/docs/manual.pdf", 2, 4, 9, "Blade inspection every 400 hours.")


def _chat(store: ConversationStore, chat_id: str) -> None:
    store.save_conversation(Conversation(chat_id, created_at=1.0, updated_at=1.0))


def test_attachments_and_sources_survive_a_restart(tmp_path):
    db = tmp_path / "chats.sqlite3"
    chats, attachments = ConversationStore(db), AttachmentStore(db)
    _chat(chats, "c1")
    attachments.attach("c1", ["/docs", "/notes/plan.md"])
    attachments.attach("c1", ["/docs"])  # twice is once
    attachments.save_sources("c1", "reply-1", (SOURCE,))  # before the reply's row exists
    chats.save_message("c1", 0, Message("reply-1", "assistant", "See [1].", created_at=2.0))
    chats.close()
    attachments.close()
    again = AttachmentStore(db)
    assert again.documents("c1") == ["/docs", "/notes/plan.md"]
    (source,) = again.sources("c1")["reply-1"]
    assert source == SOURCE and (source.name, source.where) == ("manual.pdf", "page 2, lines 4-9")


def test_they_go_with_their_chat(tmp_path):
    db = tmp_path / "chats.sqlite3"
    chats, attachments = ConversationStore(db), AttachmentStore(db)
    _chat(chats, "c1")
    _chat(chats, "c2")
    attachments.attach("c1", ["/docs"])
    attachments.attach("c2", ["/other"])
    attachments.save_sources("c1", "r", (SOURCE,))
    chats.delete_conversation("c1")
    assert attachments.documents("c1") == [] and attachments.sources("c1") == {}
    assert attachments.documents("c2") == ["/other"]
    attachments.detach_all("c2")
    assert attachments.documents("c2") == []


def test_an_older_history_gains_the_tables_and_keeps_its_chats(tmp_path):
    db = tmp_path / "chats.sqlite3"
    conn = sqlite3.connect(db)
    migrate(conn, MIGRATIONS[:5])
    conn.execute(
        "INSERT INTO conversations (id, title, created_at, updated_at) "
        "VALUES ('old', 'Old chat', 1, 1)"
    )
    conn.commit()
    conn.close()
    attachments = AttachmentStore(db)
    attachments.attach("old", ["/docs"])
    assert attachments.documents("old") == ["/docs"]
    assert [c.title for c in ConversationStore(db).conversations()] == ["Old chat"]
