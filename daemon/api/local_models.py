"""The wire contract for models already on this computer: ``GET /api/local-models`` lists
what the daemon found in the places its settings name (the Hugging Face cache, LM Studio,
Ollama, ``LOCALLLM_IMPORT_DIRS``); ``POST /api/import`` adds one GGUF file (or one Whisper
model folder in CTranslate2 form, or one Piper voice) by path, linked into the store where the
file system allows, else copied, streaming progress."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ImportMode", "ImportProgress", "ImportRequest", "LocalModelOut", "LocalModelsResponse"]

ImportMode = Literal["auto", "link", "copy"]  # how /api/import adds a file to the store
Placement = Literal["linked", "cloned", "copied", "present"]


class LocalModelOut(BaseModel):
    source: Literal["huggingface", "lmstudio", "ollama", "folder", "file"]
    name: str  # a suggested name, valid as a model name
    path: str  # the file as found; send it back to /api/import
    size: int  # bytes, every shard and the projector included
    architecture: str
    quantization: str
    parameter_size: str
    shards: int = 1
    projector: str | None = None  # the projector's file name, added with the model
    in_store: bool = False  # its weights are already in the store
    linkable: bool = False  # on the store's file system: added without copying


class LocalModelsResponse(BaseModel):
    models: list[LocalModelOut]
    truncated: bool = False  # a bound (depth, entries, files, time) stopped the scan


class ImportRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=4096)  # absolute, on the daemon's machine: a
    # .gguf file, a Whisper model folder, or a Piper voice (its .onnx or .onnx.json, or folder)
    name: str | None = None  # the suggested name when left out
    mode: ImportMode = "auto"  # link where possible, else copy; "link" never copies
    stream: bool = True


class ImportProgress(BaseModel):
    """One step: ``checking``/``linking``/``copying`` a file (bytes done of total), then one
    ``added`` line per file saying how it went in, then ``success`` with the model's name."""

    status: str
    file: str | None = None  # a file name, never its directory
    total: int | None = None
    completed: int | None = None
    placement: Placement | None = None
    model: str | None = None
    copied_bytes: int | None = None
