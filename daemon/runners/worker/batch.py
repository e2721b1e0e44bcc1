"""One ``llama_batch`` allocated once and refilled every step.

The arrays are owned by Python (not ``llama_batch_init``) so that numpy views can fill a whole
prompt chunk at once, and a decode step allocates nothing.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

import llama_cpp as lc
import numpy as np

__all__ = ["Batch"]


class Batch:
    """Tokens for one ``llama_decode``: each with a position, one sequence id and a logits flag."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.n = 0
        self._token = (lc.llama_token * capacity)()
        self._pos = (lc.llama_pos * capacity)()
        self._n_seq = (ctypes.c_int32 * capacity)(*([1] * capacity))
        self._seq = (lc.llama_seq_id * capacity)()
        base = ctypes.addressof(self._seq)
        size = ctypes.sizeof(lc.llama_seq_id)
        pointer = ctypes.POINTER(lc.llama_seq_id)
        self._seq_ptrs = (pointer * capacity)(
            *(ctypes.cast(base + i * size, pointer) for i in range(capacity))
        )
        self._logits = (ctypes.c_int8 * capacity)()
        # views of the same memory (numpy's stubs take a ctypes array through its memoryview)
        self.tokens = np.frombuffer(memoryview(self._token), dtype=np.int32)
        self.positions = np.frombuffer(memoryview(self._pos), dtype=np.int32)
        self.seq_ids = np.frombuffer(memoryview(self._seq), dtype=np.int32)
        self.logits = np.frombuffer(memoryview(self._logits), dtype=np.int8)
        self.struct = lc.llama_batch(
            n_tokens=0,
            token=ctypes.cast(self._token, ctypes.POINTER(lc.llama_token)),
            embd=None,
            pos=ctypes.cast(self._pos, ctypes.POINTER(lc.llama_pos)),
            n_seq_id=ctypes.cast(self._n_seq, ctypes.POINTER(ctypes.c_int32)),
            seq_id=self._seq_ptrs,
            logits=ctypes.cast(self._logits, ctypes.POINTER(ctypes.c_int8)),
        )

    @property
    def free(self) -> int:
        return self.capacity - self.n

    def clear(self) -> None:
        self.n = 0

    def add(self, token: int, pos: int, seq: int, logits: bool) -> int:
        """Add one token; returns its row (the index to read its logits from)."""
        i = self.n
        self._token[i] = token
        self._pos[i] = pos
        self._seq[i] = seq
        self._logits[i] = logits
        self.n = i + 1
        return i

    def extend(self, tokens: Sequence[int], start_pos: int, seq: int, logits_last: bool) -> int:
        """Add a run of one sequence's tokens; returns the row of the last one."""
        i, k = self.n, len(tokens)
        self.tokens[i : i + k] = tokens
        self.positions[i : i + k] = np.arange(start_pos, start_pos + k, dtype=np.int32)
        self.seq_ids[i : i + k] = seq
        self.logits[i : i + k] = 0
        self.logits[i + k - 1] = logits_last
        self.n = i + k
        return i + k - 1

    def decode(self, ctx: lc.llama_context_p) -> int:
        self.struct.n_tokens = self.n
        return int(lc.llama_decode(ctx, self.struct))

    def encode(self, ctx: lc.llama_context_p) -> int:
        self.struct.n_tokens = self.n
        return int(lc.llama_encode(ctx, self.struct))
