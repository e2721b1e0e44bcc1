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

Behind it is the prompt cache on disk (``disk_cache``): what is saved here is offered there
too, and a prompt resumes from whichever tier holds more of it (RAM when both hold as much).
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from dataclasses import dataclass

import llama_cpp as lc

from .disk_cache import DiskCache, DiskRead
from .slots import Slot, common_prefix, pick_slot
from .window import Checkpoint, SlidingWindow, positions

__all__ = ["MIN_TOKENS", "HostCache", "Picked"]

MIN_TOKENS = 32  # a prefix shorter than this is cheaper to decode again than to copy around


@dataclass(frozen=True, slots=True)
class _Entry:
    state: ctypes.Array[ctypes.c_uint8]  # the bytes llama_state_seq_get_data wrote
    size: int
    window_start: int  # the first position its window cache holds
    checkpoints: tuple[Checkpoint, ...]
    whole_batches: int  # its slot's (``Slot.whole_batches``)

    @property
    def footprint(self) -> int:
        """Its bytes and its checkpoints' (what the bound counts)."""
        return self.size + sum(c.size for c in self.checkpoints)


@dataclass(frozen=True, slots=True)
class Picked:
    """The slot for a prompt, how many of its tokens the slot holds, and the read from disk
    that put them there (None: they were not read from disk)."""

    slot: Slot
    shared: int
    disk: DiskRead | None = None


class HostCache:
    """Sequence states by token prefix, at most ``limit_bytes`` of them (0: off), and the
    disk tier behind them."""

    def __init__(
        self,
        ctx: lc.llama_context_p,
        memory: lc.llama_memory_t,
        limit_bytes: int,
        window: SlidingWindow,
        disk: DiskCache,
    ):
        self._ctx = ctx
        self._memory = memory
        self._window = window
        self.disk = disk
        self.limit_bytes = limit_bytes
        self.bytes = 0
        self._entries: OrderedDict[tuple[int, ...], _Entry] = OrderedDict()  # oldest first
        self.restored = 0  # states copied back into a slot (for status and tests)

    def __len__(self) -> int:
        return len(self._entries)

    def pick(
        self, free: list[Slot], prompt: list[int], busy: set[int], plain: bool = True
    ) -> Picked:
        """The slot for ``prompt`` and how many of its tokens it holds, as ``pick_slot``; when
        this cache or the disk holds a longer prefix than any free slot, the slot picked gets
        that state (its own is saved first). ``plain``: the prompt has no image (only those
        are cached)."""
        slot, common = pick_slot(free, prompt, busy)
        last = len(prompt) - 1  # the last token is decoded for its logits
        kept = self._window.reach(slot, min(common, last))
        key, shared = self._best(prompt) if plain and self.limit_bytes else ((), 0)
        in_ram = self._resumed(key, min(shared, last)) if key else 0
        stored, on_disk = self.disk.longest(prompt) if plain else (None, 0)
        from_disk = self.disk.usable(stored, min(on_disk, last)) if stored else 0
        if max(in_ram, from_disk) < kept + MIN_TOKENS:
            if len(slot.cached) - common >= MIN_TOKENS:
                self.save(slot)  # the slot is about to lose what the prompt does not share
            return Picked(slot, common)
        if in_ram >= from_disk:
            entry = self._drop(key)  # taken out first: saving the slot may evict to make room
            self.save(slot)
            restored = self._restore(key, entry, slot)
            return Picked(slot, min(shared, last) if restored else 0)
        self.save(slot)
        if stored is None or (read := self.disk.restore(stored, slot)) is None:
            return Picked(slot, common_prefix(slot.cached, prompt))  # emptied if touched
        return Picked(slot, min(on_disk, last), read)

    def save_free(self, slots: list[Slot]) -> None:
        """Copy what the free slots hold while nothing runs, so a prompt that takes one later
        does not wait for the copy (10 ms for a 167-token history of a 270M model); what the
        cache holds already is skipped."""
        for slot in slots:
            if slot.job is None:
                self.save(slot)

    def save(self, slot: Slot) -> bool:
        """Copy ``slot``'s sequence state into the cache, and offer it to the disk; False
        when it is not kept here (too short, holding an image, over the bound)."""
        tokens = slot.cached
        if len(tokens) < MIN_TOKENS or slot.shift or min(tokens) < 0:
            return False
        key = tuple(tokens)
        if key in self._entries:
            self._entries.move_to_end(key)
            self.disk.offer(slot, self._entries[key].state, self._entries[key].size)
            return True
        entry = self._copy(slot) if self.limit_bytes else None
        if entry is None:
            self.disk.offer(slot)
            return False
        self.disk.offer(slot, entry.state, entry.size)
        for other in [k for k in self._entries if len(k) <= len(key) and key[: len(k)] == k]:
            self._drop(other)  # this state holds theirs and more
        self._entries[key] = entry
        self.bytes += entry.footprint
        while self.bytes > self.limit_bytes:
            self._drop(next(iter(self._entries)))
        return True

    def _copy(self, slot: Slot) -> _Entry | None:
        """``slot``'s state as an entry; None when it does not fit the bound."""
        size = lc.llama_state_seq_get_size(self._ctx, slot.seq_id)
        if not 0 < size <= self.limit_bytes:
            return None
        state = (ctypes.c_uint8 * size)()
        written = lc.llama_state_seq_get_data(self._ctx, state, size, slot.seq_id)
        if written == 0:
            return None
        start = self._window.saved_window_start(slot)
        entry = _Entry(state, written, start, tuple(slot.checkpoints), slot.whole_batches)
        return entry if entry.footprint <= self.limit_bytes else None

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
        at = positions(entry.checkpoints)
        return self._window.usable(shared, len(key), entry.window_start, at, entry.whole_batches)

    def _restore(self, key: tuple[int, ...], entry: _Entry, slot: Slot) -> bool:
        """Load the state of ``key`` into ``slot``'s sequence (the slot now owns it)."""
        lc.llama_memory_seq_rm(self._memory, slot.seq_id, -1, -1)
        slot.cached.clear()
        slot.checkpoints.clear()
        slot.shift = 0
        slot.whole_batches = 0
        if lc.llama_state_seq_set_data(self._ctx, entry.state, entry.size, slot.seq_id) == 0:
            lc.llama_memory_seq_rm(self._memory, slot.seq_id, -1, -1)  # nothing half-loaded
            return False
        slot.cached.extend(key)
        slot.checkpoints = list(entry.checkpoints)
        slot.whole_batches = entry.whole_batches
        self.restored += 1
        return True

    def _drop(self, key: tuple[int, ...]) -> _Entry:
        entry = self._entries.pop(key)
        self.bytes -= entry.footprint
        return entry
