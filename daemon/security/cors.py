"""CORS with an explicit allowlist: local origins plus ``LOCALLLM_ORIGINS``; never a wildcard.

A request that carries an ``Origin`` we do not allow is refused outright (403), not merely
left without CORS headers: a browser sends "simple" cross-site POSTs without a preflight, so
withholding headers alone would still let a hostile page start pulls or delete models.

A page may also load us without any ``Origin``: ``<script src>``, ``<img>`` and links send none,
yet a status that differs (an installed model or not) still tells the page something. Browsers
mark every request with ``Sec-Fetch-Site``, so one from another site that CORS did not approve
is refused too; ``none`` (typed or bookmarked), ``same-origin`` and requests without the header
(the CLI, SDKs, curl) go on.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from localllm.daemon.security.host_check import is_loopback_address
from localllm.daemon.security.responses import send_error

__all__ = ["CorsMiddleware", "OriginPolicy"]

_LOCAL_SCHEMES = ("http", "https", "app", "tauri", "vscode-webview")
_ALLOW_METHODS = b"GET, POST, PUT, DELETE, HEAD, OPTIONS"
_ALLOW_HEADERS = (
    b"Authorization, Content-Type, User-Agent, Accept, X-Requested-With, X-Api-Key, "
    b"Anthropic-Version"
)
_OTHER_SITES = frozenset({b"cross-site", b"same-site"})  # Sec-Fetch-Site from another origin


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    """Local origins (any port) plus extra patterns like ``https://*.example.com``."""

    extra_patterns: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, origins: Iterable[str]) -> OriginPolicy:
        patterns = tuple(o.strip().rstrip("/").lower() for o in origins if o.strip())
        if "*" in patterns:
            raise ValueError("LOCALLLM_ORIGINS='*' would let any web page use your models")
        return cls(patterns)

    def allows(self, origin: str) -> bool:
        origin = origin.strip().rstrip("/").lower()
        parts = urlsplit(origin)
        if parts.scheme in _LOCAL_SCHEMES and parts.hostname is not None:
            name = parts.hostname
            if is_loopback_address(name) or name.endswith(".localhost"):
                return True
        return any(fnmatch.fnmatchcase(origin, pattern) for pattern in self.extra_patterns)


class CorsMiddleware:
    def __init__(self, app: ASGIApp, policy: OriginPolicy):
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        origin = headers.get(b"origin")
        if origin is None:
            if headers.get(b"sec-fetch-site", b"").strip().lower() in _OTHER_SITES:
                await send_error(
                    scope,
                    send,
                    403,
                    "cross-site request refused: a web page must use CORS from an "
                    "allowed origin (LOCALLLM_ORIGINS)",
                )
                return
            await self.app(scope, receive, send)
            return
        if not self.policy.allows(origin.decode("latin-1")):
            await send_error(scope, send, 403, "origin not allowed; add it to LOCALLLM_ORIGINS")
            return
        if scope["method"] == "OPTIONS" and b"access-control-request-method" in headers:
            await self._preflight(send, origin)
            return
        await self.app(scope, receive, self._with_cors_headers(send, origin))

    async def _preflight(self, send: Send, origin: bytes) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 204,
                "headers": [
                    *self._headers(origin),
                    (b"access-control-allow-methods", _ALLOW_METHODS),
                    (b"access-control-allow-headers", _ALLOW_HEADERS),
                    (b"access-control-max-age", b"600"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    def _with_cors_headers(self, send: Send, origin: bytes) -> Send:
        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message["headers"], *self._headers(origin)]}
            await send(message)

        return wrapped

    @staticmethod
    def _headers(origin: bytes) -> list[tuple[bytes, bytes]]:
        return [(b"access-control-allow-origin", origin), (b"vary", b"Origin")]
