"""Thinking held back at the end of a thinking part stays thinking.

The splitter holds back a piece that could start a marker (``<`` of ``</think>``, ``<|`` of
``<|end|>``) until the next piece tells. When a think budget ends the thinking part right
after such a piece, what was held is the thinking's last words: it must come out as thinking,
never as the first characters of the answer (where it also broke JSON mode's promise of valid
JSON). A logit bias makes the tiny models write nothing but ``<``, so every part ends so.
"""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from localllm.daemon.server import create_app
from localllm.model_registry.tiny_gguf import write_tiny_model
from localllm.model_registry.tiny_vocabulary import tiny_vocabulary
from tests.support.in_process import app_client, app_settings

BUDGET, LIMIT = 5, 9
STYLES = {"qwen": "qwen3", "harmony": "gpt-oss"}
ANGLE = {  # a bias that makes the model write only "<"
    model: {str(tiny_vocabulary(thinking=style).tokens.index("<")): 100}
    for model, style in STYLES.items()
}


@pytest.fixture(scope="module")
def client(tmp_path_factory, thinking_model_path):
    root = tmp_path_factory.mktemp("held")
    harmony = write_tiny_model(root / "harmony.gguf", thinking="gpt-oss", seed=5, file_type="Q8_0")
    settings = app_settings(root, {"qwen": thinking_model_path, "harmony": harmony})
    with app_client(create_app(settings)) as client:
        yield client


def chat(client: TestClient, model: str, **fields) -> dict:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": LIMIT,
        "logit_bias": ANGLE[model],
        "think_budget": BUDGET,
        **fields,
    }
    answer = client.post("/v1/chat/completions", json=body)
    assert answer.status_code == 200, answer.text[:300]
    return answer.json()["choices"][0]["message"]


@pytest.mark.parametrize("model", ["qwen", "harmony"])
def test_the_thinking_held_back_when_the_budget_ends_is_thinking(client, model):
    message = chat(client, model)
    assert message["reasoning_content"] == "<" * BUDGET
    assert message["content"] == "<" * (LIMIT - BUDGET)


@pytest.mark.parametrize("model", ["qwen", "harmony"])
def test_json_mode_after_a_budget_still_answers_json(client, model):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    schema["additionalProperties"] = False  # an answer short enough for the tokens left
    fmt = {"type": "json_schema", "json_schema": {"name": "ok", "schema": schema}}
    message = chat(client, model, response_format=fmt, max_tokens=40)
    assert message["reasoning_content"] == "<" * BUDGET
    assert isinstance(json.loads(message["content"])["ok"], bool)


def test_streaming_sends_it_as_thinking_too(client):
    body = {
        "model": "qwen",
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": LIMIT,
        "logit_bias": ANGLE["qwen"],
        "think_budget": BUDGET,
        "stream": True,
    }
    with client.stream("POST", "/v1/chat/completions", json=body) as answer:
        events = [line[6:] for line in answer.iter_lines() if line.startswith("data: {")]
    deltas = [json.loads(event)["choices"][0]["delta"] for event in events if "choices" in event]
    thinking = "".join(d.get("reasoning_content") or "" for d in deltas)
    text = "".join(d.get("content") or "" for d in deltas)
    assert (thinking, text) == ("<" * BUDGET, "<" * (LIMIT - BUDGET))
