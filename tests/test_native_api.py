"""The native (Ollama-shaped) API on the wire, against a real daemon: NDJSON streams and their
final numbers, load/unload, the request fields we refuse, and ``daemon.client`` end to end."""

from __future__ import annotations

import json

import httpx
import pytest

from localllm.daemon.client import BadRequest, Client, ModelNotFound
from tests.support.daemon import Daemon, make_store
from tests.support.polling import wait_for

pytestmark = pytest.mark.slow

HI = [{"role": "user", "content": "Hello there"}]
DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("native-api")
    store = make_store(root / "store", {"tiny": tiny_model_path})
    with Daemon(store, root / "logs") as running:
        (root / "logs" / "daemon.log").touch()
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    with Client(daemon.url) as client:
        yield client


def post_lines(daemon, path: str, body: dict) -> tuple[httpx.Response, list[dict]]:
    with httpx.stream("POST", daemon.url + path, json=body, timeout=60) as response:
        lines = [json.loads(line) for line in response.iter_lines() if line]
    return response, lines


def test_chat_streams_ndjson_ending_in_nanosecond_timings(daemon):
    body = {"model": "tiny", "messages": HI, "options": {"num_predict": 5, "seed": 1}}
    response, lines = post_lines(daemon, "/api/chat", body)
    assert response.headers["content-type"] == "application/x-ndjson"
    *chunks, last = lines
    assert all(c["done"] is False and c["message"]["role"] == "assistant" for c in chunks)
    assert all(c["created_at"].endswith("Z") for c in lines)
    assert last["done"] is True and last["done_reason"] == "length" and last["eval_count"] == 5
    assert all(isinstance(last[k], int) and last[k] >= 0 for k in DURATIONS)
    assert last["total_duration"] >= last["eval_duration"] > 1000  # ns, not seconds


def test_stream_false_is_one_object_with_the_whole_text(daemon):
    body = {"model": "tiny", "prompt": "Hi", "stream": False, "options": {"num_predict": 4}}
    one = httpx.post(daemon.url + "/api/generate", json=body, timeout=60)
    assert one.headers["content-type"] == "application/json"
    _, lines = post_lines(
        daemon, "/api/generate", {**body, "stream": True, "options": {"num_predict": 4, "seed": 5}}
    )
    again = httpx.post(
        daemon.url + "/api/generate", json={**body, "options": {"num_predict": 4, "seed": 5}}
    ).json()
    assert "".join(line["response"] for line in lines) == again["response"] != ""
    assert one.json()["done"] is True and one.json()["eval_count"] == 4


def test_logprobs_travel_with_each_chunk(daemon):
    body = {"model": "tiny", "messages": HI, "logprobs": True, "top_logprobs": 2}
    _, lines = post_lines(daemon, "/api/chat", {**body, "options": {"num_predict": 3}})
    entries = [e for line in lines for e in line.get("logprobs") or []]
    assert len(entries) == 3 and all(len(e["top_logprobs"]) == 2 for e in entries)
    assert all(e["logprob"] <= 0 for e in entries)


def test_a_request_template_replaces_the_models(daemon):
    body = {"model": "tiny", "prompt": "Hi", "stream": False, "options": {"num_predict": 1}}
    plain = httpx.post(daemon.url + "/api/generate", json=body).json()
    go = "{{ .System }} SAYS {{ .Prompt }} AND MORE WORDS HERE"
    custom = httpx.post(daemon.url + "/api/generate", json={**body, "template": go}).json()
    assert custom["prompt_eval_count"] != plain["prompt_eval_count"]
    broken = httpx.post(daemon.url + "/api/generate", json={**body, "template": "{{ if }"})
    assert broken.status_code == 400 and "template" in broken.json()["error"]


def test_empty_requests_load_and_unload(daemon, client):
    loaded = httpx.post(daemon.url + "/api/chat", json={"model": "tiny", "keep_alive": "1m"})
    assert loaded.json()["done_reason"] == "load" and loaded.json()["message"]["content"] == ""
    [running] = client.running()
    assert running.name == "tiny:latest" and running.processor.startswith("100%")
    client.unload("tiny")
    assert wait_for(lambda: client.running() == [], timeout=10)
    gone = httpx.post(daemon.url + "/api/generate", json={"model": "nope", "keep_alive": 0})
    assert gone.status_code == 404


@pytest.mark.parametrize(
    ("path", "body", "word"),
    [
        ("/api/generate", {"prompt": "x", "suffix": "y"}, "suffix"),
        ("/api/generate", {"prompt": "x", "context": [1, 2]}, "context"),
        ("/api/generate", {"prompt": "x", "format": "yaml"}, "format"),
        ("/api/generate", {"prompt": "x", "keep_alive": "soon"}, "keep_alive"),
        ("/api/generate", {"prompt": "x", "images": ["aGk="]}, "no vision projector"),
        ("/api/generate", {"prompt": "x", "images": ["not base64"]}, "image 1 is not valid base64"),
        ("/api/chat", {"messages": [{"role": "wizard", "content": "x"}]}, "role"),
        ("/api/chat", {"messages": HI, "options": {"num_ctx": 2}}, "num_ctx"),
        ("/api/embed", {"input": ["a", ""]}, "empty"),
    ],
)
def test_bad_fields_are_400s_that_say_which(daemon, path, body, word):
    response = httpx.post(daemon.url + path, json={"model": "tiny", **body})
    assert response.status_code == 400
    assert word in response.json()["error"]


def test_a_client_that_hangs_up_frees_the_slot(daemon):
    body = {"model": "tiny", "messages": HI, "options": {"num_predict": 100000}}
    with httpx.stream("POST", daemon.url + "/api/chat", json=body, timeout=30) as response:
        next(response.iter_lines())

    def cancelled() -> bool:
        return '"finish_reason": "cancelled"' in daemon.log()

    assert wait_for(cancelled, timeout=10)


def test_the_client_speaks_every_management_call(client):
    assert client.version()
    [tiny] = [m for m in client.list_models() if m.name == "tiny:latest"]
    assert tiny.details.parameter_size and len(tiny.digest) == 64
    assert "llama.rope.dimension_count" not in client.show("tiny").model_info
    shown = client.show("tiny", verbose=True)  # every GGUF key the safe reader keeps
    assert shown.model_info["llama.rope.dimension_count"] == 16
    assert shown.model_info["tokenizer.ggml.model"] == "llama"
    client.copy("tiny", "other:v2")
    assert "other:v2" in [m.name for m in client.list_models()]
    client.delete("other:v2")
    with pytest.raises(ModelNotFound):
        client.show("other:v2")
    with pytest.raises(BadRequest, match="invalid model name"):
        client.show("../../etc/passwd")
    assert client.verify().ok is True and client.prune().removed == []
    assert client.pulls() == []
    system = client.system()
    assert system.ram_total >= system.ram_available > 0
    assert system.backend == "cpu"  # what the installed build was compiled for, asked of it
    assert system.build_advice is None  # no GPU here to leave unused
    assert system.models_dir.endswith("store")  # told to a client on this machine only
    assert "/api/version" in client.logs(lines=50)


def test_the_client_streams_chat_and_generate(client):
    chunks = list(client.chat("tiny", HI, options={"num_predict": 3}))
    assert chunks[-1].done and chunks[-1].eval_count == 3
    [one] = list(client.generate("tiny", "Hi", options={"num_predict": 2}, stream=False))
    assert one.done and one.response
    vectors = client.embed("tiny", ["a", "b"]).embeddings
    assert len(vectors) == 2 and len(vectors[0]) == 64
    with pytest.raises(ModelNotFound):
        list(client.chat("nope", HI))
