"""Bring a collection's index up to date with its files: new and changed files are parsed,
chunked and embedded, unchanged ones skipped (same size and mtime, or same SHA-256), deleted
ones dropped. A file that cannot be read is an error for that file alone.

``Indexer.run`` is a generator of ``IndexProgress`` events ending with one ``IndexReport``, so
the app can show progress from a worker thread and stop between files.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from app.documents.chunking import chunk_sections
from app.documents.embedder import DaemonEmbedder
from app.documents.errors import DocumentError
from app.documents.index import DocumentIndex, FileRecord
from app.documents.parsing import is_supported, parse

__all__ = ["IndexProgress", "IndexReport", "Indexer", "scan"]


@dataclass(frozen=True, slots=True)
class IndexProgress:
    done: int  # files looked at so far
    total: int
    current: str  # the file's name


@dataclass(frozen=True, slots=True)
class IndexReport:
    indexed: int  # parsed and stored this run
    unchanged: int
    removed: int
    passages: int  # in the whole index afterwards
    errors: tuple[str, ...]  # one line per file that could not be read
    embed_model: str  # "" when the index is keyword-only


def scan(sources: Sequence[Path]) -> list[Path]:
    """The readable documents under ``sources`` (files, and folders walked recursively,
    hidden entries skipped), resolved, each once, in a stable order."""
    found: dict[Path, None] = {}
    for source in sources:
        source = Path(source)
        if source.is_file():
            found[source.resolve()] = None
        elif source.is_dir():
            for root, dirs, files in os.walk(source):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    path = Path(root, name)
                    if not name.startswith(".") and is_supported(path):
                        found[path.resolve()] = None
    return list(found)


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


class Indexer:
    def __init__(self, index: DocumentIndex, embedder: DaemonEmbedder | None = None):
        self.index, self.embedder = index, embedder

    def run(self, sources: Sequence[Path]) -> Iterator[IndexProgress | IndexReport]:
        """Index ``sources``; embedding failures (the daemon, the model) raise, and what was
        done before them stays done."""
        self.index.use_embed_model(self.embedder.model if self.embedder else "")
        paths = scan(sources)
        known = self.index.files()
        wanted = {str(p) for p in paths}
        removed = [p for p in known if p not in wanted]
        for path in removed:
            self.index.remove(path)
        indexed = unchanged = 0
        errors: list[str] = []
        for done, path in enumerate(paths):
            yield IndexProgress(done, len(paths), path.name)
            try:
                changed, error = self._update(path, known.get(str(path)))
            except OSError as exc:
                changed, error = False, f"{path.name}: cannot be read ({exc.strerror or exc})"
                self.index.remove(str(path))
            indexed += changed and not error
            unchanged += not changed and not error
            if error:
                errors.append(error)
        yield IndexProgress(len(paths), len(paths), "")
        model = self.embedder.model if self.embedder else ""
        passages = self.index.chunk_count()
        yield IndexReport(indexed, unchanged, len(removed), passages, tuple(errors), model)

    def _update(self, path: Path, known: FileRecord | None) -> tuple[bool, str]:
        """(whether the file was (re)indexed, its error if it has one)."""
        stat = path.stat()
        if known is not None and (known.size, known.mtime) == (stat.st_size, stat.st_mtime):
            return False, known.error
        digest = _sha256(path)
        if known is not None and known.sha256 == digest:
            self.index.touch(str(path), stat.st_size, stat.st_mtime)
            return False, known.error
        record = FileRecord(str(path), stat.st_size, stat.st_mtime, digest)
        try:
            chunks = chunk_sections(parse(path))
        except DocumentError as exc:
            self.index.replace_file(replace(record, error=str(exc)), [])
            return True, str(exc)
        vectors = self.embedder.embed([c.text for c in chunks]) if self.embedder else None
        self.index.replace_file(record, chunks, vectors)
        return True, ""
