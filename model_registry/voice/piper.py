"""Piper voices (text to speech): which files make one, how its ``.onnx.json`` shows it is a
Piper voice, and the config blob that describes it.

A voice is two files side by side, ``<voice>.onnx`` (the model, an ONNX graph) and
``<voice>.onnx.json`` (its phonemes, sample rate and language), as Piper writes and loads
them; ``rhasspy/piper-voices`` keeps each in a folder ``<family>/<code>/<name>/<quality>``.
The ``.onnx.json`` is read whole (at most 4 MiB) and must say what Piper needs to speak; the
``.onnx`` is only checked to start as an ONNX model does. Errors say what is missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import BinaryIO

from localllm.model_registry.errors import ModelKindError
from localllm.model_registry.named_files import read_json_object

__all__ = [
    "MAX_VOICE_CONFIG_BYTES",
    "PIPER_FAMILY",
    "VOICE_FORMAT",
    "VoiceConfig",
    "check_onnx",
    "config_from_voice",
    "read_voice_config",
    "voice_files",
]

VOICE_FORMAT = "onnx"  # the config blob's model_format for a voice
PIPER_FAMILY = "piper"
MAX_VOICE_CONFIG_BYTES = 4 << 20  # a Chinese voice's phoneme map is the largest, some 100 KB
_MODEL_SUFFIX = ".onnx"
_CONFIG_SUFFIX = ".onnx.json"
_ONNX_FIRST_BYTE = 0x08  # an ONNX ModelProto starts with its ir_version (field 1, a varint)
_RATES = range(8000, 192_001)


@dataclass(frozen=True, slots=True)
class VoiceConfig:
    """What a voice's ``.onnx.json`` tells about it."""

    sample_rate: int  # of the speech it makes, in Hz
    language: str  # "en_US" (the language code Piper's voices list), else the espeak voice
    quality: str  # "x_low", "low", "medium" or "high"; "" where it does not say
    speakers: int  # voices trained on many speakers speak as any of them
    phoneme_type: str  # "espeak" for most; "text", "pinyin"...
    espeak_voice: str  # the espeak-ng voice that writes its phonemes ("en-us")


def voice_files(names: Iterable[str], where: str) -> tuple[str, str]:
    """The voice's model and config among ``names`` (``x.onnx`` and ``x.onnx.json``), or a
    :class:`ModelKindError` that says what is missing."""
    present = set(names)
    models = sorted(name for name in present if name.endswith(_MODEL_SUFFIX))
    paired = [name for name in models if name + ".json" in present]
    if len(paired) == 1:
        return paired[0], paired[0] + ".json"
    if len(paired) > 1:
        raise ModelKindError(
            f"{where} holds {len(paired)} Piper voices ({', '.join(paired[:4])}): name one .onnx"
        )
    if models:
        raise ModelKindError(
            f"{where} is not a Piper voice: {models[0]} has no {models[0]}.json beside it"
        )
    raise ModelKindError(f"{where} is not a Piper voice: it has no <voice>.onnx and .onnx.json")


def read_voice_config(stream: BinaryIO, where: str) -> VoiceConfig:
    """``<voice>.onnx.json`` (read from its start) as a Piper voice's."""
    document = read_json_object(
        stream, MAX_VOICE_CONFIG_BYTES, where, "the .onnx.json", "a Piper voice's"
    )
    rate = _mapping(document.get("audio")).get("sample_rate")
    if not isinstance(rate, int) or isinstance(rate, bool) or rate not in _RATES:
        raise ModelKindError(f"{where}: the .onnx.json names no audio sample_rate (Hz)")
    phonemes = document.get("phoneme_id_map")
    if not isinstance(phonemes, dict) or not phonemes:
        raise ModelKindError(
            f"{where}: the .onnx.json has no phoneme_id_map, which every Piper voice has"
        )
    speakers = document.get("num_speakers", 1)
    espeak = str(_mapping(document.get("espeak")).get("voice") or "")
    return VoiceConfig(
        sample_rate=rate,
        language=str(_mapping(document.get("language")).get("code") or espeak),
        quality=str(_mapping(document.get("audio")).get("quality") or ""),
        speakers=speakers if isinstance(speakers, int) and speakers > 0 else 1,
        phoneme_type=str(document.get("phoneme_type") or "espeak"),
        espeak_voice=espeak,
    )


def check_onnx(stream: BinaryIO, where: str) -> None:
    """The ``.onnx`` starts as an ONNX model does (what is inside, onnxruntime checks)."""
    stream.seek(0)
    first = stream.read(1)
    if not first or first[0] != _ONNX_FIRST_BYTE:
        raise ModelKindError(f"{where}: the .onnx file is not an ONNX model")


def config_from_voice(voice: VoiceConfig, source: Mapping[str, object]) -> dict[str, object]:
    """The config blob: what ``list`` and ``show`` say without opening the voice's files."""
    return {
        "model_format": VOICE_FORMAT,
        "model_family": PIPER_FAMILY,
        "model_families": [PIPER_FAMILY],
        "model_type": voice.quality,
        "file_type": "",
        "architecture": PIPER_FAMILY,
        "voice": {
            "engine": PIPER_FAMILY,
            "sample_rate": voice.sample_rate,
            "language": voice.language,
            "quality": voice.quality,
            "speakers": voice.speakers,
            "phoneme_type": voice.phoneme_type,
            "espeak_voice": voice.espeak_voice,
        },
        "source": dict(source),
    }


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, dict) else {}
