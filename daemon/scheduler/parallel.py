"""The default number of slots: 4, more where a GPU that holds the whole model has room.

A slot serves one request at a time; each holds its own KV cache for its context. On a CPU a
decode of k streams costs close to k times one stream's once k passes a few, so more slots only
share the same tokens/s among more requests: the default stays 4, as in llama-server and LM
Studio. On a GPU a decode of k tokens costs about one token far beyond 4 streams (an H200 ran a
1B model at 1,580 tokens/s with 4 streams and 2,567 with 16: bench/RESULTS.md), so where the
whole model fits in free VRAM the slots double from 4, up to 16, while all of them, each with
the context a slot gets anyway (``num_ctx``, or the trained context up to the cap), fit in
half of the VRAM the weights leave: the other half stays for a longer context or another model.
A pure function: free memory is an input, so the rule is tested without a card of that size.
"""

from __future__ import annotations

from dataclasses import dataclass

from daemon.scheduler.memory import COMPUTE_MARGIN_BYTES, ModelFootprint, kv_cache_bytes

__all__ = ["DEFAULT_PARALLEL", "MOST_PARALLEL", "ParallelChoice", "default_parallel"]

DEFAULT_PARALLEL = 4  # slots on a CPU, and the fewest on a GPU
MOST_PARALLEL = 16  # the most the default picks (LOCALLLM_NUM_PARALLEL or num_parallel: more)
KV_SHARE = 0.5  # of the VRAM the weights leave, the most the extra slots' caches may fill
_GIB = 1 << 30


@dataclass(frozen=True, slots=True)
class ParallelChoice:
    num_parallel: int
    reason: str  # why this many, in words for the load log, `show` and `ps`


def default_parallel(
    footprint: ModelFootprint,
    slot_context: int,
    free_vram: float | None,
    kv_cache_type: str = "f16",
) -> ParallelChoice:
    """Slots for a model that sets none. ``slot_context``: the tokens each slot would hold;
    ``free_vram``: the usable VRAM of the GPU that holds the whole model, None where it runs
    (wholly or partly) on the CPU."""
    if free_vram is None:
        return ParallelChoice(DEFAULT_PARALLEL, f"the default of {DEFAULT_PARALLEL}")
    budget = (free_vram - footprint.weights_bytes - COMPUTE_MARGIN_BYTES) * KV_SHARE
    per_slot = kv_cache_bytes(footprint, max(1, slot_context), kv_cache_type)
    slots = DEFAULT_PARALLEL
    while slots * 2 <= MOST_PARALLEL and slots * 2 * per_slot <= budget:
        slots *= 2
    free = f"{free_vram / _GIB:.1f} GiB free VRAM"
    if slots == DEFAULT_PARALLEL:
        return ParallelChoice(slots, f"the default of {slots}: {free} holds no more")
    return ParallelChoice(slots, f"{slots} of {slot_context:,} tokens fit in {free}")
