"""Coordination between processes sharing one store.

Two mechanisms, both file based so they work across processes:

* the **store lock** (``filelock``) serializes short critical sections: committing a blob,
  writing or deleting a manifest, and garbage collection;
* **leases** protect blobs that an operation in progress relies on but that no manifest refers
  to yet (a pull that finished one of three files, an import between writing its blob and its
  manifest). Garbage collection never deletes a leased blob. A lease belongs to a process; a
  lease whose process is gone is stale and ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import filelock

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import StoreLockTimeout
from localllm.model_registry.store.atomic import atomic_write_bytes

__all__ = ["Lease", "Leases", "StoreLock", "process_alive"]


class StoreLock:
    """A re-entrant inter-process lock over one store."""

    def __init__(self, path: Path, timeout: float = 60.0):
        self._lock = filelock.FileLock(path, timeout=timeout)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        try:
            with self._lock:
                yield
        except filelock.Timeout as error:
            raise StoreLockTimeout(
                "another localllm process has held the model store lock for too long; "
                "try again in a moment"
            ) from error


def process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Lease:
    """One operation's lease; :meth:`add` extends it as the operation learns new digests."""

    def __init__(self, path: Path, digests: Iterable[Digest]):
        self._path = path
        self._digests: set[Digest] = set()
        self.add(*digests)

    def add(self, *digests: Digest) -> None:
        if set(digests) <= self._digests and self._path.exists():
            return
        self._digests.update(digests)
        atomic_write_bytes(self._path, json.dumps(sorted(d.wire for d in self._digests)).encode())


class Leases:
    """Lease files under ``<store>/leases``: ``<pid>-<uuid>.json`` listing digests."""

    def __init__(self, directory: Path):
        self._directory = directory

    @contextlib.contextmanager
    def hold(self, digests: Iterable[Digest] = ()) -> Iterator[Lease]:
        self._directory.mkdir(parents=True, exist_ok=True)
        path = self._directory / f"{os.getpid()}-{uuid.uuid4().hex}.json"
        try:
            yield Lease(path, digests)
        finally:
            path.unlink(missing_ok=True)

    def leased(self) -> set[Digest]:
        """Digests leased by live processes; stale lease files are removed on the way."""
        found: set[Digest] = set()
        if not self._directory.is_dir():
            return found
        for path in self._directory.glob("*.json"):
            pid_text = path.name.split("-", 1)[0]
            if not pid_text.isdigit() or not process_alive(int(pid_text)):
                path.unlink(missing_ok=True)
                continue
            found.update(self._read(path))
        return found

    @staticmethod
    def _read(path: Path) -> set[Digest]:
        try:
            entries = json.loads(path.read_bytes())
            return {Digest.parse(entry) for entry in entries}
        except (OSError, ValueError, TypeError):
            return set()
