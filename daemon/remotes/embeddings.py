"""Embeddings from a remote: ``/v1/embeddings`` (OpenAI kind) or ``/api/embed`` (Ollama),
passed through on the least busy healthy replica."""

from __future__ import annotations

import asyncio
from typing import cast

import httpx

from localllm.daemon.errors import RemoteError
from localllm.daemon.inference.jobs import Embeddings, EmbedJob
from localllm.daemon.remotes.json_post import post_json
from localllm.daemon.remotes.state import RemoteState
from localllm.daemon.remotes.stream_state import JsonObject

__all__ = ["remote_embeddings"]


async def remote_embeddings(
    client: httpx.AsyncClient, remote: RemoteState, job: EmbedJob, remote_id: str, model: str
) -> Embeddings:
    ollama = remote.config.kind == "ollama"
    path = "/api/embed" if ollama else "/v1/embeddings"
    body = {"model": remote_id, "input": list(job.inputs)}
    data = await post_json(client, remote, path, body, "embeddings")
    return await asyncio.to_thread(_parse, data, ollama, model, remote.name)  # a million floats


def _parse(data: object, ollama: bool, model: str, name: str) -> Embeddings:
    answer = cast(JsonObject, data)  # JSON of any shape: a wrong one raises below
    try:
        if ollama:
            vectors = [[float(x) for x in v] for v in answer["embeddings"]]
            tokens = int(answer.get("prompt_eval_count") or 0)
        else:
            rows = sorted(answer["data"], key=lambda row: row.get("index", 0))
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
            tokens = int((answer.get("usage") or {}).get("prompt_tokens") or 0)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise RemoteError(f"remote {name!r} sent embeddings in an unknown shape") from None
    return Embeddings(model, vectors, tokens)
