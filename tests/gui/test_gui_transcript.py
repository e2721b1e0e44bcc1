"""The transcript on its own, fed plain messages: it follows new content while the user is at
the end (also when its width changes and Qt lays the document out again), leaves a user who
scrolled up where they are, folds very long messages, and offers the reply's versions and
actions."""

from __future__ import annotations

import base64

import pytest
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPoint, Qt, QUrl
from PySide6.QtGui import QColor, QGuiApplication, QImage
from PySide6.QtWidgets import QAbstractSlider, QLineEdit, QVBoxLayout, QWidget

from localllm.app.gui.state.chat.records import Message
from localllm.app.gui.state.chat.stats import ReplyStats
from localllm.app.gui.views.transcript import Transcript
from tests.support.qt_text import click_link, laid_out


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
    assert "\u2039 2/2 \u203a" in text and "Continue" in text
    assert "Delete" not in text and "Copy" not in text  # actions are buttons, not text
    transcript.pick("a2")
    bar = transcript.message_actions
    assert bar.isVisible() and bar.version.text() == "2/2" and bar.regenerate.isVisible()
    with qtbot.waitSignal(transcript.version_requested) as flipped:
        qtbot.mouseClick(bar.back, Qt.MouseButton.LeftButton)
    assert flipped.args == ["a2", 0]
    with qtbot.waitSignal(transcript.continue_requested) as continued:
        transcript.anchorClicked.emit(QUrl("action:continue:a2"))
    assert continued.args == ["a2"]
    transcript.pick("u")
    assert bar.edit.isVisible() and not bar.regenerate.isVisible()
    with qtbot.waitSignal(transcript.delete_requested) as deleted:
        qtbot.mouseClick(bar.delete, Qt.MouseButton.LeftButton)
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


def test_the_actions_follow_the_pointer_from_message_to_message(qtbot, transcript):
    transcript.show_messages(_chat(1, words=4), "tiny", False)
    _settled(qtbot, transcript)
    assert not transcript.message_actions.isVisible()
    rects = transcript._message_rects()
    for message_id, rect in zip(("u0", "a0"), rects, strict=True):
        point = QPoint(int(rect.center().x()), int(rect.center().y()))
        qtbot.mouseMove(transcript.viewport(), point)
        qtbot.waitUntil(lambda m=message_id: transcript.active_message() == m)
        bar = transcript.message_actions.geometry()
        assert rect.top() <= bar.center().y() <= rect.bottom()  # over that message


def test_the_actions_are_reached_with_the_keyboard(qtbot):
    """Tab into the conversation picks the last message, Alt+Up the one before, and Tab goes
    to its buttons: no mouse needed to copy or edit."""
    window = QWidget()
    before = QLineEdit(window)
    transcript = Transcript(window)
    column = QVBoxLayout(window)
    column.addWidget(before)
    column.addWidget(transcript)
    qtbot.addWidget(window)
    window.resize(640, 480)
    window.show()
    with qtbot.waitActive(window):
        window.activateWindow()
    code = Message("a1", "assistant", "Like this:\n\n```python\nprint(1)\n```")
    transcript.show_messages((*_chat(2, words=4)[:3], code), "tiny", False)  # a link inside
    _settled(qtbot, transcript)
    before.setFocus()
    qtbot.keyClick(before, Qt.Key.Key_Tab)
    assert transcript.hasFocus()
    qtbot.waitUntil(lambda: transcript.active_message() == "a1")
    qtbot.keyClick(transcript, Qt.Key.Key_Up, Qt.KeyboardModifier.AltModifier)
    assert transcript.active_message() == "u1"
    assert transcript.message_actions.edit.isVisible()  # a question can be edited
    qtbot.keyClick(transcript, Qt.Key.Key_Tab)
    copy = transcript.message_actions.copy
    assert copy.hasFocus() and copy.accessibleName() == "Copy"
    qtbot.keyClick(copy, Qt.Key.Key_Space)
    assert QGuiApplication.clipboard().text() == "question 1"
    qtbot.keyClick(copy, Qt.Key.Key_Tab)
    assert transcript.message_actions.edit.hasFocus()
    qtbot.keyClick(transcript.message_actions.edit, Qt.Key.Key_Tab)
    assert transcript.message_actions.delete.hasFocus()
    qtbot.keyClick(transcript.message_actions.delete, Qt.Key.Key_Tab)
    assert before.hasFocus()  # on to the next control, not into the reply's Copy link
    with qtbot.waitSignal(transcript.edit_requested) as edit:
        qtbot.keyClick(transcript.message_actions.edit, Qt.Key.Key_Space)
    assert edit.args == ["u1", "question 1"]


def test_a_code_block_names_its_language_and_copies_its_code(qtbot, transcript):
    code = 'def hello():\n    print("hi")\n'
    reply = Message("a", "assistant", f"Here:\n\n```python\n{code}```\n\nDone.")
    transcript.show_messages((Message("u", "user", "code?"), reply), "tiny", False)
    _settled(qtbot, transcript)
    shown = transcript.toPlainText()
    assert "python" in shown and "Copy" in shown
    QGuiApplication.clipboard().clear()
    with qtbot.waitSignal(transcript.copied) as told:
        click_link(qtbot, transcript, "copy:a:0")  # the block's Copy, clicked where it is drawn
    assert QGuiApplication.clipboard().text() == code
    assert told.args == ["Code copied"]


def test_the_users_words_sit_in_a_round_cornered_bubble(qtbot, transcript):
    from PySide6.QtGui import QTextTable

    from localllm.app.gui.design.tokens import LIGHT

    transcript.show_messages((Message("u", "user", "a question in a bubble"),), "tiny", False)
    _settled(qtbot, transcript)
    table = transcript.document().rootFrame().childFrames()[0].childFrames()[0]
    assert isinstance(table, QTextTable)
    start = transcript.cursorRect(table.cellAt(0, 0).firstCursorPosition())
    shown = transcript.viewport().grab().toImage()
    bubble = QColor(LIGHT.bubble).rgb()
    assert shown.pixel(start.left() - 5, start.center().y()) == bubble  # inside, before the text
    assert shown.pixel(start.left() - 10, start.top() - 10) != bubble  # the corner is round
    assert start.left() > transcript.viewport().width() // 2  # on the right, as a reply is not


def _pixel(view: Transcript, x: float, y: float) -> int:
    return view.viewport().grab().toImage().pixel(int(x), int(y))


def test_a_reply_sits_in_a_round_cornered_card_and_its_code_in_a_round_block(qtbot, transcript):
    from PySide6.QtGui import QTextTable

    from localllm.app.gui.design.tokens import LIGHT

    reply = Message("a", "assistant", "Here:\n\n```python\nx = 1\n```\n\nDone.")
    transcript.show_messages((reply,), "tiny", False)
    _settled(qtbot, transcript)
    message = transcript.document().rootFrame().childFrames()[0]
    card = message.childFrames()[0]
    code = card.childFrames()[0]
    assert isinstance(card, QTextTable) and isinstance(code, QTextTable)
    assert card.format().background().style() == Qt.BrushStyle.NoBrush  # painted round by us
    first = transcript.cursorRect(card.cellAt(0, 0).firstCursorPosition())  # the model's name
    left, top = first.left() - 12, first.top() - 12  # less the card's padding: its corner
    assert _pixel(transcript, left, top + 30) == QColor(LIGHT.border).rgb()  # its edge
    assert _pixel(transcript, left + 1, top + 1) != QColor(LIGHT.border).rgb()  # round corner
    header = transcript.cursorRect(code.cellAt(0, 0).firstCursorPosition())  # "python"
    body = transcript.cursorRect(code.cellAt(1, 0).firstCursorPosition())  # "x = 1"
    assert (
        _pixel(transcript, header.left() - 4, header.center().y())
        == QColor(LIGHT.code_header).rgb()
    )
    assert _pixel(transcript, body.left() - 4, body.center().y()) == QColor(LIGHT.code).rgb()
    corner = (header.left() - 8, header.top() - 8)  # less the block's padding
    assert _pixel(transcript, *corner) != QColor(LIGHT.code_header).rgb()


def test_the_message_under_the_pointer_is_highlighted_whole(qtbot, transcript):
    from localllm.app.gui.design.tokens import LIGHT

    transcript.resize(640, 600)  # every message on screen
    transcript.show_messages(_chat(2, words=4), "tiny", False)
    _settled(qtbot, transcript)
    assert transcript.verticalScrollBar().maximum() == 0

    def centre(row: int) -> QPoint:
        return transcript._message_rects()[row].center().toPoint()

    reply = transcript._message_rects()[1]  # the first reply: the highlight is around its card
    beside = (reply.left() - 3, reply.center().y())
    hover = QColor(LIGHT.hover).rgb()
    assert _pixel(transcript, *beside) != hover
    qtbot.mouseMove(transcript.viewport(), centre(1) + QPoint(1, 1))  # (a pointer left right
    qtbot.mouseMove(transcript.viewport(), centre(1))  # there by another test would not move)
    qtbot.waitUntil(lambda: transcript.active_message() == "a0")
    qtbot.waitUntil(lambda: _pixel(transcript, *beside) == hover)
    qtbot.mouseMove(transcript.viewport(), centre(2))  # the next question: it moves along
    qtbot.waitUntil(lambda: transcript.active_message() == "u1")
    qtbot.waitUntil(lambda: _pixel(transcript, *beside) != hover)


def test_the_actions_have_their_room_and_cover_the_quiet_switcher(qtbot, transcript):
    """The buttons once ended two pixels short of the message's edge, and the footer's arrow
    showed past them, like a button cut off."""
    first = Message("a1", "assistant", "first try", stats=ReplyStats(3, 30.0, 0.1, 0.2, 4))
    reply = Message("a2", "assistant", "second", stats=ReplyStats(3, 5.7, 0.1, 0.2, 4))
    reply = reply.with_versions(first.versions)
    transcript.show_messages((Message("u", "user", "hi"), reply), "tiny", False)
    _settled(qtbot, transcript)
    transcript.pick("a2")
    bar = transcript.message_actions
    inside = bar.rect()
    shown = [w for w in bar.findChildren(QWidget) if w.parent() is bar and w.isVisible()]
    assert len(shown) == 6  # copy, regenerate, delete, back, "2/2", ahead: none cut off
    assert all(inside.contains(w.geometry()) for w in shown)
    assert bar.geometry().right() < transcript.viewport().width()
    arrow = transcript.document().find("\u203a")  # the footer's switcher, at the line's end
    assert transcript.cursorRect(arrow).right() <= bar.geometry().right()
    order = [b.accessibleName() for b in bar.buttons()]
    assert order == ["Copy", "Regenerate", "Delete", "Previous version", "Next version"]


def test_a_replys_quiet_line_counts_live_while_it_streams(qtbot, transcript):
    from localllm.app.gui.state.chat.stats import STREAMING

    question = Message("u", "user", "count")
    live = ReplyStats(7, 12.5, 0.25, 1.0, done_reason=STREAMING)
    transcript.show_messages((question, Message("a", "assistant", "one two")), "t", True, live)
    qtbot.waitUntil(lambda: "one two" in transcript.toPlainText())  # the coalesced draw
    assert "12.5 tok/s · 7 tokens · first token 250 ms" in transcript.toPlainText()
    done = Message("a", "assistant", "one two three", stats=ReplyStats(9, 11.0, 0.25, 1.2, 4))
    transcript.show_messages((question, done), "t", False)
    shown = transcript.toPlainText()
    assert "11.0 tok/s ▸" in shown and "first token" not in shown  # quiet until opened
    transcript.anchorClicked.emit(QUrl("action:stats:a"))
    assert "11.0 tok/s · 9 tokens · first token 250 ms" in transcript.toPlainText()


def test_the_transcript_keeps_qwidget_actions(transcript):
    """Its message actions bar once sat in ``self.actions``, hiding ``QWidget.actions()``
    (anything asking a widget for its actions got a bar it could not call)."""
    from PySide6.QtGui import QAction

    action = QAction("Find", transcript)
    transcript.addAction(action)
    assert transcript.actions() == [action]
