"""OpenAI requests -> inference jobs, and inference results -> OpenAI response pieces.

This is the whole of the OpenAI compatibility layer's logic; the routes only wire it up.
Images come as ``image_url`` content parts holding ``data:`` URLs; a remote URL is refused,
never fetched (the daemon downloading whatever a request names would be a server-side request
forgery hole, reaching hosts only the daemon's machine can see).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from localllm.daemon.api import (
    ChatCompletionRequest,
    ChatLogprobs,
    CompletionRequest,
    FunctionCall,
    FunctionCallChunk,
    PromptTokensDetails,
    ResponsesRequest,
    ToolCallChunk,
    ToolCallOut,
    Usage,
)
from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference import GenerationJob
from localllm.daemon.inference.generation import GenerationStats
from localllm.daemon.inference.images import decode_base64
from localllm.daemon.inference.options import checked, parse_keep_alive
from localllm.daemon.inference.templates import image_part
from localllm.daemon.inference.tool_calls import ToolCall, ToolCallDelta, ToolChoice
from localllm.model_registry.parameters import LOGIT_BIAS_ENTRIES, MAX_TOKEN_ID

__all__ = [
    "chat_job",
    "chat_logprobs",
    "completion_job",
    "completion_logprobs",
    "image_from_url",
    "sampling_options",
    "tool_call_chunks",
    "tool_calls_out",
    "usage_out",
]

_JSON_OBJECT: Mapping[str, object] = {"type": "object"}
_EFFORTS: Mapping[str, bool | str] = {
    "none": False,
    "minimal": "low",
    "low": "low",
    "medium": "medium",
    "high": "high",
}
_TOKEN_ID = re.compile(r"[0-9]{1,10}")  # ASCII digits only: "²".isdigit() is true


def chat_job(req: ChatCompletionRequest) -> GenerationJob:
    _check_fields(req, "n", "max_tokens", "max_completion_tokens", "top_logprobs")
    _only_one(req.n)
    images: list[bytes] = []
    messages = [_message(m.model_dump(exclude_none=True), images) for m in req.messages]
    limit = req.max_completion_tokens if req.max_completion_tokens is not None else req.max_tokens
    top = req.top_logprobs if req.top_logprobs is not None else 0
    return GenerationJob(
        model=req.model,
        messages=messages,
        images=images,
        options=sampling_options(req, limit),
        tools=[t.model_dump(exclude_none=True) for t in req.tools or ()],
        tool_choice=_tool_choice(req.tool_choice, bool(req.tools), req.parallel_tool_calls),
        json_schema=_schema(req),
        logit_bias=_logit_bias(req.logit_bias),
        logprobs=top if req.logprobs else None,
        keep_alive=parse_keep_alive(req.keep_alive),
        think=_think(req.reasoning_effort),
        think_budget=req.think_budget,
    )


def completion_job(req: CompletionRequest) -> GenerationJob:
    _check_fields(req, "n", "max_tokens", "best_of", "logprobs")
    _only_one(req.n)
    if req.best_of is not None and req.best_of > 1:
        raise BadRequestError("best_of > 1 is not supported", param="best_of")
    return GenerationJob(
        model=req.model,
        prompt=_prompt_text(req.prompt),
        raw=not req.suffix,
        suffix=req.suffix or None,
        options=sampling_options(req, req.max_tokens),
        logit_bias=_logit_bias(req.logit_bias),
        logprobs=req.logprobs,
        keep_alive=parse_keep_alive(req.keep_alive),
    )


def _think(effort: str | None) -> bool | str | None:
    """OpenAI's ``reasoning_effort`` as ``think``: "none" turns thinking off, "minimal" is the
    least effort the templates know ("low")."""
    if effort is None:
        return None
    if effort not in _EFFORTS:
        allowed = ", ".join(f'"{e}"' for e in _EFFORTS)
        raise BadRequestError(f"reasoning_effort must be one of {allowed}", "reasoning_effort")
    return _EFFORTS[effort]


def _check_fields(req: ChatCompletionRequest | CompletionRequest, *names: str) -> None:
    """OpenAI's own numeric fields, against the one table of ranges (a 400 naming the field)."""
    for name in names:
        value = getattr(req, name)
        if value is not None:
            checked(name, value, what="")


def _only_one(n: int | None) -> None:
    if n is not None and n > 1:
        raise BadRequestError("n > 1 is not supported; send n requests instead", param="n")


def sampling_options(
    req: ChatCompletionRequest | CompletionRequest | ResponsesRequest, limit: int | None
) -> dict[str, object]:
    """Ollama options from OpenAI's sampling fields (each checked under the name the client
    sent) on top of the request's own ``options``; ``limit`` becomes ``num_predict``."""
    options: dict[str, object] = dict(req.options or {})
    fields = {
        "temperature": req.temperature,
        "top_p": req.top_p,
        "top_k": req.top_k,
        "min_p": req.min_p,
        "repeat_penalty": req.repeat_penalty,
        "presence_penalty": req.presence_penalty,
        "frequency_penalty": req.frequency_penalty,
        "seed": req.seed,
        "stop": req.stop,
    }
    for name, value in fields.items():
        if value is not None:
            checked(name, value, what="")  # named as the client sent it
            options[name] = value
    if limit is not None:
        options["num_predict"] = limit  # max_tokens, checked with its own name
    return options


def _message(message: dict[str, object], images: list[bytes]) -> dict[str, object]:
    """The message for the templates; its images are added to ``images``, in order."""
    if message.get("role") == "developer":
        message["role"] = "system"
    content = message.get("content")
    if isinstance(content, list):
        message["content"] = [_part(part, images) for part in content]
    return message


def _part(part: Mapping[str, object], images: list[bytes]) -> Mapping[str, object]:
    kind = part.get("type")
    if kind in ("text", "input_text"):
        return part
    if kind == "image_url":
        images.append(image_from_url(part.get("image_url"), len(images) + 1))
        return image_part(len(images) - 1)
    raise BadRequestError(
        f"content part type {kind!r} is not supported (text and image_url only)",
        param="messages",
    )


def image_from_url(image_url: object, number: int, param: str = "messages") -> bytes:
    """``{"url": "data:image/png;base64,..."}`` (or the bare URL) -> the image's bytes."""
    url = image_url.get("url") if isinstance(image_url, Mapping) else image_url
    if not isinstance(url, str) or not url:
        raise BadRequestError(
            'an image_url content part needs {"url": "data:image/...;base64,..."}',
            param=param,
        )
    header, comma, data = url.partition(",")
    if not (header[:5].lower() == "data:" and header.lower().endswith(";base64") and comma):
        raise BadRequestError(
            "image_url must be a data: URL with base64 content; localllm does not download images",
            param=param,
        )
    return decode_base64(data, number, param=param)


def _prompt_text(prompt: str | list[str] | list[int] | list[list[int]]) -> str:
    if isinstance(prompt, str):
        return prompt
    if len(prompt) == 1 and isinstance(prompt[0], str):
        return prompt[0]
    if prompt and all(isinstance(p, str) for p in prompt):
        raise BadRequestError("only one prompt per request is supported", param="prompt")
    raise BadRequestError("token-array prompts are not supported; send text", param="prompt")


def _tool_choice(
    value: str | Mapping[str, object] | None, has_tools: bool, parallel: bool | None
) -> ToolChoice:
    if value is None:
        return ToolChoice("auto" if has_tools else "none")
    if isinstance(value, str):
        return ToolChoice(value, parallel=bool(parallel))
    function = value.get("function") if value.get("type") == "function" else None
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(name, str):
        raise BadRequestError(
            'tool_choice must be "none", "auto", "required" or '
            '{"type": "function", "function": {"name": ...}}',
            param="tool_choice",
        )
    return ToolChoice("function", name)


def _schema(req: ChatCompletionRequest) -> Mapping[str, object] | None:
    fmt = req.response_format
    if fmt is None or fmt.type == "text":
        return None
    if fmt.type == "json_object":
        return _JSON_OBJECT
    if fmt.json_schema is None or fmt.json_schema.schema_ is None:
        raise BadRequestError("response_format json_schema needs a schema", "response_format")
    return fmt.json_schema.schema_


def _logit_bias(bias: Mapping[str, float] | None) -> dict[int, float]:
    """OpenAI's token id -> bias map: at most 300 entries (as OpenAI allows), keys decimal."""
    bias = bias or {}
    if len(bias) > LOGIT_BIAS_ENTRIES:
        raise BadRequestError(
            f"logit_bias takes at most {LOGIT_BIAS_ENTRIES} entries, got {len(bias)}", "logit_bias"
        )
    result: dict[int, float] = {}
    for key, value in bias.items():
        if not _TOKEN_ID.fullmatch(key) or int(key) > MAX_TOKEN_ID:
            raise BadRequestError(
                f"logit_bias keys must be token ids (0 to {MAX_TOKEN_ID}), got {key[:24]!r}",
                "logit_bias",
            )
        if not -100 <= value <= 100:
            raise BadRequestError("logit_bias values must be between -100 and 100", "logit_bias")
        result[int(key)] = float(value)
    return result


# -- responses ------------------------------------------------------------------------------
def usage_out(usage: GenerationStats) -> Usage:
    return Usage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        total_tokens=usage.prompt_tokens + usage.completion_tokens,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=usage.cached_tokens),
    )


def tool_calls_out(calls: Sequence[ToolCall]) -> list[ToolCallOut]:
    return [
        ToolCallOut(id=call.id, function=FunctionCall(name=call.name, arguments=call.arguments))
        for call in calls
    ]


def tool_call_chunks(pieces: Sequence[ToolCallDelta]) -> list[ToolCallChunk]:
    """Streamed calls as OpenAI streams them: a call's first piece has its id, type, name and
    empty arguments; its arguments follow in pieces of their own."""
    chunks: list[ToolCallChunk] = []
    for piece in pieces:
        if piece.id is not None:
            function = FunctionCallChunk(name=piece.name)
            chunks.append(
                ToolCallChunk(index=piece.index, id=piece.id, type="function", function=function)
            )
        if piece.arguments:
            function = FunctionCallChunk(arguments=piece.arguments)
            chunks.append(ToolCallChunk(index=piece.index, function=function))
    return chunks


# A per-token logprob entry (the runner's, or a remote's made alike): {token, logprob, bytes,
# top_logprobs: [{token, logprob, bytes}]}; inference hands them over as plain objects.
def chat_logprobs(entries: Sequence[Mapping[str, object]]) -> ChatLogprobs | None:
    """The runner's per-token entries are already in OpenAI's chat shape."""
    if not entries:
        return None
    return ChatLogprobs(content=[_chat_entry(e) for e in entries])


def _chat_entry(entry: Mapping[str, object]) -> dict[str, object]:
    return {**_token(entry), "top_logprobs": [_token(a) for a in _alternatives(entry)]}


def _token(entry: Mapping[str, object]) -> dict[str, object]:
    token = str(entry.get("token", ""))
    bytes_ = entry.get("bytes")
    return {
        "token": token,
        "logprob": _logprob(entry),
        "bytes": list(bytes_) if isinstance(bytes_, list | tuple) else list(token.encode()),
    }


def _logprob(entry: Mapping[str, object]) -> float:
    value = entry.get("logprob", 0.0)
    return float(value) if isinstance(value, int | float) else 0.0


def _alternatives(entry: Mapping[str, object]) -> list[Mapping[str, object]]:
    alternatives = entry.get("top_logprobs")
    if not isinstance(alternatives, list | tuple):
        return []
    return [a for a in alternatives if isinstance(a, Mapping)]


def completion_logprobs(
    entries: Sequence[Mapping[str, object]], offset: int
) -> dict[str, object] | None:
    """Legacy completions shape: parallel lists, top alternatives as {token: logprob}."""
    if not entries:
        return None
    tokens: list[str] = []
    logprobs: list[float] = []
    tops: list[dict[str, float]] = []
    offsets: list[int] = []
    for entry in entries:
        token = str(entry.get("token", ""))
        tokens.append(token)
        logprobs.append(_logprob(entry))
        tops.append({str(a.get("token")): _logprob(a) for a in _alternatives(entry)})
        offsets.append(offset)
        offset += len(token)
    return {
        "tokens": tokens,
        "token_logprobs": logprobs,
        "top_logprobs": tops,
        "text_offset": offsets,
    }
