"""``GET /api/hub/catalog``: the curated short names, with what to show before a download.

No network is involved (the catalog ships with the daemon, or ``LOCALLLM_CATALOG`` replaces
it), so a front end can list these models, sized and described, even offline.
"""

from __future__ import annotations

from pydantic import BaseModel

__all__ = ["CatalogModel", "CatalogResponse"]


class CatalogModel(BaseModel):
    name: str  # the short name to pull (qwen2.5:0.5b)
    aliases: list[str] = []
    repo: str  # the Hugging Face repository it comes from
    quant: str
    kind: str  # "chat", "embedding", "vision" or "rerank"
    capabilities: list[str] = []  # beyond chat: vision, tools, thinking, embedding, rerank
    parameter_size: str
    size: int  # bytes, approximate
    description: str


class CatalogResponse(BaseModel):
    models: list[CatalogModel]
