"""The user's own words shown exactly, in the real app against a real daemon: a fenced block
they send is a code block with its indentation (not raw fences on one line), their line breaks
stay, markup they type is text, and Copy gives back what they wrote with a note that passes.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtGui import QFont, QGuiApplication, QTextFrame

from localllm.app.gui.state.chat.transcript_actions import CopyMessage, href
from localllm.app.gui.views.transcript import Transcript
from tests.support.gui_e2e import GuiDaemon, open_app, pick_model, send_message, tiny_models
from tests.support.qt_text import laid_out, links

pytestmark = pytest.mark.slow

CODE = "def greet(name):\n    if name:\n        return 'hi ' + name\n    return 'hi'\n"
QUESTION = f"Why does this fail?\n\n```python\n{CODE}```\nfirst line\nsecond line"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    running = GuiDaemon(tmp_path_factory.mktemp("gui-user-text"), tiny_models(tiny_model_path))
    yield running
    running.stop()


@pytest.fixture
def window(qtbot, daemon, tmp_path):
    _services, shown = open_app(qtbot, daemon.gateway(), tmp_path)
    yield shown
    shown.services.shutdown()


def _message_text(transcript: Transcript, row: int) -> str:
    """The plain text of the ``row``-th message as the transcript lays it out."""
    frame = transcript.document().rootFrame().childFrames()[row]
    cursor = transcript.textCursor()
    cursor.setPosition(frame.firstPosition())
    cursor.setPosition(frame.lastPosition(), cursor.MoveMode.KeepAnchor)
    return cursor.selection().toPlainText()


def _unbroken_lines(frame: QTextFrame) -> list[str]:
    """The lines of the preformatted blocks (``<pre>``: never wrapped, spaces kept) in
    ``frame``, whatever tables they sit in."""
    lines = []
    block = frame.document().findBlock(frame.firstPosition())
    while block.isValid() and block.position() <= frame.lastPosition():
        if block.blockFormat().nonBreakableLines():
            lines.append(block.text())
        block = block.next()
    return lines


def test_a_fenced_block_the_user_sends_is_code_with_its_indentation(qtbot, window):
    pick_model(qtbot, window)
    send_message(qtbot, window, QUESTION)
    question = window.services.chat.session.messages[0]
    assert question.content == QUESTION  # kept as typed
    transcript = window.chat_page.transcript
    qtbot.waitUntil(lambda: laid_out(transcript))
    shown = _message_text(transcript, 0)
    assert "```" not in shown
    bubble = transcript.document().rootFrame().childFrames()[0]
    assert _unbroken_lines(bubble) == CODE.rstrip("\n").split("\n")  # every space in place
    assert "first line\nsecond line" in shown  # a line break, kept
    assert f"copy:{question.id}:0" in links(transcript.document())  # its own Copy, as a reply's


def test_markup_the_user_types_is_text_and_copy_gives_it_back_exactly(qtbot, window):
    pick_model(qtbot, window)
    typed = "is <b>x</b> bold? <a href='action:delete:all'>no</a>\n    indented"
    send_message(qtbot, window, typed)
    question = window.services.chat.session.messages[0]
    page = window.chat_page
    shown = _message_text(page.transcript, 0)
    assert "<b>x</b>" in shown and "<a href='action:delete:all'>no</a>" in shown
    assert not any(link.startswith("action:delete") for link in links(page.transcript.document()))
    assert _bold(page.transcript.document().rootFrame().childFrames()[0]) == []
    QGuiApplication.clipboard().clear()
    page.transcript.anchorClicked.emit(QUrl(href(CopyMessage(question.id))))
    assert QGuiApplication.clipboard().text() == typed
    assert page.status.text() == "Message copied"
    assert page.status_timer.isActive()  # the note goes by itself
    page.status_timer.timeout.emit()  # as when its time is up
    assert page.status.text() == ""


def _bold(frame: QTextFrame) -> list[str]:
    """The words drawn bold in ``frame``."""
    found = []
    block = frame.document().findBlock(frame.firstPosition())
    while block.isValid() and block.position() <= frame.lastPosition():
        fragments = block.begin()
        while not fragments.atEnd():
            fragment = fragments.fragment()
            if fragment.charFormat().fontWeight() > QFont.Weight.Normal.value:
                found.append(fragment.text())
            fragments += 1
        block = block.next()
    return found


def test_a_lasting_message_is_not_taken_away_by_the_copy_note(qtbot, window):
    pick_model(qtbot, window)
    send_message(qtbot, window, "keep this")
    question = window.services.chat.session.messages[0]
    page = window.chat_page
    page.transcript.anchorClicked.emit(QUrl(href(CopyMessage(question.id))))
    page.status.setText("Exported to /tmp/chat.md")  # said after the note, and meant to stay
    page.status_timer.timeout.emit()
    assert page.status.text() == "Exported to /tmp/chat.md"
