"""The OpenAI-compatible API end to end: a real daemon subprocess, a real runner, a generated
tiny model, and the official ``openai`` package as the client."""

from __future__ import annotations

import base64
import json
import struct
from concurrent.futures import ThreadPoolExecutor

import httpx
import jsonschema
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

from localllm.daemon.server import json_budget
from tests.support.daemon import Daemon, make_store
from tests.support.gate import Gate
from tests.support.in_process import serve_daemon_in_thread
from tests.support.polling import wait_for

pytestmark = pytest.mark.slow

USER = [{"role": "user", "content": "Hello there"}]

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
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 16},
                "unit": {"enum": ["C", "F"]},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
    },
}
CLOCK = {
    "type": "function",
    "function": {
        "name": "get_time",
        "parameters": {
            "type": "object",
            "properties": {"zone": {"enum": ["UTC", "CET"]}},
            "required": ["zone"],
            "additionalProperties": False,
        },
    },
}


HOSTILE_TEMPLATE = "{{ ''.__class__.__mro__[1].__subclasses__() }}"
GO_TEMPLATE = "{{ if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}" + (
    "<|im_start|>user\n{{ .Prompt }}<|im_end|>\n<|im_start|>assistant\n{{ .Response }}"
)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    from localllm.model_registry.importer import ModelExtras
    from localllm.model_registry.tiny_gguf import write_tiny_model

    root = tmp_path_factory.mktemp("openai-api")
    hostile = write_tiny_model(root / "hostile.gguf", seed=1, chat_template=HOSTILE_TEMPLATE)
    pirate = ModelExtras(system="You are a pirate. Answer like one, always.", template=GO_TEMPLATE)
    models = {"tiny": tiny_model_path, "hostile": hostile, "pirate": (tiny_model_path, pirate)}
    store = make_store(root / "store", models)
    with Daemon(store, root / "logs") as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    return daemon.openai()


def test_models_are_listed_by_display_name(client):
    models = client.models.list().data
    assert sorted(m.id for m in models) == ["hostile", "pirate", "tiny"]
    assert {m.owned_by for m in models} == {"library"}
    assert client.models.retrieve("tiny").id == "tiny"


def test_unknown_model_is_404_with_a_pull_hint(client):
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="no-such-model", messages=USER)
    assert "localllm pull no-such-model" in str(caught.value)
    assert caught.value.body["code"] == "model_not_found"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("no-such-model")


def test_chat_completion(client):
    reply = client.chat.completions.create(model="tiny", messages=USER, max_tokens=12, seed=7)
    choice = reply.choices[0]
    assert reply.model == "tiny" and reply.object == "chat.completion"
    assert choice.message.role == "assistant" and choice.message.content
    assert choice.finish_reason == "length"
    assert reply.usage.completion_tokens == 12
    assert reply.usage.prompt_tokens > 0
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + 12


def test_streaming_matches_the_same_seed_without_streaming(client):
    kwargs = {"model": "tiny", "messages": USER, "max_tokens": 16, "seed": 11}
    whole = client.chat.completions.create(**kwargs).choices[0].message.content
    chunks = list(
        client.chat.completions.create(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole
    assert chunks[0].choices[0].delta.role == "assistant"
    finals = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    assert finals == ["length"]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 16


def test_json_schema_output_always_parses_and_validates(client):
    for seed in (1, 2, 3):
        reply = client.chat.completions.create(
            model="tiny",
            messages=USER,
            max_tokens=200,
            seed=seed,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "profile", "schema": PROFILE_SCHEMA, "strict": True},
            },
        )
        assert reply.choices[0].finish_reason == "stop"
        jsonschema.validate(json.loads(reply.choices[0].message.content), PROFILE_SCHEMA)


def test_json_object_output_is_a_json_object(client):
    reply = client.chat.completions.create(
        model="tiny",
        messages=USER,
        max_tokens=300,
        seed=5,
        response_format={"type": "json_object"},
        temperature=0.0,
    )
    if reply.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(reply.choices[0].message.content), dict)
    else:  # an unbounded object may run out of tokens; what there is must be JSON so far
        assert reply.choices[0].message.content.lstrip().startswith("{")


def test_named_tool_call_arguments_validate_against_the_tool_schema(client):
    reply = client.chat.completions.create(
        model="tiny",
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=[WEATHER, CLOCK],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        max_tokens=200,
        seed=3,
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "get_weather" and call.id
    jsonschema.validate(json.loads(call.function.arguments), WEATHER["function"]["parameters"])


def test_required_tool_call_picks_one_of_the_tools_and_streams(client):
    chunks = list(
        client.chat.completions.create(
            model="tiny",
            messages=[{"role": "user", "content": "What time is it?"}],
            tools=[WEATHER, CLOCK],
            tool_choice="required",
            max_tokens=200,
            seed=4,
            stream=True,
        )
    )
    state = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(chunk)
    (call,) = state.get_final_completion().choices[0].message.tool_calls
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in (WEATHER, CLOCK)}
    jsonschema.validate(json.loads(call.function.arguments), schemas[call.function.name])
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_tool_results_in_the_history_are_accepted(client):
    history = [
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "arguments": '{"city": "Oslo", "unit": "C"}',
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "12 degrees"},
    ]
    reply = client.chat.completions.create(
        model="tiny", messages=history, tools=[WEATHER], max_tokens=5, seed=1
    )
    assert reply.choices[0].finish_reason in ("length", "stop", "tool_calls")


def test_embeddings_have_the_model_dimension_in_both_encodings(client):
    result = client.embeddings.create(model="tiny", input=["hello", "world wide"])
    assert [d.index for d in result.data] == [0, 1]
    assert all(len(d.embedding) == 64 for d in result.data)
    assert result.data[0].embedding != result.data[1].embedding
    assert abs(sum(x * x for x in result.data[0].embedding) - 1.0) < 1e-3
    assert result.usage.prompt_tokens > 0
    raw = httpx.post(
        client.base_url.join("embeddings").__str__(),
        json={"model": "tiny", "input": "hello", "encoding_format": "base64"},
    ).json()
    decoded = struct.unpack("<64f", base64.b64decode(raw["data"][0]["embedding"]))
    assert decoded == pytest.approx(result.data[0].embedding, abs=1e-6)


def test_embedding_token_arrays_are_a_clear_400(client):
    with pytest.raises(openai.BadRequestError, match="token-array"):
        client.embeddings.create(model="tiny", input=[[1, 2, 3]])


def test_a_prompt_over_the_context_is_400_naming_both_numbers(client):
    long_text = "the and to of in is it " * 600
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": long_text}], max_tokens=4
        )
    message = caught.value.body["message"]
    assert "2048" in message and caught.value.body["code"] == "context_length_exceeded"
    prompt_tokens = int(message.split("the prompt is ")[1].split()[0])
    assert prompt_tokens > 2048


def test_bad_requests_are_400_in_openai_shape_not_422(daemon, client):
    with pytest.raises(openai.BadRequestError, match="n > 1"):
        client.chat.completions.create(model="tiny", messages=USER, n=2)
    response = httpx.post(daemon.url + "/v1/chat/completions", json={"model": "tiny"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == "messages"
    bad_bias = httpx.post(
        daemon.url + "/v1/chat/completions",
        json={"model": "tiny", "messages": USER, "logit_bias": {"hello": 5}},
    )
    assert bad_bias.status_code == 400 and bad_bias.json()["error"]["param"] == "logit_bias"


def test_logit_bias_and_logprobs(client):
    banned = client.chat.completions.create(
        model="tiny", messages=USER, max_tokens=8, seed=2, logprobs=True, top_logprobs=3
    )
    entries = banned.choices[0].logprobs.content
    assert len(entries) == 8 and all(len(e.top_logprobs) == 3 for e in entries)
    first = entries[0]
    assert first.logprob <= 0 and bytes(first.bytes).decode(errors="replace")
    # a huge positive bias on one token id makes it the only choice
    forced = client.chat.completions.create(
        model="tiny", messages=USER, max_tokens=4, seed=2, logit_bias={"300": 100}
    )
    tokens = forced.choices[0].message.content
    assert len(set(tokens)) <= 2, tokens


@pytest.mark.parametrize("key", ["\u00b2", "9" * 5000, "-1", "2147483648", "\u0661", " 7"])
def test_logit_bias_keys_must_be_decimal_token_ids(daemon, key):
    body = {"model": "tiny", "messages": USER, "max_tokens": 1, "logit_bias": {key: 1}}
    response = httpx.post(daemon.url + "/v1/chat/completions", json=body)
    assert response.status_code == 400, response.text  # "²".isdigit(), but int("²") fails
    error = response.json()["error"]
    assert error["param"] == "logit_bias" and "token ids (0 to 2147483647)" in error["message"]


def test_logit_bias_takes_at_most_300_entries(client):
    bias = {str(token): 0.5 for token in range(300)}
    assert client.chat.completions.create(model="tiny", messages=USER, max_tokens=1,
                                          logit_bias=bias).choices  # fmt: skip
    with pytest.raises(openai.BadRequestError, match="at most 300 entries, got 301"):
        client.chat.completions.create(
            model="tiny", messages=USER, max_tokens=1, logit_bias={**bias, "300": 1}
        )


def test_a_body_of_millions_of_values_is_a_400_while_the_daemon_answers(tmp_path, monkeypatch):
    """Parsing such a body held the event loop 5 to 14 s; its values are counted in a thread
    (numpy, the GIL let go). The count is held here until the daemon has answered another
    request: were it on the event loop, nothing would be answered until the gate opened."""
    bias = b",".join(b'"%d":1' % token for token in range(1_500_000))  # 16 MB, under the limit
    body = b'{"model": "tiny", "messages": %s, "logit_bias": {%s}}' % (
        json.dumps(USER).encode(),
        bias,
    )
    gate = Gate()
    monkeypatch.setattr(json_budget, "json_separators", gate.wrap(json_budget.json_separators))
    store = make_store(tmp_path / "store", {})
    with serve_daemon_in_thread(tmp_path, store) as url, ThreadPoolExecutor(1) as pool:
        headers = {"content-type": "application/json"}
        path = url + "/v1/chat/completions"
        refused = pool.submit(httpx.post, path, content=body, headers=headers, timeout=120)
        try:
            assert gate.entered.wait(120), "the body's values were never counted"
            assert httpx.get(url + "/", timeout=60).status_code == 200  # while they are
        finally:
            gate.open()
        response = refused.result()
    assert response.status_code == 400
    assert "more than 100,000 JSON values" in response.text, response.text


def test_a_24_mb_non_ascii_prompt_is_the_context_400_not_a_500(daemon):
    prompt = "\u00e9" * 12_000_000  # 24 MB of UTF-8: once a 72 MB frame of ASCII escapes
    body = json.dumps({"model": "tiny", "prompt": prompt, "max_tokens": 1}, ensure_ascii=False)
    response = httpx.post(
        daemon.url + "/v1/completions",
        content=body.encode(),
        headers={"content-type": "application/json"},
        timeout=120,
    )
    assert response.status_code == 400, response.text[:300]
    error = response.json()["error"]
    assert error["code"] == "context_length_exceeded"
    floor = int(error["message"].split("the prompt is at least ")[1].split()[0])
    assert floor > 2048 and "context is 2048 tokens" in error["message"]


def test_a_long_chat_message_in_one_character_is_answered_at_once(daemon):
    """8M x "é" through a chat template: counted in the runner without tokenizing it (byte
    fallback made llama.cpp's tokenizer take minutes on it)."""
    body = {"model": "tiny", "messages": [{"role": "user", "content": "\u00e9" * 8_000_000}]}
    data = json.dumps({**body, "stream": False}, ensure_ascii=False).encode()
    response = httpx.post(
        daemon.url + "/api/chat",
        content=data,
        headers={"content-type": "application/json"},
        timeout=60,
    )
    assert response.status_code == 400 and "at least" in response.json()["error"]


def test_legacy_completions(client):
    reply = client.completions.create(
        model="tiny", prompt="Once upon a time", max_tokens=6, seed=1, logprobs=2
    )
    choice = reply.choices[0]
    assert reply.object == "text_completion" and choice.text
    assert len(choice.logprobs.tokens) == 6 and "".join(choice.logprobs.tokens) == choice.text
    streamed = "".join(
        c.choices[0].text
        for c in client.completions.create(
            model="tiny", prompt="Once upon a time", max_tokens=6, seed=1, stream=True
        )
        if c.choices
    )
    assert streamed == choice.text


def test_the_second_turn_reuses_the_cached_prefix(client):
    history = [
        {"role": "system", "content": "You are a helpful assistant. " * 60},
        {"role": "user", "content": "Tell me a story about the sea."},
    ]
    first = client.chat.completions.create(model="tiny", messages=history, max_tokens=8, seed=9)
    history += [
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "And then?"},
    ]
    second = client.chat.completions.create(model="tiny", messages=history, max_tokens=8, seed=9)
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert first.usage.prompt_tokens > 300
    assert cached >= first.usage.prompt_tokens
    assert second.usage.prompt_tokens - cached < 40  # only the new turn was decoded


def test_request_log_lines_are_json_with_timings(daemon, client):
    client.chat.completions.create(model="tiny", messages=USER, max_tokens=3, seed=1)

    def last_chat_line():
        lines = [json.loads(x) for x in daemon.log().splitlines() if x.startswith('{"event": "req')]
        chats = [x for x in lines if x["path"] == "/v1/chat/completions" and x["status"] == 200]
        return chats[-1] if chats and chats[-1]["completion_tokens"] == 3 else None

    assert wait_for(last_chat_line)
    chat = last_chat_line()
    assert chat["model"] == "tiny" and chat["finish_reason"] == "length"
    assert chat["ttft_ms"] > 0 and chat["duration_ms"] >= chat["ttft_ms"]
    assert chat["sampling"] == "host"  # a CPU build samples on the host (backend_sampling auto)


def test_the_daemon_client_streams_chat_and_raises_typed_errors(daemon):
    from localllm.daemon.client import Client, DaemonUnavailable, ModelNotFound

    with Client(daemon.url) as client:
        assert client.health().status == "ok"
        assert "tiny" in [m.id for m in client.list_openai_models()]
        chunks = list(client.openai_chat("tiny", USER, max_tokens=5, seed=1))
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert client.chat_once("tiny", USER, max_tokens=3).usage.completion_tokens == 3
        with pytest.raises(ModelNotFound, match="localllm pull"):
            list(client.openai_chat("missing", USER))
    with pytest.raises(DaemonUnavailable), Client("http://127.0.0.1:9", timeout=2) as dead:
        dead.health()


def test_a_hostile_chat_template_is_a_clear_500_and_the_daemon_lives_on(client):
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="hostile", messages=USER, max_tokens=2)
    assert caught.value.body["code"] == "template_error"
    assert "sandbox forbids" in caught.value.body["message"]
    assert client.chat.completions.create(model="tiny", messages=USER, max_tokens=2).choices


def test_the_modelfile_system_and_go_template_are_applied(client):
    plain = client.chat.completions.create(model="tiny", messages=USER, max_tokens=1)
    pirate = client.chat.completions.create(model="pirate", messages=USER, max_tokens=1)
    own_system = [{"role": "system", "content": "Be brief."}, *USER]
    overridden = client.chat.completions.create(model="pirate", messages=own_system, max_tokens=1)
    # the SYSTEM text adds its tokens; a request's own system message replaces it
    assert pirate.usage.prompt_tokens > plain.usage.prompt_tokens + 8
    assert overridden.usage.prompt_tokens < pirate.usage.prompt_tokens
