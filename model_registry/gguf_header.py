"""A bounded reader for the header of a GGUF file that is not trusted.

A GGUF header is a run of counts, lengths and offsets that a truncated or hostile file can set
to anything. ``gguf.GGUFReader`` maps the whole file and believes every one of them, so this
parser checks each count against a fixed cap and against the bytes left in the file *before*
anything is read or allocated, and counts big arrays (the tokenizer's 150k tokens and merges)
without keeping them. Each tensor's name, type, shape and size are kept (a memory plan sums them
by layer and kind), up to a fixed number of tensors: past it they are counted, not listed. The
tables (value types, quantization block sizes) come from the ``gguf`` package. Every problem
with the file surfaces as :class:`GGUFError`, naming no path.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Protocol

import gguf

from localllm.model_registry.errors import GGUFError

__all__ = ["OMITTED", "GGUFHeader", "SeekableReader", "TensorInfo", "parse_header"]

_MAX_TENSORS = 1_000_000
_MAX_KV = 100_000
_MAX_STRING = 64 << 20  # longest single string (a key, value or array element)
_MAX_TENSOR_NAME = 63  # ggml's GGML_MAX_NAME (64) less the terminating NUL
_MAX_DIMS = 4  # ggml's GGML_MAX_DIMS; the gguf package does not export it
_KEEP_ARRAY = 256  # arrays longer than this are counted, not kept
_KEEP_STRING = 1 << 20  # strings longer than this are skipped, not kept
_KEEP_BUDGET = 32 << 20  # total string bytes kept per file
_KEEP_TENSORS = 65_536  # tensor infos listed per file (a 671B MoE has about 1,900)
_CHUNK = 1 << 16

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_V = gguf.GGUFValueType
_SCALARS: dict[int, struct.Struct] = {
    _V.UINT8: struct.Struct("<B"),
    _V.INT8: struct.Struct("<b"),
    _V.UINT16: struct.Struct("<H"),
    _V.INT16: struct.Struct("<h"),
    _V.UINT32: struct.Struct("<I"),
    _V.INT32: struct.Struct("<i"),
    _V.FLOAT32: struct.Struct("<f"),
    _V.BOOL: struct.Struct("<?"),
    _V.UINT64: struct.Struct("<Q"),
    _V.INT64: struct.Struct("<q"),
    _V.FLOAT64: struct.Struct("<d"),
}


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """One tensor of the file: its name, ggml type (``gguf.GGMLQuantizationType``), dimensions
    in ggml's order (``ne[0]`` first: a row's length) and the bytes of its data."""

    name: str
    ggml_type: int
    dims: tuple[int, ...]
    n_bytes: int


@dataclass
class GGUFHeader:
    """The parts of a header that :mod:`localllm.model_registry.gguf_info` and
    :mod:`localllm.model_registry.model_shape` interpret."""

    version: int
    kv_count: int
    tensor_count: int
    values: dict[str, object]
    array_lengths: dict[str, int]
    parameter_count: int
    weight_elements: dict[int, int]  # elements per ggml type, tensors of 2+ dimensions
    other_elements: dict[int, int]  # the same for vectors (norms, biases)
    tensors: list[TensorInfo] = field(default_factory=list)  # in file order, at most a cap
    tensor_bytes: int = 0  # all tensors' data, listed or not


class _Omitted:
    """Stands in for a value that was skipped because it is too big to keep."""


OMITTED = _Omitted()


class SeekableReader(Protocol):
    """A binary stream :func:`parse_header` reads: a file, or a window onto one on the hub."""

    def seek(self, offset: int, whence: int = 0, /) -> int: ...

    def read(self, size: int = -1, /) -> bytes: ...


def parse_header(stream: SeekableReader, size: int) -> GGUFHeader:
    """The header of the GGUF file open as ``stream`` (``size`` bytes long)."""
    try:
        return _parse(_Cursor(stream, size))
    except GGUFError:
        raise
    except (struct.error, IndexError, OverflowError, UnicodeError, ValueError) as exc:
        raise GGUFError("GGUF file is malformed") from exc


def _parse(cur: _Cursor) -> GGUFHeader:
    version, tensor_count, kv_count = _read_preamble(cur)
    header = GGUFHeader(version, kv_count, tensor_count, {}, {}, 0, {}, {})
    budget = [_KEEP_BUDGET]
    for _ in range(kv_count):
        key = _read_key(cur)
        if key in header.values:
            raise GGUFError(f"GGUF file has a duplicate key {key[:80]!r}")
        header.values[key] = _read_value(cur, key, header, budget)
    alignment = _alignment(header.values)
    data_end = _read_tensor_infos(cur, header, alignment)
    data_start = -(-cur.pos // alignment) * alignment if tensor_count else cur.pos
    if data_start + data_end > cur.size:
        raise GGUFError("GGUF file is truncated: tensor data ends past the end of the file")
    return header


def _read_preamble(cur: _Cursor) -> tuple[int, int, int]:
    if cur.size == 0:
        raise GGUFError("file is not a GGUF model (it is empty)")
    if cur.size < 4 or cur.read(4, "magic") != b"GGUF":
        raise GGUFError("file is not a GGUF model (bad magic)")
    version = cur.uint(_U32, "the header")
    if version & 0xFFFF == 0 and version:
        raise GGUFError("big-endian GGUF files are not supported")
    if version not in (2, 3):
        raise GGUFError(f"unsupported GGUF version {version} (supported: 2 and 3)")
    tensor_count = cur.uint(_U64, "the header")
    kv_count = cur.uint(_U64, "the header")
    if tensor_count > _MAX_TENSORS or tensor_count * 24 > cur.remaining:
        raise GGUFError(f"GGUF header claims an impossible number of tensors ({tensor_count})")
    if kv_count > _MAX_KV or kv_count * 13 > cur.remaining:
        raise GGUFError(f"GGUF header claims an impossible number of metadata keys ({kv_count})")
    return version, tensor_count, kv_count


def _read_key(cur: _Cursor) -> str:
    length = cur.uint(_U64, "a metadata key")
    if length == 0 or length > _KEEP_STRING:
        raise GGUFError(f"GGUF metadata key has an impossible length ({length})")
    return cur.read(length, "a metadata key").decode("utf-8", "replace")


def _read_value(cur: _Cursor, key: str, header: GGUFHeader, budget: list[int]) -> object:
    vtype = cur.uint(_U32, "metadata")
    if vtype == _V.ARRAY:
        return _read_array(cur, key, header, budget)
    return _read_item(cur, vtype, budget)


def _read_item(cur: _Cursor, vtype: int, budget: list[int]) -> object:
    scalar = _SCALARS.get(vtype)
    if scalar is not None:
        return cur.unpack(scalar, "metadata")[0]
    if vtype != _V.STRING:
        raise GGUFError(f"GGUF metadata has an unknown value type ({vtype})")
    length = cur.uint(_U64, "a metadata string")
    _check_string_length(cur, length)
    if length > _KEEP_STRING or length > budget[0]:
        cur.skip(length, "a metadata string")
        return OMITTED
    budget[0] -= length
    return cur.read(length, "a metadata string").decode("utf-8", "replace")


def _read_array(cur: _Cursor, key: str, header: GGUFHeader, budget: list[int]) -> object:
    itype = cur.uint(_U32, "a metadata array")
    count = cur.uint(_U64, "a metadata array")
    if itype == _V.ARRAY:
        raise GGUFError("GGUF metadata has a nested array, which is not supported")
    item_size = _SCALARS[itype].size if itype in _SCALARS else 8
    if itype not in _SCALARS and itype != _V.STRING:
        raise GGUFError(f"GGUF metadata has an unknown array item type ({itype})")
    if count * item_size > cur.remaining:
        raise GGUFError(
            f"GGUF file is truncated: a metadata array of {count} items ends past the end "
            "of the file"
        )
    header.array_lengths[key] = count
    if count > _KEEP_ARRAY:
        if itype == _V.STRING:
            cur.skip_strings(count)
        else:
            cur.skip(count * item_size, "a metadata array")
        return OMITTED
    items = [_read_item(cur, itype, budget) for _ in range(count)]
    return OMITTED if any(item is OMITTED for item in items) else items


def _check_string_length(cur: _Cursor, length: int) -> None:
    if length > _MAX_STRING:
        raise GGUFError(f"GGUF metadata has an impossibly long string ({length} bytes)")
    if length > cur.remaining:
        raise GGUFError("GGUF file is truncated: a metadata string ends past the end of the file")


def _alignment(values: dict[str, object]) -> int:
    alignment = values.get(gguf.Keys.General.ALIGNMENT, gguf.GGUF_DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or isinstance(alignment, bool):
        raise GGUFError("GGUF general.alignment is not an integer")
    if alignment <= 0 or alignment & (alignment - 1):
        raise GGUFError(f"GGUF general.alignment {alignment} is not a power of two")
    return alignment


def _read_tensor_infos(cur: _Cursor, header: GGUFHeader, alignment: int) -> int:
    """Check every tensor's shape, type and offset; return where the last one's data ends."""
    names: set[bytes] = set()
    data_end = 0
    for _ in range(header.tensor_count):
        name = _read_tensor_name(cur, names)
        n_dims = cur.uint(_U32, "tensor info")
        if n_dims > _MAX_DIMS:
            raise GGUFError(f"GGUF tensor has {n_dims} dimensions (at most {_MAX_DIMS} allowed)")
        dims = [cur.uint(_U64, "tensor info") for _ in range(n_dims)]
        ggml_type = cur.uint(_U32, "tensor info")
        offset = cur.uint(_U64, "tensor info")
        elements, nbytes = _tensor_size(name, dims, ggml_type, cur.size)
        if len(header.tensors) < _KEEP_TENSORS:
            header.tensors.append(TensorInfo(name, ggml_type, tuple(dims), nbytes))
        header.tensor_bytes += nbytes
        if offset % alignment:
            raise GGUFError(f"GGUF tensor {name!r} has a misaligned data offset")
        data_end = max(data_end, offset + nbytes)
        if data_end > cur.size:
            raise GGUFError(
                f"GGUF file is truncated: tensor {name!r} data ends past the end of the file"
            )
        header.parameter_count += elements
        tally = header.weight_elements if n_dims >= 2 else header.other_elements
        tally[ggml_type] = tally.get(ggml_type, 0) + elements
    return data_end


def _read_tensor_name(cur: _Cursor, names: set[bytes]) -> str:
    length = cur.uint(_U64, "tensor info")
    if length > _MAX_TENSOR_NAME:
        raise GGUFError(f"GGUF tensor name is too long ({length} bytes)")
    raw = cur.read(length, "tensor info")
    if raw in names:
        raise GGUFError(f"GGUF file has a duplicate tensor {raw.decode('utf-8', 'replace')!r}")
    names.add(raw)
    return raw.decode("utf-8", "replace")


def _tensor_size(name: str, dims: list[int], ggml_type: int, file_size: int) -> tuple[int, int]:
    try:
        block_size, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(ggml_type)]
    except (ValueError, KeyError):
        raise GGUFError(f"GGUF tensor {name!r} has an unknown type ({ggml_type})") from None
    if dims and dims[0] % block_size:
        raise GGUFError(f"GGUF tensor {name!r} has rows that are not whole quantization blocks")
    elements = 1
    for dim in dims:
        elements *= dim
    nbytes = elements // block_size * type_size
    if nbytes > file_size:
        raise GGUFError(f"GGUF tensor {name!r} is larger than the whole file")
    return elements, nbytes


class _Cursor:
    """Little-endian reads from a file, never past its size, through a small window."""

    def __init__(self, stream: SeekableReader, size: int):
        self._stream = stream
        self.size = size
        self.pos = 0
        self._buf = b""
        self._buf_start = 0

    @property
    def remaining(self) -> int:
        return self.size - self.pos

    def unpack(self, fmt: struct.Struct, what: str) -> tuple[Any, ...]:
        """The values ``fmt`` reads (their types are the format's, as for ``struct``)."""
        offset = self._window(fmt.size, what)
        self.pos += fmt.size
        return fmt.unpack_from(self._buf, offset)

    def uint(self, fmt: struct.Struct, what: str) -> int:
        """The one unsigned integer ``fmt`` (``_U32`` or ``_U64``) reads."""
        value: int = self.unpack(fmt, what)[0]
        return value

    def read(self, n: int, what: str) -> bytes:
        offset = self._window(n, what)
        self.pos += n
        return self._buf[offset : offset + n]

    def skip(self, n: int, what: str) -> None:
        if n > self.remaining:
            raise _truncated(what)
        self.pos += n

    def skip_strings(self, count: int) -> None:
        """Skip ``count`` length-prefixed strings (the hot loop for a 150k-token vocabulary)."""
        unpack_from = _U64.unpack_from
        for _ in range(count):
            offset = self.pos - self._buf_start
            if offset >= 0 and offset + 8 <= len(self._buf):
                (length,) = unpack_from(self._buf, offset)
                self.pos += 8
            else:
                length = self.uint(_U64, "a metadata array")
            if length > _MAX_STRING or length > self.size - self.pos:
                _check_string_length(self, length)
            self.pos += length

    def _window(self, n: int, what: str) -> int:
        if n > self.remaining:
            raise _truncated(what)
        offset = self.pos - self._buf_start
        if offset < 0 or offset + n > len(self._buf):
            self._stream.seek(self.pos)
            self._buf = self._stream.read(max(n, _CHUNK))
            self._buf_start = self.pos
            offset = 0
            if len(self._buf) < n:  # the file shrank while we were reading it
                raise _truncated(what)
        return offset


def _truncated(what: str) -> GGUFError:
    return GGUFError(f"GGUF file is truncated: {what} ends past the end of the file")
