"""A request's hold on a loaded model and one of its slots.

Releasing is synchronous and idempotent so it can run from any ``finally``, including one
reached by cancellation (a client that hung up), without awaiting anything.
"""

from __future__ import annotations

from collections.abc import Callable

from localllm.daemon.runners.types import RunnerInfo, RunnerSpec
from localllm.daemon.scheduler.loaded import LoadedModel, Runner

__all__ = ["Lease"]


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

    def release(self, crashed: bool = False) -> None:
        """Give the slot back; ``crashed`` drops the runner so the next request gets a new one."""
        if not self._released:
            self._released = True
            self._release(self._model, crashed)

    async def __aenter__(self) -> Lease:
        return self

    async def __aexit__(self, *exc_info) -> None:
        self.release()
