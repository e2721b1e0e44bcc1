"""The prompt cache on disk, as the engine sees it: which sequence states to keep, and reading
one back into a slot.

Coding agents open every session with the same long prompt (Claude Code's system prompt and
tools: 11,684 tokens, 48 s to read on 2 cores with Gemma 3 270M). The host cache keeps it while
the runner lives; this keeps it when the runner goes (``keep_alive``, ``localllm stop``, another
model needing the memory, a restart). A slot's state goes to disk where it goes to the host
cache (before its slot is given to another prompt, and while nothing runs), written by
``prompt_store``'s thread so no decode waits for the disk; a prompt that starts as a stored one
gets its state copied back, with the window checkpoints it was saved with, in a fresh runner
too. Files are keyed by everything that makes a state unusable elsewhere (``state_identity``),
so a state of another model, KV type, flash attention setting or llama.cpp build is never read.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import llama_cpp as lc
import numpy as np
from typing_extensions import Buffer

from ..prompt_store import (
    CheckpointData,
    PromptState,
    PromptStore,
    PromptWriter,
    StoredPrompt,
    namespace,
)
from ..types import RunnerSpec
from .slots import Slot
from .system import say
from .window import Checkpoint, SlidingWindow

__all__ = ["DiskCache", "DiskRead", "state_identity"]

_FLUSH_SECONDS = 5.0  # at exit, the most the runner waits for states still being written
_MOST_OFFERED = 256  # token runs remembered as handed to the writer (then forgotten)
_DIGEST_NAME = re.compile(r"sha256-[0-9a-f]{64}")  # a blob of the model store


@dataclass(frozen=True, slots=True)
class DiskRead:
    """What restoring one prompt from disk took (for its ``done`` frame)."""

    bytes: int
    seconds: float


class DiskCache:
    """One engine's view of the prompt cache on disk; with no store, it keeps nothing."""

    def __init__(
        self,
        ctx: lc.llama_context_p,
        memory: lc.llama_memory_t,
        window: SlidingWindow,
        store: PromptStore | None,
        block: int,
    ):
        self._ctx = ctx
        self._memory = memory
        self._window = window
        self._store = store
        self._writer = PromptWriter(store) if store is not None else None
        self._block = block
        self._offered: set[bytes] = set()  # digests of the token runs handed to the writer
        self.hits = 0
        self.restored_bytes = 0
        self.restore_seconds = 0.0

    @classmethod
    def open(
        cls,
        spec: RunnerSpec,
        identity: Mapping[str, object],
        ctx: lc.llama_context_p,
        memory: lc.llama_memory_t,
        window: SlidingWindow,
        block: int,
    ) -> DiskCache:
        """The cache of ``spec``'s folder (none when the spec turns it off or the folder
        cannot be made: the runner serves without it)."""
        store = None
        if spec.prompt_cache_dir and spec.prompt_cache_bytes > 0:
            folder = Path(spec.prompt_cache_dir)
            try:
                store = PromptStore(
                    folder, namespace(identity), spec.prompt_cache_bytes, block, say
                )
            except OSError as exc:
                say(f"prompt cache off: its folder cannot be used ({exc.strerror})")
        return cls(ctx, memory, window, store, block)

    def offer(
        self, slot: Slot, state: ctypes.Array[ctypes.c_uint8] | None = None, size: int = 0
    ) -> None:
        """Hand ``slot``'s state to the writer when it is long enough, holds no image and is
        not stored yet; ``state``: its bytes, when the host cache has just copied them."""
        tokens = slot.cached
        if self._writer is None or self._store is None or self._store.full:
            return
        if len(tokens) < self._block or slot.shift or min(tokens) < 0:
            return
        ids = np.asarray(tokens, dtype=np.int32)
        digest = hashlib.blake2b(ids.tobytes(), digest_size=16).digest()
        if digest in self._offered or self._store.holds(ids):
            return
        if state is None:
            state, size = self._copy(slot)
            if not size:
                return
        checkpoints = tuple(
            CheckpointData(c.tokens, memoryview(c.state)[: c.size]) for c in slot.checkpoints
        )
        start = self._window.saved_window_start(slot)
        saved = PromptState(ids, memoryview(state)[:size], start, slot.whole_batches, checkpoints)
        if self._writer.offer(saved):
            if len(self._offered) >= _MOST_OFFERED:
                self._offered.clear()
            self._offered.add(digest)

    def longest(self, prompt: list[int]) -> tuple[StoredPrompt | None, int]:
        """The stored prompt sharing the longest prefix with ``prompt``, and how long that is."""
        if self._store is None:
            return None, 0
        return self._store.longest(np.asarray(prompt, dtype=np.int32))

    def usable(self, stored: StoredPrompt, shared: int) -> int:
        """How many of the ``shared`` tokens a slot can go on from once ``stored`` is in it."""
        held = len(stored.tokens)
        at = stored.checkpoint_tokens
        return self._window.usable(shared, held, stored.window_start, at, stored.whole_batches)

    def restore(self, stored: StoredPrompt, slot: Slot) -> DiskRead | None:
        """Read ``stored`` (checked) into ``slot``'s sequence, which then owns it; None when
        the file is bad or llama.cpp refuses it (the slot is then empty, if it was touched)."""
        if self._store is None:
            return None
        started = time.perf_counter()
        loaded = self._store.load(stored)
        if loaded is None:
            return None
        lc.llama_memory_seq_rm(self._memory, slot.seq_id, -1, -1)
        slot.cached.clear()
        slot.checkpoints.clear()
        slot.shift = 0
        slot.whole_batches = 0
        state = _array(loaded.state)
        if lc.llama_state_seq_set_data(self._ctx, state, len(state), slot.seq_id) == 0:
            lc.llama_memory_seq_rm(self._memory, slot.seq_id, -1, -1)  # nothing half-loaded
            say(f"prompt cache: llama.cpp refused {stored.name}; the prompt is read again")
            return None
        slot.cached.extend(loaded.tokens.tolist())
        slot.checkpoints = [
            Checkpoint(c.tokens, data, len(data)) for c in loaded.checkpoints
            if len(data := _array(c.data))
        ]  # fmt: skip
        slot.whole_batches = loaded.whole_batches
        read = DiskRead(stored.size, time.perf_counter() - started)
        self.hits += 1
        self.restored_bytes += read.bytes
        self.restore_seconds += read.seconds
        return read

    def flush(self) -> None:
        """Wait (a few seconds at most) for the states being written: before the runner exits."""
        if self._writer is not None:
            self._writer.close(_FLUSH_SECONDS)

    def status(self) -> dict[str, object]:
        counts: dict[str, object] = {"on": self._store is not None}
        if self._store is not None:  # a store holding no file is falsy: it has a length
            store = self._store
            counts |= {"files": len(store), "bytes": store.bytes, "written": store.written}
            counts |= {"bytes_written": store.bytes_written, "dropped": store.dropped}
            counts |= {"evicted": store.evicted, "full": store.full}
        return counts | {
            "hits": self.hits,
            "bytes_read": self.restored_bytes,
            "restore_seconds": round(self.restore_seconds, 4),
        }

    def _copy(self, slot: Slot) -> tuple[ctypes.Array[ctypes.c_uint8], int]:
        size = lc.llama_state_seq_get_size(self._ctx, slot.seq_id)
        state = (ctypes.c_uint8 * max(size, 0))()
        if size <= 0:
            return state, 0
        return state, int(lc.llama_state_seq_get_data(self._ctx, state, size, slot.seq_id))


def state_identity(spec: RunnerSpec, flash_attention: str, batch: int) -> dict[str, object]:
    """What makes a sequence state unusable elsewhere: the model's and adapters' files, the KV
    type, flash attention as decided, the batch (where a deterministic read resumes), where
    the layers run, and the llama.cpp build (its version and its libraries' files)."""
    return {
        "format": 1,
        "model": [_file_identity(p) for p in spec.model_paths],
        "adapters": [[*_file_identity(a.path), a.scale] for a in spec.adapters],
        "kv": spec.kv_cache_type,
        "flash_attention": flash_attention,
        "batch": batch,
        "gpu_layers": spec.num_gpu_layers,
        "build": _build_identity(),
    }


def _file_identity(path: str) -> list[object]:
    """A store blob by its digest (its name); any other file by name, size and change time."""
    name = Path(path).name
    if _DIGEST_NAME.fullmatch(name):
        return [name]
    stat = os.stat(path)
    return [name, stat.st_size, stat.st_mtime_ns]


def _build_identity() -> list[object]:
    """llama-cpp-python's version and its native libraries (a rebuild changes them)."""
    lib = Path(lc.__file__).parent / "lib"
    files = sorted(lib.iterdir()) if lib.is_dir() else []
    return [lc.__version__, *(_file_identity(str(f)) for f in files if f.is_file())]


def _array(data: Buffer) -> ctypes.Array[ctypes.c_uint8]:
    """``data``'s bytes (writable: read from the file) as the array llama.cpp reads, without
    a copy."""
    return (ctypes.c_uint8 * memoryview(data).nbytes).from_buffer(data)
