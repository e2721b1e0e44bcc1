"""The frames every one-request-at-a-time runner (``daemon.transcription``, ``daemon.speech``)
speaks, whatever it serves: the shared ones, and the shapes of the ones each names itself.

Each runner's ``frames`` module declares its spec, its work request, its ready and error
events (their payloads are its own) and shares ``cancel``, ``shutdown`` and ``fatal``;
:class:`ChildWire` tells the shared process and loop (``child``, ``child_loop``) which of its
classes play which part.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from .typed_frames import FrameCodec, Tagged

__all__ = ["CancelOp", "ChildWire", "Failed", "FatalEv", "Ready", "ShutdownOp", "Work"]

_Spec = TypeVar("_Spec")
_Info = TypeVar("_Info")
_Info_co = TypeVar("_Info_co", covariant=True)
_Request = TypeVar("_Request", bound=Tagged)
_Event = TypeVar("_Event", bound=Tagged)


@dataclass(frozen=True, slots=True)
class CancelOp:
    """Drop a queued request, or stop a running one at its next step."""

    TAG: ClassVar[str] = "cancel"
    id: int


@dataclass(frozen=True, slots=True)
class ShutdownOp:
    """Exit (closing stdin does the same)."""

    TAG: ClassVar[str] = "shutdown"


@dataclass(frozen=True, slots=True)
class FatalEv:
    """The model could not be loaded; the runner exits."""

    TAG: ClassVar[str] = "fatal"
    message: str


class Ready(Tagged, Protocol[_Info_co]):
    """The event that says the model is loaded, and what the runner reports about it."""

    @property
    def info(self) -> _Info_co: ...


class Failed(Tagged, Protocol):
    """The event that ends a request without answering it; ``kind`` says why."""

    @property
    def id(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def message(self) -> str: ...


class Work(Tagged, Protocol):
    """A request that is served in turn (``transcribe``, ``speak``)."""

    @property
    def id(self) -> int: ...


@dataclass(frozen=True, slots=True)
class ChildWire(Generic[_Spec, _Info, _Request, _Event]):
    """One runner's frames, by the part each plays."""

    codec: FrameCodec[_Request, _Event]
    spec: Callable[[_Spec], _Request]  # its SpecOp
    ready: type[Ready[_Info]]  # its ReadyEv
    failed: type[Failed]  # its ErrorEv
    # its ErrorEv again, to build one: the kind is its ErrorKind (or "internal")
    error: Callable[[int, Any, str], _Event]
