"""The incremental tool-call parser: whatever the chunk boundaries, the same content and the
same calls, streamed as soon as they are known, and the same as parsing the whole output."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from localllm.daemon.inference.json_scan import JsonValue
from localllm.daemon.inference.tool_call_parser import ToolCallParser, parse_tool_calls
from localllm.daemon.inference.tool_calls import ToolCall, ToolCallDelta

NAMES = ["get_weather", "get_time"]
WEATHER_ARGS = '{"city": "Oslo, \\"the\\" {capital}", "unit": "C"}'
TIME_ARGS = '{"zone": "UTC"}'

# (model output, content that streams, [(name, arguments text)] of the calls)
OUTPUTS = {
    "a bare call": (
        f' {{"name": "get_weather", "arguments": {WEATHER_ARGS}}}\n',
        "",
        [("get_weather", WEATHER_ARGS)],
    ),
    "a list of two calls": (
        f'[{{"name": "get_time", "arguments": {TIME_ARGS}}}, '
        f'{{"name": "get_weather", "arguments": {WEATHER_ARGS}}}]',
        "",
        [("get_time", TIME_ARGS), ("get_weather", WEATHER_ARGS)],
    ),
    "two blocks": (
        f'<tool_call>\n{{"name": "get_time", "arguments": {TIME_ARGS}}}\n</tool_call>\n'
        f'<tool_call>\n{{"name": "get_weather", "arguments": {WEATHER_ARGS}}}\n</tool_call>',
        "",
        [("get_time", TIME_ARGS), ("get_weather", WEATHER_ARGS)],
    ),
    "text then a call": (
        f'Let me check <that>.\n<tool_call>\n{{"name": "get_time", "arguments": {TIME_ARGS}}}'
        "\n</tool_call>\n",
        "Let me check <that>.",
        [("get_time", TIME_ARGS)],
    ),
    "a call then text": (
        f'<tool_call>{{"name": "get_time", "arguments": {TIME_ARGS}}}</tool_call>\nDone.\n',
        "\nDone.\n",
        [("get_time", TIME_ARGS)],
    ),
    "a false start": ('{"not": "a call"} and more\n', '{"not": "a call"} and more\n', []),
    "an unknown tool": (
        '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',
        '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',
        [],
    ),
    "arguments that are no object": (
        '{"name": "get_time", "arguments": 5}',
        '{"name": "get_time", "arguments": 5}',
        [],
    ),
    "an unterminated block": (
        f'<tool_call>{{"name": "get_time", "arguments": {TIME_ARGS}}}\n</tool_',
        "",
        [("get_time", TIME_ARGS)],
    ),
    "a block cut off in its arguments": (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Os',
        "",
        [("get_weather", '{"city": "Os')],
    ),
    "a block cut off before its name ends": (
        '<tool_call>\n{"name": "get_wea',
        '<tool_call>\n{"name": "get_wea',
        [],
    ),
    "arguments before the name, and as a JSON string": (
        f'{{"arguments": {TIME_ARGS}, "name": "get_time"}}\n'
        '{"name": "get_weather", "parameters": "{\\"city\\": \\"Rome\\"}"}',
        "",
        [("get_time", TIME_ARGS), ("get_weather", '{"city": "Rome"}')],
    ),
    "a list cut off after a call": (
        f'[{{"name": "get_time", "arguments": {TIME_ARGS}}},\n ',
        "",
        [("get_time", TIME_ARGS)],
    ),
    "a list cut off in its second call's name": (
        f'[{{"name": "get_time", "arguments": {TIME_ARGS}}}, {{"name": "get_ti',
        ' {"name": "get_ti',  # what it was going to be is unknown: content, as written
        [("get_time", TIME_ARGS)],
    ),
    "a call without arguments": ('{"name": "get_time"}', "", [("get_time", "{}")]),
    "plain text": ("Hi <b>there</b> {x} [y]  \n", "Hi <b>there</b> {x} [y]  \n", []),
}


def stream(chunks: list[str]) -> tuple[list[str | ToolCallDelta], list[ToolCall]]:
    parser = ToolCallParser(NAMES)
    pieces = [piece for chunk in chunks for piece in parser.feed(chunk)]
    rest, calls = parser.finish()
    return pieces + rest, calls


def reassembled(pieces: list[str | ToolCallDelta]) -> tuple[str, list[ToolCall]]:
    """Content and calls as a client rebuilds them from the pieces (checking their shape)."""
    content = "".join(p for p in pieces if isinstance(p, str))
    calls: list[ToolCall] = []
    for piece in (p for p in pieces if isinstance(p, ToolCallDelta)):
        if piece.id is not None:  # a call's first piece: the next index, an id and a name
            assert piece.index == len(calls) and piece.name and piece.arguments == ""
            calls.append(ToolCall(piece.id, piece.name, ""))
        else:
            assert piece.name is None and piece.arguments and piece.index == len(calls) - 1
            last = calls[-1]
            calls[-1] = ToolCall(last.id, last.name, last.arguments + piece.arguments)
    return content, calls


def splits(text: str):
    yield [text]
    yield list(text)
    for cut in range(1, len(text)):
        yield [text[:cut], text[cut:]]


@pytest.mark.parametrize("output", OUTPUTS.values(), ids=OUTPUTS.keys())
def test_every_chunk_boundary_gives_the_same_content_and_calls(output):
    text, content, expected = output
    for chunks in splits(text):
        pieces, calls = stream(chunks)
        assert reassembled(pieces) == (content, calls), chunks
        assert [(c.name, c.arguments) for c in calls] == expected, chunks
        assert all(c.id.startswith("call_") for c in calls)
    whole = parse_tool_calls(text, NAMES)
    assert [(c.name, c.arguments) for c in whole] == expected


@given(st.lists(st.integers(min_value=1, max_value=len(OUTPUTS["two blocks"][0])), max_size=8))
def test_any_chunking_of_two_calls(cuts):
    text, content, expected = OUTPUTS["two blocks"]
    bounds = [0, *sorted(set(cuts)), len(text)]
    pieces, calls = stream([text[a:b] for a, b in itertools.pairwise(bounds)])
    assert reassembled(pieces) == (content, calls)
    assert [(c.name, c.arguments) for c in calls] == expected


def test_a_call_streams_before_it_ends_and_text_streams_at_once():
    parser = ToolCallParser(NAMES)
    assert parser.feed("Sure") == ["Sure"]
    assert parser.feed(" <tool") == []  # maybe a call: held
    assert parser.feed('_call>{"name": "get_time", ') == []  # the name: not yet sure it calls
    [header, first] = parser.feed('"arguments": {"zo')
    assert (header.index, header.name, header.arguments) == (0, "get_time", "")
    assert header.id and first == ToolCallDelta(0, arguments='{"zo')
    assert parser.feed('ne": "UTC"}') == [ToolCallDelta(0, arguments='ne": "UTC"}')]
    assert parser.feed("}</tool_call>") == []
    rest, [call] = parser.finish()
    assert rest == [] and call == ToolCall(header.id, "get_time", TIME_ARGS)


def test_a_false_start_is_content_as_soon_as_it_cannot_be_a_call():
    parser = ToolCallParser(NAMES)
    assert parser.feed('{"name": "nope", ') == ['{"name": "nope",']  # the space waits
    assert parser.feed('"arguments": {}}') == [' "arguments": {}}']
    assert parser.finish() == ([], [])
    tag = ToolCallParser(NAMES)
    assert tag.feed("a <tool") == ["a"] and tag.feed("box>") == [" <toolbox>"]


def test_broken_arguments_after_a_call_began_stay_what_was_streamed():
    text = '{"name": "get_time", "arguments": {"zone": UTC}}'
    pieces, [call] = stream(list(text))
    assert call.arguments == '{"zone": UTC}' and reassembled(pieces)[1] == [call]
    with pytest.raises(ValueError):
        json.loads(call.arguments)


@pytest.mark.parametrize(
    ("text", "end"),
    [('"a\\"}" x', 6), ("[1, {}] x", 7), ("12, x", 2), ("true}", 4), ("{}", 2)],
)
def test_json_value_ends_where_the_value_ends(text, end):
    value = JsonValue()
    taken = 0
    for char in text:
        if value.done or not value.feed(char):
            break
        taken += 1
    assert value.text == text[:end] and taken == end
