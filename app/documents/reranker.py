"""Reranking candidate passages through the daemon (``/api/rerank``).

A reranker reads the question and a passage together (a cross-encoder), so it can tell the
passage that answers from one that only shares its words or its topic; it is too slow to read
every passage, so it reorders the few dozen that keyword and vector search found.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from localllm.daemon.client import Client

__all__ = ["DaemonReranker", "RerankFunction"]

RerankFunction = Callable[[str, str, list[str]], list[float]]  # (model, query, texts) -> scores


@dataclass(frozen=True)
class DaemonReranker:
    """``model``'s relevance scores through ``rerank_call`` (the daemon's ``/api/rerank``)."""

    model: str
    rerank_call: RerankFunction

    @classmethod
    def over_client(cls, client: Client, model: str) -> DaemonReranker:
        def scores(model: str, query: str, texts: list[str]) -> list[float]:
            by_index = {
                r.index: r.relevance_score for r in client.rerank(model, query, texts).results
            }
            return [by_index[i] for i in range(len(texts))]

        return cls(model, scores)

    def order(self, question: str, texts: Sequence[str]) -> list[int]:
        """Positions of ``texts``, most relevant to ``question`` first (ties keep their order)."""
        if not texts:
            return []
        scores = self.rerank_call(self.model, question, list(texts))
        return sorted(range(len(texts)), key=lambda i: -scores[i])
