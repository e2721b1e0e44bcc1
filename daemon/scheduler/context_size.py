"""The default context: as long as the model was trained for, as free memory allows.

When neither the request, the Modelfile nor the daemon's settings give ``num_ctx``, a model
runs with the largest context (per slot) that its training covers, that stays under a cap, and
whose KV cache for every slot (of the cache type asked) fits the free memory next to its
weights; never less than a floor (or the trained context, if that is smaller). llama-server
does the same from its ``--ctx-size 0`` (the trained context) and ``--fit`` (what memory holds).
A pure function: free memory is an input, so the rule is tested without a machine of that size.
"""

from __future__ import annotations

from dataclasses import dataclass

from daemon.scheduler.memory import COMPUTE_MARGIN_BYTES, ModelFootprint, kv_cache_bytes

__all__ = ["CONTEXT_FLOOR", "CONTEXT_STEP", "ContextChoice", "context_ceiling", "default_context"]

CONTEXT_FLOOR = 2048  # tokens: below this a chat with a system prompt barely starts
CONTEXT_STEP = 256  # contexts are whole multiples of this (llama.cpp pads to 256 anyway)
_GIB = 1 << 30


@dataclass(frozen=True, slots=True)
class ContextChoice:
    num_ctx: int  # tokens per slot
    reason: str  # why this length, in words for `show` and the load log


def context_ceiling(n_ctx_train: int | None, cap: int) -> int:
    """The most context a slot gets by default: the trained context, at most ``cap``."""
    return min(cap, n_ctx_train) if n_ctx_train else cap


def default_context(
    footprint: ModelFootprint,
    n_ctx_train: int | None,
    free_bytes: float,
    num_parallel: int,
    kv_cache_type: str = "f16",
    cap: int = 32768,
    floor: int = CONTEXT_FLOOR,
) -> ContextChoice:
    """The context per slot for a model that sets none (see the module's docstring)."""
    trained = n_ctx_train or 0
    ceiling = context_ceiling(n_ctx_train, cap)
    floor = min(floor, ceiling)
    per_token = kv_cache_bytes(footprint, max(1, num_parallel), kv_cache_type)
    budget = free_bytes - footprint.weights_bytes - COMPUTE_MARGIN_BYTES
    fits = int(budget // per_token) // CONTEXT_STEP * CONTEXT_STEP if per_token else ceiling
    free = f"{free_bytes / _GIB:.1f} GiB free"
    if fits >= ceiling:
        if trained and trained <= cap:
            return ContextChoice(ceiling, f"the model's trained context ({free})")
        return ContextChoice(ceiling, f"the default cap of {cap:,} tokens ({free})")
    if fits <= floor:
        return ContextChoice(floor, f"the floor of {floor:,} tokens: {free} holds no more")
    return ContextChoice(fits, f"what fits in {free} with {num_parallel} slots")
