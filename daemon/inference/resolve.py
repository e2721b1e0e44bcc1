"""From a model name in a request to everything inference needs about that model.

Reads only the manifest and the small config and text layers (never the GGUF itself), so it
is cheap enough to do on every request, and a model re-pulled under the same name is picked
up at once (its new weight paths make the scheduler reload it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference.templates import TemplateOrigin
from localllm.daemon.runners.types import LoraAdapter
from localllm.daemon.scheduler import LoadTarget, ModelFootprint
from localllm.model_registry.errors import ModelNotFoundError
from localllm.model_registry.names import parse_name
from localllm.model_registry.store import LayerType, Store

__all__ = ["FALLBACK_STOPS", "ResolvedModel", "RunSettings", "resolve_model", "with_draft"]

_EMBEDDING_ARCHITECTURES = ("bert", "nomic-bert", "jina-bert", "t5encoder", "modern-bert")
_RANK_POOLING = 4  # llama.cpp's LLAMA_POOLING_TYPE_RANK: a reranker's classification head
# A model with no chat template of its own (a base model) is prompted in ChatML, the fallback
# ``templates.TemplateCache`` picks. Its markers are no special tokens to such a model, so it
# writes them out as text when it imitates the format: stop at the end of its turn, or where
# it starts writing the next one.
FALLBACK_STOPS = ("<|im_end|>", "<|im_start|>")


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    name: str  # display name, as listed by /v1/models
    target: LoadTarget
    architecture: str = ""
    template: str | None = None
    template_origin: TemplateOrigin = "model"  # "Modelfile" when the TEMPLATE layer set it
    system: str | None = None
    messages: tuple[Mapping[str, object], ...] = ()
    params: Mapping[str, object] = field(default_factory=dict)
    # The authors' sampling (GGUF general.sampling.*); None: not recorded at import (older)
    recommended_sampling: Mapping[str, object] | None = None
    context_length: int | None = None
    embedding_length: int | None = None
    reranker: bool = False  # scores query-document pairs (rank pooling); it neither embeds
    # nor generates, and loads as embedding models do

    @property
    def embedding_only(self) -> bool:
        return self.target.embedding_only

    @property
    def has_chat_template(self) -> bool:
        """False for a base model: its chats are prompted with the fallback template."""
        return self.template is not None

    @property
    def fallback_stops(self) -> tuple[str, ...]:
        """Stop strings a chat with this model's template needs (the fallback's end marker)."""
        return () if self.has_chat_template else FALLBACK_STOPS


@dataclass(frozen=True, slots=True)
class RunSettings:
    """How a model runs for a request that sets no load options."""

    context_length: int
    context_reason: str
    num_parallel: int
    kv_cache_type: str
    flash_attention: str
    parallel_reason: str = "LOCALLLM_NUM_PARALLEL"  # why that many slots


def resolve_model(store: Store, text: str) -> ResolvedModel:
    """The model named ``text``; ModelNotFoundError says how to get it."""
    name = parse_name(text)
    try:
        manifest = store.read_manifest(name)
    except ModelNotFoundError:
        raise ModelNotFoundError(
            f"model {name.display!r} not found; run `localllm pull {name.display}` to download it"
        ) from None
    if manifest.is_transcription:  # no GGUF to load: a 400 that says where it is used
        raise BadRequestError(
            f"{name.display} is a transcription model; use /v1/audio/transcriptions or "
            "`localllm transcribe`",
            param="model",
        )
    if manifest.is_voice:  # a Piper voice: no GGUF either
        raise BadRequestError(
            f"{name.display} is a voice (text to speech); use /v1/audio/speech or `localllm say`",
            param="model",
        )
    config = store.read_config(manifest)
    gguf = _mapping(config.get("gguf")) or {}
    weights = manifest.layers_of(LayerType.MODEL)
    if not weights:
        raise ModelNotFoundError(f"model {name.display!r} has no weights; pull it again")
    projector = manifest.layers_of(LayerType.PROJECTOR)
    adapters = manifest.layers_of(LayerType.ADAPTER)
    drafts = manifest.layers_of(LayerType.DRAFT)
    architecture = str(config.get("architecture") or gguf.get("architecture") or "")
    draft_gguf = _mapping(config.get("draft_gguf")) or {}  # older models: no numbers kept
    reranker = gguf.get("pooling_type") == _RANK_POOLING
    target = LoadTarget(
        name=name.display,
        model_paths=tuple(str(store.blobs.path(layer.digest)) for layer in weights),
        footprint=_footprint(
            sum(layer.size for layer in (*weights, *projector[-1:], *adapters, *drafts)),
            gguf,
            _footprint(sum(layer.size for layer in drafts), draft_gguf) if drafts else None,
        ),
        projector_path=str(store.blobs.path(projector[-1].digest)) if projector else None,
        adapters=tuple(
            LoraAdapter(str(store.blobs.path(layer.digest)), layer.scale) for layer in adapters
        ),
        draft_name=str(config.get("draft") or "the draft model") if drafts else None,
        draft_paths=tuple(str(store.blobs.path(layer.digest)) for layer in drafts),
        embedding_only=reranker or any(a in architecture for a in _EMBEDDING_ARCHITECTURES),
        n_ctx_train=_int(config.get("context_length") or gguf.get("context_length")),
    )
    own_template = store.read_text_layer(manifest, LayerType.TEMPLATE)
    messages = store.read_json_layer(manifest, LayerType.MESSAGES)
    params = store.read_json_layer(manifest, LayerType.PARAMS)
    return ResolvedModel(
        name=name.display,
        target=target,
        architecture=architecture,
        template=own_template or _str(gguf.get("chat_template")),
        template_origin="Modelfile" if own_template else "model",
        system=store.read_text_layer(manifest, LayerType.SYSTEM),
        messages=tuple(m for m in _list(messages) if isinstance(m, Mapping)),
        params=params if isinstance(params, Mapping) else {},
        recommended_sampling=_mapping(gguf.get("sampling")),
        context_length=target.n_ctx_train,
        embedding_length=_int(config.get("embedding_length") or gguf.get("embedding_length")),
        reranker=reranker,
    )


def with_draft(store: Store, target: LoadTarget, name: object) -> LoadTarget:
    """``target`` drafted for by the installed model a request's ``draft`` option names (unset:
    the model's own DRAFT, if any). Its vocabulary is checked by the runner when it loads."""
    if name is None or name == "":
        return target
    if not isinstance(name, str):
        raise BadRequestError("draft must be the name of an installed model", param="draft")
    try:
        draft = resolve_model(store, name)
    except (ModelNotFoundError, ValueError):
        raise BadRequestError(
            f"draft model {name[:80]!r} is not installed; pull it or name another", param="draft"
        ) from None
    if draft.embedding_only:
        raise BadRequestError(f"draft model {draft.name!r} is an embedding model", param="draft")
    drafted = draft.target.footprint
    footprint = replace(
        target.footprint,
        weights_bytes=target.footprint.weights_bytes + drafted.weights_bytes,
        draft=replace(drafted, draft=None),
    )
    return replace(
        target, draft_name=draft.name, draft_paths=draft.target.model_paths, footprint=footprint
    )


def _footprint(
    weights_bytes: int, gguf: Mapping[str, object], draft: ModelFootprint | None = None
) -> ModelFootprint:
    """``weights_bytes``: every file the model loads, a draft model's too; ``draft``: the
    draft model's own summary (its files' bytes, and its numbers where they were kept)."""
    return ModelFootprint(
        weights_bytes=weights_bytes,
        n_layer=_int(gguf.get("block_count")) or 0,
        n_embd=_int(gguf.get("embedding_length")) or 0,
        n_head=_int(gguf.get("head_count")) or 0,
        n_head_kv=_int(gguf.get("head_count_kv")) or 0,
        head_size=_int(gguf.get("key_length")) or 0,
        draft=draft,
    )


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _mapping(value: object) -> Mapping[str, object] | None:
    return value if isinstance(value, Mapping) else None


def _list(value: object) -> list[object]:
    """A JSON layer's array; anything else holds no messages."""
    return value if isinstance(value, list) else []


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
