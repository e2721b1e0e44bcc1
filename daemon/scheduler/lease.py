"""A request's hold on a loaded model and one of its slots (``Lease``), and its claim on a
model still loading (``Claim``).

Releasing is synchronous and idempotent so it can run from any ``finally``, including one
reached by cancellation (a client that hung up), without awaiting anything.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from localllm.daemon.runners.types import DoneEvent, RunnerInfo, RunnerSpec
from localllm.daemon.scheduler.loaded import LoadedModel, Runner

__all__ = ["Claim", "Lease"]


class Lease:
    def __init__(self, model: LoadedModel, release: Callable[[LoadedModel, bool], None]):
        self._model = model
        self._release = release
        self._released = False

    @property
    def name(self) -> str:
        return self._model.name

    @property
    def runner(self) -> Runner:
        return self._model.runner

    @property
    def info(self) -> RunnerInfo:
        return self._model.runner.info

    @property
    def spec(self) -> RunnerSpec:
        return self._model.spec

    @property
    def processor(self) -> str:
        return self._model.processor

    @property
    def released(self) -> bool:
        return self._released

    def count_done(self, done: DoneEvent) -> None:
        """Add what a finished request read from the prompt cache on disk to its model's sum."""
        self._model.prompt_cache = self._model.prompt_cache.plus(done)

    def release(self, crashed: bool = False) -> None:
        """Give the slot back; ``crashed`` drops the runner so the next request gets a new one."""
        if not self._released:
            self._released = True
            self._release(self._model, crashed)

    async def __aenter__(self) -> Lease:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.release()


@dataclass(eq=False, slots=True)
class Claim:
    """A request waiting for a load: the load hands it the model (one reference taken) before
    anything else runs, so no other load can evict or drain the model under it."""

    spec: RunnerSpec
    holder: asyncio.Task[object] | None = field(default_factory=asyncio.current_task)
    model: LoadedModel | None = None
