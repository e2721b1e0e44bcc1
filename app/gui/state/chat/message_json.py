"""A message as JSON, whole: its other versions, and the messages that followed each version of
a question (``branches``). The chat store keeps an edited question's earlier branches this way:
a branch is a conversation of its own (replies with versions, questions edited again), which one
column holds more simply than rows pointing at rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from localllm.app.gui.state.chat.records import Message
from localllm.app.gui.state.chat.stats import ReplyStats
from localllm.app.gui.state.chat.tool_calls import ToolCall

__all__ = ["branch_from_json", "branch_json", "message_from_json", "message_to_json"]


def message_to_json(m: Message) -> dict[str, Any]:
    return {
        "id": m.id,
        "role": m.role,
        "content": m.content,
        "images": list(m.images),
        "stats": m.stats.to_json() if m.stats else None,
        "error": m.error,
        "hint": m.hint,
        "created_at": m.created_at,
        "version": m.version,
        "thinking": m.thinking,
        "thinking_seconds": m.thinking_seconds,
        "tool_calls": [c.to_json() for c in m.tool_calls],
        "others": [message_to_json(o) for o in m.others],
        "branch": [message_to_json(b) for b in m.branch],
    }


def message_from_json(data: dict[str, Any]) -> Message:
    others = tuple(message_from_json(o) for o in data.get("others") or ())
    seconds = data.get("thinking_seconds")
    return Message(
        str(data["id"]),
        str(data["role"]),
        str(data.get("content") or ""),
        tuple(str(image) for image in data.get("images") or ()),
        ReplyStats.from_json(data.get("stats")),
        str(data.get("error") or ""),
        str(data.get("hint") or ""),
        float(data.get("created_at") or 0.0),
        others,
        max(0, min(int(data.get("version") or 0), len(others))),
        str(data.get("thinking") or ""),
        float(seconds) if seconds is not None else None,
        tuple(ToolCall.from_json(c) for c in data.get("tool_calls") or ()),
        tuple(message_from_json(b) for b in data.get("branch") or ()),
    )


def branch_json(messages: Iterable[Message]) -> str:
    return json.dumps([message_to_json(m) for m in messages], ensure_ascii=False)


def branch_from_json(text: str | None) -> tuple[Message, ...]:
    return tuple(message_from_json(item) for item in json.loads(text)) if text else ()
