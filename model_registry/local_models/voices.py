"""A Piper voice the user named (``localllm import en_US-joe-medium.onnx voice:joe``, or its
folder): described as a GGUF file is (a suggested name, its files and size, whether the store
holds it already and whether it can be linked), checked before anything is added."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from localllm.model_registry.errors import ModelKindError
from localllm.model_registry.local_models.candidates import FoundModel
from localllm.model_registry.local_models.memo import ImportMemo
from localllm.model_registry.local_models.naming import name_for_voice
from localllm.model_registry.store import Store
from localllm.model_registry.store.placing import same_device
from localllm.model_registry.voice import (
    PIPER_FAMILY,
    VoiceConfig,
    check_onnx,
    read_voice_config,
    voice_paths,
)

__all__ = ["describe_voice"]


def describe_voice(path: Path, store: Store | None = None) -> FoundModel:
    """The voice at ``path`` (a folder, or either of its files); :class:`ModelKindError`
    says what it lacks."""
    model, config = voice_paths(path)
    voice = _checked(model, config)
    found = FoundModel(
        source="file",
        name=name_for_voice(model.name),
        path=path,
        files=(model, config),
        size=model.stat().st_size + config.stat().st_size,
        architecture=PIPER_FAMILY,
        quantization="",
        parameter_size=voice.quality,
        format="voice",
    )
    if store is None:
        return found
    memo = ImportMemo(store)
    return replace(
        found,
        in_store=all(memo.holds(file) for file in found.files),
        linkable=same_device(model.resolve(), store.layout.blobs_dir),
    )


def _checked(model: Path, config: Path) -> VoiceConfig:
    """Its two files, read as the import will read them; errors name the file, never its
    directory."""
    try:
        with model.open("rb") as stream:
            check_onnx(stream, model.name)
        with config.open("rb") as stream:
            return read_voice_config(stream, config.name)
    except OSError as error:
        shown = Path(error.filename or "").name or model.name
        raise ModelKindError(f"cannot read {shown}: {error.strerror or error}") from None
