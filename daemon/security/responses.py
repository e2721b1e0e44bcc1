"""The one way a guard refuses a request: a small JSON error, before any route runs, in the
shape the path's API answers errors in (``daemon.api.error_bodies``)."""

from __future__ import annotations

import json

from starlette.types import Scope, Send

from localllm.daemon.api.error_bodies import guard_error_body

__all__ = ["send_error"]


async def send_error(
    scope: Scope,
    send: Send,
    status: int,
    message: str,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    body = json.dumps(guard_error_body(scope["path"], status, message)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
