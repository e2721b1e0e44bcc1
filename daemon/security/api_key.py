"""API-key authentication, required whenever a key is configured, on loopback too.

``localllm serve`` refuses to listen beyond loopback without a key, so anything reachable from
the network is authenticated. The key comes as ``Authorization: Bearer <key>`` (OpenAI's and
Ollama's clients) or ``x-api-key: <key>`` (Anthropic's). Only ``/`` ("is it running?") is
open; a browser's CORS preflight carries no key, but the CORS guard (outside this one) answers
it before it gets here. Keys are compared in constant time.
"""

from __future__ import annotations

import hmac

from starlette.types import ASGIApp, Receive, Scope, Send

from localllm.daemon.security.responses import send_error

__all__ = ["ApiKeyMiddleware"]

_OPEN_PATHS = frozenset({"/"})  # "is it running?" reveals nothing


class ApiKeyMiddleware:
    def __init__(self, app: ASGIApp, api_key: str | None):
        self.app = app
        self.key = api_key.encode() if api_key else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.key is not None
            and scope["type"] == "http"
            and scope["path"] not in _OPEN_PATHS
            and not _carries_key(dict(scope["headers"]), self.key)
        ):
            await send_error(
                scope,
                send,
                401,
                "missing or wrong API key: send 'Authorization: Bearer <key>' or "
                "'x-api-key: <key>' (see `localllm key`)",
                [(b"www-authenticate", b"Bearer")],
            )
            return
        await self.app(scope, receive, send)


def _carries_key(headers: dict[bytes, bytes], key: bytes) -> bool:
    bearer = hmac.compare_digest(headers.get(b"authorization", b""), b"Bearer " + key)
    header = hmac.compare_digest(headers.get(b"x-api-key", b""), key)
    return bearer or header
