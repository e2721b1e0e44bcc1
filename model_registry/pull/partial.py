"""What a download in progress has on disk, kept in a sidecar so a restart can resume it.

A download splits its blob into fixed-size parts and fills each from its start, so "bytes
received" per part says exactly which bytes are on disk. The sidecar
(``sha256-<hex>.partial.json``) records those counts, never a URL (hub redirects expire), and
is only ever written with counts that are already in the ``.partial`` file, so it may
under-state progress after a crash but never over-state it. After ``kill -9`` a resumed
download therefore re-fetches at most what arrived since the last save.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from localllm.model_registry.digests import Digest
from localllm.model_registry.store.atomic import temp_file_in
from localllm.model_registry.store.layout import PARTIAL_STATE_SUFFIX

__all__ = ["PartialInfo", "PartialProgress", "PartialState", "list_partials"]

_VERSION = 1
_MAX_PARTS = 1 << 20


class PartialState:
    """Per-part byte counts of one partial download. Not thread-safe: callers lock."""

    def __init__(self, size: int, part_size: int, received: list[int] | None = None):
        if size < 0 or part_size <= 0:
            raise ValueError("invalid partial download geometry")
        self.size = size
        self.part_size = part_size
        count = max(1, -(-size // part_size))
        self.received = received if received is not None else [0] * count
        if len(self.received) != count:
            raise ValueError("partial download part count does not match its size")
        self.names: list[str] = []

    # -- geometry ---------------------------------------------------------------------------
    @property
    def part_count(self) -> int:
        return len(self.received)

    def part_range(self, index: int) -> tuple[int, int]:
        """Half-open byte range ``[start, end)`` of a part."""
        start = index * self.part_size
        return start, min(start + self.part_size, self.size)

    def next_offset(self, index: int) -> int:
        return self.part_range(index)[0] + self.received[index]

    def is_done(self, index: int) -> bool:
        start, end = self.part_range(index)
        return start + self.received[index] >= end

    def pending(self) -> list[int]:
        return [index for index in range(self.part_count) if not self.is_done(index)]

    # -- progress ---------------------------------------------------------------------------
    @property
    def completed(self) -> int:
        return sum(self.received)

    def contiguous_prefix(self) -> int:
        """Bytes from offset 0 that are all on disk (what may be hashed already)."""
        for index in range(self.part_count):
            if not self.is_done(index):
                return self.next_offset(index)
        return self.size

    def add(self, index: int, count: int) -> None:
        self.received[index] += count

    def reset_to_prefix(self, offset: int) -> None:
        """Keep only the first ``offset`` bytes (a server that cannot do ranges restarts)."""
        for index in range(self.part_count):
            start, end = self.part_range(index)
            self.received[index] = max(0, min(end, offset) - start)

    # -- persistence ------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        document = {
            "version": _VERSION,
            "size": self.size,
            "part_size": self.part_size,
            "received": self.received,
            "names": self.names,
        }
        return json.dumps(document, separators=(",", ":")).encode()

    def save(self, path: Path, snapshot: bytes | None = None) -> None:
        """Replace the sidecar atomically. Not fsynced: the data it describes is not either,
        and after a power loss the sha256 check catches whatever the disk lost."""
        with temp_file_in(path.parent) as (stream, temp_path):
            stream.write(snapshot if snapshot is not None else self.to_bytes())
            stream.flush()
            os.replace(temp_path, path)

    @classmethod
    def load(cls, path: Path, size: int | None = None) -> PartialState | None:
        """The saved state, or None if there is none or it does not fit (then start over)."""
        try:
            document = json.loads(path.read_bytes())
            received = [int(count) for count in document["received"]]
            state = cls(int(document["size"]), int(document["part_size"]), received)
            state.names = [str(name) for name in document.get("names", [])]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if size is not None and state.size != size:
            return None
        if state.part_count > _MAX_PARTS or any(
            not 0 <= count <= state.part_range(i)[1] - state.part_range(i)[0]
            for i, count in enumerate(state.received)
        ):
            return None
        return state


class PartialProgress:
    """The live view of one download's :class:`PartialState`, shared by its writer threads:
    records what was written, tracks where the contiguous prefix ends, and rewrites the
    sidecar at most every ``save_interval`` and whenever a part completes."""

    def __init__(self, state: PartialState, path: Path, save_interval: float):
        self.state, self._path, self._interval = state, path, save_interval
        self._lock, self._save_lock = threading.Lock(), threading.Lock()
        self._first_pending, self._last_save = 0, 0.0
        self.prefix = 0  #: bytes from offset 0 that are all on disk
        self.completed = state.completed  #: bytes on disk
        self.fetched = 0  #: bytes received from the network in this run
        self._advance()

    def record(self, offset: int, count: int, fetched: int) -> bool:
        """``count`` bytes were written at ``offset`` (``fetched`` came off the network for
        them); returns whether the prefix moved."""
        part_size, due = self.state.part_size, False
        with self._lock:
            self.fetched += fetched
            while count > 0:
                index = offset // part_size
                piece = min(count, (index + 1) * part_size - offset)
                self.state.add(index, piece)
                offset, count = offset + piece, count - piece
                self.completed += piece
                due = due or self.state.is_done(index)
            moved = self._advance()
            due = due or time.monotonic() - self._last_save >= self._interval
        if due:
            self.save()
        return moved

    def keep_prefix_only(self) -> None:
        """Forget everything after the prefix (a server without ranges starts over there)."""
        with self._lock:
            self.state.reset_to_prefix(self.prefix)
            self.completed = self.state.completed
            self._first_pending = 0
            self._advance()

    def save(self) -> None:
        with self._save_lock:
            with self._lock:
                snapshot = self.state.to_bytes()
                self._last_save = time.monotonic()
            self.state.save(self._path, snapshot)

    def _advance(self) -> bool:
        state, before = self.state, self.prefix
        while self._first_pending < state.part_count and state.is_done(self._first_pending):
            self._first_pending += 1
        if self._first_pending < state.part_count:
            self.prefix = state.next_offset(self._first_pending)
        else:
            self.prefix = state.size
        return self.prefix != before


@dataclass(frozen=True, slots=True)
class PartialInfo:
    """A download that is paused or was interrupted, as found on disk."""

    digest: Digest
    size: int
    completed: int
    names: tuple[str, ...]
    state_path: Path


def list_partials(blobs_dir: Path) -> list[PartialInfo]:
    """Every resumable download in a store's blob directory."""
    found = []
    for path in sorted(blobs_dir.glob(f"sha256-*{PARTIAL_STATE_SUFFIX}")):
        try:
            digest = Digest.parse(path.name.removesuffix(PARTIAL_STATE_SUFFIX))
        except ValueError:
            continue
        state = PartialState.load(path)
        if state is not None:
            found.append(PartialInfo(digest, state.size, state.completed, tuple(state.names), path))
    return found
