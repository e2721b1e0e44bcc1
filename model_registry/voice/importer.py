"""Importing a Piper voice from this computer into the store: a folder that holds one, or
either of its two files (``<voice>.onnx`` and ``<voice>.onnx.json``, side by side).

As a Whisper folder is (:mod:`localllm.model_registry.transcription.importer`): each file is
opened once, checked, and those open files' bytes stored, one ``LayerType.VOICE`` layer per
file under its own name; the manifest comes last.
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
from localllm.model_registry.voice.piper import (
    check_onnx,
    config_from_voice,
    read_voice_config,
    voice_files,
)

__all__ = ["import_voice", "looks_like_voice", "voice_paths"]


def looks_like_voice(path: Path) -> bool:
    """A path the user named that is meant as a voice: one of its files, or a folder with an
    ``.onnx`` file in it (checked further by :func:`voice_paths`)."""
    if path.is_dir():
        with contextlib.suppress(OSError):
            return any(child.name.endswith(".onnx") for child in path.iterdir())
        return False
    return path.name.endswith((".onnx", ".onnx.json"))


def voice_paths(path: Path) -> tuple[Path, Path]:
    """The voice's model and config: found in the folder ``path``, or beside ``path`` when it
    names one of them (:class:`ModelKindError` says what is missing)."""
    if path.is_dir():
        try:
            names = [child.name for child in path.iterdir() if child.is_file()]
        except OSError as error:
            raise ModelKindError(f"cannot read {path.name}: {error.strerror or error}") from None
        model_name, config_name = voice_files(names, path.name)
        return path / model_name, path / config_name
    model = path.with_name(path.name.removesuffix(".json"))
    if not model.name.endswith(".onnx"):
        raise ModelKindError(f"{path.name} is not a Piper voice's .onnx or .onnx.json file")
    config = model.with_name(model.name + ".json")
    missing = [p.name for p in (model, config) if not p.is_file()]
    if missing:
        raise ModelKindError(
            f"{path.name} is not a whole Piper voice: {' and '.join(missing)} is not beside it"
        )
    return model, config


def import_voice(
    store: Store, name: ModelName | str, path: Path, events: FileEvents | None = None
) -> Digest:
    """Import the voice at ``path`` (a folder, or either file) as ``name``; returns its id.
    Its files are copied unless ``events.mode`` lets them be linked."""
    name = name if isinstance(name, ModelName) else parse_name(name)
    model, config_path = voice_paths(Path(path))
    with contextlib.ExitStack() as stack:
        opened = {file: open_file(stack, file) for file in (model, config_path)}
        voice = read_voice_config(opened[config_path], config_path.name)
        check_onnx(opened[model], model.name)
        source = {"files": [model.name, config_path.name]}
        config = config_from_voice(voice, source)
        return store_named_files(
            store, name, opened, LayerType.VOICE, config, events or FileEvents()
        )
