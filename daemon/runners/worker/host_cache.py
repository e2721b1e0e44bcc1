"""The host-RAM prompt cache: the KV state of sequences that lost their slot, kept in RAM.

With more conversations than slots, a conversation's slot goes to another one and its prefix
is gone from the context: the next turn would decode the whole history again. Before a slot's
cache is overwritten, its sequence state (``llama_state_seq_get_data``) is copied here, keyed
by its tokens; a later prompt that starts with those tokens, where no slot holds them, gets the
state copied back (``llama_state_seq_set_data``) and decodes only what is new. The cache is
bounded by bytes and drops the least recently used entries first (as llama-server's
``--cache-ram``). It lives and dies with the runner process, so a state from another model or
context never reaches it; llama.cpp refuses a state that does not fit its context, and a
refused restore clears the sequence and decodes the prompt as if nothing were cached.

Of a sliding-window model's cache a state holds the last window only (see ``window``); an
entry keeps its slot's checkpoints with it, so a prompt that parts from it earlier resumes
from one of those, and a prefix is only worth what can be resumed of it.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from dataclasses import dataclass

import llama_cpp as lc

from .slots import Slot, common_prefix, pick_slot
from .window import Checkpoint, SlidingWindow, reach

__all__ = ["MIN_TOKENS", "HostCache"]

MIN_TOKENS = 32  # a prefix shorter than this is cheaper to decode again than to copy around


@dataclass(frozen=True, slots=True)
class _Entry:
    state: ctypes.Array[ctypes.c_uint8]  # the bytes llama_state_seq_get_data wrote
    size: int
    window_start: int  # the first position its window cache holds
    checkpoints: tuple[Checkpoint, ...]

    @property
    def footprint(self) -> int:
        """Its bytes and its checkpoints' (what the bound counts)."""
        return self.size + sum(c.size for c in self.checkpoints)


class HostCache:
    """Sequence states by token prefix, at most ``limit_bytes`` of them (0: off)."""

    def __init__(
        self,
        ctx: lc.llama_context_p,
        memory: lc.llama_memory_t,
        limit_bytes: int,
        window: SlidingWindow,
    ):
        self._ctx = ctx
        self._memory = memory
        self._window = window
        self.limit_bytes = limit_bytes
        self.bytes = 0
        self._entries: OrderedDict[tuple[int, ...], _Entry] = OrderedDict()  # oldest first
        self.restored = 0  # states copied back into a slot (for status and tests)

    def __len__(self) -> int:
        return len(self._entries)

    def pick(
        self, free: list[Slot], prompt: list[int], busy: set[int], plain: bool = True
    ) -> tuple[Slot, int]:
        """The slot for ``prompt`` and how many of its tokens it holds, as ``pick_slot``; when
        this cache holds a longer prefix than any free slot, the slot picked gets that state
        (its own is saved first). ``plain``: the prompt has no image (only those are cached)."""
        slot, common = pick_slot(free, prompt, busy)
        key, shared = self._best(prompt) if plain and self.limit_bytes else ((), 0)
        last = len(prompt) - 1  # the last token is decoded for its logits
        kept = self._window.reach(slot, min(common, last))
        if not key or self._resumed(key, min(shared, last)) < kept + MIN_TOKENS:
            if len(slot.cached) - common >= MIN_TOKENS:
                self.save(slot)  # the slot is about to lose what the prompt does not share
            return slot, common
        entry = self._drop(key)  # taken out first: saving the slot may evict to make room
        self.save(slot)
        if not self._restore(key, entry, slot):
            return slot, 0
        return slot, min(shared, last)

    def save_free(self, slots: list[Slot]) -> None:
        """Copy what the free slots hold while nothing runs, so a prompt that takes one later
        does not wait for the copy (10 ms for a 167-token history of a 270M model); what the
        cache holds already is skipped."""
        for slot in slots:
            if slot.job is None:
                self.save(slot)

    def save(self, slot: Slot) -> bool:
        """Copy ``slot``'s sequence state into the cache; False when it is not worth keeping
        (too short, holding an image) or does not fit the bound."""
        tokens = slot.cached
        if not self.limit_bytes or len(tokens) < MIN_TOKENS or slot.shift or min(tokens) < 0:
            return False
        key = tuple(tokens)
        if key in self._entries:
            self._entries.move_to_end(key)
            return True
        size = lc.llama_state_seq_get_size(self._ctx, slot.seq_id)
        if not 0 < size <= self.limit_bytes:
            return False
        state = (ctypes.c_uint8 * size)()
        written = lc.llama_state_seq_get_data(self._ctx, state, size, slot.seq_id)
        if written == 0:
            return False
        start = self._window.saved_window_start(slot)
        entry = _Entry(state, written, start, tuple(slot.checkpoints))
        if entry.footprint > self.limit_bytes:
            return False
        for other in [k for k in self._entries if len(k) <= len(key) and key[: len(k)] == k]:
            self._drop(other)  # this state holds theirs and more
        self._entries[key] = entry
        self.bytes += entry.footprint
        while self.bytes > self.limit_bytes:
            self._drop(next(iter(self._entries)))
        return True

    def _best(self, prompt: list[int]) -> tuple[tuple[int, ...], int]:
        """The cached key sharing the longest prefix with ``prompt``, and how long that is."""
        best: tuple[int, ...] = ()
        shared, target = 0, tuple(prompt)
        for key in self._entries:
            n = common_prefix(key, target)
            if n > shared:
                best, shared = key, n
        return best, shared

    def _resumed(self, key: tuple[int, ...], shared: int) -> int:
        """How many of the ``shared`` tokens the entry of ``key`` can be resumed at."""
        entry = self._entries[key]
        return reach(shared, len(key), entry.window_start, entry.checkpoints, self._window.n_swa)

    def _restore(self, key: tuple[int, ...], entry: _Entry, slot: Slot) -> bool:
        """Load the state of ``key`` into ``slot``'s sequence (the slot now owns it)."""
        lc.llama_memory_seq_rm(self._memory, slot.seq_id, -1, -1)
        slot.cached.clear()
        slot.checkpoints.clear()
        slot.shift = 0
        slot.whole_batches = 0  # how the saved state was read is not known
        if lc.llama_state_seq_set_data(self._ctx, entry.state, entry.size, slot.seq_id) == 0:
            lc.llama_memory_seq_rm(self._memory, slot.seq_id, -1, -1)  # nothing half-loaded
            return False
        slot.cached.extend(key)
        slot.checkpoints = list(entry.checkpoints)
        self.restored += 1
        return True

    def _drop(self, key: tuple[int, ...]) -> _Entry:
        entry = self._entries.pop(key)
        self.bytes -= entry.footprint
        return entry
