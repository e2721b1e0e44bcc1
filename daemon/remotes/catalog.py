"""Active health checks, which also refresh each remote's model list: ``GET /v1/models``
(OpenAI kind) or ``GET /api/tags`` (Ollama kind) on every replica, its round trip timed.

They run in the background, so a listing reads the cache and never waits on the network. A
replica that is streaming answers is not checked (they show it is alive, and a failure ejects
it), since some engines, llama-cpp-python's server among them, stop the stream they serve
when another request comes in; one that has gone quiet for 5 s with requests open is."""

from __future__ import annotations

import asyncio
import time

import httpx

from localllm.daemon.api.remotes import RemoteKind
from localllm.daemon.errors import RemoteError
from localllm.daemon.remotes.replicas import Replica, ReplicaSet
from localllm.daemon.remotes.state import RemoteState
from localllm.daemon.remotes.transport import json_body

__all__ = ["refresh"]

_CHECK_TIMEOUT = 5.0
_MAX_MODELS = 1000
_MAX_ID = 256


async def refresh(client: httpx.AsyncClient, remote: RemoteState) -> None:
    """Check every replica at once; the first model list that comes back is kept."""
    now = time.monotonic()
    due = [r for r in remote.replicas.replicas if not _streaming(r, now)]
    found = await asyncio.gather(*(_check(client, remote, r) for r in due))
    ids = next((ids for ids in found if ids is not None), None)
    if ids is not None:
        remote.model_ids = ids
    async with remote.freed:
        remote.freed.notify_all()  # a replica back in service takes waiting requests


def _streaming(replica: Replica, now: float) -> bool:
    """Serving requests and answering them lately: alive, and better left alone."""
    return replica.healthy and replica.in_flight > 0 and now - replica.answered_at < _CHECK_TIMEOUT


async def _check(
    client: httpx.AsyncClient, remote: RemoteState, replica: Replica
) -> tuple[str, ...] | None:
    path = "/api/tags" if remote.config.kind == "ollama" else "/v1/models"
    headers = {"authorization": f"Bearer {remote.key}"} if remote.key else {}
    started = time.perf_counter()
    try:
        async with asyncio.timeout(min(_CHECK_TIMEOUT, remote.config.timeout_seconds)):
            request = client.build_request("GET", replica.url + path, headers=headers)
            response = await client.send(request, stream=True)
            try:
                if response.status_code in (401, 403):
                    raise RemoteError(f"refused its API key ({response.status_code})")
                if response.status_code != 200:
                    raise RemoteError(f"its model list answered {response.status_code}")
                data = await json_body(response, remote.name)
            finally:
                await response.aclose()
        ids = _model_ids(data, remote.config.kind)
    except TimeoutError:
        ReplicaSet.checked(replica, None, "health check timed out")
        return None
    except httpx.TransportError as error:
        ReplicaSet.checked(replica, None, f"unreachable ({type(error).__name__})")
        return None
    except RemoteError as error:
        ReplicaSet.checked(replica, None, str(error))
        return None
    ReplicaSet.checked(replica, round((time.perf_counter() - started) * 1000, 2), None)
    return ids


def _model_ids(data: object, kind: RemoteKind) -> tuple[str, ...]:
    key, field = ("models", "name") if kind == "ollama" else ("data", "id")
    entries = data.get(key) if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise RemoteError(f"its model list has no {key!r} list")
    ids = []
    for entry in entries[:_MAX_MODELS]:
        value = entry.get(field) if isinstance(entry, dict) else None
        if isinstance(value, str) and 0 < len(value) <= _MAX_ID:
            ids.append(value)
    return tuple(ids)
