"""What a scan found: one model file (or set of shards) another app already downloaded."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from localllm.model_registry.digests import Digest
from localllm.model_registry.importer import ModelExtras

__all__ = ["FoundModel", "ModelFormat", "ModelSource", "ScanResult"]

#: Where a model was found: another app's downloads, a folder the user named, or ("file") the
#: one file the user named (:func:`describe_file`).
ModelSource = Literal["huggingface", "lmstudio", "ollama", "folder", "file"]
#: A GGUF model (file, shards, projector), a Whisper model folder in CTranslate2 form, or a
#: Piper voice (its ``.onnx`` and ``.onnx.json``).
ModelFormat = Literal["gguf", "ct2", "voice"]


@dataclass(frozen=True, slots=True)
class FoundModel:
    source: ModelSource
    name: str  # a suggested name, valid under our naming rules
    path: Path  # the model file as found (the first shard of a split model), or its folder
    files: tuple[Path, ...]  # the files to add, links resolved, in shard order
    size: int  # bytes of every file, projector included
    architecture: str
    quantization: str
    parameter_size: str
    projector: Path | None = None
    expected: Mapping[Path, Digest] = field(default_factory=dict)  # claimed by the source
    extras: ModelExtras = field(default_factory=ModelExtras)
    in_store: bool = False  # its weights are already in our store
    linkable: bool = False  # on the store's file system: can be added without copying
    format: ModelFormat = "gguf"


@dataclass(frozen=True, slots=True)
class ScanResult:
    models: tuple[FoundModel, ...]
    truncated: bool  # a bound (depth, entries, files, time) stopped the scan early
