"""Whisper in CTranslate2 form (what faster-whisper runs): which files make one model, how its
``config.json`` and ``model.bin`` show it is Whisper, and the config blob that describes it.

A folder or a Hugging Face repository qualifies when it has ``model.bin``, ``config.json``,
``tokenizer.json`` and a vocabulary, its ``config.json`` holds what a CTranslate2 Whisper
conversion writes (``lang_ids``, ``suppress_ids``...) and its ``model.bin`` names the
``WhisperSpec``; otherwise the error says what is missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import BinaryIO

from localllm.model_registry.errors import ModelKindError
from localllm.model_registry.gguf_info import format_parameter_count
from localllm.model_registry.named_files import read_json_object
from localllm.model_registry.store.file_names import KNOWN_FILE_NAMES
from localllm.model_registry.transcription.model_bin import WHISPER_SPEC, ModelBinInfo

__all__ = [
    "CT2_FORMAT",
    "MAX_CONFIG_BYTES",
    "WHISPER_FAMILY",
    "WhisperConfig",
    "check_whisper_bin",
    "config_from_whisper",
    "file_type",
    "looks_like_ct2",
    "read_whisper_config",
    "whisper_files",
]

CT2_FORMAT = "ct2"  # the config blob's model_format for these models
WHISPER_FAMILY = "whisper"
MAX_CONFIG_BYTES = 1 << 20
_REQUIRED = ("model.bin", "config.json", "tokenizer.json")
_VOCABULARIES = ("vocabulary.txt", "vocabulary.json")
# what CTranslate2's WhisperConfig writes; lang_ids and suppress_ids are in every conversion
_WHISPER_KEYS = ("lang_ids", "suppress_ids")
_FILE_TYPES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "int8": "INT8"}


@dataclass(frozen=True, slots=True)
class WhisperConfig:
    """What ``config.json`` tells: how many languages the model knows (0 for English-only
    conversions that list none)."""

    languages: int


def looks_like_ct2(names: Iterable[str]) -> bool:
    """Files that make a CTranslate2 model, of whatever kind (checked further on)."""
    present = set(names)
    return "model.bin" in present and "config.json" in present


def whisper_files(names: Iterable[str], where: str) -> tuple[str, ...]:
    """The model's files among ``names`` (sorted, only the names such a model uses), or
    :class:`ModelKindError` saying which are missing."""
    present = set(names)
    missing = [name for name in _REQUIRED if name not in present]
    if not present.intersection(_VOCABULARIES):
        missing.append("vocabulary.txt (or vocabulary.json)")
    if missing:
        raise ModelKindError(
            f"{where} is not a Whisper model in CTranslate2 form: it has no {', '.join(missing)}"
        )
    return tuple(sorted(present & KNOWN_FILE_NAMES))


def read_whisper_config(stream: BinaryIO, where: str) -> WhisperConfig:
    """``config.json`` (read from its start, at most 1 MiB) as a Whisper conversion's."""
    document = read_json_object(stream, MAX_CONFIG_BYTES, where, "config.json", "a Whisper model's")
    absent = [key for key in _WHISPER_KEYS if not _int_list(document.get(key))]
    if absent:
        raise ModelKindError(
            f"{where}: config.json does not describe a Whisper model (no {' or '.join(absent)} "
            "list, which a CTranslate2 Whisper conversion writes)"
        )
    lang_ids = document["lang_ids"]
    return WhisperConfig(languages=len(lang_ids))


def check_whisper_bin(info: ModelBinInfo, where: str) -> ModelBinInfo:
    if info.spec != WHISPER_SPEC:
        raise ModelKindError(
            f"{where}: model.bin holds a CTranslate2 {info.spec or 'unnamed'} model, not Whisper"
        )
    return info


def config_from_whisper(
    whisper: WhisperConfig, weights: ModelBinInfo, source: Mapping[str, object]
) -> dict[str, object]:
    """The config blob: what ``list`` and ``show`` say without opening the model's files."""
    return {
        "model_format": CT2_FORMAT,
        "model_family": WHISPER_FAMILY,
        "model_families": [WHISPER_FAMILY],
        "model_type": format_parameter_count(weights.parameter_count),
        "file_type": file_type(weights),
        "architecture": WHISPER_FAMILY,
        "parameter_count": weights.parameter_count,
        "transcription": {
            "engine": "ctranslate2",
            "spec": weights.spec,
            "spec_revision": weights.revision,
            "dtype": weights.dtype,
            "languages": whisper.languages,
        },
        "source": dict(source),
    }


def file_type(weights: ModelBinInfo) -> str:
    """The type most weights are stored in, spelled as a GGUF's quantization is (``F16``)."""
    return _FILE_TYPES.get(weights.dtype, weights.dtype.upper())


def _int_list(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(item, int) and not isinstance(item, bool) for item in value
    )
