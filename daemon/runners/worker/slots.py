"""Sequence slots and the prefix cache: which slot a new prompt should reuse.

A slot is one llama.cpp sequence id. It remembers the tokens whose KV it holds, so a prompt that
shares a prefix with them (the same chat, one turn later) only decodes what is new.

With one KV buffer per sequence, llama.cpp decodes a batch in one pass per run of consecutive
sequence ids (ids 0,1,2,3: one pass; ids 0,2: two). So among slots whose cached prefixes are
about as useful, a new request takes the one that keeps the busy ids consecutive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np

if TYPE_CHECKING:
    from .engine import Job
    from .window import Checkpoint

__all__ = ["Slot", "aligned_prefix", "common_prefix", "pick_slot"]

_REUSE_SLACK = 32  # tokens of prefix worth giving up to keep the batch in one pass
# token ids, both of one kind: a list never equals a tuple, which the quick check relies on
_Tokens = TypeVar("_Tokens", list[int], tuple[int, ...])


@dataclass(eq=False)
class Slot:
    seq_id: int
    cached: list[int] = field(default_factory=list)  # tokens whose KV this sequence holds
    job: Job | None = None  # the generation using it, None when free
    shift: int = 0  # next position minus len(cached): negative after an M-RoPE image
    # of its sliding-window cache (``window``)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    last_used: float = 0.0
    # the first tokens of ``cached`` read in whole batches from the start, as a cold read of
    # them reads them (``aligned_prefix``)
    whole_batches: int = 0


def common_prefix(a: _Tokens, b: _Tokens) -> int:
    n = min(len(a), len(b))
    if n == 0 or a[:n] == b[:n]:
        return n
    differs = np.asarray(a[:n], dtype=np.int64) != np.asarray(b[:n], dtype=np.int64)
    return int(differs.argmax())


def pick_slot(free: list[Slot], prompt: list[int], busy: set[int]) -> tuple[Slot, int]:
    """The free slot for ``prompt`` and how many of its tokens that slot already holds.

    Longest shared prefix first (within a small slack), then fewest decode passes, then the
    least recently used slot (so recent conversations keep their cache).
    """
    shared = {slot.seq_id: common_prefix(slot.cached, prompt) for slot in free}
    floor = max(shared.values()) - _REUSE_SLACK
    candidates = [slot for slot in free if shared[slot.seq_id] >= floor]
    best = min(
        candidates,
        key=lambda s: (_runs(busy | {s.seq_id}), -shared[s.seq_id], s.last_used),
    )
    return best, shared[best.seq_id]


def _runs(ids: set[int]) -> int:
    """How many runs of consecutive integers ``ids`` forms."""
    return sum(1 for i in ids if i - 1 not in ids)


def aligned_prefix(shared: int, slot: Slot, n_batch: int) -> int:
    """How much of a ``shared`` prefix a deterministic read may keep: only what ``slot`` read
    in whole batches from its start, cut to a whole batch. llama.cpp rounds a batch of other
    tokens apart, so a prompt resumed there reads the rest in the very batches a cold read of
    it would (``tests/test_resumed_reads.py``)."""
    kept = min(shared, slot.whole_batches)
    return kept - kept % n_batch
