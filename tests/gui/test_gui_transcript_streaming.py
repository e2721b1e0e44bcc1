"""A streaming reply redraws only itself: each frame replaces the last message's part of the
document, never the chat above it, and the reply ends up drawn exactly as a full draw of the
same messages draws it (its text, its links, its formats, its pixels)."""

from __future__ import annotations

from PySide6.QtCore import QUrl

from localllm.app.gui.state.chat.records import Message
from localllm.app.gui.state.chat.transcript_actions import ShowAll, href
from localllm.app.gui.views.transcript import Transcript
from tests.support.qt_text import laid_out, links

_REPLY = (
    "Here is **bold**, `code`, a [link](https://example.com/a) and a table:\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nprint('hi')\n```\n\n" + "more words " * 30
)


def _chat() -> tuple[Message, ...]:
    long_question = "\n".join(f"line {n}" for n in range(80))  # folded, with "Show all"
    messages = [Message("u0", "user", long_question)]
    for i in range(1, 6):
        reply = f"reply {i} with `code`\n\n```python\nx = {i}\n```"
        messages.append(Message(f"a{i}", "assistant", reply, thinking="so" if i == 2 else ""))
        messages.append(Message(f"u{i}", "user", f"question {i}"))
    return tuple(messages)


def _view(qtbot) -> Transcript:
    view = Transcript()
    qtbot.addWidget(view)
    view.resize(640, 480)
    view.show()
    qtbot.waitExposed(view)
    return view


def _stream(qtbot, view: Transcript, chat: tuple[Message, ...], text: str, mark: str) -> Message:
    """One frame of the reply: ``text`` so far and a word that marks this frame, drawn by the
    transcript's own timer."""
    reply = Message("s", "assistant", f"{text} {mark}", thinking="Let me think")
    view.show_messages((*chat, reply), "tiny", True)
    qtbot.waitUntil(lambda: mark in view.toPlainText())
    return reply


def _drawn_alike(qtbot, streamed: Transcript, full: Transcript) -> None:
    for view in (streamed, full):
        qtbot.waitUntil(lambda view=view: laid_out(view))
        view.verticalScrollBar().setValue(view.verticalScrollBar().maximum())  # the same place
    assert streamed.toPlainText() == full.toPlainText()
    assert links(streamed.document()) == links(full.document())
    assert streamed.document().toHtml() == full.document().toHtml()  # formats, boxes' marks
    assert streamed.viewport().grab().toImage() == full.viewport().grab().toImage()


def test_a_streamed_reply_ends_up_drawn_as_a_full_draw_draws_it(qtbot):
    chat = _chat()
    streamed = _view(qtbot)
    streamed.show_messages(chat, "tiny", False)
    _stream(qtbot, streamed, chat, "", "frame0")  # the reply's first frame: a new message
    tail = streamed.document().rootFrame().childFrames()[-1].firstPosition() - 1
    edits: list[int] = []  # where each later frame changed the document
    streamed.document().contentsChange.connect(lambda at, _removed, _added: edits.append(at))
    words = _REPLY.split(" ")
    for n in range(1, len(words), 9):
        _stream(qtbot, streamed, chat, " ".join(words[:n]), f"frame{n}")
    reply = Message("s", "assistant", _REPLY, thinking="Let me think")
    streamed.show_messages((*chat, reply), "tiny", False)  # finished: drawn at once
    assert edits and min(edits) >= tail  # never the chat above the reply
    full = _view(qtbot)
    full.show_messages((*chat, reply), "tiny", False)
    _drawn_alike(qtbot, streamed, full)


def test_a_frame_mid_stream_and_a_change_above_it_draw_as_a_full_draw(qtbot):
    chat = _chat()
    streamed = _view(qtbot)
    streamed.show_messages(chat, "tiny", False)
    for n, text in enumerate(("Here", "Here is **bold**", "and a [link](https://x.org)")):
        reply = _stream(qtbot, streamed, chat, text, f"frame{n}")
    streamed.anchorClicked.emit(QUrl(href(ShowAll("u0"))))  # the first question unfolded
    assert "line 79" in streamed.toPlainText()
    full = _view(qtbot)
    full.anchorClicked.emit(QUrl(href(ShowAll("u0"))))
    full.show_messages((*chat, reply), "tiny", True)
    qtbot.waitUntil(lambda: "frame2" in full.toPlainText())
    _drawn_alike(qtbot, streamed, full)
