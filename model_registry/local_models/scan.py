"""Finding the GGUF models other apps already downloaded, within fixed bounds.

Each file is checked by its GGUF header (a truncated file or a non-GGUF named ``.gguf`` is
skipped), split models are one model (from their first shard), vision projectors go with the
model beside them, LoRA adapters are left out. A model found twice (an LM Studio link into the
Hugging Face cache) is listed once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path

from localllm.model_registry.adapters import is_lora_adapter
from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import GGUFError
from localllm.model_registry.gguf_info import GGUFInfo, read_gguf_info
from localllm.model_registry.importer import find_shards
from localllm.model_registry.local_models.candidates import FoundModel, ModelSource, ScanResult
from localllm.model_registry.local_models.memo import ImportMemo
from localllm.model_registry.local_models.naming import name_for_file
from localllm.model_registry.local_models.ollama import ollama_models
from localllm.model_registry.local_models.roots import ScanRoots
from localllm.model_registry.local_models.walk import Budget, ScanLimits, inside, walk_ggufs
from localllm.model_registry.store import Store
from localllm.model_registry.store.placing import same_device

__all__ = ["describe_file", "scan"]

_HEX = re.compile(r"[0-9a-f]{64}")
AllowLink = Callable[[Path], bool]


def scan(roots: ScanRoots, store: Store, limits: ScanLimits | None = None) -> ScanResult:
    budget = Budget(limits or ScanLimits())
    found: list[FoundModel] = []
    for hub in roots.hugging_face:
        for repo in _hf_repos(hub, budget):
            allow = lambda t, blobs=repo / "blobs": inside(t, blobs)  # noqa: E731
            found += _in_tree(repo / "snapshots", "huggingface", budget, allow)
    named: tuple[tuple[ModelSource, tuple[Path, ...]], ...] = (
        ("lmstudio", roots.lm_studio),
        ("folder", roots.folders),
    )
    for source, folders in named:
        for root in folders:
            allow = lambda t, r=root: inside(t, r)  # noqa: E731
            found += _in_tree(root, source, budget, allow)
    for root in roots.ollama:
        found += _from_ollama(root, budget)
    return ScanResult(tuple(_settle(store, found)), budget.truncated)


def describe_file(path: Path, store: Store | None = None) -> FoundModel:
    """A file the user named: checked as a GGUF model (:class:`GGUFError` otherwise)."""
    shards = find_shards(path)
    info = _model_info(shards[0])
    model = _found("file", path, shards, info, None)
    return next(iter(_settle(store, [model]))) if store is not None else model


def _hf_repos(hub: Path, budget: Budget) -> Iterator[Path]:
    try:
        repos = sorted(p for p in hub.iterdir() if p.name.startswith("models--"))
    except OSError:
        return
    for repo in repos:
        if budget.spend_entry() and repo.is_dir() and not repo.is_symlink():
            yield repo


def _in_tree(root: Path, source: ModelSource, budget: Budget, allow: AllowLink) -> list[FoundModel]:
    if not root.is_dir() or root.is_symlink():
        return []
    by_directory: dict[Path, list[Path]] = {}
    for path in walk_ggufs(root, budget, allow):
        by_directory.setdefault(path.parent, []).append(path)
    found: list[FoundModel] = []
    for paths in by_directory.values():
        found += _in_directory(paths, source, budget, allow)
    return found


def _in_directory(
    paths: list[Path], source: ModelSource, budget: Budget, allow: AllowLink
) -> list[FoundModel]:
    models: list[tuple[list[Path], GGUFInfo]] = []
    projector: Path | None = None
    for path in paths:
        shards = _first_shard_set(path, allow)
        if shards is None or not budget.spend_file():
            continue
        try:
            info = read_gguf_info(path)
        except (GGUFError, OSError):
            continue  # truncated, not a GGUF, unreadable: not offered
        if info.is_projector:
            projector = projector or path
        elif not is_lora_adapter(info) and info.architecture:
            models.append((shards, info))
    return [_found(source, shards[0], shards, info, projector) for shards, info in models]


def _first_shard_set(path: Path, allow: AllowLink) -> list[Path] | None:
    """The shards when ``path`` is the first (or only) one, each allowed; else None."""
    try:
        shards = find_shards(path)
    except GGUFError:
        return None
    if shards[0] != path:
        return None
    for shard in shards:
        if shard.is_symlink() and not allow(shard.resolve()):
            return None
    return shards


def _from_ollama(root: Path, budget: Budget) -> list[FoundModel]:
    found = []
    for model in ollama_models(root, budget):
        if not budget.spend_file():
            break
        try:
            info = _model_info(model.weights)
        except (GGUFError, OSError):
            continue
        projector = model.projector[0] if model.projector else None
        expected = {model.weights: model.digest}
        if model.projector:
            expected[model.projector[0]] = model.projector[1]
        candidate = _found("ollama", model.weights, [model.weights], info, projector)
        found.append(replace(candidate, name=model.name, expected=expected, extras=model.extras))
    return found


def _model_info(path: Path) -> GGUFInfo:
    try:
        info = read_gguf_info(path)
    except OSError as error:
        raise GGUFError(f"cannot read {path.name}: {error.strerror or error}") from None
    if info.is_projector:
        raise GGUFError(f"{path.name} is a vision projector (mmproj), not a model")
    if is_lora_adapter(info):
        raise GGUFError(f"{path.name} is a LoRA adapter, not a model")
    if not info.architecture:
        raise GGUFError(f"{path.name} names no architecture (general.architecture)")
    return info


def _found(
    source: ModelSource,
    path: Path,
    shards: list[Path],
    info: GGUFInfo,
    projector: Path | None,
) -> FoundModel:
    files = (*shards, *([projector] if projector else []))
    expected = {}
    for file in files:
        real = file.resolve()
        if real != file and _HEX.fullmatch(real.name):  # a Hugging Face LFS blob
            expected[file] = Digest(real.name)
    return FoundModel(
        source=source,
        name=name_for_file(path.name),
        path=path,
        files=tuple(shards),
        size=sum(_size(f) for f in files),
        architecture=info.architecture,
        quantization=info.file_type,
        parameter_size=info.parameter_size,
        projector=projector,
        expected=expected,
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _settle(store: Store | None, found: Iterable[FoundModel]) -> Iterator[FoundModel]:
    """Each model once (by its resolved first file), told whether the store already holds it
    and whether it can be linked there."""
    seen: set[Path] = set()
    memo = ImportMemo(store) if store is not None else None
    for model in found:
        real = model.files[0].resolve()
        if real in seen:
            continue
        seen.add(real)
        if store is None or memo is None:
            yield model
            continue
        yield replace(
            model,
            in_store=memo.holds(model.files[0], model.expected.get(model.files[0])),
            linkable=same_device(real, store.layout.blobs_dir),
        )
