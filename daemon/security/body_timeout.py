"""Stop waiting for a request body that stopped arriving (slowloris on the body).

A client that sends its headers and part of a body, then nothing, would otherwise hold its
connection and the route waiting on it forever. The limit is on each silence, not on the
whole upload: a large blob upload that keeps sending is never cut, however long it takes.
Past the limit the client gets a 408 and the connection closes; the route sees a disconnect.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from localllm.daemon.security.responses import send_error

__all__ = ["BodyTimeoutMiddleware"]

DEFAULT_TIMEOUT = 60.0


class BodyTimeoutMiddleware:
    def __init__(self, app: ASGIApp, timeout: float = DEFAULT_TIMEOUT):
        self.app = app
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body_done = started = timed_out = False

        async def timed_receive() -> Message:
            nonlocal body_done, timed_out
            if timed_out:
                return {"type": "http.disconnect"}
            if body_done:  # after the body, waiting (for a disconnect) has no limit
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.timeout)
            except TimeoutError:
                timed_out = True
                if not started:
                    what = f"the request body stopped arriving (nothing for {self.timeout:g} s)"
                    await send_error(scope, send, 408, what, [(b"connection", b"close")])
                return {"type": "http.disconnect"}
            body_done = message["type"] != "http.request" or not message.get("more_body")
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if timed_out and not started:
                return  # the 408 went out instead
            started = True
            await send(message)

        await self.app(scope, timed_receive, guarded_send)
