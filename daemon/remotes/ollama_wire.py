"""A job as an Ollama ``/api/chat`` streaming request, and its NDJSON lines back as
``Delta`` items, for remotes that speak Ollama's native API."""

from __future__ import annotations

import base64
import json

from localllm.daemon.inference.generation import Delta
from localllm.daemon.inference.jobs import GenerationJob
from localllm.daemon.inference.json_scan import loads
from localllm.daemon.inference.tool_calls import ToolCallDelta
from localllm.daemon.remotes.openai_wire import plain_messages
from localllm.daemon.remotes.stream_state import (
    JsonObject,
    StreamState,
    json_object,
    remote_failure,
)

__all__ = ["chat_body", "read_line"]


def _message(message: JsonObject, images: list[bytes]) -> JsonObject:
    out = {k: v for k, v in message.items() if v is not None}
    content = out.get("content")
    if isinstance(content, list):
        indexes = [p["index"] for p in content if p.get("type") == "image"]
        out["content"] = "".join(
            str(p.get("text", "")) for p in content if p.get("type") != "image"
        )
        if indexes:
            out["images"] = [base64.b64encode(images[i]).decode() for i in indexes]
    for call in out.get("tool_calls") or ():
        function = call.get("function") or {}
        if isinstance(function.get("arguments"), str):
            try:
                function["arguments"] = loads(function["arguments"] or "{}")
            except ValueError:
                function["arguments"] = {}
    return out


def chat_body(job: GenerationJob, remote_id: str) -> JsonObject:
    images = list(job.images)
    body: JsonObject = {
        "model": remote_id,
        "messages": [_message(m, images) for m in plain_messages(job)],
        "stream": True,
        "options": dict(job.options),
    }
    if job.tools:
        body["tools"] = [dict(t) for t in job.tools]
    if job.json_schema is not None:
        body["format"] = dict(job.json_schema)
    if job.think is not None:
        body["think"] = job.think
    if job.keep_alive is not None:
        body["keep_alive"] = job.keep_alive
    return body


def read_line(line: bytes, state: StreamState) -> list[Delta]:
    if not line.strip():
        return []
    chunk = json_object(line, state, "a line")
    if chunk.get("error"):
        raise remote_failure(state, f"reported an error: {str(chunk['error'])[:300]}")
    message = chunk.get("message") or {}
    text, thinking = str(message.get("content") or ""), str(message.get("thinking") or "")
    deltas = [Delta(text, thinking=thinking)] if text or thinking else []
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        index = len(state.calls)
        arguments = json.dumps(function.get("arguments") or {})
        started = state.start_call(index, call.get("id"), str(function.get("name") or ""))
        state.add_arguments(index, arguments)
        deltas.append(Delta("", tool_calls=(started,)))
        deltas.append(Delta("", tool_calls=(ToolCallDelta(index, arguments=arguments),)))
    if chunk.get("done"):
        state.done = True
        state.reason = str(chunk.get("done_reason") or "stop")
        state.usage(chunk.get("prompt_eval_count"), chunk.get("eval_count"))
    return deltas
