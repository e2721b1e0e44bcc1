"""Refuse a JSON body with more values than any request needs, before anything parses it.

``json.loads`` holds the GIL from a body's first byte to its last, and a legal 20 MB body of
1.5 million small values (a ``logit_bias`` naming every token id) kept the daemon from answering
anything else for 5 to 14 seconds. Counting the separators outside strings is a few numpy
passes that release the GIL, run off the event loop, so such a body is a quick 400 while the
daemon goes on answering. Big bodies of few values (a long prompt, images) are not slowed.
"""

from __future__ import annotations

import numpy as np
from anyio import to_thread
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from daemon.errors import BadRequestError
from daemon.server.errors import error_body

__all__ = ["MAX_JSON_VALUES", "JsonBudgetMiddleware", "json_separators"]

MAX_JSON_VALUES = 100_000  # a long chat with big tool lists holds a few thousand
_QUOTE, _BACKSLASH, _COMMA, _COLON = (ord(c) for c in '"\\,:')


def json_separators(body: bytes) -> int:
    """Commas and colons outside strings: one per value after the first and one per key."""
    data = np.frombuffer(body, dtype=np.uint8)
    quotes = _unescaped_quotes(data)
    separators = np.flatnonzero((data == _COMMA) | (data == _COLON))
    before = np.searchsorted(quotes, separators)  # an odd count of quotes before: in a string
    return int(np.count_nonzero(before % 2 == 0))


def _unescaped_quotes(data: np.ndarray) -> np.ndarray:
    """Positions of the quotes that open or close strings (not preceded by an odd run of \\)."""
    quotes = np.flatnonzero(data == _QUOTE)
    slashes = np.flatnonzero(data == _BACKSLASH)
    if not len(slashes) or not len(quotes):
        return quotes
    breaks = np.flatnonzero(np.diff(slashes) != 1)
    ends = np.append(slashes[breaks], slashes[-1])  # last backslash of each run
    starts = np.insert(slashes[breaks + 1], 0, slashes[0])
    run = np.searchsorted(ends, quotes - 1).clip(max=len(ends) - 1)
    touching = ends[run] == quotes - 1
    escaped = touching & ((ends[run] - starts[run]) % 2 == 0)  # odd length: end - start even
    return quotes[~escaped]


class JsonBudgetMiddleware:
    """Reads each JSON body whole (the body limit outside it bounds the size), counts its
    values when a quick count says there may be too many, then hands it on unchanged."""

    def __init__(self, app: ASGIApp, max_values: int = MAX_JSON_VALUES):
        self.app = app
        self.max_values = max_values

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_json(scope):
            await self.app(scope, receive, send)
            return
        body, last = await _read_body(receive)
        if await self._too_many_values(body):
            await self._refuse(scope, receive, send)
            return
        await self.app(scope, _replay(body, last, receive), send)

    async def _too_many_values(self, body: bytes) -> bool:
        if body.count(b",") + body.count(b":") <= self.max_values:
            return False  # the usual case: not even counting strings' commas is too many
        return await to_thread.run_sync(json_separators, body) > self.max_values

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        error = BadRequestError(
            f"the request body holds more than {self.max_values:,} JSON values; no request "
            "needs that many (logit_bias, for one, takes at most 300 entries)"
        )
        openai = scope["path"].startswith("/v1/")
        body = error_body(error, openai, scope["app"].state.redactor)
        response = JSONResponse(body, 400)
        await response(scope, receive, send)


def _is_json(scope: Scope) -> bool:
    if scope["method"] in ("GET", "HEAD", "OPTIONS") or scope["path"].startswith("/api/blobs/"):
        return False  # blob uploads stream to disk, any size
    content_type = dict(scope["headers"]).get(b"content-type", b"application/json").lower()
    return b"json" in content_type


async def _read_body(receive: Receive) -> tuple[bytes, Message | None]:
    """The whole body, and the message that ended it early (a disconnect), if one did."""
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts), message
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts), None


def _replay(body: bytes, last: Message | None, receive: Receive) -> Receive:
    """The body again as one message, then whatever comes next (a disconnect, later)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]
    if last is not None:
        pending.append(last)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed
