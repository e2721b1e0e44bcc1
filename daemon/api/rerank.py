"""Rerank's wire format: the shape llama-server, Jina and Cohere share, and our native one.

``POST /v1/rerank`` (also ``/rerank``, ``/v1/reranking`` and Cohere's ``/v2/rerank``) takes a
``query`` and ``documents`` (strings, or objects with a ``text``) and answers
``results: [{index, relevance_score, document}]`` best first, cut to ``top_n``, with ``usage``.
``POST /api/rerank`` takes the same request and answers in Ollama's manner (durations in
nanoseconds, ``prompt_eval_count``). Both say which documents were cut to fit the model's
context (``truncated``, by index). Unknown request fields are ignored.

The query is paired with every document, so besides ``MAX_RERANK_DOCUMENTS`` a request's pairs
may hold at most 2,000,000 tokens together; the runner counts them before it scores any and
answers 400 past that, as it does for a query that leaves no room for a document.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MAX_RERANK_DOCUMENTS",
    "NativeRerankResponse",
    "RerankDocument",
    "RerankMeta",
    "RerankRequest",
    "RerankResponse",
    "RerankResult",
    "RerankUsage",
]

MAX_RERANK_DOCUMENTS = 10_000  # Cohere's limit for one request (documents x chunks)


class RerankDocument(BaseModel):
    """A document given as an object (Jina's and Cohere's form); only its text is scored."""

    model_config = ConfigDict(extra="ignore")

    text: str


class RerankRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str
    query: str = Field(min_length=1)
    documents: list[str | RerankDocument] = Field(max_length=MAX_RERANK_DOCUMENTS)
    top_n: int | None = Field(default=None, ge=1)
    return_documents: bool = False
    truncate: bool = True  # false: a document too long for the context is an error
    keep_alive: float | str | None = None
    options: dict[str, Any] | None = None

    def texts(self) -> list[str]:
        return [d if isinstance(d, str) else d.text for d in self.documents]


class RerankResult(BaseModel):
    index: int
    relevance_score: float
    document: RerankDocument | None = None  # with return_documents


class RerankUsage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class RerankMeta(BaseModel):
    """Cohere's ``meta``: its clients show the warnings (documents cut to fit)."""

    warnings: list[str] = Field(default_factory=list)


class RerankResponse(BaseModel):
    id: str
    object: Literal["list"] = "list"
    model: str
    results: list[RerankResult]
    usage: RerankUsage
    truncated: list[int] = Field(default_factory=list)  # documents cut to fit, by index
    meta: RerankMeta = Field(default_factory=RerankMeta)


class NativeRerankResponse(BaseModel):
    model: str
    results: list[RerankResult]
    truncated: list[int] = Field(default_factory=list)
    total_duration: int
    load_duration: int
    prompt_eval_count: int
