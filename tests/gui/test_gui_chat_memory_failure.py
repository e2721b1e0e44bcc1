"""A summary of the oldest messages that cannot be written is told, not swallowed: the chat's
status line says so (the next reply tries again)."""

from __future__ import annotations

from localllm.app.gui.services.chat_memory import ChatMemoryKeeper
from localllm.app.gui.state.chat.memory import ChatMemory
from localllm.app.gui.state.chat.records import Conversation, Message
from localllm.app.gui.state.chat.session import ChatSession
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.workers import Workers
from localllm.daemon.client import Client
from tests.support.daemon import free_port


def test_a_summary_that_fails_says_so(qtbot):
    memory = ChatMemory(overflow="summarize", starts_at="u2")
    conversation = Conversation("c", model="m", memory=memory)
    messages = [
        Message("u1", "user", "one"),
        Message("a1", "assistant", "first"),
        Message("u2", "user", "two"),
        Message("a2", "assistant", "second"),
    ]
    changes = []
    with Client(f"http://127.0.0.1:{free_port()}") as nobody:  # no daemon answers there
        keeper = ChatMemoryKeeper(Gateway(nobody), Workers(), lambda *c: changes.append(c))
        with qtbot.waitSignal(keeper.failed, timeout=30_000) as told:
            keeper.after_reply(ChatSession(conversation, messages))
    assert told.args[0].startswith("Could not summarize the oldest messages")
    assert "try again" in told.args[0] and not changes
