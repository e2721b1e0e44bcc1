"""Ollama's generate and chat requests -> inference jobs, and inference results -> chunks.

The native routes only wire these up; like the OpenAI layer, this is a translation onto the
one inference path, never a second engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TypedDict

from localllm.daemon.api.native_chat import (
    ChatRequest,
    Format,
    GenerateRequest,
    OllamaFunctionCall,
    OllamaMessage,
    OllamaToolCall,
)
from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference import GenerationJob
from localllm.daemon.inference.generation import GenerationStats
from localllm.daemon.inference.images import decode_base64
from localllm.daemon.inference.json_scan import loads
from localllm.daemon.inference.options import checked, parse_keep_alive
from localllm.daemon.inference.templates import image_part
from localllm.daemon.inference.tool_calls import ToolCall, ToolCallDelta, ToolChoice

__all__ = [
    "CallAssembler",
    "chat_job",
    "created_at",
    "done_reason",
    "generate_job",
    "timings",
    "tool_calls_out",
]

_ANY_JSON_OBJECT = {"type": "object"}
_NS = 1_000_000_000


def created_at() -> str:
    """Now, as Ollama stamps each chunk (RFC 3339, UTC)."""
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def generate_job(req: GenerateRequest) -> GenerationJob:
    if req.context:
        raise BadRequestError(
            "context (continuing from returned tokens) is not supported; "
            "send the whole conversation to /api/chat instead",
            param="context",
        )
    common = _common(
        req.format, req.options, req.keep_alive, req.logprobs, req.top_logprobs, req.think
    )
    images = _decoded(req.images)
    if req.suffix:  # as Ollama: an empty suffix is none
        _check_fill_in(req, images)
        return GenerationJob(model=req.model, prompt=req.prompt or "", suffix=req.suffix, **common)
    if req.raw or req.system is None:
        return GenerationJob(
            model=req.model,
            prompt=req.prompt,
            raw=req.raw,
            template=req.template,
            images=images,
            **common,
        )
    user: dict[str, object] = {"role": "user", "content": _content(req.prompt, range(len(images)))}
    messages: list[dict[str, object]] = [{"role": "system", "content": req.system}, user]
    return GenerationJob(
        model=req.model, messages=messages, template=req.template, images=images, **common
    )


def _check_fill_in(req: GenerateRequest, images: list[bytes]) -> None:
    """Fill in the middle writes code between two plain texts: what a chat template, a system
    prompt, images or thinking would add has no place in it."""
    for name, given in (
        ("system", req.system), ("template", req.template), ("images", images),
        ("think", req.think),
    ):  # fmt: skip
        if given:
            raise BadRequestError(
                f"{name} cannot go with a suffix: fill in the middle takes the text before the "
                "gap (prompt) and after it (suffix) only",
                param=name,
            )


def chat_job(req: ChatRequest) -> GenerationJob:
    tools = [tool.model_dump(exclude_none=True) for tool in req.tools or ()]
    messages: list[dict[str, object]] = []
    images: list[bytes] = []
    for number, message in enumerate(req.messages, 1):
        decoded = _decoded(message.images, len(images), f" (in message {number})")
        messages.append(_message(message, range(len(images), len(images) + len(decoded))))
        images += decoded
    return GenerationJob(
        model=req.model,
        messages=messages,
        images=images,
        tools=tools,
        tool_choice=ToolChoice("auto" if tools else "none"),
        truncate=req.truncate,
        **_common(
            req.format, req.options, req.keep_alive, req.logprobs, req.top_logprobs, req.think
        ),
    )


class _CommonFields(TypedDict):
    """What generate and chat requests ask of a job alike (``GenerationJob``'s fields)."""

    options: Mapping[str, object]
    json_schema: Mapping[str, object] | None
    keep_alive: float | None
    logprobs: int | None
    think: bool | str | None


def _common(
    fmt: Format,
    options: Mapping[str, object] | None,
    keep_alive: object,
    logprobs: bool,
    top_logprobs: int | None,
    think: bool | str | None,
) -> _CommonFields:
    if top_logprobs is not None:
        checked("top_logprobs", top_logprobs, what="")
    return {
        "options": dict(options or {}),
        "json_schema": _schema(fmt),
        "keep_alive": parse_keep_alive(keep_alive),
        "logprobs": (top_logprobs or 0) if logprobs else None,
        "think": think,
    }


def _schema(fmt: Format) -> Mapping[str, object] | None:
    if fmt is None or fmt == "":
        return None
    if fmt == "json":
        return _ANY_JSON_OBJECT
    if not fmt:
        raise BadRequestError('format must be "json" or a non-empty JSON schema', param="format")
    return fmt


def _message(message: OllamaMessage, places: range) -> dict[str, object]:
    """Ollama's message as the templates read it (tool calls as objects, ``places`` as image
    parts before the text, where Ollama puts a message's images)."""
    out: dict[str, object] = {"role": message.role, "content": _content(message.content, places)}
    if message.tool_calls:
        out["tool_calls"] = [
            {"type": "function", "function": _arguments_object(call.function)}
            for call in message.tool_calls
        ]
    if message.tool_name:
        out["name"] = message.tool_name
    if message.thinking:
        out["thinking"] = message.thinking  # the template decides whether it is kept
    return out


def _arguments_object(function: OllamaFunctionCall) -> dict[str, object]:
    """A call's arguments as an object: a text of one is parsed, any other text refused."""
    arguments = function.arguments
    if isinstance(arguments, str):
        try:
            parsed = loads(arguments or "{}")
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise BadRequestError("tool call arguments must be a JSON object", param="messages")
        arguments = parsed
    return {"name": function.name, "arguments": arguments}


def _content(text: str, places: range) -> str | list[dict[str, object]]:
    if not places:
        return text
    return [*(image_part(i) for i in places), {"type": "text", "text": text}]


def _decoded(images: Sequence[str] | None, first: int = 0, where: str = "") -> list[bytes]:
    """Ollama's base64 images as bytes, numbered across the request from ``first + 1``."""
    return [
        decode_base64(text, number, where) for number, text in enumerate(images or (), first + 1)
    ]


# -- results ---------------------------------------------------------------------------------
def timings(usage: GenerationStats) -> dict[str, int]:
    """The final chunk's counts and durations (nanoseconds, as Ollama reports them)."""
    return {
        "total_duration": int(usage.total_seconds * _NS),
        "load_duration": int(usage.load_seconds * _NS),
        "prompt_eval_count": usage.prompt_tokens,
        "prompt_eval_duration": int(usage.prompt_seconds * _NS),
        "eval_count": usage.completion_tokens,
        "eval_duration": int(usage.generation_seconds * _NS),
    }


def done_reason(reason: str) -> str:
    """Ollama says "stop" when a reply ends in tool calls."""
    return "stop" if reason == "tool_calls" else reason


def tool_calls_out(calls: Sequence[ToolCall]) -> list[OllamaToolCall] | None:
    """Ollama's calls carry their arguments as an object: a call whose arguments never became
    one (cut off, or not JSON) is left out, streamed or not."""
    out = [
        OllamaToolCall(function=OllamaFunctionCall(name=call.name, arguments=arguments))
        for call in calls
        if (arguments := _object(call.arguments)) is not None
    ]
    return out or None


def _object(text: str) -> dict[str, object] | None:
    try:
        value = loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class CallAssembler:
    """Ollama streams each tool call whole, in the chunk where it is complete: this gathers a
    call's streamed pieces until its arguments are a whole JSON object."""

    def __init__(self) -> None:
        self._calls: dict[int, ToolCall] = {}

    def add(self, pieces: Sequence[ToolCallDelta]) -> list[ToolCall]:
        """The calls these pieces complete."""
        complete = []
        for piece in pieces:
            call = self._calls.get(piece.index) or ToolCall(piece.id or "", piece.name or "", "")
            call = self._calls[piece.index] = replace(
                call, arguments=call.arguments + piece.arguments
            )
            if piece.arguments.rstrip().endswith("}") and _object(call.arguments) is not None:
                complete.append(call)
        return complete
