"""Importing a Whisper model folder (CTranslate2 form) from this computer into the store.

As with a GGUF (:mod:`localllm.model_registry.importer`), each file is opened once: the
``config.json`` and ``model.bin`` header checked are the open files', and the bytes stored
(copied, or linked only where the link is that very file) are too. Nothing reaches the store
before the folder has been checked; blobs are leased as they are hashed; the manifest, one
layer per file with the file's name, is written last.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import ModelKindError
from localllm.model_registry.importer import FileEvents
from localllm.model_registry.names import ModelName, parse_name
from localllm.model_registry.store import (
    BlobRef,
    Layer,
    LayerType,
    Manifest,
    Store,
    ensure_free_space,
)
from localllm.model_registry.store.file_names import KNOWN_FILE_NAMES
from localllm.model_registry.store.locking import Lease
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
    events = events or FileEvents()
    folder = Path(folder)
    files = whisper_folder_files(folder)
    with contextlib.ExitStack() as stack:
        opened = {path: _open(stack, path) for path in files}
        by_name = {path.name: stream for path, stream in opened.items()}
        whisper = read_whisper_config(by_name["config.json"], folder.name)
        weights = check_whisper_bin(read_model_bin(by_name["model.bin"]), folder.name)
        if events.mode == "copy":  # a link needs no space; a fallback copy checks its own
            needed = sum(os.fstat(stream.fileno()).st_size for stream in opened.values())
            ensure_free_space(store.layout.blobs_dir, needed, "this import")
        source = {"files": [path.name for path in files]}
        config = config_from_whisper(whisper, weights, source)
        with store.lease() as lease:
            layers = [_layer(store, lease, path, stream, events) for path, stream in opened.items()]
            return _commit(store, lease, name, config, layers)


def _open(stack: contextlib.ExitStack, path: Path) -> BinaryIO:
    """The file open until ``stack`` closes; errors name the file, never its directory."""
    try:
        return stack.enter_context(open(path, "rb"))  # the stack closes it
    except OSError as error:
        raise ModelKindError(f"cannot read {path.name}: {error.strerror or error}") from None


def _layer(store: Store, lease: Lease, path: Path, stream: BinaryIO, events: FileEvents) -> Layer:
    total = os.fstat(stream.fileno()).st_size
    progress = events.on_progress
    blob, placement = store.blobs.add_file(
        path,
        events.mode,
        events.expected.get(path),
        on_hashed=lease.add,
        on_progress=(lambda done: progress(path.name, done, total)) if progress else None,
        opened=stream,
    )
    if events.on_placed is not None:
        events.on_placed(path.name, blob.size, placement)
    return Layer(LayerType.CT2, blob.digest, blob.size, file_name=path.name)


def _commit(
    store: Store, lease: Lease, name: ModelName, config: Mapping[str, object], layers: list[Layer]
) -> Digest:
    raw = json.dumps(dict(config), sort_keys=True).encode()
    config_blob = store.blobs.write_bytes(raw, on_hashed=lease.add)
    manifest = Manifest(BlobRef(config_blob.digest, config_blob.size), tuple(layers))
    return store.write_manifest(name, manifest)
