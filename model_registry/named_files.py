"""Storing a model that is a folder of named files (a Whisper model, a Piper voice): one blob
per file, its name kept in the layer, the manifest written last.

The caller opens every file once (:func:`open_file`) and checks the open files before any of
them reaches the store; what is stored are those open files' bytes (copied, or linked only
where the link is that very file), leased as they are hashed.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import ModelKindError
from localllm.model_registry.importer import FileEvents, file_layer
from localllm.model_registry.names import ModelName
from localllm.model_registry.store import (
    BlobRef,
    LayerType,
    Manifest,
    Store,
    ensure_free_space,
)

__all__ = ["open_file", "read_json_object", "store_named_files"]


def read_json_object(
    stream: BinaryIO, limit: int, where: str, file: str, owner: str
) -> dict[str, Any]:
    """A model's JSON ``file`` (read from its start, at most ``limit`` bytes) as an object;
    :class:`ModelKindError` saying what is wrong with it (``owner``: whose such file it
    would be, "a Piper voice's")."""
    stream.seek(0)
    raw = stream.read(limit + 1)
    if len(raw) > limit:
        raise ModelKindError(f"{where}: {file} is too large for {owner}")
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise ModelKindError(f"{where}: {file} is not valid JSON") from None
    if not isinstance(document, dict):
        raise ModelKindError(f"{where}: {file} is not a JSON object")
    return document


def open_file(stack: contextlib.ExitStack, path: Path) -> BinaryIO:
    """The file open until ``stack`` closes; errors name the file, never its directory."""
    try:
        return stack.enter_context(open(path, "rb"))  # the stack closes it
    except OSError as error:
        raise ModelKindError(f"cannot read {path.name}: {error.strerror or error}") from None


def store_named_files(
    store: Store,
    name: ModelName,
    opened: Mapping[Path, BinaryIO],
    layer_type: LayerType,
    config: Mapping[str, object],
    events: FileEvents,
) -> Digest:
    """Store the checked open files as ``layer_type`` layers under their names, then the
    config blob and the manifest; returns the model's id."""
    if events.mode == "copy":  # a link needs no space; a fallback copy checks its own
        needed = sum(os.fstat(stream.fileno()).st_size for stream in opened.values())
        ensure_free_space(store.layout.blobs_dir, needed, "this import")
    with store.lease() as lease:
        layers = [
            file_layer(store, lease, layer_type, path, stream, events, file_name=path.name)
            for path, stream in opened.items()
        ]
        raw = json.dumps(dict(config), sort_keys=True).encode()
        config_blob = store.blobs.write_bytes(raw, on_hashed=lease.add)
        manifest = Manifest(BlobRef(config_blob.digest, config_blob.size), tuple(layers))
        return store.write_manifest(name, manifest)
