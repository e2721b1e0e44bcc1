"""The client's calls about remotes (``/api/remotes``): engines elsewhere whose models the
daemon serves next to its own as ``NAME/<model id>``.

A mixin of ``Client``'s, kept apart so the client module stays about the local daemon; it
uses the client's own plumbing (``_answer``, ``_request``), so errors come back typed the same
way: ``BadRequest`` for a bad name or URL (400), ``Conflict`` for a name taken (409),
``RemoteNotFound`` for an unknown remote (404).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from localllm.daemon.api.remotes import RemoteAddRequest, RemoteInfo, RemoteList
from localllm.daemon.client.answers import Answer
from localllm.daemon.client.errors import ModelNotFound, RemoteNotFound

__all__ = ["RemoteCalls"]


class RemoteCalls:
    """``remotes``, ``add_remote`` and ``remove_remote``, for a class with ``_answer`` and
    ``_request`` (``Client``)."""

    if TYPE_CHECKING:  # ``Client`` defines them

        def _answer(self, model: type[Answer], method: str, path: str, **kwargs: Any) -> Answer: ...

        def _request(
            self, method: str, path: str, allowed: tuple[int, ...] = (), **kwargs: Any
        ) -> httpx.Response: ...

        def _admin_headers(self) -> dict[str, str]: ...

    def remotes(self) -> RemoteList:
        """Every remote with its replicas' health, latency, in-flight requests and the models
        it last listed (the daemon's cached view; never waits on a slow remote)."""
        return self._answer(RemoteList, "GET", "/api/remotes")

    def add_remote(self, request: RemoteAddRequest) -> RemoteInfo:
        body = request.model_dump(mode="json", exclude_none=True)
        headers = self._admin_headers()  # a change of where data goes: the admin token
        return self._answer(RemoteInfo, "POST", "/api/remotes", json=body, headers=headers)

    def remove_remote(self, name: str) -> None:
        path = f"/api/remotes/{quote(name, safe='')}"
        try:
            self._request("DELETE", path, headers=self._admin_headers())
        except ModelNotFound as error:
            raise RemoteNotFound(error.message, error.status, error.code) from None
