"""Grammars from JSON schemas are bounded in the daemon, before a runner builds one: a
repetition count past 1,000, nesting past 64 levels, 200 optional properties in an object or a
grammar estimated past 1 MiB is a 400 that names the limit, through every field a schema comes
by (OpenAI ``response_format``, Ollama ``format``, Responses ``text.format``, Anthropic
``output_config.format``, a forced tool call). ``minItems: 200000000`` (80 bytes) once made a
runner join 200 million rule copies in its only loop."""

from __future__ import annotations

import pytest

from localllm.daemon.errors import BadRequestError
from localllm.daemon.server import create_app
from tests.support.in_process import app_client, app_settings

HI = [{"role": "user", "content": "hi"}]
HUGE = {"type": "array", "items": {"type": "integer"}, "minItems": 200_000_000}
MANY = {"type": "array", "items": {"type": "integer"}, "minItems": 100_000}  # main built it


def nested(levels: int) -> dict:
    schema: dict = {"type": "integer"}
    for _ in range(levels):
        schema = {"type": "array", "items": schema}
    return schema


@pytest.fixture(scope="module")
def client(tmp_path_factory, tiny_model_path):
    settings = app_settings(tmp_path_factory.mktemp("grammar"), {"tiny": tiny_model_path})
    with app_client(create_app(settings)) as client:
        yield client


def by_every_field(schema: dict) -> list[tuple[str, dict, str]]:
    """(path, body, the param its 400 names) for each way a schema reaches a runner."""
    tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
    return [
        ("/v1/chat/completions", {"messages": HI, "max_tokens": 2, "response_format": {
            "type": "json_schema", "json_schema": {"name": "x", "schema": schema}}},
         "response_format"),
        ("/api/chat", {"messages": HI, "format": schema, "stream": False,
                       "options": {"num_predict": 2}}, "response_format"),
        ("/v1/responses", {"input": "hi", "max_output_tokens": 2, "text": {"format": {
            "type": "json_schema", "name": "x", "schema": schema}}}, "response_format"),
        ("/v1/messages", {"messages": HI, "max_tokens": 2, "output_config": {"format": {
            "type": "json_schema", "schema": schema}}}, "response_format"),
        ("/v1/chat/completions", {"messages": HI, "max_tokens": 2, "tools": [tool],
         "tool_choice": {"type": "function", "function": {"name": "f"}}}, "tools"),
    ]  # fmt: skip


def message_of(answer) -> str:
    error = answer.json()["error"]
    return error if isinstance(error, str) else error["message"]


@pytest.mark.parametrize(("path", "body", "param"), by_every_field(HUGE))
def test_200_million_repetitions_are_refused_before_a_runner_sees_them(client, path, body, param):
    answer = client.post(path, json={"model": "tiny", **body})
    assert answer.status_code == 400, answer.text[:300]
    assert "a repetition count must be an integer from 0 to 1,000" in message_of(answer)
    assert "200000000" in message_of(answer)
    if path == "/v1/chat/completions":
        assert answer.json()["error"]["param"] == param


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        (MANY, "minItems is 100000; a repetition count must be an integer from 0 to 1,000"),
        ({"type": "string", "maxLength": 1001}, "maxLength is 1001"),
        ({"type": "string", "pattern": "^(ab{1000}){1000}(c{1000}){1000}$"},
         "more than 1,048,576 characters"),
        ({"type": "string", "pattern": "a{99999999999999}"}, "is 999999999999..."),
        (nested(70), "nests more than 64 levels deep"),
        ({"type": "object", "properties": {f"p{n}": {"type": "integer"} for n in range(300)}},
         "300 optional properties in one object; at most 200"),
        ({"type": "array", "minItems": 1e300}, "is 1e+300"),
        ({"type": "array", "minItems": -1}, "is -1"),
        ({"type": "array", "minItems": True}, "is true"),
        ({"type": "array", "minItems": "5"}, "is 5"),
    ],
)  # fmt: skip
def test_each_limit_is_a_400_that_names_it(client, schema, says):
    body = {"model": "tiny", "prompt": "x", "format": schema, "options": {"num_predict": 2}}
    answer = client.post("/api/generate", json={**body, "stream": False})
    assert answer.status_code == 400, answer.text[:300]
    assert says in message_of(answer)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "maxLength": 1000},
        {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 1000},
        {"type": "string", "pattern": "^[a-z]{1,1000}$"},
        nested(30),
        {"type": "object", "properties": {f"p{n}": {"type": "integer"} for n in range(200)}},
    ],
)
def test_schemas_within_the_limits_are_served(client, schema):
    body = {"model": "tiny", "prompt": "x", "format": schema, "options": {"num_predict": 4}}
    answer = client.post("/api/generate", json={**body, "stream": False})
    assert answer.status_code == 200, answer.text[:300]


def test_where_in_the_schema_is_named():
    from localllm.daemon.inference.schema_bounds import check_schema_bounds

    schema = {"type": "object", "properties": {"tags": {"type": "array", "maxItems": 5000}}}
    with pytest.raises(BadRequestError, match=r"at properties\.tags\.maxItems is 5000") as caught:
        check_schema_bounds(schema, "the schema", "format")
    assert caught.value.param == "format"
