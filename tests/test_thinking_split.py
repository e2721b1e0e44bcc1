"""The streaming thinking splitters: whatever the chunk boundaries, no piece of a marker leaks
and the thinking and answer come out the same."""

from __future__ import annotations

import itertools
import json

import pytest

from localllm.daemon.inference.thinking import HARMONY, MISTRAL, THINK_TAGS
from localllm.daemon.inference.thinking_split import HarmonySplitter, TagSplitter, splitter_for
from localllm.daemon.inference.tool_call_parser import parse_tool_calls

TAGGED = "<think>\nI weigh a < b and [x].\n</think>\n\nThe answer: a<b.</"
HARMONY_OUT = (
    "<|channel|>analysis<|message|>User says hi; a <|-like text.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>Hello <there>!"
)
HARMONY_MARKERS = ("<|start|>", "<|end|>", "<|channel|>", "<|message|>", "<|constrain|>")


def run(splitter, chunks) -> tuple[str, str, list[tuple[str, str]]]:
    pieces = [splitter.feed(chunk) for chunk in chunks] + [splitter.finish()]
    return "".join(p[0] for p in pieces), "".join(p[1] for p in pieces), pieces


def cuts(text: str):
    """The text in one, two and three chunks, at every possible boundary."""
    yield [text]
    for i in range(len(text) + 1):
        yield [text[:i], text[i:]]
    for i, j in itertools.combinations(range(1, len(text)), 2):
        yield [text[:i], text[i:j], text[j:]]


def leaks(piece: str, markers) -> bool:
    return any(m in piece for m in markers)


@pytest.mark.parametrize("opened", [False, True])
def test_tags_split_the_same_at_every_boundary(opened):
    text = TAGGED.removeprefix("<think>") if opened else TAGGED
    for chunks in cuts(text):
        thinking, answer, pieces = run(TagSplitter("<think>", "</think>", opened), chunks)
        assert thinking == "I weigh a < b and [x]."
        assert answer == "The answer: a<b.</", chunks  # a partial marker at the end is text
        assert not any(leaks(t + a, ("<think>", "</think>")) for t, a in pieces)


def test_tags_one_character_at_a_time_never_send_a_marker_piece():
    splitter = TagSplitter("<think>", "</think>", False)
    sent = [splitter.feed(char) for char in "<think>ab</think>cd"]
    assert "".join(t for t, _ in sent) == "ab" and "".join(a for _, a in sent) == "cd"
    assert all(not a or a in "cd" for _, a in sent) and all(not t or t in "ab" for t, _ in sent)


def test_tags_whitespace_and_stray_markers():
    splitter = TagSplitter("<think>", "</think>", True)
    assert splitter.feed("\n  first \n") == ("first", "")  # trailing space held
    assert splitter.feed(" second\n") == (" \n second", "")
    assert splitter.feed("<think>more</think>\n\n") == ("\nmore", "")  # 2nd opening dropped
    assert splitter.feed("answer </think> on") == ("", "answer  on")  # a stray closing dropped
    assert splitter.finish() == ("", "")


def test_mistral_markers():
    fmt = MISTRAL
    thinking, answer, _ = run(splitter_for(fmt, False), ["[THI", "NK]why[/TH", "INK]because"])
    assert (thinking, answer) == ("why", "because")


def test_a_model_that_does_not_think_gives_only_answer():
    thinking, answer, _ = run(splitter_for(THINK_TAGS, False), ["\n\nJust", " an answer <b>"])
    assert (thinking, answer) == ("", "Just an answer <b>")


def test_end_thinking_flushes_what_was_held_and_switches_to_the_answer():
    splitter = TagSplitter("<think>", "</think>", True)
    assert splitter.feed("cut here </th") == ("cut here", "")
    assert splitter.end_thinking() == (" </th", "")
    assert splitter.feed("\n\nAnswer") == ("", "Answer")
    assert splitter.end_thinking() == ("", "")  # already answering: nothing to do


def test_harmony_splits_the_same_at_every_boundary():
    for chunks in cuts(HARMONY_OUT):
        thinking, answer, pieces = run(HarmonySplitter(False), chunks)
        assert thinking == "User says hi; a <|-like text.", chunks
        assert answer == "Hello <there>!", chunks
        assert not any(leaks(t + a, HARMONY_MARKERS) for t, a in pieces)


def test_harmony_opened_in_the_prompt_and_ended_early():
    splitter = splitter_for(HARMONY, True)
    assert splitter.feed("thinking <|e") == ("thinking ", "")
    assert splitter.end_thinking() == ("<|e", "")
    assert splitter.feed("the answer") == ("", "the answer")


def test_harmony_text_without_a_header_is_the_answer():
    thinking, answer, _ = run(HarmonySplitter(False), ["  plain", " words"])
    assert (thinking, answer) == ("", "plain words")


def test_harmony_tool_call_becomes_a_tool_call_block():
    out = (
        "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant"
        '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Oslo"}'
    )
    for chunks in ([out], [out[:60], out[60:95], out[95:]]):
        thinking, answer, _ = run(HarmonySplitter(False), chunks)
        assert thinking == "Need weather."
        [call] = parse_tool_calls(answer, ["get_weather"])
        assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Oslo"}
