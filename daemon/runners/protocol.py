"""The wire between the daemon and a runner process: framed JSON over the runner's pipes.

A frame is a 4-byte big-endian length, then that many bytes of UTF-8 JSON. Pipes, not a TCP
port: no port races, and no other local user can reach a runner. Many requests share the pipe,
each message naming its request ``id``.

What the frames say, and how each is checked, is ``frames``: typed in, typed out.
"""

from __future__ import annotations

import asyncio
import json
import os
import struct
from typing import Any, BinaryIO, cast

from .frames import Event, ProtocolError, Request, decode_event, encode

__all__ = [
    "MAX_FRAME_BYTES",
    "FrameReader",
    "FrameWriter",
    "ProtocolError",
    "encode_frame",
    "read_event",
    "read_frame",
]

MAX_FRAME_BYTES = 64 * 1024 * 1024  # a bound, so a corrupt length cannot make us allocate GBs
_HEADER = struct.Struct(">I")
_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)  # json.dumps builds one a call


def encode_frame(message: dict[str, Any]) -> bytes:
    """UTF-8 as it is: ASCII escapes made a 24 MB prompt in "é" a 72 MB frame. A lone
    surrogate (JSON lets a client send ``"\\ud800"``) cannot be UTF-8 and becomes U+FFFD."""
    body = _utf8(_JSON.encode(message))
    if len(body) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds {MAX_FRAME_BYTES}")
    return _HEADER.pack(len(body)) + body


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:  # lone surrogates: each becomes U+FFFD
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode()


def _frame_size(header: bytes) -> int:
    size = int(_HEADER.unpack(header)[0])
    if size > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {size} bytes exceeds {MAX_FRAME_BYTES}")
    return size


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message, or None at a clean end of stream (the process closed its stdout)."""
    try:
        header = await reader.readexactly(_HEADER.size)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise ProtocolError("stream ended inside a frame header") from None
        return None
    size = _frame_size(header)
    try:
        body = await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        raise ProtocolError("stream ended inside a frame") from None
    return cast("dict[str, Any]", json.loads(body))  # ``frames`` checks its shape


async def read_event(reader: asyncio.StreamReader) -> Event | None:
    """The runner's next event, checked (``frames``), or None at a clean end of stream."""
    message = await read_frame(reader)
    return None if message is None else decode_event(message)


class FrameReader:
    """Blocking reader for the runner side (its stdin)."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream

    def read(self) -> dict[str, Any] | None:
        header = self._stream.read(_HEADER.size)
        if not header:
            return None
        if len(header) < _HEADER.size:
            raise ProtocolError("stream ended inside a frame header")
        size = _frame_size(header)
        body = self._stream.read(size)
        if len(body) < size:
            raise ProtocolError("stream ended inside a frame")
        return cast("dict[str, Any]", json.loads(body))  # ``frames`` checks its shape


class FrameWriter:
    """Collects frames and writes them with one system call per flush (one per decode step)."""

    def __init__(self, fd: int):
        self._fd = fd
        self._pending: list[bytes] = []

    def send(self, frame: Request | Event) -> None:
        self._pending.append(encode_frame(encode(frame)))

    def flush(self) -> None:
        if not self._pending:
            return
        data = memoryview(b"".join(self._pending))
        self._pending.clear()
        while data:
            data = data[os.write(self._fd, data) :]
