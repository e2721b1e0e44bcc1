"""Tool calls in a chat's state: collected from the stream, approved or denied one by one,
sent back to the model as "tool" messages, and kept in the history (schema step 8)."""

from __future__ import annotations

import pytest

from localllm.app.gui.state.chat.records import Conversation
from localllm.app.gui.state.chat.session import ChatSession
from localllm.app.gui.state.chat.store import ConversationStore
from localllm.app.gui.state.chat.tool_calls import DENIED, DONE, RUNNING, ToolCall, rounds_so_far
from localllm.app.gui.state.records import ChatDelta, ChatDone


def _called(session: ChatSession):
    session.send("note this")
    reply = session.reply_id
    session.add(reply, ChatDelta("", "", (("notes__note", {"text": "milk"}),)))
    session.add(reply, ChatDelta("", "", (("notes__big", {"size": 3}),)))
    return session.add(reply, ChatDone("stop"))


def test_calls_wait_for_approval_then_go_back_to_the_model_as_tool_messages():
    session = ChatSession(Conversation("c1", model="tiny"))
    _called(session)
    first, second = session.pending_calls
    assert (first.name, first.arguments) == ("notes__note", {"text": "milk"})
    with pytest.raises(ValueError, match="not all answered"):
        session.resume()

    session.settle(first.id, RUNNING)
    session.settle(first.id, DONE, "noted: milk")
    session.settle(second.id, DENIED)
    assert session.pending_calls == ()
    session.resume()
    turns = session.turns()
    assert [t.role for t in turns] == ["user", "assistant", "tool", "tool"]
    assert turns[1].tool_calls == (("notes__note", {"text": "milk"}), ("notes__big", {"size": 3}))
    assert (turns[2].tool_name, turns[2].content) == ("notes__note", "noted: milk")
    assert turns[3].content == "The user did not allow this tool call."
    assert rounds_so_far(session.messages[:-1]) == 1


def test_tool_calls_and_their_results_are_kept_with_the_chat(tmp_path):
    store = ConversationStore(tmp_path / "history.db")
    conversation = Conversation("c1", model="tiny")
    store.save_conversation(conversation)
    session = ChatSession(conversation)
    for persist in (session.send("note this"),):
        store.save_message("c1", *persist.messages[0])
    reply = session.reply_id
    session.add(reply, ChatDelta("", "", (("notes__note", {"text": "milk"}),)))
    position, message = session.add(reply, ChatDone()).messages[0]
    store.save_message("c1", position, message)
    call = session.pending_calls[0]
    store.save_message("c1", *session.settle(call.id, DONE, "noted: milk").messages[0])
    store.close()

    again = ConversationStore(tmp_path / "history.db")
    saved = again.messages("c1")[-1].tool_calls
    again.close()
    assert saved == (ToolCall(call.id, "notes__note", {"text": "milk"}, DONE, "noted: milk"),)


def test_a_call_running_when_the_app_closed_comes_back_failed():
    data = ToolCall("1", "notes__note", {}, RUNNING).to_json()
    restored = ToolCall.from_json(data)
    assert restored.status == "failed" and "closed" in restored.result


def _block(message):
    from localllm.app.gui.design.tokens import LIGHT
    from localllm.app.gui.views.transcript_html import BlockStyle, message_block

    style = BlockStyle("tiny", LIGHT, lambda _m, text: text)
    return message_block(message, style, last=True, streaming=False, expanded=False)


def test_a_waiting_call_offers_approve_always_and_deny_and_shows_its_arguments_as_text():
    from localllm.app.gui.state.chat.records import Message

    call = ToolCall("c1", "files__read", {"path": "<b>notes</b>"})
    shown = _block(Message("m1", "assistant", "", tool_calls=(call,)))
    for choice in ("approve", "always", "deny"):
        assert f"action:tool:c1:{choice}" in shown
    assert "&lt;b&gt;notes&lt;/b&gt;" in shown and "<b>notes</b>" not in shown


def test_a_long_result_is_folded_and_untrusted_text_stays_text():
    from localllm.app.gui.state.chat.records import Message

    result = "<script>x</script>\n" + "\n".join(f"line {n}" for n in range(400))
    call = ToolCall("c1", "files__read", {}, DONE, result)
    shown = _block(Message("m1", "assistant", "", tool_calls=(call,)))
    assert "action:tool:" not in shown  # answered: nothing to approve
    assert "<script>" not in shown and "&lt;script&gt;" in shown
    assert "line 399" not in shown and "action:unfold:c1" in shown


def test_a_reply_that_called_tools_offers_no_continue():
    from localllm.app.gui.state.chat.records import Message, ReplyStats

    cut = ReplyStats(60, None, None, 1.0, done_reason="length")
    assert Message("m1", "assistant", "text", stats=cut).can_continue
    called = Message("m1", "assistant", "", stats=cut, tool_calls=(ToolCall("c1", "a__b"),))
    assert not called.can_continue
    assert "action:continue" not in _block(called)


def test_writing_again_denies_the_calls_still_waiting_but_not_one_that_runs():
    session = ChatSession(Conversation("c1", model="tiny"))
    _called(session)
    first = session.pending_calls[0]
    session.settle(first.id, RUNNING)
    with pytest.raises(ValueError, match="still running"):
        session.send("never mind")
    session.settle(first.id, DONE, "noted: milk")
    persist = session.send("never mind")
    saved = dict(persist.messages)[1]
    assert [c.status for c in saved.tool_calls] == [DONE, DENIED]
    roles = [t.role for t in session.turns()]
    assert roles == ["user", "assistant", "tool", "tool", "user"]


def test_rounds_of_calls_are_counted_since_the_user_wrote_and_capped(qtbot, tmp_path):
    from localllm.app.gui.services.chat_tools import ChatTools
    from localllm.app.gui.state.chat.records import Message
    from localllm.app.gui.state.chat.tool_calls import MAX_ROUNDS
    from localllm.app.gui.state.gateway import Gateway
    from localllm.app.gui.workers import Workers
    from localllm.app.tools.catalog import ToolSpec
    from localllm.app.tools.config_store import McpSettings
    from localllm.app.tools.servers import ServerConfig
    from localllm.model_registry.credentials import NO_KEYRING

    call = (ToolCall("c", "a__b", {}, DONE, "x"),)
    messages = [
        Message("1", "assistant", "", tool_calls=call),  # before the user wrote: not counted
        Message("2", "user", "go"),
        Message("3", "assistant", "", tool_calls=call),
        Message("4", "assistant", "", tool_calls=call),
    ]
    assert rounds_so_far(messages) == 2

    net = Workers(max_threads=1)
    tools = ChatTools(Gateway(), net, tmp_path, keyring_backend=NO_KEYRING)
    tools.settings = McpSettings((ServerConfig("s", command="never-started"),), require_call=True)
    tools._capable["tiny"] = True  # as the daemon's show would say
    tools._listed["s"] = [ToolSpec("s", "look", "Look it up.", {"type": "object"})]
    try:
        first = tools.request("tiny", 0)
        assert [t["function"]["name"] for t in first["tools"]] == ["s__look"]
        assert first["format"]["properties"]["name"] == {"const": "s__look"}
        later = tools.request("tiny", 1)
        assert "tools" in later and "format" not in later  # a call is asked for once only
        assert tools.request("tiny", MAX_ROUNDS) == {}  # the last round must answer
    finally:
        tools.shutdown()
        net.shutdown()
