"""Reading the daemon's answers: JSON bodies, NDJSON lines and SSE events, each parsed into the
``daemon.api`` model the server built it from.

An ``{"error": ...}`` line in the middle of a stream is raised as the typed client error. An
answer this client cannot read (a daemon of another version, or not a localllm daemon at that
address: a login page, a proxy's error) is a ``ServerError`` (code "unexpected_answer") that
says what did not fit: a body or a line that is not JSON (quoting its start), or the field
that does not fit its model; never a ``JSONDecodeError`` or a pydantic traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from localllm.daemon.client.errors import ServerError, raise_for_body

__all__ = ["excerpt", "json_body", "json_or_text", "ndjson_objects", "parsed", "sse_objects"]

Answer = TypeVar("Answer", bound=BaseModel)

_UNEXPECTED = "unexpected_answer"
_EXCERPT = 100  # characters of an unreadable answer quoted in the error


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
            code=_UNEXPECTED,
        ) from None


def json_body(response: httpx.Response, where: str) -> Any:
    """The JSON body of a whole answer."""
    return _loads(response.content, where, "answer")


def ndjson_objects(response: httpx.Response, where: str) -> Iterator[Any]:
    """Each JSON line of a native stream (blank lines skipped), error lines raised."""
    for line in response.iter_lines():
        if line.strip():
            yield _unless_error(_loads(line, where, "stream line"))


def sse_objects(response: httpx.Response, where: str) -> Iterator[Any]:
    """Each ``data:`` payload of an OpenAI stream up to ``[DONE]``, error events raised."""
    for line in response.iter_lines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        yield _unless_error(_loads(payload, where, "stream event"))


def json_or_text(response: httpx.Response) -> object:
    """An error answer's body: its JSON, else the start of its text (for the message)."""
    try:
        return response.json()
    except ValueError:
        return excerpt(response.text)


def excerpt(text: str, limit: int = _EXCERPT) -> str:
    """The start of ``text`` fit for one line of a terminal: control and format characters
    (escape sequences, newlines, bidi overrides) become spaces, runs of spaces one."""
    shown = "".join(char if char.isprintable() else " " for char in text[:limit])
    shown = " ".join(shown.split())
    return shown + "..." if len(text) > limit else shown


def _loads(raw: str | bytes, where: str, what: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:  # not JSON, or bytes that are not UTF-8
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        quoted = f'"{excerpt(text)}"' if text.strip() else "an empty body"
        raise ServerError(
            f"the daemon's {what} to {where} is not JSON: {quoted}; is the address a "
            "localllm daemon of this version?",
            code=_UNEXPECTED,
        ) from None


def _unless_error(data: Any) -> Any:
    if isinstance(data, Mapping) and "error" in data:
        raise_for_body(None, data)
    return data
