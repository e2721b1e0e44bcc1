"""A model's tool calls in a chat: what it asked for, whether the user let it run, and what
came back, kept on the reply that made them.

Qt-free. A call is ``pending`` until the user approves or denies it (or it is a tool they
always allow); an approved one is ``running``, then ``done`` or ``failed``. Once every call of
a reply is settled, the model gets the results as "tool" messages and continues, up to
``MAX_ROUNDS`` rounds of calls after the user's message; the last round is offered no tools,
so it must answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from localllm.app.gui.state.gateway import ChatTurn

__all__ = [
    "DENIED",
    "DONE",
    "FAILED",
    "MAX_ROUNDS",
    "PENDING",
    "RUNNING",
    "ToolCall",
    "calls_from_json",
    "calls_json",
    "close_waiting",
    "message_turns",
    "rounds_so_far",
    "tool_turns",
]

PENDING, RUNNING, DONE, FAILED, DENIED = "pending", "running", "done", "failed", "denied"
MAX_ROUNDS = 6
_DENIED_ANSWER = "The user did not allow this tool call."


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str  # the name the model used (``<server>__<tool>``)
    arguments: dict[str, Any] = field(default_factory=dict)
    status: str = PENDING
    result: str = ""  # the tool's answer, or why it failed (capped by the host)

    @property
    def settled(self) -> bool:
        return self.status in (DONE, FAILED, DENIED)

    @property
    def answer(self) -> str:
        """What the model is told about this call."""
        if self.status == DENIED:
            return _DENIED_ANSWER
        if self.status == FAILED:
            return f"The tool failed: {self.result}"
        return self.result

    def arguments_text(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)

    def settle(self, status: str, result: str = "") -> ToolCall:
        return replace(self, status=status, result=result)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments,
            "status": self.status,
            "result": self.result,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolCall:
        status = str(data.get("status") or PENDING)
        # a call that was running when the app closed never reported back
        if status == RUNNING:
            status, data = FAILED, {**data, "result": "the app closed before the tool answered"}
        return cls(
            str(data["id"]),
            str(data["name"]),
            dict(data.get("arguments") or {}),
            status,
            str(data.get("result") or ""),
        )


def calls_json(calls: Iterable[ToolCall]) -> str:
    return json.dumps([c.to_json() for c in calls], ensure_ascii=False)


def calls_from_json(text: str | None) -> tuple[ToolCall, ...]:
    if not text:
        return ()
    return tuple(ToolCall.from_json(item) for item in json.loads(text))


def tool_turns(role: str, content: str, thinking: str, calls: tuple[ToolCall, ...]):
    """A reply that called tools as the daemon takes it: the reply with its calls, then one
    "tool" message per settled call."""
    made = tuple((c.name, c.arguments) for c in calls)
    head = ChatTurn(role, content, (), thinking, tool_calls=made)
    answers = tuple(ChatTurn("tool", c.answer, tool_name=c.name) for c in calls if c.settled)
    return (head, *answers)


def message_turns(m: Any) -> tuple[ChatTurn, ...]:
    """A message as the daemon takes it: one turn, or a reply with its calls and answers."""
    if m.tool_calls:
        return tool_turns(m.role, m.content, m.thinking, m.tool_calls)
    return (ChatTurn(m.role, m.content, m.images, m.thinking),)


def close_waiting(messages: list[Any]) -> tuple[tuple[int, Any], ...]:
    """Before the user writes again: the last reply's calls still waiting count as denied
    (changed in ``messages``; returned by position, to save). A call still running refuses."""
    last = messages[-1] if messages else None
    if last is None or not last.tool_calls:
        return ()
    if any(c.status == RUNNING for c in last.tool_calls):
        raise ValueError("a tool is still running; its answer comes first (up to a minute)")
    if all(c.settled for c in last.tool_calls):
        return ()
    calls = tuple(c if c.settled else c.settle(DENIED) for c in last.tool_calls)
    messages[-1] = replace(last, tool_calls=calls)
    return ((len(messages) - 1, messages[-1]),)


def rounds_so_far(messages: Iterable[Any]) -> int:
    """How many replies in a row, since the user last wrote, called tools."""
    count = 0
    for message in reversed(tuple(messages)):
        if message.role == "user" or not message.tool_calls:
            break
        count += 1
    return count
