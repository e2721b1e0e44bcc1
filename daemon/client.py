"""The one HTTP client front ends use to talk to the daemon (httpx, synchronous).

Blocking by design: the CLI calls it directly and the GUI from worker threads. Error
responses come back as typed exceptions (``ModelNotFound``, ``BadRequest``, ``ServerBusy``,
``ServerError``; ``DaemonUnavailable`` when nothing answers), each with the daemon's message.
Pass ``transport=httpx.ASGITransport(app)`` or ``httpx.MockTransport`` to test without sockets.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import httpx

from daemon.api import ChatCompletion, ChatCompletionChunk, Model, ModelList

__all__ = [
    "BadRequest",
    "Client",
    "ClientError",
    "DaemonUnavailable",
    "ModelNotFound",
    "ServerBusy",
    "ServerError",
]

DEFAULT_BASE_URL = "http://127.0.0.1:11435"


class ClientError(Exception):
    def __init__(self, message: str, status: int | None = None, code: str | None = None):
        self.status = status
        self.code = code
        super().__init__(message)


class DaemonUnavailable(ClientError):
    """Nothing answered at the daemon's address (is ``localllm serve`` running?)."""


class BadRequest(ClientError):
    pass


class ModelNotFound(ClientError):
    pass


class ServerBusy(ClientError):
    pass


class ServerError(ClientError):
    pass


def _error_class(status: int) -> type[ClientError]:
    if status == 404:
        return ModelNotFound
    if status == 503:
        return ServerBusy
    if status >= 500:
        return ServerError
    return BadRequest


def _raise_for_body(status: int, body: object) -> None:
    error = body.get("error") if isinstance(body, Mapping) else None
    if isinstance(error, Mapping):
        message, code = str(error.get("message", "")), error.get("code")
    else:
        message, code = str(error or body), None
    raise _error_class(status)(message, status, code)


class Client:
    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        api_key: str | None = None,
        timeout: float | None = 600.0,
        transport: httpx.BaseTransport | None = None,
    ):
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(
            base_url=base_url, headers=headers, timeout=timeout, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def health(self) -> dict[str, Any]:
        return self._request("GET", "/health").json()

    def list_models(self) -> list[Model]:
        return ModelList.model_validate(self._request("GET", "/v1/models").json()).data

    def chat(
        self,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        **fields: Any,
    ) -> Iterator[ChatCompletionChunk]:
        """Stream a chat completion chunk by chunk (``fields``: any OpenAI request field)."""
        body = {**fields, "model": model, "messages": list(messages), "stream": True}
        with self._stream("POST", "/v1/chat/completions", body) as response:
            for data in _sse_data(response):
                if "error" in data:
                    _raise_for_body(500, data)
                yield ChatCompletionChunk.model_validate(data)

    def chat_once(
        self, model: str, messages: Sequence[Mapping[str, Any]], **fields: Any
    ) -> ChatCompletion:
        body = {**fields, "model": model, "messages": list(messages), "stream": False}
        response = self._request("POST", "/v1/chat/completions", json=body)
        return ChatCompletion.model_validate(response.json())

    # -- plumbing ---------------------------------------------------------------------------
    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as error:
            raise DaemonUnavailable(
                f"cannot reach the daemon at {self._http.base_url}: {error}"
            ) from None
        if response.status_code >= 400:
            _raise_for_body(response.status_code, _json_or_text(response))
        return response

    def _stream(self, method: str, path: str, body: Mapping[str, Any]):
        return _Stream(self, method, path, body)


class _Stream:
    """``with`` wrapper: opens a streaming response and raises typed errors before the body."""

    def __init__(self, client: Client, method: str, path: str, body: Mapping[str, Any]):
        self._context = client._http.stream(method, path, json=dict(body))
        self._base_url = client._http.base_url

    def __enter__(self) -> httpx.Response:
        try:
            response = self._context.__enter__()
        except httpx.TransportError as error:
            raise DaemonUnavailable(
                f"cannot reach the daemon at {self._base_url}: {error}"
            ) from None
        if response.status_code >= 400:
            response.read()
            status, body = response.status_code, _json_or_text(response)
            self._context.__exit__(None, None, None)
            _raise_for_body(status, body)
        return response

    def __exit__(self, *exc_info: Any) -> None:
        self._context.__exit__(*exc_info)


def _sse_data(response: httpx.Response) -> Iterator[dict[str, Any]]:
    for line in response.iter_lines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        yield json.loads(payload)


def _json_or_text(response: httpx.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return response.text
