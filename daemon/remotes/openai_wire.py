"""A job as an OpenAI ``/v1/chat/completions`` streaming request, and the remote's
server-sent chunks back as ``Delta`` items: what every OpenAI-compatible engine (vLLM, SGLang,
TGI, llama-server, LM Studio, another localllm) speaks."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference.generation import Delta
from localllm.daemon.inference.jobs import GenerationJob
from localllm.daemon.inference.tool_calls import ToolCallDelta
from localllm.daemon.remotes.stream_state import (
    JsonObject,
    StreamState,
    json_object,
    remote_failure,
)

__all__ = ["chat_body", "image_data_url", "plain_messages", "read_chunk"]

_OPTIONS = {  # Ollama option name -> OpenAI field
    "temperature": "temperature",
    "top_p": "top_p",
    "seed": "seed",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
}
_MAGIC = ((b"\x89PNG", "image/png"), (b"\xff\xd8", "image/jpeg"), (b"GIF8", "image/gif"))


def image_data_url(image: bytes) -> str:
    kind = next((mime for magic, mime in _MAGIC if image.startswith(magic)), None)
    if kind is None:
        kind = "image/webp" if image[8:12] == b"WEBP" else "application/octet-stream"
    return f"data:{kind};base64,{base64.b64encode(image).decode()}"


def plain_messages(job: GenerationJob) -> list[JsonObject]:
    """The job's conversation (a prompt becomes one user message)."""
    if job.raw:
        raise BadRequestError("raw prompts cannot go to a remote model; send messages", "raw")
    if job.template:
        raise BadRequestError("a remote model uses its own template", param="template")
    if job.messages is not None:
        return [dict(m) for m in job.messages]
    parts = [{"type": "image", "index": i} for i in range(len(job.images))]
    return [{"role": "user", "content": [*parts, {"type": "text", "text": job.prompt or ""}]}]


def _message(message: JsonObject, images: list[bytes]) -> JsonObject:
    out = {k: v for k, v in message.items() if k not in ("thinking",) and v is not None}
    content = out.get("content")
    if isinstance(content, list):
        out["content"] = [_part(part, images) for part in content]
    for call in out.get("tool_calls") or ():
        function = call.get("function") or {}
        if not isinstance(function.get("arguments"), str):
            function["arguments"] = json.dumps(function.get("arguments") or {})
        call.setdefault("type", "function")
    return out


def _part(part: Mapping[str, Any], images: list[bytes]) -> JsonObject:
    if part.get("type") == "image":
        return {"type": "image_url", "image_url": {"url": image_data_url(images[part["index"]])}}
    return dict(part)


def chat_body(job: GenerationJob, remote_id: str) -> JsonObject:
    images = list(job.images)
    body: JsonObject = {
        "model": remote_id,
        "messages": [_message(m, images) for m in plain_messages(job)],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    options = job.options
    body.update({_OPTIONS[k]: v for k, v in options.items() if k in _OPTIONS})
    num_predict = options.get("num_predict")
    if isinstance(num_predict, int) and num_predict > 0:
        body["max_tokens"] = num_predict
    if options.get("stop"):
        body["stop"] = options["stop"]
    if job.tools:
        body["tools"] = [dict(t) for t in job.tools]
        body["tool_choice"] = _tool_choice(job)
    if job.json_schema is not None:
        schema = {"name": "response", "schema": dict(job.json_schema)}
        body["response_format"] = {"type": "json_schema", "json_schema": schema}
    if job.logprobs is not None:
        body["logprobs"] = True
        if job.logprobs > 0:
            body["top_logprobs"] = job.logprobs
    if isinstance(job.think, str):
        body["reasoning_effort"] = job.think
    elif job.think is False:
        body["reasoning_effort"] = "none"
    return body


def _tool_choice(job: GenerationJob) -> object:
    choice = job.tool_choice
    if choice.mode == "function":
        return {"type": "function", "function": {"name": choice.name}}
    return choice.mode


def read_chunk(line: bytes, state: StreamState) -> list[Delta]:
    """One line of the remote's event stream; the deltas it carries (often none)."""
    text = line.decode("utf-8", "replace").strip()
    if not text.startswith("data:"):
        return []  # blank lines, comments, event names
    data = text[5:].strip()
    if data == "[DONE]":
        state.done = True
        return []
    chunk = json_object(data, state, "an event")
    if chunk.get("error"):
        raise remote_failure(state, f"reported an error: {_error_text(chunk['error'])}")
    if isinstance(chunk.get("usage"), dict):
        state.usage(chunk["usage"].get("prompt_tokens"), chunk["usage"].get("completion_tokens"))
    deltas: list[Delta] = []
    for choice in chunk.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        deltas.extend(_delta(choice.get("delta") or {}, _logprobs(choice), state))
        if choice.get("finish_reason"):
            state.reason = str(choice["finish_reason"])
    return deltas


def _delta(delta: JsonObject, logprobs: tuple[JsonObject, ...], state: StreamState) -> list[Delta]:
    thinking = delta.get("reasoning_content") or delta.get("reasoning") or ""
    text = delta.get("content") or ""
    has_some = text or thinking or logprobs
    out = [Delta(str(text), logprobs, str(thinking))] if has_some else []
    for call in delta.get("tool_calls") or ():
        out.extend(_call_pieces(call, state))
    return out


def _logprobs(choice: JsonObject) -> tuple[JsonObject, ...]:
    """The choice's per-token logprobs (OpenAI's ``logprobs.content``) as the local runner's
    entries: ``{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}``."""
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        return ()
    entries = []
    for entry in content:
        alternatives = entry.get("top_logprobs") or []
        entries.append({**_token(entry), "top_logprobs": [_token(a) for a in alternatives]})
    return tuple(entries)


def _token(entry: JsonObject) -> JsonObject:
    token = str(entry.get("token", ""))
    raw = entry.get("bytes")
    bytes_ = [int(b) for b in raw] if isinstance(raw, list) else list(token.encode())
    return {"token": token, "logprob": float(entry.get("logprob", 0.0)), "bytes": bytes_}


def _call_pieces(call: JsonObject, state: StreamState) -> list[Delta]:
    function = call.get("function") or {}
    index = call.get("index", 0) if isinstance(call.get("index"), int) else 0
    pieces = []
    if function.get("name"):
        started = state.start_call(index, call.get("id"), str(function["name"]))
        pieces.append(Delta("", tool_calls=(started,)))
    if function.get("arguments"):
        part = function["arguments"]
        part = part if isinstance(part, str) else json.dumps(part)
        state.add_arguments(index, part)
        pieces.append(Delta("", tool_calls=(ToolCallDelta(index, arguments=part),)))
    return pieces


def _error_text(error: object) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or "unknown")[:300]
    return str(error)[:300]
