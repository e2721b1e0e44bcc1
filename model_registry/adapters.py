"""LoRA adapters: whether a file is one, and whether it fits a base model.

llama.cpp applies an adapter only if its GGUF says ``general.type = adapter`` and
``adapter.type = lora`` and names the base model's architecture. Checking that before a model
is created (and before the CLI uploads anything) turns a stray file (a private key, a full
model) or an adapter made for another model into a clear error at once, instead of bytes stored
under a model that can never load. Messages name the file by its base name only.
"""

from __future__ import annotations

import os
from pathlib import PurePath
from typing import BinaryIO

import gguf

from localllm.model_registry.errors import GGUFError
from localllm.model_registry.gguf_info import GGUFInfo, read_gguf_info

__all__ = [
    "check_lora_adapter",
    "is_lora_adapter",
    "model_architecture",
    "read_lora_adapter",
    "shown_name",
]

_HINT = "an ADAPTER must be a LoRA adapter GGUF (general.type=adapter, adapter.type=lora)"


def shown_name(reference: str) -> str:
    """How a file is named in an error: its last path part, never the folders around it."""
    return PurePath(reference.replace("\\", "/")).name or "the file"


def read_lora_adapter(
    path: str | os.PathLike[str] | BinaryIO, base_architecture: str | None, shown: str
) -> GGUFInfo:
    """Read ``path`` (or the file already open) and check it is a LoRA adapter for
    ``base_architecture`` (any when None).

    Raises :class:`GGUFError` naming ``shown``; an unreadable file is a GGUFError too.
    """
    try:
        info = read_gguf_info(path)
    except GGUFError as error:
        raise GGUFError(f"{shown} is not a LoRA adapter: {error}; {_HINT}") from None
    except OSError as error:
        raise GGUFError(f"cannot read {shown}: {error.strerror or 'read failed'}") from None
    check_lora_adapter(info, base_architecture, shown)
    return info


def check_lora_adapter(info: GGUFInfo, base_architecture: str | None, shown: str) -> None:
    """Refuse anything but a LoRA adapter GGUF for ``base_architecture``."""
    kind = info.metadata.get(gguf.Keys.General.TYPE)
    if kind != gguf.GGUFType.ADAPTER:
        what = "a vision projector" if info.is_projector else "a model"
        raise GGUFError(f"{shown} is {what}, not a LoRA adapter; {_HINT}")
    adapter_type = info.metadata.get(gguf.Keys.Adapter.TYPE)
    if adapter_type != "lora":
        raise GGUFError(
            f"{shown} is a {str(adapter_type)[:40]!r} adapter; only LoRA adapters "
            "(adapter.type=lora) are supported"
        )
    if base_architecture and info.architecture != base_architecture:
        raise GGUFError(
            f"{shown} is a LoRA adapter for {info.architecture[:40]!r} models, but the base "
            f"model's architecture is {base_architecture[:40]!r}"
        )


def is_lora_adapter(info: GGUFInfo) -> bool:
    """Whether a GGUF says it is an adapter (so it cannot be a model's weights)."""
    return info.metadata.get(gguf.Keys.General.TYPE) == gguf.GGUFType.ADAPTER


def model_architecture(path: str | os.PathLike[str]) -> str | None:
    """The architecture a model file declares (what its adapters must be made for); None when
    the file cannot be read as GGUF (whoever imports it will say why)."""
    try:
        return read_gguf_info(path).architecture or None
    except (OSError, GGUFError):
        return None
