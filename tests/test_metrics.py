"""``/metrics`` and the request log, on the in-process app with a fake runner (no sockets)."""

from __future__ import annotations

import json
import logging

import pytest
from fastapi.testclient import TestClient

from localllm.daemon.runners.types import DoneEvent, RunnerInfo, TokenEvent
from localllm.daemon.server import create_app
from localllm.daemon.settings import Settings
from tests.support.daemon import metric_value


class ScriptedRunner:
    """Says "a b c" to every prompt; reports 5 prompt tokens of which 3 came from the cache."""

    def __init__(self, spec):
        self.info = RunnerInfo(
            "cpu", 0, 3, spec.num_ctx, 2048, spec.num_parallel, 100, 64, 0, 0, 1, 0.0
        )
        self.alive = True

    async def generate(self, request):
        for word in ("a", " b", " c"):
            yield TokenEvent(word, (1,))
        yield DoneEvent("length", 5, 2, 3, 0.01, 0.02, 0.005, sampling="backend")

    async def tokenize(self, text, add_bos=True, special=True):
        return [1] * len(text)  # one token per character: no thinking markers

    async def stop(self):
        self.alive = False

    def last_log_lines(self, n=20):
        return []


@pytest.fixture
def client(imported_store, tmp_path):
    async def factory(spec, log_path):
        return ScriptedRunner(spec)

    settings = Settings(models_dir=imported_store.root, log_dir=tmp_path / "logs")
    app = create_app(settings, store=imported_store, runner_factory=factory)
    with TestClient(app, base_url="http://localhost") as test_client:
        yield test_client


def chat(client, **extra):
    body = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], **extra}
    return client.post("/v1/chat/completions", json=body)


def test_metrics_count_requests_tokens_and_latency(client):
    assert chat(client).status_code == 200
    assert chat(client, stream=True).status_code == 200
    assert chat(client, model="missing").status_code == 404
    text = client.get("/metrics").text
    route = "/v1/chat/completions"
    assert (
        metric_value(text, "localllm_http_requests_total", route=route, method="POST", status="200")
        == 2
    )
    assert (
        metric_value(text, "localllm_http_requests_total", route=route, method="POST", status="404")
        == 1
    )
    assert metric_value(text, "localllm_prompt_tokens_total", model="tiny") == 10
    assert metric_value(text, "localllm_prompt_cached_tokens_total", model="tiny") == 6
    assert metric_value(text, "localllm_completion_tokens_total", model="tiny") == 6
    assert metric_value(text, "localllm_generations_total", model="tiny", reason="length") == 2
    assert metric_value(text, "localllm_time_to_first_token_seconds_count", model="tiny") == 2
    assert metric_value(text, "localllm_time_per_output_token_seconds_count", model="tiny") == 2
    assert metric_value(text, "localllm_model_load_seconds_count", model="tiny") == 1
    assert metric_value(text, "localllm_models_loaded") == 1
    assert metric_value(text, "localllm_slots_busy", model="tiny") == 0
    assert metric_value(text, "localllm_slots_total", model="tiny") == 4
    assert metric_value(text, "localllm_queue_depth") == 0
    assert client.get("/metrics").headers["content-type"].startswith("text/plain")


def test_usage_reports_cached_prompt_tokens(client):
    usage = chat(client).json()["usage"]
    assert usage == {
        "prompt_tokens": 5,
        "completion_tokens": 3,
        "total_tokens": 8,
        "prompt_tokens_details": {"cached_tokens": 3},
    }


def test_one_json_log_line_per_request_with_timings(client, caplog):
    with caplog.at_level(logging.INFO, logger="localllm.requests"):
        chat(client)
        client.get("/health", headers={"User-Agent": "localllm-app/0.1.0"})
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "localllm.requests"]
    generation, health = lines
    assert health["user_agent"] == "localllm-app/0.1.0"  # the app's own requests can be told
    assert generation["user_agent"] == "testclient"
    assert generation["path"] == "/v1/chat/completions" and generation["status"] == 200
    assert generation["model"] == "tiny" and generation["completion_tokens"] == 3
    assert generation["cached_tokens"] == 3 and generation["ttft_ms"] >= 0
    assert generation["duration_ms"] >= 0 and generation["finish_reason"] == "length"
    assert generation["sampling"] == "backend"  # where the runner said it sampled
    assert health["path"] == "/health" and "model" not in health


def test_an_error_answer_logs_its_message_in_every_api(client, caplog):
    """The message a client got (native, OpenAI and Anthropic shapes alike), not only the
    status: a coding agent that retries and gives up shows nothing more."""
    with caplog.at_level(logging.INFO, logger="localllm.requests"):
        assert chat(client, model="missing").status_code == 404
        hi = [{"role": "user", "content": "hi"}]
        native = {"model": "tiny", "messages": hi, "think": "maximum", "stream": False}
        client.post("/api/chat", json=native)
        client.post("/v1/messages", json={"model": "tiny", "messages": hi})
        client.get("/no/such/route")
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "localllm.requests"]
    assert [line["status"] for line in lines] == [404, 400, 400, 404]
    openai, native, anthropic, unknown = (line["error"] for line in lines)
    assert "model 'missing' not found" in openai
    assert native.startswith("think must be true, false")
    assert anthropic.startswith("invalid request: max_tokens")
    assert unknown == "Not Found"
    assert "error" not in chat_line(client, caplog)


def chat_line(client, caplog) -> dict:
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="localllm.requests"):
        chat(client)
    (record,) = [r for r in caplog.records if r.name == "localllm.requests"]
    return json.loads(record.getMessage())
