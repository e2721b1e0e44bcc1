"""What the native API says about a model: its details, ``model_info``, capabilities, and
its parameters and Modelfile as text, all from the store's small blobs (never a path).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from localllm.daemon.api.native_models import (
    AdapterOut,
    ModelDetailsOut,
    ModelSummary,
    ShowResponse,
)
from localllm.daemon.errors import TemplateError
from localllm.daemon.inference.resolve import ResolvedModel
from localllm.daemon.inference.templates import ChatTemplate
from localllm.daemon.inference.thinking import detect_format
from localllm.model_registry.errors import GGUFError, ModelfileError
from localllm.model_registry.gguf_info import read_gguf_info
from localllm.model_registry.modelfile import Modelfile, render_modelfile
from localllm.model_registry.names import ModelName
from localllm.model_registry.recommended_sampling import GGUF_KEY_OF_OPTION
from localllm.model_registry.store import LayerType, ModelDetails, ModelEntry, Store

__all__ = [
    "details_out",
    "iso_time",
    "listed_name",
    "model_summary",
    "show_response",
    "transcription_show_response",
    "voice_show_response",
]

# GGUF summary field -> model_info key ("{arch}" is the architecture)
_INFO_KEYS = {
    "architecture": "general.architecture",
    "name": "general.name",
    "parameter_count": "general.parameter_count",
    "license": "general.license",
    "context_length": "{arch}.context_length",
    "embedding_length": "{arch}.embedding_length",
    "block_count": "{arch}.block_count",
    "head_count": "{arch}.attention.head_count",
    "head_count_kv": "{arch}.attention.head_count_kv",
    "key_length": "{arch}.attention.key_length",  # values per head, where not n_embd / heads:
    "value_length": "{arch}.attention.value_length",  # what a KV cache estimate needs
    "vocab_size": "{arch}.vocab_size",
    "tokenizer_model": "tokenizer.ggml.model",
}


def iso_time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def listed_name(name: ModelName) -> str:
    """Ollama always lists the tag (``tiny:latest``)."""
    display = name.display
    return display if ":" in display.rsplit("/", 1)[-1] else f"{display}:{name.tag}"


def details_out(config: Mapping[str, object]) -> ModelDetailsOut:
    families = config.get("model_families")
    return ModelDetailsOut(
        format=str(config.get("model_format") or "gguf"),
        family=str(config.get("model_family") or ""),
        families=[str(f) for f in families] if isinstance(families, list) else None,
        parameter_size=str(config.get("model_type") or ""),
        quantization_level=str(config.get("file_type") or ""),
    )


def model_summary(store: Store, entry: ModelEntry) -> ModelSummary:
    name = listed_name(entry.name)
    return ModelSummary(
        name=name,
        model=name,
        modified_at=iso_time(entry.modified),
        size=entry.size,
        digest=entry.model_id.hex,
        details=details_out(store.read_config(entry.manifest)),
    )


def show_response(
    store: Store, details: ModelDetails, model: ResolvedModel, modified: float, verbose: bool
) -> ShowResponse:
    projector = details.config.get("projector")
    return ShowResponse(
        modelfile=_modelfile(details, model),
        parameters=parameters_text(details.parameters),
        template=details.template or "",
        system=details.system or "",
        license=details.license or "",
        details=details_out(details.config),
        model_info=_model_info(store, details, verbose),
        capabilities=_capabilities(model),
        modified_at=iso_time(modified),
        messages=details.messages or None,
        projector_info=projector if isinstance(projector, dict) else None,
        adapters=[
            AdapterOut(digest=layer.digest.wire, size=layer.size, scale=layer.scale)
            for layer in details.manifest.layers_of(LayerType.ADAPTER)
        ],
        draft=model.target.draft_name,
    )


def transcription_show_response(details: ModelDetails, modified: float) -> ShowResponse:
    """A transcription model (Whisper in CTranslate2 form) from its config blob: it has no
    GGUF metadata, template or parameters, and nothing here plans how it runs."""
    config = details.config
    family = str(config.get("model_family") or "")
    facts = config.get("transcription")
    info: dict[str, Any] = {"general.architecture": family}
    if isinstance(config.get("parameter_count"), int):
        info["general.parameter_count"] = config["parameter_count"]
    if isinstance(facts, Mapping) and isinstance(facts.get("languages"), int):
        info[f"{family}.languages"] = facts["languages"]
    return _audio_show(details, modified, info, "a transcription model", "transcription")


def voice_show_response(details: ModelDetails, modified: float) -> ShowResponse:
    """A Piper voice from its config blob: no GGUF metadata, template or parameters; what it
    speaks (its language, sample rate, quality, speakers) in ``model_info``."""
    config = details.config
    family = str(config.get("model_family") or "")
    facts = config.get("voice")
    info: dict[str, Any] = {"general.architecture": family}
    if isinstance(facts, Mapping):
        for key in ("language", "sample_rate", "quality", "speakers"):
            if isinstance(facts.get(key), str | int):
                info[f"{family}.{key}"] = facts[key]
    return _audio_show(details, modified, info, "a voice", "speech")


def _audio_show(
    details: ModelDetails, modified: float, info: dict[str, Any], what: str, capability: str
) -> ShowResponse:
    """``/api/show`` of a model of several files (no GGUF: no template, no parameters)."""
    return ShowResponse(
        modelfile=f"# {details.name.display} is {what}: no Modelfile builds on it\n",
        parameters="",
        template="",
        system="",
        license=details.license or "",
        details=details_out(details.config),
        model_info=info,
        capabilities=[capability],
        modified_at=iso_time(modified),
    )


def parameters_text(parameters: Mapping[str, object]) -> str:
    """Ollama's text form: ``key`` padded to 30 columns, then the value (strings quoted)."""
    lines = []
    for key, value in parameters.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                shown = json.dumps(item, ensure_ascii=False)
            else:
                shown = json.dumps(item)
            lines.append(f"{key:<30} {shown}")
    return "\n".join(lines)


def _model_info(store: Store, details: ModelDetails, verbose: bool) -> dict[str, Any]:
    gguf = details.gguf
    arch = str(gguf.get("architecture") or details.config.get("architecture") or "")
    info: dict[str, Any] = {}
    for field, key in _INFO_KEYS.items():
        value = gguf.get(field)
        if value is not None and (arch or "{arch}" not in key):
            info[key.format(arch=arch)] = value
    sampling = gguf.get("sampling")
    for option, value in sampling.items() if isinstance(sampling, Mapping) else ():
        if option in GGUF_KEY_OF_OPTION:
            info[GGUF_KEY_OF_OPTION[option]] = value
    if verbose:
        info.update(_full_metadata(store, details))
    return info


def _full_metadata(store: Store, details: ModelDetails) -> dict[str, Any]:
    """Every GGUF key the (hostile-file-safe) header reader keeps; huge arrays are left out."""
    layers = details.manifest.layers_of(LayerType.MODEL)
    if not layers:
        return {}
    try:
        info = read_gguf_info(store.blobs.path(layers[0].digest))
    except (OSError, GGUFError):
        return {}
    return {key: value for key, value in info.metadata.items() if _jsonable(value)}


def _jsonable(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _capabilities(model: ResolvedModel) -> list[str]:
    if model.reranker:
        return ["rerank"]
    if model.embedding_only:
        return ["embedding"]
    capabilities = ["completion"]
    if model.has_chat_template:  # not one of Ollama's: a base model has none and says so
        capabilities.append("chat")
    if _supports_tools(model.template):
        capabilities.append("tools")
    if model.target.projector_path:
        capabilities.append("vision")
    if detect_format(model.template) is not None:
        capabilities.append("thinking")
    return capabilities


def _supports_tools(template: str | None) -> bool:
    if not template:
        return False
    try:
        return ChatTemplate(template).supports_tools
    except TemplateError:
        return False


def _modelfile(details: ModelDetails, model: ResolvedModel) -> str:
    """A Modelfile that rebuilds this model from itself: ``FROM`` names the model, never a
    file, so ``localllm create other -f`` of it derives a new model sharing the weights."""
    header = "# Modelfile generated by `localllm show`; FROM reuses this model's weights\n"
    modelfile = Modelfile(
        from_=details.name.display,
        system=details.system,
        template=model.template if model.template_origin == "Modelfile" else None,
        parameters=dict(details.parameters),
        license=[details.license] if details.license else [],
        messages=[(str(m.get("role")), str(m.get("content"))) for m in details.messages],
    )
    try:
        return header + render_modelfile(modelfile)
    except ModelfileError:  # a text no Modelfile syntax can hold: keep what can be written
        bare = Modelfile(from_=modelfile.from_, parameters=modelfile.parameters)
        return header + render_modelfile(bare)
