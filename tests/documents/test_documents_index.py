"""Indexing a folder: only changed files are redone, deleted ones dropped, a damaged file is an
error for that file alone, and a new embedding model rebuilds the index."""

from __future__ import annotations

import os
import sqlite3

import numpy as np
import pytest

from localllm.app.documents.chunking import Chunk
from localllm.app.documents.embedder import DaemonEmbedder
from localllm.app.documents.index import DocumentIndex, FileRecord
from localllm.app.documents.indexer import Indexer, IndexProgress, IndexReport, scan
from localllm.app.documents.vectors import load_sqlite_vec
from tests.documents.files import write_corpus, write_pdf


def _run(index, folder, embedder=None) -> tuple[list[IndexProgress], IndexReport]:
    events = list(Indexer(index, embedder).run([folder]))
    *progress, report = events
    assert isinstance(report, IndexReport)
    return progress, report


def test_first_run_indexes_every_document_with_progress(tmp_path):
    folder = write_corpus(tmp_path / "docs")
    (folder / ".hidden.md").write_text("secret")
    (folder / "picture.png").write_bytes(b"\x89PNG")
    index = DocumentIndex(tmp_path / "index.sqlite3")
    progress, report = _run(index, folder)
    assert report.indexed == 12 and report.errors == () and report.passages >= 12
    assert [p.done for p in progress] == list(range(13))
    assert all(p.total == 12 for p in progress)
    assert not any(name.startswith(".") for name in index.files())


def test_a_second_run_redoes_only_what_changed(tmp_path):
    folder = write_corpus(tmp_path / "docs")
    index = DocumentIndex(tmp_path / "index.sqlite3")
    _run(index, folder)
    (folder / "tides.txt").write_text("Tides now talk about lunar gravity wells.")
    (folder / "coffee.md").unlink()
    same = folder / "tax.txt"
    os.utime(same, (1, 1))  # touched, not changed: the hash says so
    _, report = _run(index, folder)
    assert (report.indexed, report.removed, report.unchanged) == (1, 1, 10)
    assert str((folder / "coffee.md").resolve()) not in index.files()
    (hit,) = index.passages(index.keyword("lunar gravity wells", 1))
    assert hit.name == "tides.txt"
    assert index.keyword("espresso", 5) == []


def test_a_damaged_file_is_an_error_for_that_file_only(tmp_path):
    folder = write_corpus(tmp_path / "docs")
    good = write_pdf(folder / "manual.pdf", ["Turbine maintenance schedule", "Blade inspection"])
    (folder / "broken.pdf").write_bytes(good.read_bytes()[:150])
    (folder / "fake.docx").write_text("not a docx")
    index = DocumentIndex(tmp_path / "index.sqlite3")
    _, report = _run(index, folder)
    assert report.indexed == 13
    assert sorted(e.split(":")[0] for e in report.errors) == ["broken.pdf", "fake.docx"]
    assert all(str(tmp_path) not in e for e in report.errors)
    (hit,) = index.passages(index.keyword("blade inspection", 1))
    assert (hit.name, hit.page, hit.where) == ("manual.pdf", 2, "page 2, line 1")
    _, again = _run(index, folder)  # unchanged broken files are not re-read, still reported
    assert again.indexed == 0 and len(again.errors) == 2


def test_scan_takes_files_and_folders_once(tmp_path):
    folder = write_corpus(tmp_path / "docs")
    found = scan([folder, folder / "tides.txt", tmp_path / "missing"])
    assert len(found) == 12 and len(set(found)) == 12


def test_a_new_embedding_model_rebuilds_the_index(tmp_path):
    folder = write_corpus(tmp_path / "docs")
    index = DocumentIndex(tmp_path / "index.sqlite3")
    calls: list[int] = []

    def fake_vectors(model, texts):  # only counts: the daemon path is tested in test_recall
        calls.append(len(texts))
        return [[float(len(t)), 1.0] for t in texts]

    _run(index, folder)
    assert index.embed_model == ""
    _, report = _run(index, folder, DaemonEmbedder("embedder", fake_vectors, batch_size=4))
    assert report.indexed == 12 and report.embed_model == "embedder"
    assert index.embed_model == "embedder" and max(calls) <= 4
    _, report = _run(index, folder, DaemonEmbedder("embedder", fake_vectors))
    assert report.indexed == 0


def _vector_index(tmp_path, vectors) -> DocumentIndex:
    index = DocumentIndex(tmp_path / "vectors.sqlite3")
    chunks = [Chunk(f"passage {i}", None, 1, 1, 0, 9) for i in range(len(vectors))]
    index.replace_file(FileRecord("/a.txt", 1, 1.0, "x"), chunks, vectors)
    return index


def test_vectors_are_searched_with_numpy_where_sqlite_cannot_load_extensions(tmp_path):
    can_load = load_sqlite_vec(sqlite3.connect(":memory:"))
    vectors = np.random.default_rng(0).normal(size=(40, 16)).tolist()
    index = _vector_index(tmp_path, vectors)
    assert index.vectors.backend == ("sqlite-vec" if can_load else "numpy")
    for number, vector in enumerate(vectors, start=1):
        assert index.nearest(vector, 1) == [number]
    index.remove("/a.txt")
    assert index.nearest(vectors[0], 3) == []


@pytest.mark.skipif(
    not load_sqlite_vec(sqlite3.connect(":memory:")),
    reason="this Python's sqlite3 cannot load extensions (the numpy search is used)",
)
def test_sqlite_vec_and_numpy_rank_alike(tmp_path):
    rng = np.random.default_rng(1)
    index = _vector_index(tmp_path, rng.normal(size=(60, 16)).tolist())
    query = rng.normal(size=16).tolist()
    with_extension = index.nearest(query, 5)
    index.vectors.backend = "numpy"
    assert index.nearest(query, 5) == with_extension


def test_the_index_is_readable_by_its_user_only(tmp_path):
    old = os.umask(0o022)
    try:
        index = DocumentIndex(tmp_path / "documents" / "chat.sqlite3")
        for _ in Indexer(index).run([write_corpus(tmp_path / "docs")]):
            pass
    finally:
        os.umask(old)
    files = list((tmp_path / "documents").iterdir())
    assert files and all(f.stat().st_mode & 0o777 == 0o600 for f in files)
    assert (tmp_path / "documents").stat().st_mode & 0o777 == 0o700
