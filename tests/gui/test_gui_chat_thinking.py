"""A thinking model's reasoning in the app's state, without widgets: kept apart from the reply
while it streams and after, timed, sent back with the history, kept per version, continued, on
disk (with an upgrade that keeps older chats), and the per-chat Think setting."""

from __future__ import annotations

import sqlite3

import pytest

from localllm.app.gui.state import wire
from localllm.app.gui.state.chat.migrations import MIGRATIONS, migrate
from localllm.app.gui.state.chat.records import Conversation, Message
from localllm.app.gui.state.chat.session import ChatSession
from localllm.app.gui.state.chat.store import ConversationStore
from localllm.app.gui.state.chat.thinking import think_request, thinking_summary
from localllm.app.gui.state.gateway import ChatTurn, Gateway
from localllm.app.gui.state.records import ChatDelta, ChatDone
from tests.support.cli import FakeClient, thinking_chunks


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def session(clock):
    return ChatSession(Conversation("c", model="qwen3"), clock=clock, wall=clock)


def feed(session: ChatSession, clock: Clock, *events: ChatDelta | ChatDone, step: float = 0.5):
    reply_id, persist = session.reply_id, None
    for event in events:
        clock.now += step
        persist = session.add(reply_id, event)
    return persist


def test_the_thinking_streams_apart_from_the_answer_and_is_timed(session, clock):
    session.send("Is 1009 prime?")
    feed(session, clock, ChatDelta("", "Check "), ChatDelta("", "small primes."))
    live = session.messages[-1]
    assert (live.content, live.thinking) == ("", "Check small primes.")  # still thinking
    assert live.thinking_seconds == pytest.approx(0.5)  # since the first piece, so far
    persist = feed(session, clock, ChatDelta("Yes"), ChatDelta(", it is."), ChatDone(eval_count=4))
    reply = persist.messages[-1][1]
    assert (reply.content, reply.thinking) == ("Yes, it is.", "Check small primes.")
    assert reply.thinking_seconds == pytest.approx(1.0)  # until the answer began
    assert reply.stats.first_token_seconds == pytest.approx(0.5)  # thinking tokens count
    assert session.turns()[-1] == ChatTurn("assistant", "Yes, it is.", (), "Check small primes.")


def test_stopped_while_thinking_the_thinking_is_kept_and_timed_to_the_stop(session, clock):
    session.send("Hard question")
    feed(session, clock, ChatDelta("", "Hmm"), ChatDelta("", "..."))
    clock.now += 2
    reply = session.stop().messages[-1][1]
    assert (reply.content, reply.thinking) == ("", "Hmm...")
    assert reply.thinking_seconds == pytest.approx(2.5) and reply.stats.done_reason == "stopped"


def test_a_model_that_does_not_think_has_no_thinking(session, clock):
    session.send("hi")
    reply = feed(session, clock, ChatDelta("Hello"), ChatDone(eval_count=1)).messages[-1][1]
    assert (reply.thinking, reply.thinking_seconds) == ("", None)
    assert session.turns()[-1] == ChatTurn("assistant", "Hello")


def test_each_version_keeps_its_own_thinking(session, clock):
    session.send("joke")
    feed(session, clock, ChatDelta("", "first idea"), ChatDelta("A"), ChatDone(eval_count=2))
    session.regenerate()
    feed(session, clock, ChatDelta("", "second idea"), ChatDelta("B"), ChatDone(eval_count=2))
    reply = session.messages[-1]
    assert [(v.thinking, v.content) for v in reply.versions] == [
        ("first idea", "A"),
        ("second idea", "B"),
    ]
    session.show_version(reply.id, 0)
    assert session.turns()[-1].thinking == "first idea"


def test_continuing_a_reply_adds_to_its_thinking_and_its_time(session, clock):
    session.send("count")
    feed(session, clock, ChatDelta("", "one, "), ChatDone(done_reason="length", eval_count=1))
    cut = session.messages[-1]
    assert cut.can_continue and cut.thinking_seconds == pytest.approx(0.5)
    session.continue_reply(cut.id)
    assert session.turns()[-1] == ChatTurn("assistant", "", (), "one, ")
    reply = feed(session, clock, ChatDelta("", "two"), ChatDelta("Done"), ChatDone(eval_count=2))
    longer = reply.messages[-1][1]
    assert (longer.id, longer.thinking, longer.content) == (cut.id, "one, two", "Done")
    assert longer.thinking_seconds == pytest.approx(1.0)


def test_the_summary_line():
    assert thinking_summary("a b c", 3.24) == "Thought for 3.2 s · 3 words"
    assert thinking_summary("one", 75) == "Thought for 1 min 15 s · 1 word"
    assert thinking_summary("x " * 1234, 120) == "Thought for 2 min · 1,234 words"
    assert thinking_summary("a b", 1.0, live=True) == "Thinking… 1.0 s · 2 words"
    assert thinking_summary("a", None) == "Thought · 1 word"


def test_the_think_setting_becomes_the_request_field():
    assert [think_request(s) for s in ("", "on", "off", "low", "medium", "high")] == [
        None,
        True,
        False,
        "low",
        "medium",
        "high",
    ]
    assert think_request("someday") is None  # a newer app's value: the model's default


def test_chunks_with_thinking_become_deltas_and_the_gateway_sends_think_and_history():
    fake = FakeClient(chat_chunks=thinking_chunks(["Let me see."], "Hi"))
    turns = [
        ChatTurn("user", "q"),
        ChatTurn("assistant", "a", (), "earlier"),
        ChatTurn("user", "r"),
    ]
    events = list(Gateway(fake).chat("qwen3", turns, think="high"))
    assert events[0] == ChatDelta("", "Let me see.") and events[1] == ChatDelta("Hi")
    _, _, messages, sent = fake.calls[-1]
    assert sent["think"] == "high"
    assert messages[1] == {"role": "assistant", "content": "a", "thinking": "earlier"}
    assert "thinking" not in messages[0]
    assert list(Gateway(fake).chat("qwen3", turns[:1])) and "think" not in fake.calls[-1][3]
    [final] = wire.chat_events(thinking_chunks([])[-1])
    assert isinstance(final, ChatDone)


def test_the_history_keeps_thinking_per_version_and_the_think_setting(tmp_path):
    store = ConversationStore(tmp_path / "chats.db")
    store.save_conversation(Conversation("c", "t", "qwen3", think="low", created_at=1))
    first = Message("a1", "assistant", "A", thinking="idea one", thinking_seconds=1.5)
    second = Message("a2", "assistant", "B", thinking="idea two", thinking_seconds=2.5)
    store.save_message("c", 0, Message("q", "user", "joke"))
    store.save_message("c", 1, second.with_versions(first.versions))
    [chat] = store.conversations()
    assert chat.think == "low"
    [_, reply] = store.messages("c")
    assert [(v.thinking, v.thinking_seconds) for v in reply.versions] == [
        ("idea one", 1.5),
        ("idea two", 2.5),
    ]
    assert store.search("idea") == set()  # search looks at what was said, not thought
    store.close()


def test_an_upgrade_keeps_older_chats_and_gives_them_no_thinking(tmp_path):
    path = tmp_path / "h.db"
    conn = sqlite3.connect(path)
    migrate(conn, MIGRATIONS[:4])
    conn.execute(
        "INSERT INTO conversations (id, title, created_at, updated_at) VALUES ('c','t',1,1)"
    )
    conn.execute(
        "INSERT INTO messages (id, conversation_id, position, role, content, created_at)"
        " VALUES ('r', 'c', 0, 'assistant', 'old reply', 1)"
    )
    conn.execute(
        "INSERT INTO message_versions (message_id, number, id, content, created_at)"
        " VALUES ('r', 0, 'v', 'older reply', 1)"
    )
    conn.execute("UPDATE messages SET version = 1")
    conn.commit()
    conn.close()
    store = ConversationStore(path)
    [chat] = store.conversations()
    [reply] = store.messages("c")
    assert chat.think == "" and (reply.content, reply.thinking, reply.thinking_seconds) == (
        "old reply",
        "",
        None,
    )
    assert [(v.content, v.thinking) for v in reply.versions] == [
        ("older reply", ""),
        ("old reply", ""),
    ]
    store.close()
