"""``Backend``: where a request's model runs, chosen once per request by ``Inference``.

Two kinds answer it: ``LocalBackend`` (the store's models on the scheduler's runners) and the
remotes' ``RemoteBackend`` (a model another engine serves). Everything after the choice is the
backend's; a generation from either is a ``GenerationStream``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from localllm.daemon.inference.generation import GenerationStream
from localllm.daemon.inference.jobs import (
    Embeddings,
    EmbedJob,
    GenerationJob,
    Rerankings,
    RerankJob,
)

__all__ = ["Backend"]


class Backend(Protocol):
    async def generate(self, job: GenerationJob) -> GenerationStream:
        """Start generating; returns once the first item (or an error) is there."""
        ...

    async def embed(self, job: EmbedJob) -> Embeddings: ...

    async def rerank(self, job: RerankJob) -> Rerankings: ...

    async def load(self, name: str, options: Mapping[str, object], keep_alive: float | None) -> str:
        """Make ``name`` ready without generating; returns its display name."""
        ...

    async def unload(self, name: str) -> str:
        """Let ``name`` go (now, or once its requests finish); returns its display name."""
        ...
