"""What a remote's stream has said so far: its tool calls, usage and finish reason, and the
one error type for a remote that misbehaves."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from localllm.daemon.errors import RemoteError
from localllm.daemon.inference.json_scan import loads
from localllm.daemon.inference.tool_calls import ToolCall, ToolCallDelta, new_call_id

__all__ = ["MAX_ARGUMENTS", "JsonObject", "StreamState", "json_object", "remote_failure"]

# a JSON object from a remote: its values are whatever the remote sent, checked where read
JsonObject = dict[str, Any]
MAX_ARGUMENTS = 16 << 20  # characters of tool-call arguments in one answer, all calls together


@dataclass(slots=True)
class StreamState:
    remote: str
    done: bool = False
    reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: dict[int, tuple[str, str, list[str]]] = field(default_factory=dict)  # id, name, args
    arguments_size: int = 0

    def usage(self, prompt: object, completion: object) -> None:
        if isinstance(prompt, int):
            self.prompt_tokens = prompt
        if isinstance(completion, int):
            self.completion_tokens = completion

    def start_call(self, index: int, call_id: object, name: str) -> ToolCallDelta:
        ident = call_id if isinstance(call_id, str) and call_id else new_call_id()
        self.calls[index] = (ident, name, [])
        return ToolCallDelta(index, id=ident, name=name)

    def add_arguments(self, index: int, part: str) -> None:
        self.arguments_size += len(part)
        if self.arguments_size > MAX_ARGUMENTS:
            too_much = f"sent more than {MAX_ARGUMENTS >> 20} Mi characters of tool-call arguments"
            raise remote_failure(self, too_much)
        if index not in self.calls:
            self.calls[index] = (new_call_id(), "", [])
        self.calls[index][2].append(part)

    def tool_calls(self) -> tuple[ToolCall, ...]:
        calls = (self.calls[k] for k in sorted(self.calls))
        return tuple(ToolCall(i, n, "".join(a) or "{}") for i, n, a in calls)

    def finish_reason(self) -> str:
        if self.calls and self.reason != "length":
            return "tool_calls"
        return self.reason if self.reason in ("stop", "length", "tool_calls") else "stop"


def remote_failure(state: StreamState, what: str) -> RemoteError:
    return RemoteError(f"remote {state.remote!r} {what}")


def json_object(text: str | bytes, state: StreamState, unit: str) -> JsonObject:
    """One streamed ``unit`` ("a line", "an event") as the JSON object it must be, or a clear
    error saying what it is not."""
    try:
        chunk = loads(text)
    except ValueError:
        raise remote_failure(state, f"sent {unit} that is not JSON") from None
    if not isinstance(chunk, dict):
        raise remote_failure(state, f"sent {unit} that is not a JSON object")
    return chunk
