"""Every JSON mode gives JSON that a strict parser accepts, whatever the model samples.

A hot, flattened sampler (temperature 2, no top-k/top-p/min-p cut) over many seeds makes the
random-weight tiny model try everything the grammar lets it, raw newlines included: before the
grammar kept control characters out of strings, a few replies in forty failed
``json.loads`` ("Invalid control character"). Through the official ``ollama`` and ``openai``
packages, against a real daemon.
"""

from __future__ import annotations

import json

import jsonschema
import ollama
import pytest

from tests.support.daemon import Daemon, make_store

pytestmark = pytest.mark.slow

SEEDS = range(40)
HOT = {"temperature": 2.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0}
PROMPT = "Describe a city as JSON"
PLACE = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 60},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3},
    },
    "required": ["name", "tags"],
    "additionalProperties": False,
}
NOTE = {
    "type": "function",
    "function": {
        "name": "take_note",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 60}},
            "required": ["text"],
            "additionalProperties": False,
        },
    },
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("json-mode")
    store = make_store(root / "store", {"tiny": tiny_model_path})
    with Daemon(store, root / "logs") as running:
        yield running


def strict_json(text: str, schema: dict | None = None) -> object:
    value = json.loads(text, strict=True)  # strict: no raw control characters in strings
    if schema is not None:
        jsonschema.validate(value, schema)
    return value


def no_control_characters(text: str) -> bool:
    """What a cut-off reply must still be: the grammar's whitespace is a plain space."""
    return not any(ord(c) < 0x20 or c == "\x7f" for c in text)


def check_replies(replies: list[tuple[str, str]], schema: dict | None, finished: str) -> None:
    """(text, finish reason) pairs: all free of control characters, the finished ones JSON."""
    assert [text for text, _ in replies if not no_control_characters(text)] == []
    done = [text for text, reason in replies if reason == finished]
    assert len(done) >= len(replies) // 2, replies  # enough replies closed their JSON
    for text in done:
        strict_json(text, schema)


@pytest.mark.parametrize("fmt", ["json", PLACE], ids=["json", "schema"])
def test_ollama_format_always_gives_strict_json(daemon, fmt):
    client = ollama.Client(host=daemon.url)
    replies = []
    for seed in SEEDS:
        reply = client.generate(
            "tiny", PROMPT, format=fmt, options={**HOT, "seed": seed, "num_predict": 300}
        )
        replies.append((reply.response, reply.done_reason))
    schema = fmt if isinstance(fmt, dict) else {"type": "object"}
    check_replies(replies, schema, "stop")


@pytest.mark.parametrize(
    "response_format",
    [
        {"type": "json_object"},
        {"type": "json_schema", "json_schema": {"name": "place", "schema": PLACE}},
    ],
    ids=["json_object", "json_schema"],
)
def test_openai_response_format_always_gives_strict_json(daemon, response_format):
    client = daemon.openai()
    replies = []
    for seed in SEEDS:
        reply = client.chat.completions.create(
            model="tiny",
            messages=[{"role": "user", "content": PROMPT}],
            response_format=response_format,
            max_tokens=300,
            seed=seed,
            extra_body={"options": HOT},
        )
        choice = reply.choices[0]
        replies.append((choice.message.content, choice.finish_reason))
    schema = response_format.get("json_schema", {}).get("schema", {"type": "object"})
    check_replies(replies, schema, "stop")


def test_forced_tool_call_arguments_are_always_strict_json(daemon):
    client = daemon.openai()
    replies = []
    for seed in SEEDS:
        reply = client.chat.completions.create(
            model="tiny",
            messages=[{"role": "user", "content": "Note that the sky is blue"}],
            tools=[NOTE],
            tool_choice="required",
            max_tokens=300,
            seed=seed,
            extra_body={"options": HOT},
        )
        choice = reply.choices[0]
        if choice.finish_reason == "length":
            replies.append(("", "length"))
            continue
        # A call the daemon could not parse would come back as text, finishing with "stop".
        (call,) = choice.message.tool_calls or [None]
        assert call is not None, choice.message.content
        replies.append((call.function.arguments, choice.finish_reason))
    check_replies(replies, NOTE["function"]["parameters"], "tool_calls")
