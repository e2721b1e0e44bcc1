"""The wire between the daemon and a runner process: framed JSON over the runner's pipes.

A frame is a 4-byte big-endian length, then that many bytes of UTF-8 JSON. Pipes, not a TCP
port: no port races, and no other local user can reach a runner. Many requests share the pipe,
each message naming its request ``id``.

Daemon -> runner (``op``)::

    {"op": "spec", "spec": {...}}                         first frame: what to load
    {"op": "generate", "id": n, "req": {...}}             stream of "token", then "done"
                                (images in "req" as base64, with the prompt's marker for them)
    {"op": "cancel", "id": n}                             stop a generation, free its slot
    {"op": "embed", "id": n, "inputs": [...], "normalize": b, "truncate": b}
                                                          one "embedding" per input, then "result"
    {"op": "rerank", "id": n, "query": s, "documents": [...], "truncate": b}
                          -> "result" {count, prompt_tokens, scores: [...], truncated: [index...]}
    {"op": "tokenize", "id": n, "text": s, "add_bos": b, "special": b}     -> "result"
    {"op": "status", "id": n}                             -> "result" (slots, queue, memory)
    {"op": "shutdown"}                                    exit (closing stdin does the same)

Runner -> daemon (``ev``)::

    {"ev": "loading"} / {"ev": "ready", "info": {...}} / {"ev": "fatal", "message": s}
    {"ev": "token", "id": n, "text": s, "ids": [...], "logprobs": [...]}
    {"ev": "done", "id": n, ...DoneEvent fields}
    {"ev": "embedding", "id": n, "index": i, "f32": base64 of little-endian float32}
    {"ev": "result", "id": n, "value": ...}
    {"ev": "error", "id": n, "kind": "context_overflow" | "invalid_request" | "error",
     "message": s, ...}
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import struct
from typing import Any, BinaryIO

from .types import (
    ContextOverflowError,
    DoneEvent,
    GenerateCall,
    InvalidRequestError,
    LlamaBuffer,
    LoraAdapter,
    RunnerError,
    RunnerInfo,
    RunnerSpec,
    SamplingParams,
)

__all__ = [
    "MAX_FRAME_BYTES",
    "FrameReader",
    "FrameWriter",
    "ProtocolError",
    "done_from_wire",
    "encode_frame",
    "error_from_wire",
    "error_to_wire",
    "generate_from_wire",
    "generate_to_wire",
    "info_from_wire",
    "read_frame",
    "spec_from_wire",
    "spec_to_wire",
]

MAX_FRAME_BYTES = 64 * 1024 * 1024  # a bound, so a corrupt length cannot make us allocate GBs
_HEADER = struct.Struct(">I")
_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)  # json.dumps builds one a call


class ProtocolError(Exception):
    """The other side sent something that is not a frame of this protocol."""


def encode_frame(message: dict[str, Any]) -> bytes:
    """UTF-8 as it is: ASCII escapes made a 24 MB prompt in "é" a 72 MB frame. A lone
    surrogate (JSON lets a client send ``"\\ud800"``) cannot be UTF-8 and becomes U+FFFD."""
    body = _utf8(_JSON.encode(message))
    if len(body) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds {MAX_FRAME_BYTES}")
    return _HEADER.pack(len(body)) + body


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:  # lone surrogates: each becomes U+FFFD
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode()


def _frame_size(header: bytes) -> int:
    (size,) = _HEADER.unpack(header)
    if size > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {size} bytes exceeds {MAX_FRAME_BYTES}")
    return size


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message, or None at a clean end of stream (the process closed its stdout)."""
    try:
        header = await reader.readexactly(_HEADER.size)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise ProtocolError("stream ended inside a frame header") from None
        return None
    size = _frame_size(header)
    try:
        body = await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        raise ProtocolError("stream ended inside a frame") from None
    return json.loads(body)


class FrameReader:
    """Blocking reader for the runner side (its stdin)."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream

    def read(self) -> dict[str, Any] | None:
        header = self._stream.read(_HEADER.size)
        if not header:
            return None
        if len(header) < _HEADER.size:
            raise ProtocolError("stream ended inside a frame header")
        size = _frame_size(header)
        body = self._stream.read(size)
        if len(body) < size:
            raise ProtocolError("stream ended inside a frame")
        return json.loads(body)


class FrameWriter:
    """Collects frames and writes them with one system call per flush (one per decode step)."""

    def __init__(self, fd: int):
        self._fd = fd
        self._pending: list[bytes] = []

    def send(self, message: dict[str, Any]) -> None:
        self._pending.append(encode_frame(message))

    def flush(self) -> None:
        if not self._pending:
            return
        data = memoryview(b"".join(self._pending))
        self._pending.clear()
        while data:
            data = data[os.write(self._fd, data) :]


def spec_to_wire(spec: RunnerSpec) -> dict[str, Any]:
    return dataclasses.asdict(spec)


def spec_from_wire(data: dict[str, Any]) -> RunnerSpec:
    adapters = tuple(LoraAdapter(**adapter) for adapter in data.get("adapters", ()))
    paths = {
        "model_paths": tuple(data["model_paths"]),
        "draft_paths": tuple(data.get("draft_paths", ())),
    }
    return RunnerSpec(**{**data, **paths, "adapters": adapters})


def generate_to_wire(req: GenerateCall) -> dict[str, Any]:
    params = dataclasses.asdict(req.params)
    params["logit_bias"] = [[int(k), float(v)] for k, v in req.params.logit_bias.items()]
    message = {"prompt": req.prompt, "add_bos": req.add_bos, "params": params}
    if req.images:
        message["images"] = [base64.b64encode(image).decode() for image in req.images]
        message["image_marker"] = req.image_marker
    if req.visible_tokens:
        message["visible_tokens"] = list(req.visible_tokens)
    if req.system_chars:
        message["system_chars"] = req.system_chars
    if req.suffix is not None:
        message["suffix"] = req.suffix
    return message


def generate_from_wire(data: dict[str, Any]) -> GenerateCall:
    raw = data["params"]
    params = SamplingParams(
        **{
            **raw,
            "logit_bias": {int(k): float(v) for k, v in raw["logit_bias"]},
            "stop": tuple(raw["stop"]),
        }
    )
    return GenerateCall(
        prompt=data["prompt"],
        params=params,
        add_bos=data["add_bos"],
        images=tuple(base64.b64decode(image) for image in data.get("images", ())),
        image_marker=data.get("image_marker", ""),
        visible_tokens=tuple(data.get("visible_tokens", ())),
        system_chars=int(data.get("system_chars", 0)),
        suffix=data.get("suffix"),
    )


def done_from_wire(data: dict[str, Any]) -> DoneEvent:
    names = (f.name for f in dataclasses.fields(DoneEvent))
    return DoneEvent(**{name: data[name] for name in names if name in data})


def info_from_wire(data: dict[str, Any]) -> RunnerInfo:
    buffers = tuple(LlamaBuffer(**buffer) for buffer in data.get("buffers", ()))
    return RunnerInfo(**{**data, "buffers": buffers})


def error_to_wire(rid: int, exc: RunnerError) -> dict[str, Any]:
    message = {"ev": "error", "id": rid, "kind": "error", "message": str(exc)}
    if isinstance(exc, ContextOverflowError):
        message.update(kind="context_overflow", prompt_tokens=exc.prompt_tokens)
        message.update(context=exc.context, at_least=exc.at_least)
    elif isinstance(exc, InvalidRequestError):
        message["kind"] = "invalid_request"
    return message


def error_from_wire(data: dict[str, Any]) -> RunnerError:
    if data.get("kind") == "context_overflow":
        return ContextOverflowError(
            data["prompt_tokens"], data["context"], data.get("at_least", False)
        )
    if data.get("kind") == "invalid_request":
        return InvalidRequestError(data["message"])
    return RunnerError(data["message"])
