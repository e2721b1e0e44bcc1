"""Refuse a JSON body with more values, or deeper nesting, than any request needs, before
anything parses it.

``json.loads`` holds the GIL from a body's first byte to its last, and a legal 20 MB body of
1.5 million small values (a ``logit_bias`` naming every token id) kept the daemon from answering
anything else for 5 to 14 seconds. Counting the separators outside strings is a few numpy
passes that release the GIL, run off the event loop, so such a body is a quick 400 while the
daemon goes on answering. Big bodies of few values (a long prompt, images) are not slowed.
Nesting is counted the same way: a thousand ``[`` make ``json.loads`` give up (FastAPI then
said only "There was an error parsing the body"), so more than ``MAX_JSON_DEPTH`` levels is a
400 that says what is wrong. A string
holding a lone surrogate (``"\\ud800"``: no Unicode text, it failed requests late, after a
whole generation) is a 400 that names its field (``surrogates``).

Every body is read as JSON whatever its ``Content-Type`` says, as Ollama and llama-server read
theirs: the curl lines in Ollama's and OpenAI's docs send ``-d '{...}'``, which curl labels
``application/x-www-form-urlencoded``, and LiteLLM's Ollama providers send no type at all.
FastAPI parses only a body labelled JSON, so such a request is relabelled here, and budgeted
like any other. The label is not what keeps web pages out (the CORS check refuses other
origins and other sites, whatever they send). Only blob uploads (raw bytes, any size) and
``multipart/form-data`` keep their own reading. A request with two ``Content-Type`` headers
(``application/json``, which FastAPI parses by, and ``text/plain``, which a last-wins reading
would skip) is refused.
"""

from __future__ import annotations

import numpy as np
from anyio import to_thread
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from localllm.daemon.api.error_bodies import shape_for
from localllm.daemon.errors import BadRequestError
from localllm.daemon.server.errors import error_body
from localllm.daemon.server.surrogates import lone_surrogate_at, may_hold_surrogates

__all__ = ["MAX_JSON_DEPTH", "MAX_JSON_VALUES", "JsonBudgetMiddleware", "json_depth"]
__all__ += ["json_separators"]

MAX_JSON_VALUES = 100_000  # a long chat with big tool lists holds a few thousand
MAX_JSON_DEPTH = 128  # a tool's parameter schema nests a dozen levels; json.loads fails at ~1000
_QUOTE, _BACKSLASH, _COMMA, _COLON = (ord(c) for c in '"\\,:')
_OPENING, _CLOSING = (np.array([ord(c) for c in pair], dtype=np.uint8) for pair in ("[{", "]}"))


def json_separators(body: bytes) -> int:
    """Commas and colons outside strings: one per value after the first and one per key."""
    data = np.frombuffer(body, dtype=np.uint8)
    quotes = _unescaped_quotes(data)
    separators = np.flatnonzero((data == _COMMA) | (data == _COLON))
    before = np.searchsorted(quotes, separators)  # an odd count of quotes before: in a string
    return int(np.count_nonzero(before % 2 == 0))


def json_depth(body: bytes) -> int:
    """How deep arrays and objects nest, counting only brackets outside strings."""
    data = np.frombuffer(body, dtype=np.uint8)
    opening, closing = np.isin(data, _OPENING), np.isin(data, _CLOSING)
    brackets = np.flatnonzero(opening | closing)
    outside = np.searchsorted(_unescaped_quotes(data), brackets) % 2 == 0
    steps = np.where(opening[brackets[outside]], 1, -1)
    return int(np.cumsum(steps).max(initial=0))


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
    return np.compress(~escaped, quotes)


class JsonBudgetMiddleware:
    """Reads each JSON body whole (the body limit outside it bounds the size), counts its
    values and its nesting when a quick count says there may be too many, then hands it on
    unchanged."""

    def __init__(
        self, app: ASGIApp, max_values: int = MAX_JSON_VALUES, max_depth: int = MAX_JSON_DEPTH
    ):
        self.app = app
        self.max_values = max_values
        self.max_depth = max_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        types = [value for name, value in scope["headers"] if name.lower() == b"content-type"]
        if len(types) > 1:
            await _refuse(scope, receive, send, _TWO_TYPES.format(count=len(types)))
            return
        if not _is_json(scope, types[0] if types else b""):
            await self.app(scope, receive, send)
            return
        _label_json(scope)
        body, last = await _read_body(receive)
        problem = await self._problem(body)
        if problem is not None:
            await _refuse(scope, receive, send, problem)
            return
        await self.app(scope, _replay(body, last, receive), send)

    async def _problem(self, body: bytes) -> BadRequestError | None:
        """What makes ``body`` unfit to parse; None for a body within bounds."""
        # the quick counts first: a body under them cannot be over (the usual case)
        if (
            body.count(b",") + body.count(b":") > self.max_values
            and await to_thread.run_sync(json_separators, body) > self.max_values
        ):
            return BadRequestError(
                f"the request body holds more than {self.max_values:,} JSON values; no "
                "request needs that many (logit_bias, for one, takes at most 300 entries)"
            )
        if (
            body.count(b"[") + body.count(b"{") > self.max_depth
            and await to_thread.run_sync(json_depth, body) > self.max_depth
        ):
            return BadRequestError(
                f"the request body nests arrays and objects more than {self.max_depth} "
                "levels deep; no request needs that many"
            )
        return await _lone_surrogate(body)


async def _lone_surrogate(body: bytes) -> BadRequestError | None:
    """The 400 for a string holding a lone surrogate, naming it; only a body that holds a
    surrogate's escape or bytes at all is parsed to find it, in a worker thread."""
    if len(body) < _INLINE:
        suspect = may_hold_surrogates(body)
    else:
        suspect = await to_thread.run_sync(may_hold_surrogates, body)
    where = await to_thread.run_sync(lone_surrogate_at, body) if suspect else None
    if where is None:
        return None
    return BadRequestError(
        f"{where or 'the body'} holds a lone surrogate (a \\ud800-\\udfff escape without "
        "its pair), which is not Unicode text; send valid UTF-8",
        param=where or None,
    )


_INLINE = 1 << 20  # a smaller body is looked at on the event loop (well under a millisecond)
_TWO_TYPES = (
    "the request has {count} Content-Type headers; send one (application/json for a JSON body)"
)


async def _refuse(
    scope: Scope, receive: Receive, send: Send, problem: str | BadRequestError
) -> None:
    error = BadRequestError(problem) if isinstance(problem, str) else problem
    body = error_body(error, shape_for(scope["path"]), scope["app"].state.redactor)
    response = JSONResponse(body, 400)
    await response(scope, receive, send)


def _is_json(scope: Scope, content_type: bytes) -> bool:
    """Whether the body is read as JSON: any body but a blob upload's (streamed to disk, any
    size) or a multipart form's."""
    if scope["method"] in ("GET", "HEAD", "OPTIONS") or scope["path"].startswith("/api/blobs/"):
        return False
    return not content_type.lower().lstrip().startswith(b"multipart/")


def _label_json(scope: Scope) -> None:
    """Label the body ``application/json``, the one label FastAPI surely parses (it skips
    ``text/json``, a form's label, or none), in place of what it said. The scope is changed,
    not copied: the middlewares outside read what the router writes into it (the route)."""
    headers = [(name, value) for name, value in scope["headers"] if name.lower() != b"content-type"]
    scope["headers"] = [*headers, (b"content-type", b"application/json")]


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
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
    if last is not None:
        pending.append(last)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed
