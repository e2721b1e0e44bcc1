"""Sliding-window layers kept small, and checkpoints so a cached prefix stays reusable.

A sliding-window layer (Gemma 3: 15 of 18 layers see only the last 512 tokens) needs the cache
of its window only. llama.cpp keeps that cache either full size, a cell for every token of the
context (``swa_full``), or small: the window and one batch. Full size, every prompt chunk
attends over the whole cache, masked: a 30,000-token prompt took 1.16x as long as on
llama-server, which keeps it small (bench/RESULTS.md, "Long prompts"). Small, the cache forgets
what slid out of the window, so a sequence can be cut back (a new prompt shares only part of
the cached one) only to a point whose window it still holds.

So, as llama-server does, the engine copies a sequence's window state
(``LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY``: a few MB) at prompt positions where later prompts are
likely to part from this one: a few tokens before the prompt's end, and a batch before that
(the next turn, or the same prompt again, parts in the reply or just before it), where its
system messages end (the daemon says where: ``daemon.inference.system_part``; an agent's
sessions share them), and where this prompt parted from the longest prefix cached before it
(where a family of prompts parts). To cut back to a point the window no
longer holds, the engine restores the latest checkpoint at or before it and decodes from there.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import llama_cpp as lc

if TYPE_CHECKING:
    from .slots import Slot

__all__ = ["MOST_CHECKPOINTS", "Checkpoint", "SlidingWindow", "holds", "positions", "reach"]

MOST_CHECKPOINTS = 4  # per slot: a few turns' parting points
_END_MARGIN = 4  # tokens before a prompt's end where a checkpoint goes (as llama-server)
_PARTIAL = lc.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY


@dataclass(frozen=True, slots=True)
class Checkpoint:
    tokens: int  # the sequence's length when it was taken: it resumes there
    state: ctypes.Array[ctypes.c_uint8]  # what llama_state_seq_get_data_ext wrote
    size: int


def reach(keep: int, held: int, window_start: int, checkpoints: Iterable[int], n_swa: int) -> int:
    """How many of a sequence's first ``keep`` tokens can be kept, when it holds ``held``
    tokens, its window cache starts at position ``window_start`` and it has checkpoints at
    those positions: all of them if nothing is cut or the window of ``keep`` is still there,
    else as many as the latest checkpoint at or before ``keep`` resumes from (0: none)."""
    if holds(keep, held, window_start, n_swa):
        return keep
    return max((at for at in checkpoints if at <= keep), default=0)


def holds(keep: int, held: int, window_start: int, n_swa: int) -> bool:
    """Whether a sequence of ``held`` tokens whose window cache starts at ``window_start``
    can be cut to its first ``keep`` and go on: the window before ``keep`` is all there."""
    return not n_swa or keep >= held or window_start <= max(0, keep - n_swa)


class SlidingWindow:
    """The checkpoints of one context's sequences (``n_swa`` 0: a model without windows), at
    most ``slot_bytes`` of them per sequence (a window of a big model is hundreds of MB);
    ``aligned``: only after whole batches, where a deterministic read may resume."""

    def __init__(
        self,
        ctx: lc.llama_context_p,
        memory: lc.llama_memory_t,
        n_swa: int,
        n_batch: int,
        slot_bytes: int,
        aligned: bool = False,
    ):
        self._ctx = ctx
        self._memory = memory
        self.n_swa = n_swa
        self._n_batch = n_batch
        self._slot_bytes = slot_bytes
        self._aligned = aligned

    def window_start(self, seq_id: int) -> int:
        """The first position the sequence's window cache holds (0 when it holds all)."""
        if not self.n_swa:
            return 0
        return max(0, int(lc.llama_memory_seq_pos_min(self._memory, seq_id)))

    def saved_window_start(self, slot: Slot) -> int:
        """Where the window of a state saved from ``slot`` (``llama_state_seq_get_data``)
        starts: llama.cpp saves no cell the last token's window has left."""
        if not self.n_swa:
            return 0
        return max(self.window_start(slot.seq_id), len(slot.cached) - self.n_swa)

    def reach(self, slot: Slot, keep: int) -> int:
        """How many of ``slot``'s first ``keep`` tokens it can keep (see :meth:`usable`)."""
        start = self.window_start(slot.seq_id) if keep < len(slot.cached) else 0
        at = positions(slot.checkpoints)
        return self.usable(keep, len(slot.cached), start, at, slot.whole_batches)

    def usable(
        self, keep: int, held: int, window_start: int, checkpoints: Iterable[int], whole: int
    ) -> int:
        """How many of a sequence's first ``keep`` tokens can be kept (see :func:`reach`);
        when ``aligned``, only whole batches of the ``whole`` tokens it read in whole batches
        from its start, so that the rest is read in the batches a cold read has."""
        if self._aligned:
            keep = min(keep, whole)
            keep -= keep % self._n_batch
        at = reach(keep, held, window_start, checkpoints, self.n_swa)
        return at if not self._aligned or at % self._n_batch == 0 else 0

    def cut(self, slot: Slot, keep: int) -> int:
        """Cut ``slot``'s sequence to at most its first ``keep`` tokens, restoring a
        checkpoint where its window no longer holds them; returns how many it keeps."""
        if keep >= len(slot.cached):
            return keep
        window_start, start = self.window_start(slot.seq_id), keep
        if not holds(keep, len(slot.cached), window_start, self.n_swa):
            at = positions(slot.checkpoints)
            start = reach(keep, len(slot.cached), window_start, at, self.n_swa)
            if start and not self._restore(slot, start):
                start = 0
        if start and not lc.llama_memory_seq_rm(self._memory, slot.seq_id, start, -1):
            start = 0
        if not start:
            lc.llama_memory_seq_rm(self._memory, slot.seq_id, -1, -1)
        del slot.cached[start:]
        slot.checkpoints = [c for c in slot.checkpoints if c.tokens <= start]
        return start

    def plan(self, prompt_tokens: int, start: int, parted: int, system: int = 0) -> list[int]:
        """Where to take checkpoints while a prompt of ``prompt_tokens`` is read from
        ``start`` on, when it parted from the longest cached prefix at ``parted`` and its
        system part ends at ``system`` (0: unknown): positions past one batch (less is
        cheaper to read again), in order."""
        if not self.n_swa or not self._slot_bytes:
            return []
        end = prompt_tokens - _END_MARGIN
        wanted = {parted, system, end - self._n_batch, end}
        if self._aligned:
            wanted = {p - p % self._n_batch for p in wanted}
        return sorted(p for p in wanted if max(start, self._n_batch) <= p <= end)

    def take(self, slot: Slot) -> None:
        """Copy ``slot``'s window state as a checkpoint at its current length."""
        tokens = len(slot.cached)
        if any(c.tokens == tokens for c in slot.checkpoints):
            return
        size = lc.llama_state_seq_get_size_ext(self._ctx, slot.seq_id, _PARTIAL)
        if not 0 < size <= self._slot_bytes:
            return
        state = (ctypes.c_uint8 * size)()
        written = lc.llama_state_seq_get_data_ext(self._ctx, state, size, slot.seq_id, _PARTIAL)
        if not written:
            return
        kept = sorted([*slot.checkpoints, Checkpoint(tokens, state, written)], key=_tokens)
        while len(kept) > MOST_CHECKPOINTS or sum(c.size for c in kept) > self._slot_bytes:
            del kept[_closest(kept)]
        slot.checkpoints = kept

    def _restore(self, slot: Slot, tokens: int) -> bool:
        (checkpoint,) = (c for c in slot.checkpoints if c.tokens == tokens)
        loaded = lc.llama_state_seq_set_data_ext(
            self._ctx, checkpoint.state, checkpoint.size, slot.seq_id, _PARTIAL
        )
        return bool(loaded != 0)


def positions(checkpoints: Iterable[Checkpoint]) -> list[int]:
    """Where ``checkpoints`` resume (what :func:`reach` weighs)."""
    return [c.tokens for c in checkpoints]


def _tokens(checkpoint: Checkpoint) -> int:
    return checkpoint.tokens


def _closest(checkpoints: Sequence[Checkpoint]) -> int:
    """The index of the checkpoint nearest the one before it (the first is never dropped:
    it is where a family of prompts parts): what a full list gives up."""
    if len(checkpoints) < 2:
        return 0
    gaps = [checkpoints[i].tokens - checkpoints[i - 1].tokens for i in range(1, len(checkpoints))]
    return 1 + gaps.index(min(gaps))
