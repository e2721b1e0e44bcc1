"""One generation on a remote, as a stream of ``Delta`` items ending in ``Finished``.

The request goes to the healthy replica with the fewest requests in flight (waiting while all
are at their concurrency limit). Until the first delta has come, any failure (no connection,
a 5xx, a timeout, a malformed answer) ejects that replica and the request is sent again to
another one, so the client never sees it; after that, a failure ends the stream with a
``RemoteError`` that each API frames as its own error event.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, Callable

import httpx

from localllm.daemon.api.remotes import RemoteKind
from localllm.daemon.errors import (
    BadRequestError,
    NotFoundError,
    RemoteError,
    RemoteLoopError,
    RemoteUnavailableError,
)
from localllm.daemon.inference.generation import Delta, Finished, GenerationStats
from localllm.daemon.inference.jobs import GenerationJob
from localllm.daemon.remotes import ollama_wire, openai_wire
from localllm.daemon.remotes.hops import HEADER, MAX_HOPS, hops_so_far
from localllm.daemon.remotes.replicas import Replica, ReplicaSet
from localllm.daemon.remotes.state import RemoteState
from localllm.daemon.remotes.stats import RemoteStats
from localllm.daemon.remotes.stream_state import JsonObject, StreamState
from localllm.daemon.remotes.transport import check_content_type, lines

__all__ = ["acquire", "release", "remote_stream"]

_RETRYABLE = (httpx.RequestError, RemoteError, TimeoutError)
_STREAM_TYPES: dict[RemoteKind, tuple[str, ...]] = {
    "openai": ("text/event-stream",),
    "ollama": ("application/x-ndjson", "application/json"),
}
Reader = Callable[[bytes, StreamState], list[Delta]]
_INLINE_LINE = 64 << 10  # a longer line is parsed in a worker thread


def _request(
    remote: RemoteState, replica: Replica, job: GenerationJob, remote_id: str
) -> tuple[str, JsonObject, dict[str, str], Reader]:
    if remote.config.kind == "ollama":
        url, body, reader = (
            "/api/chat",
            ollama_wire.chat_body(job, remote_id),
            ollama_wire.read_line,
        )
    else:
        url, body = "/v1/chat/completions", openai_wire.chat_body(job, remote_id)
        reader = openai_wire.read_chunk
    headers = {HEADER: str(hops_so_far() + 1)}
    if remote.key:
        headers["authorization"] = f"Bearer {remote.key}"
    return replica.url + url, body, headers, reader


async def acquire(remote: RemoteState, exclude: set[str], deadline: float) -> Replica:
    async with remote.freed:
        while True:
            replica = remote.replicas.pick(exclude)
            if replica is not None:
                replica.in_flight += 1
                return replica
            if not remote.replicas.busy(exclude):
                raise RemoteUnavailableError(_unavailable(remote))
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    await remote.freed.wait()
            except TimeoutError:
                raise RemoteUnavailableError(
                    f"remote {remote.name!r} stayed busy past its timeout"
                ) from None


def _unavailable(remote: RemoteState) -> str:
    why = next((r.error for r in remote.replicas.replicas if r.error), None)
    because = f" (last error: {why})" if why else ""
    return f"remote {remote.name!r} has no healthy replica{because}; see `localllm remote ls`"


async def release(remote: RemoteState, replica: Replica) -> None:
    replica.in_flight -= 1
    async with remote.freed:
        remote.freed.notify()


async def _refusal(response: httpx.Response, remote: str) -> Exception:
    """A 4xx answer as an error the client can act on (the remote's own words, clipped)."""
    body = b""
    async for chunk in response.aiter_raw():
        body += chunk
        if len(body) > 65536:
            break
    try:
        error = json.loads(body).get("error")
        said = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        said = None
    said = str(said or body[:200].decode("utf-8", "replace")).strip()[:300]
    status = response.status_code
    if status in (401, 403):
        return RemoteError(f"remote {remote!r} refused its API key ({status})")
    message = f"remote {remote!r} refused the request ({status}): {said}"
    return NotFoundError(message) if status == 404 else BadRequestError(message)


async def remote_stream(
    client: httpx.AsyncClient,
    stats: RemoteStats,
    remote: RemoteState,
    job: GenerationJob,
    remote_id: str,
) -> AsyncGenerator[Delta | Finished]:
    if hops_so_far() >= MAX_HOPS:
        raise RemoteLoopError(hops_so_far())
    started = time.monotonic()
    deadline = started + remote.config.timeout_seconds
    exclude: set[str] = set()
    first: list[float] = []
    stats.requests.labels(remote.name).inc()
    while True:
        replica = await acquire(remote, exclude, deadline)
        try:
            url, body, headers, reader = _request(remote, replica, job, remote_id)
            state = StreamState(remote.name)
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                request = client.build_request("POST", url, json=body, headers=headers)
                response = await client.send(request, stream=True)
            try:
                if response.status_code == 508:  # a loop further on: retrying cannot help
                    raise RemoteLoopError(MAX_HOPS)
                if response.status_code >= 500 or response.status_code == 429:
                    raise RemoteError(f"remote {remote.name!r} answered {response.status_code}")
                if response.status_code >= 400:
                    raise await _refusal(response, remote.name)
                check_content_type(response, remote.name, _STREAM_TYPES[remote.config.kind])
                async for line in lines(response, remote.name, deadline):
                    replica.answered_at = time.monotonic()
                    for delta in await _read(reader, line, state):
                        if not first:
                            first.append(time.monotonic())
                            stats.ttft.labels(remote.name).observe(first[0] - started)
                        yield delta
                    if state.done:
                        break
                if not state.done and state.reason is None:
                    raise RemoteError(f"remote {remote.name!r} ended its stream early")
            finally:
                await response.aclose()
            ReplicaSet.succeeded(replica)
            stats.seconds.labels(remote.name).observe(time.monotonic() - started)
            finished = _finished(state, started, first)
            break
        except _RETRYABLE as error:
            ReplicaSet.failed(replica, _reason(error))
            stats.errors.labels(remote.name, "stream" if first else "start").inc()
            exclude.add(replica.url)
            if first or time.monotonic() >= deadline or not remote.replicas.any_left(exclude):
                raise _as_remote_error(error, remote.name) from None
        finally:
            await release(remote, replica)
    yield finished  # with the replica's slot already free


async def _read(reader: Reader, line: bytes, state: StreamState) -> list[Delta]:
    """The deltas in one line of the remote's stream, read in a worker thread when the line is
    big; an answer of the wrong shape (``"choices": 1``) is the remote's error, so the request
    goes to another replica when nothing has streamed yet."""
    try:
        if len(line) < _INLINE_LINE:
            return reader(line, state)
        return await asyncio.to_thread(reader, line, state)
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError) as error:
        raise RemoteError(
            f"remote {state.remote!r} sent an answer of the wrong shape ({type(error).__name__})"
        ) from None


def _reason(error: BaseException) -> str:
    if isinstance(error, RemoteError):
        return str(error)
    if isinstance(error, TimeoutError | httpx.TimeoutException):
        return "timed out"
    return f"connection failed ({type(error).__name__})"


def _as_remote_error(error: BaseException, name: str) -> RemoteError:
    if isinstance(error, RemoteError):
        return error
    return RemoteError(f"remote {name!r} failed: {_reason(error)}")


def _finished(state: StreamState, started: float, first: list[float]) -> Finished:
    now = time.monotonic()
    ttft = (first[0] if first else now) - started
    stats = GenerationStats(
        prompt_tokens=state.prompt_tokens,
        completion_tokens=state.completion_tokens,
        cached_tokens=0,
        load_seconds=0.0,
        prompt_seconds=ttft,
        generation_seconds=now - (first[0] if first else now),
        time_to_first_token=ttft,
        total_seconds=now - started,
    )
    return Finished(state.finish_reason(), stats, state.tool_calls())
