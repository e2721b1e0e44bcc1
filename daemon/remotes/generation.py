"""A remote generation with the face of a local one (``inference.Generation``): iterate for
``Delta`` items ending in ``Finished``, ``prime``, ``collect``, ``aclose``; so every API the
daemon serves works for remote models through the same routes."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable

from localllm.daemon.errors import RemoteError
from localllm.daemon.inference.generation import Collected, Delta, Finished, GenerationStats

__all__ = ["RemoteGeneration"]

_NO_USAGE = GenerationStats(0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0)


class RemoteGeneration:
    def __init__(
        self,
        model: str,
        remote: str,
        items: AsyncGenerator[Delta | Finished],
        *,
        on_finished: Callable[[str, Finished], None] | None = None,
        on_closed: Callable[[], None] | None = None,
    ):
        self.model = model
        self.processor = f"remote {remote}"
        self._items = items
        self._on_finished = on_finished
        self._on_closed = on_closed
        self._held: Delta | Finished | None = None
        self.finished: Finished | None = None
        self.truncation = None  # a remote fits the chat to its context itself, or refuses
        self._closed = False

    async def prime(self) -> None:
        """Wait for the first delta, so a remote that fails before it is retried elsewhere
        (or its error is a plain HTTP error) before any output is sent."""
        self._held = await self.__anext__()

    def __aiter__(self) -> RemoteGeneration:
        return self

    async def __anext__(self) -> Delta | Finished:
        if self._held is not None:
            item, self._held = self._held, None
            return item
        if self.finished is not None or self._closed:
            raise StopAsyncIteration
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
        return item

    async def collect(self) -> Collected:
        parts: list[str] = []
        thoughts: list[str] = []
        finished: Finished | None = None
        async for item in self:
            if isinstance(item, Delta):
                parts.append(item.text)
                thoughts.append(item.thinking)
            else:
                finished = item
        assert finished is not None, "a generation always ends with Finished"
        return Collected("".join(parts), [], finished, "".join(thoughts))

    def _end(self, finished: Finished) -> None:
        if self.finished is not None:
            return
        self.finished = finished
        if self._on_finished is not None:
            self._on_finished(self.model, finished)

    async def aclose(self) -> None:
        """Stop the remote request (if still running). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            with contextlib.suppress(RemoteError):
                await self._items.aclose()
        finally:
            if self.finished is None:
                self._end(Finished("cancelled", _NO_USAGE))
            if self._on_closed is not None:
                self._on_closed()
