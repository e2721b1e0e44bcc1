"""Transcription models in the store: Whisper in CTranslate2 form, a folder of named files
kept as one blob per file (``LayerType.CT2``) and handed to its runner as a folder again
(:meth:`Store.model_folder`)."""

from localllm.model_registry.transcription.importer import (
    import_whisper_folder,
    whisper_folder_files,
)
from localllm.model_registry.transcription.model_bin import ModelBinInfo, read_model_bin
from localllm.model_registry.transcription.whisper import (
    CT2_FORMAT,
    WHISPER_FAMILY,
    WhisperConfig,
    check_whisper_bin,
    config_from_whisper,
    file_type,
    looks_like_ct2,
    read_whisper_config,
    whisper_files,
)

__all__ = [
    "CT2_FORMAT",
    "WHISPER_FAMILY",
    "ModelBinInfo",
    "WhisperConfig",
    "check_whisper_bin",
    "config_from_whisper",
    "file_type",
    "import_whisper_folder",
    "looks_like_ct2",
    "read_model_bin",
    "read_whisper_config",
    "whisper_files",
    "whisper_folder_files",
]
