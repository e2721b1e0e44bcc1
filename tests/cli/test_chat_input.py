"""Reading chat input: triple-quoted blocks, slash commands, typed parameter values."""

from __future__ import annotations

import pytest

from localllm.app.cli.chat_input import (
    MultilineInput,
    convert_parameter,
    parse_command,
    parse_options,
)


def feed_all(lines):
    collector, entries = MultilineInput(), []
    for line in lines:
        entry = collector.feed(line)
        if entry is not None:
            entries.append(entry)
    return entries, collector


def test_plain_lines_are_entries():
    assert feed_all(["hello", "", "/bye"])[0] == ["hello", "", "/bye"]


def test_a_block_runs_until_the_closing_quotes():
    entries, collector = feed_all(['"""Dear model,', "  two lines", 'end"""', "next"])
    assert entries == ["Dear model,\n  two lines\nend", "next"]
    assert not collector.in_block


def test_quotes_on_their_own_lines_add_no_blank_lines():
    entries, _ = feed_all(['"""', "first", "second", '"""'])
    assert entries == ["first\nsecond"]


def test_an_open_block_is_reported_and_can_be_reset():
    entries, collector = feed_all(['"""start', "more"])
    assert entries == [] and collector.in_block
    collector.reset()
    assert collector.feed("fresh") == "fresh"


def test_a_one_line_block_and_quotes_inside_a_message():
    assert feed_all(['"""all in one"""'])[0] == ["all in one"]
    text = 'use """docstrings""" in Python'
    assert feed_all([text])[0] == [text]  # only a message that starts with them opens a block


def test_set_system_takes_a_block():
    entries, _ = feed_all(['/set system """You are', "a pirate.", '"""'])
    command = parse_command(entries[0])
    assert command.name == "set" and command.words[0] == "system"
    assert command.rest_after(1) == "You are\na pirate."


def test_parse_command():
    assert parse_command("hello /there") is None
    command = parse_command("/set parameter temperature 0.5")
    assert command.name == "set"
    assert command.words == ("parameter", "temperature", "0.5")
    assert command.rest_after(1) == "temperature 0.5"
    assert command.rest_after(2) == "0.5"
    assert command.rest_after(5) == ""
    assert parse_command("/BYE").name == "bye"
    assert parse_command("/?").name == "?"
    assert parse_command("/? shortcuts").words == ("shortcuts",)


@pytest.mark.parametrize(
    ("name", "words", "value"),
    [
        ("temperature", ["0.5"], 0.5),
        ("num_ctx", ["8192"], 8192),
        ("penalize_newline", ["false"], False),
        ("stop", ["<|im_end|>", "User:"], ["<|im_end|>", "User:"]),
        ("seed", ["-1"], -1),
    ],
)
def test_convert_parameter(name, words, value):
    assert convert_parameter(name, words) == value


@pytest.mark.parametrize(
    ("name", "words", "message"),
    [
        ("temprature", ["1"], "unknown parameter 'temprature'"),
        ("num_ctx", ["big"], "num_ctx needs an integer, got 'big'"),
        ("top_p", [], "top_p needs a value"),
        ("penalize_newline", ["maybe"], "true or false"),
    ],
)
def test_convert_parameter_errors(name, words, message):
    with pytest.raises(ValueError, match=message):
        convert_parameter(name, words)


def test_parse_options_collects_stops():
    pairs = [["temperature", "0"], ["stop", "a"], ["stop", "b"], ["num_predict", "8"]]
    assert parse_options(pairs) == {"temperature": 0.0, "stop": ["a", "b"], "num_predict": 8}
    assert parse_options(None) == {}
