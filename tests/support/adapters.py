"""Files that must never be taken as a LoRA adapter, for the tests of every layer that checks
(the importer, ``/api/create``, the CLI before it uploads)."""

from __future__ import annotations

from pathlib import Path

from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.model_writers.lora import write_tiny_lora
from tests.support.model_writers.projector import write_tiny_projector

__all__ = ["NOT_ADAPTERS", "not_an_adapter"]

NOT_ADAPTERS = ["random bytes", "a full model", "a projector", "another architecture"]


def not_an_adapter(kind: str, tmp_path: Path, model: Path) -> tuple[Path, str]:
    """A file that must not be taken as an ADAPTER of ``model``, and what the refusal says."""
    if kind == "random bytes":
        path = tmp_path / "id_rsa"
        path.write_bytes(b"-----BEGIN OPENSSH PRIVATE KEY-----\n" + bytes(range(256)) * 8)
        return path, "id_rsa is not a LoRA adapter: file is not a GGUF model"
    if kind == "a full model":  # of the same architecture, new to the store
        path = write_tiny_model(tmp_path / "model.gguf", seed=77)
        return path, "model.gguf is a model, not a LoRA adapter"
    if kind == "a projector":
        path = write_tiny_projector(tmp_path / "mmproj.gguf")
        return path, "mmproj.gguf is a vision projector, not a LoRA adapter"
    path = write_tiny_lora(tmp_path / "qwen.gguf", model, architecture="qwen2")
    return path, "qwen.gguf is a LoRA adapter for 'qwen2' models, but the base model's"
