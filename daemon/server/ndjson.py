"""Newline-delimited JSON streams, Ollama's native streaming format.

Every native stream goes through ``ndjson_stream``: the body is ``EventStream``'s (so the
work behind it is closed however the response ends), and an error raised after the headers
went out travels as a last ``{"error": "..."}`` line, which Ollama's clients raise.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any

from pydantic import BaseModel

from localllm.daemon.server.errors import Redact, ndjson_error
from localllm.daemon.server.sse import EventStream, guarded

__all__ = ["MEDIA_TYPE", "ndjson_line", "ndjson_stream"]

MEDIA_TYPE = "application/x-ndjson"


def ndjson_line(payload: BaseModel | dict[str, Any]) -> bytes:
    """One compact JSON object and a newline."""
    if isinstance(payload, BaseModel):
        return payload.model_dump_json(exclude_none=True).encode() + b"\n"
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def ndjson_stream(
    lines: AsyncIterator[bytes],
    redact: Redact,
    on_close: Callable[[], Awaitable[None]] | None = None,
) -> EventStream:
    """``lines``; an error (its text ``redact``-ed) becomes the last line instead."""
    errors = partial(ndjson_error, redact=redact)
    return EventStream(guarded(lines, errors), on_close=on_close, media_type=MEDIA_TYPE)
