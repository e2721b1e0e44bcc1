"""Tool calls stream as the model writes them: a real daemon and runner on a generated tiny
model, grammar-forced calls with fixed seeds, and the official ``openai`` and ``ollama``
packages reassembling what streamed into exactly the calls a whole answer holds."""

from __future__ import annotations

import json
import time

import httpx
import jsonschema
import ollama
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

from localllm.daemon.inference import Delta, Finished, Generation, ToolCallDelta
from localllm.daemon.inference.tool_call_parser import ToolCallParser
from localllm.daemon.runners.types import GenerateCall, SamplingParams
from localllm.daemon.scheduler.lease import Lease
from localllm.daemon.scheduler.loaded import LoadedModel
from tests.support.daemon import Daemon, make_store
from tests.support.runner import make_spec

pytestmark = pytest.mark.slow

ASK = [{"role": "user", "content": "Note this down, and what time is it?"}]
NOTE_ARGS = {
    "type": "object",
    "properties": {"text": {"type": "string", "minLength": 24, "maxLength": 40}},
    "required": ["text"],
    "additionalProperties": False,
}
CLOCK_ARGS = {
    "type": "object",
    "properties": {"zone": {"enum": ["UTC", "CET"]}},
    "required": ["zone"],
    "additionalProperties": False,
}
NOTE = {"type": "function", "function": {"name": "take_note", "parameters": NOTE_ARGS}}
CLOCK = {"type": "function", "function": {"name": "get_time", "parameters": CLOCK_ARGS}}
SCHEMAS = {"take_note": NOTE_ARGS, "get_time": CLOCK_ARGS}


def call_schema(name: str) -> dict:
    return {
        "type": "object",
        "properties": {"name": {"const": name}, "arguments": SCHEMAS[name]},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


# Exactly two calls, a note then the time: the output is a list of calls, as parallel calls.
TWO_CALLS = {
    "type": "array",
    "prefixItems": [call_schema("take_note"), call_schema("get_time")],
    "items": False,
    "minItems": 2,
    "maxItems": 2,
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("tool-streaming")
    store = make_store(root / "store", {"tiny": tiny_model_path})
    with Daemon(store, root / "logs") as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    return openai.OpenAI(base_url=f"{daemon.url}/v1", api_key="unused", max_retries=0)


def as_pairs(calls) -> list[tuple[str, str]]:
    return [(call.function.name, call.function.arguments) for call in calls]


def streamed(client, **request):
    """The stream's chunks, and the completion the openai package reassembles from them (its
    snapshot when cut off: it refuses to "parse" a completion that ran out of tokens)."""
    state = ChatCompletionStreamState()
    chunks = list(client.chat.completions.create(stream=True, **request))
    for chunk in chunks:
        state.handle_chunk(chunk)
    if state.current_completion_snapshot.choices[0].finish_reason == "length":
        return chunks, state.current_completion_snapshot
    return chunks, state.get_final_completion()


def test_a_forced_call_streams_its_arguments_in_pieces_that_rebuild_the_whole_answer(client):
    request = {
        "model": "tiny",
        "messages": ASK,
        "tools": [NOTE, CLOCK],
        "tool_choice": {"type": "function", "function": {"name": "take_note"}},
        "max_tokens": 200,
        "seed": 21,
    }
    whole = client.chat.completions.create(**request).choices[0]
    chunks, rebuilt = streamed(client, **request)
    assert whole.finish_reason == rebuilt.choices[0].finish_reason == "tool_calls"
    assert as_pairs(rebuilt.choices[0].message.tool_calls) == as_pairs(whole.message.tool_calls)
    [(name, arguments)] = as_pairs(whole.message.tool_calls)
    assert name == "take_note"
    jsonschema.validate(json.loads(arguments), NOTE_ARGS)
    pieces = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or ()]
    first, rest = pieces[0], pieces[1:]
    assert (first.index, first.type, first.function.name, first.function.arguments) == (
        0,
        "function",
        "take_note",
        "",
    )
    assert first.id == rebuilt.choices[0].message.tool_calls[0].id
    assert len(rest) > 1 and "".join(p.function.arguments for p in rest) == arguments
    assert all(p.index == 0 and p.id is None and p.function.name is None for p in rest)
    assert not any(c.choices[0].delta.content for c in chunks if c.choices)


def test_the_wire_shape_of_a_streamed_call_is_openais(daemon):
    body = {
        "model": "tiny",
        "messages": ASK,
        "tools": [CLOCK],
        "tool_choice": "required",
        "max_tokens": 100,
        "seed": 3,
        "stream": True,
    }
    with httpx.stream("POST", f"{daemon.url}/v1/chat/completions", json=body, timeout=60) as r:
        events = [json.loads(line[6:]) for line in r.iter_lines() if line[6:7] == "{"]
    deltas = [e["choices"][0]["delta"] for e in events if e["choices"]]
    calls = [d["tool_calls"] for d in deltas if "tool_calls" in d]
    assert all(len(entries) == 1 for entries in calls)  # one piece per chunk, as OpenAI sends
    header, *pieces = [entries[0] for entries in calls]
    assert set(header) == {"index", "id", "type", "function"}
    assert header["function"] == {"name": "get_time", "arguments": ""}
    assert all(piece.keys() == {"index", "function"} for piece in pieces)
    assert all(piece["function"].keys() == {"arguments"} for piece in pieces)
    assert events[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_required_parallel_calls_stream_with_their_indexes_even_when_cut_off(client):
    # The tiny model never closes the list: it makes calls until max_tokens cuts the last one.
    request = {
        "model": "tiny",
        "messages": ASK,
        "tools": [NOTE, CLOCK],
        "tool_choice": "required",
        "parallel_tool_calls": True,
        "max_tokens": 150,
        "seed": 8,
    }
    whole = client.chat.completions.create(**request).choices[0]
    chunks, rebuilt = streamed(client, **request)
    calls = rebuilt.choices[0].message.tool_calls
    assert as_pairs(calls) == as_pairs(whole.message.tool_calls) and len(calls) >= 2
    assert (rebuilt.choices[0].message.content or None) == whole.message.content
    assert whole.finish_reason == rebuilt.choices[0].finish_reason == "length"
    headers = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or ()]
    assert [tc.index for tc in headers if tc.id] == list(range(len(calls)))
    for name, arguments in as_pairs(calls)[:-1]:  # the last one may be cut off
        jsonschema.validate(json.loads(arguments), SCHEMAS[name])


def test_a_list_of_two_calls_streams_as_two_calls(client):
    request = {
        "model": "tiny",
        "messages": ASK,
        "tools": [NOTE, CLOCK],
        "response_format": {"type": "json_schema", "json_schema": {"schema": TWO_CALLS}},
        "max_tokens": 300,
        "seed": 5,
    }
    whole = client.chat.completions.create(**request).choices[0]
    chunks, rebuilt = streamed(client, **request)
    calls = rebuilt.choices[0].message.tool_calls
    assert [name for name, _ in as_pairs(calls)] == ["take_note", "get_time"]
    assert as_pairs(calls) == as_pairs(whole.message.tool_calls)
    assert whole.message.content is None and not rebuilt.choices[0].message.content
    indexes = [tc.index for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or ()]
    assert indexes == sorted(indexes) and set(indexes) == {0, 1}
    assert indexes.count(0) > 2 and indexes.count(1) > 2  # a header, then arguments in pieces


def test_the_stream_helper_of_the_openai_package_parses_the_calls(client):
    strict = [{**t, "function": {**t["function"], "strict": True}} for t in (NOTE, CLOCK)]
    request = {
        "model": "tiny",
        "messages": ASK,
        "tools": strict,
        "tool_choice": {"type": "function", "function": {"name": "get_time"}},
        "max_tokens": 100,
        "seed": 2,
    }
    with client.chat.completions.stream(**request) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_completion()
    [call] = final.choices[0].message.tool_calls
    assert call.function.parsed_arguments == json.loads(call.function.arguments)
    assert events.count("tool_calls.function.arguments.delta") > 1
    assert events.count("tool_calls.function.arguments.done") == 1
    whole = openai.OpenAI(base_url=client.base_url, api_key="unused").chat.completions.create(
        **request
    )
    assert as_pairs(whole.choices[0].message.tool_calls) == as_pairs([call])


def test_the_ollama_stream_carries_each_call_in_the_chunk_that_completes_it(daemon):
    client = ollama.Client(host=daemon.url)
    request = {
        "model": "tiny",
        "messages": ASK,
        "tools": [NOTE, CLOCK],
        "format": TWO_CALLS,
        "options": {"num_predict": 300, "seed": 5},
    }
    whole = client.chat(**request)
    chunks = list(client.chat(stream=True, **request))
    carrying = [i for i, chunk in enumerate(chunks) for _ in chunk.message.tool_calls or ()]
    calls = [call for chunk in chunks for call in chunk.message.tool_calls or ()]
    assert [c.function.name for c in calls] == ["take_note", "get_time"]
    assert [c.model_dump() for c in calls] == [c.model_dump() for c in whole.message.tool_calls]
    assert carrying[0] < carrying[1] < len(chunks) - 1  # each as it completes, not at the end
    assert chunks[-1].done and not chunks[-1].message.tool_calls
    for call in calls:
        jsonschema.validate(call.function.arguments, SCHEMAS[call.function.name])


def test_content_before_a_call_streams_first_through_a_real_generation(harness, tiny_model_path):
    """The model (forced by a grammar) talks, then calls: the words stream as content before
    the call begins, the call's pieces follow, and ``Finished`` holds what streamed."""
    runner = harness.start(make_spec(tiny_model_path))
    model = LoadedModel("tiny", runner.spec, runner, "cpu", 0, 60.0, time.monotonic())
    grammar = (
        'root ::= "Let me look. <tool_call>\\n{\\"name\\": \\"take_note\\", '
        '\\"arguments\\": {\\"text\\": \\"" [a-z]{24,30} "\\"}}\\n</tool_call>"'
    )
    params = SamplingParams(max_tokens=200, seed=1, grammar=grammar)

    async def run() -> list[Delta | Finished]:
        stream = runner.generate(GenerateCall("Hello", params))
        now = time.perf_counter()
        parser = ToolCallParser(["take_note"])
        generation = Generation(
            "tiny",
            Lease(model, lambda *_: None),
            stream,
            started=now,
            loaded=now,
            tool_filter=parser,
        )
        try:
            return [item async for item in generation]
        finally:
            await generation.aclose()

    *deltas, finished = harness.run(run())
    first_call = next(i for i, d in enumerate(deltas) if d.tool_calls)
    assert "".join(d.text for d in deltas[:first_call]) == "Let me look."
    assert not any(d.text for d in deltas[first_call:])
    pieces: list[ToolCallDelta] = [p for d in deltas for p in d.tool_calls]
    header, *rest = pieces
    assert len(rest) > 1 and header.name == "take_note"
    [call] = finished.tool_calls
    assert (call.id, call.name) == (header.id, header.name)
    assert call.arguments == "".join(p.arguments for p in rest)
    assert finished.reason == "tool_calls" and len(json.loads(call.arguments)["text"]) >= 24
