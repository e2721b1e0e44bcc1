"""The one table that turns exceptions into HTTP responses.

Each API answers in its own shape, chosen by path (``daemon.api.error_bodies``): Anthropic's
on ``/v1/messages...``, OpenAI's on the other ``/v1/...`` routes, Ollama's everywhere else.
Request validation errors are 400s (not FastAPI's 422), as OpenAI, Anthropic and Ollama
clients expect. Unexpected exceptions are logged with
their traceback and answered with a generic 500; no message carries a file-system path (each
is passed through the app's ``PathRedactor``, built from its settings).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from localllm.daemon.api.error_bodies import Shape, shape_for, shaped_body
from localllm.daemon.errors import (
    BadRequestError,
    ConflictError,
    EvictionBlockedError,
    ForbiddenError,
    InsufficientMemoryError,
    ModelLoadError,
    NotFoundError,
    QuantizeError,
    RemoteError,
    RemoteLoopError,
    RemoteUnavailableError,
    ServerBusyError,
    TemplateBudgetError,
    TemplateError,
    TemplateRejectedError,
)
from localllm.daemon.runners.types import (
    ContextOverflowError,
    IncompatibleBuildError,
    InvalidRequestError,
    RunnerCrashed,
    RunnerError,
)
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.redaction import PathRedactor
from localllm.model_registry.errors import (
    AuthenticationError,
    CorruptManifestError,
    DigestMismatchError,
    DownloadError,
    GGUFError,
    InsufficientSpaceError,
    InvalidDigestError,
    InvalidNameError,
    InvalidParameterError,
    InvalidRepoError,
    ModelExistsError,
    ModelfileError,
    ModelKindError,
    ModelNotFoundError,
    NotLinkableError,
    PullError,
    QuantNotFoundError,
    RegistryError,
    StoreLockTimeout,
    UnknownModelError,
)

__all__ = [
    "ERROR_TABLE",
    "Redact",
    "anthropic_stream_error",
    "error_body",
    "error_detail",
    "error_status",
    "install_error_handlers",
    "ndjson_error",
    "stream_error",
]

log = logging.getLogger("localllm.server")

Redact = Callable[[str], str]  # a text without file-system paths (``PathRedactor``)

# (exception, HTTP status, OpenAI error type, OpenAI error code); the first match wins.
ERROR_TABLE: tuple[tuple[type[Exception], int, str, str | None], ...] = (
    (ModelNotFoundError, 404, "not_found_error", "model_not_found"),
    (UnknownModelError, 404, "not_found_error", "model_not_found"),
    (QuantNotFoundError, 404, "not_found_error", "quant_not_found"),
    (NotFoundError, 404, "not_found_error", "not_found"),
    (ForbiddenError, 403, "permission_error", "forbidden"),
    (ConflictError, 409, "invalid_request_error", "conflict"),
    (InvalidNameError, 400, "invalid_request_error", "invalid_model_name"),
    (ModelKindError, 400, "invalid_request_error", "wrong_model_kind"),
    (InvalidDigestError, 400, "invalid_request_error", "invalid_digest"),
    (InvalidRepoError, 400, "invalid_request_error", "invalid_repo"),
    (DigestMismatchError, 400, "invalid_request_error", "digest_mismatch"),
    (ModelfileError, 400, "invalid_request_error", "invalid_modelfile"),
    (InvalidParameterError, 400, "invalid_request_error", "invalid_parameter"),
    (GGUFError, 400, "invalid_request_error", "invalid_gguf"),
    (ModelExistsError, 409, "invalid_request_error", "model_exists"),
    (NotLinkableError, 409, "invalid_request_error", "not_linkable"),
    (AuthenticationError, 400, "invalid_request_error", "hub_auth_required"),
    (DownloadError, 502, "server_error", "download_failed"),
    (PullError, 400, "invalid_request_error", "pull_failed"),
    (InsufficientSpaceError, 507, "server_error", "insufficient_storage"),
    (StoreLockTimeout, 503, "server_error", "store_busy"),
    (ContextOverflowError, 400, "invalid_request_error", "context_length_exceeded"),
    (BadRequestError, 400, "invalid_request_error", None),
    (RequestValidationError, 400, "invalid_request_error", None),
    (TemplateRejectedError, 400, "invalid_request_error", "template_rejected"),
    (TemplateBudgetError, 400, "invalid_request_error", "template_budget_exceeded"),
    (TemplateError, 500, "server_error", "template_error"),
    (ServerBusyError, 503, "server_error", "server_busy"),
    (EvictionBlockedError, 503, "server_error", "eviction_blocked"),
    (InsufficientMemoryError, 507, "server_error", "insufficient_memory"),
    (ModelLoadError, 500, "server_error", "model_load_failed"),
    (QuantizeError, 500, "server_error", "quantize_failed"),
    (RemoteLoopError, 508, "server_error", "remote_loop"),
    (RemoteUnavailableError, 503, "server_error", "remote_unavailable"),
    (RemoteError, 502, "server_error", "remote_error"),
    (IncompatibleBuildError, 500, "server_error", "incompatible_llama_build"),
    (RunnerCrashed, 500, "server_error", "runner_crashed"),
    (InvalidRequestError, 400, "invalid_request_error", "invalid_request"),
    (RunnerError, 500, "server_error", "runner_error"),
    (CorruptManifestError, 500, "server_error", "corrupt_model"),
    (RegistryError, 500, "server_error", "registry_error"),
)
_HTTP_TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error"}


def _lookup(error: BaseException) -> tuple[int, str, str | None]:
    for kind, status, error_type, code in ERROR_TABLE:
        if isinstance(error, kind):
            return status, error_type, code
    if isinstance(error, HTTPException):
        error_type = _HTTP_TYPES.get(error.status_code, "invalid_request_error")
        return error.status_code, error_type if error.status_code < 500 else "server_error", None
    return 500, "server_error", "internal_error"


def error_status(error: BaseException) -> int:
    return _lookup(error)[0]


def _message(error: BaseException, redact: Redact) -> str:
    if isinstance(error, RequestValidationError):
        first = error.errors()[0] if error.errors() else {}
        body = _body_problem(first)
        if body is not None:
            return body
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return f"invalid request: {where + ': ' if where else ''}{first.get('msg', 'invalid')}"
    if isinstance(error, HTTPException):
        return redact(str(error.detail))
    if _lookup(error)[2] == "internal_error":
        return "internal server error; see the daemon log for details"
    return redact(str(error))


def _body_problem(first: Mapping[str, Any]) -> str | None:
    """What is wrong with the body as a whole (not JSON, none, not an object), said as what
    to send; None when the problem is in one of its fields."""
    if first.get("type") == "json_invalid":
        why = (first.get("ctx") or {}).get("error", "it does not parse")
        return f"the request body is not JSON ({why}); send a JSON object, as the API documents"
    if tuple(first.get("loc", ())) != ("body",):
        return None
    if first.get("type") == "missing":
        return "the request has no body; send a JSON object, as the API documents"
    return "the request body must be a JSON object, as the API documents"


def _param(error: BaseException) -> str | None:
    if isinstance(error, BadRequestError):
        return error.param
    if isinstance(error, InvalidParameterError):
        return error.name
    if isinstance(error, RequestValidationError) and error.errors():
        first = error.errors()[0]
        if _body_problem(first) is not None:
            return None
        loc = [str(p) for p in first.get("loc", ()) if p != "body"]
        return ".".join(loc) or None
    if isinstance(error, ModelNotFoundError | InvalidNameError):
        return "model"
    if isinstance(error, InvalidRepoError):
        return "repo"
    return None


def error_body(error: BaseException, shape: Shape, redact: Redact) -> dict[str, Any]:
    """The JSON body for ``error``, in the shape of the API that answers it."""
    status, error_type, code = _lookup(error)
    return shaped_body(shape, status, _message(error, redact), error_type, _param(error), code)


def _log_unexpected(error: BaseException) -> None:
    if _lookup(error)[2] == "internal_error":
        log.error("unhandled error in a stream", exc_info=error)


def error_detail(error: BaseException, redact: Redact) -> dict[str, Any]:
    """OpenAI's ``{message, type, param, code}`` for an error after a stream has started
    (logged with its traceback when unexpected), for streams that frame errors their own way."""
    _log_unexpected(error)
    detail: dict[str, Any] = error_body(error, "openai", redact)["error"]
    return detail


def stream_error(error: BaseException, redact: Redact) -> bytes:
    """An error after an OpenAI stream has started, as its last server-sent event."""
    _log_unexpected(error)
    return b"data: " + json.dumps(error_body(error, "openai", redact)).encode() + b"\n\n"


def anthropic_stream_error(error: BaseException, redact: Redact) -> bytes:
    """An error after an Anthropic stream has started: its last event, ``event: error``."""
    _log_unexpected(error)
    body = error_body(error, "anthropic", redact)
    return b"event: error\ndata: " + json.dumps(body).encode() + b"\n\n"


def ndjson_error(error: BaseException, redact: Redact) -> bytes:
    """An error after an NDJSON stream has started, as its last line (Ollama's shape)."""
    _log_unexpected(error)
    return json.dumps(error_body(error, "native", redact)).encode() + b"\n"


def _respond(request: Request, error: BaseException) -> JSONResponse:
    status = error_status(error)
    if status >= 500 and _lookup(error)[2] == "internal_error":
        log.error("unhandled error on %s", request.url.path, exc_info=error)
    headers = {"Retry-After": "1"} if status == 503 else None
    redact = app_part(request, "redactor", PathRedactor)
    body = error_body(error, shape_for(request.url.path), redact)
    return JSONResponse(body, status_code=status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    async def handle(request: Request, error: Exception) -> JSONResponse:
        return _respond(request, error)

    # Known errors are answered by the exception middleware; only the truly unexpected reach
    # the catch-all (Starlette's outermost handler), which also logs a traceback.
    kinds: set[type[Exception]] = {entry[0] for entry in ERROR_TABLE} | {HTTPException, Exception}
    for kind in kinds:
        app.add_exception_handler(kind, handle)
