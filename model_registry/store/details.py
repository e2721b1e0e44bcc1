"""Everything ``show`` tells about one model, gathered from its manifest and small blobs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from localllm.model_registry.digests import Digest
from localllm.model_registry.names import ModelName, parse_name
from localllm.model_registry.store.manifests import LayerType, Manifest
from localllm.model_registry.store.store import Store

__all__ = ["ModelDetails", "show_model"]


@dataclass(frozen=True, slots=True)
class ModelDetails:
    name: ModelName
    model_id: Digest
    manifest: Manifest
    config: dict[str, object]
    template: str | None  # the Modelfile TEMPLATE, else the GGUF's chat template
    system: str | None
    parameters: dict[str, object]
    license: str | None
    messages: list[dict[str, str]]

    @property
    def gguf(self) -> dict[str, object]:
        summary = self.config.get("gguf")
        return summary if isinstance(summary, dict) else {}

    @property
    def has_projector(self) -> bool:
        return bool(self.manifest.layers_of(LayerType.PROJECTOR))


def show_model(store: Store, name: ModelName | str) -> ModelDetails:
    manifest = store.read_manifest(name)
    config = store.read_config(manifest)
    summary = config.get("gguf")
    # the summary the importer wrote: of its values, these two are text
    gguf = cast("dict[str, str | None]", summary if isinstance(summary, dict) else {})
    template = store.read_text_layer(manifest, LayerType.TEMPLATE) or gguf.get("chat_template")
    license_text = store.read_text_layer(manifest, LayerType.LICENSE) or gguf.get("license")
    parameters = cast("dict[str, object] | None", store.read_json_layer(manifest, LayerType.PARAMS))
    messages = cast(
        "list[dict[str, str]] | None", store.read_json_layer(manifest, LayerType.MESSAGES)
    )
    return ModelDetails(
        name=_parsed(name),
        model_id=manifest.model_id,
        manifest=manifest,
        config=config,
        template=template,
        system=store.read_text_layer(manifest, LayerType.SYSTEM),
        parameters=dict(parameters or {}),
        license=license_text,
        messages=list(messages or []),
    )


def _parsed(name: ModelName | str) -> ModelName:
    return name if isinstance(name, ModelName) else parse_name(name)
