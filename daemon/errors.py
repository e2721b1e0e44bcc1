"""Errors the daemon raises on purpose (the runner's own errors live in ``runners.types``).

Each class says what went wrong in words a user can act on; the server turns them into HTTP
in one table (``daemon.server.errors``) and ``daemon.client`` turns them back.

DaemonError
├── BadRequestError         the request asks for something invalid or unsupported (400)
├── NotFoundError           the request names a pull or blob that does not exist (404)
├── ForbiddenError          the caller may not ask this (a daemon-side path from afar) (403)
├── ServerBusyError         the request queue is full (503)
├── TemplateError           the chat template is broken or failed to render (500)
│   ├── TemplateRejectedError  the template refused the conversation (raise_exception) (400)
│   ├── TemplateSecurityError  the template tried something the sandbox forbids (500)
│   └── TemplateBudgetError    the render ran past its time, loop or size budget (400)
├── ModelLoadError          a runner could not start the model (500)
├── QuantizeError           llama.cpp could not quantize a model being created (500)
└── InsufficientMemoryError the model does not fit in free memory, even after evicting (507)
"""

from __future__ import annotations

__all__ = [
    "BadRequestError",
    "DaemonError",
    "ForbiddenError",
    "InsufficientMemoryError",
    "ModelLoadError",
    "NotFoundError",
    "QuantizeError",
    "ServerBusyError",
    "TemplateBudgetError",
    "TemplateError",
    "TemplateRejectedError",
    "TemplateSecurityError",
]


class DaemonError(Exception):
    """Base of every error the daemon raises on purpose."""


class BadRequestError(DaemonError, ValueError):
    def __init__(self, message: str, param: str | None = None):
        self.param = param
        super().__init__(message)


class NotFoundError(DaemonError, LookupError):
    pass


class ForbiddenError(DaemonError, PermissionError):
    pass


class ServerBusyError(DaemonError):
    def __init__(self, limit: int):
        self.limit = limit
        super().__init__(
            f"server busy: {limit} requests are already waiting or running; "
            "try again later or raise LOCALLLM_MAX_QUEUE"
        )


class TemplateError(DaemonError):
    pass


class TemplateRejectedError(TemplateError):
    pass


class TemplateSecurityError(TemplateError):
    pass


class TemplateBudgetError(TemplateError):
    """A render went past its time, loop or size budget (``inference.template_budget``)."""


class ModelLoadError(DaemonError):
    pass


class QuantizeError(DaemonError):
    pass


class InsufficientMemoryError(DaemonError, MemoryError):
    def __init__(self, model: str, needed: int, available: int):
        self.model = model
        self.needed = needed
        self.available = available
        super().__init__(
            f"model {model!r} needs about {_gib(needed)} of memory but only {_gib(available)} "
            "is free (keeping 20% headroom); close other programs, unload models, "
            "or use a smaller context (num_ctx)"
        )


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB"
