"""Bearer-token authentication, required whenever an API key is configured, on loopback too.

``localllm serve`` refuses to listen beyond loopback without a key, so anything reachable from
the network is authenticated. Only ``/`` ("is it running?") is open; a browser's CORS preflight
carries no key, but the CORS guard (outside this one) answers it before it gets here. Keys
are compared in constant time.
"""

from __future__ import annotations

import hmac

from starlette.types import ASGIApp, Receive, Scope, Send

from daemon.security.responses import send_error

__all__ = ["ApiKeyMiddleware"]

_OPEN_PATHS = frozenset({"/"})  # "is it running?" reveals nothing


class ApiKeyMiddleware:
    def __init__(self, app: ASGIApp, api_key: str | None):
        self.app = app
        self.expected = f"Bearer {api_key}".encode() if api_key else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.expected is not None
            and scope["type"] == "http"
            and scope["path"] not in _OPEN_PATHS
        ):
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send_error(
                    send,
                    401,
                    "missing or wrong API key: send 'Authorization: Bearer <key>' "
                    "(see `localllm key`)",
                    [(b"www-authenticate", b"Bearer")],
                )
                return
        await self.app(scope, receive, send)
