"""The conversation state machine: streaming, stats, stop, regenerate, edit, errors."""

from __future__ import annotations

import pytest

from app.gui.state.chat.records import DEFAULT_TITLE, ChatOptions, Conversation
from app.gui.state.chat.session import ChatBusy, ChatSession, title_from
from app.gui.state.gateway import ChatTurn, GatewayError
from app.gui.state.records import ChatDelta, ChatDone


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
    chat = Conversation("c", model="qwen:0.5b", system_prompt="Be brief.", options=ChatOptions())
    return ChatSession(chat, clock=clock, wall=clock)


def _reply(session: ChatSession, clock: Clock, *parts: str, done: ChatDone | None = None):
    reply_id = session.reply_id
    for part in parts:
        clock.now += 0.05
        assert session.add(reply_id, ChatDelta(part)) is None
    return session.add(reply_id, done or ChatDone(eval_count=len(parts), eval_duration=10**8))


def test_send_streams_a_reply_and_measures_it(session, clock):
    persist = session.send("Why is the sky blue?")
    assert session.streaming
    assert persist.conversation.title == "Why is the sky blue?"
    assert [m.role for _, m in persist.messages] == ["user"]
    assert session.messages[-1].content == ""

    persist = _reply(
        session,
        clock,
        "Rayleigh",
        " scattering.",
        done=ChatDone(eval_count=20, eval_duration=500_000_000, prompt_eval_count=9),
    )
    assert not session.streaming
    [(position, reply)] = persist.messages
    assert (position, reply.content) == (1, "Rayleigh scattering.")
    assert reply.stats.tokens_per_second == pytest.approx(40.0)
    assert reply.stats.first_token_seconds == pytest.approx(0.05)
    assert reply.stats.total_seconds == pytest.approx(0.1)
    assert "40.0 tok/s" in reply.stats.summary() and "first token 50 ms" in reply.stats.summary()


def test_turns_carry_the_system_prompt_and_skip_failed_replies(session, clock):
    session.send("hi", images=("aW1n",))
    session.fail(session.reply_id, GatewayError("model not found", "Pull it first."))
    assert session.turns() == (ChatTurn("system", "Be brief."), ChatTurn("user", "hi", ("aW1n",)))
    failed = session.messages[-1]
    assert (failed.error, failed.hint) == ("model not found", "Pull it first.")


def test_one_reply_at_a_time(session):
    session.send("one")
    with pytest.raises(ChatBusy):
        session.send("two")


def test_stop_keeps_the_partial_reply(session, clock):
    session.send("count")
    session.add(session.reply_id, ChatDelta("1 2"))
    persist = session.stop()
    reply = persist.messages[0][1]
    assert reply.content == "1 2" and reply.stats.done_reason == "stopped"
    assert session.stop() is None


def test_events_for_an_old_reply_are_ignored(session, clock):
    session.send("first")
    old = session.reply_id
    session.stop()
    session.send("second")
    assert session.add(old, ChatDelta("late words")) is None
    assert session.add(old, ChatDone()) is None
    assert session.messages[-1].content == "" and session.streaming


def test_regenerate_replaces_the_last_reply(session, clock):
    session.send("joke")
    _reply(session, clock, "bad joke")
    persist = session.regenerate()
    assert persist.truncate_from == 1
    assert [m.role for m in session.messages] == ["user", "assistant"]
    _reply(session, clock, "better joke")
    assert [m.content for m in session.messages] == ["joke", "better joke"]


def test_edit_and_resend_drops_everything_after_the_edited_message(session, clock):
    session.send("q1")
    _reply(session, clock, "a1")
    first_id = session.messages[0].id
    session.send("q2")
    _reply(session, clock, "a2")
    persist = session.edit(first_id, "q1, better")
    assert persist.truncate_from == 1 and persist.messages[0][1].content == "q1, better"
    assert [m.content for m in session.messages] == ["q1, better", ""]
    with pytest.raises(ValueError):
        _reply(session, clock, "x")
        session.edit(session.messages[1].id, "not mine")


def test_titles_come_from_the_first_message_only():
    assert title_from("  a\nb  ") == "a b"
    assert len(title_from("x" * 200)) == 48
    s = ChatSession(Conversation("c", model="m"))
    assert s.conversation.title == DEFAULT_TITLE
    s.send("first words")
    s.stop()
    s.send("second words")
    assert s.conversation.title == "first words"
