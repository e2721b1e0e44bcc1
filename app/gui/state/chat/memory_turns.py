"""The turns a long chat adds for the model: its summary of what it no longer sees, kept right
after the system prompt, and the request that asks the model to write (or extend) it."""

from __future__ import annotations

from collections.abc import Sequence

from localllm.app.gui.state.chat.memory import ChatMemory
from localllm.app.gui.state.chat.records import Message
from localllm.app.gui.state.gateway import ChatTurn

__all__ = ["SUMMARY_WORDS", "summary_request", "system_turns", "to_summarize"]

SUMMARY_WORDS = 80
_SUMMARY_HEAD = "A summary of the earlier conversation, which you no longer see:"
_ASK = (
    f"Summarize the conversation below in at most {SUMMARY_WORDS} words: the facts, names, "
    "numbers and decisions worth remembering. Write only the summary."
)


def system_turns(system_prompt: str, memory: ChatMemory) -> tuple[ChatTurn, ...]:
    """The system prompt, then the summary (when the chat keeps one and the model no longer
    sees the whole chat)."""
    turns = []
    if system_prompt.strip():
        turns.append(ChatTurn("system", system_prompt.strip()))
    if memory.overflow == "summarize" and memory.summary and memory.starts_at:
        turns.append(ChatTurn("system", f"{_SUMMARY_HEAD}\n{memory.summary}"))
    return tuple(turns)


def to_summarize(messages: Sequence[Message], memory: ChatMemory) -> list[Message]:
    """The messages the model no longer sees and the summary does not cover yet."""
    if memory.overflow != "summarize" or not memory.starts_at:
        return []
    ids = [m.id for m in messages]
    if memory.starts_at not in ids:
        return []
    end = ids.index(memory.starts_at)
    begin = ids.index(memory.summary_through) if memory.summary_through in ids else 0
    return [m for m in messages[begin:end] if not m.failed]


def summary_request(messages: Sequence[Message], memory: ChatMemory) -> tuple[ChatTurn, ...]:
    """Ask for the summary of ``messages``, building on the summary so far."""
    lines = [f"Earlier summary: {memory.summary}"] if memory.summary else []
    for m in messages:
        lines.append(f"{'User' if m.role == 'user' else 'Assistant'}: {m.content.strip()}")
    return (ChatTurn("system", _ASK), ChatTurn("user", "\n\n".join(lines)))
