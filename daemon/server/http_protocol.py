"""uvicorn's HTTP/1.1 protocol with a deadline for each request head (slowloris).

uvicorn times out a connection only while it idles between requests (``timeout_keep_alive``,
armed after a response). A client that connects and sends nothing, or sends its request line
and headers a byte at a time, or stops half way, holds its connection forever. Here every
request head must arrive whole within ``header_timeout`` seconds of the connection opening
(or of its first byte, on a kept-alive connection); otherwise the client gets a 408 (or,
having sent nothing, just the close). h11 already caps a head's size at 16 KiB. Bodies have
their own limit on silences (:mod:`localllm.daemon.security.body_timeout`).
"""

from __future__ import annotations

import asyncio
import json

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HeaderTimeoutProtocol", "header_timeout_protocol"]


class HeaderTimeoutProtocol(H11Protocol):
    """Pass ``header_timeout_protocol(seconds)`` as uvicorn's ``http``."""

    header_timeout: float = 30.0
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def _watch_head(self) -> None:
        """Start the deadline when a head is awaited (keeping one that runs); stop it once
        the head is in. Between requests no bytes arrive and uvicorn's keep-alive rules."""
        if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
            self._stop_head_timer()
        elif self._head_timer is None:
            self._head_timer = self.loop.call_later(self.header_timeout, self._head_timed_out)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
            return
        pending, _ = self.conn.trailing_data  # part of a head: say why before closing
        if pending:
            self.transport.write(_timeout_response(self.header_timeout))
        self.transport.close()


def header_timeout_protocol(seconds: float) -> type[HeaderTimeoutProtocol]:
    """The protocol class with its deadline set (uvicorn builds one instance per connection)."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": seconds})


def _timeout_response(seconds: float) -> bytes:
    message = f"the request headers did not arrive within {seconds:g} s"
    body = json.dumps({"error": message}).encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body
