"""A remote generation on the same ``GenerationStream`` as a local one: iterate for ``Delta``
items ending in ``Finished``, ``prime``, ``collect``, ``aclose``; so every API the daemon serves
works for remote models through the same routes."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable

from localllm.daemon.errors import RemoteError
from localllm.daemon.inference.generation import Delta, Finished, GenerationStats, GenerationStream

__all__ = ["RemoteGeneration"]

_NO_USAGE = GenerationStats(0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0)


class RemoteGeneration(GenerationStream):
    """The remote's stream of items; a remote fits the chat to its context itself (or
    refuses), so ``truncation`` stays None."""

    def __init__(
        self,
        model: str,
        remote: str,
        items: AsyncGenerator[Delta | Finished],
        *,
        on_finished: Callable[[str, Finished], None] | None = None,
        on_closed: Callable[[], None] | None = None,
    ):
        super().__init__(model, on_finished)
        self._remote = remote
        self._items = items
        self._on_closed = on_closed

    @property
    def processor(self) -> str:
        return f"remote {self._remote}"

    async def _advance(self) -> None:
        try:
            item = await anext(self._items)
        except StopAsyncIteration:
            self._end(Finished("error", _NO_USAGE))
            raise RemoteError(f"the stream for {self.model} ended early") from None
        except Exception:  # a cancellation (the client left) is "cancelled", set by aclose
            self._end(Finished("error", _NO_USAGE))
            raise
        if isinstance(item, Finished):
            self._end(item)
        self._out.append(item)

    async def _stop(self) -> None:
        with contextlib.suppress(RemoteError):
            await self._items.aclose()

    def _let_go(self) -> None:
        if self._on_closed is not None:
            self._on_closed()

    def _unfinished_usage(self) -> GenerationStats:
        return _NO_USAGE
