"""A Modelfile's ``DRAFT``: the draft model's weights, found and checked against the model's own.

``DRAFT ./small.gguf`` imports that file as a layer of its own; ``DRAFT qwen3:0.6b`` points at
an installed model's weight blobs (shared, not copied). Either way the draft must share the
model's vocabulary (``vocabulary``), which is checked here, at create time, with both names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from localllm.model_registry.adapters import is_lora_adapter, shown_name
from localllm.model_registry.errors import GGUFError, ModelfileError, ModelNotFoundError
from localllm.model_registry.gguf_info import read_gguf_info
from localllm.model_registry.modelfile import Modelfile, from_is_path
from localllm.model_registry.names import parse_name
from localllm.model_registry.store import Layer, LayerType, Store
from localllm.model_registry.store.locking import Lease
from localllm.model_registry.vocabulary import vocabulary_difference

__all__ = ["DraftWeights", "draft_layers", "resolve_draft"]


class FileLayer(Protocol):
    """Makes the manifest layer of one file (an adapter's, applied at ``scale``)."""

    def __call__(
        self, store: Store, lease: Lease, kind: LayerType, file: Path, scale: float = 1.0
    ) -> Layer: ...


#: The GGUF numbers that size a KV cache (as in a config's ``gguf`` summary).
KV_SHAPE_KEYS = ("block_count", "embedding_length", "head_count", "head_count_kv", "key_length")


@dataclass(frozen=True, slots=True)
class DraftWeights:
    """What ``show`` calls the draft, and its weights: a file to import, or installed layers."""

    shown: str
    file: Path | None = None
    layers: tuple[Layer, ...] = ()
    kv_shape: dict[str, object] | None = None  # its KV cache's numbers, for memory estimates


def resolve_draft(
    store: Store, modelfile: Modelfile, resolve_file: Callable[[str], Path], target: Path
) -> DraftWeights | None:
    """The Modelfile's draft (None without a ``DRAFT`` line), checked to be a model of the
    vocabulary of ``target`` (the first weights file of the model being created)."""
    reference = modelfile.draft
    if reference is None:
        return None
    if from_is_path(reference):
        path = resolve_file(reference)
        draft = DraftWeights(shown_name(reference), file=path)
    else:
        try:
            manifest = store.read_manifest(reference)
        except ModelNotFoundError:
            raise ModelfileError(f"DRAFT {reference}: no such model; pull it first") from None
        layers = tuple(manifest.layers_of(LayerType.MODEL))
        if not layers:
            raise ModelfileError(f"DRAFT {reference}: that model has no weights")
        draft = DraftWeights(parse_name(reference).display, layers=layers)
        path = store.blobs.path(layers[0].digest)
    info = read_gguf_info(path)
    if info.is_projector or is_lora_adapter(info):
        raise GGUFError(f"DRAFT {draft.shown} is not a model (a projector or LoRA adapter)")
    draft = replace(draft, kv_shape={key: getattr(info, key) for key in KV_SHAPE_KEYS})
    problem = vocabulary_difference(target, path)
    if problem:
        shown = shown_name(modelfile.from_) if from_is_path(modelfile.from_) else modelfile.from_
        raise ModelfileError(
            f"DRAFT {draft.shown} does not share the vocabulary of {shown} ({problem}); "
            "a draft model must have the same tokens as the model it drafts for"
        )
    return draft


def draft_layers(
    store: Store, lease: Lease, draft: DraftWeights | None, file_layer: FileLayer
) -> list[Layer]:
    """The manifest layers that hold the draft's weights."""
    if draft is None:
        return []
    if draft.file is not None:
        return [file_layer(store, lease, LayerType.DRAFT, draft.file)]
    lease.add(*(layer.digest for layer in draft.layers))
    return [Layer(LayerType.DRAFT, layer.digest, layer.size) for layer in draft.layers]
