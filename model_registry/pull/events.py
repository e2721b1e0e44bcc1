"""Progress events of a pull, in Ollama's ``{status, digest, total, completed}`` shape.

The daemon streams them unchanged as NDJSON from ``/api/pull``, so existing Ollama clients
draw their progress bars from them. A pull's last event is ``success``, ``paused`` or
``cancelled``; a failure is raised as an exception instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar, cast

from localllm.model_registry.digests import Digest

__all__ = [
    "CANCELLED",
    "PAUSED",
    "PULLING_MANIFEST",
    "SUCCESS",
    "VERIFYING",
    "WRITING_MANIFEST",
    "PullEvent",
    "iterate_in_thread",
]

PULLING_MANIFEST = "pulling manifest"
VERIFYING = "verifying sha256 digest"
WRITING_MANIFEST = "writing manifest"
SUCCESS = "success"
PAUSED = "paused"
CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class PullEvent:
    """One step of a pull; ``digest``, ``total`` and ``completed`` only while a blob moves."""

    status: str
    digest: str | None = None
    total: int | None = None
    completed: int | None = None

    @classmethod
    def pulling(cls, digest: Digest, total: int, completed: int) -> PullEvent:
        return cls(f"pulling {digest.short}", digest.wire, total, completed)

    @classmethod
    def verifying(cls, digest: Digest, total: int) -> PullEvent:
        return cls(VERIFYING, digest.wire, total, total)

    @property
    def is_final(self) -> bool:
        return self.status in (SUCCESS, PAUSED, CANCELLED)

    def to_json(self) -> dict[str, object]:
        """The wire form; absent fields are left out, as Ollama does."""
        fields = {"digest": self.digest, "total": self.total, "completed": self.completed}
        return {"status": self.status} | {k: v for k, v in fields.items() if v is not None}


_END = object()
_T = TypeVar("_T")


async def iterate_in_thread(
    make: Callable[[], Iterator[_T]], on_abandon: Callable[[], None]
) -> AsyncIterator[_T]:
    """Drive a blocking iterator in a thread and hand its items to the event loop.

    If the async consumer stops early (``break``, task cancelled), ``on_abandon`` is called so
    the blocking side can wind down (a pull pauses), and the thread is left to finish alone.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()

    def put(item: object) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is listening any more
            loop.call_soon_threadsafe(queue.put_nowait, item)

    def produce() -> None:
        try:
            for item in make():
                put(item)
        except BaseException as error:
            put(_Failure(error))
        finally:
            put(_END)

    threading.Thread(target=produce, name="localllm-pull", daemon=True).start()
    finished = False
    try:
        while (item := await queue.get()) is not _END:
            if isinstance(item, _Failure):
                finished = True
                raise item.error
            yield cast(_T, item)  # anything else on the queue is one of make()'s items
        finished = True
    finally:
        if not finished:
            on_abandon()


@dataclass(frozen=True, slots=True)
class _Failure:
    error: BaseException
