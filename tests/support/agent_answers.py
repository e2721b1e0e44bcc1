"""A streamed answer read as a coding agent reads it, in any of the three APIs agents use.

Every event is checked against the official SDK's own types (``anthropic`` for Messages,
``openai`` for Responses and chat completions); the result is what the agent acts on: the
text, the tool calls (with Codex's namespace), why it ended, and the prompt's token counts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pydantic
from anthropic.types import RawMessageStreamEvent
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent

__all__ = ["Answer", "Call", "read_answer"]

_ANTHROPIC = pydantic.TypeAdapter(RawMessageStreamEvent)
_RESPONSES = pydantic.TypeAdapter(ResponseStreamEvent)


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    arguments: dict
    namespace: str | None = None


@dataclass
class Answer:
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    finish: str = ""
    prompt_tokens: int = 0  # the whole prompt
    cached_tokens: int = 0  # of which reused from a cache


def read_answer(path: str, stream: str) -> Answer:
    """The answer of a streamed request to ``path`` (``/v1/messages``, ``/v1/responses`` or
    ``/v1/chat/completions``), from the raw server-sent events ``stream``."""
    payloads = [_data(block) for block in stream.strip().split("\n\n")]
    if path.endswith("/messages"):
        return _messages(payloads)
    if path.endswith("/responses"):
        return _responses(payloads)
    return _chat(payloads)


def _data(block: str) -> dict | str:
    lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
    data = lines["data"]
    return data if data == "[DONE]" else json.loads(data)


def _messages(payloads: list) -> Answer:
    answer, blocks = Answer(), {}
    for payload in payloads:
        if payload["type"] == "ping":
            continue
        event = _ANTHROPIC.validate_python(payload)
        if event.type == "content_block_start":
            blocks[event.index] = [event.content_block, ""]
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            answer.text += event.delta.text
        elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            blocks[event.index][1] += event.delta.partial_json
        elif event.type == "message_delta":
            answer.finish = event.delta.stop_reason
            usage = event.usage
            answer.cached_tokens = usage.cache_read_input_tokens or 0
            answer.prompt_tokens = usage.input_tokens + answer.cached_tokens
    for block, arguments in blocks.values():
        if block.type == "tool_use":
            answer.calls.append(Call(block.id, block.name, json.loads(arguments or "{}")))
    return answer


def _responses(payloads: list) -> Answer:
    answer = Answer()
    for payload in payloads:
        event = _RESPONSES.validate_python(payload)
        if event.type in ("response.completed", "response.incomplete"):
            response = event.response
            answer.text, answer.finish = response.output_text, response.status
            answer.prompt_tokens = response.usage.input_tokens
            answer.cached_tokens = response.usage.input_tokens_details.cached_tokens
            answer.calls = [
                Call(item.call_id, item.name, json.loads(item.arguments), item.namespace)
                for item in response.output
                if item.type == "function_call"
            ]
    return answer


def _chat(payloads: list) -> Answer:
    assert payloads[-1] == "[DONE]", "a chat stream ends with [DONE]"
    state, answer = ChatCompletionStreamState(), Answer()
    for payload in payloads[:-1]:
        chunk = ChatCompletionChunk.model_validate(payload)
        state.handle_chunk(chunk)
        if chunk.usage is not None:  # stream_options.include_usage: the last chunk
            answer.prompt_tokens = chunk.usage.prompt_tokens
            details = chunk.usage.prompt_tokens_details
            answer.cached_tokens = details.cached_tokens if details else 0
    (choice,) = state.get_final_completion().choices
    answer.text, answer.finish = choice.message.content or "", choice.finish_reason
    answer.calls = [
        Call(call.id, call.function.name, json.loads(call.function.arguments))
        for call in choice.message.tool_calls or ()
    ]
    return answer
