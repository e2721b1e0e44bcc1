"""Server-sent events, and the guarantee that a stream's generation is closed however it ends.

Every streamed body goes through ``guarded``: an error raised after the headers went out
travels as the stream's last frame, in the API's own error shape (``sse_stream`` for server-sent
events, ``daemon.server.ndjson.ndjson_stream`` for Ollama's NDJSON).

Starlette cancels a streaming body when the client hangs up; a cancelled task cannot await
cleanup unless shielded, and an async generator left suspended is only finalized by the
garbage collector. ``EventStream`` therefore closes its source itself, shielded, when the
response ends for any reason, so the runner's slot is freed right away.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel
from starlette.requests import ClientDisconnect, Request
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from localllm.daemon.server.errors import Redact, stream_error

__all__ = [
    "DONE",
    "EventStream",
    "guarded",
    "sse_data",
    "sse_event",
    "sse_stream",
    "until_disconnect",
]

DONE = b"data: [DONE]\n\n"
T = TypeVar("T")


def sse_data(payload: BaseModel | dict[str, Any]) -> bytes:
    """One ``data:`` event holding ``payload`` as compact JSON."""
    if isinstance(payload, BaseModel):
        text = payload.model_dump_json(exclude_none=True)
    else:
        text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return b"data: " + text.encode() + b"\n\n"


def sse_event(name: str, payload: BaseModel, *, nulls: bool = False) -> bytes:
    """A named event (``event:`` line, then ``data:``), as OpenAI's Responses streams and
    Anthropic's send; ``nulls`` keeps the fields that are None (Anthropic's events have them)."""
    text = payload.model_dump_json(exclude_none=not nulls, by_alias=True)
    return f"event: {name}\ndata: ".encode() + text.encode() + b"\n\n"


class EventStream(StreamingResponse):
    """A streaming response (server-sent events by default) that runs ``on_close`` when it
    ends, however it ends."""

    def __init__(
        self,
        events: AsyncIterator[bytes],
        on_close: Callable[[], Awaitable[None]] | None = None,
        headers: dict[str, str] | None = None,
        media_type: str = "text/event-stream",  # Ollama's native streams: application/x-ndjson
    ):
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **(headers or {})}
        super().__init__(events, media_type=media_type, headers=headers)
        self._events = events
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                aclose = getattr(self._events, "aclose", None)
                if aclose is not None:
                    await aclose()
                if self._on_close is not None:
                    await self._on_close()


def sse_stream(
    events: AsyncIterator[bytes],
    redact: Redact,
    on_close: Callable[[], Awaitable[None]] | None = None,
    *,
    error: Callable[[BaseException, Redact], bytes] = stream_error,
    end: bytes = DONE,
) -> EventStream:
    """Server-sent ``events``, then ``end``; an error (its text ``redact``-ed, framed by
    ``error``) becomes the last event instead."""

    def framed(failure: BaseException) -> bytes:
        return error(failure, redact)

    return EventStream(guarded(events, framed, end), on_close=on_close)


async def guarded(
    frames: AsyncIterator[bytes], error: Callable[[BaseException], bytes], end: bytes = b""
) -> AsyncIterator[bytes]:
    """``frames`` then ``end``; an exception after the headers went out becomes the last frame."""
    try:
        async for frame in frames:
            yield frame
    except Exception as failure:
        yield error(failure)
        return
    finally:
        aclose = getattr(frames, "aclose", None)
        if aclose is not None:
            await aclose()
    if end:
        yield end


async def until_disconnect(request: Request, work: Awaitable[T]) -> T:
    """Run ``work`` but cancel it if the client hangs up first (non-streaming answers)."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        await _cancel(task)
        raise
    finally:
        watcher.cancel()
    if not task.done():
        await _cancel(task)
        raise ClientDisconnect()
    return task.result()


async def _cancel(task: asyncio.Future[T]) -> None:
    task.cancel()
    with anyio.CancelScope(shield=True):
        await asyncio.gather(task, return_exceptions=True)


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass
