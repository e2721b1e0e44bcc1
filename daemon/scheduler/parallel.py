"""The default number of slots: 4, more where a GPU that holds the whole model has room.

A slot serves one request at a time; each holds its own KV cache for its context. On a CPU a
decode of k streams costs close to k times one stream's once k passes a few, so more slots only
share the same tokens/s among more requests: the default stays 4, as in llama-server and LM
Studio. On a GPU a decode of k tokens costs about one token far beyond 4 streams (an H200 ran a
1B model at 1,580 tokens/s with 4 streams and 2,567 with 16: bench/RESULTS.md), so where the
whole model fits in free VRAM the slots double from 4, up to 16, while all of them, each with
the context a slot gets anyway (``num_ctx``, or the trained context up to the cap), fit in
half of the VRAM the rest of the plan leaves (weights, compute buffer: the plan's GPU part
without its caches): the other half stays for a longer context or another model. With several
GPUs each GPU's caches are held against what the rest of its own part leaves of it. A pure
function: the plan and free memory are inputs, so the rule is tested without a card of that
size.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from localllm.daemon.scheduler.memory_plan import GPU0, MemoryPlan
from localllm.daemon.scheduler.placement import free_vram_text

__all__ = [
    "CACHE_KINDS",
    "DEFAULT_PARALLEL",
    "MOST_PARALLEL",
    "ParallelChoice",
    "default_parallel",
    "slots_fit",
]

DEFAULT_PARALLEL = 4  # slots on a CPU, and the fewest on a GPU
MOST_PARALLEL = 16  # the most the default picks (LOCALLLM_NUM_PARALLEL or num_parallel: more)
KV_SHARE = 0.5  # of the VRAM the rest of the plan leaves, the most the slots' caches may fill
CACHE_KINDS = ("kv", "window kv", "recurrent")  # the parts that grow with the slots
GpuRoom = float | Mapping[str, float]  # usable VRAM by GPU ("GPU0": bytes); a number: GPU0's


@dataclass(frozen=True, slots=True)
class ParallelChoice:
    num_parallel: int
    reason: str  # why this many, in words for the load log, `show` and `ps`


def default_parallel(
    plan_for: Callable[[int], MemoryPlan] | None, slot_context: int, free_vram: GpuRoom | None
) -> ParallelChoice:
    """Slots for a model that sets none. ``plan_for(slots)``: the plan with every layer on
    the GPUs at ``slot_context`` tokens a slot; ``free_vram``: the usable VRAM of the GPUs that
    hold the whole model, None where it runs (wholly or partly) on the CPU."""
    if free_vram is None or plan_for is None:
        return ParallelChoice(DEFAULT_PARALLEL, f"the default of {DEFAULT_PARALLEL}")
    slots = DEFAULT_PARALLEL
    while slots * 2 <= MOST_PARALLEL and slots_fit(plan_for(slots * 2), free_vram):
        slots *= 2
    room = _by_gpu(free_vram)
    free = free_vram_text(sum(room.values()), len(room))
    if slots == DEFAULT_PARALLEL:
        return ParallelChoice(slots, f"the default of {slots}: {free} holds no more")
    return ParallelChoice(slots, f"{slots} of {slot_context:,} tokens fit in {free}")


def slots_fit(plan: MemoryPlan, free_vram: GpuRoom) -> bool:
    """Whether ``plan``'s caches on each GPU fill at most ``KV_SHARE`` of what its other
    parts there leave of that GPU's ``free_vram``."""
    room = _by_gpu(free_vram)
    for gpu, size in plan.gpu_bytes().items():
        cache = sum(plan.kind_bytes(kind, gpu) for kind in CACHE_KINDS)
        if cache > (room.get(gpu, 0) - (size - cache)) * KV_SHARE:
            return False
    return True


def _by_gpu(free_vram: GpuRoom) -> Mapping[str, float]:
    return {GPU0: free_vram} if isinstance(free_vram, int | float) else free_vram
