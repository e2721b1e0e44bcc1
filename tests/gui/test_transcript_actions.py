"""The transcript's typed links, without Qt: every kind of action reads back as written, whatever
its ids hold, and anything that is not exactly one of ours reads as None."""

from __future__ import annotations

from dataclasses import fields
from typing import get_args

import pytest

from localllm.app.gui.state.chat.transcript_actions import (
    Action,
    ContinueReply,
    CopyMessage,
    DecideTool,
    DeleteMessage,
    EditMessage,
    LoadAnyway,
    OpenSource,
    ReadAloud,
    Regenerate,
    ShowAll,
    ShowLess,
    ShowVersion,
    ToggleStats,
    ToggleSummary,
    ToggleThinking,
    href,
    parse,
)

AWKWARD = [
    "a2",
    "with:colons:in:it",
    "with spaces",
    "naïve 日本語 🙂",
    "#fragment",
    "100%",
    "%41%zz",
    "'quoted' \"twice\" <b>&amp;</b>",
    "slash/and?query=1&x",
    "",
]


def _every_action(text: str) -> list[Action]:
    return [
        CopyMessage(text),
        EditMessage(text),
        DeleteMessage(text),
        ReadAloud(text),
        ContinueReply(text),
        Regenerate(),
        LoadAnyway(),
        ShowVersion(text, 3),
        DecideTool(text, "approve"),
        DecideTool(text, "always"),
        DecideTool(text, "deny"),
        ShowAll(text),
        ShowLess(text),
        ToggleSummary(),
        OpenSource(text, 12),
        ToggleThinking(text),
        ToggleStats(text),
    ]


def test_the_list_above_has_every_kind():
    assert {type(a) for a in _every_action("x")} == set(get_args(Action))


@pytest.mark.parametrize("text", AWKWARD)
def test_every_action_reads_back_as_written(text):
    for action in _every_action(text):
        link = href(action)
        assert parse(link) == action, link
        assert link.count(":") == 1 + len(fields(action))  # the arguments never split


@pytest.mark.parametrize("text", AWKWARD)
def test_a_link_needs_no_escaping_in_html(text):
    for action in _every_action(text):
        assert not set(href(action)) & set("'\"<>& #")


def test_plain_ids_read_as_they_always_did():
    assert href(ShowVersion("a2", 1)) == "action:version:a2:1"
    assert href(DecideTool("c1", "deny")) == "action:tool:c1:deny"
    assert href(LoadAnyway()) == "action:load_anyway"
    assert parse("action:source:reply-1:2") == OpenSource("reply-1", 2)


@pytest.mark.parametrize(
    "link",
    [
        "",
        "action",
        "action:",
        "action:unknown:x",
        "Action:copy:x",
        "http://example.com",
        "copy:0:1",
        "action:copy",  # an argument missing
        "action:copy:a:b",  # one too many
        "action:regenerate:",
        "action:version:a",
        "action:version:a:x",
        "action:version:a:-1",
        "action:version:a:1.5",
        "action:version:a:\u0661",  # a digit, but not an ASCII one
        "action:source:r:",
        "action:tool:c1:maybe",
        "action:tool:c1",
        "action:copy:%",
        "action:copy:%zz",
        "action:copy:%ff",  # not UTF-8
        "action:copy:%C3",  # half a character
        "action::",
        ":::",
    ],
)
def test_anything_else_reads_as_none(link):
    assert parse(link) is None


def test_an_action_cannot_be_built_wrong():
    with pytest.raises(ValueError):
        DecideTool("c1", "maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ShowVersion("a", -1)
