"""A long chat's state, Qt-free: where the model's memory starts (from the daemon's
``kept_from``), the summary turns, what is left to summarize, the notice and the offer of a
larger context (where the daemon's plan of it fits), and all of it kept in the chat history."""

from __future__ import annotations

import sqlite3

from localllm.app.gui.state.chat.context_offer import larger_context, offer_ask, offered
from localllm.app.gui.state.chat.errors import explain, overflowed
from localllm.app.gui.state.chat.memory import ChatMemory, memory_start
from localllm.app.gui.state.chat.memory_notice import memory_notice
from localllm.app.gui.state.chat.memory_turns import summary_request, system_turns, to_summarize
from localllm.app.gui.state.chat.migrations import MIGRATIONS, migrate
from localllm.app.gui.state.chat.records import ChatOptions, Conversation, Message
from localllm.app.gui.state.chat.session import ChatSession
from localllm.app.gui.state.chat.store import ConversationStore
from localllm.app.gui.state.gateway import ChatTurn, GatewayError
from localllm.app.gui.state.records import ChatDelta, ChatDone, ModelPlan
from localllm.app.gui.state.setting_plan import PlanAsk, PlanPreview

GIB = 1 << 30


def _chat(memory: ChatMemory | None = None) -> ChatSession:
    memory = memory or ChatMemory()
    conversation = Conversation("c", model="m", system_prompt="Be brief.", memory=memory)
    messages = [
        Message("u1", "user", "one"),
        Message("a1", "assistant", "", error="failed"),  # never sent
        Message("u2", "user", "two"),
        Message("a2", "assistant", "second"),
        Message("u3", "user", "three"),
        Message("a3", "assistant", "third"),
    ]
    return ChatSession(conversation, messages)


def test_kept_from_names_the_first_message_the_model_saw():
    ids = ["", "u1", "u2", "a2", "u3"]  # the system prompt, then the turns as sent
    assert memory_start(ids, 2) == "u2"
    assert memory_start(ids, None) == ""
    assert memory_start(ids, 0) == ""


def test_a_truncated_reply_marks_the_memory_start_and_a_whole_one_clears_it():
    session = _chat()
    session.send("four")  # sent: system, u1, u2, a2, u3, a3, u4 (the failed reply is left out)
    session.add(session.reply_id, ChatDelta("fourth"))
    persist = session.add(session.reply_id, ChatDone(dropped_messages=3, kept_from=4))
    assert persist.conversation.memory.starts_at == "u3"
    session.send("five")
    persist = session.add(session.reply_id, ChatDone())
    assert persist.conversation.memory.starts_at == ""


def test_a_failed_reply_leaves_the_mark_where_it_was():
    session = _chat(ChatMemory(starts_at="u2"))
    session.send("four")
    session.fail(session.reply_id, GatewayError("the daemon went away"))
    assert session.conversation.memory.starts_at == "u2"


def test_the_summary_goes_after_the_system_prompt_only_when_summarizing():
    summarized = ChatMemory("summarize", "u3", "They counted to two.", "")
    assert system_turns("Be brief.", summarized) == (
        ChatTurn("system", "Be brief."),
        ChatTurn(
            "system",
            "A summary of the earlier conversation, which you no longer see:\nThey counted to two.",
        ),
    )
    assert _chat(summarized).turns()[1].content.endswith("They counted to two.")
    seen_again = ChatMemory("summarize", "", "They counted to two.", "")  # a larger context
    assert system_turns("Be brief.", seen_again) == (ChatTurn("system", "Be brief."),)
    dropping = ChatMemory("drop", "u3", "They counted to two.", "")
    assert system_turns("Be brief.", dropping) == (ChatTurn("system", "Be brief."),)


def test_only_what_the_summary_does_not_cover_yet_is_summarized():
    messages = _chat().messages
    memory = ChatMemory("summarize", starts_at="u3")
    assert [m.id for m in to_summarize(messages, memory)] == ["u1", "u2", "a2"]
    later = ChatMemory("summarize", starts_at="u3", summary="s", summary_through="u2")
    assert [m.id for m in to_summarize(messages, later)] == ["u2", "a2"]
    assert to_summarize(messages, ChatMemory("drop", starts_at="u3")) == []
    assert to_summarize(messages, ChatMemory("summarize")) == []
    request = summary_request(to_summarize(messages, later), later)
    assert request[0].role == "system" and "at most 80 words" in request[0].content
    assert request[1].content == "Earlier summary: s\n\nUser: two\n\nAssistant: second"


def test_bad_stored_memory_falls_back_to_dropping():
    assert ChatMemory.from_json({"overflow": "explode", "starts_at": 3}) == ChatMemory("drop", "3")
    assert ChatMemory.from_json(None) == ChatMemory()
    memory = ChatMemory("summarize", "u3", "note", "u1")
    assert ChatMemory.from_json(memory.to_json()) == memory
    assert not ChatMemory("stop").truncates and ChatMemory().truncates


def test_the_memory_is_kept_in_the_history_and_old_histories_upgrade(tmp_path):
    old = sqlite3.connect(tmp_path / "chats.sqlite3")
    migrate(old, MIGRATIONS[:5])
    old.execute(
        "INSERT INTO conversations (id, title, created_at, updated_at) VALUES ('x','t',1,1)"
    )
    old.commit()
    old.close()
    store = ConversationStore(tmp_path / "chats.sqlite3")
    try:
        [before] = store.conversations()
        assert before.memory == ChatMemory()
        memory = ChatMemory("summarize", "u3", "note", "u1")
        store.save_conversation(Conversation("c", memory=memory, updated_at=2))
        assert store.conversations()[0].memory == memory
    finally:
        store.close()


def test_a_larger_context_is_twice_the_chats_within_what_the_model_was_trained_for():
    assert larger_context(4096, 32768) == 8192
    assert larger_context(4096, 6000) == 6000  # never past training
    assert larger_context(4096, 4096) is None
    assert larger_context(4096, None) is None  # the trained length is not known


def _plan(fits: bool) -> ModelPlan:
    return ModelPlan("m", (), (), total=GIB, fits=fits, context_length=8192)


def test_a_larger_context_is_offered_only_where_the_daemons_plan_of_it_fits():
    """The plan asked is the chat's model with its other memory options at the larger context;
    nothing is offered while it is planning, after a failure, for an older ask, or where the
    plan does not fit (however small the cache a formula would count)."""
    chat = ChatOptions(temperature=0.3, num_ctx=4096, num_gpu=10)
    ask = offer_ask("m", chat, 8192)
    assert ask == PlanAsk.of("m", {"num_ctx": 8192, "num_gpu": 10})
    assert offer_ask("m", ChatOptions(), 4096) == PlanAsk.of("m", {"num_ctx": 4096})
    preview = PlanPreview()
    assert preview.want(ask) and offered(preview, ask) is None  # planning: no offer yet
    preview.answered(ask, _plan(fits=True))
    assert offered(preview, ask) == 8192
    preview.failed_for(ask)
    assert offered(preview, ask) is None  # the daemon could not plan it
    preview.answered(ask, _plan(fits=False))
    assert offered(preview, ask) is None  # it does not fit
    longer = offer_ask("m", chat, 16384)
    preview.want(longer)
    preview.answered(longer, _plan(fits=True))
    assert offered(preview, ask) is None and offered(preview, longer) == 16384


def test_the_notice_says_what_to_do():
    error, hint = explain(
        GatewayError("the prompt is 300 tokens but the model's context is 256 tokens")
    )
    assert overflowed(error) and "Long chats" in hint
    stopped = [Message("u", "user", "hi"), Message("a", "assistant", "", error=error)]
    notice = memory_notice(stopped, ChatMemory("stop"), 256, 512)
    assert notice.offer_drop and notice.larger_label == "Use 512 tokens"
    assert "256 tokens" in notice.text
    assert memory_notice(stopped, ChatMemory("stop"), 256, None).larger is None
    fine = [Message("u", "user", "hi"), Message("a", "assistant", "hello")]
    assert memory_notice(fine, ChatMemory(starts_at="u"), 256, 512).offer_drop is False
    assert memory_notice(fine, ChatMemory(starts_at="u"), 256, None) is None
    assert memory_notice(fine, ChatMemory(), 256, 512) is None
