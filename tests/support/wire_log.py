"""Seeing what a front end really sends: the real HTTP transport, with a log of chat and plan
request bodies."""

from __future__ import annotations

import json

import httpx

__all__ = ["WireLog"]


class WireLog(httpx.HTTPTransport):
    """The real transport, keeping the body of every chat and memory plan request it sends to
    the daemon."""

    def __init__(self) -> None:
        super().__init__()
        self.chats: list[dict] = []
        self.plans: list[dict] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/chat":
            self.chats.append(json.loads(request.read()))
        elif request.url.path == "/api/plan":
            self.plans.append(json.loads(request.read()))
        return super().handle_request(request)

    def plan_options(self, model: str) -> list[dict]:
        """The options of each plan asked of ``model``, in order."""
        return [body.get("options", {}) for body in self.plans if body.get("model") == model]
