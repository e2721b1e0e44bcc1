"""Numbers that are numbers, shapes that are shapes: each hostile value below is a clear 400
naming its field, before any generation starts, and leaves the daemon answering everyone
(``keep_alive: 1e300`` once made every later ``/api/ps`` a 500)."""

from __future__ import annotations

import json
import math

import pytest
from fastapi.testclient import TestClient

from localllm.daemon.server import create_app
from localllm.daemon.settings import Settings
from tests.support.in_process import app_client, app_settings

HI = [{"role": "user", "content": "hi"}]
DEEP = "[" * 100_000 + "]" * 100_000  # arguments text nested 100,000 deep


@pytest.fixture(scope="module")
def client(tmp_path_factory, tiny_model_path):
    settings = app_settings(tmp_path_factory.mktemp("numbers"), {"tiny": tiny_model_path})
    with app_client(create_app(settings)) as client:
        yield client


def post(client: TestClient, path: str, body: dict):
    """``body`` as Python's json writes it: NaN, Infinity and lone surrogates included."""
    data = json.dumps(body).encode()
    return client.post(path, content=data, headers={"content-type": "application/json"})


def message_of(answer) -> str:
    error = answer.json()["error"]
    return error if isinstance(error, str) else error["message"]


@pytest.mark.parametrize(
    "keep_alive", [math.inf, -math.inf, math.nan, 1e300, 10**400, "1e400", "inf", "9" * 30 + "h"]
)
def test_keep_alive_beyond_any_clock_is_a_400_and_ps_keeps_answering(client, keep_alive):
    body = {"model": "tiny", "prompt": "hi", "options": {"num_predict": 1}, "stream": False}
    answer = post(client, "/api/generate", {**body, "keep_alive": keep_alive})
    assert answer.status_code == 400, answer.text[:300]
    assert "keep_alive" in message_of(answer)
    assert client.get("/api/ps").status_code == 200


def test_keep_alive_as_a_long_run_of_digits_is_refused_at_once(client):
    """A duration text of 20,000 digits and a unit letter: refused by its length, not after
    a regular-expression search that grows with its square."""
    body = {"model": "tiny", "prompt": "", "keep_alive": "1" * 20_000 + "x"}
    answer = post(client, "/api/generate", body)
    assert answer.status_code == 400 and "keep_alive" in message_of(answer)


def test_keep_alive_forever_and_a_long_one_still_load(client):
    for keep_alive in (-1, "8760h", 10**8):
        answer = post(client, "/api/generate", {"model": "tiny", "keep_alive": keep_alive})
        assert answer.status_code == 200, answer.text[:300]
        models = client.get("/api/ps").json()["models"]
        assert [m["name"] for m in models] == ["tiny:latest"]


def test_the_daemon_refuses_an_infinite_default_keep_alive():
    for value in ("inf", "nan", "1e300"):
        with pytest.raises(ValueError, match="LOCALLLM_KEEP_ALIVE"):
            Settings.from_env({"LOCALLLM_KEEP_ALIVE": value})
    assert Settings.from_env({"LOCALLLM_KEEP_ALIVE": "-1"}).keep_alive_seconds == -1


@pytest.mark.parametrize("choice", [{"type": []}, {"type": {}}, {"type": 3}, {"type": None}])
def test_anthropic_tool_choice_of_the_wrong_shape_is_a_400(client, choice):
    body = {"model": "tiny", "max_tokens": 2, "messages": HI, "tool_choice": choice}
    answer = post(client, "/v1/messages", body)
    assert answer.status_code == 400, answer.text[:300]
    assert "tool_choice" in message_of(answer)


@pytest.mark.parametrize(
    "fields",
    [
        {"instructions": "be brief \ud800"},
        {"user": "\udfff"},
        {"metadata": {"k": "a\ud83d"}},
        {"tools": [{"type": "function", "name": "f", "description": "\udc00"}]},
    ],
)
def test_responses_refuse_a_lone_surrogate_they_would_echo(client, fields):
    body = {"model": "tiny", "input": "hi", "max_output_tokens": 2, **fields}
    answer = post(client, "/v1/responses", body)
    assert answer.status_code == 400, answer.text[:300]
    error = answer.json()["error"]
    assert "lone surrogate" in error["message"] and error["param"].startswith(next(iter(fields)))


@pytest.mark.parametrize(
    ("path", "body", "where"),
    [
        ("/api/create", {"model": "m", "from": "tiny", "system": "\ud800"}, "system"),
        ("/api/chat", {"model": "tiny", "messages": [{"role": "user", "content": "a\udc00"}]},
         "messages.0.content"),
        ("/v1/messages", {"model": "tiny", "max_tokens": 2, "messages": HI,
                          "metadata": {"\udfff": "key"}}, "metadata.\\udfff"),
    ],
)  # fmt: skip
def test_a_lone_surrogate_anywhere_is_a_400_naming_where(client, path, body, where):
    answer = post(client, path, body)
    assert answer.status_code == 400, answer.text[:300]
    assert f"{where} holds a lone surrogate" in message_of(answer)


def test_responses_keep_a_surrogate_pair(client):
    """An emoji escaped as its pair (``\\ud83d\\ude00``, as ``ensure_ascii`` writes it) is text."""
    body = {"model": "tiny", "input": "hi", "max_output_tokens": 2, "instructions": "\U0001f600"}
    answer = post(client, "/v1/responses", body)
    assert answer.status_code == 200 and answer.json()["instructions"] == "\U0001f600"


def test_tool_call_arguments_nested_100000_deep_are_a_400(client):
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": DEEP}}
    messages = [*HI, {"role": "assistant", "content": "", "tool_calls": [call]}]
    messages.append({"role": "tool", "tool_call_id": "c1", "content": "ok"})
    answer = post(client, "/v1/chat/completions", {"model": "tiny", "messages": messages})
    assert answer.status_code == 400, answer.text[:300]
    assert "arguments" in message_of(answer)


def test_native_tool_call_arguments_nested_100000_deep_are_a_400(client):
    call = {"function": {"name": "f", "arguments": DEEP}}
    messages = [*HI, {"role": "assistant", "content": "", "tool_calls": [call]}]
    answer = post(client, "/api/chat", {"model": "tiny", "messages": messages, "stream": False})
    assert answer.status_code == 400, answer.text[:300]
    assert "arguments" in message_of(answer)


def test_responses_function_call_arguments_nested_100000_deep_are_a_400(client):
    items = [
        {"type": "message", "role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": DEEP},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
    ]
    answer = post(client, "/v1/responses", {"model": "tiny", "input": items})
    assert answer.status_code == 400, answer.text[:300]
    assert "arguments" in message_of(answer)
