"""Naming a GGUF file (or a Whisper model's folder, or a Piper voice) before it is imported: a
sensible default the user can change."""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtWidgets import QWidget

from localllm.app.gui.views.plain_text import ask_text

__all__ = ["ask_import_name", "suggested_name"]

_QUANT = re.compile(r"[-.](i?q\d[\w]*|f16|bf16|f32)$", re.IGNORECASE)
_INVALID = re.compile(r"[^a-z0-9_.-]+")
_WHISPER = re.compile(r"whisper[-_.]?(.*)$", re.IGNORECASE)  # faster-whisper-base, whisper-small


def suggested_name(path: Path) -> str:
    """``Qwen2.5-0.5B-Instruct-Q4_K_M.gguf`` -> ``qwen2.5-0.5b-instruct:q4_k_m``; a Whisper
    folder ``faster-whisper-base`` -> ``whisper:base``; a voice ``en_US-joe-medium.onnx`` ->
    ``voice:en_us-joe-medium``."""
    if Path(path).suffix.lower() == ".onnx":
        return f"voice:{_INVALID.sub('-', Path(path).stem.lower()).strip('-._')[:80] or 'latest'}"
    whisper = _WHISPER.search(Path(path).name) if Path(path).suffix.lower() != ".gguf" else None
    if whisper is not None:
        tag = _INVALID.sub("-", whisper.group(1).lower()).strip("-._") or "latest"
        return f"whisper:{tag[:80]}"
    stem = Path(path).stem
    match = _QUANT.search(stem)
    base, tag = (stem[: match.start()], match.group(1)) if match else (stem, "latest")
    clean = _INVALID.sub("-", base.lower()).strip("-._") or "model"
    return f"{clean[:80]}:{_INVALID.sub('-', tag.lower())[:80]}"


def ask_import_name(parent: QWidget, path: Path) -> str | None:
    prompt = f"Name for {Path(path).name}:"  # a file name may be anything, markup included
    title = "Import a GGUF model" if Path(path).suffix.lower() == ".gguf" else "Import a model"
    return ask_text(parent, title, prompt, suggested_name(path))
