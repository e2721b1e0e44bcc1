"""What a remote's stream has said so far: its tool calls, usage and finish reason, and the
one error type for a remote that misbehaves."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from daemon.errors import RemoteError
from daemon.inference.tool_calls import ToolCall, ToolCallDelta, new_call_id

__all__ = ["StreamState", "remote_failure"]


@dataclass(slots=True)
class StreamState:
    remote: str
    done: bool = False
    reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: dict[int, list[str]] = field(default_factory=dict)  # index -> [id, name, args]

    def usage(self, prompt: object, completion: object) -> None:
        if isinstance(prompt, int):
            self.prompt_tokens = prompt
        if isinstance(completion, int):
            self.completion_tokens = completion

    def start_call(self, index: int, call_id: object, name: str) -> ToolCallDelta:
        ident = call_id if isinstance(call_id, str) and call_id else new_call_id()
        self.calls[index] = [ident, name, ""]
        return ToolCallDelta(index, id=ident, name=name)

    def add_arguments(self, index: int, part: str) -> None:
        if index not in self.calls:
            self.calls[index] = [new_call_id(), "", ""]
        self.calls[index][2] += part

    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall(i, n, a or "{}") for i, n, a in (self.calls[k] for k in sorted(self.calls))
        )

    def finish_reason(self) -> str:
        if self.calls and self.reason != "length":
            return "tool_calls"
        return self.reason if self.reason in ("stop", "length", "tool_calls") else "stop"


def remote_failure(state: StreamState, what: str) -> RemoteError:
    return RemoteError(f"remote {state.remote!r} {what}")


def json_object(text: str | bytes, state: StreamState, unit: str) -> dict:
    """One streamed ``unit`` ("a line", "an event") as the JSON object it must be, or a clear
    error saying what it is not."""
    try:
        chunk = json.loads(text)
    except ValueError:
        raise remote_failure(state, f"sent {unit} that is not JSON") from None
    if not isinstance(chunk, dict):
        raise remote_failure(state, f"sent {unit} that is not a JSON object")
    return chunk
