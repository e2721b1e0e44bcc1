"""Seeing what a front end really sends: the real HTTP transport, with a log of chat bodies."""

from __future__ import annotations

import json

import httpx

__all__ = ["WireLog"]


class WireLog(httpx.HTTPTransport):
    """The real transport, keeping the body of every chat request it sends to the daemon."""

    def __init__(self) -> None:
        super().__init__()
        self.chats: list[dict] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/chat":
            self.chats.append(json.loads(request.read()))
        return super().handle_request(request)
