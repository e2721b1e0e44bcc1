"""What a model costs in memory at a context length, and why, from its GGUF numbers.

The daemon loads a model with its weights, a K/V cache for every token of context in every
slot (parallel requests), and some working memory; this says the same sum in words ("about
0.6 GB: 253 MB of weights + 310 MB for 4,096 tokens in each of 4 slots"). An estimate made
before the model loads: what a loaded one really takes is the daemon's (``ps``).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.gui.state.records import ModelDetails
from app.gui.state.units import bytes_text

__all__ = ["MemoryCost", "kv_bytes_per_token"]

_WORKING = 96 << 20  # llama.cpp's compute buffers and the runner process (the daemon's margin)
_BYTES_PER_VALUE = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}


def _number(metadata: dict[str, str], suffix: str) -> int:
    value = next((v for k, v in metadata.items() if k.endswith(suffix)), "")
    return int(value) if value.isdigit() else 0


def kv_bytes_per_token(details: ModelDetails, kv_cache_type: str = "f16") -> int:
    """K and V for one token over every layer (0 when the GGUF does not say enough)."""
    meta = dict(details.metadata)
    layers, width = _number(meta, ".block_count"), _number(meta, ".embedding_length")
    heads = _number(meta, ".attention.head_count")
    kv_heads = _number(meta, ".attention.head_count_kv") or heads
    head_size = _number(meta, ".attention.key_length") or (width // heads if heads else 0)
    values = 2 * layers * kv_heads * head_size
    return int(values * _BYTES_PER_VALUE.get(kv_cache_type, 2.0))


@dataclass(frozen=True, slots=True)
class MemoryCost:
    weights: int
    cache: int
    context: int
    slots: int

    @classmethod
    def of(cls, details: ModelDetails, weights: int, context: int, slots: int) -> MemoryCost:
        cache = kv_bytes_per_token(details) * context * max(1, slots)
        return cls(weights, cache, context, max(1, slots))

    @property
    def total(self) -> int:
        return self.weights + self.cache + _WORKING

    def text(self) -> str:
        """'about 0.6 GB: 253.0 MB of weights + 310.0 MB for 4,096 tokens in each of 4 slots'."""
        slots = f" in each of {self.slots} slots" if self.slots > 1 else ""
        cache = f"{bytes_text(self.cache)} for {self.context:,} tokens{slots}"
        return f"about {bytes_text(self.total)}: {bytes_text(self.weights)} of weights + {cache}"
