"""A thinking model's reasoning in the transcript: one line above the reply that a click opens
and closes, a live "Thinking…" line while it goes on (not an empty reply), and never markup."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from localllm.app.gui.state.chat.records import Message
from localllm.app.gui.state.chat.stats import ReplyStats
from localllm.app.gui.views.transcript import Transcript
from tests.support.qt_text import LINK, click_link, links

THOUGHT = "First, 1009 is odd.\nIt is not divisible by 3, 7, 11, 13, 17, 19, 23, 29 or 31."
QUESTION = Message("q", "user", "Is 1009 prime?")
REPLY = Message(
    "r",
    "assistant",
    "Yes, **1009** is prime.",
    stats=ReplyStats(40, 20.0, 0.1, 2.0, 9),
    thinking=THOUGHT,
    thinking_seconds=3.24,
)


def transcript(qtbot) -> Transcript:
    view = Transcript()
    qtbot.addWidget(view)
    view.resize(640, 420)
    view.show()
    qtbot.waitExposed(view)
    return view


def test_the_thinking_is_one_line_until_clicked_open_and_closed(qtbot):
    view = transcript(qtbot)
    view.show_messages((QUESTION, REPLY), "qwen3", False)
    text = view.toPlainText()
    assert "Thought for 3.2 s · 19 words ▸" in text and "divisible" not in text
    assert text.index("Thought for") < text.index("Yes, 1009 is prime.")
    click_link(qtbot, view, "action:thinking:r")
    text = view.toPlainText()
    assert "Thought for 3.2 s · 19 words ▾" in text
    assert "First, 1009 is odd.\nIt is not divisible by 3" in text  # its lines as written
    assert text.index("divisible") < text.index("Yes, 1009 is prime.")
    click_link(qtbot, view, "action:thinking:r")
    assert "divisible" not in view.toPlainText()


def test_copy_takes_the_answer_without_the_thinking(qtbot):
    view = transcript(qtbot)
    view.show_messages((QUESTION, REPLY), "qwen3", False)
    view.pick("r")  # its actions, as under the pointer
    qtbot.mouseClick(view.message_actions.copy, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == "Yes, **1009** is prime."


def test_while_it_thinks_a_live_line_stands_for_the_reply(qtbot):
    view = transcript(qtbot)
    waiting = Message("r", "assistant", "")
    view.show_messages((QUESTION, waiting), "qwen3", True)
    qtbot.waitUntil(lambda: "…" in view.toPlainText())  # before any token: the usual dots
    thinking = Message("r", "assistant", "", thinking="Let me see", thinking_seconds=1.5)
    view.show_messages((QUESTION, thinking), "qwen3", True)
    qtbot.waitUntil(lambda: "Thinking… 1.5 s · 3 words ▸" in view.toPlainText())
    assert "Let me see" not in view.toPlainText()
    answering = Message("r", "assistant", "Yes", thinking="Let me see", thinking_seconds=2.0)
    view.show_messages((QUESTION, answering), "qwen3", True)
    qtbot.waitUntil(lambda: "Thought for 2.0 s · 3 words ▸" in view.toPlainText())


def test_thinking_is_shown_as_text_never_as_markup(qtbot):
    view = transcript(qtbot)
    crafted = Message("r", "assistant", "ok", thinking=f"{LINK} <b>bold</b> &amp;")
    view.show_messages((QUESTION, crafted), "qwen3", False)
    click_link(qtbot, view, "action:thinking:r")
    assert f"{LINK} <b>bold</b> &amp;" in view.toPlainText()
    assert "x" not in links(view.document())


def test_a_reply_without_thinking_looks_as_before(qtbot):
    view = transcript(qtbot)
    plain = Message("r", "assistant", "Hello")
    view.show_messages((QUESTION, plain), "tiny", False)
    assert "Thought" not in view.toPlainText() and "action:thinking:r" not in links(view.document())
