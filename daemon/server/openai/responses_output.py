"""Responses API answers: the response object, its output items and usage, and keeping it.

One ``ResponseShape`` per request holds what the response echoes of the request; the whole
answer (``stream: false``) and the stream's events (``responses_stream``) both end in
``finish``, which stores the response (unless ``store: false``) with its conversation so a
follow-up's ``previous_response_id`` can continue it.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Any, Literal, TypedDict

from localllm.daemon.api.openai_responses import (
    FunctionCallOut,
    InputTokensDetails,
    OutputItem,
    OutputMessage,
    OutputText,
    OutputTokensDetails,
    ReasoningOut,
    ReasoningText,
    ResponseObject,
    ResponsesRequest,
    ResponseUsage,
    Status,
)
from localllm.daemon.inference import Collected, Finished, GenerationStats, GenerationStream
from localllm.daemon.inference.tool_calls import ToolCall
from localllm.daemon.server.openai.response_store import ResponseStore
from localllm.daemon.server.openai.responses_translate import Turn

__all__ = [
    "ResponseShape",
    "item_status",
    "message_item",
    "new_id",
    "reasoning_item",
    "usage_out",
]


class _Echo(TypedDict):
    """What a response echoes of its request (``ResponseObject``'s fields of the same names)."""

    instructions: str | None
    max_output_tokens: int | None
    parallel_tool_calls: bool
    previous_response_id: str | None
    reasoning: dict[str, Any] | None
    store: bool
    temperature: float | None
    text: dict[str, Any]
    tool_choice: str | dict[str, Any]
    tools: list[dict[str, object]]
    top_p: float | None
    user: str | None
    metadata: dict[str, str]


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(24)}"


class ResponseShape:
    """One response's id and echoed request fields, and the response objects built on them."""

    def __init__(self, req: ResponsesRequest, turn: Turn, store: ResponseStore):
        self.id = new_id("resp")
        self.created_at = int(time.time())
        self._turn = turn
        self._store = store if req.store else None
        self._echo: _Echo = {
            "instructions": req.instructions,
            "max_output_tokens": req.max_output_tokens,
            "parallel_tool_calls": req.parallel_tool_calls is not False,
            "previous_response_id": req.previous_response_id,
            "reasoning": req.reasoning.model_dump(exclude_none=True) if req.reasoning else None,
            "store": req.store,
            "temperature": req.temperature,
            "text": _text_config(req),
            "tool_choice": req.tool_choice or ("auto" if turn.tools else "none"),
            "tools": turn.tools,
            "top_p": req.top_p,
            "user": req.user,
            "metadata": req.metadata or {},
        }

    def snapshot(
        self,
        model: str,
        status: Status | Literal["failed"] = "in_progress",
        *,
        output: Sequence[OutputItem] = (),
        usage: ResponseUsage | None = None,
        incomplete_details: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> ResponseObject:
        return ResponseObject(
            id=self.id,
            created_at=self.created_at,
            model=model,
            status=status,
            **self._echo,
            output=list(output),
            usage=usage,
            incomplete_details=incomplete_details,
            error=error,
        )

    def whole(self, generation: GenerationStream, result: Collected) -> ResponseObject:
        finished = result.finished
        status = item_status(finished)
        output: list[OutputItem] = []
        if result.thinking:
            output.append(reasoning_item(new_id("rs"), result.thinking, status))
        if result.text or not finished.tool_calls:
            output.append(message_item(new_id("msg"), result.text, status))
        output += [self.call_item(new_id("fc"), call, "completed") for call in finished.tool_calls]
        return self.finish(generation.model, output, finished)

    def call_item(self, item_id: str, call: ToolCall, status: Status) -> FunctionCallOut:
        """A function call item, naming the namespace its function came in (if any)."""
        return FunctionCallOut(
            id=item_id,
            status=status,
            call_id=call.id,
            name=call.name,
            arguments=call.arguments,
            namespace=self._turn.namespaces.get(call.name),
        )

    def finish(
        self, model: str, output: Sequence[OutputItem], finished: Finished
    ) -> ResponseObject:
        """The final response (completed, or incomplete at the output limit), stored."""
        incomplete = finished.reason == "length"
        response = self.snapshot(
            model,
            "incomplete" if incomplete else "completed",
            output=output,
            usage=usage_out(finished.usage),
            incomplete_details={"reason": "max_output_tokens"} if incomplete else None,
        )
        if self._store is not None:
            messages = [*self._turn.history, _assistant_message(output)]
            self._store.keep(response, messages, self._turn.job.images)  # copied off the loop
        return response

    def failed(self, model: str, output: Sequence[OutputItem], message: str) -> ResponseObject:
        error = {"code": "server_error", "message": message}
        return self.snapshot(model, "failed", output=output, error=error)


def item_status(finished: Finished) -> Status:
    return "incomplete" if finished.reason == "length" else "completed"


def message_item(item_id: str, text: str, status: Status) -> OutputMessage:
    content = [OutputText(text=text)] if status != "in_progress" else []
    return OutputMessage(id=item_id, status=status, content=content)


def reasoning_item(item_id: str, text: str, status: Status) -> ReasoningOut:
    content = [ReasoningText(text=text)] if status != "in_progress" else []
    return ReasoningOut(id=item_id, status=status, content=content)


def usage_out(usage: GenerationStats) -> ResponseUsage:
    cached = usage.cached_tokens
    return ResponseUsage(
        input_tokens=usage.prompt_tokens,
        input_tokens_details=InputTokensDetails(
            cached_tokens=cached, cache_write_tokens=usage.prompt_tokens - cached
        ),
        output_tokens=usage.completion_tokens,
        output_tokens_details=OutputTokensDetails(),
        total_tokens=usage.prompt_tokens + usage.completion_tokens,
    )


def _text_config(req: ResponsesRequest) -> dict[str, Any]:
    fmt = req.text.format if req.text else None
    if fmt is None:
        return {"format": {"type": "text"}}
    echoed = fmt.model_dump(by_alias=True, exclude_none=True)
    if fmt.type == "json_schema":
        echoed.setdefault("name", "response")
    return {"format": echoed}


def _assistant_message(output: Sequence[OutputItem]) -> dict[str, object]:
    """The reply as the next turn's templates read it (text, thinking, tool calls)."""
    message: dict[str, object] = {"role": "assistant", "content": ""}
    calls: list[dict[str, object]] = []
    for item in output:
        if isinstance(item, OutputMessage):
            message["content"] = "".join(part.text for part in item.content)
        elif isinstance(item, ReasoningOut):
            message["thinking"] = "".join(part.text for part in item.content)
        else:
            call = {"name": item.name, "arguments": item.arguments}
            calls.append({"id": item.call_id, "type": "function", "function": call})
            message["tool_calls"] = calls
    return message
