"""The error bodies each API answers with, and which API a path belongs to.

Anthropic's routes (``/v1/messages...``) answer ``{"type": "error", "error": {type, message}}``
(its type follows from the status, as Anthropic's do); the other OpenAI routes (``/v1/...``)
``{"error": {message, type, param, code}}``; every other route Ollama's
``{"error": "message"}``. Which exception is which status and type is decided in one table,
``daemon.server.errors``; the security guards, which answer before any route runs, shape their
refusals here too.
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["Shape", "guard_error_body", "shape_for", "shaped_body"]

Shape = Literal["openai", "anthropic", "native"]  # whose error shape a route answers in

_ANTHROPIC_PATH = "/v1/messages"
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
}


def shape_for(path: str) -> Shape:
    """Which API's error shape the route at ``path`` answers in."""
    if path == _ANTHROPIC_PATH or path.startswith(_ANTHROPIC_PATH + "/"):
        return "anthropic"
    return "openai" if path.startswith("/v1/") else "native"


def shaped_body(
    shape: Shape,
    status: int,
    message: str,
    error_type: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    """An error body in ``shape``; ``error_type`` is OpenAI's (Anthropic's follows the status)."""
    if shape == "anthropic":
        kind = _ANTHROPIC_TYPES.get(status, "api_error" if status >= 500 else error_type)
        return {"type": "error", "error": {"type": kind, "message": message}}
    if shape == "openai":
        return {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return {"error": message}


def guard_error_body(path: str, status: int, message: str) -> dict[str, Any]:
    """A security guard's refusal: Anthropic's shape on its routes (its SDK and agents read
    it); the short ``{"error": "message"}`` everywhere else, as the guards have always sent."""
    shape = shape_for(path)
    return shaped_body(shape if shape == "anthropic" else "native", status, message)
