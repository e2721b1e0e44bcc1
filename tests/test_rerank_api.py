"""Rerank end to end: a real daemon subprocess and runner on a generated reranker, the
endpoints in llama-server's, Jina's, Cohere's and the native shape, the official ``cohere``
client, /metrics and the request log, and the same calls through remotes of both kinds."""

from __future__ import annotations

import json

import cohere
import httpx
import pytest

from tests.support.daemon import Daemon, make_store, metric_value
from tests.support.model_writers.reranker import write_tiny_reranker
from tests.support.polling import wait_for
from tests.support.remotes import add_remote, front_daemon

pytestmark = pytest.mark.slow

QUERY = "what is the capital"
DOCUMENTS = ["Paris is the capital of France", "bananas are yellow", "hello world", "x y z"]
PATHS = ("/v1/rerank", "/rerank", "/v1/reranking", "/v2/rerank", "/api/rerank")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("rerank-daemon")
    reranker = write_tiny_reranker(root / "reranker.gguf")
    qwen3 = write_tiny_reranker(root / "qwen3.gguf", style="qwen3")
    models = {"reranker": reranker, "qwen3-reranker": qwen3, "tiny": tiny_model_path}
    store = make_store(root / "store", models)
    with Daemon(store, root / "logs") as running:
        yield running


def rerank(daemon: Daemon, path: str = "/v1/rerank", **fields) -> httpx.Response:
    body = {"model": "reranker", "query": QUERY, "documents": DOCUMENTS, **fields}
    return httpx.post(daemon.url + path, json=body, timeout=120)


def scores_by_index(results: list[dict]) -> dict[int, float]:
    return {r["index"]: r["relevance_score"] for r in results}


def test_every_path_answers_every_document_best_first(daemon):
    answers = {path: rerank(daemon, path) for path in PATHS}
    assert all(r.status_code == 200 for r in answers.values()), answers
    first = answers["/v1/rerank"].json()
    scores = scores_by_index(first["results"])
    assert sorted(scores) == [0, 1, 2, 3] and len(set(scores.values())) == 4
    listed = [r["relevance_score"] for r in first["results"]]
    assert listed == sorted(listed, reverse=True)
    assert first["model"] == "reranker" and first["id"].startswith("rerank-")
    assert first["usage"]["prompt_tokens"] == first["usage"]["total_tokens"] > 4 * 4
    assert first["truncated"] == [] and "document" not in first["results"][0]
    for path, answer in answers.items():
        assert answer.json()["results"] == first["results"], path
    native = answers["/api/rerank"].json()
    assert native["prompt_eval_count"] == first["usage"]["prompt_tokens"]
    assert native["total_duration"] > 0


def test_a_qwen3_style_reranker_answers_probabilities(daemon):
    """A causal reranker (the qwen3 architecture) is told apart from a chat model by its
    rank pooling: it reranks, with the rerank prompt its GGUF carries."""
    answer = rerank(daemon, model="qwen3-reranker")
    assert answer.status_code == 200, answer.text
    scores = scores_by_index(answer.json()["results"])
    assert sorted(scores) == [0, 1, 2, 3] and all(0 < s < 1 for s in scores.values())
    show = httpx.post(daemon.url + "/api/show", json={"model": "qwen3-reranker"}, timeout=30)
    assert show.json()["capabilities"] == ["rerank"]


def test_top_n_and_documents_as_objects_returned(daemon):
    full = scores_by_index(rerank(daemon).json()["results"])
    objects = [{"text": text, "id": i} for i, text in enumerate(DOCUMENTS)]
    answer = rerank(daemon, documents=objects, top_n=2, return_documents=True).json()
    assert len(answer["results"]) == 2
    best = sorted(full, key=full.__getitem__, reverse=True)[:2]
    assert [r["index"] for r in answer["results"]] == best
    assert [r["document"]["text"] for r in answer["results"]] == [DOCUMENTS[i] for i in best]
    assert all(abs(r["relevance_score"] - full[r["index"]]) < 1e-6 for r in answer["results"])


def test_a_document_too_long_is_cut_and_the_answer_says_so(daemon):
    documents = ["short one", "the capital of France " * 200]
    answer = rerank(daemon, documents=documents).json()
    assert answer["truncated"] == [1]
    assert answer["meta"]["warnings"] == ["document 1 was cut to fit the model's context"]
    refused = rerank(daemon, documents=documents, truncate=False)
    assert refused.status_code == 400
    assert "context" in refused.json()["error"]["message"]


def test_a_chat_model_named_as_the_reranker_is_a_clear_400(daemon):
    answer = rerank(daemon, model="tiny")
    assert answer.status_code == 400
    message = answer.json()["error"]["message"]
    assert "'tiny' is a chat model, not a reranker" in message and "bge-reranker" in message
    native = rerank(daemon, "/api/rerank", model="tiny")
    assert native.status_code == 400 and "not a reranker" in native.json()["error"]


def test_bad_requests_are_400s(daemon):
    assert rerank(daemon, documents=[]).status_code == 400
    assert rerank(daemon, query="").status_code == 400
    assert rerank(daemon, top_n=0).status_code == 400
    assert rerank(daemon, documents=[{"title": "no text"}]).status_code == 400
    missing = rerank(daemon, model="nothing-here")
    assert missing.status_code == 404 and "localllm pull" in missing.json()["error"]["message"]


def test_a_reranker_neither_embeds_nor_chats_and_show_says_rerank(daemon):
    embed = httpx.post(
        daemon.url + "/v1/embeddings", json={"model": "reranker", "input": "hi"}, timeout=60
    )
    assert embed.status_code == 400 and "is a reranker" in embed.json()["error"]["message"]
    chat = httpx.post(
        daemon.url + "/api/chat",
        json={"model": "reranker", "messages": [{"role": "user", "content": "hi"}]},
        timeout=60,
    )
    assert chat.status_code == 400 and "is a reranker; it cannot generate" in chat.json()["error"]
    show = httpx.post(daemon.url + "/api/show", json={"model": "reranker"}, timeout=30).json()
    assert show["capabilities"] == ["rerank"]
    tiny = httpx.post(daemon.url + "/api/show", json={"model": "tiny"}, timeout=30).json()
    assert "rerank" not in tiny["capabilities"]


def test_the_official_cohere_clients_rerank_unchanged(daemon):
    expected = scores_by_index(rerank(daemon).json()["results"])
    v2 = cohere.ClientV2(api_key="unused", base_url=daemon.url)
    answer = v2.rerank(model="reranker", query=QUERY, documents=DOCUMENTS, top_n=3)
    assert len(answer.results) == 3
    assert all(abs(r.relevance_score - expected[r.index]) < 1e-6 for r in answer.results)
    v1 = cohere.Client(api_key="unused", base_url=daemon.url)
    answer = v1.rerank(model="reranker", query=QUERY, documents=DOCUMENTS, return_documents=True)
    assert {r.index for r in answer.results} == {0, 1, 2, 3}
    assert {r.document.text for r in answer.results} == set(DOCUMENTS)
    with pytest.raises(cohere.BadRequestError):
        v2.rerank(model="tiny", query=QUERY, documents=DOCUMENTS)


def test_metrics_and_the_request_log_count_rerank_calls(daemon):
    before = daemon.metrics()
    route = {"route": "/v1/rerank", "method": "POST", "status": "200"}
    calls = metric_value(before, "localllm_http_requests_total", **route)
    documents = metric_value(before, "localllm_reranked_documents_total", model="reranker")
    assert rerank(daemon, documents=DOCUMENTS[:3]).status_code == 200
    after = daemon.metrics()
    assert metric_value(after, "localllm_http_requests_total", **route) == calls + 1
    assert (
        metric_value(after, "localllm_reranked_documents_total", model="reranker") == documents + 3
    )
    assert wait_for(lambda: '"documents": 3' in daemon.log(), timeout=30)
    lines = [json.loads(line) for line in daemon.log().splitlines() if '"documents": 3' in line]
    assert lines[-1]["path"] == "/v1/rerank" and lines[-1]["model"] == "reranker"
    assert lines[-1]["prompt_tokens"] > 0 and lines[-1]["truncated_documents"] == 0


@pytest.fixture(scope="module")
def front(tmp_path_factory, daemon):
    with front_daemon(tmp_path_factory.mktemp("rerank-front")) as running:
        for name, kind in (("team", "openai"), ("home", "ollama")):
            added = add_remote(running, name, [daemon.url], kind=kind)
            assert added.status_code == 200, added.text
        yield running


@pytest.mark.parametrize("remote", ["team", "home"])
def test_through_a_remote_of_either_kind(front, daemon, remote):
    """``team`` forwards to the remote's /v1/rerank, ``home`` to its /api/rerank."""
    direct = rerank(daemon).json()
    through = rerank(front, model=f"{remote}/reranker", top_n=2, return_documents=True).json()
    assert through["model"] == f"{remote}/reranker"
    assert [r["index"] for r in through["results"]] == [r["index"] for r in direct["results"][:2]]
    assert through["results"][0]["document"]["text"] == DOCUMENTS[through["results"][0]["index"]]
    assert through["usage"] == direct["usage"]
    refused = rerank(front, model=f"{remote}/tiny")
    assert refused.status_code == 502 and "answered 400 to rerank" in refused.text
