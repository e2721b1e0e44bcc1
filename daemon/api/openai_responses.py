"""OpenAI wire format: the Responses API (``/v1/responses``): request, response, stream events.

Shapes follow OpenAI's API reference (as the official SDK's ``Response`` and
``ResponseStreamEvent`` types parse them). A request's ``input`` items are checked one by one
(``daemon.server.openai.responses_translate``) so an unsupported item type gets its own clear
message; the item models here are what each supported type must hold.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ContentPartEvent",
    "FunctionCallArgumentsEvent",
    "FunctionCallItem",
    "FunctionCallOut",
    "FunctionCallOutputItem",
    "FunctionToolIn",
    "InputMessage",
    "InputTokensDetails",
    "NamespaceToolIn",
    "OutputItem",
    "OutputItemEvent",
    "OutputMessage",
    "OutputText",
    "OutputTokensDetails",
    "ReasoningConfig",
    "ReasoningItem",
    "ReasoningOut",
    "ReasoningText",
    "ResponseDeleted",
    "ResponseErrorEvent",
    "ResponseLifecycleEvent",
    "ResponseObject",
    "ResponseUsage",
    "ResponsesRequest",
    "StreamEvent",
    "TextConfig",
    "TextDeltaEvent",
    "TextDoneEvent",
    "TextFormat",
]


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


# -- request --------------------------------------------------------------------------------
class InputMessage(_In):
    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[dict[str, Any]]


class FunctionCallItem(_In):
    """A tool call the model made earlier, sent back as history."""

    type: Literal["function_call"]
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: str = "{}"


class FunctionCallOutputItem(_In):
    """What the client's tool answered to ``call_id``."""

    type: Literal["function_call_output"]
    call_id: str = Field(min_length=1)
    output: str | list[dict[str, Any]]


class ReasoningItem(_In):
    """The model's earlier reasoning, sent back so the next turn's template can show it."""

    type: Literal["reasoning"]
    summary: list[dict[str, Any]] = []
    content: list[dict[str, Any]] | None = None


class FunctionToolIn(_In):
    type: Literal["function"] = "function"
    name: str = Field(min_length=1, max_length=64)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class NamespaceToolIn(_In):
    """Function tools grouped under one name (Codex's ``multi_agent_v1``)."""

    type: Literal["namespace"]
    name: str = Field(min_length=1, max_length=64)
    description: str | None = None
    tools: list[dict[str, Any]]


class TextFormat(_In):
    type: Literal["text", "json_object", "json_schema"] = "text"
    name: str | None = None
    description: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class TextConfig(_In):
    format: TextFormat | None = None
    verbosity: str | None = None


class ReasoningConfig(_In):
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None
    summary: str | None = None


class ResponsesRequest(_In):
    model: str
    input: str | list[dict[str, Any]] = Field(default_factory=list)
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: Literal["none", "auto", "required"] | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    text: TextConfig | None = None
    reasoning: ReasoningConfig | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    stream: bool = False
    store: bool = True
    previous_response_id: str | None = None
    metadata: dict[str, str] | None = None
    user: str | None = None
    background: bool | None = None
    conversation: str | dict[str, Any] | None = None
    # extras understood by llama.cpp / Ollama-flavoured clients (send them in extra_body)
    seed: int | None = None
    stop: str | list[str] | None = None
    top_k: int | None = Field(default=None, ge=0)
    min_p: float | None = Field(default=None, ge=0, le=1)
    repeat_penalty: float | None = Field(default=None, ge=0)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    keep_alive: float | str | None = None
    options: dict[str, Any] | None = None


# -- response -------------------------------------------------------------------------------
Status = Literal["in_progress", "completed", "incomplete"]


class OutputText(BaseModel):
    type: Literal["output_text"] = "output_text"
    text: str
    annotations: list[dict[str, Any]] = []
    logprobs: list[dict[str, Any]] = []


class ReasoningText(BaseModel):
    type: Literal["reasoning_text"] = "reasoning_text"
    text: str


class OutputMessage(BaseModel):
    id: str
    type: Literal["message"] = "message"
    role: Literal["assistant"] = "assistant"
    status: Status
    content: list[OutputText]


class ReasoningOut(BaseModel):
    """The model's thinking, whole, as ``reasoning_text`` (no separate summary is made)."""

    id: str
    type: Literal["reasoning"] = "reasoning"
    status: Status
    summary: list[dict[str, Any]] = []
    content: list[ReasoningText]


class FunctionCallOut(BaseModel):
    id: str
    type: Literal["function_call"] = "function_call"
    status: Status
    call_id: str
    name: str
    arguments: str
    namespace: str | None = None  # the namespace tool the function came in


OutputItem = OutputMessage | ReasoningOut | FunctionCallOut


class InputTokensDetails(BaseModel):
    cached_tokens: int  # reused from the runner's prefix cache
    cache_write_tokens: int  # decoded this time (and kept in that cache for the next request)


class OutputTokensDetails(BaseModel):
    reasoning_tokens: int = 0


class ResponseUsage(BaseModel):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int


class ResponseObject(BaseModel):
    id: str
    object: Literal["response"] = "response"
    created_at: int
    status: Literal["in_progress", "completed", "incomplete", "failed"]
    error: dict[str, Any] | None = None
    incomplete_details: dict[str, Any] | None = None
    instructions: str | None = None
    max_output_tokens: int | None = None
    model: str
    output: list[OutputItem] = []
    parallel_tool_calls: bool = True
    previous_response_id: str | None = None
    reasoning: dict[str, Any] | None = None
    store: bool = True
    temperature: float | None = None
    text: dict[str, Any] = {"format": {"type": "text"}}
    tool_choice: str | dict[str, Any] = "auto"
    tools: list[dict[str, Any]] = []
    top_p: float | None = None
    truncation: Literal["disabled"] = "disabled"
    usage: ResponseUsage | None = None
    user: str | None = None
    metadata: dict[str, str] = {}


class ResponseDeleted(BaseModel):
    id: str
    object: Literal["response.deleted"] = "response.deleted"
    deleted: bool = True


# -- stream events (each carries its ``type`` and its place in the stream) ------------------
class StreamEvent(BaseModel):
    type: str
    sequence_number: int


class ResponseLifecycleEvent(StreamEvent):
    """response.created / in_progress / completed / incomplete / failed."""

    response: ResponseObject


class OutputItemEvent(StreamEvent):
    """response.output_item.added / done."""

    output_index: int
    item: OutputItem


class ContentPartEvent(StreamEvent):
    """response.content_part.added / done."""

    item_id: str
    output_index: int
    content_index: int = 0
    part: OutputText | ReasoningText


class TextDeltaEvent(StreamEvent):
    """response.output_text.delta and response.reasoning_text.delta (no logprobs there)."""

    item_id: str
    output_index: int
    content_index: int = 0
    delta: str
    logprobs: list[dict[str, Any]] | None = None


class TextDoneEvent(StreamEvent):
    """response.output_text.done and response.reasoning_text.done (no logprobs there)."""

    item_id: str
    output_index: int
    content_index: int = 0
    text: str
    logprobs: list[dict[str, Any]] | None = None


class FunctionCallArgumentsEvent(StreamEvent):
    """response.function_call_arguments.delta (``delta``) / .done (``arguments``)."""

    item_id: str
    output_index: int
    delta: str | None = None
    arguments: str | None = None


class ResponseErrorEvent(StreamEvent):
    type: Literal["error"] = "error"
    code: str | None = None
    message: str
    param: str | None = None
