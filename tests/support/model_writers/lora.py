"""A tiny, real LoRA adapter GGUF for tests, fitted to a model from
:mod:`localllm.model_registry.tiny_gguf`.

It follows llama.cpp's ``convert_lora_to_gguf.py``: ``general.type`` is ``adapter``,
``adapter.type`` is ``lora``, ``adapter.lora.alpha`` is set, and each adapted weight ``W``
(numpy shape ``(n_out, n_in)``) gets ``W.lora_a`` of shape ``(rank, n_in)`` and ``W.lora_b`` of
shape ``(n_out, rank)``; llama.cpp adds ``scale * alpha / rank * (B @ A) x`` to ``W x``.

The shapes are read from the base model's file, so the adapter fits whatever tiny model it is
made for. ``strength`` sets how far it moves the model: at 1 each adapted product changes by
several times its own size, so greedy output is certain to differ from the base model's. The
rows that would write to the tiny model's bias channel are zero, so control tokens stay quiet.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import gguf
import numpy as np

from tests.support.model_writers.projector import save_gguf

__all__ = ["write_tiny_lora"]

_TARGETS = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
_RESIDUAL_WRITERS = ("attn_output", "ffn_down")


def write_tiny_lora(
    path: str | os.PathLike[str],
    base: str | os.PathLike[str],
    *,
    rank: int = 4,
    strength: float = 1.0,
    seed: int = 0,
    architecture: str | None = None,
) -> Path:
    """Write a LoRA adapter for the model at ``base``; ``architecture`` overrides the base's
    (an adapter made for another kind of model, which must be refused)."""
    reader = gguf.GGUFReader(base)
    writer = gguf.GGUFWriter(None, architecture or _architecture(reader))
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(rank))  # alpha / rank = 1
    writer.add_name("tiny-lora")
    rng = np.random.default_rng(seed)
    for tensor in reader.tensors:
        kind = tensor.name.split(".")[-2] if tensor.name.endswith(".weight") else ""
        if kind in _TARGETS:
            lora_a, lora_b = _pair(tuple(tensor.data.shape), rank, strength, rng)
            if kind in _RESIDUAL_WRITERS:
                lora_b[0, :] = 0.0  # never write to the bias channel
            writer.add_tensor(f"{tensor.name}.lora_a", lora_a)
            writer.add_tensor(f"{tensor.name}.lora_b", lora_b)
    return save_gguf(writer, path)


def _architecture(reader: gguf.GGUFReader) -> str:
    return str(reader.fields[gguf.Keys.General.ARCHITECTURE].contents())


def _pair(
    shape: tuple[int, ...], rank: int, strength: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``A`` maps a unit-size input to about ``strength`` per rank; ``B`` keeps that size."""
    n_out, n_in = shape
    lora_a = rng.standard_normal((rank, n_in), dtype=np.float32) * (strength / math.sqrt(n_in))
    lora_b = rng.standard_normal((n_out, rank), dtype=np.float32) / math.sqrt(rank)
    return lora_a.astype(np.float32), lora_b.astype(np.float32)
