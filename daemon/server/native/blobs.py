"""``HEAD|POST /api/blobs/:digest``: uploads into the store, for ``/api/create`` to use.

The digest in the path is validated before anything touches the disk. An upload streams into
the store while it is hashed and is committed only if it hashes to that digest: a mismatch is
a 400 and leaves nothing behind.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

from anyio import from_thread, to_thread
from fastapi import APIRouter, Request
from starlette.requests import ClientDisconnect
from starlette.responses import Response

from localllm.daemon.server.app_state import app_part
from localllm.model_registry.digests import Digest
from localllm.model_registry.store import Store

__all__ = ["router"]

router = APIRouter()


@router.head("/api/blobs/{digest:path}")
async def blob_exists(digest: str, request: Request) -> Response:
    store = app_part(request, "store", Store)
    found = store.blobs.exists(Digest.parse(digest))
    return Response(status_code=200 if found else 404)


@router.post("/api/blobs/{digest:path}")
async def upload_blob(digest: str, request: Request) -> Response:
    expected = Digest.parse(digest)  # before a byte is read or a file is made
    store = app_part(request, "store", Store)
    if store.blobs.exists(expected):
        return Response(status_code=200)
    size = request.headers.get("content-length", "")
    reader = _BodyReader(request.stream())
    try:
        await to_thread.run_sync(
            lambda: store.blobs.write_stream(
                reader, expected=expected, size_hint=int(size) if size.isdigit() else 0
            )
        )
    except ClientDisconnect:  # the upload stopped half way: nothing was stored
        return Response(status_code=400)
    return Response(status_code=201)


class _BodyReader(io.RawIOBase):
    """The request body as a blocking file object, for the store's writer thread."""

    def __init__(self, chunks: AsyncIterator[bytes]):
        self._chunks = chunks
        self._buffer = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while not self._done and (size < 0 or len(self._buffer) < size):
            chunk = from_thread.run(self._next)
            if chunk is None:
                self._done = True
            else:
                self._buffer += chunk
        if size < 0:
            size = len(self._buffer)
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    async def _next(self) -> bytes | None:
        try:
            return await anext(self._chunks)
        except StopAsyncIteration:
            return None
