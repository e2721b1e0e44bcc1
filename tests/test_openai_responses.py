"""OpenAI's Responses API (``/v1/responses``) end to end: a real daemon subprocess, a real
runner, a generated tiny model, and the official ``openai`` package as the client. Every
answer and every streamed event is also checked against the SDK's own pydantic types."""

from __future__ import annotations

import json
import os
import signal
import threading

import httpx
import jsonschema
import openai
import pydantic
import pytest
from openai.types.responses import Response, ResponseStreamEvent

from tests.support.daemon import Daemon, make_store

pytestmark = pytest.mark.slow

EVENT = pydantic.TypeAdapter(ResponseStreamEvent)
PROFILE_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "ok": {"type": "boolean"},
        "color": {"enum": ["red", "green", "blue"]},
    },
    "required": ["name", "ok", "color"],
    "additionalProperties": False,
}
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 16}, "unit": {"enum": ["C", "F"]}},
        "required": ["city", "unit"],
        "additionalProperties": False,
    },
    "strict": True,
}
CLOCK = {
    "type": "function",
    "name": "get_time",
    "parameters": {
        "type": "object",
        "properties": {"zone": {"enum": ["UTC", "CET"]}},
        "required": ["zone"],
        "additionalProperties": False,
    },
}
PROFILE_FORMAT = {"format": {"type": "json_schema", "name": "profile", "schema": PROFILE_SCHEMA}}
CLOSE = {
    "type": "function",
    "name": "close_agent",
    "parameters": {
        "type": "object",
        "properties": {"target": {"enum": ["agent-1", "agent-2"]}},
        "required": ["target"],
        "additionalProperties": False,
    },
}
AGENTS = {"type": "namespace", "name": "multi_agent_v1", "description": "Agents", "tools": [CLOSE]}
# What Codex sends besides its tools (store false, with everything it asks to be included)
CODEX_FIELDS = {
    "store": False,
    "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "session-1",
    "client_metadata": {"turn_id": "turn-1", "session_id": "session-1"},
    "reasoning": {"effort": "medium", "summary": "auto"},
    "parallel_tool_calls": True,
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("openai-responses")
    store = make_store(root / "store", {"tiny": tiny_model_path})
    with Daemon(store, root / "logs") as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    return daemon.openai()


def post(daemon: Daemon, **body) -> httpx.Response:
    return httpx.post(daemon.url + "/v1/responses", json={"model": "tiny", **body}, timeout=120)


def sse_events(text: str) -> list[tuple[str, dict]]:
    """(event name, data) for each event of a raw server-sent event stream."""
    events = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields.get("event", ""), json.loads(fields["data"])))
    return events


def checked_events(text: str) -> list:
    """The stream's events as the SDK's types, after checking each one's name and number."""
    events = sse_events(text)
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    assert all(name == data["type"] for name, data in events)
    return [EVENT.validate_python(data) for _, data in events]


def test_a_whole_response_parses_as_the_sdks_response(daemon, client):
    reply = client.responses.create(
        model="tiny", input="Hello there", max_output_tokens=12, extra_body={"seed": 7}
    )
    assert reply.object == "response" and reply.id.startswith("resp_") and reply.model == "tiny"
    assert reply.status == "incomplete"
    assert reply.incomplete_details.reason == "max_output_tokens"
    (message,) = reply.output
    assert message.type == "message" and message.role == "assistant"
    assert reply.output_text and message.content[0].text == reply.output_text
    usage = reply.usage
    assert usage.output_tokens == 12 and usage.input_tokens > 0
    assert usage.total_tokens == usage.input_tokens + 12
    assert usage.input_tokens_details.cached_tokens + (
        usage.input_tokens_details.cache_write_tokens
    ) == (usage.input_tokens)
    raw = post(daemon, input="Hello there", max_output_tokens=12, seed=7).json()
    assert Response.model_validate(raw).output_text == reply.output_text  # strict types too


def test_a_stream_is_openais_event_sequence_with_the_unstreamed_text(daemon, client):
    kwargs = {"input": "Hello there", "max_output_tokens": 16}
    whole = client.responses.create(model="tiny", extra_body={"seed": 11}, **kwargs)
    raw = post(daemon, stream=True, seed=11, **kwargs)
    assert raw.headers["content-type"].startswith("text/event-stream")
    assert "[DONE]" not in raw.text
    events = checked_events(raw.text)
    kinds = [event.type for event in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.incomplete",
    ]
    streamed = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert streamed == whole.output_text
    assert events[-1].response.output_text == whole.output_text
    assert events[-1].response.usage.output_tokens == 16
    sdk = list(
        client.responses.create(model="tiny", stream=True, extra_body={"seed": 11}, **kwargs)
    )
    assert [e.type for e in sdk] == kinds


def test_the_sdks_stream_helper_follows_a_completed_stream(client):
    with client.responses.stream(
        model="tiny", input="Hello there", text=PROFILE_FORMAT, extra_body={"seed": 2}
    ) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert final.status == "completed" and final.output_text == "".join(deltas)
    jsonschema.validate(json.loads(final.output_text), PROFILE_SCHEMA)


def test_json_schema_output_validates(client):
    for seed in (1, 2, 3):
        reply = client.responses.create(
            model="tiny", input="Hello", text=PROFILE_FORMAT, extra_body={"seed": seed}
        )
        assert reply.status == "completed"
        jsonschema.validate(json.loads(reply.output_text), PROFILE_SCHEMA)
        assert reply.text.format.type == "json_schema" and reply.text.format.name == "profile"
    as_object = client.responses.create(
        model="tiny",
        input="Hello",
        text={"format": {"type": "json_object"}},
        max_output_tokens=300,
        extra_body={"seed": 5},
    )
    assert as_object.output_text.lstrip().startswith("{")


def test_a_function_tool_round_trip(client):
    first = client.responses.create(
        model="tiny",
        input="Weather in Oslo?",
        tools=[WEATHER, CLOCK],
        tool_choice="required",
        extra_body={"seed": 4},
    )
    assert first.status == "completed"
    (call,) = first.output
    assert (
        call.type == "function_call" and call.call_id and call.name in ("get_weather", "get_time")
    )
    schema = {"get_weather": WEATHER, "get_time": CLOCK}[call.name]["parameters"]
    jsonschema.validate(json.loads(call.arguments), schema)
    assert [t.name for t in first.tools] == ["get_weather", "get_time"]
    assert first.tool_choice == "required"

    answer = {"type": "function_call_output", "call_id": call.call_id, "output": "12 degrees"}
    second = client.responses.create(
        model="tiny",
        previous_response_id=first.id,
        input=[answer],
        tools=[WEATHER, CLOCK],
        max_output_tokens=8,
        extra_body={"seed": 1},
    )
    assert second.previous_response_id == first.id
    assert second.usage.input_tokens > first.usage.input_tokens
    assert second.usage.input_tokens_details.cached_tokens >= first.usage.input_tokens
    # the same history sent in full gives the same prompt
    resent = client.responses.create(
        model="tiny",
        input=[{"role": "user", "content": "Weather in Oslo?"}, call.model_dump(), answer],
        tools=[WEATHER, CLOCK],
        max_output_tokens=8,
        extra_body={"seed": 1},
    )
    assert resent.usage.input_tokens == second.usage.input_tokens
    assert resent.output_text == second.output_text


def test_a_named_tool_call_streams_its_arguments(daemon, client):
    raw = post(
        daemon,
        input="Weather in Oslo?",
        tools=[WEATHER, CLOCK],
        tool_choice={"type": "function", "name": "get_weather"},
        stream=True,
        seed=3,
    )
    events = checked_events(raw.text)
    added = [e for e in events if e.type == "response.output_item.added"]
    assert [e.item.type for e in added] == ["function_call"]
    deltas = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    (done,) = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert "".join(deltas) == done.arguments
    jsonschema.validate(json.loads(done.arguments), WEATHER["parameters"])
    final = events[-1]
    assert final.type == "response.completed"
    (call,) = final.response.output
    assert call.name == "get_weather" and call.arguments == done.arguments
    with client.responses.stream(
        model="tiny",
        input="Weather in Oslo?",
        tools=[WEATHER],
        tool_choice="required",
        extra_body={"seed": 3},
    ) as stream:
        for _ in stream:
            pass
        assert stream.get_final_response().output[0].name == "get_weather"


def test_codex_tools_namespaces_flatten_and_hosted_tools_are_left_out(daemon, client):
    hosted = {"type": "web_search", "external_web_access": False}
    body = {"input": "Close the agent", "tools": [CLOCK, AGENTS, hosted], **CODEX_FIELDS}
    forced = {"tool_choice": {"type": "function", "name": "close_agent"}, "seed": 3}
    whole = post(daemon, **body, **forced)
    assert whole.status_code == 200, whole.text  # reasoning on a model that cannot think too
    reply = Response.model_validate(whole.json())
    (call,) = reply.output
    assert (call.type, call.name, call.namespace) == (
        "function_call",
        "close_agent",
        AGENTS["name"],
    )
    assert [tool.type for tool in reply.tools] == ["function", "namespace"]  # no web_search
    events = checked_events(post(daemon, **body, **forced, stream=True).text)
    items = [e.item for e in events if e.type.startswith("response.output_item.")]
    assert [(i.name, i.namespace) for i in items] == [("close_agent", AGENTS["name"])] * 2
    line = next(
        json.loads(text)
        for text in reversed(daemon.log().splitlines())
        if text.startswith('{"event": "request"') and '"/v1/responses"' in text
    )
    assert line["status"] == 200
    assert line["warnings"] == [
        "tools[2]: hosted tool 'web_search' left out: localllm runs no hosted tools"
    ]
    # the call goes back as Codex sends it (namespace included), with what the tool answered
    result = {"type": "function_call_output", "call_id": call.call_id, "output": "closed"}
    history = [{"role": "user", "content": "Close the agent"}, call.model_dump(), result]
    after = Response.model_validate(
        post(daemon, **{**body, "input": history, "max_output_tokens": 4, "seed": 1}).json()
    )
    assert after.status == "incomplete" and after.output_text
    plain = client.responses.create(
        model="tiny",
        input=history,
        max_output_tokens=4,
        tools=[CLOCK, CLOSE],
        extra_body={"seed": 1},
    )
    assert after.usage.input_tokens == plain.usage.input_tokens  # the same prompt, flattened


def test_previous_response_id_continues_the_conversation_from_the_cache(client):
    story = "Tell me a long story about the sea and the ships upon it. " * 20
    first = client.responses.create(
        model="tiny", input=story, max_output_tokens=8, extra_body={"seed": 9}
    )
    second = client.responses.create(
        model="tiny",
        previous_response_id=first.id,
        input="And then?",
        max_output_tokens=8,
        extra_body={"seed": 9},
    )
    assert first.usage.input_tokens > 200
    assert second.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens
    cached = second.usage.input_tokens_details.cached_tokens
    assert cached >= first.usage.input_tokens
    assert second.usage.input_tokens - cached < 40  # only the new turn was decoded
    third = client.responses.create(
        model="tiny", previous_response_id=second.id, input="Go on.", max_output_tokens=4
    )
    assert third.usage.input_tokens > second.usage.input_tokens + second.usage.output_tokens


def test_instructions_are_for_one_response_only(client):
    rules = "Always answer in exactly three words, politely. " * 10
    first = client.responses.create(
        model="tiny", instructions=rules, input="Hi", max_output_tokens=4, extra_body={"seed": 1}
    )
    plain = client.responses.create(
        model="tiny", input="Hi", max_output_tokens=4, extra_body={"seed": 1}
    )
    assert first.instructions == rules
    assert first.usage.input_tokens > plain.usage.input_tokens + 50
    follow_up = client.responses.create(
        model="tiny", previous_response_id=first.id, input="Hi", max_output_tokens=4
    )
    assert follow_up.usage.input_tokens < first.usage.input_tokens  # the rules were dropped


def test_retrieve_delete_and_then_404(client):
    made = client.responses.create(
        model="tiny", input="Hello", max_output_tokens=4, metadata={"task": "t1"}
    )
    got = client.responses.retrieve(made.id)
    assert got.id == made.id and got.output_text == made.output_text
    assert got.metadata == {"task": "t1"} and got.usage.output_tokens == 4
    client.responses.delete(made.id)
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.retrieve(made.id)
    assert caught.value.body["type"] == "not_found_error" and made.id in caught.value.message
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(made.id)
    with pytest.raises(openai.NotFoundError, match="not found"):
        client.responses.create(model="tiny", previous_response_id=made.id, input="Hi")


def test_delete_answers_openais_deleted_object(daemon, client):
    made = client.responses.create(model="tiny", input="Hello", max_output_tokens=2)
    answer = httpx.delete(f"{daemon.url}/v1/responses/{made.id}", timeout=10)
    assert answer.json() == {"id": made.id, "object": "response.deleted", "deleted": True}


def test_store_false_keeps_nothing(daemon, client):
    made = client.responses.create(model="tiny", input="Hello", max_output_tokens=2, store=False)
    assert made.status == "incomplete"
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(made.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="tiny", previous_response_id=made.id, input="Hi")
    streamed = checked_events(
        post(daemon, input="Hi", max_output_tokens=2, store=False, stream=True).text
    )
    assert httpx.get(f"{daemon.url}/v1/responses/{streamed[-1].response.id}").status_code == 404


def test_a_streamed_response_is_stored_too(daemon, client):
    events = checked_events(post(daemon, input="Hi", max_output_tokens=3, stream=True).text)
    final = events[-1].response
    assert client.responses.retrieve(final.id).output_text == final.output_text


@pytest.mark.parametrize(
    ("body", "words", "param"),
    [
        (
            {"input": [{"type": "web_search_call", "id": "ws_1"}]},
            "input item type 'web_search_call' is not supported",
            "input",
        ),
        (
            {"input": "Hi", "tools": [{"type": "custom", "name": "patch"}]},
            "tool type 'custom' is not supported; function and namespace tools are (tools[0])",
            "tools",
        ),
        (
            {"input": "Hi", "tools": [CLOCK, {**AGENTS, "tools": [CLOCK]}]},
            "tools[1].tools[0]: tool name 'get_time' is given twice",
            "tools",
        ),
        ({"input": [{"role": "user"}]}, "input[0].content: Field required", "input[0].content"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
            "content part type 'input_file' is not supported",
            "input",
        ),
        ({"input": "Hi", "background": True}, "background", "background"),
        ({"input": "Hi", "conversation": "conv_1"}, "previous_response_id", "conversation"),
        ({"input": []}, "input is empty", "input"),
        ({"input": "Hi", "tool_choice": {"type": "file_search"}}, "tool_choice", "tool_choice"),
        (
            {"input": "Hi", "text": {"format": {"type": "json_schema", "name": "x"}}},
            "needs a schema",
            "text.format",
        ),
        ({"input": "Hi", "max_output_tokens": 0}, "max_output_tokens", "max_output_tokens"),
    ],
)
def test_bad_requests_are_clear_400s(daemon, body, words, param):
    answer = post(daemon, **body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert words in error["message"] and error["type"] == "invalid_request_error"
    assert error["param"] == param


def test_a_runner_killed_mid_stream_ends_with_error_and_response_failed(daemon):
    with httpx.Client(timeout=30) as http:
        body = {"model": "tiny", "input": "Write something.", "max_output_tokens": 1500}
        request = http.build_request(
            "POST", daemon.url + "/v1/responses", json={**body, "stream": True}
        )
        response = http.send(request, stream=True)
        lines = response.iter_lines()
        while "output_text.delta" not in next(lines):
            pass
        (runner,) = daemon.runner_pids()
        os.kill(runner, signal.SIGKILL)
        rest: list[str] = []
        reader = threading.Thread(target=lambda: rest.extend(lines))
        reader.start()
        reader.join(timeout=15)
        assert not reader.is_alive(), "the stream hung after its runner died"
        response.close()
    payloads = [json.loads(line[6:]) for line in rest if line.startswith("data: ")]
    error, failed = payloads[-2:]
    assert error["type"] == "error" and error["code"] == "runner_crashed"
    assert "tiny" in error["message"]
    assert failed["type"] == "response.failed" and failed["response"]["status"] == "failed"
    assert failed["response"]["error"]["message"] == error["message"]
    numbers = [p["sequence_number"] for p in payloads]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    EVENT.validate_python(error)
    EVENT.validate_python(failed)
    again = daemon.openai().responses.create(model="tiny", input="Hi", max_output_tokens=3)
    assert again.usage.output_tokens == 3
