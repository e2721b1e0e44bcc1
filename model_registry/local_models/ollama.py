"""Ollama's store: ``manifests/<host>/<namespace>/<model>/<tag>`` JSON files whose layers name
blobs ``blobs/sha256-<hex>``. The weights layer is ``application/vnd.ollama.image.model``;
the template, system prompt and parameters come along where they are small and readable.

Blob names are digests Ollama claims; adding one hashes it and checks the claim.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import InvalidParameterError
from localllm.model_registry.importer import ModelExtras
from localllm.model_registry.local_models.naming import name_for_ollama
from localllm.model_registry.local_models.walk import Budget
from localllm.model_registry.modelfile import PARAMETER_TYPES
from localllm.model_registry.parameters import check_parameter

__all__ = ["OllamaModel", "ollama_models"]

_MEDIA = "application/vnd.ollama.image."
_MAX_MANIFEST = 1 << 20
_MAX_TEXT = 256 << 10


@dataclass(frozen=True, slots=True)
class OllamaModel:
    name: str
    weights: Path
    digest: Digest
    projector: tuple[Path, Digest] | None
    extras: ModelExtras


def ollama_models(root: Path, budget: Budget) -> Iterator[OllamaModel]:
    """Every readable model manifest under ``root/manifests`` (host/namespace/model/tag)."""
    manifests = root / "manifests"
    if not manifests.is_dir():
        return
    for host in _subdirs(manifests, budget):
        for namespace in _subdirs(host, budget):
            for model in _subdirs(namespace, budget):
                for tag in _files(model, budget):
                    found = _read(root, namespace.name, model.name, tag)
                    if found is not None:
                        yield found


def _subdirs(directory: Path, budget: Budget) -> list[Path]:
    return [p for p in _entries(directory, budget) if p.is_dir() and not p.is_symlink()]


def _files(directory: Path, budget: Budget) -> list[Path]:
    return [p for p in _entries(directory, budget) if p.is_file() and not p.is_symlink()]


def _entries(directory: Path, budget: Budget) -> list[Path]:
    try:
        children = sorted(directory.iterdir())
    except OSError:
        return []
    return [child for child in children if budget.spend_entry()]


def _read(root: Path, namespace: str, model: str, tag_file: Path) -> OllamaModel | None:
    try:
        if tag_file.stat().st_size > _MAX_MANIFEST:
            return None
        layers = json.loads(tag_file.read_bytes()).get("layers") or []
        by_type = {str(layer["mediaType"]).removeprefix(_MEDIA): layer for layer in layers}
        weights = _blob(root, by_type["model"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if weights is None:
        return None
    projector = _blob(root, by_type["projector"]) if "projector" in by_type else None
    return OllamaModel(
        name=name_for_ollama(namespace, model, tag_file.name),
        weights=weights[0],
        digest=weights[1],
        projector=projector,
        extras=ModelExtras(
            template=_text(root, by_type.get("template")),
            system=_text(root, by_type.get("system")),
            parameters=_parameters(_text(root, by_type.get("params"))),
        ),
    )


def _blob(root: Path, layer: dict[str, object]) -> tuple[Path, Digest] | None:
    """The layer's blob file, only as a plain file inside ``root/blobs``."""
    try:
        digest = Digest.parse(str(layer["digest"]))
    except (ValueError, KeyError, TypeError):
        return None
    path = root / "blobs" / digest.filename
    if path.is_symlink() or not path.is_file():
        return None
    return path, digest


def _text(root: Path, layer: dict[str, object] | None) -> str | None:
    found = _blob(root, layer) if layer else None
    if found is None or found[0].stat().st_size > _MAX_TEXT:
        return None
    return found[0].read_text(encoding="utf-8", errors="replace")


def _parameters(text: str | None) -> dict[str, object]:
    """Ollama's params JSON, kept only where our parameter table accepts each value."""
    try:
        values = json.loads(text) if text else {}
    except ValueError:
        return {}
    kept: dict[str, object] = {}
    for key, value in values.items() if isinstance(values, dict) else ():
        if key not in PARAMETER_TYPES:
            continue
        try:
            kept[key] = check_parameter(key, value)
        except (InvalidParameterError, TypeError, ValueError):
            continue
    return kept
