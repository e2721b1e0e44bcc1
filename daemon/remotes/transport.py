"""Reading a remote's answer with limits, so a hostile or broken engine (a gigantic line or
body, an endless stream that sends nothing, the wrong content type) ends in a clear error
instead of memory growth or a hang."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import httpx

from daemon.errors import RemoteError

__all__ = ["MAX_BODY", "MAX_LINE", "check_content_type", "json_body", "lines"]

MAX_LINE = 4 << 20  # one event or NDJSON line (a base64 image in a chunk is still fine)
MAX_BODY = 16 << 20  # a whole JSON answer (a model list, embeddings)


def check_content_type(response: httpx.Response, remote: str, allowed: tuple[str, ...]) -> None:
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in allowed:
        shown = kind[:60] or "none"
        raise RemoteError(
            f"remote {remote!r} answered with content type {shown!r}, expected "
            + " or ".join(repr(a) for a in allowed)
        )


async def lines(response: httpx.Response, remote: str, deadline: float) -> AsyncIterator[bytes]:
    """The answer's lines, each at most ``MAX_LINE`` bytes, all before ``deadline``
    (``time.monotonic()``): past it the stream is cut with an error, even mid-silence."""
    chunks = response.aiter_raw()
    held = b""
    while True:
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                chunk = await anext(chunks, None)
        except TimeoutError:
            raise RemoteError(f"remote {remote!r} did not finish within its timeout") from None
        if chunk is None:
            break
        held += chunk
        *complete, held = held.split(b"\n")
        for line in complete:
            yield line
        if len(held) > MAX_LINE:
            raise RemoteError(f"remote {remote!r} sent a line longer than {MAX_LINE >> 20} MiB")
    if held.strip():
        yield held


async def json_body(response: httpx.Response, remote: str) -> object:
    """The answer as JSON, refused past ``MAX_BODY`` bytes or when it is not JSON."""
    check_content_type(response, remote, ("application/json",))
    body = bytearray()
    async for chunk in response.aiter_raw():
        body += chunk
        if len(body) > MAX_BODY:
            raise RemoteError(f"remote {remote!r} sent more than {MAX_BODY >> 20} MiB")
    try:
        return json.loads(body)
    except ValueError:
        raise RemoteError(f"remote {remote!r} answered with malformed JSON") from None
