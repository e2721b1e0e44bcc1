"""Reranking the passages keyword and vector search found, through a real daemon and runner
on the generated reranker. Its random weights order passages at random, so the tests check
that the order cited is the reranker's order, not that it is a better one (bench/RESULTS.md
says what quality was measured and with what)."""

from __future__ import annotations

import pytest

from localllm.app.documents.index import DocumentIndex
from localllm.app.documents.indexer import Indexer
from localllm.app.documents.reranker import DaemonReranker
from localllm.app.documents.retrieval import RERANKED, Retriever
from localllm.daemon.client import Client
from tests.documents.near_misses import write_near_misses
from tests.support.daemon import Daemon, make_store
from tests.support.model_writers.reranker import write_tiny_reranker


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("documents-rerank")
    reranker = write_tiny_reranker(root / "reranker.gguf", seed=3)
    store = make_store(root / "store", {"reranker": reranker})
    with Daemon(store, root / "logs") as daemon, Client(daemon.url, timeout=120) as client:
        yield client


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    folder = tmp_path_factory.mktemp("near-misses")
    index = DocumentIndex(folder / "index.sqlite3")
    for _ in Indexer(index).run([write_near_misses(folder / "docs")]):
        pass
    yield index
    index.close()


def test_the_passages_cited_are_the_rerankers_best_of_the_candidates(client, index):
    reranker = DaemonReranker.over_client(client, "reranker")
    question = "How do I add one item to the end of a Python list?"
    candidates = Retriever(index).search(question, RERANKED)
    assert len(candidates) > 5
    answer = client.rerank("reranker", question, [p.text for p in candidates])
    expected = [candidates[r.index] for r in answer.results[:5]]
    reranked = Retriever(index, reranker=reranker).search(question, 5)
    assert reranked == expected
    assert reranked != candidates[:5]  # the reranker moved something


def test_order_sorts_by_score_and_keeps_ties_in_place():
    scores = {"a": 0.5, "b": 2.0, "c": 0.5, "d": -1.0}
    reranker = DaemonReranker("words", lambda _m, _q, texts: [scores[t] for t in texts])
    assert reranker.order("q", ["a", "b", "c", "d"]) == [1, 0, 2, 3]
    assert reranker.order("q", []) == []


def test_an_empty_question_is_not_sent_to_the_reranker(index):
    def refuse(_model, _query, _texts):
        raise AssertionError("reranked an empty question")

    reranker = DaemonReranker("none", refuse)
    assert Retriever(index, reranker=reranker).search("   ", 3) == Retriever(index).search("", 3)
