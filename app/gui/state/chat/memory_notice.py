"""The line above the message box when a chat has outgrown its context: what happened and
what the user can do about it (drop the oldest messages, use a larger context).

"Stop and tell me" chats get it when a reply failed because the chat no longer fits; chats
that drop or summarize their oldest messages get it while the model no longer sees the whole
chat and a larger context is possible (the divider in the transcript says the rest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from localllm.app.gui.state.chat.errors import overflowed
from localllm.app.gui.state.chat.memory import ChatMemory
from localllm.app.gui.state.chat.records import Message

__all__ = ["MemoryNotice", "memory_notice"]


@dataclass(frozen=True, slots=True)
class MemoryNotice:
    text: str
    offer_drop: bool  # "Drop the oldest messages" (a chat that stopped)
    larger: int | None  # "Use 8,192 tokens"

    @property
    def larger_label(self) -> str:
        return f"Use {self.larger:,} tokens" if self.larger else ""


def memory_notice(
    messages: Sequence[Message], memory: ChatMemory, context: int | None, larger: int | None
) -> MemoryNotice | None:
    """What to say about this chat's context, if anything (``larger``: the context length that
    would fit in memory, from ``context_offer.larger_context``)."""
    runs_at = f" (this chat runs at {context:,} tokens)" if context else ""
    last = messages[-1] if messages else None
    if last is not None and last.failed and overflowed(last.error):
        return MemoryNotice(
            f"This chat no longer fits in what the model can read at once{runs_at}.",
            offer_drop=True,
            larger=larger,
        )
    if memory.truncates and memory.starts_at and larger:
        return MemoryNotice(
            f"The model no longer sees the start of this chat{runs_at}.",
            offer_drop=False,
            larger=larger,
        )
    return None
