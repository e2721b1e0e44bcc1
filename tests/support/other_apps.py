"""Fake stores of other apps (Hugging Face cache, LM Studio, Ollama) laid out as those apps
lay them out, holding generated tiny GGUF files."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from localllm.model_registry.tiny_gguf import write_tiny_model


def hf_cache_model(hub: Path, repo: str, file_name: str, seed: int = 0, **shape) -> Path:
    """``hub/models--org--name/snapshots/<rev>/file`` -> ``../../blobs/<sha256>``, as
    huggingface_hub stores an LFS file; returns the snapshot path."""
    repo_dir = hub / f"models--{repo.replace('/', '--')}"
    staging = repo_dir / "staging.gguf"
    staging.parent.mkdir(parents=True, exist_ok=True)
    write_tiny_model(staging, seed=seed, **shape)
    digest = hashlib.sha256(staging.read_bytes()).hexdigest()
    blob = repo_dir / "blobs" / digest
    blob.parent.mkdir(parents=True, exist_ok=True)
    staging.replace(blob)
    snapshot = repo_dir / "snapshots" / ("0" * 40) / file_name
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(Path("..") / ".." / "blobs" / digest, snapshot)
    (repo_dir / "refs").mkdir(exist_ok=True)
    (repo_dir / "refs" / "main").write_text("0" * 40)
    return snapshot


def lmstudio_model(models: Path, publisher: str, repo: str, file_name: str, seed: int = 0):
    path = models / publisher / repo / file_name
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_tiny_model(path, seed=seed)


def ollama_model(
    root: Path, name: str, tag: str, seed: int = 0, template: str | None = None
) -> Path:
    """``root/manifests/registry.ollama.ai/library/name/tag`` naming ``blobs/sha256-...``;
    returns the weights blob."""
    blobs = root / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    staging = write_tiny_model(blobs / "staging.gguf", seed=seed)
    layers = [_blob(blobs, staging.read_bytes(), "model")]
    staging.unlink()
    if template is not None:
        layers.append(_blob(blobs, template.encode(), "template"))
    layers.append(
        _blob(blobs, json.dumps({"temperature": 0.25, "stop": ["<x>"]}).encode(), "params")
    )
    config = _blob(blobs, b"{}", "config")
    manifest = root / "manifests" / "registry.ollama.ai" / "library" / name / tag
    manifest.parent.mkdir(parents=True, exist_ok=True)
    body = {"schemaVersion": 2, "config": config, "layers": layers}
    manifest.write_text(json.dumps(body))
    return blobs / layers[0]["digest"].replace(":", "-")


def _blob(blobs: Path, data: bytes, kind: str) -> dict:
    digest = hashlib.sha256(data).hexdigest()
    (blobs / f"sha256-{digest}").write_bytes(data)
    media = f"application/vnd.ollama.image.{kind}"
    return {"mediaType": media, "digest": f"sha256:{digest}", "size": len(data)}


def copy_tree(source: Path, destination: Path) -> None:
    shutil.copytree(source, destination, symlinks=True)
