"""The conversation state machine: streaming, stats, stop, regenerate with versions, continue,
delete, edit, titles, errors."""

from __future__ import annotations

from dataclasses import replace

import pytest

from localllm.app.gui.state.chat.errors import explain
from localllm.app.gui.state.chat.records import DEFAULT_TITLE, ChatOptions, Conversation
from localllm.app.gui.state.chat.session import ChatBusy, ChatSession, title_from
from localllm.app.gui.state.gateway import ChatTurn, GatewayError
from localllm.app.gui.state.records import ChatDelta, ChatDone


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


def test_regenerate_keeps_the_earlier_versions_to_flip_between(session, clock):
    session.send("joke")
    _reply(session, clock, "bad joke")
    persist = session.regenerate()
    assert persist.truncate_from is None and persist.messages == ()  # nothing lost yet
    assert session.turns()[-1] == ChatTurn("user", "joke")  # the model answers anew
    pending = session.messages[-1]
    assert (pending.version, [v.content for v in pending.versions]) == (1, ["bad joke", ""])
    [(position, reply)] = _reply(session, clock, "better joke").messages
    assert position == 1 and reply.content == "better joke"
    assert [v.content for v in reply.versions] == ["bad joke", "better joke"]
    assert reply.version == 1 and reply.others[0].stats is not None

    [(_, shown)] = session.show_version(reply.id, 0).messages
    assert shown.content == "bad joke" and shown.version == 0
    assert session.turns()[-1] == ChatTurn("assistant", "bad joke")  # the model sees that one
    session.regenerate()
    third = _reply(session, clock, "third joke").messages[0][1]
    assert [v.content for v in third.versions] == ["bad joke", "better joke", "third joke"]


def test_a_failed_version_is_dropped_by_the_next_try(session, clock):
    session.send("joke")
    _reply(session, clock, "one")
    session.regenerate()
    failed = session.fail(session.reply_id, GatewayError("the daemon went away")).messages[0][1]
    assert failed.failed and [v.content for v in failed.versions] == ["one", ""]
    assert session.show_version(failed.id, 0).messages[0][1].content == "one"  # still there
    session.show_version(session.messages[-1].id, 1)
    session.regenerate()
    reply = _reply(session, clock, "two").messages[0][1]
    assert [v.content for v in reply.versions] == ["one", "two"]


def test_delete_a_message_or_one_version_of_a_reply(session, clock):
    session.send("q1")
    _reply(session, clock, "a1")
    session.send("q2")
    _reply(session, clock, "a2")
    session.regenerate()
    reply = _reply(session, clock, "a2 again").messages[0][1]
    persist = session.delete(reply.id)  # the version shown goes; the other is shown
    assert persist.messages[0][0] == 3 and persist.removed is None
    assert session.messages[-1].content == "a2" and len(session.messages[-1].versions) == 1
    persist = session.delete(session.messages[0].id)
    assert persist.removed == 0
    assert [m.content for m in session.messages] == ["a1", "q2", "a2"]
    with pytest.raises(ValueError, match="no longer"):
        session.delete("gone")


def test_continue_appends_to_a_cut_off_reply(session, clock):
    session.send("count")
    first = _reply(
        session,
        clock,
        "1 2",
        done=ChatDone("length", eval_count=2, eval_duration=10**8, prompt_eval_count=5),
    ).messages[0][1]
    assert first.can_continue
    session.continue_reply(first.id)
    assert session.turns()[-2:] == (ChatTurn("user", "count"), ChatTurn("assistant", "1 2"))
    assert session.messages[-1].content == "1 2" and session.streaming
    persist = _reply(
        session,
        clock,
        " 3",
        " 4",
        done=ChatDone("stop", eval_count=2, eval_duration=10**8, prompt_eval_count=7),
    )
    [(position, reply)] = persist.messages
    assert (position, reply.id, reply.content) == (1, first.id, "1 2 3 4")  # the same reply
    assert reply.stats.tokens == 4 and reply.stats.context_used == 9
    assert not reply.can_continue
    with pytest.raises(ValueError, match="cut off"):
        session.continue_reply(reply.id)


def test_a_failed_continuation_keeps_the_reply(session, clock):
    session.send("count")
    first = _reply(session, clock, "1", done=ChatDone("length", eval_count=1)).messages[0][1]
    session.continue_reply(first.id)
    session.add(session.reply_id, ChatDelta(" 2"))
    kept = session.fail(session.reply_id, GatewayError("gone")).messages[0][1]
    assert (kept.content, kept.failed, kept.stats) == ("1 2", False, first.stats)


def test_live_numbers_while_streaming_and_measured_ones_after_stop(session, clock):
    session.send("count")
    assert session.live_stats().summary() == "waiting for the first token…"
    for piece in ("1", " 2", " 3", " 4", " 5"):
        clock.now += 0.1
        session.add(session.reply_id, ChatDelta(piece))
    live = session.live_stats()
    assert live.tokens == 5 and live.tokens_per_second == pytest.approx(10.0)
    assert "5 tokens" in live.summary() and "10.0 tok/s" in live.summary()
    stopped = session.stop().messages[0][1].stats
    assert stopped.done_reason == "stopped" and stopped.tokens == 5
    assert stopped.tokens_per_second == pytest.approx(10.0)
    assert "10.0 tok/s" in stopped.summary() and "stopped" in stopped.summary()
    assert session.live_stats() is None


def test_edit_and_resend_asks_again_from_the_edited_message(session, clock):
    session.send("q1")
    _reply(session, clock, "a1")
    first_id = session.messages[0].id
    session.send("q2")
    _reply(session, clock, "a2")
    persist = session.edit(first_id, "q1, better")
    assert persist.truncate_from == 1 and persist.messages[0][1].content == "q1, better"
    assert [m.content for m in session.messages] == ["q1, better", ""]
    earlier = session.messages[0].others[0]  # the old words keep what followed them
    assert [m.content for m in earlier.branch] == ["a1", "q2", "a2"]
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


def test_a_title_stays_even_if_an_old_copy_of_the_chat_comes_back():
    """The settings panel held the chat as it was before its first message (still "New
    chat"); a settings edit put that title back and the next message, "Continue", became
    the title."""
    s = ChatSession(Conversation("c", model="m"))
    stale = s.conversation
    s.send("Why is the sky blue?")
    s.stop()
    s.update(replace(stale, options=ChatOptions(temperature=0.2)))
    s.send("Continue")
    assert s.conversation.title != "Continue"


def test_errors_name_the_settings_as_the_window_does():
    overflow = GatewayError(
        "the prompt is 5000 tokens but the model's context is 4096 tokens; "
        "shorten the prompt or raise num_ctx",
        status=400,
    )
    message, hint = explain(overflow)
    assert "num_ctx" not in message + hint
    assert "5,000 tokens" in message and "Context length" in message and "4,096" in message
    assert "Raise Context length" in hint and "new chat" in hint
    memory = GatewayError("needs 9 GiB; use a smaller context (num_ctx)", "Unload models.")
    assert explain(memory) == (
        "needs 9 GiB; use a smaller context (Context length)",
        "Unload models.",
    )
    session = ChatSession(Conversation("c", model="m"))
    session.send("hi")
    failed = session.fail(session.reply_id, overflow).messages[0][1]
    assert failed.error == message and failed.hint == hint
