"""Prompt states on disk: what one runner writes, a later one (or another process) finds by
prefix and loads back intact; a bad file is dropped, logged and never raises; the root stays
under its byte bound across namespaces; a full disk or a failing write stops writing, not
serving. Real files in tmp_path throughout."""

from __future__ import annotations

import ctypes
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from localllm.daemon.runners.prompt_store import (
    MAGIC,
    CheckpointData,
    PromptState,
    PromptStore,
    PromptWriter,
    clear,
    namespace,
    usage,
)

BLOCK = 16
SPACE = namespace({"model": "sha256-" + "a" * 64, "kv": "f16", "flash": True, "batch": BLOCK})
OTHER = namespace({"model": "sha256-" + "b" * 64, "kv": "q8_0", "flash": True, "batch": BLOCK})


def _tokens(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 32000, n, dtype=np.int32)


def _state(tokens: np.ndarray, size: int = 1000, checkpoints=()) -> PromptState:
    payload = (ctypes.c_uint8 * size).from_buffer(bytearray(os.urandom(size)))
    return PromptState(tokens, payload, 0, len(tokens), tuple(checkpoints))


def _store(root: Path, lines: list[str], space: str = SPACE, **options) -> PromptStore:
    options.setdefault("limit_bytes", 1 << 30)
    options.setdefault("reserve_bytes", 0)
    return PromptStore(root, space, block_tokens=BLOCK, log=lines.append, **options)


def _only_file(root: Path, space: str = SPACE) -> Path:
    (path,) = (root / space).glob("*.kv")
    return path


def test_a_state_round_trips_with_its_checkpoints(tmp_path):
    store = _store(tmp_path / "cache", [])
    tokens = _tokens(3 * BLOCK + 5)
    checkpoints = (CheckpointData(BLOCK, b"first checkpoint"), CheckpointData(40, bytearray(300)))
    state = PromptState(tokens, (ctypes.c_uint8 * 4096)(*range(256)), 7, 2 * BLOCK, checkpoints)
    assert store.write(state)
    assert (store.written, len(store)) == (1, 1)
    assert store.bytes == store.bytes_written == _only_file(tmp_path / "cache").stat().st_size

    stored, shared = store.longest(tokens)
    assert stored is not None and shared == len(tokens)
    assert (stored.window_start, stored.whole_batches) == (7, 2 * BLOCK)
    assert stored.checkpoint_tokens == (BLOCK, 40)
    loaded = store.load(stored)
    assert loaded is not None
    assert loaded.tokens.dtype == np.int32 and np.array_equal(loaded.tokens, tokens)
    assert bytes(loaded.state) == bytes(state.state)
    assert [(c.tokens, bytes(c.data)) for c in loaded.checkpoints] == [
        (BLOCK, b"first checkpoint"),
        (40, bytes(300)),
    ]
    assert (loaded.window_start, loaded.whole_batches) == (7, 2 * BLOCK)
    wrapped = (ctypes.c_uint8 * 4096).from_buffer(loaded.state)  # zero-copy, as the worker does
    assert wrapped[255] == 255


def test_files_are_private(tmp_path):
    root = tmp_path / "cache"
    store = _store(root, [])
    assert store.write(_state(_tokens(2 * BLOCK)))
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE((root / SPACE).stat().st_mode) == 0o700
    assert stat.S_IMODE(_only_file(root).stat().st_mode) == 0o600


def test_the_longest_shared_prefix_is_found_through_the_chain(tmp_path):
    store = _store(tmp_path, [])
    first = _tokens(4 * BLOCK + 3, seed=1)
    second = np.concatenate([first[: 2 * BLOCK], _tokens(3 * BLOCK, seed=2)])
    assert store.write(_state(first)) and store.write(_state(second))

    # parts from ``first`` 5 tokens past its third boundary
    prompt = np.concatenate([first[: 3 * BLOCK + 5], _tokens(BLOCK, seed=3)])
    stored, shared = store.longest(prompt.tolist())  # a plain list works as well
    assert stored is not None and np.array_equal(stored.tokens, first)
    assert shared == 3 * BLOCK + 5

    stored, shared = store.longest(np.concatenate([second, _tokens(BLOCK, seed=4)]))
    assert stored is not None and np.array_equal(stored.tokens, second)
    assert shared == len(second)

    assert store.longest(first[: BLOCK - 1]) == (None, 0)  # less than one block
    assert store.longest(_tokens(4 * BLOCK, seed=5)) == (None, 0)


def test_another_store_finds_what_one_wrote_and_sees_later_writes(tmp_path):
    writer, reader = _store(tmp_path, []), _store(tmp_path, [])
    assert reader.longest(_tokens(2 * BLOCK)) == (None, 0)
    tokens = _tokens(2 * BLOCK)
    assert writer.write(_state(tokens))

    stored, shared = reader.longest(tokens)  # the folder changed: listed again
    assert stored is not None and shared == 2 * BLOCK
    assert reader.load(stored) is not None

    restarted = _store(tmp_path, [])  # a runner started after the write
    assert restarted.longest(tokens)[1] == 2 * BLOCK and len(restarted) == 1

    clear(tmp_path)
    assert reader.longest(tokens) == (None, 0) and len(reader) == 0


def test_holds_a_stored_prompt_and_its_prefixes(tmp_path):
    store = _store(tmp_path, [])
    tokens = _tokens(3 * BLOCK)
    assert store.write(_state(tokens))
    assert store.holds(tokens) and store.holds(tokens[: 2 * BLOCK + 1])
    assert not store.holds(np.append(tokens, 1))
    assert not store.holds(_tokens(3 * BLOCK, seed=9))
    assert not store.write(_state(tokens[: 2 * BLOCK]))  # nothing to add


def test_a_longer_prompt_supersedes_its_prefix(tmp_path):
    store = _store(tmp_path, [])
    tokens = _tokens(5 * BLOCK)
    assert store.write(_state(tokens[: 2 * BLOCK]))
    assert store.write(_state(tokens))
    assert len(store) == 1 and usage(tmp_path)[0] == 1
    stored, shared = store.longest(tokens[: 2 * BLOCK])
    assert stored is not None and len(stored.tokens) == 5 * BLOCK and shared == 2 * BLOCK


def test_the_root_keeps_its_bound_across_namespaces_least_recently_used_first(tmp_path):
    lines: list[str] = []
    probe = _store(tmp_path / "probe", [])
    assert probe.write(_state(_tokens(2 * BLOCK)))
    size = probe.bytes
    ours = _store(tmp_path / "cache", lines, limit_bytes=2 * size + size // 2)
    theirs = _store(tmp_path / "cache", lines, OTHER, limit_bytes=2 * size + size // 2)
    kept, old = _tokens(2 * BLOCK, seed=1), _tokens(2 * BLOCK, seed=2)
    assert ours.write(_state(kept)) and theirs.write(_state(old))
    now = os.stat(tmp_path).st_mtime_ns
    os.utime(_only_file(tmp_path / "cache"), ns=(now - 200 * 10**9,) * 2)  # the oldest...
    os.utime(_only_file(tmp_path / "cache", OTHER), ns=(now - 100 * 10**9,) * 2)
    stored, _ = ours.longest(kept)
    assert stored is not None and ours.load(stored) is not None  # ...until it is used

    assert ours.write(_state(_tokens(2 * BLOCK, seed=3)))
    assert usage(tmp_path / "cache") == (2, 2 * size)
    assert ours.longest(kept)[0] is not None
    assert theirs.longest(old) == (None, 0) and len(theirs) == 0
    assert ours.evicted == 1 and any("evicted" in line for line in lines)


def _cut_short(path: Path) -> None:
    os.truncate(path, path.stat().st_size - 10)


def _flip(offset: int):
    def flip(path: Path) -> None:
        data = bytearray(path.read_bytes())
        data[offset] ^= 0x10
        path.write_bytes(data)

    return flip


def _header_end(path: Path) -> int:
    data = path.read_bytes()
    return len(MAGIC) + 4 + int.from_bytes(data[len(MAGIC) : len(MAGIC) + 4], "little")


def _garbage_header(path: Path) -> None:
    path.write_bytes(MAGIC + (9).to_bytes(4, "little") + b"{not json" + bytes(100))


@pytest.mark.parametrize(
    ("spoil", "reason"),
    [
        (_cut_short, "do not add up"),
        (_flip(-1), "checksum mismatch"),
        (lambda path: _flip(_header_end(path) + 5)(path), "do not match its name"),
        (lambda path: _flip(len(MAGIC) + 20)(path), ""),  # somewhere in the header
        (_garbage_header, "does not parse"),
        (lambda path: path.write_bytes(b"\x00" * 64), "not a prompt state file"),
    ],
)
def test_a_bad_file_is_dropped_logged_and_never_raises(tmp_path, spoil, reason):
    tokens = _tokens(2 * BLOCK)
    assert _store(tmp_path, []).write(_state(tokens))
    path = _only_file(tmp_path)
    spoil(path)

    lines: list[str] = []
    store = _store(tmp_path, lines)  # a new runner: scans the header
    stored, _ = store.longest(tokens)
    assert stored is None or store.load(stored) is None  # the payload is checked on load
    assert store.longest(tokens) == (None, 0)
    assert store.dropped == 1 and not path.exists()
    assert len(lines) == 1 and path.name in lines[0] and reason in lines[0]
    assert str(tmp_path) not in lines[0]


def test_a_file_spoiled_after_it_was_indexed_is_dropped_on_load(tmp_path):
    lines: list[str] = []
    store = _store(tmp_path, lines)
    tokens = _tokens(3 * BLOCK)
    assert store.write(_state(tokens))
    stored, _ = store.longest(tokens)
    _flip(-100)(_only_file(tmp_path))
    assert stored is not None and store.load(stored) is None
    assert store.dropped == 1 and "checksum mismatch (the file is corrupt)" in lines[-1]
    assert store.longest(tokens) == (None, 0)


def test_a_file_of_another_namespace_is_dropped(tmp_path):
    tokens = _tokens(2 * BLOCK)
    assert _store(tmp_path, [], OTHER).write(_state(tokens))
    theirs = _only_file(tmp_path, OTHER)
    (tmp_path / SPACE).mkdir()
    shutil.copy(theirs, tmp_path / SPACE / theirs.name)

    lines: list[str] = []
    store = _store(tmp_path, lines)
    assert store.longest(tokens) == (None, 0)
    assert store.dropped == 1 and "another model or llama.cpp build" in lines[0]
    assert not (tmp_path / SPACE / theirs.name).exists() and theirs.exists()


def test_a_link_is_never_followed_nor_its_target_deleted(tmp_path):
    tokens = _tokens(2 * BLOCK)
    assert _store(tmp_path / "elsewhere", []).write(_state(tokens))
    target = _only_file(tmp_path / "elsewhere")
    (tmp_path / "cache" / SPACE).mkdir(parents=True)
    link = tmp_path / "cache" / SPACE / target.name
    link.symlink_to(target)

    lines: list[str] = []
    store = _store(tmp_path / "cache", lines)
    assert store.longest(tokens) == (None, 0)
    assert store.dropped == 1 and "not a regular file" in lines[0]
    assert store.longest(tokens) == (None, 0) and len(lines) == 1  # said once
    assert target.exists() and link.is_symlink()


def test_a_file_replaced_by_a_link_after_indexing_is_not_followed(tmp_path):
    lines: list[str] = []
    store = _store(tmp_path / "cache", lines)
    tokens = _tokens(2 * BLOCK)
    assert store.write(_state(tokens))
    stored, _ = store.longest(tokens)
    path = _only_file(tmp_path / "cache")
    target = tmp_path / "target.kv"
    path.rename(target)
    path.symlink_to(target)
    assert stored is not None and store.load(stored) is None
    assert store.dropped == 1 and "link" in lines[-1]
    assert target.exists() and path.is_symlink()


def test_a_nearly_full_disk_stops_writing_but_not_serving(tmp_path):
    tokens = _tokens(2 * BLOCK)
    assert _store(tmp_path, []).write(_state(tokens))
    lines: list[str] = []
    reserve = shutil.disk_usage(tmp_path).free + (1 << 40)
    store = _store(tmp_path, lines, reserve_bytes=reserve)
    assert not store.write(_state(_tokens(2 * BLOCK, seed=1)))
    assert store.full and len(lines) == 1 and "the disk is nearly full" in lines[0]
    assert "prompts are still served" in lines[0]
    assert not store.write(_state(_tokens(2 * BLOCK, seed=2))) and len(lines) == 1
    stored, _ = store.longest(tokens)
    assert stored is not None and store.load(stored) is not None
    assert not PromptWriter(store).offer(_state(_tokens(2 * BLOCK, seed=3)))


def test_a_failing_write_leaves_no_temp_file_and_stops_writing(tmp_path):
    """A real EFBIG: the child may write files of at most 1 MiB, the state is 4 MiB."""
    child = textwrap.dedent(
        """
        import resource, signal, sys
        from pathlib import Path
        import numpy as np
        from localllm.daemon.runners.prompt_store import PromptState, PromptStore

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
        lines = []
        root = Path(sys.argv[1])
        store = PromptStore(root, sys.argv[2], 1 << 30, 16, lines.append, reserve_bytes=0)
        state = PromptState(np.arange(64, dtype=np.int32), bytearray(4 << 20), 0, 64, ())
        print("written", store.write(state), "full", store.full)
        print("left", sorted(p.name for p in root.rglob("*") if p.is_file()))
        print(*lines, sep="\\n")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", child, str(tmp_path), SPACE],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[:2] == ["written False full True", "left []"]
    assert out[2:] == [
        "prompt cache: writing a prompt state failed (File too large); no more prompt states "
        "are written, prompts are still served"
    ]


class _GatedStore(PromptStore):
    """Writes only once ``gate`` is set: the writer's queue is what is under test."""

    def __init__(self, *args, **options) -> None:
        super().__init__(*args, **options)
        self.gate, self.started = threading.Event(), threading.Event()

    def write(self, state: PromptState) -> bool:
        self.started.set()
        self.gate.wait()
        return super().write(state)


def test_the_writer_holds_at_most_most_pending_states_and_never_blocks(tmp_path):
    store = _GatedStore(tmp_path, SPACE, 1 << 30, BLOCK, [].append, reserve_bytes=0)
    writer = PromptWriter(store, most_pending=2)
    assert writer.offer(_state(_tokens(2 * BLOCK, seed=1)))
    assert store.started.wait(60)  # the first one is being written
    assert writer.offer(_state(_tokens(2 * BLOCK, seed=2)))
    assert not writer.offer(_state(_tokens(2 * BLOCK, seed=3)))  # dropped, not waited for
    assert not writer.flush(0)
    store.gate.set()
    assert writer.flush(60)
    assert store.written == 2
    assert writer.offer(_state(_tokens(2 * BLOCK, seed=3)))
    writer.close(60)
    assert store.written == 3
    assert not writer.offer(_state(_tokens(2 * BLOCK, seed=4)))


class _FailsOnceStore(PromptStore):
    def write(self, state: PromptState) -> bool:
        if not hasattr(self, "failed"):
            self.failed = True
            raise RuntimeError("a bug in a write")
        return super().write(state)


def test_the_writer_thread_outlives_a_failing_write(tmp_path):
    lines: list[str] = []
    store = _FailsOnceStore(tmp_path, SPACE, 1 << 30, BLOCK, lines.append, reserve_bytes=0)
    writer = PromptWriter(store)
    assert writer.offer(_state(_tokens(2 * BLOCK, seed=1)))
    assert writer.flush(60) and "a bug in a write" in lines[0]
    assert writer.offer(_state(_tokens(2 * BLOCK, seed=2)))
    assert writer.flush(60) and store.written == 1
    writer.close(60)


def test_usage_and_clear_cover_every_namespace_and_leave_links(tmp_path):
    root = tmp_path / "cache"
    assert _store(root, []).write(_state(_tokens(2 * BLOCK, seed=1)))
    assert _store(root, [], OTHER).write(_state(_tokens(3 * BLOCK, seed=2)))
    stored_bytes = sum(path.stat().st_size for path in root.glob("*/*.kv"))
    temp = root / SPACE / f"{'0' * 64}.{'1' * 12}.tmp"
    temp.write_bytes(bytes(10))
    outside = tmp_path / "outside.kv"
    outside.write_bytes(b"not ours")
    (root / OTHER / f"{'2' * 64}.kv").symlink_to(outside)
    assert usage(root) == (2, stored_bytes)

    assert clear(root) == (3, stored_bytes + 10)
    assert usage(root) == (0, 0)
    assert not (root / SPACE).exists()  # emptied, removed
    assert (root / OTHER).exists() and outside.read_bytes() == b"not ours"
    assert usage(tmp_path / "missing") == (0, 0) == clear(tmp_path / "missing")


def test_a_temp_file_left_by_a_dead_writer_is_removed_when_old(tmp_path):
    assert _store(tmp_path, []).write(_state(_tokens(2 * BLOCK)))
    old, new = (tmp_path / SPACE / f"{digit * 64}.{'1' * 12}.tmp" for digit in "ab")
    old.write_bytes(b"x")
    new.write_bytes(b"x")
    then = old.stat().st_mtime_ns - 3600 * 10**9
    os.utime(old, ns=(then, then))
    _store(tmp_path, []).longest(_tokens(2 * BLOCK))
    assert not old.exists() and new.exists()
