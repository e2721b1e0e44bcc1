"""Transcription on a remote that serves OpenAI's audio API (vLLM, LocalAI, speaches, another
localllm): the upload is sent on as a multipart form, on the least busy healthy replica, its
file streamed from disk a MiB at a time off the event loop, and the answer (JSON, text,
subtitles or a stream) comes back as the remote wrote it. Ollama has no such API."""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from anyio import to_thread

from localllm.daemon.errors import BadRequestError, RemoteError
from localllm.daemon.remotes.calls import acquire, release
from localllm.daemon.remotes.hops import HEADER, hops_so_far
from localllm.daemon.remotes.replicas import ReplicaSet
from localllm.daemon.remotes.state import RemoteState

__all__ = ["remote_transcription"]

_CHUNK = 1 << 20
_UNSAFE = re.compile(r"[^A-Za-z0-9._ -]")  # of a file name inside a form's quoted header


@asynccontextmanager
async def remote_transcription(
    client: httpx.AsyncClient,
    remote: RemoteState,
    path: str,
    fields: Sequence[tuple[str, str]],
    audio: Path,
    filename: str,
) -> AsyncIterator[httpx.Response]:
    """The remote's response to the form (``fields`` with ``model`` its id, and the file),
    its body still to read, within the remote's timeout; a status other than 200 is a
    RemoteError that quotes the start of the remote's message."""
    if remote.config.kind == "ollama":
        raise BadRequestError(
            f"remote {remote.name!r} is an Ollama server, which has no transcription API"
        )
    deadline = time.monotonic() + remote.config.timeout_seconds
    replica = await acquire(remote, set(), deadline)
    boundary = secrets.token_hex(16)
    headers = {
        "content-type": f"multipart/form-data; boundary={boundary}",
        HEADER: str(hops_so_far() + 1),
    }
    if remote.key:
        headers["authorization"] = f"Bearer {remote.key}"
    body = _form(boundary, fields, audio, _UNSAFE.sub("_", filename) or "audio")
    try:
        async with asyncio.timeout(remote.config.timeout_seconds):
            url = replica.url + path
            request = client.build_request("POST", url, content=body, headers=headers)
            response = await client.send(request, stream=True)
            try:
                if response.status_code != 200:
                    said = (await response.aread())[:300].decode(errors="replace")
                    raise RemoteError(
                        f"remote {remote.name!r} answered {response.status_code} to a "
                        f"transcription: {said}"
                    )
                yield response
            finally:
                await response.aclose()
    except (httpx.RequestError, TimeoutError) as error:
        ReplicaSet.failed(replica, f"transcription failed ({type(error).__name__})")
        raise RemoteError(f"remote {remote.name!r} failed ({type(error).__name__})") from None
    finally:
        await release(remote, replica)


async def _form(
    boundary: str, fields: Sequence[tuple[str, str]], audio: Path, filename: str
) -> AsyncIterator[bytes]:
    """``multipart/form-data``: the text fields, then the file read off the event loop."""
    for name, value in fields:
        yield (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
        ).encode()
    yield (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"'
        "\r\nContent-Type: application/octet-stream\r\n\r\n"
    ).encode()
    with audio.open("rb") as file:
        while chunk := await to_thread.run_sync(file.read, _CHUNK):
            yield chunk
    yield f"\r\n--{boundary}--\r\n".encode()
