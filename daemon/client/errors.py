"""The client's exceptions: what an error response (or no response) means to a front end.

``daemon.client`` re-exports every class here; front ends catch ``ClientError`` and show its
message, which is the daemon's own (it names what to do next).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "BadRequest",
    "ClientError",
    "Conflict",
    "DaemonTimeout",
    "DaemonUnavailable",
    "Forbidden",
    "ModelNotFound",
    "RemoteNotFound",
    "ServerBusy",
    "ServerError",
    "Unauthorized",
    "error_class",
    "raise_for_body",
]


class ClientError(Exception):
    def __init__(self, message: str, status: int | None = None, code: str | None = None):
        self.status = status
        self.code = code
        self.message = message
        super().__init__(message)


class DaemonUnavailable(ClientError):
    """Nothing answered at the daemon's address (is ``localllm serve`` running?)."""


class DaemonTimeout(DaemonUnavailable):
    """The daemon took the request but did not answer within the client's timeout: it is
    there but busy (loading a model, a long prompt), not gone."""


class BadRequest(ClientError):
    """The daemon refused the request as invalid (400, 409, 413...)."""


class Conflict(BadRequest):
    """409: the name is taken (a remote, a model being created)."""


class Unauthorized(ClientError):
    """401: the daemon wants an API key (``LOCALLLM_API_KEY``) or a different one."""


class Forbidden(ClientError):
    """403: refused by a guard (a Host header or an origin the daemon does not allow)."""


class ModelNotFound(ClientError):
    """404: no such model (or pull, or blob)."""


class RemoteNotFound(ModelNotFound):
    """404 from ``/api/remotes/{name}``: no remote by that name."""


class ServerBusy(ClientError):
    """503: the request queue is full; try again shortly."""


class ServerError(ClientError):
    """5xx, an error the daemon reported in the middle of a stream, or an answer this client
    cannot read (not JSON, or not the shape it expects: ``code`` "unexpected_answer")."""


_BY_STATUS: dict[int, type[ClientError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: ModelNotFound,
    409: Conflict,
    503: ServerBusy,
}


def error_class(status: int) -> type[ClientError]:
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServerError if status >= 500 else BadRequest


def raise_for_body(status: int | None, body: object) -> None:
    """Raise the typed error for an error body in either shape (Ollama's or OpenAI's)."""
    error = body.get("error") if isinstance(body, Mapping) else None
    if isinstance(error, Mapping):
        message, code = str(error.get("message", "")), error.get("code")
    else:
        message, code = str(error or body), None
    kind = error_class(status) if status is not None else ServerError
    raise kind(message, status, code)
