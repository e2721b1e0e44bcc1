"""``RemoteBackend``: the ``Backend`` for a model a remote serves, bound to the remote that
matched the request's model name (the match is made once, by ``Inference``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from localllm.daemon.inference.generation import Finished
from localllm.daemon.inference.jobs import (
    Embeddings,
    EmbedJob,
    GenerationJob,
    Rerankings,
    RerankJob,
)
from localllm.daemon.remotes.generation import RemoteGeneration

if TYPE_CHECKING:
    from localllm.daemon.remotes.registry import RemoteMatch, Remotes

__all__ = ["RemoteBackend"]


class RemoteBackend:
    def __init__(
        self,
        remotes: Remotes,
        found: RemoteMatch,
        on_finished: Callable[[str, Finished], None] | None = None,
    ):
        self.remotes = remotes
        self.found = found
        self._on_finished = on_finished

    async def generate(self, job: GenerationJob) -> RemoteGeneration:
        return await self.remotes.generate(self.found, job.model, job, self._on_finished)

    async def embed(self, job: EmbedJob) -> Embeddings:
        return await self.remotes.embed(self.found, job)

    async def rerank(self, job: RerankJob) -> Rerankings:
        return await self.remotes.rerank(self.found, job)

    async def load(self, name: str, options: Mapping[str, object], keep_alive: float | None) -> str:
        """A remote's model is always ready: nothing to load."""
        return name

    async def unload(self, name: str) -> str:
        """The remote's engine decides what it keeps loaded: nothing to unload here."""
        return name
