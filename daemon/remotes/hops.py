"""Loops of remotes: daemon A has B as a remote and B has A (or an alias on each names the
other), so one request would go round for ever. Each request a daemon sends to a remote
carries ``x-localllm-hops``, one more than the request it serves; past ``MAX_HOPS`` it is
refused with 508 "Loop Detected" instead of being sent again."""

from __future__ import annotations

from contextvars import ContextVar

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["HEADER", "MAX_HOPS", "HopsMiddleware", "hops_so_far"]

HEADER = "x-localllm-hops"
MAX_HOPS = 8  # a deployment chains two or three daemons at most

_HOPS: ContextVar[int] = ContextVar("localllm_remote_hops", default=0)


def hops_so_far() -> int:
    """How many daemons the request being served has already passed through."""
    return _HOPS.get()


class HopsMiddleware:
    """Reads the header into the request's context (where ``calls`` finds it)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw = dict(scope["headers"]).get(HEADER.encode(), b"0")
            _HOPS.set(int(raw) if raw.isdigit() and len(raw) < 4 else MAX_HOPS)
        await self.app(scope, receive, send)
