"""One collection's index: a SQLite file with the files it was built from (size, mtime and
SHA-256, so only changed files are redone), their passages, an FTS5 table for keyword search
and the passages' vectors (``vectors``).

Blocking: the app uses it from one worker thread. A file's passages are replaced in one
transaction, so an interrupted indexing run never leaves half a file behind.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from localllm.app.documents.chunking import Chunk
from localllm.app.documents.vectors import VectorSearch

__all__ = ["DocumentIndex", "FileRecord", "Passage", "location"]

SCHEMA = """
PRAGMA foreign_keys = ON;
PRAGMA journal_mode = WAL;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime REAL NOT NULL,
    sha256 TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    page INTEGER,
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL,
    char_start INTEGER NOT NULL,
    char_end INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_file ON chunks(file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(text, tokenize='porter unicode61');
"""

_WORD = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


@dataclass(frozen=True, slots=True)
class FileRecord:
    path: str
    size: int
    mtime: float
    sha256: str
    error: str = ""


@dataclass(frozen=True, slots=True)
class Passage:
    """A passage found by a search, with what a citation shows."""

    chunk_id: int
    path: str
    page: int | None
    line_start: int
    line_end: int
    text: str

    @property
    def name(self) -> str:
        return Path(self.path).name

    @property
    def where(self) -> str:
        return location(self.page, self.line_start, self.line_end)


def location(page: int | None, line_start: int, line_end: int) -> str:
    """Where a passage is in its file: "page 3, lines 4-9", or "lines 4-9"."""
    lines = f"line {line_start}" if line_start == line_end else f"lines {line_start}-{line_end}"
    return f"page {page}, {lines}" if page is not None else lines


def _make_private(path: Path) -> None:
    """The index holds the documents' text: readable by its user only (0600 in a 0700 folder
    when the folder is new), whatever the umask; SQLite gives -wal and -shm the same mode."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    path.chmod(0o600)


class DocumentIndex:
    def __init__(self, path: Path):
        _make_private(path)
        self.path = path
        self._conn = sqlite3.connect(path, check_same_thread=False)
        self._conn.executescript(SCHEMA)
        self.vectors = VectorSearch(self._conn)

    def close(self) -> None:
        self._conn.close()

    # what was indexed

    def files(self) -> dict[str, FileRecord]:
        rows = self._conn.execute("SELECT path, size, mtime, sha256, error FROM files").fetchall()
        return {r[0]: FileRecord(*r) for r in rows}

    def chunk_count(self) -> int:
        return self._conn.execute("SELECT count(*) FROM chunks").fetchone()[0]

    @property
    def embed_model(self) -> str:
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'embed_model'").fetchone()
        return row[0] if row else ""

    def use_embed_model(self, model: str) -> bool:
        """Record which model embeds this collection; a different one than before makes
        every file stale (vectors of two models do not compare). True when it changed."""
        if model == self.embed_model:
            return False
        with self._conn:
            self._conn.execute("DELETE FROM chunks_fts")
            self._conn.execute("DELETE FROM files")
            self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('embed_model', ?)", (model,))
        return True

    # changes

    def replace_file(
        self,
        record: FileRecord,
        chunks: Sequence[Chunk],
        vectors: Sequence[Sequence[float]] | None = None,
    ) -> None:
        with self._conn:
            self._delete(record.path)
            file_id = self._insert(
                "INSERT INTO files (path, size, mtime, sha256, error) VALUES (?,?,?,?,?)",
                (record.path, record.size, record.mtime, record.sha256, record.error),
            )
            ids = []
            for c in chunks:
                chunk_id = self._insert(
                    "INSERT INTO chunks (file_id, page, line_start, line_end, char_start,"
                    " char_end, text) VALUES (?,?,?,?,?,?,?)",
                    (file_id, c.page, c.line_start, c.line_end, c.char_start, c.char_end, c.text),
                )
                self._conn.execute(
                    "INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)", (chunk_id, c.text)
                )
                ids.append(chunk_id)
            if vectors is not None:
                self.vectors.add(ids, vectors)

    def touch(self, path: str, size: int, mtime: float) -> None:
        """Same content, new timestamp: nothing to redo."""
        with self._conn:
            self._conn.execute(
                "UPDATE files SET size = ?, mtime = ? WHERE path = ?", (size, mtime, path)
            )

    def remove(self, path: str) -> None:
        with self._conn:
            self._delete(path)

    def _insert(self, sql: str, values: Sequence[object]) -> int:
        """The id of the row an INSERT added (sqlite sets it on every successful insert)."""
        row_id = self._conn.execute(sql, values).lastrowid
        assert row_id is not None, "an INSERT that succeeded always has a row id"
        return row_id

    def _delete(self, path: str) -> None:
        self._conn.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT c.id FROM chunks c "
            "JOIN files f ON f.id = c.file_id WHERE f.path = ?)",
            (path,),
        )
        self._conn.execute("DELETE FROM files WHERE path = ?", (path,))
        self.vectors.changed()

    # search

    def keyword(self, question: str, k: int) -> list[int]:
        """Passages ranked by BM25 over the question's words (any of them)."""
        words = [w for w in _WORD.findall(question.lower()) if w not in _STOPWORDS]
        if not words:
            return []
        query = " OR ".join('"' + w.replace('"', "") + '"' for w in dict.fromkeys(words))
        rows = self._conn.execute(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?",
            (query, k),
        ).fetchall()
        return [r[0] for r in rows]

    def nearest(self, vector: Sequence[float], k: int) -> list[int]:
        return self.vectors.nearest(vector, k)

    def passages(self, ids: Sequence[int]) -> list[Passage]:
        """The passages with these ids, in the order given."""
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self._conn.execute(
            "SELECT c.id, f.path, c.page, c.line_start, c.line_end, c.text FROM chunks c "
            f"JOIN files f ON f.id = c.file_id WHERE c.id IN ({marks})",
            tuple(ids),
        ).fetchall()
        found = {r[0]: Passage(*r) for r in rows}
        return [found[i] for i in ids if i in found]
