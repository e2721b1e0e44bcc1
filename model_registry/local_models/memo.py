"""Whether the store already holds a file, without hashing it again.

Known when the file's digest is known (an Ollama or Hugging Face blob name), when the file is
itself a store blob (a hard link: the same inode), or from this memo of files added before,
keyed by path, size and modification time.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from localllm.model_registry.digests import Digest
from localllm.model_registry.store import Store
from localllm.model_registry.store.atomic import atomic_write_bytes

__all__ = ["ImportMemo"]

_MAX_ENTRIES = 2_000


class ImportMemo:
    def __init__(self, store: Store):
        self._store = store
        self._path = store.layout.imports_memo_path
        self._blob_inodes: set[tuple[int, int]] | None = None

    def holds(self, path: Path, digest: Digest | None = None) -> bool:
        if digest is not None and self._store.blobs.exists(digest):
            return True
        try:
            stat = os.stat(path)
        except OSError:
            return False
        if (stat.st_dev, stat.st_ino) in self._inodes():
            return True
        entry = self._entries().get(str(path.resolve()))
        if not entry or [entry.get("size"), entry.get("mtime_ns")] != [
            stat.st_size,
            stat.st_mtime_ns,
        ]:
            return False
        try:
            return self._store.blobs.exists(Digest.parse(str(entry.get("digest"))))
        except ValueError:
            return False

    def remember(self, path: Path, digest: Digest) -> None:
        stat = os.stat(path)
        entries = self._entries()
        entries[str(path.resolve())] = {
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "digest": str(digest),
        }
        kept = dict(list(entries.items())[-_MAX_ENTRIES:])
        atomic_write_bytes(self._path, json.dumps(kept).encode())

    def _entries(self) -> dict[str, dict[str, object]]:
        try:
            data = json.loads(self._path.read_bytes())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _inodes(self) -> set[tuple[int, int]]:
        if self._blob_inodes is None:
            inodes = set()
            for blob in self._store.layout.blobs_dir.glob("sha256-*"):
                try:
                    stat = blob.stat()
                except OSError:
                    continue
                inodes.add((stat.st_dev, stat.st_ino))
            self._blob_inodes = inodes
        return self._blob_inodes
