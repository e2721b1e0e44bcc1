"""Voices in the store: Piper text-to-speech voices, two named files (``<voice>.onnx`` and
``<voice>.onnx.json``) kept as one blob each (``LayerType.VOICE``) and handed to the speech
runner as a folder again (:meth:`Store.model_folder`)."""

from localllm.model_registry.voice.importer import import_voice, looks_like_voice, voice_paths
from localllm.model_registry.voice.piper import (
    PIPER_FAMILY,
    VOICE_FORMAT,
    VoiceConfig,
    check_onnx,
    config_from_voice,
    read_voice_config,
    voice_files,
)

__all__ = [
    "PIPER_FAMILY",
    "VOICE_FORMAT",
    "VoiceConfig",
    "check_onnx",
    "config_from_voice",
    "import_voice",
    "looks_like_voice",
    "read_voice_config",
    "voice_files",
    "voice_paths",
]
