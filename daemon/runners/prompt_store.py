"""Prompt states on disk: a runner resumes a long prompt that an earlier runner already read.

Coding agents send the same 10-40k-token system prompt every session; after an unload or a
daemon restart a runner loads its KV state from here and reads only the rest of the prompt.
As vLLM and SGLang key prefix blocks, stored prompts are found through a hash chain over whole
blocks, then compared token by token. A state fits only the model, KV type and llama.cpp build
that wrote it: each has a folder (``namespace``) under one root, all under one byte bound.

``<root>/<namespace>/<sha256 of the namespace and all the tokens>.kv``: magic ``LLPCKV01`` |
u32 LE header length | JSON header ``{namespace, n_tokens, window_start, whole_batches,
state_size, checkpoints: [[tokens, size], ...], sha256}`` | n_tokens int32 LE | the state |
each checkpoint's bytes. ``sha256`` covers the header (its own value as 64 zeros) and all after
it: a flipped bit is found before llama.cpp sees a state, and the prompt is read again instead.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import itertools
import json
import os
import queue
import re
import shutil
import stat
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import Buffer  # collections.abc.Buffer from Python 3.12

__all__ = ["CheckpointData", "PromptState", "PromptStore", "PromptWriter", "StoredPrompt"]
__all__ += ["DEFAULT_RESERVE_BYTES", "clear", "namespace", "usage"]

DEFAULT_RESERVE_BYTES = 1 << 30  # the free disk space a write never goes below
MAGIC = b"LLPCKV01"
_PREFIX = len(MAGIC) + 4  # the magic and the header's length
_NUMBERS = ("n_tokens", "window_start", "whole_batches", "state_size")
_NO_DIGEST = b"0" * 64  # the digest's place while it is computed (nothing else has 64 hex)
_STALE_TEMP_NS = 600 * 10**9  # a temp file this old was left by a writer that died
_RECENT_NS = 2 * 10**9  # a folder changed this recently is listed again (coarse mtimes)
_STORED = re.compile(r"[0-9a-f]{64}\.kv")
_TEMP = re.compile(r"[0-9a-f]{64}\.[0-9a-f]{12}\.tmp")

Tokens = npt.NDArray[np.int32]


@dataclass(frozen=True, slots=True)
class CheckpointData:
    tokens: int  # the sequence length the window checkpoint resumes at
    data: Buffer  # bytes-like: a ctypes c_uint8 array, bytes, bytearray, memoryview


@dataclass(frozen=True, slots=True, eq=False)
class PromptState:
    """What one file holds."""

    tokens: Tokens  # the token ids whose KV the state holds
    state: Buffer  # what llama_state_seq_get_data wrote
    window_start: int  # the first position its sliding-window cache holds (0: all)
    whole_batches: int  # the first tokens read in whole batches from the start
    checkpoints: tuple[CheckpointData, ...]


@dataclass(frozen=True, slots=True, eq=False)
class StoredPrompt:
    """One file in the index: its header only (the payload stays on disk until ``load``)."""

    name: str  # the file's name, never a path
    tokens: Tokens
    window_start: int
    whole_batches: int
    checkpoint_tokens: tuple[int, ...]
    size: int  # the whole file's bytes


class _Corrupt(Exception):
    """Why a file cannot be used (the reason its log line gives)."""


def namespace(parts: Mapping[str, object]) -> str:
    """The folder of what makes a state unusable elsewhere (model digest, KV type, flash
    attention, llama.cpp build, batch size): a digest of their canonical JSON."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _chain(space: str, tokens: Tokens, block: int) -> list[bytes]:
    """The chain hash at every whole-block boundary of ``tokens``."""
    data, links = tokens.astype("<i4").tobytes(), [hashlib.sha256(space.encode()).digest()]
    for end in range(4 * block, len(data) + 1, 4 * block):
        links.append(hashlib.sha256(links[-1] + data[end - 4 * block : end]).digest())
    return links[1:]


def _name(space: str, tokens: Tokens) -> str:
    return hashlib.sha256(space.encode() + tokens.astype("<i4").tobytes()).hexdigest() + ".kv"


def _head(file: io.BufferedReader, size: int, space: str) -> tuple[dict[str, Any], bytes, Tokens]:
    """The checked header, its bytes and the tokens of an open file (its payload is not read)."""
    prefix = file.read(_PREFIX)
    length = int.from_bytes(prefix[len(MAGIC) :], "little")
    if len(prefix) < _PREFIX or prefix[: len(MAGIC)] != MAGIC or length > 64 << 10:
        raise _Corrupt("it is not a prompt state file (or its header is too long)")
    try:
        header = json.loads(raw := file.read(length))
        header["checkpoints"] = [(t, s) for t, s in header["checkpoints"]]
        counts = [header[key] for key in _NUMBERS] + [*itertools.chain(*header["checkpoints"])]
        digest = re.fullmatch(r"[0-9a-f]{64}", header["sha256"])
        if not digest or not all(type(v) is int and 0 <= v < 1 << 48 for v in counts):
            raise ValueError("not counts and a digest")
    except (ValueError, KeyError, TypeError):  # UnicodeDecodeError is a ValueError
        raise _Corrupt("its header does not parse") from None
    if header["namespace"] != space:
        raise _Corrupt("it was written for another model or llama.cpp build")
    n, payload = header["n_tokens"], header["state_size"] + sum(s for _, s in header["checkpoints"])
    if _PREFIX + length + 4 * n + payload != size:
        raise _Corrupt("its lengths do not add up to its size (cut short?)")
    if len(tokens := file.read(4 * n)) != 4 * n:
        raise _Corrupt("it is cut short")
    return header, raw, np.frombuffer(tokens, dtype="<i4").astype(np.int32)


def _opener(path: str, flags: int) -> int:  # never through a link, a FIFO never blocks
    return os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)


class PromptStore:
    """The prompt states of one namespace, found by prefix; the whole root kept under a bound.
    The index has a lock (the writer thread writes while the runner looks up and loads)."""

    def __init__(
        self,
        folder: Path,
        namespace: str,
        limit_bytes: int,
        block_tokens: int,
        log: Callable[[str], None],
        reserve_bytes: int = DEFAULT_RESERVE_BYTES,
    ) -> None:
        if not re.fullmatch(r"[0-9a-f]{8,32}", namespace) or block_tokens < 1:
            raise ValueError(f"not a prompt cache namespace or block: {namespace!r}")
        self.root, self.namespace, self.block_tokens = folder, namespace, block_tokens
        self.limit_bytes, self.reserve_bytes, self.log = limit_bytes, reserve_bytes, log
        self._dir, self._lock = folder / namespace, threading.Lock()
        self._files: dict[str, tuple[StoredPrompt, list[bytes]]] = {}  # name -> it, its chain
        self._reach: dict[bytes, set[str]] = {}  # chain hash -> the files that reach it
        self._refused: set[str] = set()  # names that are not regular files, left alone
        self._seen: int | None = None  # the folder's mtime when it was last listed
        self.written = self.bytes_written = self.dropped = self.evicted = 0
        self.full = False  # writing has stopped (disk full, a write failed)

    def __len__(self) -> int:
        return len(self._files)

    @property
    def bytes(self) -> int:
        """This namespace's indexed bytes."""
        return sum(stored.size for stored, _ in self._files.values())

    def longest(self, prompt: Sequence[int] | npt.NDArray[Any]) -> tuple[StoredPrompt | None, int]:
        """The stored prompt sharing the longest prefix with ``prompt``, and that length;
        (None, 0) when none shares a whole block."""
        tokens = np.ascontiguousarray(prompt, dtype=np.int32).reshape(-1)
        chain = _chain(self.namespace, tokens, self.block_tokens)
        with self._lock:
            self._refresh()
            reached = [self._reach[link] for link in itertools.takewhile(self._reach.get, chain)]
            found = [self._files[name][0] for name in (reached[-1] if reached else ())]
        shared = [(_common(stored.tokens, tokens), stored) for stored in found]
        most, best = max(shared, key=lambda pair: pair[0], default=(0, None))
        return (best, most) if most >= self.block_tokens else (None, 0)

    def holds(self, tokens: Sequence[int] | npt.NDArray[Any]) -> bool:
        """Whether a stored prompt is these tokens or starts with them (nothing to write)."""
        stored, shared = self.longest(tokens)
        return stored is not None and shared == len(tokens)

    def load(self, stored: StoredPrompt) -> PromptState | None:
        """The checked state of ``stored``; None (the file dropped and logged) when it is bad."""
        try:
            return self._read(stored.name, whole=True)[1]
        except (_Corrupt, OSError) as bad:
            with self._lock:
                self._drop(stored.name, bad)
            return None

    def write(self, state: PromptState) -> bool:
        """Write ``state`` (on the writer thread); False when it is skipped or fails."""
        tokens = np.ascontiguousarray(state.tokens, dtype=np.int32).reshape(-1)
        if self.full or len(tokens) < self.block_tokens or self.holds(tokens):
            return False
        datas = [state.state, *(c.data for c in state.checkpoints)]
        parts = [memoryview(data).cast("B") for data in datas]
        numbers = (len(tokens), state.window_start, state.whole_batches, len(parts[0]))
        fields: dict[str, object] = {"namespace": self.namespace, "sha256": _NO_DIGEST.decode()}
        fields |= dict(zip(_NUMBERS, numbers, strict=True))
        fields["checkpoints"] = [
            [c.tokens, len(p)] for c, p in zip(state.checkpoints, parts[1:], strict=True)
        ]
        header = json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()
        parts.insert(0, memoryview(tokens.astype("<i4").tobytes()))
        size = _PREFIX + len(header) + sum(len(part) for part in parts)
        name = _name(self.namespace, tokens)
        temp = self._dir / f"{name[:-3]}.{os.urandom(6).hex()}.tmp"
        if size > self.limit_bytes:
            return False
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)  # made on the first write
            self._dir.mkdir(mode=0o700, exist_ok=True)  # and again after ``clear``
            if (free := shutil.disk_usage(self._dir).free) - size < self.reserve_bytes:
                self._stop(f"the disk is nearly full ({free >> 20:,} MiB free)")
                return False
            with open(temp, "xb", opener=_opener) as file:
                file.write(MAGIC + len(header).to_bytes(4, "little") + header)
                digest = hashlib.sha256(header)
                for part in parts:  # streamed: a state can be gigabytes
                    digest.update(part)
                    file.write(part)
                file.seek(_PREFIX)
                file.write(header.replace(_NO_DIGEST, digest.hexdigest().encode(), 1))
            os.replace(temp, self._dir / name)
        except OSError as error:
            temp.unlink(missing_ok=True)
            self._stop(f"writing a prompt state failed ({error.strerror})")  # no path
            return False
        with self._lock:
            self._refresh()  # indexes it
            self._supersede(name, tokens)
            self._evict()
        self.written, self.bytes_written = self.written + 1, self.bytes_written + size
        return True

    def _read(self, name: str, whole: bool) -> tuple[StoredPrompt, PromptState | None]:
        """The file's header and tokens, checked; with ``whole`` its state too, checked, as
        views of one bytearray (and the file counts as used)."""
        with open(self._dir / name, "rb", opener=_opener) as file:
            size = os.fstat(file.fileno()).st_size
            header, raw, tokens = _head(file, size, self.namespace)
            if _name(self.namespace, tokens) != name or size > self.limit_bytes:
                raise _Corrupt("its tokens do not match its name (or it is over the limit)")
            window, batches, state_size = (header[k] for k in _NUMBERS[1:])
            starts = tuple(start for start, _ in header["checkpoints"])
            stored = StoredPrompt(name, tokens, window, batches, starts, size)
            if not whole:
                return stored, None
            data = bytearray(size - _PREFIX - len(raw) - 4 * len(tokens))
            if file.readinto(data) != len(data):
                raise _Corrupt("it is cut short")
            digest = hashlib.sha256(raw.replace(header["sha256"].encode(), _NO_DIGEST, 1))
            digest.update(tokens.astype("<i4").tobytes())
            digest.update(data)
            if digest.hexdigest() != header["sha256"]:
                raise _Corrupt("checksum mismatch (the file is corrupt)")
            os.utime(file.fileno())  # least recently used goes first
        view, at, checkpoints = memoryview(data), state_size, []
        for start, length in header["checkpoints"]:
            checkpoints.append(CheckpointData(start, view[at : at + length]))
            at += length
        return stored, PromptState(tokens, view[:state_size], window, batches, tuple(checkpoints))

    def _refresh(self) -> None:
        """Index the files other runners (or this one) wrote, forget those gone (lock held)."""
        mtime = None
        with contextlib.suppress(OSError):
            mtime = os.stat(self._dir).st_mtime_ns
        if mtime is not None and mtime == self._seen:
            return
        now = time.time_ns()
        self._seen = mtime if mtime and now - mtime > _RECENT_NS else None
        entries = {entry.name: entry for entry in _listing(self._dir) if mtime is not None}
        for name in [name for name in self._files if name not in entries]:
            self._forget(name)
        self._refused &= entries.keys()
        for name, entry in entries.items():
            if _TEMP.fullmatch(name):  # a writer that died left it: removed when old
                with contextlib.suppress(FileNotFoundError):
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode) and now - info.st_mtime_ns > _STALE_TEMP_NS:
                        os.unlink(entry.path)
            elif not _STORED.fullmatch(name) or name in self._files or name in self._refused:
                continue
            elif not entry.is_file(follow_symlinks=False):
                self._drop(name, _Corrupt("it is not a regular file (links are never followed)"))
            else:
                try:
                    self._add(self._read(name, whole=False)[0])
                except (_Corrupt, OSError) as bad:
                    self._drop(name, bad)

    def _add(self, stored: StoredPrompt) -> None:
        chain = _chain(self.namespace, stored.tokens, self.block_tokens)
        self._files[stored.name] = (stored, chain)
        for link in chain:
            self._reach.setdefault(link, set()).add(stored.name)

    def _forget(self, name: str) -> None:
        for link in self._files.pop(name, (None, []))[1]:
            self._reach[link].discard(name)  # an empty set counts as missing

    def _supersede(self, name: str, tokens: Tokens) -> None:
        """Delete the stored prompts that ``tokens`` start with: their state resumes them too."""
        links = _chain(self.namespace, tokens, self.block_tokens)
        for other in set().union(*(self._reach.get(link, ()) for link in links)) - {name}:
            shorter = self._files[other][0].tokens
            if _common(shorter, tokens) == len(shorter):
                self._forget(other)
                _unlink_regular(self._dir / other)

    def _evict(self) -> None:
        """Delete the least recently used files of every namespace until the root fits."""
        files = sorted(_root_files(self.root))
        total = sum(size for _, size, _ in files)
        for _, size, path in files:
            if total <= self.limit_bytes:
                return
            _unlink_regular(path)
            total, self.evicted = total - size, self.evicted + 1
            if path.parent == self._dir:
                self._forget(path.name)
            self.log(f"prompt cache: evicted {path.name} (the least recently used, over the limit)")

    def _drop(self, name: str, bad: Exception) -> None:
        """Forget a bad file and delete it; what is not a regular file is left, and ignored."""
        self._forget(name)
        if not _unlink_regular(self._dir / name):
            self._refused.add(name)
        self.dropped += 1
        why = str(bad)
        if isinstance(bad, OSError):  # its strerror only: the message names no path
            known = {errno.ENOENT: "it vanished", errno.ELOOP: "it is a link (never followed)"}
            why = known.get(bad.errno or 0, f"it cannot be read ({bad.strerror})")
        self.log(f"prompt cache: dropped {name}: {why}; the prompt is read again")

    def _stop(self, why: str) -> None:
        if not self.full:
            self.full = True
            stopped = "no more prompt states are written, prompts are still served"
            self.log(f"prompt cache: {why}; {stopped}")


def _common(a: Tokens, b: Tokens) -> int:
    differ = np.flatnonzero(a[: len(b)] != b[: len(a)])
    return int(differ[0]) if len(differ) else min(len(a), len(b))


def _unlink_regular(path: Path) -> bool:
    """Delete ``path`` if it is a regular file (or gone); False when something else is there."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        path.unlink()
    return True


def _listing(folder: Path | str) -> list[os.DirEntry[str]]:
    with contextlib.suppress(FileNotFoundError, NotADirectoryError), os.scandir(folder) as found:
        return list(found)
    return []


def _root_files(folder: Path, temp: bool = False) -> list[tuple[int, int, Path]]:
    """(mtime, size, path) of every regular *.kv file (and temp file) in every namespace."""
    found = []
    for space in (s for s in _listing(folder) if s.is_dir(follow_symlinks=False)):
        for entry in _listing(space.path):
            if entry.name.endswith(".kv") or (temp and _TEMP.fullmatch(entry.name)):
                with contextlib.suppress(FileNotFoundError):
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode):
                        found.append((info.st_mtime_ns, info.st_size, Path(entry.path)))
    return found


def usage(folder: Path) -> tuple[int, int]:
    """(files, bytes) of every stored prompt under the root, all namespaces."""
    files = _root_files(folder)
    return len(files), sum(size for _, size, _ in files)


def clear(folder: Path) -> tuple[int, int]:
    """Delete every stored prompt and temp file under the root, and the emptied namespace
    folders; (files, bytes) removed. Links and what is not a regular file stay."""
    removed = []
    for _, size, path in _root_files(folder, temp=True):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(size)
    for space in (s for s in _listing(folder) if s.is_dir(follow_symlinks=False)):
        with contextlib.suppress(OSError):  # not empty: something else lives there
            os.rmdir(space.path)
    return len(removed), sum(removed)


class PromptWriter:
    """Writes states on a daemon thread so the generation loop never waits for the disk; holds
    at most ``most_pending`` states, the one being written included (each may be gigabytes)."""

    def __init__(self, store: PromptStore, most_pending: int = 2) -> None:
        self.store, self.most_pending = store, most_pending
        self._queue: queue.SimpleQueue[PromptState | None] = queue.SimpleQueue()  # None: stop
        self._pending, self._closed = 0, False  # offered, not yet written
        self._lock, self._idle = threading.Lock(), threading.Event()
        self._idle.set()
        self._thread = threading.Thread(target=self._run, name="prompt-cache-writer", daemon=True)
        self._thread.start()

    def offer(self, state: PromptState) -> bool:
        """Queue ``state``; False (not queued) when too many wait or writing has stopped."""
        with self._lock:
            if self._closed or self.store.full or self._pending >= self.most_pending:
                return False
            self._pending += 1
            self._idle.clear()
            self._queue.put(state)
        return True

    def flush(self, timeout: float) -> bool:
        """Wait until all that was offered is written (True) or ``timeout`` passes (False)."""
        return self._idle.wait(timeout)

    def close(self, timeout: float) -> None:
        """Flush, then stop the thread (past ``timeout`` it finishes its work unwaited)."""
        flushed = self.flush(timeout)
        with self._lock:
            self._closed = True
            self._queue.put(None)
        self._thread.join(timeout if flushed else 0)

    def _run(self) -> None:
        while (state := self._queue.get()) is not None:
            try:
                self.store.write(state)
            except Exception as error:  # the thread outlives any one write
                self.store.log(f"prompt cache: writing a prompt state failed ({error!r:.200})")
            del state  # its memory goes now, not when the next state comes
            with self._lock:
                self._pending -= 1
                if not self._pending:
                    self._idle.set()
