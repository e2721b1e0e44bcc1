"""Bring a collection's index up to date with its files: new and changed files are parsed,
chunked and embedded, unchanged ones skipped (same size and mtime, or same SHA-256), deleted
ones dropped. A file that cannot be read is an error for that file alone.

Only regular files inside the chosen folders are read: the walk follows no link (to a file or
a folder), skips pipes and devices, and each file is opened once without following a link
(``reading``), so what is hashed is what is parsed. A file the user chose by itself is taken
as chosen (a link to it is followed once, to the file it names).

``Indexer.run`` is a generator of ``IndexProgress`` events ending with one ``IndexReport``, so
the app can show progress from a worker thread and stop between files.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from localllm.app.documents.chunking import chunk_sections
from localllm.app.documents.embedder import DaemonEmbedder
from localllm.app.documents.errors import DocumentError
from localllm.app.documents.index import DocumentIndex, FileRecord
from localllm.app.documents.parsing import is_supported, parse_bytes, size_limit
from localllm.app.documents.reading import is_regular_file, read_document

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
    return list(_found(sources))


def _found(sources: Sequence[Path]) -> dict[Path, Path]:
    """Each document under ``sources`` and the chosen folder (or file) it must stay inside:
    regular files only, reached without following a link."""
    found: dict[Path, Path] = {}
    for source in sources:
        root = Path(source).resolve()
        if root.is_file():
            if is_regular_file(root):
                found[root] = root
        elif root.is_dir():
            for folder, dirs, files in os.walk(root):  # never into a linked folder
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    path = Path(folder, name)
                    if not name.startswith(".") and is_supported(path) and is_regular_file(path):
                        found[path] = root
    return found


class Indexer:
    def __init__(self, index: DocumentIndex, embedder: DaemonEmbedder | None = None):
        self.index, self.embedder = index, embedder

    def run(self, sources: Sequence[Path]) -> Iterator[IndexProgress | IndexReport]:
        """Index ``sources``; embedding failures (the daemon, the model) raise, and what was
        done before them stays done."""
        self.index.use_embed_model(self.embedder.model if self.embedder else "")
        roots = _found(sources)
        paths = list(roots)
        known = self.index.files()
        wanted = {str(p) for p in paths}
        removed = [p for p in known if p not in wanted]
        for gone in removed:
            self.index.remove(gone)
        indexed = unchanged = 0
        errors: list[str] = []
        for done, path in enumerate(paths):
            yield IndexProgress(done, len(paths), path.name)
            try:
                changed, error = self._update(path, roots[path], known.get(str(path)))
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

    def _update(self, path: Path, root: Path, known: FileRecord | None) -> tuple[bool, str]:
        """(whether the file was (re)indexed, its error if it has one)."""
        stat = os.lstat(path)
        if known is not None and (known.size, known.mtime) == (stat.st_size, stat.st_mtime):
            return False, known.error
        try:
            document = read_document(path, root, size_limit(path))
        except DocumentError as exc:
            record = FileRecord(str(path), stat.st_size, stat.st_mtime, "", error=str(exc))
            self.index.replace_file(record, [])
            return True, str(exc)
        digest = hashlib.sha256(document.data).hexdigest()
        if known is not None and known.sha256 == digest:
            self.index.touch(str(path), document.size, document.mtime)
            return False, known.error
        record = FileRecord(str(path), document.size, document.mtime, digest)
        try:
            chunks = chunk_sections(parse_bytes(path.name, document.data))
        except DocumentError as exc:
            self.index.replace_file(replace(record, error=str(exc)), [])
            return True, str(exc)
        vectors = self.embedder.embed([c.text for c in chunks]) if self.embedder else None
        self.index.replace_file(record, chunks, vectors)
        return True, ""
