"""A model folder the user named (``localllm import FOLDER``): Whisper in CTranslate2 form,
described as a GGUF file is (a suggested name, its files and size, whether the store holds
it already and whether it can be linked), checked before anything is added."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from localllm.model_registry.errors import ModelKindError
from localllm.model_registry.gguf_info import format_parameter_count
from localllm.model_registry.local_models.candidates import FoundModel
from localllm.model_registry.local_models.memo import ImportMemo
from localllm.model_registry.local_models.naming import name_for_folder
from localllm.model_registry.store import Store
from localllm.model_registry.store.placing import same_device
from localllm.model_registry.transcription import (
    check_whisper_bin,
    file_type,
    read_model_bin,
    read_whisper_config,
    whisper_folder_files,
)
from localllm.model_registry.transcription.model_bin import ModelBinInfo

__all__ = ["describe_folder"]


def describe_folder(folder: Path, store: Store | None = None) -> FoundModel:
    """``folder`` as a Whisper model (:class:`ModelKindError` says what it lacks)."""
    files = whisper_folder_files(folder)
    weights = _checked(folder)
    model = FoundModel(
        source="file",
        name=name_for_folder(folder),
        path=folder,
        files=files,
        size=sum(path.stat().st_size for path in files),
        architecture="whisper",
        quantization=file_type(weights),
        parameter_size=format_parameter_count(weights.parameter_count),
        format="ct2",
    )
    if store is None:
        return model
    memo = ImportMemo(store)
    return replace(
        model,
        in_store=all(memo.holds(path) for path in files),
        linkable=same_device((folder / "model.bin").resolve(), store.layout.blobs_dir),
    )


def _checked(folder: Path) -> ModelBinInfo:
    """Its config.json and model.bin header, read as the import will read them; errors name
    the file, never its directory."""
    try:
        with (folder / "config.json").open("rb") as stream:
            read_whisper_config(stream, folder.name)
        with (folder / "model.bin").open("rb") as stream:
            return check_whisper_bin(read_model_bin(stream), folder.name)
    except OSError as error:
        shown = Path(error.filename or "").name or folder.name
        raise ModelKindError(f"cannot read {shown}: {error.strerror or error}") from None
