"""The backend seam: a request's model is matched to a remote once, in one place, and what a
remote engine streams (its logprobs included) comes back in the shape a local model gives."""

from __future__ import annotations

import json

import httpx
import pytest
from fastapi.testclient import TestClient

from localllm.daemon.inference import Inference
from localllm.daemon.remotes.backend import RemoteBackend
from localllm.daemon.server import create_app
from tests.support.daemon import Daemon, make_store
from tests.support.in_process import app_client, app_settings
from tests.support.remotes import admin_headers

pytestmark = pytest.mark.slow  # a real daemon serves the remote's model

HI = [{"role": "user", "content": "Hello there"}]
ADMIN = "test-admin-token"
ASK = {"messages": HI, "max_tokens": 4, "temperature": 0, "logprobs": True, "top_logprobs": 2}


@pytest.fixture(scope="module")
def back(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("seam-back")
    with Daemon(make_store(root / "store", {"tiny": tiny_model_path}), root / "logs") as daemon:
        yield daemon


@pytest.fixture
def front(tmp_path, back):
    app = create_app(app_settings(tmp_path, remote_check_interval=1), admin_token=ADMIN)
    with app_client(app, "127.0.0.1") as client:
        body = {"name": "back", "urls": [back.url]}
        added = client.post("/api/remotes", json=body, headers=admin_headers(ADMIN))
        assert added.status_code == 200, added.text
        yield client


def _tokens(logprobs: dict) -> list[str]:
    return [entry["token"] for entry in logprobs["content"]]


def test_a_remote_answers_with_logprobs_in_the_openai_shape(front: TestClient, back: Daemon):
    answer = front.post("/v1/chat/completions", json={"model": "back/tiny", **ASK})
    assert answer.status_code == 200, answer.text
    choice = answer.json()["choices"][0]
    entries = choice["logprobs"]["content"]
    assert len(entries) == 4
    for entry in entries:
        assert set(entry) == {"token", "logprob", "bytes", "top_logprobs"}
        assert entry["logprob"] <= 0 and entry["bytes"] == list(entry["token"].encode())
        assert len(entry["top_logprobs"]) == 2
        assert entry["top_logprobs"][0]["logprob"] >= entry["top_logprobs"][1]["logprob"]
    assert "".join(_tokens(choice["logprobs"])) == choice["message"]["content"]
    asked_directly = {"model": "tiny", **ASK}
    direct = httpx.post(back.url + "/v1/chat/completions", json=asked_directly, timeout=60)
    assert _tokens(choice["logprobs"]) == _tokens(direct.json()["choices"][0]["logprobs"])


def test_a_streamed_remote_answer_carries_its_logprobs(front: TestClient):
    body = {"model": "back/tiny", "stream": True, **ASK}
    entries = []
    with front.stream("POST", "/v1/chat/completions", json=body) as answer:
        assert answer.status_code == 200
        for line in answer.iter_lines():
            if not line.startswith("data: {"):
                continue
            for choice in json.loads(line[6:])["choices"]:
                entries.extend((choice.get("logprobs") or {}).get("content") or [])
    assert len(entries) == 4 and all(len(e["top_logprobs"]) == 2 for e in entries)


def test_each_request_asks_the_remotes_once(front: TestClient, monkeypatch):
    remotes = front.app.state.remotes
    asked: list[str] = []
    match = remotes.match
    monkeypatch.setattr(remotes, "match", lambda model: asked.append(model) or match(model))
    answer = front.post("/v1/chat/completions", json={"model": "back/tiny", **ASK})
    assert answer.status_code == 200, answer.text
    assert asked == ["back/tiny"]
    asked.clear()
    answer = front.post("/v1/chat/completions", json={"model": "nowhere", **ASK})
    assert answer.status_code == 404, answer.text
    assert asked == ["nowhere"]


def test_the_backend_is_the_remotes_for_a_remote_model_and_local_otherwise(front: TestClient):
    inference: Inference = front.app.state.inference
    remote = inference.backend("back/tiny")
    assert isinstance(remote, RemoteBackend) and remote.found.remote_id == "tiny"
    assert inference.backend("tiny") is inference.local
