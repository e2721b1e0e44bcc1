"""Nearest passages by embedding, in the index's SQLite file.

Vectors are always kept as float32 blobs in ``chunk_vectors`` (the truth, readable by any
sqlite3). Where this Python's sqlite3 can load extensions, the ``sqlite-vec`` extension mirrors
them in a ``vec0`` table and answers the search; where it cannot (many builds leave extension
loading out), a brute-force cosine search over the blobs with numpy answers instead: a few
thousand passages take milliseconds. ``backend`` says which one is in use.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence

import numpy as np

__all__ = ["VectorSearch", "load_sqlite_vec"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS chunk_vectors (
    chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    vector BLOB NOT NULL
);
"""


def load_sqlite_vec(conn: sqlite3.Connection) -> bool:
    """Load sqlite-vec into ``conn``; False when this sqlite3 cannot load extensions."""
    if not hasattr(conn, "enable_load_extension"):
        return False
    try:
        import sqlite_vec  # type: ignore[import-untyped]  # the package ships no types

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except (sqlite3.Error, ImportError, AttributeError, OSError):
        return False
    return True


def _blob(vector: Sequence[float]) -> bytes:
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return (array / norm if norm else array).astype("<f4").tobytes()


class VectorSearch:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn
        conn.executescript(SCHEMA)
        self.backend = "sqlite-vec" if load_sqlite_vec(conn) else "numpy"
        self._mirror_ready = False

    def add(self, ids: Sequence[int], vectors: Sequence[Sequence[float]]) -> None:
        """Store each passage's vector (normalized, so a dot product is the cosine)."""
        rows = [(i, _blob(v)) for i, v in zip(ids, vectors, strict=True)]
        self._conn.executemany("INSERT OR REPLACE INTO chunk_vectors VALUES (?, ?)", rows)
        self.changed()

    def changed(self) -> None:
        """Vectors were added or deleted (deleted by cascade with their passages)."""
        self._mirror_ready = False

    def nearest(self, vector: Sequence[float], k: int) -> list[int]:
        """Ids of the ``k`` passages closest to ``vector``, closest first."""
        if self.backend == "sqlite-vec":
            with contextlib.suppress(sqlite3.Error):
                return self._nearest_vec(vector, k)
            self.backend = "numpy"  # a mirror that cannot be built: search the blobs
        return self._nearest_numpy(vector, k)

    def _nearest_numpy(self, vector: Sequence[float], k: int) -> list[int]:
        rows = self._conn.execute("SELECT chunk_id, vector FROM chunk_vectors").fetchall()
        query = np.frombuffer(_blob(vector), dtype="<f4")
        rows = [(i, b) for i, b in rows if len(b) == query.nbytes]  # another model's width
        if not rows:
            return []
        matrix = np.frombuffer(b"".join(b for _, b in rows), dtype="<f4").reshape(len(rows), -1)
        scores = matrix @ query
        order = np.argsort(-scores, kind="stable")[:k]
        return [rows[i][0] for i in order]

    def _nearest_vec(self, vector: Sequence[float], k: int) -> list[int]:
        query = _blob(vector)
        self._build_mirror(len(query) // 4)
        rows = self._conn.execute(
            "SELECT rowid FROM vec_chunks WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (query, k),
        ).fetchall()
        return [r[0] for r in rows]

    def _build_mirror(self, width: int) -> None:
        """The vec0 table, refilled from the blobs whenever they changed since last time."""
        if self._mirror_ready:
            return
        with self._conn:
            self._conn.execute("DROP TABLE IF EXISTS vec_chunks")
            self._conn.execute(
                f"CREATE VIRTUAL TABLE vec_chunks USING vec0(embedding float[{int(width)}] "
                "distance_metric=cosine)"
            )
            self._conn.execute(
                "INSERT INTO vec_chunks(rowid, embedding) SELECT chunk_id, vector "
                "FROM chunk_vectors WHERE length(vector) = ?",
                (width * 4,),
            )
        self._mirror_ready = True
