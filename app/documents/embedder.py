"""Embedding passages through the daemon (``/api/embed``), in batches.

The daemon loads the model and runs it like any other; this only splits the work so one
request stays small and progress can move between batches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from localllm.daemon.client import Client

__all__ = ["DaemonEmbedder", "EmbedFunction"]

EmbedFunction = Callable[[str, list[str]], list[list[float]]]  # (model, texts) -> vectors
BATCH = 32


@dataclass(frozen=True)
class DaemonEmbedder:
    """``model``'s embeddings through ``embed`` (the daemon's ``/api/embed``)."""

    model: str
    embed_call: EmbedFunction
    batch_size: int = BATCH

    @classmethod
    def over_client(cls, client: Client, model: str, batch_size: int = BATCH) -> DaemonEmbedder:
        return cls(model, lambda m, texts: client.embed(m, texts).embeddings, batch_size)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for batch in self.batches(texts):
            vectors.extend(self.embed_call(self.model, batch))
        return vectors

    def batches(self, texts: Sequence[str]) -> list[list[str]]:
        size = max(1, self.batch_size)
        return [list(texts[i : i + size]) for i in range(0, len(texts), size)]
