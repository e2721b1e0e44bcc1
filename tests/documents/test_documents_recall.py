"""Retrieval quality on a labelled set (12 short documents, 20 questions), embedding through a
real daemon with a generated tiny model. Its random weights make its vectors meaningless for
meaning, so the keyword side carries recall; the vector side is checked on its own: a passage's
own text finds that passage first."""

from __future__ import annotations

import pytest

from localllm.app.documents.context import build_context
from localllm.app.documents.embedder import DaemonEmbedder
from localllm.app.documents.index import DocumentIndex
from localllm.app.documents.indexer import Indexer
from localllm.app.documents.retrieval import Retriever, fuse
from localllm.daemon.client import Client
from tests.documents.files import QUESTIONS, write_corpus
from tests.support.daemon import Daemon, make_store

RECALL_AT_3 = 0.9


@pytest.fixture(scope="module")
def client(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("documents-recall")
    store = make_store(root / "store", {"tiny": tiny_model_path})
    with Daemon(store, root / "logs") as daemon, Client(daemon.url, timeout=120) as client:
        yield client


def _recall(retriever: Retriever) -> float:
    hits = 0
    for question, expected in QUESTIONS:
        names = [p.name for p in retriever.search(question, 3)]
        hits += expected in names
    return hits / len(QUESTIONS)


def _index(tmp_path, embedder=None) -> DocumentIndex:
    index = DocumentIndex(tmp_path / "index.sqlite3")
    for _ in Indexer(index, embedder).run([write_corpus(tmp_path / "docs")]):
        pass
    return index


def test_keyword_only_recall(tmp_path):
    retriever = Retriever(_index(tmp_path))
    assert not retriever.hybrid
    assert _recall(retriever) >= RECALL_AT_3


def test_hybrid_recall_through_the_daemon(tmp_path, client):
    embedder = DaemonEmbedder.over_client(client, "tiny", batch_size=5)
    retriever = Retriever(_index(tmp_path, embedder), embedder)
    assert retriever.hybrid
    assert _recall(retriever) >= RECALL_AT_3


def test_vector_side_finds_a_passage_by_its_own_text(tmp_path, client):
    # one input per request: through the daemon, a vector moves with its batch neighbours
    # (by up to 0.27 with the tiny model), so only like-for-like requests compare exactly
    embedder = DaemonEmbedder.over_client(client, "tiny", batch_size=1)
    index = _index(tmp_path, embedder)
    ids = list(range(1, index.chunk_count() + 1))
    passages = index.passages(ids)
    assert len(passages) >= 12
    vectors = embedder.embed([p.text for p in passages])
    for passage, vector in zip(passages, vectors, strict=True):
        assert index.nearest(vector, 1) == [passage.chunk_id]
    assert Retriever(index, embedder).search(passages[3].text, 1) == [passages[3]]


def test_fusion_rewards_agreement():
    assert fuse([[1, 2, 3], [2, 3, 1]]) == [2, 1, 3]  # 2 ranks high in both
    assert fuse([[], [7]]) == [7]


def test_context_numbers_sources_within_the_budget(tmp_path):
    index = _index(tmp_path)
    passages = Retriever(index).search("Jupiter moons and storms", 5)
    context = build_context(passages, budget_tokens=120)
    assert context.sources and context.sources[0].name == "jupiter.md"
    assert "[1] jupiter.md, lines" in context.text
    assert len(context.text) <= 120 * 4
    assert build_context(passages, budget_tokens=2000).sources == tuple(passages)
    assert build_context([], 100).text == ""
