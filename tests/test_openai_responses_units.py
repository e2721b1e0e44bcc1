"""The Responses API's parts without a daemon: input items -> template messages, the bounded
response store, and the stream's events built from a generation's deltas (thinking and
streamed tool-call pieces included), each event checked against the official SDK's types."""

from __future__ import annotations

import asyncio
import base64
import json

import pydantic
import pytest
from openai.types.responses import Response, ResponseStreamEvent

from localllm.daemon.api import ResponseObject, ResponsesRequest
from localllm.daemon.errors import BadRequestError, NotFoundError
from localllm.daemon.inference import Collected, Delta, Finished, GenerationStats, ToolCallDelta
from localllm.daemon.inference.templates import image_part
from localllm.daemon.inference.tool_calls import ToolCall
from localllm.daemon.server.openai.response_store import ResponseStore, StoredResponse
from localllm.daemon.server.openai.responses_output import ResponseShape
from localllm.daemon.server.openai.responses_stream import ResponseStream
from localllm.daemon.server.openai.responses_translate import responses_turn

EVENT = pydantic.TypeAdapter(ResponseStreamEvent)
STATS = GenerationStats(10, 5, 4, 0.0, 0.0, 0.0, 0.0, 0.0)
DOT = base64.b64encode(b"\x89PNG not really").decode()


def request(**fields) -> ResponsesRequest:
    return ResponsesRequest.model_validate({"model": "m", **fields})


def test_items_become_the_messages_templates_read():
    items = [
        {"role": "developer", "content": "Be brief."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
        {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "t"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
        {"type": "function_call", "call_id": "c1", "name": "a", "arguments": '{"x": 1}'},
        {"type": "function_call", "call_id": "c2", "name": "b", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "one"},
        {
            "type": "function_call_output",
            "call_id": "c9",
            "output": [{"type": "input_text", "text": "?"}],
        },
    ]
    turn = responses_turn(request(input=items, instructions="Rules."), None)
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "a", "arguments": '{"x": 1}'}},
        {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "{}"}},
    ]
    assert turn.job.messages == [
        {"role": "system", "content": "Rules."},
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Let me look."}],
            "thinking": "t",
            "tool_calls": calls,
        },
        {"role": "tool", "tool_call_id": "c1", "name": "a", "content": "one"},
        {"role": "tool", "tool_call_id": "c9", "content": [{"type": "text", "text": "?"}]},
    ]
    assert turn.history == turn.job.messages[1:]  # a follow-up starts without the instructions


def test_request_fields_become_the_job():
    turn = responses_turn(
        request(
            input="Hi",
            tools=[{"type": "function", "name": "f", "parameters": {"type": "object"}}],
            tool_choice={"type": "function", "name": "f"},
            max_output_tokens=9,
            temperature=0.5,
            top_p=0.9,
            reasoning={"effort": "minimal"},
            text={"format": {"type": "json_object"}},
            seed=3,
        ),
        None,
    )
    job = turn.job
    assert job.tools == [
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    ]
    assert job.tool_choice.mode == "function" and job.tool_choice.name == "f"
    assert job.options == {"num_predict": 9, "temperature": 0.5, "top_p": 0.9, "seed": 3}
    assert job.think == "low" and job.json_schema == {"type": "object"}
    assert turn.tools[0]["name"] == "f" and turn.tools[0]["strict"] is None
    assert (
        responses_turn(request(input="Hi", reasoning={"effort": "none"}), None).job.think is False
    )
    assert (
        responses_turn(request(input="Hi", reasoning={"effort": "high"}), None).job.think == "high"
    )
    assert responses_turn(request(input="Hi"), None).job.think is None


def test_a_follow_up_continues_the_stored_conversation_and_its_images():
    earlier = [{"role": "user", "content": [image_part(0), {"type": "text", "text": "What?"}]}]
    response = ResponseObject(id="resp_1", created_at=0, status="completed", model="m")
    previous = StoredResponse.of(
        response, [*earlier, {"role": "assistant", "content": "A dot."}], [b"one"]
    )
    image = {"type": "input_image", "image_url": f"data:image/png;base64,{DOT}"}
    turn = responses_turn(request(input=[{"role": "user", "content": [image]}]), previous)
    assert turn.job.images == [b"one", base64.b64decode(DOT)]
    assert turn.job.messages[-1] == {"role": "user", "content": [image_part(1)]}
    assert turn.job.messages[:2] == [*earlier, {"role": "assistant", "content": "A dot."}]


@pytest.mark.parametrize(
    ("part", "words"),
    [
        ({"type": "input_image", "image_url": "https://example.com/a.png"}, "does not download"),
        ({"type": "input_image", "file_id": "file_1"}, "file_id is not supported"),
        ({"type": "input_audio"}, "'input_audio' is not supported"),
    ],
)
def test_images_come_as_data_urls_only(part, words):
    with pytest.raises(BadRequestError, match=words):
        responses_turn(request(input=[{"role": "user", "content": [part]}]), None)


def stored(number: int, size: int = 0) -> StoredResponse:
    response = ResponseObject(id=f"resp_{number}", created_at=0, status="completed", model="m")
    return StoredResponse.of(response, [{"role": "user", "content": "x" * size}], [])


def test_the_store_keeps_the_newest_within_its_bounds():
    store = ResponseStore(max_count=3, max_bytes=10_000, max_record=8_000)
    for number in range(5):
        store.put(stored(number))
    assert len(store) == 3
    with pytest.raises(NotFoundError, match="resp_1"):
        asyncio.run(store.get("resp_1"))
    assert asyncio.run(store.get("resp_4")).response.id == "resp_4"
    store.put(stored(5, size=6_000))
    store.put(stored(6, size=6_000))  # too big together: the older one goes
    assert len(store) == 1 and asyncio.run(store.get("resp_6"))
    store.put(stored(7, size=20_000))  # bigger than one record may be: not kept
    assert len(store) == 1
    with pytest.raises(NotFoundError, match=r"not stored: its conversation is 0\.0 MiB, over"):
        asyncio.run(store.get("resp_7"))
    asyncio.run(store.delete("resp_6"))
    with pytest.raises(NotFoundError):
        asyncio.run(store.delete("resp_6"))


class Replay:
    """A finished generation's items, replayed (what ``ResponseStream`` iterates)."""

    model = "m"

    def __init__(self, *items: Delta | Finished):
        self._items = list(items)

    def __aiter__(self):
        return self

    async def __anext__(self) -> Delta | Finished:
        if not self._items:
            raise StopAsyncIteration
        return self._items.pop(0)


def streamed(items: list, **fields) -> tuple[list, ResponseStore]:
    store = ResponseStore()
    req = request(input="Hi", **fields)
    stream = ResponseStream(ResponseShape(req, responses_turn(req, None), store))

    async def run() -> list[bytes]:
        return [frame async for frame in stream.events(Replay(*items))]

    events = []
    for frame in asyncio.run(run()):
        name, data = frame.decode().strip().split("\n")
        assert name == "event: " + json.loads(data[6:])["type"]
        events.append(EVENT.validate_python(json.loads(data[6:])))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    return events, store


def test_thinking_text_and_streamed_tool_calls_become_items_in_order():
    call = ToolCall("call_1", "lookup", '{"q": "sea"}')
    events, store = streamed(
        [
            Delta("", thinking="Let me "),
            Delta("", thinking="think."),
            Delta("Looking it up."),
            Delta("", tool_calls=(ToolCallDelta(0, "call_1", "lookup", '{"q": '),)),
            Delta("", tool_calls=(ToolCallDelta(0, arguments='"sea"}'),)),
            Finished("tool_calls", STATS, (call,)),
        ]
    )
    kinds = [e.type for e in events]
    assert kinds.count("response.reasoning_text.delta") == 2
    assert kinds.count("response.function_call_arguments.delta") == 2
    added = [e.item.type for e in events if e.type == "response.output_item.added"]
    assert added == ["reasoning", "message", "function_call"]
    final = events[-1]
    assert final.type == "response.completed"
    reasoning, message, function_call = final.response.output
    assert reasoning.content[0].text == "Let me think." and reasoning.summary == []
    assert message.content[0].text == "Looking it up."
    assert (function_call.call_id, function_call.arguments) == ("call_1", '{"q": "sea"}')
    assert final.response.usage.input_tokens_details.cached_tokens == 4
    kept = asyncio.run(store.get(final.response.id))
    assert kept.messages[-1] == {
        "role": "assistant",
        "content": "Looking it up.",
        "thinking": "Let me think.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"q": "sea"}'},
            }
        ],
    }


def test_calls_that_arrive_only_whole_are_sent_whole():
    calls = (ToolCall("call_a", "f", "{}"), ToolCall("call_b", "g", '{"n": 2}'))
    events, _ = streamed([Finished("tool_calls", STATS, calls)])
    deltas = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert deltas == ["{}", '{"n": 2}']
    output = events[-1].response.output
    assert [(item.call_id, item.name) for item in output] == [("call_a", "f"), ("call_b", "g")]


def test_an_empty_reply_is_one_empty_message_and_a_limit_is_incomplete():
    events, _ = streamed([Finished("length", STATS)])
    final = events[-1]
    assert final.type == "response.incomplete"
    assert final.response.incomplete_details.reason == "max_output_tokens"
    (message,) = final.response.output
    assert message.status == "incomplete" and message.content[0].text == ""


def test_a_whole_answer_with_thinking_parses_as_the_sdks_response():
    req = request(input="Hi", store=False)
    store = ResponseStore()
    shape = ResponseShape(req, responses_turn(req, None), store)
    answer = shape.whole(Replay(), Collected("Hello.", [], Finished("stop", STATS), "Hmm."))
    parsed = Response.model_validate(json.loads(answer.model_dump_json(by_alias=True)))
    assert [item.type for item in parsed.output] == ["reasoning", "message"]
    assert parsed.output_text == "Hello." and parsed.status == "completed"
    assert len(store) == 0  # store: false
