"""Rerank on a remote: ``/v1/rerank`` (llama-server, vLLM and the OpenAI kind's others) or
``/api/rerank`` (another localllm daemon), passed through on the least busy healthy replica.

Every engine answers ``results: [{index, relevance_score}]``, sorted by score and perhaps cut
to ``top_n``: the remote is asked for every document, and the scores come back in the
request's order.
"""

from __future__ import annotations

import math
from typing import cast

import httpx

from localllm.daemon.errors import RemoteError
from localllm.daemon.inference.jobs import Rerankings, RerankJob
from localllm.daemon.remotes.json_post import post_json
from localllm.daemon.remotes.state import RemoteState
from localllm.daemon.remotes.stream_state import JsonObject

__all__ = ["remote_rerank"]


async def remote_rerank(
    client: httpx.AsyncClient, remote: RemoteState, job: RerankJob, remote_id: str
) -> Rerankings:
    path = "/api/rerank" if remote.config.kind == "ollama" else "/v1/rerank"
    documents = list(job.documents)
    body: dict[str, object] = {"model": remote_id, "query": job.query, "documents": documents}
    body |= {"top_n": len(documents), "return_documents": False}
    data = await post_json(client, remote, path, body, "rerank")
    return _parse(data, job, remote.name)


def _parse(data: object, job: RerankJob, name: str) -> Rerankings:
    answer = cast(JsonObject, data)  # JSON of any shape: a wrong one raises below
    scores: list[float | None] = [None] * len(job.documents)
    try:
        for row in answer["results"]:
            index = int(row["index"])
            if not 0 <= index < len(scores):
                raise IndexError(index)
            scores[index] = float(row["relevance_score"])
        usage = answer.get("usage") or {}
        counted = usage.get("prompt_tokens") or usage.get("total_tokens")
        tokens = int(counted or answer.get("prompt_eval_count") or 0)  # the native answer's
        truncated = tuple(int(i) for i in answer.get("truncated") or ())
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        raise RemoteError(f"remote {name!r} sent rerank results in an unknown shape") from None
    scored = [score for score in scores if score is not None]
    if len(scored) < len(scores) or not all(math.isfinite(score) for score in scored):
        raise RemoteError(f"remote {name!r} did not score every document")
    return Rerankings(job.model, scored, tokens, truncated)
