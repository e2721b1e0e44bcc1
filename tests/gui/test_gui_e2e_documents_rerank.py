"""Document chat with a reranker installed, in the real app against a real daemon: the bar
says which reranker orders the passages (and offers none), and the sources a reply cites are
the reranker's best of the passages the search found."""

from __future__ import annotations

import httpx
import pytest

from localllm.app.documents.index import DocumentIndex
from localllm.app.documents.retrieval import RERANKED, Retriever
from localllm.app.gui.services.documents import PASSAGES
from tests.documents.near_misses import write_near_misses
from tests.gui.test_gui_e2e_chat import _ready, _type_and_send
from tests.support.gui_e2e import GuiDaemon, open_app, tiny_models, wait_idle
from tests.support.model_writers.reranker import write_tiny_reranker

pytestmark = pytest.mark.slow

RERANKER = "reranker:latest"
QUESTION = "How do I add one item to the end of a Python list?"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("gui-documents-rerank")
    models = tiny_models(tiny_model_path)
    models["reranker"] = write_tiny_reranker(root / "reranker.gguf", seed=3)
    running = GuiDaemon(root, models)
    yield running
    running.stop()


def test_the_reply_cites_the_rerankers_best_passages(qtbot, daemon, tmp_path):
    folder = write_near_misses(tmp_path / "notes")
    services, window = open_app(qtbot, daemon.gateway(), tmp_path / "app")
    _ready(qtbot, window)
    bar, documents = window.chat_page.documents, services.documents
    with qtbot.waitSignal(documents.indexed, timeout=60_000):
        bar.attach([folder])
    qtbot.waitUntil(lambda: documents.rerank_model == RERANKER, timeout=30_000)
    assert f"reranked by {RERANKER}" in bar.summary.text()
    assert not bar.offer_reranker.isVisible()
    _type_and_send(qtbot, window, QUESTION, timeout=60_000)
    chat_id = services.chat.session.conversation.id
    cited = documents.sources(chat_id, services.chat.session.messages[-1].id)
    index = DocumentIndex(tmp_path / "app" / "documents" / f"{chat_id}.sqlite3")
    try:
        candidates = Retriever(index).search(QUESTION, RERANKED)
    finally:
        index.close()
    body = {"model": RERANKER, "query": QUESTION, "documents": [p.text for p in candidates]}
    ranked = httpx.post(daemon.url + "/api/rerank", json=body, timeout=60).json()["results"]
    best = [candidates[r["index"]] for r in ranked[:PASSAGES]]
    assert [(s.name, s.line_start) for s in cited] == [(p.name, p.line_start) for p in best]
    assert [s.name for s in cited] != [p.name for p in candidates[: len(cited)]]
    wait_idle(qtbot, services)
    services.shutdown()
