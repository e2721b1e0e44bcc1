"""A model name for a file found on disk, valid under :mod:`localllm.model_registry.names`.

``Qwen2.5-0.5B-Instruct-Q4_K_M.gguf`` becomes ``qwen2.5-0.5b-instruct:q4_k_m``; a shard's
``-00001-of-00003`` and an Ollama name's own ``name:tag`` are kept as they mean.
"""

from __future__ import annotations

import re
from pathlib import Path

from localllm.model_registry.errors import InvalidNameError
from localllm.model_registry.names import parse_name

__all__ = ["name_for_file", "name_for_folder", "name_for_ollama", "name_for_voice"]

_SHARD = re.compile(r"-\d{5}-of-\d{5}$", re.IGNORECASE)
_QUANT = re.compile(r"[-.](i?q\d[\w]*|f16|bf16|f32)$", re.IGNORECASE)
_INVALID = re.compile(r"[^a-z0-9_.-]+")
_WHISPER = re.compile(r"(?:faster-)?whisper-(.+?)(?:-ct2)?")
# Piper's voice files: <language>_<REGION>-<name>-<quality>.onnx (en_US-joe-medium.onnx)
_PIPER = re.compile(r"[a-z]{2,3}(?:_[a-z0-9]+)?-(.+?)(?:-(x_low|low|medium|high))?")


def _part(text: str, fallback: str) -> str:
    clean = _INVALID.sub("-", text.lower()).strip("-._")[:80].rstrip("-._")
    return clean or fallback


def name_for_file(file_name: str) -> str:
    """``Qwen2.5-0.5B-Instruct-Q4_K_M.gguf`` -> ``qwen2.5-0.5b-instruct:q4_k_m``."""
    stem = _SHARD.sub("", file_name.removesuffix(".gguf").removesuffix(".GGUF"))
    match = _QUANT.search(stem)
    base, tag = (stem[: match.start()], match.group(1)) if match else (stem, "latest")
    return _checked(f"{_part(base, 'model')}:{_part(tag, 'latest')}")


def name_for_folder(folder: Path) -> str:
    """``faster-whisper-large-v3-turbo-ct2`` -> ``whisper:large-v3-turbo``; a Hugging Face
    cache snapshot (``models--org--repo/snapshots/<commit>``) is named after its repository."""
    label = folder.name
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        label = folder.parent.parent.name.rsplit("--", 1)[-1]
    match = _WHISPER.fullmatch(label.lower())
    if match is not None:
        return _checked(f"whisper:{_part(match.group(1), 'latest')}")
    return _checked(f"{_part(label, 'model')}:latest")


def name_for_voice(model_file: str) -> str:
    """``en_US-joe-medium.onnx`` -> ``voice:joe`` (a quality other than medium is kept:
    ``voice:joe-low``)."""
    stem = model_file.removesuffix(".json").removesuffix(".onnx")
    match = _PIPER.fullmatch(stem.lower())
    if match is None:
        return _checked(f"voice:{_part(stem, 'piper')}")
    quality = match.group(2)
    label = match.group(1) if quality in (None, "medium") else f"{match.group(1)}-{quality}"
    return _checked(f"voice:{_part(label, 'piper')}")


def name_for_ollama(namespace: str, model: str, tag: str) -> str:
    """Ollama's ``library/llama3.2:3b`` keeps its name; other namespaces keep theirs."""
    base = (
        _part(model, "model")
        if namespace == "library"
        else f"{_part(namespace, 'ollama')}/{_part(model, 'model')}"
    )
    return _checked(f"{base}:{_part(tag, 'latest')}")


def _checked(text: str) -> str:
    try:
        return parse_name(text).display
    except InvalidNameError:
        return "imported:latest"
