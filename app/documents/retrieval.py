"""Hybrid search: BM25 keyword ranks and embedding ranks, fused by reciprocal rank fusion
(Cormack et al. 2009: each list gives a passage 1 / (60 + rank)). The keyword side keeps
retrieval useful with a small or weak embedding model, and without one at all.

With a reranker, the fused list's first ``RERANKED`` passages are read again together with the
question and reordered by its scores; the ones cited are the reranker's best.
"""

from __future__ import annotations

from collections.abc import Sequence

from localllm.app.documents.embedder import DaemonEmbedder
from localllm.app.documents.index import DocumentIndex, Passage
from localllm.app.documents.reranker import DaemonReranker

__all__ = ["Retriever", "fuse"]

RRF_K = 60
CANDIDATES = 30  # from each side, before fusing
RERANKED = 30  # fused candidates a reranker reorders


def fuse(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    """Ids by their summed reciprocal rank over ``rankings``, best first (ties: first seen)."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])


class Retriever:
    """Searches one index; with no ``embedder`` (or an index built without one) it is
    keyword-only; with a ``reranker`` the candidates are reordered by it."""

    def __init__(
        self,
        index: DocumentIndex,
        embedder: DaemonEmbedder | None = None,
        reranker: DaemonReranker | None = None,
    ):
        self.index, self.embedder, self.reranker = index, embedder, reranker

    @property
    def hybrid(self) -> bool:
        return self.embedder is not None and self.embedder.model == self.index.embed_model

    def search(self, question: str, limit: int = 5) -> list[Passage]:
        rankings = [self.index.keyword(question, CANDIDATES)]
        embedder = self.embedder if self.hybrid else None
        if embedder is not None and question.strip():
            (vector,) = embedder.embed([question])
            rankings.append(self.index.nearest(vector, CANDIDATES))
        fused = fuse(rankings)
        if self.reranker is None or not question.strip():
            return self.index.passages(fused[:limit])
        candidates = self.index.passages(fused[:RERANKED])
        order = self.reranker.order(question, [p.text for p in candidates])
        return [candidates[i] for i in order[:limit]]
