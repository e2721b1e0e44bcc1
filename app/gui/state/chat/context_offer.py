"""Whether a chat that outgrew its context can have a larger one: the model was trained for
more, and this machine's free memory holds the bigger key-value cache.

The cache's size comes from the model's own numbers (layers, key-value heads, head size, at
16 bits), as llama.cpp allocates it; without them nothing is offered, rather than a guess.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.gui.state.records import SystemInfo

__all__ = ["kv_bytes_per_token", "larger_context"]

_BYTES_PER_VALUE = 2  # f16 keys and values, llama.cpp's default cache type
_USABLE = 0.8  # of the free memory: leave the system and other programs room


def kv_bytes_per_token(metadata: Iterable[tuple[str, str]]) -> int | None:
    """The key-value cache one token takes, from ``/api/show``'s model info; None when the
    model does not say (an architecture without these keys)."""
    info = dict(metadata)
    arch = info.get("general.architecture", "")

    def number(key: str) -> int | None:
        text = info.get(f"{arch}.{key}", "")
        return int(text) if text.isdigit() else None

    layers, width, heads = (
        number("block_count"),
        number("embedding_length"),
        number("attention.head_count"),
    )
    if not (layers and width and heads):
        return None
    kv_heads = number("attention.head_count_kv") or heads
    key_size = number("attention.key_length") or width // heads
    value_size = number("attention.value_length") or width // heads
    return layers * kv_heads * (key_size + value_size) * _BYTES_PER_VALUE


def larger_context(
    current: int,
    trained: int | None,
    metadata: Iterable[tuple[str, str]],
    system: SystemInfo | None,
) -> int | None:
    """Twice ``current`` (at most what the model was trained for) when the extra cache fits
    in free memory; None when there is nothing larger to offer."""
    if not trained or current >= trained or system is None:
        return None
    per_token = kv_bytes_per_token(metadata)
    if per_token is None:
        return None
    larger = min(trained, current * 2)
    free = max([system.ram_available, *(gpu.vram_free for gpu in system.gpus)])
    return larger if (larger - current) * per_token <= free * _USABLE else None
