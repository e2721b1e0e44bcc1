"""One JSON request to a remote that answers with one JSON document (embeddings, rerank),
on the least busy healthy replica; a replica that cannot be reached is marked failed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

import httpx

from localllm.daemon.errors import RemoteError
from localllm.daemon.remotes.calls import acquire, release
from localllm.daemon.remotes.replicas import ReplicaSet
from localllm.daemon.remotes.state import RemoteState
from localllm.daemon.remotes.transport import json_body

__all__ = ["post_json"]


async def post_json(
    client: httpx.AsyncClient, remote: RemoteState, path: str, body: Mapping[str, object], what: str
) -> object:
    """The remote's answer to ``body`` at ``path``; ``what`` names the call in errors."""
    deadline = time.monotonic() + remote.config.timeout_seconds
    replica = await acquire(remote, set(), deadline)
    headers = {"authorization": f"Bearer {remote.key}"} if remote.key else {}
    try:
        async with asyncio.timeout(remote.config.timeout_seconds):
            request = client.build_request("POST", replica.url + path, json=body, headers=headers)
            response = await client.send(request, stream=True)
            try:
                if response.status_code != 200:
                    raise RemoteError(
                        f"remote {remote.name!r} answered {response.status_code} to {what}"
                    )
                return await json_body(response, remote.name)
            finally:
                await response.aclose()
    except (httpx.RequestError, TimeoutError) as error:
        ReplicaSet.failed(replica, f"{what} failed ({type(error).__name__})")
        raise RemoteError(f"remote {remote.name!r} failed ({type(error).__name__})") from None
    finally:
        await release(remote, replica)
