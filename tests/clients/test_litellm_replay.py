"""LiteLLM's ``ollama/`` and ``ollama_chat/`` providers, replayed against the real daemon.

``fixtures/litellm.json`` holds what LiteLLM 1.97.0 sent (``tests/support/record_litellm.py``):
its generate and chat calls carry no ``Content-Type`` at all, streamed or not, and Ollama reads
them as JSON. Each is sent again as recorded, headers included, and answered in Ollama's shape.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.daemon import Daemon, make_store

pytestmark = pytest.mark.slow

RECORDING = json.loads((Path(__file__).parent / "fixtures" / "litellm.json").read_text())
REQUESTS = RECORDING["requests"]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("litellm")
    model = write_tiny_model(root / "tiny.gguf", seed=2, end_of_turn="soon")
    with Daemon(make_store(root / "store", {"tiny": model}), root / "logs") as running:
        yield running


def test_the_recording_is_litellms_own_and_its_calls_name_no_content_type():
    assert RECORDING["client"] == "litellm 1.97.0"
    calls = [r for r in REQUESTS if r["path"] in ("/api/generate", "/api/chat")]
    assert [(r["path"], r["body"]["stream"]) for r in calls] == [
        ("/api/generate", False),
        ("/api/generate", True),
        ("/api/chat", False),
        ("/api/chat", True),
    ]
    assert not any("content-type" in r["headers"] for r in calls)


@pytest.mark.parametrize(
    "request_", REQUESTS, ids=[f"{n}-{r['path']}" for n, r in enumerate(REQUESTS)]
)
def test_each_request_is_answered_as_ollama_answers_it(daemon, request_):
    answer = httpx.request(
        request_["method"],
        daemon.url + request_["path"],
        content=json.dumps(request_["body"]).encode(),
        headers=request_["headers"],
        timeout=300,
    )
    assert answer.status_code == 200, answer.text[:500]
    lines = [json.loads(line) for line in answer.text.splitlines() if line.strip()]
    if request_["path"] in ("/api/generate", "/api/chat"):
        assert len(lines) > 1 if request_["body"]["stream"] else len(lines) == 1
        assert lines[-1]["done"] is True and lines[-1]["eval_count"] > 0
    elif request_["path"] == "/api/embed":
        assert len(lines[0]["embeddings"]) == len(request_["body"]["input"])
    else:
        assert lines[0]["details"]["format"] == "gguf"
