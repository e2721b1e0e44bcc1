"""Reading the daemon's answers: JSON bodies, NDJSON lines and SSE events, each parsed into the
``daemon.api`` model the server built it from.

An ``{"error": ...}`` line in the middle of a stream is raised as the typed client error, and
an answer that does not fit its model (a daemon of another version, or not a localllm daemon)
as ``ServerError`` with the field that did not fit, never as a pydantic traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from daemon.client.errors import ServerError, raise_for_body

__all__ = ["json_or_text", "ndjson_objects", "parsed", "sse_objects"]

Answer = TypeVar("Answer", bound=BaseModel)


def parsed(model: type[Answer], data: Any, where: str) -> Answer:
    """``data`` as ``model``; ``where`` (the request path) names the answer in an error."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "the answer"
        raise ServerError(
            f"the daemon's answer to {where} is not what this client expects "
            f"({field}: {first['msg']}); is the daemon the same localllm version?",
            code="unexpected_answer",
        ) from None


def ndjson_objects(response: httpx.Response) -> Iterator[Any]:
    """Each JSON line of a native stream (blank lines skipped), error lines raised."""
    for line in response.iter_lines():
        if line.strip():
            yield _unless_error(json.loads(line))


def sse_objects(response: httpx.Response) -> Iterator[Any]:
    """Each ``data:`` payload of an OpenAI stream up to ``[DONE]``, error events raised."""
    for line in response.iter_lines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        yield _unless_error(json.loads(payload))


def json_or_text(response: httpx.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return response.text


def _unless_error(data: Any) -> Any:
    if isinstance(data, Mapping) and "error" in data:
        raise_for_body(None, data)
    return data
