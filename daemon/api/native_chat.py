"""Ollama's native wire format: generate, chat and embeddings (requests and stream chunks).

Field names, defaults and shapes follow Ollama's API so its official clients work unchanged:
``stream`` defaults to true, durations are integer nanoseconds, tool-call arguments are JSON
objects (not strings, as in OpenAI's format). Unknown request fields are ignored. ``think`` is
true, false or an effort ("low", "medium", "high"); ``options.think_budget`` caps the thinking.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from localllm.daemon.api.openai_chat import Tool

__all__ = [
    "ChatChunk",
    "ChatRequest",
    "EmbedRequest",
    "EmbedResponse",
    "EmbeddingsRequest",
    "EmbeddingsResponse",
    "Format",
    "GenerateChunk",
    "GenerateRequest",
    "OllamaFunctionCall",
    "OllamaMessage",
    "OllamaReply",
    "OllamaToolCall",
    "TruncatedHistory",
]

#: ``"json"``, a JSON schema, or nothing ("" or null).
Format = Literal["", "json"] | dict[str, Any] | None
KeepAlive = float | str | None


class _Request(BaseModel):
    model_config = ConfigDict(extra="ignore")


class OllamaFunctionCall(_Request):
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class OllamaToolCall(_Request):
    function: OllamaFunctionCall


class OllamaMessage(_Request):
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    images: list[str] | None = None  # base64
    tool_calls: list[OllamaToolCall] | None = None
    tool_name: str | None = None  # the tool a "tool" message answers
    thinking: str | None = None


class GenerateRequest(_Request):
    model: str
    prompt: str = ""
    suffix: str | None = None
    system: str | None = None
    template: str | None = None
    context: list[int] | None = None
    raw: bool = False
    format: Format = None
    images: list[str] | None = None
    options: dict[str, Any] | None = None
    keep_alive: KeepAlive = None
    stream: bool = True
    think: bool | str | None = None
    logprobs: bool = False
    top_logprobs: int | None = None  # 0-20, checked on translation


class ChatRequest(_Request):
    model: str
    messages: list[OllamaMessage] = Field(default_factory=list)
    tools: list[Tool] | None = None
    format: Format = None
    options: dict[str, Any] | None = None
    keep_alive: KeepAlive = None
    stream: bool = True
    think: bool | str | None = None
    logprobs: bool = False
    top_logprobs: int | None = None  # 0-20, checked on translation
    # Ollama's: drop the oldest turns of a chat past the context (False: the 400 instead).
    truncate: bool = True


class TruncatedHistory(BaseModel):
    """Our addition to a chat's final chunk: the oldest turns were dropped to fit."""

    dropped_messages: int  # not counting system messages, which are always kept
    kept_from: int  # index in the request's messages of the first one kept after them


class _Timings(BaseModel):
    """The final chunk's numbers; absent (None) on the chunks before it."""

    done_reason: str | None = None
    total_duration: int | None = None
    load_duration: int | None = None
    prompt_eval_count: int | None = None
    prompt_eval_duration: int | None = None
    eval_count: int | None = None
    eval_duration: int | None = None


class GenerateChunk(_Timings):
    model: str
    created_at: str
    response: str = ""
    thinking: str | None = None  # a thinking model's reasoning, never part of ``response``
    done: bool = False
    logprobs: list[dict[str, Any]] | None = None


class OllamaReply(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str = ""
    thinking: str | None = None  # a thinking model's reasoning, never part of ``content``
    tool_calls: list[OllamaToolCall] | None = None


class ChatChunk(_Timings):
    model: str
    created_at: str
    message: OllamaReply
    done: bool = False
    logprobs: list[dict[str, Any]] | None = None
    truncated: TruncatedHistory | None = None  # in the final chunk, when turns were dropped


class EmbedRequest(_Request):
    model: str
    input: str | list[str] = ""
    truncate: bool = True
    dimensions: int | None = Field(default=None, ge=1)
    options: dict[str, Any] | None = None
    keep_alive: KeepAlive = None


class EmbedResponse(BaseModel):
    model: str
    embeddings: list[list[float]]
    total_duration: int
    load_duration: int
    prompt_eval_count: int


class EmbeddingsRequest(_Request):
    """The legacy single-text endpoint (``/api/embeddings``)."""

    model: str
    prompt: str = ""
    options: dict[str, Any] | None = None
    keep_alive: KeepAlive = None


class EmbeddingsResponse(BaseModel):
    embedding: list[float]
