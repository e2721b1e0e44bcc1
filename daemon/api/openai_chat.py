"""OpenAI wire format: chat completions (request, response, stream chunk).

Field names and shapes follow OpenAI's API reference so the official SDKs parse our answers.
Unknown request fields are ignored (as OpenAI-compatible servers do); the few llama.cpp /
Ollama extras we accept (``top_k``, ``min_p``, ``repeat_penalty``, ``keep_alive``,
``options``, ``think_budget``) are listed explicitly. A thinking model's reasoning comes as
``reasoning_content`` (on the message and in stream deltas, as DeepSeek's API and vLLM send it)
and is taken back in assistant messages under the same name.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from localllm.daemon.api.openai_common import SamplingFields, Usage

__all__ = [
    "ChatChoice",
    "ChatChunkChoice",
    "ChatCompletion",
    "ChatCompletionChunk",
    "ChatCompletionRequest",
    "ChatDelta",
    "ChatLogprobs",
    "ChatMessage",
    "ChatResponseMessage",
    "FunctionCall",
    "FunctionCallChunk",
    "JsonSchemaFormat",
    "ResponseFormat",
    "StreamOptions",
    "Tool",
    "ToolCallChunk",
    "ToolCallOut",
    "ToolFunction",
]


class _Request(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FunctionCall(BaseModel):
    name: str
    arguments: str = "{}"


class ToolCallOut(BaseModel):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class FunctionCallChunk(BaseModel):
    name: str | None = None  # on a call's first chunk only
    arguments: str = ""  # the next piece of the arguments text


class ToolCallChunk(BaseModel):
    """A piece of a streamed tool call: the first has the id, type and name, the next ones
    (same ``index``) the arguments text, a piece at a time."""

    index: int
    id: str | None = None
    type: Literal["function"] | None = None
    function: FunctionCallChunk


class ChatMessage(_Request):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None  # an earlier answer's thinking


class ToolFunction(_Request):
    name: str = Field(min_length=1, max_length=64)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(_Request):
    type: Literal["function"] = "function"
    function: ToolFunction


class JsonSchemaFormat(_Request):
    name: str = "response"
    description: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class ResponseFormat(_Request):
    type: Literal["text", "json_object", "json_schema"] = "text"
    json_schema: JsonSchemaFormat | None = None


class StreamOptions(_Request):
    include_usage: bool = False


class ChatCompletionRequest(SamplingFields):
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stream_options: StreamOptions | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    response_format: ResponseFormat | None = None
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: str | None = None  # "none", "minimal", "low", "medium", "high"
    think_budget: int | None = Field(default=None, ge=0)  # thinking tokens, then the answer


class ChatLogprobs(BaseModel):
    content: list[dict[str, Any]] | None = None


class ChatResponseMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCallOut] | None = None


class ChatChoice(BaseModel):
    index: int = 0
    message: ChatResponseMessage
    finish_reason: str | None = None
    logprobs: ChatLogprobs | None = None


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    system_fingerprint: str | None = None
    choices: list[ChatChoice]
    usage: Usage | None = None


class ChatDelta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCallChunk] | None = None


class ChatChunkChoice(BaseModel):
    index: int = 0
    delta: ChatDelta
    finish_reason: str | None = None
    logprobs: ChatLogprobs | None = None


class ChatCompletionChunk(BaseModel):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    system_fingerprint: str | None = None
    choices: list[ChatChunkChoice]
    usage: Usage | None = None
