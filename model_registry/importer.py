"""Importing models from local files: a GGUF (single or sharded) or a Modelfile.

Every input file is read and checked as GGUF before the store is touched, so a truncated or
hostile file leaves the store exactly as it was. Each file is opened once: the header checked
is the open file's, and the bytes stored (copied, or linked only where the link is that very
file) are too, so swapping the path for a link to another file in between imports nothing
else. Blobs are leased as soon as they are hashed, and the manifest is written last.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, cast

from localllm.model_registry.adapters import is_lora_adapter, read_lora_adapter
from localllm.model_registry.digests import Digest
from localllm.model_registry.draft_weights import (
    DraftWeights,
    FileLayer,
    draft_layers,
    resolve_draft,
)
from localllm.model_registry.errors import GGUFError, ModelfileError, ModelNotFoundError
from localllm.model_registry.gguf_info import GGUFInfo, read_gguf_info
from localllm.model_registry.model_config import config_from_gguf
from localllm.model_registry.modelfile import Modelfile, from_is_path
from localllm.model_registry.names import ModelName, parse_name
from localllm.model_registry.store import (
    BlobRef,
    Layer,
    LayerType,
    Manifest,
    Store,
    ensure_free_space,
)
from localllm.model_registry.store.locking import Lease
from localllm.model_registry.store.placing import AddMode, Placement

__all__ = [
    "AdapterFile",
    "FileEvents",
    "ModelExtras",
    "create_from_modelfile",
    "file_layer",
    "find_shards",
    "import_gguf",
    "modelfile_base",
]

AdapterFile = tuple[Path, float]  # a LoRA adapter file and the scale it is applied with

_SHARD = re.compile(r"(?P<stem>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf", re.IGNORECASE)
_MAX_SHARDS = 512
_TEXT_LAYERS = (LayerType.TEMPLATE, LayerType.SYSTEM, LayerType.PARAMS, LayerType.MESSAGES)


@dataclass(frozen=True, slots=True)
class ModelExtras:
    """What a model carries besides its weights (from a Modelfile or an API request)."""

    system: str | None = None
    template: str | None = None
    parameters: Mapping[str, object] = field(default_factory=dict)
    licenses: tuple[str, ...] = ()
    messages: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_modelfile(cls, modelfile: Modelfile) -> ModelExtras:
        return cls(
            system=modelfile.system,
            template=modelfile.template,
            parameters=dict(modelfile.parameters),
            licenses=tuple(modelfile.license),
            messages=tuple((role, text) for role, text in modelfile.messages),
        )


@dataclass(frozen=True, slots=True)
class FileEvents:
    """How a file the user has goes into the store, and who hears about it.

    ``mode`` is ``copy``, ``link`` or ``auto`` (see :meth:`BlobStore.add_file`); ``expected``
    holds digests a file must hash to (an Ollama blob's name), checked, never trusted."""

    mode: AddMode = "copy"
    expected: Mapping[Path, Digest] = field(default_factory=dict)
    on_progress: Callable[[str, int, int], None] | None = None  # file name, done, total
    on_placed: Callable[[str, int, Placement], None] | None = None  # file name, size, how


def find_shards(path: Path) -> list[Path]:
    """All shards of a split GGUF in order, given any one of them; ``[path]`` if unsplit."""
    match = _SHARD.fullmatch(path.name)
    if match is None:
        return [path]
    count = int(match["count"])
    if not 1 <= count <= _MAX_SHARDS or not 1 <= int(match["index"]) <= count:
        raise GGUFError(f"implausible shard name {path.name!r}")
    shards = [
        path.with_name(f"{match['stem']}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)
    ]
    missing = [shard.name for shard in shards if not shard.is_file()]
    if missing:
        raise GGUFError(f"sharded model is incomplete: missing {', '.join(missing[:3])}")
    return shards


def import_gguf(
    store: Store,
    name: ModelName | str,
    path: Path,
    *,
    projector: Path | None = None,
    adapters: Sequence[AdapterFile] = (),
    extras: ModelExtras = ModelExtras(),
    events: FileEvents = FileEvents(),
    draft: DraftWeights | None = None,
) -> Digest:
    """Import a local GGUF model (and optional projector/adapters/draft) as ``name``; returns
    its id.

    Its files are copied unless ``events.mode`` lets them be linked."""
    name = name if isinstance(name, ModelName) else parse_name(name)
    shards = find_shards(Path(path))
    files = [*shards, *([projector] if projector else []), *(a for a, _ in adapters)]
    files += [draft.file] if draft and draft.file else []
    with contextlib.ExitStack() as stack:
        opened = _open_all(stack, files)
        infos = [
            _read_model_info(opened[shard], shard.name, first=i == 0)
            for i, shard in enumerate(shards)
        ]
        projector_info = _read_projector_info(opened[projector], projector) if projector else None
        _check_adapters(adapters, infos[0].architecture, opened)  # before the store is touched
        if events.mode == "copy":  # a link needs no space; a fallback copy checks its own
            needed = sum(os.fstat(stream.fileno()).st_size for stream in opened.values())
            ensure_free_space(store.layout.blobs_dir, needed, "this import")
        source = {"files": [shard.name for shard in shards]}
        layer = _layers_from(opened, events)
        with store.lease() as lease:
            layers = [layer(store, lease, LayerType.MODEL, shard) for shard in shards]
            if projector:
                layers.append(layer(store, lease, LayerType.PROJECTOR, projector))
            layers += [layer(store, lease, LayerType.ADAPTER, a, scale) for a, scale in adapters]
            layers += draft_layers(store, lease, draft, layer)
            layers += _extra_layers(store, lease, extras)
            config = _with_draft(config_from_gguf(infos[0], source, projector_info), draft)
            return _commit(store, lease, name, config, layers)


def _open_all(stack: contextlib.ExitStack, files: Sequence[Path]) -> dict[Path, BinaryIO]:
    """Each file open for reading until ``stack`` closes; file-system errors name the file,
    never its directory."""
    opened: dict[Path, BinaryIO] = {}
    for path in files:
        try:
            opened[path] = stack.enter_context(open(path, "rb"))  # noqa: SIM115 (the stack closes it)
        except OSError as error:
            raise GGUFError(f"cannot read {path.name}: {error.strerror or error}") from None
    return opened


def _layers_from(opened: Mapping[Path, BinaryIO], events: FileEvents) -> FileLayer:
    """Layers made from the open files: the model's (and projector's) as ``events`` say,
    adapters and a draft copied."""

    def layer(store: Store, lease: Lease, kind: LayerType, file: Path, scale: float = 1.0) -> Layer:
        how = events if kind in (LayerType.MODEL, LayerType.PROJECTOR) else FileEvents()
        return file_layer(store, lease, kind, file, opened[file], how, scale)

    return layer


def create_from_modelfile(
    store: Store,
    name: ModelName | str,
    modelfile: Modelfile,
    resolve_file: Callable[[str], Path],
) -> Digest:
    """Create ``name`` from a parsed Modelfile.

    ``resolve_file`` maps a ``FROM``/``ADAPTER`` file reference to a local path; the daemon
    passes one that only accepts uploaded blobs, so a client can never name a server path.
    """
    name = name if isinstance(name, ModelName) else parse_name(name)
    extras = ModelExtras.from_modelfile(modelfile)
    adapters = [(resolve_file(a.reference), a.scale) for a in modelfile.adapters]
    if from_is_path(modelfile.from_):
        path = resolve_file(modelfile.from_)
        draft = resolve_draft(store, modelfile, resolve_file, path)
        return import_gguf(store, name, path, adapters=adapters, extras=extras, draft=draft)
    base = modelfile_base(store, modelfile)
    draft = None
    if modelfile.draft is not None:
        target = store.blobs.path(base.layers_of(LayerType.MODEL)[0].digest)
        draft = resolve_draft(store, modelfile, resolve_file, target)
    return _derive(store, name, base, extras, adapters, draft)


def modelfile_base(store: Store, modelfile: Modelfile) -> Manifest:
    """The installed model a Modelfile's FROM names; ModelfileError when there is none or it
    is not a GGUF model (a Whisper model or a voice: nothing to build on)."""
    try:
        base = store.read_manifest(modelfile.from_)
    except ModelNotFoundError:
        raise ModelfileError(f"FROM {modelfile.from_}: no such model; pull it first") from None
    if base.folder_layers:
        kind = "a transcription model" if base.is_transcription else "a voice"
        raise ModelfileError(
            f"FROM {modelfile.from_}: that is {kind}; a Modelfile builds on a GGUF model"
        )
    return base


def _derive(
    store: Store,
    name: ModelName,
    base: Manifest,
    extras: ModelExtras,
    adapters: Sequence[AdapterFile],
    draft: DraftWeights | None = None,
) -> Digest:
    """A new model sharing the base's weights (and adapters, and draft), with its own template,
    system prompt, parameters, any further adapters and maybe another draft."""
    config = _with_draft(store.read_config(base), draft)
    base_params = cast("dict[str, object]", store.read_json_layer(base, LayerType.PARAMS) or {})
    base_messages = cast(
        "list[dict[str, str]]", store.read_json_layer(base, LayerType.MESSAGES) or []
    )
    merged = ModelExtras(
        system=extras.system
        if extras.system is not None
        else store.read_text_layer(base, LayerType.SYSTEM),
        template=extras.template
        if extras.template is not None
        else store.read_text_layer(base, LayerType.TEMPLATE),
        parameters={**base_params, **extras.parameters},
        licenses=extras.licenses,
        messages=extras.messages or tuple((m["role"], m["content"]) for m in base_messages),
    )
    kept = [
        layer
        for layer in base.layers
        if layer.media_type not in _TEXT_LAYERS
        and not (merged.licenses and layer.media_type is LayerType.LICENSE)
        and not (draft and layer.media_type is LayerType.DRAFT)
    ]
    files = [path for path, _ in adapters] + ([draft.file] if draft and draft.file else [])
    with contextlib.ExitStack() as stack:
        opened = _open_all(stack, files)
        _check_adapters(adapters, str(config.get("architecture") or "") or None, opened)
        layer = _layers_from(opened, FileEvents())
        with store.lease(base.digests) as lease:
            layers = kept + [layer(store, lease, LayerType.ADAPTER, a, s) for a, s in adapters]
            layers += draft_layers(store, lease, draft, layer)
            layers += _extra_layers(store, lease, merged)
            return _commit(store, lease, name, config, layers)


def _with_draft(config: Mapping[str, object], draft: DraftWeights | None) -> dict[str, object]:
    """The config, naming the draft model (what ``show`` lists) and its KV cache's numbers
    (for the memory estimate) when there is a new one."""
    if not draft:
        return dict(config)
    return {**config, "draft": draft.shown, "draft_gguf": draft.kv_shape or {}}


def _read_info(stream: BinaryIO, name: str) -> GGUFInfo:
    """Read GGUF metadata; file-system errors name the file, never its directory."""
    try:
        return read_gguf_info(stream)
    except OSError as error:
        raise GGUFError(f"cannot read {name}: {error.strerror or error}") from None


def _read_model_info(stream: BinaryIO, name: str, first: bool) -> GGUFInfo:
    info = _read_info(stream, name)
    if info.is_projector:
        raise GGUFError(
            "this file is a vision projector (mmproj), not a model; import it as a projector"
        )
    if is_lora_adapter(info):
        raise GGUFError(
            "this file is a LoRA adapter, not a model; use it with ADAPTER, FROM its base model"
        )
    if first and not info.architecture:
        raise GGUFError("GGUF file names no architecture (general.architecture)")
    return info


def _read_projector_info(stream: BinaryIO, path: Path) -> GGUFInfo:
    info = _read_info(stream, path.name)
    if not info.is_projector:
        raise GGUFError("the projector file is not a vision projector (clip) GGUF")
    return info


def _check_adapters(
    adapters: Sequence[AdapterFile], architecture: str | None, opened: Mapping[Path, BinaryIO]
) -> None:
    for path, _ in adapters:
        read_lora_adapter(opened[path], architecture, path.name)


def file_layer(
    store: Store,
    lease: Lease,
    media_type: LayerType,
    path: Path,
    stream: BinaryIO,
    events: FileEvents,
    scale: float = 1.0,
    file_name: str | None = None,
) -> Layer:
    """The layer for ``path``, stored from ``stream``: the file checked, open; ``file_name``:
    the name a model of several files keeps it under (a CT2 or voice layer)."""
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
    return Layer(media_type, blob.digest, blob.size, scale, file_name)


def _bytes_layer(store: Store, lease: Lease, media_type: LayerType, data: bytes) -> Layer:
    blob = store.blobs.write_bytes(data, on_hashed=lease.add)
    return Layer(media_type, blob.digest, blob.size)


def _extra_layers(store: Store, lease: Lease, extras: ModelExtras) -> list[Layer]:
    layers = []
    if extras.template is not None:
        layers.append(_bytes_layer(store, lease, LayerType.TEMPLATE, extras.template.encode()))
    if extras.system is not None:
        layers.append(_bytes_layer(store, lease, LayerType.SYSTEM, extras.system.encode()))
    if extras.parameters:
        params = json.dumps(dict(extras.parameters), sort_keys=True).encode()
        layers.append(_bytes_layer(store, lease, LayerType.PARAMS, params))
    if extras.messages:
        messages = [{"role": role, "content": content} for role, content in extras.messages]
        layers.append(_bytes_layer(store, lease, LayerType.MESSAGES, json.dumps(messages).encode()))
    layers += [
        _bytes_layer(store, lease, LayerType.LICENSE, text.encode()) for text in extras.licenses
    ]
    return layers


def _commit(
    store: Store, lease: Lease, name: ModelName, config: Mapping[str, object], layers: list[Layer]
) -> Digest:
    config_blob = store.blobs.write_bytes(
        json.dumps(dict(config), sort_keys=True).encode(), on_hashed=lease.add
    )
    manifest = Manifest(BlobRef(config_blob.digest, config_blob.size), tuple(layers))
    return store.write_manifest(name, manifest)
