"""Importing a Whisper model folder (CTranslate2 form) from this computer into the store.

As with a GGUF (:mod:`localllm.model_registry.importer`), each file is opened once: the
``config.json`` and ``model.bin`` header checked are the open files', and the bytes stored
are too (:mod:`localllm.model_registry.named_files`). Nothing reaches the store before the
folder has been checked; the manifest, one layer per file with the file's name, comes last.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import ModelKindError
from localllm.model_registry.importer import FileEvents
from localllm.model_registry.named_files import open_file, store_named_files
from localllm.model_registry.names import ModelName, parse_name
from localllm.model_registry.store import LayerType, Store
from localllm.model_registry.store.file_names import KNOWN_FILE_NAMES
from localllm.model_registry.transcription.model_bin import read_model_bin
from localllm.model_registry.transcription.whisper import (
    check_whisper_bin,
    config_from_whisper,
    read_whisper_config,
    whisper_files,
)

__all__ = ["import_whisper_folder", "whisper_folder_files"]


def whisper_folder_files(folder: Path) -> tuple[Path, ...]:
    """The model's files in ``folder`` (:class:`ModelKindError` names what is missing)."""
    if not folder.is_dir():
        raise ModelKindError(f"{folder.name} is not a folder")
    present = [name for name in KNOWN_FILE_NAMES if (folder / name).is_file()]
    return tuple(folder / name for name in whisper_files(present, folder.name))


def import_whisper_folder(
    store: Store, name: ModelName | str, folder: Path, events: FileEvents | None = None
) -> Digest:
    """Import the Whisper model in ``folder`` as ``name``; returns its id. Its files are
    copied unless ``events.mode`` lets them be linked."""
    name = name if isinstance(name, ModelName) else parse_name(name)
    folder = Path(folder)
    files = whisper_folder_files(folder)
    with contextlib.ExitStack() as stack:
        opened = {path: open_file(stack, path) for path in files}
        by_name = {path.name: stream for path, stream in opened.items()}
        whisper = read_whisper_config(by_name["config.json"], folder.name)
        weights = check_whisper_bin(read_model_bin(by_name["model.bin"]), folder.name)
        source = {"files": [path.name for path in files]}
        config = config_from_whisper(whisper, weights, source)
        return store_named_files(store, name, opened, LayerType.CT2, config, events or FileEvents())
