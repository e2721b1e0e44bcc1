"""The transcript on its own, fed plain messages: it follows new content while the user is at
the end (also when its width changes and Qt lays the document out again), leaves a user who
scrolled up where they are, folds very long messages, and offers the reply's versions and
actions."""

from __future__ import annotations

import base64

import pytest
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QUrl
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QAbstractSlider

from app.gui.state.chat.records import Message
from app.gui.state.chat.stats import ReplyStats
from app.gui.views.transcript import Transcript
from tests.support.qt_text import laid_out


def _chat(turns: int, words: int = 60) -> tuple[Message, ...]:
    messages = []
    for i in range(turns):
        messages.append(Message(f"u{i}", "user", f"question {i}"))
        reply = "\n\n".join(f"paragraph {j} of reply {i}: " + "word " * words for j in range(4))
        messages.append(Message(f"a{i}", "assistant", reply))
    return tuple(messages)


@pytest.fixture
def transcript(qtbot):
    view = Transcript()
    qtbot.addWidget(view)
    view.resize(640, 420)
    view.show()
    qtbot.waitExposed(view)
    return view


def _at_end(view: Transcript) -> bool:
    bar = view.verticalScrollBar()
    return bar.maximum() > 0 and bar.value() == bar.maximum()


def _settled(qtbot, view: Transcript) -> None:
    """Until Qt's lazy layout has caught up with what the transcript drew."""
    qtbot.waitUntil(lambda: laid_out(view))


def test_a_new_message_and_a_streaming_reply_are_followed(qtbot, transcript):
    messages = _chat(12)
    transcript.show_messages(messages, "tiny", False)
    _settled(qtbot, transcript)
    assert _at_end(transcript)
    messages += (Message("u-new", "user", "and now?"),)
    transcript.show_messages(messages, "tiny", False)
    text = ""
    for n in range(30):
        text += f"token{n} " + ("\n\n" if n % 5 == 4 else "")
        transcript.show_messages((*messages, Message("streaming", "assistant", text)), "tiny", True)
        qtbot.wait(15)  # a stream's pace: some tokens come within one frame, some do not
    qtbot.waitUntil(lambda: "token29" in transcript.toPlainText())  # the coalesced last draw
    _settled(qtbot, transcript)
    assert _at_end(transcript)


def test_a_narrower_view_stays_at_the_end(qtbot, transcript):
    """Opening the chat settings takes width from the transcript; the document grows taller
    and used to be left scrolled to the middle."""
    transcript.show_messages(_chat(12), "tiny", False)
    _settled(qtbot, transcript)
    assert _at_end(transcript)
    before = transcript.verticalScrollBar().maximum()
    transcript.resize(380, 420)
    _settled(qtbot, transcript)
    assert transcript.verticalScrollBar().maximum() > before  # it did grow
    assert _at_end(transcript)


def test_a_user_who_scrolled_up_is_not_pulled_down(qtbot, transcript):
    messages = _chat(12)
    transcript.show_messages(messages, "tiny", False)
    _settled(qtbot, transcript)
    bar = transcript.verticalScrollBar()
    bar.triggerAction(QAbstractSlider.SliderAction.SliderToMinimum)  # as the user scrolls
    bar.triggerAction(QAbstractSlider.SliderAction.SliderPageStepAdd)
    reading = bar.value()
    assert 0 < reading < bar.maximum()
    for n in range(5):
        more = (Message(f"late{n}", "assistant", "more words " * 40),)
        transcript.show_messages(messages + more, "tiny", n < 4)
        qtbot.wait(50)  # a stream's pace: each update coalesced into a later draw
    _settled(qtbot, transcript)
    assert bar.value() == reading
    transcript.follow_end()  # the user sends a message: back to the end
    _settled(qtbot, transcript)
    assert _at_end(transcript)


def test_very_long_messages_are_folded_until_show_all(qtbot, transcript):
    pasted = "\n".join(f"log line {i}" for i in range(200))
    transcript.show_messages((Message("u", "user", pasted),), "tiny", False)
    shown = transcript.toPlainText()
    assert "log line 29" in shown and "log line 30" not in shown
    assert "Show all (170 more lines)" in shown
    _settled(qtbot, transcript)
    reading = transcript.verticalScrollBar().value()
    transcript.anchorClicked.emit(QUrl("action:unfold:u"))
    assert "log line 199" in transcript.toPlainText() and "Show less" in transcript.toPlainText()
    _settled(qtbot, transcript)
    assert transcript.verticalScrollBar().value() == reading  # read on from where it opened
    transcript.anchorClicked.emit(QUrl("action:fold:u"))
    assert "log line 199" not in transcript.toPlainText()


def test_a_reply_offers_its_versions_continue_and_delete(qtbot, transcript):
    cut = ReplyStats(12, 30.0, 0.1, 0.5, 4, "length")
    first = Message("a1", "assistant", "first try", stats=ReplyStats(3, 30.0, 0.1, 0.2, 4))
    reply = Message("a2", "assistant", "second try", stats=cut).with_versions(first.versions)
    transcript.show_messages((Message("u", "user", "hi"), reply), "tiny", False)
    text = transcript.toPlainText()
    assert "\u2039 2/2 \u203a" in text and "Continue" in text and "Delete" in text
    with qtbot.waitSignal(transcript.version_requested) as flipped:
        transcript.anchorClicked.emit(QUrl("action:version:a2:0"))
    assert flipped.args == ["a2", 0]
    with qtbot.waitSignal(transcript.continue_requested) as continued:
        transcript.anchorClicked.emit(QUrl("action:continue:a2"))
    assert continued.args == ["a2"]
    with qtbot.waitSignal(transcript.delete_requested) as deleted:
        transcript.anchorClicked.emit(QUrl("action:delete:u"))
    assert deleted.args == ["u"]
    finished = Message("a3", "assistant", "done", stats=ReplyStats(3, 30.0, 0.1, 0.2, 4))
    transcript.show_messages((Message("u", "user", "hi"), finished), "tiny", False)
    assert "Continue" not in transcript.toPlainText()  # it ended on its own


def test_an_attached_picture_is_drawn_in_its_message(qtbot, transcript):
    """The message's <img> and the transcript's loader must agree on the URL: they once did
    not, and every attached picture showed as a broken-image icon."""
    picture = QImage(40, 30, QImage.Format.Format_RGB32)
    picture.fill(QColor("orange"))
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    assert picture.save(buffer, "PNG")
    encoded = base64.b64encode(bytes(data)).decode()
    transcript.show_messages((Message("u", "user", "what is this?", (encoded,)),), "tiny", False)
    _settled(qtbot, transcript)
    shown = transcript.viewport().grab().toImage()
    orange = QColor("orange").rgb()
    drawn = sum(shown.pixel(x, y) == orange for x in range(shown.width()) for y in range(0, 120, 2))
    assert drawn >= 40 * 15 // 2  # the whole 40x30 thumbnail, on every other row
