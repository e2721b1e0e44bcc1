"""The one way a guard refuses a request: a small JSON error, before any route runs."""

from __future__ import annotations

import json

from starlette.types import Send

__all__ = ["send_error"]


async def send_error(send: Send, status: int, message: str, headers: list | None = None) -> None:
    body = json.dumps({"error": message}).encode()
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
