"""What a CTranslate2 ``model.bin`` says about itself: its spec (``WhisperSpec``), and from
its variables' shapes how many parameters it has and the type most of its bytes are in.

Only headers are read (each variable's name, shape, type and byte count; its data is
skipped), the layout CTranslate2's own loader reads. Every count is bounded and every skip
checked against the file's size, so a truncated or hostile file is a :class:`ModelKindError`,
never a huge allocation or a read past its end.
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass
from typing import BinaryIO

from localllm.model_registry.errors import ModelKindError

__all__ = ["WHISPER_SPEC", "ModelBinInfo", "read_model_bin"]

WHISPER_SPEC = "WhisperSpec"
# CTranslate2's DataType ids (include/ctranslate2/types.h), from binary version 4 on
_DTYPES = ("float32", "int8", "int16", "int32", "float16", "bfloat16")
_ITEM_SIZES = {"float32": 4, "int8": 1, "int16": 2, "int32": 4, "float16": 2, "bfloat16": 2}
_BY_ITEM_SIZE = {4: "float32", 2: "int16", 1: "int8"}  # versions 2-3 store an item size
_NEWEST_VERSION = 6
_MAX_VARIABLES = 100_000
_MAX_RANK = 8
_MAX_STRING = 4096


@dataclass(frozen=True, slots=True)
class ModelBinInfo:
    spec: str  # the model spec's class name: "WhisperSpec" for Whisper
    revision: int
    parameter_count: int
    dtype: str  # the type most of its bytes are stored in: "float16", "int8"...


def read_model_bin(stream: BinaryIO) -> ModelBinInfo:
    """Read ``stream``'s header (from its start); the stream's position is left anywhere."""
    reader = _Reader(stream, os.fstat(stream.fileno()).st_size)
    version = reader.u32()
    if not 2 <= version <= _NEWEST_VERSION:
        raise ModelKindError(f"model.bin is not a CTranslate2 model this version reads ({version})")
    spec, revision = reader.string(), reader.u32()
    count = reader.u32()
    if count > _MAX_VARIABLES:
        raise ModelKindError(f"model.bin claims {count:,} variables")
    parameters, bytes_by_type = 0, dict.fromkeys(_DTYPES, 0)
    for _ in range(count):
        reader.string()  # the variable's name
        rank = reader.u8()
        if rank > _MAX_RANK:
            raise ModelKindError("model.bin has a variable of implausible rank")
        elements = math.prod(reader.u32() for _ in range(rank))
        dtype = _dtype(reader.u8(), version)
        size = reader.u32()
        if size != elements * _ITEM_SIZES[dtype]:
            raise ModelKindError("model.bin has a variable whose size does not match its shape")
        reader.skip(size)
        parameters += elements
        bytes_by_type[dtype] += size
    main = max(bytes_by_type, key=lambda name: bytes_by_type[name])
    return ModelBinInfo(spec.removesuffix("\0"), revision, parameters, main)


def _dtype(value: int, version: int) -> str:
    if version >= 4 and value < len(_DTYPES):
        return _DTYPES[value]
    if version < 4 and value in _BY_ITEM_SIZE:
        return _BY_ITEM_SIZE[value]
    raise ModelKindError(f"model.bin has a variable of unknown type {value}")


class _Reader:
    """Little-endian fields of a file whose size is known, never read past its end."""

    def __init__(self, stream: BinaryIO, size: int):
        self._stream, self._size = stream, size
        self._position = 0
        stream.seek(0)

    def u8(self) -> int:
        return int(self._take(1)[0])

    def u32(self) -> int:
        return int(struct.unpack("<I", self._take(4))[0])

    def string(self) -> str:
        length = int(struct.unpack("<H", self._take(2))[0])
        if length > _MAX_STRING:
            raise ModelKindError("model.bin has an implausibly long name")
        return self._take(length).decode("utf-8", errors="replace")

    def skip(self, count: int) -> None:
        if self._position + count > self._size:
            raise ModelKindError("model.bin is truncated")
        self._position += count
        self._stream.seek(self._position)

    def _take(self, count: int) -> bytes:
        data = self._stream.read(count) if self._position + count <= self._size else b""
        if len(data) != count:
            raise ModelKindError("model.bin is truncated")
        self._position += count
        return data
