"""Keeping a summary of what a long chat's model no longer sees ("Summarize the oldest").

After a reply for which the daemon dropped turns the summary does not cover yet, the model is
asked (on a network worker, apart from the chat's stream) to fold them into the summary; the
new summary goes into the chat's ``ChatMemory`` and is sent after the system prompt from the
next reply on. A failed summary changes nothing but is told (``failed``): the next reply tries
again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from PySide6.QtCore import QObject, Signal

from localllm.app.gui.state.chat.errors import explain
from localllm.app.gui.state.chat.memory import ChatMemory
from localllm.app.gui.state.chat.memory_turns import SUMMARY_WORDS, summary_request, to_summarize
from localllm.app.gui.state.chat.session import ChatSession
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.records import ChatDelta
from localllm.app.gui.workers import Workers

__all__ = ["ChatMemoryKeeper"]

_SUMMARY_TOKENS = SUMMARY_WORDS * 3  # room for the summary's words, in any language

# (conversation id, the change to its memory)
MemoryChange = Callable[[str, Callable[[ChatMemory], ChatMemory]], None]


class ChatMemoryKeeper(QObject):
    summarizing = Signal(str, bool)  # conversation id, a summary is being written
    failed = Signal(str)  # what went wrong, in words, for the chat's status line

    def __init__(
        self,
        gateway: Gateway,
        net: Workers,
        change: MemoryChange,
        parent=None,
        context_for: Callable[[str], int | None] = lambda _model: None,
    ):
        super().__init__(parent)
        self._gateway, self._net, self._change = gateway, net, change
        self._context_for = context_for  # as the chat's replies ask (the model is not reloaded)
        self._running: set[str] = set()

    def after_reply(self, session: ChatSession) -> None:
        conversation = session.conversation
        dropped = to_summarize(session.messages, conversation.memory)
        if not dropped or conversation.id in self._running:
            return
        through = conversation.memory.starts_at
        turns = summary_request(dropped, conversation.memory)
        context = conversation.options.num_ctx or self._context_for(conversation.model)
        room = min(_SUMMARY_TOKENS, context // 4) if context else _SUMMARY_TOKENS
        options = {**conversation.options.to_options(), "num_predict": room}
        if context:
            options["num_ctx"] = context

        def write() -> str:
            pieces = self._gateway.chat(conversation.model, turns, options)
            return "".join(p.content for p in pieces if isinstance(p, ChatDelta)).strip()

        self._running.add(conversation.id)
        self.summarizing.emit(conversation.id, True)
        self._net.call(
            write,
            lambda text: self._written(conversation.id, text, through),
            lambda error: self._failed(conversation.id, error),
        )

    def _written(self, conversation_id: str, text: str, through: str) -> None:
        self._ended(conversation_id)
        if text:
            self._change(
                conversation_id,
                lambda memory: replace(memory, summary=text, summary_through=through),
            )

    def _failed(self, conversation_id: str, error: Exception) -> None:
        self._ended(conversation_id)
        what, _hint = explain(error)
        self.failed.emit(
            f"Could not summarize the oldest messages: {what} The next reply will try again."
        )

    def _ended(self, conversation_id: str) -> None:
        self._running.discard(conversation_id)
        self.summarizing.emit(conversation_id, False)
