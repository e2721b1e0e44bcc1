"""The Anthropic-compatible API end to end: a real daemon subprocess (with an API key, as a
coding agent pointed at it would meet it), real runners, generated tiny models (one with a
vision projector), and the official ``anthropic`` package as the client."""

from __future__ import annotations

import base64
import json

import anthropic
import httpx
import jsonschema
import pydantic
import pytest
from anthropic.types import RawMessageStreamEvent

from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.daemon import Daemon, make_store
from tests.support.model_writers.projector import TINY_IMAGE_TOKENS
from tests.support.polling import wait_for
from tests.test_late_system import STRICT
from tests.test_server_images import BLUE, RED

pytestmark = pytest.mark.slow

KEY = "sk-anthropic-test"
HELLO = [{"role": "user", "content": "Hello there"}]
GREEDY = {"extra_body": {"options": {"seed": 5}, "temperature": 0}}
WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 16}, "unit": {"enum": ["C", "F"]}},
        "required": ["city", "unit"],
        "additionalProperties": False,
    },
}
CLOCK = {
    "name": "get_time",
    "input_schema": {
        "type": "object",
        "properties": {"zone": {"enum": ["UTC", "CET"]}},
        "required": ["zone"],
        "additionalProperties": False,
    },
}
STREAM_EVENT = pydantic.TypeAdapter(RawMessageStreamEvent)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    from localllm.model_registry.importer import import_gguf
    from localllm.model_registry.store import Store
    from tests.support.model_writers.projector import write_tiny_projector

    root = tmp_path_factory.mktemp("anthropic-api")
    # thinks as Qwen3 does; Q8_0 gives the same logits whatever the batch, so runs compare
    qwen = write_tiny_model(root / "qwen.gguf", thinking="qwen3", seed=4, file_type="Q8_0")
    strict = write_tiny_model(root / "strict.gguf", chat_template=STRICT, seed=1)
    store = make_store(root / "store", {"tiny": tiny_model_path, "qwen": qwen, "strict": strict})
    projector = write_tiny_projector(root / "mmproj.gguf")
    import_gguf(Store(store), "seer", tiny_model_path, projector=projector)
    with Daemon(store, root / "logs", env={"LOCALLLM_API_KEY": KEY}) as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    return anthropic.Anthropic(base_url=daemon.url, api_key=KEY, max_retries=0)


def raw_events(daemon, body: dict) -> list[tuple[str, dict]]:
    """A streamed answer as (event name, data) pairs, read off the wire; each event but the
    pings (which the SDK skips) is checked against the SDK's own types."""
    events, name = [], None
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    with httpx.stream(
        "POST", daemon.url + "/v1/messages", json=body, headers=headers, timeout=120
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((name, json.loads(line.removeprefix("data: "))))
    for name, data in events:
        assert name == data["type"]
        if name != "ping":
            STREAM_EVENT.validate_python(data)
    return events


def test_a_message_with_max_tokens(client):
    reply = client.messages.create(model="tiny", max_tokens=12, messages=HELLO, **GREEDY)
    assert reply.type == "message" and reply.role == "assistant" and reply.model == "tiny"
    assert reply.id.startswith("msg_")
    (block,) = reply.content
    assert block.type == "text" and block.text
    assert reply.stop_reason == "max_tokens" and reply.stop_sequence is None
    assert reply.usage.output_tokens == 12
    assert reply.usage.input_tokens + reply.usage.cache_read_input_tokens > 0


def test_the_system_prompt_is_applied_as_a_string_or_as_blocks(client):
    def prompt_tokens(**fields) -> int:
        return client.messages.count_tokens(model="tiny", messages=HELLO, **fields).input_tokens

    plain = prompt_tokens()
    assert prompt_tokens(system="You are a pirate. Answer like one.") > plain
    blocks = [{"type": "text", "text": "You are a pirate."}, {"type": "text", "text": "Arr."}]
    as_blocks = client.messages.create(
        model="tiny", max_tokens=8, system=blocks, messages=HELLO, **GREEDY
    )
    as_text = client.messages.create(
        model="tiny", max_tokens=8, system="You are a pirate.\n\nArr.", messages=HELLO, **GREEDY
    )
    assert as_blocks.content[0].text == as_text.content[0].text
    assert prompt_tokens(system=blocks) == prompt_tokens(system="You are a pirate.\n\nArr.")


def test_a_stop_sequence_ends_the_message_and_is_named(client):
    full = client.messages.create(model="tiny", max_tokens=40, messages=HELLO, **GREEDY)
    text = full.content[0].text
    stop = text[12:15]
    cut = client.messages.create(
        model="tiny",
        max_tokens=40,
        messages=HELLO,
        stop_sequences=["never in this text", stop],
        **GREEDY,
    )
    assert cut.stop_reason == "stop_sequence" and cut.stop_sequence == stop
    assert cut.content[0].text == text[: text.index(stop)]


def test_a_stream_is_anthropics_event_sequence_and_matches_the_whole_message(daemon, client):
    fields = {"model": "tiny", "max_tokens": 16, "messages": HELLO}
    extra = {"options": {"seed": 9}, "temperature": 0}
    whole = client.messages.create(**fields, extra_body=extra)
    events = raw_events(daemon, {**fields, **extra, "stream": True})
    names = [name for name, _ in events]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert {d["delta"]["type"] for n, d in events if n == "content_block_delta"} == {"text_delta"}
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert text == whole.content[0].text
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "max_tokens"
    assert delta["usage"]["output_tokens"] == 16
    total = delta["usage"]["input_tokens"] + delta["usage"]["cache_read_input_tokens"]
    assert total == whole.usage.input_tokens + whole.usage.cache_read_input_tokens

    with client.messages.stream(**fields, extra_body=extra) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert streamed == final.content[0].text == whole.content[0].text
    assert final.stop_reason == "max_tokens" and final.usage.output_tokens == 16


def test_a_thinking_model_thinks_first_in_a_thinking_block(daemon, client):
    fields = {
        "model": "qwen",
        "max_tokens": 24,
        "messages": HELLO,
        "thinking": {"type": "enabled", "budget_tokens": 8},
        "extra_body": {"options": {"seed": 3}},
    }
    whole = client.messages.create(**fields)
    thinking, text = whole.content
    assert thinking.type == "thinking" and thinking.thinking and thinking.signature
    assert text.type == "text" and text.text and "<think>" not in text.text + thinking.thinking
    assert whole.stop_reason == "max_tokens" and whole.usage.output_tokens == 24
    counted = client.messages.count_tokens(**{k: v for k, v in fields.items() if k != "max_tokens"})
    assert counted.input_tokens == whole.usage.input_tokens + whole.usage.cache_read_input_tokens

    body = {k: v for k, v in fields.items() if k != "extra_body"}
    events = raw_events(daemon, {**body, "options": {"seed": 3}, "stream": True})
    starts = [d["content_block"]["type"] for n, d in events if n == "content_block_start"]
    assert starts == ["thinking", "text"]
    kinds = [d["delta"]["type"] for n, d in events if n == "content_block_delta"]
    assert kinds.index("signature_delta") == kinds.index("text_delta") - 1  # closes the thinking
    with client.messages.stream(**fields) as stream:
        final = stream.get_final_message()
    assert [b.model_dump(exclude_none=True) for b in final.content] == [
        b.model_dump(exclude_none=True) for b in whole.content
    ]

    # Thinking off: Qwen3's template writes an empty thinking block, the model answers at once
    off = client.messages.create(**{**fields, "thinking": {"type": "disabled"}})
    assert [block.type for block in off.content] == ["text"]
    # A client sends its thinking blocks back with the next turn
    history = [*HELLO, {"role": "assistant", "content": [b.model_dump() for b in whole.content]}]
    follow_up = client.messages.create(**{**fields, "messages": [*history, *HELLO]})
    assert follow_up.content[0].type == "thinking"


def test_a_forced_tool_call_and_its_result(client):
    question = [{"role": "user", "content": "What is the weather in Paris?"}]
    reply = client.messages.create(
        model="tiny",
        max_tokens=80,
        messages=question,
        tools=[WEATHER, CLOCK],
        tool_choice={"type": "tool", "name": "get_weather"},
        **GREEDY,
    )
    assert reply.stop_reason == "tool_use"
    (call,) = [block for block in reply.content if block.type == "tool_use"]
    assert call.name == "get_weather" and call.id
    jsonschema.validate(call.input, WEATHER["input_schema"])

    def after(result: str) -> list[dict]:
        tool_result = {"type": "tool_result", "tool_use_id": call.id, "content": result}
        return [
            *question,
            {"role": "assistant", "content": [block.model_dump() for block in reply.content]},
            {"role": "user", "content": [tool_result]},
        ]

    answer = client.messages.create(
        model="tiny", max_tokens=6, messages=after("12 degrees"), tools=[WEATHER], **GREEDY
    )
    assert answer.stop_reason in ("end_turn", "max_tokens", "tool_use")
    short = client.messages.count_tokens(model="tiny", messages=after("12"), tools=[WEATHER])
    long = client.messages.count_tokens(
        model="tiny", messages=after("12 degrees and sunny all day"), tools=[WEATHER]
    )
    assert long.input_tokens > short.input_tokens  # the result is in the prompt
    blocks = [{"type": "text", "text": "12 degrees and sunny all day"}]
    as_blocks = client.messages.count_tokens(model="tiny", messages=after(blocks), tools=[WEATHER])
    assert as_blocks.input_tokens == long.input_tokens


def test_any_tool_streams_a_tool_use_block(daemon, client):
    fields = {
        "model": "tiny",
        "max_tokens": 80,
        "messages": HELLO,
        "tools": [WEATHER, CLOCK],
        "tool_choice": {"type": "any"},
    }
    events = raw_events(daemon, {**fields, "stream": True, "options": {"seed": 2}})
    starts = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert [block["type"] for block in starts] == ["tool_use"]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    pieces = [d["delta"]["partial_json"] for n, d in events if n == "content_block_delta"]
    assert len(pieces) > 1  # the arguments stream as the model writes them
    schema = {"get_weather": WEATHER, "get_time": CLOCK}[starts[0]["name"]]["input_schema"]
    jsonschema.validate(json.loads("".join(pieces)), schema)
    with client.messages.stream(**fields, extra_body={"options": {"seed": 2}}) as stream:
        final = stream.get_final_message()
    (call,) = final.content
    assert (call.name, call.input) == (starts[0]["name"], json.loads("".join(pieces)))


def test_output_config_format_is_a_json_schema_the_answer_matches(client):
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 12}, "ok": {"type": "boolean"}},
        "required": ["name", "ok"],
        "additionalProperties": False,
    }
    reply = client.messages.create(
        model="tiny",
        max_tokens=200,
        messages=HELLO,
        output_config={"format": {"type": "json_schema", "schema": schema}},
        **GREEDY,
    )
    assert reply.stop_reason == "end_turn"
    jsonschema.validate(json.loads(reply.content[0].text), schema)


def test_a_image_block_on_a_vision_model(client):
    def ask(*images: bytes):
        images = [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": d}}
            for d in (base64.b64encode(p).decode() for p in images)
        ]
        content = [*images, {"type": "text", "text": "What is this?"}]
        return [{"role": "user", "content": content}]

    red = client.messages.create(model="seer", max_tokens=6, messages=ask(RED), **GREEDY)
    blue = client.messages.create(model="seer", max_tokens=6, messages=ask(BLUE), **GREEDY)
    assert red.content[0].text != blue.content[0].text  # the model sees each image
    counted = client.messages.count_tokens(model="seer", messages=ask(RED)).input_tokens
    assert counted == red.usage.input_tokens + red.usage.cache_read_input_tokens
    both = client.messages.count_tokens(model="seer", messages=ask(RED, BLUE)).input_tokens
    assert both == counted + TINY_IMAGE_TOKENS
    by_url = {"type": "image", "source": {"type": "url", "url": "http://127.0.0.1:9/x.png"}}
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(
            model="seer", max_tokens=4, messages=[{"role": "user", "content": [by_url]}]
        )
    assert "never downloads images" in caught.value.api_message
    assert caught.value.type == "invalid_request_error"


def test_count_tokens_is_the_prompt_the_message_reports(client):
    for messages in (HELLO, [*HELLO, {"role": "assistant", "content": "Hi!"}, *HELLO]):
        counted = client.messages.count_tokens(model="tiny", messages=messages, system="Be brief")
        reply = client.messages.create(
            model="tiny", max_tokens=3, messages=messages, system="Be brief", **GREEDY
        )
        usage = reply.usage
        assert counted.input_tokens == usage.input_tokens + usage.cache_read_input_tokens > 0


def test_a_last_assistant_message_is_a_prefill_the_answer_continues(daemon, client):
    """The prompt ends inside the assistant's words (the tiny model's template is ChatML), as
    the same prompt sent raw to the native API counts it."""
    prefill = [*HELLO, {"role": "assistant", "content": [{"type": "text", "text": "Once upon"}]}]
    counted = client.messages.count_tokens(model="tiny", messages=prefill).input_tokens
    raw = "<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\nOnce upon"
    body = {"model": "tiny", "prompt": raw, "raw": True, "stream": False}
    native = httpx.post(
        daemon.url + "/api/generate",
        json={**body, "options": {"num_predict": 0}},
        headers={"x-api-key": KEY},
        timeout=60,
    )
    assert counted == native.json()["prompt_eval_count"]
    reply = client.messages.create(model="tiny", max_tokens=4, messages=prefill, **GREEDY)
    assert reply.stop_reason == "max_tokens" and reply.content[0].text


def test_keys_come_as_x_api_key_or_bearer_and_a_wrong_one_is_refused(daemon, client):
    # Anthropic's SDKs sent the key as x-api-key (agents and curl examples still do); newer
    # ones send it as a bearer token: both are the daemon's key.
    body = {"model": "tiny", "messages": HELLO}
    url = daemon.url + "/v1/messages/count_tokens"
    for headers in ({"x-api-key": KEY}, {"Authorization": f"Bearer {KEY}"}):
        assert httpx.post(url, json=body, headers=headers, timeout=60).status_code == 200
    refused = httpx.post(url, json=body, headers={"x-api-key": "sk-wrong"}, timeout=60)
    assert refused.status_code == 401
    assert refused.json()["error"]["type"] == "authentication_error"
    assert client.messages.count_tokens(**body).input_tokens > 0
    wrong = anthropic.Anthropic(base_url=daemon.url, api_key="sk-wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as caught:
        wrong.messages.create(model="tiny", max_tokens=4, messages=HELLO)
    assert caught.value.type == "authentication_error"
    assert "x-api-key" in caught.value.api_message


def test_a_missing_model_is_not_found(client):
    with pytest.raises(anthropic.NotFoundError) as caught:
        client.messages.create(model="no-such-model", max_tokens=4, messages=HELLO)
    assert caught.value.type == "not_found_error"
    assert "localllm pull no-such-model" in caught.value.api_message


def test_bad_requests_are_400s_in_anthropics_shape(daemon):
    headers = {"x-api-key": KEY}

    def post(body: dict, path: str = "/v1/messages") -> httpx.Response:
        return httpx.post(daemon.url + path, json=body, headers=headers, timeout=60)

    missing = post({"model": "tiny", "messages": HELLO})
    assert missing.status_code == 400
    assert missing.json()["type"] == "error"
    assert missing.json()["error"]["type"] == "invalid_request_error"
    assert "max_tokens" in missing.json()["error"]["message"]
    document = {"type": "document", "source": {"type": "text", "data": "x"}}
    body = {"model": "tiny", "max_tokens": 4, "messages": [{"role": "user", "content": [document]}]}
    refused = post(body).json()["error"]
    assert "messages[0].content[0]" in refused["message"] and "'document'" in refused["message"]
    thinking = {"type": "enabled", "budget_tokens": 0}
    refused = post({"model": "tiny", "messages": HELLO, "thinking": thinking}, "/v1/messages/x")
    assert refused.status_code == 404 and refused.json()["error"]["type"] == "not_found_error"
    refused = post(
        {"model": "tiny", "messages": HELLO, "thinking": thinking}, "/v1/messages/count_tokens"
    )
    assert refused.status_code == 400 and "budget_tokens" in refused.json()["error"]["message"]


def request_lines(daemon) -> list[dict]:
    return [
        json.loads(line)
        for line in daemon.log().splitlines()
        if line.startswith('{"event": "request"')
    ]


def next_messages_line(daemon, seen: int) -> dict:
    """The first ``/v1/messages`` line after the log's first ``seen`` request lines, once the
    daemon wrote it: it logs a request as its response ends, which can be after the client has
    read the whole answer (a busy CI machine found the last line still the one before)."""

    def line() -> dict | None:
        later = [x for x in request_lines(daemon)[seen:] if x["path"] == "/v1/messages"]
        return later[0] if later else None

    assert wait_for(line), "the request was not logged"
    return line()


def test_what_claude_code_sends_is_understood(daemon):
    """Its fields as it sends them on every turn: adaptive thinking (a model that cannot think
    just answers), a system message mid-conversation, server tools (left out, with a warning in
    the request log), betas in the query and headers, fields of features we do not have."""
    server_tool = {"type": "web_search_20250305", "name": "web_search"}
    body = {
        "model": "tiny",
        "max_tokens": 3,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Hello there"}]},
            {"role": "system", "content": [{"type": "text", "text": "The cwd is /tmp."}]},
        ],
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "tools": [WEATHER, server_tool],
        "thinking": {"type": "adaptive", "display": "omitted"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "high"},
        "metadata": {"user_id": "someone"},
    }
    headers = {"x-api-key": KEY, "anthropic-beta": "claude-code-20250219,effort-2025-11-24"}
    seen = len(request_lines(daemon))
    answer = httpx.post(
        daemon.url + "/v1/messages?beta=true", json=body, headers=headers, timeout=120
    )
    assert answer.status_code == 200, answer.text
    message = anthropic.types.Message.model_validate(answer.json())
    assert message.stop_reason == "max_tokens" and message.content[0].type == "text"
    assert next_messages_line(daemon, seen)["warnings"] == [
        "tools[1]: server tool 'web_search' (web_search_20250305) left out: localllm runs no "
        "server tools"
    ]
    enabled = {**body, "thinking": {"type": "enabled", "budget_tokens": 1024}}
    answer = httpx.post(daemon.url + "/v1/messages", json=enabled, headers=headers, timeout=120)
    assert answer.status_code == 200, answer.text
    counted = httpx.post(
        daemon.url + "/v1/messages/count_tokens", json=body, headers=headers, timeout=60
    )
    without = {**body, "messages": body["messages"][:1]}
    fewer = httpx.post(
        daemon.url + "/v1/messages/count_tokens", json=without, headers=headers, timeout=60
    )
    assert counted.json()["input_tokens"] > fewer.json()["input_tokens"]  # the system message


def test_the_request_log_says_why_a_request_failed(daemon):
    thinking = {"type": "enabled", "budget_tokens": 0}
    body = {"model": "tiny", "max_tokens": 4, "messages": HELLO, "thinking": thinking}
    seen = len(request_lines(daemon))
    refused = httpx.post(
        daemon.url + "/v1/messages", json=body, headers={"x-api-key": KEY}, timeout=60
    )
    assert refused.status_code == 400
    line = next_messages_line(daemon, seen)
    assert line["status"] == 400
    assert line["error"] == refused.json()["error"]["message"] and "budget_tokens" in line["error"]


def test_a_template_that_wants_one_system_message_first_gets_them_folded(daemon):
    headers = {"x-api-key": KEY}

    def count(messages: list[dict]) -> httpx.Response:
        body = {"model": "strict", "system": "Rules.", "messages": messages}
        return httpx.post(
            daemon.url + "/v1/messages/count_tokens", json=body, headers=headers, timeout=60
        )

    late = count([*HELLO, {"role": "system", "content": "The cwd is /tmp."}])
    assert late.status_code == 200, late.text
    folded = count([{"role": "user", "content": "Hello there\n\nThe cwd is /tmp."}])
    assert late.json() == folded.json()
