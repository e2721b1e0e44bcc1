"""The client's connection to one daemon: its address, the httpx client and the headers every
request carries, and the requests themselves.

``Client`` holds one and says which path to call with what; this module says how a request
goes out and how its answer comes back: parsed into a ``daemon.api`` model (``answers``),
error responses raised as typed exceptions (``errors``), and a failure before any answer
raised as ``DaemonUnavailable`` (``DaemonTimeout`` when the daemon took the request but did
not answer within the timeout).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import httpx

from localllm.daemon.client.answers import (
    Answer,
    json_body,
    json_or_text,
    ndjson_objects,
    parsed,
    sse_objects,
)
from localllm.daemon.client.errors import DaemonTimeout, DaemonUnavailable, raise_for_body
from localllm.daemon.security.keys import ADMIN_HEADER

__all__ = ["Connection"]


class Connection:
    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None,
        timeout: float | None,
        transport: httpx.BaseTransport | None,
        user_agent: str | None,
        admin_token: Callable[[], str | None] | None,
    ):
        """``admin_token`` reads the daemon's admin token when a call needs it (adding or
        removing a remote): only the front ends of the daemon's own user have one."""
        self._admin_token = admin_token
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        if user_agent:  # the daemon's request log names it (the app hides its own requests)
            headers["User-Agent"] = user_agent
        self._http = httpx.Client(
            base_url=base_url, headers=headers, timeout=timeout, transport=transport
        )

    @property
    def base_url(self) -> httpx.URL:
        return self._http.base_url

    def close(self) -> None:
        self._http.close()

    def admin_headers(self) -> dict[str, str]:
        """The admin token's header, for a call that changes where data goes; none without
        a token (the daemon then refuses the call)."""
        token = self._admin_token() if self._admin_token is not None else None
        return {ADMIN_HEADER: token} if token else {}

    def answer(self, model: type[Answer], method: str, path: str, **kwargs: Any) -> Answer:
        """A whole JSON answer as ``model``; ``kwargs`` go to httpx (json, params, headers)."""
        return parsed(model, json_body(self.request(method, path, **kwargs), path), path)

    def request(
        self, method: str, path: str, allowed: tuple[int, ...] = (), **kwargs: Any
    ) -> httpx.Response:
        """The response, unless its status is an error not in ``allowed``: then that error."""
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as error:
            raise self._unavailable(error) from None
        if response.status_code >= 400 and response.status_code not in allowed:
            raise_for_body(response.status_code, json_or_text(response))
        return response

    def ndjson(self, model: type[Answer], path: str, body: Mapping[str, Any]) -> Iterator[Answer]:
        """A native stream (one JSON object a line), POSTed on the first ``next()``."""
        return self._stream(model, path, body, sse=False)

    def sse(self, model: type[Answer], path: str, body: Mapping[str, Any]) -> Iterator[Answer]:
        """An OpenAI stream (server-sent events up to ``[DONE]``), POSTed on the first
        ``next()``."""
        return self._stream(model, path, body, sse=True)

    def form_events(
        self, path: str, data: Mapping[str, str], files: Mapping[str, Any]
    ) -> Iterator[Any]:
        """The ``data:`` payloads of an OpenAI stream that answers a multipart form (an
        audio upload), POSTed on the first ``next()``."""
        try:
            with self._http.stream("POST", path, data=dict(data), files=dict(files)) as response:
                if response.status_code >= 400:
                    response.read()
                    raise_for_body(response.status_code, json_or_text(response))
                yield from sse_objects(response, path)
        except httpx.TransportError as error:
            raise self._unavailable(error) from None

    def _stream(
        self, model: type[Answer], path: str, body: Mapping[str, Any], sse: bool
    ) -> Iterator[Answer]:
        try:
            with self._http.stream("POST", path, json=dict(body)) as response:
                if response.status_code >= 400:
                    response.read()
                    raise_for_body(response.status_code, json_or_text(response))
                for data in (sse_objects if sse else ndjson_objects)(response, path):
                    yield parsed(model, data, path)
        except httpx.TransportError as error:
            raise self._unavailable(error) from None

    def _unavailable(self, error: httpx.TransportError) -> DaemonUnavailable:
        """What a failure before an answer means: a wait for one that ran out is a daemon
        that is there but busy; anything else (refused, no route...) one not reached."""
        url, timeout = self._http.base_url, self._http.timeout
        if isinstance(error, httpx.ReadTimeout) and timeout.read is not None:
            return DaemonTimeout(
                f"the daemon at {url} did not answer within {timeout.read:g} seconds; it may "
                "be busy (loading a model, a long prompt): try again once it is done"
            )
        return DaemonUnavailable(f"cannot reach the daemon at {url}: {error}")
