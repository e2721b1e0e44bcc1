"""Embeddings from a remote: ``/v1/embeddings`` (OpenAI kind) or ``/api/embed`` (Ollama),
passed through on the least busy healthy replica."""

from __future__ import annotations

import asyncio
import time

import httpx

from daemon.errors import RemoteError
from daemon.inference.jobs import Embeddings, EmbedJob
from daemon.remotes.calls import acquire, release
from daemon.remotes.replicas import ReplicaSet
from daemon.remotes.state import RemoteState
from daemon.remotes.transport import json_body

__all__ = ["remote_embeddings"]


async def remote_embeddings(
    client: httpx.AsyncClient, remote: RemoteState, job: EmbedJob, remote_id: str, model: str
) -> Embeddings:
    deadline = time.monotonic() + remote.config.timeout_seconds
    replica = await acquire(remote, set(), deadline)
    ollama = remote.config.kind == "ollama"
    path = "/api/embed" if ollama else "/v1/embeddings"
    headers = {"authorization": f"Bearer {remote.key}"} if remote.key else {}
    try:
        async with asyncio.timeout(remote.config.timeout_seconds):
            request = client.build_request(
                "POST", replica.url + path, json={"model": remote_id, "input": list(job.inputs)},
                headers=headers,
            )  # fmt: skip
            response = await client.send(request, stream=True)
            try:
                if response.status_code != 200:
                    raise RemoteError(f"remote {remote.name!r} answered {response.status_code}")
                data = await json_body(response, remote.name)
            finally:
                await response.aclose()
    except (httpx.RequestError, TimeoutError) as error:
        ReplicaSet.failed(replica, f"embeddings failed ({type(error).__name__})")
        raise RemoteError(f"remote {remote.name!r} failed ({type(error).__name__})") from None
    finally:
        await release(remote, replica)
    return await asyncio.to_thread(_parse, data, ollama, model, remote.name)  # a million floats


def _parse(data: object, ollama: bool, model: str, name: str) -> Embeddings:
    try:
        if ollama:
            vectors = [[float(x) for x in v] for v in data["embeddings"]]
            tokens = int(data.get("prompt_eval_count") or 0)
        else:
            rows = sorted(data["data"], key=lambda row: row.get("index", 0))
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
            tokens = int((data.get("usage") or {}).get("prompt_tokens") or 0)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise RemoteError(f"remote {name!r} sent embeddings in an unknown shape") from None
    return Embeddings(model, vectors, tokens)
