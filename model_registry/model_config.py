"""The config blob: a small JSON summary of a model, written once when it enters the store.

Listing and showing models read this instead of re-parsing multi-GB GGUF files.
"""

from __future__ import annotations

from collections.abc import Mapping

from localllm.model_registry.gguf_info import GGUFInfo

__all__ = ["config_from_gguf"]


def config_from_gguf(
    info: GGUFInfo,
    source: Mapping[str, object],
    projector: GGUFInfo | None = None,
) -> dict[str, object]:
    """Build the config document for a model whose first weights file is described by ``info``."""
    config: dict[str, object] = {
        "model_format": "gguf",
        "model_family": info.architecture,
        "model_families": [info.architecture] + (["clip"] if projector else []),
        "model_type": info.parameter_size,
        "file_type": info.file_type,
        "architecture": info.architecture,
        "parameter_count": info.parameter_count,
        "context_length": info.context_length,
        "embedding_length": info.embedding_length,
        "gguf": info.to_summary(),
        "source": dict(source),
    }
    if projector is not None:
        config["projector"] = projector.to_summary()
    return config
