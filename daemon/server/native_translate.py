"""Ollama's generate and chat requests -> inference jobs, and inference results -> chunks.

The native routes only wire these up; like the OpenAI layer, this is a translation onto the
one inference path, never a second engine.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from daemon.api.native_chat import (
    ChatRequest,
    Format,
    GenerateRequest,
    OllamaFunctionCall,
    OllamaMessage,
    OllamaToolCall,
)
from daemon.errors import BadRequestError
from daemon.generation import Usage
from daemon.inference import GenerationJob
from daemon.options import parse_keep_alive
from daemon.resolve import ResolvedModel
from daemon.tool_calls import ToolCall, ToolChoice

__all__ = [
    "chat_job",
    "check_images",
    "created_at",
    "done_reason",
    "generate_job",
    "timings",
    "tool_calls_out",
    "wants_images",
]

_ANY_JSON_OBJECT = {"type": "object"}
_NS = 1_000_000_000


def created_at() -> str:
    """Now, as Ollama stamps each chunk (RFC 3339, UTC)."""
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def generate_job(req: GenerateRequest) -> GenerationJob:
    if req.suffix:
        raise BadRequestError("suffix (fill in the middle) is not supported", param="suffix")
    if req.context:
        raise BadRequestError(
            "context (continuing from returned tokens) is not supported; "
            "send the whole conversation to /api/chat instead",
            param="context",
        )
    common = _common(req.format, req.options, req.keep_alive, req.logprobs, req.top_logprobs)
    if req.raw or req.system is None:
        return GenerationJob(
            model=req.model, prompt=req.prompt, raw=req.raw, template=req.template, **common
        )
    messages = [{"role": "system", "content": req.system}, {"role": "user", "content": req.prompt}]
    return GenerationJob(model=req.model, messages=messages, template=req.template, **common)


def chat_job(req: ChatRequest) -> GenerationJob:
    tools = [tool.model_dump(exclude_none=True) for tool in req.tools or ()]
    return GenerationJob(
        model=req.model,
        messages=[_message(m) for m in req.messages],
        tools=tools,
        tool_choice=ToolChoice("auto" if tools else "none"),
        **_common(req.format, req.options, req.keep_alive, req.logprobs, req.top_logprobs),
    )


def _common(
    fmt: Format,
    options: Mapping[str, object] | None,
    keep_alive: object,
    logprobs: bool,
    top_logprobs: int | None,
) -> dict:
    return {
        "options": dict(options or {}),
        "json_schema": _schema(fmt),
        "keep_alive": parse_keep_alive(keep_alive),
        "logprobs": (top_logprobs or 0) if logprobs else None,
    }


def _schema(fmt: Format) -> Mapping[str, object] | None:
    if fmt is None or fmt == "":
        return None
    if fmt == "json":
        return _ANY_JSON_OBJECT
    if not fmt:
        raise BadRequestError('format must be "json" or a non-empty JSON schema', param="format")
    return fmt


def _message(message: OllamaMessage) -> dict[str, object]:
    """Ollama's message as the templates read it (tool calls as objects, images dropped)."""
    out: dict[str, object] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"type": "function", "function": _arguments_object(call.function)}
            for call in message.tool_calls
        ]
    if message.tool_name:
        out["name"] = message.tool_name
    return out


def _arguments_object(function: OllamaFunctionCall) -> dict[str, object]:
    arguments = function.arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError:
            raise BadRequestError(
                "tool call arguments must be a JSON object", param="messages"
            ) from None
    return {"name": function.name, "arguments": arguments}


def wants_images(req: GenerateRequest | ChatRequest) -> bool:
    if isinstance(req, GenerateRequest):
        return bool(req.images)
    return any(m.images for m in req.messages)


def check_images(model: ResolvedModel) -> None:
    """Images are refused with a reason: no projector, or not implemented for this model."""
    if model.target.projector_path is None:
        raise BadRequestError(
            f"model {model.name!r} does not support images (it has no vision projector)",
            param="images",
        )
    raise BadRequestError(
        f"image input is not supported yet (model {model.name!r} has a vision projector, "
        "but localllm cannot feed it images yet)",
        param="images",
    )


# -- results ---------------------------------------------------------------------------------
def timings(usage: Usage) -> dict[str, int]:
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
    if not calls:
        return None
    return [
        OllamaToolCall(function=OllamaFunctionCall(name=call.name, arguments=_object(call)))
        for call in calls
    ]


def _object(call: ToolCall) -> dict[str, object]:
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {"value": value}
