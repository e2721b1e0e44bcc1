"""Anthropic requests -> inference jobs, and generations -> Anthropic's events and error shapes
(no daemon needed). The events are read back by the official ``anthropic`` package itself,
over an in-memory transport, so what it accumulates is what a client would see."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from functools import partial

import anthropic
import pydantic
import pytest
from anthropic.types import RawMessageStreamEvent

from localllm.daemon.api import MessagesRequest
from localllm.daemon.api.error_bodies import guard_error_body, shape_for
from localllm.daemon.errors import BadRequestError, ServerBusyError
from localllm.daemon.inference import Delta, Finished, GenerationStats, ToolCallDelta
from localllm.daemon.inference.tool_calls import ToolCall, ToolChoice
from localllm.daemon.server.anthropic.answers import content_out
from localllm.daemon.server.anthropic.events import message_events
from localllm.daemon.server.anthropic.translate import count_job, messages_job
from localllm.daemon.server.errors import anthropic_stream_error
from localllm.daemon.server.sse import guarded

USER = [{"role": "user", "content": "hi"}]
STATS = GenerationStats(30, 7, 20, 0.0, 0.0, 0.0, 0.0, 0.0)
PNG = base64.b64encode(b"\x89PNG not really").decode()


def request(**fields) -> MessagesRequest:
    return MessagesRequest.model_validate(
        {"model": "m", "max_tokens": 9, "messages": USER, **fields}
    )


def test_sampling_fields_become_options_over_the_options_extra():
    job = messages_job(
        request(
            temperature=0.2,
            top_p=0.5,
            top_k=4,
            stop_sequences=["END"],
            options={"seed": 3, "temperature": 0.9, "num_ctx": 512},
            keep_alive="5m",
            metadata={"user_id": "ignored"},
        )
    )
    assert job.options == {
        "seed": 3,
        "num_ctx": 512,
        "temperature": 0.2,
        "top_p": 0.5,
        "top_k": 4,
        "stop": ["END"],
        "num_predict": 9,
    }
    assert job.keep_alive == 300 and job.think is None and job.tool_choice == ToolChoice("none")


def test_a_conversation_becomes_the_messages_templates_read():
    call = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
    }
    result_blocks = [{"type": "text", "text": "rain"}, image]
    job = messages_job(
        request(
            system=[{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Be kind."}],
            messages=[
                {"role": "user", "content": [image, {"type": "text", "text": "Weather?"}]},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "Call it.", "signature": "x"},
                        {"type": "redacted_thinking", "data": "opaque"},
                        {"type": "text", "text": "Let me look."},
                        call,
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "12 C"},
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": result_blocks},
                        {"type": "text", "text": "Thanks"},
                    ],
                },
            ],
        )
    )
    assert job.images == [b"\x89PNG not really"] * 2
    assert job.messages == [
        {"role": "system", "content": "Be brief.\n\nBe kind."},
        {
            "role": "user",
            "content": [{"type": "image", "index": 0}, {"type": "text", "text": "Weather?"}],
        },
        {
            "role": "assistant",
            "content": "Let me look.",
            "reasoning_content": "Call it.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Oslo"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "name": "get_weather", "content": "12 C"},
        {
            "role": "tool",
            "tool_call_id": "toolu_1",
            "name": "get_weather",
            "content": [{"type": "text", "text": "rain"}, {"type": "image", "index": 1}],
        },
        {"role": "user", "content": [{"type": "text", "text": "Thanks"}]},
    ]


def test_tools_tool_choice_and_thinking():
    tool = {"name": "f", "description": "does f", "input_schema": {"type": "object"}}
    job = messages_job(request(tools=[tool], thinking={"type": "enabled", "budget_tokens": 64}))
    assert job.tools == [
        {
            "type": "function",
            "function": {"name": "f", "description": "does f", "parameters": {"type": "object"}},
        }
    ]
    assert job.tool_choice == ToolChoice("auto") and (job.think, job.think_budget) == (True, 64)
    choices = {
        "any": ToolChoice("required"),
        "none": ToolChoice("none"),
        "auto": ToolChoice("auto"),
    }
    for kind, expected in choices.items():
        assert (
            messages_job(request(tools=[tool], tool_choice={"type": kind})).tool_choice == expected
        )
    named = request(tools=[tool], tool_choice={"type": "tool", "name": "f"})
    assert messages_job(named).tool_choice == ToolChoice("function", "f")
    assert messages_job(request(thinking={"type": "disabled"})).think is False
    assert messages_job(request(thinking={"type": "adaptive"})).think is True
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    structured = request(output_config={"format": {"type": "json_schema", "schema": schema}})
    assert messages_job(structured).json_schema == schema
    counted = count_job(request(tools=[tool], stop_sequences=["x"]))
    assert counted.tools == job.tools and "num_predict" not in counted.options


def test_claude_codes_fields_system_messages_anywhere_and_thinking_as_a_wish():
    job = messages_job(
        request(
            system="Be brief.",
            messages=[
                {"role": "user", "content": "Hello"},
                {"role": "system", "content": [{"type": "text", "text": "The cwd is /tmp."}]},
                {"role": "assistant", "content": "Hi"},
                {"role": "system", "content": "Tools changed."},
            ],
            thinking={"type": "adaptive", "display": "omitted"},
            context_management={"edits": []},
            output_config={"effort": "high"},
        )
    )
    assert job.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hello"},
        {"role": "system", "content": "The cwd is /tmp."},
        {"role": "assistant", "content": "Hi"},
        {"role": "system", "content": "Tools changed."},
    ]
    assert (job.think, job.think_optional, job.json_schema) == (True, True, None)
    enabled = messages_job(request(thinking={"type": "enabled", "budget_tokens": 64}))
    assert (enabled.think, enabled.think_budget, enabled.think_optional) == (True, 64, True)


def test_server_tools_are_left_out_with_a_warning():
    tool = {"name": "f", "input_schema": {"type": "object"}}
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    job = messages_job(request(tools=[search, tool], tool_choice={"type": "auto"}))
    assert [t["function"]["name"] for t in job.tools] == ["f"]
    assert job.warnings == [
        "tools[0]: server tool 'web_search' (web_search_20250305) left out: localllm runs no "
        "server tools"
    ]
    assert messages_job(request(tools=[tool])).warnings == []


def test_a_deferred_tool_is_offered_once_a_tool_reference_names_it():
    search = {"name": "ToolSearch", "input_schema": {"type": "object"}}
    fetch = {"name": "WebFetch", "input_schema": {"type": "object"}, "defer_loading": True}
    notes = {"name": "Notes", "input_schema": {"type": "object"}, "defer_loading": True}
    first = messages_job(request(tools=[search, fetch, notes]))
    assert [t["function"]["name"] for t in first.tools] == ["ToolSearch"]
    call = {"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {"query": "web"}}
    found = [{"type": "tool_reference", "tool_name": "WebFetch"}]
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": found}
    later = messages_job(
        request(
            tools=[search, fetch, notes],
            messages=[
                *USER,
                {"role": "assistant", "content": [call]},
                {"role": "user", "content": [result]},
            ],
        )
    )
    assert [t["function"]["name"] for t in later.tools] == ["ToolSearch", "WebFetch"]
    assert later.messages[-1] == {
        "role": "tool",
        "tool_call_id": "toolu_1",
        "name": "ToolSearch",
        "content": [{"type": "text", "text": "Tool WebFetch is loaded."}],
    }


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "image", "source": {"type": "url", "url": "http://x/y.png"}}
                        ],
                    }
                ]
            },
            ["messages[0].content[0]", "'url'", "never downloads images"],
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]},
            ["messages[0].content[0]", "'document'", "text, image and tool_result"],
        ),
        (
            {"messages": [{"role": "assistant", "content": [{"type": "image", "source": {}}]}]},
            ["messages[0].content[0]", "'image'", "text, thinking and tool_use"],
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "text"}]}]},
            ["messages[0].content[0].text must be a string"],
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "t", "content": 5}],
                    }
                ]
            },
            ["messages[0].content[0].content must be a string or a list"],
        ),
        ({"tools": [{"name": "f"}]}, ["tool 'f' needs an input_schema"]),
        ({"tool_choice": {"type": "required"}}, ['{"type": "any"}']),
        ({"thinking": {"type": "enabled", "budget_tokens": 0}}, ["budget_tokens"]),
        ({"thinking": {"type": "enabled"}}, ["budget_tokens"]),
        ({"system": [{"type": "image", "source": {}}]}, ["system.content[0]", "'image'"]),
        (
            {"messages": [{"role": "system", "content": [{"type": "image", "source": {}}]}]},
            ["messages[0].content[0]", "'image'"],
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "x"}]}
                        ],
                    }
                ]
            },
            ["messages[0].content[0].content[0]", "text, image and tool_reference"],
        ),
        ({"output_config": {"format": {"type": "json_schema"}}}, ["output_config.format"]),
    ],
)
def test_bad_requests_say_what_is_wrong(fields, words):
    with pytest.raises(BadRequestError) as caught:
        messages_job(request(**fields))
    for word in words:
        assert word in str(caught.value)


# -- events, read back by the SDK ------------------------------------------------------------
def _http_module():
    """The HTTP library this ``anthropic`` release is built on (httpx, or its successor)."""
    return sys.modules[anthropic.DefaultHttpxClient.__mro__[1].__module__.split(".")[0]]


def events_of(*items: Delta | Finished) -> bytes:
    async def generation():
        for item in items:
            yield item

    async def frames() -> bytes:
        return b"".join([frame async for frame in message_events("msg_1", "m", generation())])

    return asyncio.run(frames())


def sdk_reads(body: bytes):
    """What ``client.messages.stream`` makes of ``body``: its events and final message."""
    http = _http_module()
    answer = partial(
        http.Response, 200, headers={"content-type": "text/event-stream"}, content=body
    )
    client = anthropic.Anthropic(
        api_key="k",
        base_url="http://127.0.0.1:9",
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(transport=http.MockTransport(lambda _: answer())),
    )
    with client.messages.stream(model="m", max_tokens=9, messages=USER) as stream:
        return list(stream), stream.get_final_message()


def wire_events(body: bytes) -> list[dict]:
    events = []
    for frame in body.decode().strip().split("\n\n"):
        name, data = frame.split("\n")
        payload = json.loads(data.removeprefix("data: "))
        assert name == "event: " + payload["type"]
        if payload["type"] != "ping":
            pydantic.TypeAdapter(RawMessageStreamEvent).validate_python(payload)
        events.append(payload)
    return events


def test_thinking_text_and_streamed_tool_call_pieces_become_blocks():
    finished = Finished("tool_calls", STATS, (ToolCall("call_1", "f", '{"a": [1, 2]}'),))
    body = events_of(
        Delta("", thinking="Let me "),
        Delta("", thinking="think."),
        Delta("Calling f."),
        Delta("", tool_calls=(ToolCallDelta(0, "call_1", "f", '{"a": '),)),
        Delta("", tool_calls=(ToolCallDelta(0, arguments="[1, 2]}"),)),
        finished,
    )
    events = wire_events(body)
    assert [e["type"] for e in events] == [
        "message_start",
        "ping",
        *["content_block_start", "content_block_delta", "content_block_delta"],
        *["content_block_delta", "content_block_stop"],  # the signature, then the stop
        *["content_block_start", "content_block_delta", "content_block_stop"],
        *["content_block_start", "content_block_delta", "content_block_delta"],
        *["content_block_stop", "message_delta", "message_stop"],
    ]
    _, message = sdk_reads(body)
    whole = content_out("Let me think.", "Calling f.", finished.tool_calls)
    assert [block.model_dump(exclude_none=True) for block in message.content] == [
        block.model_dump() for block in whole
    ]  # the stream adds up to the whole answer, signature included
    assert message.stop_reason == "tool_use"
    assert (message.usage.input_tokens, message.usage.cache_read_input_tokens) == (10, 20)
    assert message.usage.output_tokens == 7


def test_tool_calls_that_come_whole_at_the_end_stream_as_blocks_too():
    calls = (ToolCall("call_1", "f", '{"a": 1}'), ToolCall("call_2", "g", "{}"))
    _, message = sdk_reads(events_of(Finished("tool_calls", STATS, calls)))
    assert [(b.type, b.id, b.name, b.input) for b in message.content] == [
        ("tool_use", "call_1", "f", {"a": 1}),
        ("tool_use", "call_2", "g", {}),
    ]
    streamed = events_of(
        Delta("", tool_calls=(ToolCallDelta(0, "call_1", "f", '{"a": 1}'),)),
        Finished("tool_calls", STATS, calls[:1]),
    )
    _, message = sdk_reads(streamed)
    assert len(message.content) == 1  # never twice: streamed pieces, then the same call whole


def test_stop_reasons_and_an_empty_answer():
    _, message = sdk_reads(events_of(Finished("stop", STATS, stop_sequence="END")))
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "END")
    assert [(b.type, b.text) for b in message.content] == [("text", "")]
    _, message = sdk_reads(events_of(Delta("x"), Finished("length", STATS)))
    assert (message.stop_reason, message.content[0].text) == ("max_tokens", "x")
    _, message = sdk_reads(events_of(Delta("x"), Finished("stop", STATS)))
    assert (message.stop_reason, message.stop_sequence) == ("end_turn", None)


def test_an_error_mid_stream_is_anthropics_error_event():
    async def failing():
        yield b"event: ping\ndata: {}\n\n"
        raise ServerBusyError("too many requests queued at /home/me/models")

    async def frames() -> list[bytes]:
        errors = partial(anthropic_stream_error, redact=lambda text: text.replace("/home/me", "~"))
        return [frame async for frame in guarded(failing(), errors)]

    *_, last = asyncio.run(frames())
    name, data = last.decode().strip().split("\n")
    assert name == "event: error"
    body = json.loads(data.removeprefix("data: "))
    assert body["type"] == "error" and body["error"]["type"] == "overloaded_error"
    assert "queued at ~/models" in body["error"]["message"]  # redacted, as every error is


def test_error_shapes_follow_the_path():
    assert shape_for("/v1/messages") == shape_for("/v1/messages/count_tokens") == "anthropic"
    assert shape_for("/v1/messagesx") == shape_for("/v1/chat/completions") == "openai"
    assert shape_for("/api/chat") == "native"
    assert guard_error_body("/v1/messages", 401, "no key") == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "no key"},
    }
    assert guard_error_body("/v1/messages", 413, "big")["error"]["type"] == "request_too_large"
    assert guard_error_body("/v1/chat/completions", 401, "no key") == {"error": "no key"}
