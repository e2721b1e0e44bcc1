"""GGUF metadata, read from a file that is not trusted.

The header is read by :mod:`localllm.model_registry.gguf_header` in memory bounded by fixed caps;
this module turns it into what the store and ``show`` need (architecture, parameter count, file
type, context length, chat template, ...), with names from the ``gguf`` package's tables.

Every problem with the file surfaces as :class:`GGUFError` with a message that names no path;
an :class:`OSError` from opening or reading the file is passed through unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import BinaryIO

import gguf

from localllm.model_registry.errors import GGUFError
from localllm.model_registry.gguf_header import OMITTED, GGUFHeader, parse_header
from localllm.model_registry.recommended_sampling import recommended_sampling

__all__ = ["GGUFInfo", "format_parameter_count", "read_gguf_info"]


@dataclass(frozen=True)
class GGUFInfo:
    """What the store and ``show`` need to know about one GGUF file."""

    architecture: str
    name: str | None
    parameter_count: int
    parameter_size: str
    file_type: str
    context_length: int | None
    embedding_length: int | None
    block_count: int | None
    head_count: int | None
    head_count_kv: int | None
    chat_template: str | None
    tokenizer_model: str | None
    vocab_size: int | None
    license: str | None
    is_projector: bool
    split_count: int | None
    split_index: int | None
    kv_count: int
    tensor_count: int
    version: int
    key_length: int | None = None  # values per attention head in K (absent: n_embd / heads)
    value_length: int | None = None
    # llama.cpp's pooling (``{arch}.pooling_type``): 4 is rank, a reranker's classifier head
    pooling_type: int | None = None
    # Option name -> value: the authors' recommended sampling (``recommended_sampling``).
    sampling: Mapping[str, object] = field(default_factory=dict, compare=False)
    # Every key/value kept (scalars, strings up to 1 MiB, arrays up to 256 items).
    metadata: Mapping[str, object] = field(
        default_factory=lambda: MappingProxyType({}), repr=False, compare=False
    )

    def to_summary(self) -> dict[str, object]:
        """A small JSON-able dict (everything but ``metadata``) for a config blob."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "metadata"}


def format_parameter_count(n: int) -> str:
    """Ollama's short form: ``7.6B``, ``494.0M``, ``1.5K``, ``999``."""
    if n < 0:
        raise ValueError("a parameter count cannot be negative")
    if n < 1000:
        return str(n)
    for scale, unit in ((1e3, "K"), (1e6, "M"), (1e9, "B")):
        if round(n / scale, 1) < 1000:
            return f"{n / scale:.1f}{unit}"
    return f"{n / 1e12:.1f}T"


def read_gguf_info(path: str | os.PathLike[str] | BinaryIO) -> GGUFInfo:
    """Read and sanity-check a GGUF file's header, in memory bounded by fixed caps: a path, or
    a file already open (read from its start; the caller then uses the file it checked)."""
    if not isinstance(path, str | os.PathLike):
        path.seek(0)
        return _interpret(parse_header(path, os.fstat(path.fileno()).st_size))
    with open(path, "rb") as stream:
        header = parse_header(stream, os.fstat(stream.fileno()).st_size)
    return _interpret(header)


def _interpret(header: GGUFHeader) -> GGUFInfo:
    values = header.values
    arch = _architecture(values)
    split_index = _int(values.get(gguf.Keys.Split.LLM_KV_SPLIT_NO))
    if not arch and not split_index:
        raise GGUFError("GGUF file has no general.architecture")

    def arch_int(template: str) -> int | None:
        return _int(values.get(template.format(arch=arch))) if arch else None

    vocab_size = arch_int(gguf.Keys.LLM.VOCAB_SIZE)
    if vocab_size is None:
        vocab_size = header.array_lengths.get(gguf.Keys.Tokenizer.LIST)
    return GGUFInfo(
        architecture=arch,
        name=_str(values.get(gguf.Keys.General.NAME)),
        parameter_count=header.parameter_count,
        parameter_size=format_parameter_count(header.parameter_count),
        file_type=_file_type(values.get(gguf.Keys.General.FILE_TYPE), header),
        context_length=arch_int(gguf.Keys.LLM.CONTEXT_LENGTH),
        embedding_length=arch_int(gguf.Keys.LLM.EMBEDDING_LENGTH),
        block_count=arch_int(gguf.Keys.LLM.BLOCK_COUNT),
        head_count=arch_int(gguf.Keys.Attention.HEAD_COUNT),
        head_count_kv=arch_int(gguf.Keys.Attention.HEAD_COUNT_KV),
        key_length=arch_int(gguf.Keys.Attention.KEY_LENGTH),
        value_length=arch_int(gguf.Keys.Attention.VALUE_LENGTH),
        pooling_type=arch_int(gguf.Keys.LLM.POOLING_TYPE),
        chat_template=_str(values.get(gguf.Keys.Tokenizer.CHAT_TEMPLATE)),
        tokenizer_model=_str(values.get(gguf.Keys.Tokenizer.MODEL)),
        vocab_size=vocab_size,
        license=_str(values.get(gguf.Keys.General.LICENSE)),
        is_projector=arch == "clip" or any(key.startswith("clip.") for key in values),
        split_count=_int(values.get(gguf.Keys.Split.LLM_KV_SPLIT_COUNT)),
        split_index=split_index,
        kv_count=header.kv_count,
        tensor_count=header.tensor_count,
        version=header.version,
        sampling=recommended_sampling(values),
        metadata=MappingProxyType({k: v for k, v in values.items() if v is not OMITTED}),
    )


def _architecture(values: dict[str, object]) -> str:
    arch = values.get(gguf.Keys.General.ARCHITECTURE)
    if arch is None:
        return ""
    if not isinstance(arch, str) or not arch:
        raise GGUFError("GGUF general.architecture is not a string")
    return arch


def _file_type(value: object, header: GGUFHeader) -> str:
    """``general.file_type`` by name (``MOSTLY_Q4_K_M``: ``Q4_K_M``), else the main weight type."""
    number = _int(value)
    if number is not None and number != gguf.LlamaFileType.GUESSED:
        try:
            name = gguf.LlamaFileType(number).name
        except ValueError:
            pass
        else:
            return "F32" if name == "ALL_F32" else name.removeprefix("MOSTLY_")
    weights = header.weight_elements or header.other_elements
    if not weights:
        return "unknown"
    return gguf.GGMLQuantizationType(max(weights, key=weights.__getitem__)).name


def _int(value: object) -> int | None:
    if isinstance(value, list) and value and all(_int(v) is not None for v in value):
        largest: int = max(value)  # per-layer values (e.g. head counts): the largest
        return largest
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
