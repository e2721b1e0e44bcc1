"""Anthropic wire format: the Messages API (request, response, stream events, token count).

Field names and shapes follow Anthropic's API reference so its SDKs and coding agents parse our
answers. Unknown request fields (``metadata``, ``cache_control``, ``context_management``...),
the ``anthropic-beta`` header and ``?beta=true`` are ignored; content blocks arrive as plain
objects and are checked one by one in ``daemon.server.anthropic.translate``, which names the
block that is wrong. Two localllm extras are accepted, as on the OpenAI routes: ``options``
(Ollama's option names, e.g. a ``seed``) and ``keep_alive``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AnthropicContent",
    "AnthropicMessage",
    "AnthropicUsage",
    "ContentBlockDelta",
    "ContentBlockStart",
    "ContentBlockStop",
    "CountTokensRequest",
    "CountTokensResponse",
    "InputJsonDelta",
    "MessageDelta",
    "MessageDeltaEvent",
    "MessageParam",
    "MessageStart",
    "MessageStop",
    "MessagesRequest",
    "Ping",
    "SignatureDelta",
    "TextBlock",
    "TextDelta",
    "ThinkingBlock",
    "ThinkingDelta",
    "ToolParam",
    "ToolUseBlock",
]


class _Request(BaseModel):
    model_config = ConfigDict(extra="ignore")


class MessageParam(_Request):
    # "system" anywhere in the conversation: instructions that changed mid-conversation
    # (Claude Code sends its environment and tool changes this way)
    role: Literal["user", "assistant", "system"]
    content: str | list[dict[str, Any]]


class ToolParam(_Request):
    name: str = Field(min_length=1, max_length=128)
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    type: str | None = None  # "custom" (or absent); Anthropic's server tools are left out
    defer_loading: bool | None = None  # hidden until a tool_reference block names it


class CountTokensRequest(_Request):
    model: str
    messages: list[MessageParam] = Field(min_length=1)
    system: str | list[dict[str, Any]] | None = None
    tools: list[ToolParam] | None = None
    tool_choice: dict[str, Any] | None = None
    thinking: dict[str, Any] | None = None
    options: dict[str, Any] | None = None  # localllm: Ollama's options (seed, num_ctx...)
    keep_alive: str | float | int | None = None  # localllm: how long the model stays loaded


class MessagesRequest(CountTokensRequest):
    max_tokens: int = Field(ge=1)  # required, as Anthropic requires it
    stop_sequences: list[str] | None = None
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, ge=0, le=1)
    top_k: int | None = Field(default=None, ge=0)
    stream: bool = False
    output_config: dict[str, Any] | None = None  # its "format" (a JSON schema) is enforced
    metadata: dict[str, Any] | None = None  # accepted, not used


# -- responses ------------------------------------------------------------------------------
class TextBlock(BaseModel):
    type: Literal["text"] = "text"
    text: str


class ThinkingBlock(BaseModel):
    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str  # opaque; clients send it back with the block


class ToolUseBlock(BaseModel):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]


AnthropicContent = TextBlock | ThinkingBlock | ToolUseBlock


class AnthropicUsage(BaseModel):
    input_tokens: int  # prompt tokens not read from the prefix cache
    output_tokens: int
    cache_read_input_tokens: int = 0  # prompt tokens reused from the prefix cache
    cache_creation_input_tokens: int = 0


class AnthropicMessage(BaseModel):
    id: str
    type: Literal["message"] = "message"
    role: Literal["assistant"] = "assistant"
    content: list[AnthropicContent]
    model: str
    stop_reason: Literal["end_turn", "max_tokens", "stop_sequence", "tool_use"] | None = None
    stop_sequence: str | None = None
    usage: AnthropicUsage


class CountTokensResponse(BaseModel):
    input_tokens: int


# -- stream events --------------------------------------------------------------------------
class TextDelta(BaseModel):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ThinkingDelta(BaseModel):
    type: Literal["thinking_delta"] = "thinking_delta"
    thinking: str


class SignatureDelta(BaseModel):
    type: Literal["signature_delta"] = "signature_delta"
    signature: str


class InputJsonDelta(BaseModel):
    type: Literal["input_json_delta"] = "input_json_delta"
    partial_json: str


class MessageStart(BaseModel):
    type: Literal["message_start"] = "message_start"
    message: AnthropicMessage


class ContentBlockStart(BaseModel):
    type: Literal["content_block_start"] = "content_block_start"
    index: int
    content_block: AnthropicContent


class ContentBlockDelta(BaseModel):
    type: Literal["content_block_delta"] = "content_block_delta"
    index: int
    delta: TextDelta | ThinkingDelta | SignatureDelta | InputJsonDelta


class ContentBlockStop(BaseModel):
    type: Literal["content_block_stop"] = "content_block_stop"
    index: int


class MessageDelta(BaseModel):
    stop_reason: str | None = None
    stop_sequence: str | None = None


class MessageDeltaEvent(BaseModel):
    type: Literal["message_delta"] = "message_delta"
    delta: MessageDelta
    usage: AnthropicUsage  # totals: they replace message_start's (input_tokens come only now)


class MessageStop(BaseModel):
    type: Literal["message_stop"] = "message_stop"


class Ping(BaseModel):
    type: Literal["ping"] = "ping"
