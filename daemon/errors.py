"""Errors the daemon raises on purpose (the runner's own errors live in ``runners.types``).

Each class says what went wrong in words a user can act on; the server turns them into HTTP
in one table (``daemon.server.errors``) and ``daemon.client`` turns them back.

DaemonError
├── BadRequestError         the request asks for something invalid or unsupported (400)
├── NotFoundError           the request names a pull or blob that does not exist (404)
├── ForbiddenError          the caller may not ask this (a daemon-side path from afar) (403)
├── ConflictError           the request would take a name already taken (409)
├── ServerBusyError         the request queue is full (503)
├── EvictionBlockedError    a load needs a model unloaded that never could be (503)
├── TemplateError           the chat template is broken or failed to render (500)
│   ├── TemplateRejectedError  the template refused the conversation (raise_exception) (400)
│   ├── TemplateSecurityError  the template tried something the sandbox forbids (500)
│   └── TemplateBudgetError    the render ran past its time, loop or size budget (400)
├── ModelLoadError          a runner could not start the model (500)
├── QuantizeError           llama.cpp could not quantize a model being created (500)
├── RemoteError             a remote engine failed or answered something unusable (502)
│   └── RemoteUnavailableError  no replica of the remote is healthy or answering (503)
├── RemoteLoopError         the request went round a loop of remotes (508)
└── InsufficientMemoryError the model's plan does not fit free RAM (even after evicting) or,
                            where its GPU layers were asked for, free VRAM (507)
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "BadRequestError",
    "ConflictError",
    "DaemonError",
    "EvictionBlockedError",
    "ForbiddenError",
    "InsufficientMemoryError",
    "MemoryKind",
    "ModelLoadError",
    "NotFoundError",
    "QuantizeError",
    "RemoteError",
    "RemoteLoopError",
    "RemoteUnavailableError",
    "ServerBusyError",
    "TemplateBudgetError",
    "TemplateError",
    "TemplateRejectedError",
    "TemplateSecurityError",
]


MemoryKind = Literal["RAM", "VRAM"]  # the memory a load is refused for


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


class ConflictError(DaemonError):
    pass


class ServerBusyError(DaemonError):
    def __init__(self, limit: int):
        self.limit = limit
        super().__init__(
            f"server busy: {limit} requests are already waiting or running; "
            "try again later or raise LOCALLLM_MAX_QUEUE"
        )


class EvictionBlockedError(DaemonError):
    """A load needs models unloaded whose requests wait for a load themselves: loads run one
    at a time, so neither side would ever finish (an impossible wait, answered at once)."""

    def __init__(self, model: str, blocked: list[str], room: str):
        self.model = model
        self.blocked = blocked
        names = ", ".join(repr(name) for name in blocked)
        held = "it is" if len(blocked) == 1 else "each is"
        super().__init__(
            f"cannot load model {model!r} now: {room}, so {names} must be unloaded first, "
            f"but {held} held by a request that is itself waiting for a model to load "
            "(models load one at a time, so neither could ever finish); retry once that "
            "request is done"
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


class RemoteError(DaemonError):
    """A remote engine failed: unreachable, an error status, or a malformed or oversized
    answer. The message names the remote, never its key."""


class RemoteUnavailableError(RemoteError):
    pass


class RemoteLoopError(DaemonError):
    """Not a ``RemoteError``: never retried on another replica (it would loop there too)."""

    def __init__(self, hops: int):
        super().__init__(
            f"the request went round a loop of remotes ({hops} daemons deep); check that no "
            "remote's URL or alias leads back to a daemon it came from"
        )


class InsufficientMemoryError(DaemonError, MemoryError):
    """A load whose memory plan does not fit, refused before any runner starts: ``needed``
    bytes of ``memory`` ("RAM", or "VRAM" where GPU layers were asked for) where only
    ``available`` are free. ``loaded``: how many loaded models ``available`` counts as
    unloaded (it would not fit even without them, so none is unloaded for it); ``parts``: the
    plan's parts there, in words; ``fits``: what would fit, in words ("it fits at 8,192
    tokens a slot..."). The option ``load_anyway`` skips the refusal."""

    def __init__(
        self,
        model: str,
        needed: int,
        available: int,
        loaded: int = 0,
        *,
        memory: MemoryKind = "RAM",
        parts: str = "",
        fits: str = "",
        headroom: float = 0.20,
    ) -> None:
        self.model = model
        self.needed = needed
        self.available = available
        self.memory = memory
        self.fits = fits
        if memory == "VRAM":
            free = "is free on the GPU (keeping a margin for the driver)"
            advice = "ask for fewer layers (num_gpu), or leave num_gpu unset to place them"
        elif loaded:
            free = f"would be free even after unloading the {loaded} loaded model(s)"
            advice = "close other programs"
        else:
            free, advice = "is free", "close other programs, unload models"
        if memory != "VRAM":
            free += f" (keeping {headroom:.0%} headroom)"
        if not fits and memory != "VRAM":
            advice += ", or use a smaller context (num_ctx)"
        what = f"{_size(needed)} of {memory}" + (f" ({parts})" if parts else "")
        super().__init__(
            f"model {model!r} needs {what} but only {_size(available)} {free}"
            + (f"; {fits}" if fits else "")
            + f"; {advice}, or load it anyway with the option load_anyway "
            "(`localllm run --load-anyway`)"
        )


def _size(n: int) -> str:
    """GiB to a tenth; under a tenth of a GiB, MiB; under one, KiB."""
    if n >= (1 << 30) // 10:
        return f"{n / (1 << 30):.1f} GiB"
    return f"{n / (1 << 20):,.0f} MiB" if n >= 1 << 20 else f"{n / 1024:,.0f} KiB"
