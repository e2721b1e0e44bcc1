"""Adding a model found on disk to the store: linked where the file system allows, else
copied; hashed and checked either way, through the one import path of its format
(:func:`import_gguf`, :func:`import_whisper_folder` for a Whisper folder, :func:`import_voice`
for a Piper voice)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import get_args

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import ModelExistsError
from localllm.model_registry.importer import FileEvents, import_gguf
from localllm.model_registry.local_models.candidates import FoundModel
from localllm.model_registry.local_models.memo import ImportMemo
from localllm.model_registry.names import parse_name
from localllm.model_registry.store import Store
from localllm.model_registry.store.placing import AddMode, Placement
from localllm.model_registry.transcription import import_whisper_folder
from localllm.model_registry.voice import import_voice

__all__ = ["MODES", "AddReport", "AddedFile", "add_found_model"]

MODES: tuple[AddMode, ...] = get_args(AddMode)


@dataclass(frozen=True, slots=True)
class AddedFile:
    name: str  # the file's own name, never its directory
    size: int
    placement: Placement


@dataclass(frozen=True, slots=True)
class AddReport:
    name: str
    model_id: Digest
    files: tuple[AddedFile, ...]

    @property
    def copied_bytes(self) -> int:
        return sum(f.size for f in self.files if f.placement is Placement.COPIED)


def add_found_model(
    store: Store,
    model: FoundModel,
    name: str | None = None,
    mode: AddMode = "auto",
    on_progress: Callable[[str, int, int], None] | None = None,
) -> AddReport:
    """Add ``model`` as ``name`` (its suggested name by default); an existing name is kept
    (:class:`ModelExistsError`), never overwritten."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}")
    parsed = parse_name(name or model.name)
    if store.exists(parsed):
        raise ModelExistsError(f"{parsed.display} already exists: choose another name")
    added: list[AddedFile] = []
    events = FileEvents(
        mode=mode,
        expected=model.expected,
        on_progress=on_progress,
        on_placed=lambda file, size, how: added.append(AddedFile(file, size, how)),
    )
    if model.format == "ct2":
        model_id = import_whisper_folder(store, parsed, model.path, events)
    elif model.format == "voice":
        model_id = import_voice(store, parsed, model.path, events)
    else:
        model_id = import_gguf(
            store,
            parsed,
            model.files[0],
            projector=model.projector,
            extras=model.extras,
            events=events,
        )
    memo = ImportMemo(store)
    manifest = store.read_manifest(parsed)
    if manifest.folder_layers:
        by_name = {path.name: path for path in model.files}
        pairs = [(by_name[str(x.file_name)], x.digest) for x in manifest.folder_layers]
    else:
        pairs = [(path, x.digest) for path, x in zip(model.files, manifest.layers, strict=False)]
    for path, digest in pairs:
        memo.remember(path, digest)
    return AddReport(parsed.display, model_id, tuple(added))
