"""Request bodies the JSON budget must judge before anything parses them: one Content-Type per
request, and no nesting deeper than any request needs (``daemon.server.json_budget``)."""

from __future__ import annotations

import json

import pytest

from localllm.daemon.server import create_app
from tests.support.in_process import app_client, app_settings


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with app_client(create_app(app_settings(tmp_path_factory.mktemp("bodies")))) as client:
        yield client


def test_two_content_types_are_refused_before_the_budget_is_skipped(client):
    """FastAPI parses by the first Content-Type, a last-wins reading skipped the value budget:
    150,000 logit_bias entries went past it as "text/plain"."""
    body = {"model": "nope", "prompt": "x", "logit_bias": {str(i): 1 for i in range(150_000)}}
    headers = [("content-type", "application/json"), ("content-type", "text/plain")]
    answer = client.post("/v1/completions", content=json.dumps(body).encode(), headers=headers)
    assert answer.status_code == 400, answer.text[:300]
    error = answer.json()["error"]
    assert "2 Content-Type headers" in error["message"] and error["type"] == "invalid_request_error"


def test_one_content_type_still_counts_the_values(client):
    body = {"model": "nope", "logit_bias": {str(i): 1 for i in range(150_000)}}
    answer = client.post("/api/generate", json=body)
    assert answer.status_code == 400
    assert "more than 100,000 JSON values" in answer.json()["error"]


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/api/chat", "/v1/messages"])
def test_a_body_nested_thousands_deep_is_a_400_not_a_recursion_error(client, path):
    deep = "[" * 5000 + "]" * 5000
    body = f'{{"model": "nope", "messages": [{{"role": "user", "content": {deep}}}]}}'
    answer = client.post(path, content=body.encode(), headers={"content-type": "application/json"})
    assert answer.status_code == 400, answer.text[:300]
    assert "more than 128 levels deep" in answer.text


def test_nesting_is_counted_outside_strings_only():
    from localllm.daemon.server.json_budget import json_depth

    assert json_depth(b'{"a": [[1], {"b": []}]}') == 4
    assert json_depth(b'{"a": "[[[[[[", "b": "\\"[[["}') == 1
    assert json_depth(b"[]" * 1000) == 1
    assert json_depth(b"") == 0


def test_a_body_as_deep_as_allowed_gets_through_to_the_route(client):
    schema: dict = {"type": "string"}
    for _ in range(30):  # a deep but ordinary tool schema
        schema = {"type": "object", "properties": {"a": schema}}
    body = {"model": "nope", "messages": [], "tools": [{"type": "function", "function": {
        "name": "f", "parameters": schema}}]}  # fmt: skip
    answer = client.post("/api/chat", json=body)
    assert answer.status_code == 404, answer.text[:300]  # the model, not the body


@pytest.mark.parametrize(
    "label", [None, "application/x-www-form-urlencoded", "text/plain"], ids=str
)
def test_a_body_is_json_whatever_its_label_says_and_is_counted_as_json(client, label):
    """``curl -d`` labels its body a form and LiteLLM's Ollama providers send none: Ollama reads
    either as JSON. Read so, it is counted like any JSON body (before, a label that was not
    JSON skipped the count)."""
    headers = {} if label is None else {"content-type": label}
    body = json.dumps({"model": "nope", "prompt": "Why is the sky blue?"}).encode()
    answer = client.post("/api/generate", content=body, headers=headers)
    assert answer.status_code == 404 and "'nope' not found" in answer.json()["error"]
    many = {"model": "nope", "prompt": "x", "logit_bias": {str(i): 1 for i in range(150_000)}}
    answer = client.post("/v1/completions", content=json.dumps(many).encode(), headers=headers)
    assert answer.status_code == 400
    assert "more than 100,000 JSON values" in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    ("path", "read"),
    [
        ("/api/chat", lambda body: body["error"]),
        ("/v1/chat/completions", lambda body: body["error"]["message"]),
        ("/v1/messages", lambda body: body["error"]["message"]),
    ],
)
def test_a_body_that_is_no_json_object_is_a_400_that_says_what_to_send(client, path, read):
    for body, says in [
        (b"model=llama3.2&prompt=hi", "the request body is not JSON (Expecting value)"),
        (b'{"model": "x",}', "the request body is not JSON (Expecting property name"),
        (b"[1, 2]", "the request body must be a JSON object"),
        (b"", "the request has no body"),
    ]:
        answer = client.post(path, content=body, headers={"content-type": "text/plain"})
        assert answer.status_code == 400, (path, body)
        assert read(answer.json()).startswith(says), (path, body, answer.text)
