"""Reading a remote's answer with limits, so a hostile or broken engine (a gigantic line or
body, an endless stream that sends nothing, the wrong content type) ends in a clear error
instead of memory growth or a hang."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx

from localllm.daemon.errors import RemoteError
from localllm.daemon.inference.json_scan import loads

__all__ = ["MAX_BODY", "MAX_LINE", "MAX_STREAM", "check_content_type", "json_body", "lines"]

MAX_LINE = 4 << 20  # one event or NDJSON line (a base64 image in a chunk is still fine)
MAX_BODY = 16 << 20  # a whole JSON answer (a model list, embeddings)
MAX_STREAM = 256 << 20  # one generation's stream: 100,000 tokens of events are about 30 MiB
_INLINE_JSON = 64 << 10  # smaller JSON is parsed on the event loop (well under a millisecond)


def check_content_type(response: httpx.Response, remote: str, allowed: tuple[str, ...]) -> None:
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in allowed:
        shown = kind[:60] or "none"
        raise RemoteError(
            f"remote {remote!r} answered with content type {shown!r}, expected "
            + " or ".join(repr(a) for a in allowed)
        )


async def lines(
    response: httpx.Response, remote: str, deadline: float, limit: int = MAX_STREAM
) -> AsyncIterator[bytes]:
    """The answer's lines, each at most ``MAX_LINE`` bytes, ``limit`` in all, all before
    ``deadline`` (``time.monotonic()``): past it the stream is cut with an error, even
    mid-silence. Each chunk is looked at once, so a long line in small chunks costs no more
    than a short one per byte."""
    chunks = response.aiter_raw()
    held: list[bytes] = []  # the start of a line whose end has not come yet
    held_size = total = 0
    while True:
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                chunk = await anext(chunks, None)
        except TimeoutError:
            raise RemoteError(f"remote {remote!r} did not finish within its timeout") from None
        if chunk is None:
            break
        total += len(chunk)
        if total > limit:
            raise RemoteError(f"remote {remote!r} sent more than {limit:,} bytes in one answer")
        *complete, rest = chunk.split(b"\n")
        if complete:
            complete[0] = b"".join([*held, complete[0]])
            held, held_size = [], 0
        for line in complete:
            _check_line(len(line), remote)
            yield line
        held.append(rest)
        held_size += len(rest)
        _check_line(held_size, remote)
    last = b"".join(held)
    if last.strip():
        yield last


def _check_line(size: int, remote: str) -> None:
    if size > MAX_LINE:
        raise RemoteError(f"remote {remote!r} sent a line longer than {MAX_LINE >> 20} MiB")


async def json_body(response: httpx.Response, remote: str, limit: int = MAX_BODY) -> object:
    """The answer as JSON, refused past ``limit`` bytes or when it is not JSON; parsed in a
    worker thread (15 MiB held the event loop 3 s)."""
    check_content_type(response, remote, ("application/json",))
    body = bytearray()
    async for chunk in response.aiter_raw():
        body += chunk
        if len(body) > limit:
            raise RemoteError(f"remote {remote!r} sent more than {limit >> 20} MiB")
    return await _parse_json(bytes(body), remote, "an answer")


async def _parse_json(text: bytes, remote: str, what: str) -> object:
    """``text`` as JSON, off the event loop when it is big enough to matter."""
    try:
        if len(text) < _INLINE_JSON:
            return loads(text)
        return await asyncio.to_thread(loads, text)
    except ValueError:
        raise RemoteError(f"remote {remote!r} sent {what} that is not JSON") from None
