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
from typing import BinaryIO

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import ModelKindError
from localllm.model_registry.importer import FileEvents
from localllm.model_registry.names import ModelName
from localllm.model_registry.store import (
    BlobRef,
    Layer,
    LayerType,
    Manifest,
    Store,
    ensure_free_space,
)
from localllm.model_registry.store.locking import Lease

__all__ = ["open_file", "store_named_files"]


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
            _layer(store, lease, path, stream, layer_type, events)
            for path, stream in opened.items()
        ]
        raw = json.dumps(dict(config), sort_keys=True).encode()
        config_blob = store.blobs.write_bytes(raw, on_hashed=lease.add)
        manifest = Manifest(BlobRef(config_blob.digest, config_blob.size), tuple(layers))
        return store.write_manifest(name, manifest)


def _layer(
    store: Store,
    lease: Lease,
    path: Path,
    stream: BinaryIO,
    layer_type: LayerType,
    events: FileEvents,
) -> Layer:
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
    return Layer(layer_type, blob.digest, blob.size, file_name=path.name)
