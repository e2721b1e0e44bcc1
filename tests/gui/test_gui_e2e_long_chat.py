"""A chat driven past its context in the real app against a real daemon: it keeps answering
(the daemon drops the oldest turns), the transcript marks where the model's memory starts and
the mark moves as the chat grows, and it survives a restart; "Stop and tell me" stops with
what to do; the offer of a larger context appears where the daemon's plan of it fits (asked on
the wire, with the chat's options at twice its context), and works."""

from __future__ import annotations

from dataclasses import replace

import pytest
from PySide6.QtCore import Qt, QUrl

from localllm.app.gui.services.bundle import HISTORY_FILE
from localllm.app.gui.state.chat.memory import DIVIDER_TEXT
from localllm.app.gui.state.chat.records import Message
from localllm.app.gui.state.chat.store import ConversationStore
from localllm.app.gui.state.gateway import Gateway
from localllm.daemon.client import Client
from tests.support.gui_e2e import MODEL, GuiDaemon, open_app, tiny_models, wait_idle
from tests.support.wire_log import WireLog

pytestmark = pytest.mark.slow
CONTEXT = 256  # tokens; the tiny model was trained for 2,048
WORDS = ["apple", "river", "stone", "cloud", "lamp", "garden", "window", "paper"]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("gui-long-chat")
    running = GuiDaemon(root, tiny_models(tiny_model_path))
    yield running
    running.stop()


@pytest.fixture
def wire() -> WireLog:
    return WireLog()


@pytest.fixture
def window(qtbot, daemon, wire, tmp_path):
    def make(key: str | None, timeout: float) -> Client:
        return Client(daemon.url, api_key=key, timeout=timeout, transport=wire)

    gateway = Gateway(None, daemon.control(), make_client=make)
    _services, shown = open_app(qtbot, gateway, tmp_path)
    yield shown
    shown.services.shutdown()


def _fits_at_double(daemon) -> None:
    """The daemon's own plan of the chat at twice its context fits on this machine (the tiny
    model's is a few MB): the offer is expected."""
    plan = daemon.gateway().plan(MODEL, {"num_ctx": CONTEXT * 2})
    assert plan.fits and plan.context_length == CONTEXT * 2, plan.fit_reason


def _small_chat(qtbot, window) -> None:
    """An empty chat with the tiny model, a system prompt, and a context of CONTEXT tokens."""
    chat = window.services.chat
    qtbot.waitUntil(lambda: window.services.library.loaded, timeout=10_000)
    qtbot.waitUntil(lambda: chat.session is not None, timeout=10_000)
    row = window.services.library.table.row_of(MODEL)
    window.chat_page.model_picker.setCurrentIndex(row)
    window.chat_page.model_picker.activated.emit(row)
    qtbot.waitUntil(lambda: chat.session.conversation.model == MODEL)
    c = chat.session.conversation
    options = replace(c.options, num_ctx=CONTEXT)
    chat.update_settings(replace(c, system_prompt="Be brief.", options=options))
    window.chat_page.settings.show_conversation(chat.session.conversation)


def _send(qtbot, window, number: int) -> Message:
    composer = window.chat_page.composer
    words = " ".join(WORDS[(number + i) % len(WORDS)] for i in range(3))
    composer.editor.setPlainText(f"Note {number}: {words}")
    with qtbot.waitSignal(window.services.chat.reply_finished, timeout=30_000):
        qtbot.keyClick(composer.editor, Qt.Key.Key_Return)
    return window.services.chat.session.messages[-1]


def _memory(window):
    return window.services.chat.session.conversation.memory


def _marked_before(window, message_id: str) -> bool:
    """The divider is shown once, right above the message ``message_id``."""
    text = window.chat_page.transcript.toPlainText()
    message = next(m for m in window.services.chat.session.messages if m.id == message_id)
    return (
        text.count(DIVIDER_TEXT) == 1
        and text.index(DIVIDER_TEXT)
        < text.index(message.content)
        < text.index(DIVIDER_TEXT) + len(DIVIDER_TEXT) + 40
    )


def test_a_chat_past_its_context_keeps_answering_and_marks_where_memory_starts(
    qtbot, window, daemon, wire, tmp_path
):
    _small_chat(qtbot, window)
    number = 0
    while not _memory(window).starts_at:
        reply = _send(qtbot, window, number)
        assert not reply.failed, reply.error
        number += 1
        assert number < 20, "the chat never went past its context"
    first_mark = _memory(window).starts_at
    messages = window.services.chat.session.messages
    ids = [m.id for m in messages]
    assert ids.index(first_mark) > 0 and messages[ids.index(first_mark)].role == "user"
    assert _marked_before(window, first_mark)

    for more in range(number, number + 4):  # the mark moves on as the chat grows
        reply = _send(qtbot, window, more)
        assert not reply.failed, reply.error
    later = _memory(window).starts_at
    ids = [m.id for m in window.services.chat.session.messages]
    assert ids.index(later) > ids.index(first_mark)
    assert _marked_before(window, later)

    wait_idle(qtbot, window.services)  # the mark is kept with the chat
    store = ConversationStore(tmp_path / HISTORY_FILE)
    try:
        [kept] = [
            c for c in store.conversations() if c.id == window.services.chat.session.conversation.id
        ]
        assert kept.memory.starts_at == later
    finally:
        store.close()

    # The daemon's plan of a larger context fits: offered, and taken with one click.
    _fits_at_double(daemon)
    notice = window.chat_page.memory_notice
    qtbot.waitUntil(lambda: notice.isVisible() and notice.larger.isVisible(), timeout=20_000)
    assert notice.larger.text() == f"Use {CONTEXT * 2:,} tokens"
    assert {"num_ctx": CONTEXT * 2} in wire.plan_options(MODEL)  # the chat, at twice its context
    notice.larger.click()
    assert window.services.chat.session.conversation.options.num_ctx == CONTEXT * 2
    assert window.chat_page.settings.context.value() == CONTEXT * 2
    reply = _send(qtbot, window, number + 4)
    assert not reply.failed
    ids = [m.id for m in window.services.chat.session.messages]
    wider = _memory(window).starts_at  # the model sees further back now
    assert wider == "" or ids.index(wider) < ids.index(later)
    assert wider == "" or _marked_before(window, wider)


def test_stop_and_tell_me_stops_with_what_to_do(qtbot, window, daemon, wire):
    _small_chat(qtbot, window)
    settings = window.chat_page.settings
    settings.overflow.setCurrentIndex(settings.overflow.findData("stop"))
    settings.overflow.activated.emit(settings.overflow.currentIndex())
    assert _memory(window).overflow == "stop"

    number = 0
    while not (reply := _send(qtbot, window, number)).failed:
        number += 1
        assert number < 20, "the chat never went past its context"
    assert "Context length" in reply.error and "drop" in reply.hint
    notice = window.chat_page.memory_notice
    _fits_at_double(daemon)
    qtbot.waitUntil(lambda: notice.larger.isVisible(), timeout=20_000)  # once planned
    assert notice.drop.isVisible() and "no longer fits" in notice.label.text()
    assert {"num_ctx": CONTEXT * 2} in wire.plan_options(MODEL)

    with qtbot.waitSignal(window.services.chat.reply_finished, timeout=30_000):
        notice.drop.click()  # drop the oldest messages from now on, and answer again
    assert not window.services.chat.session.messages[-1].failed
    assert _memory(window).overflow == "drop" and _memory(window).starts_at
    assert settings.overflow.currentData() == "drop"
    assert not notice.drop.isVisible()


def test_summarize_the_oldest_keeps_a_note_of_what_the_model_no_longer_sees(
    qtbot, window, tmp_path
):
    _small_chat(qtbot, window)
    settings = window.chat_page.settings
    settings.overflow.setCurrentIndex(settings.overflow.findData("summarize"))
    settings.overflow.activated.emit(settings.overflow.currentIndex())
    number = 0
    while not _memory(window).starts_at:
        assert not _send(qtbot, window, number).failed
        number += 1
        assert number < 20, "the chat never went past its context"
    # the model is asked for the summary once the reply is in
    qtbot.waitUntil(lambda: _memory(window).summary != "", timeout=30_000)
    memory = _memory(window)
    assert memory.summary_through == memory.starts_at
    assert window.services.chat.session.turns()[1].content.endswith(memory.summary)

    transcript = window.chat_page.transcript
    assert "Summary of the earlier messages \u25b8" in transcript.toPlainText()
    assert not _send(qtbot, window, number).failed  # sent with the summary, still answering
    transcript.anchorClicked.emit(QUrl("action:summary"))
    assert "Summary of the earlier messages \u25be" in transcript.toPlainText()

    wait_idle(qtbot, window.services)
    store = ConversationStore(tmp_path / HISTORY_FILE)
    try:
        chat_id = window.services.chat.session.conversation.id
        [kept] = [c for c in store.conversations() if c.id == chat_id]
        assert kept.memory.overflow == "summarize" and kept.memory.summary
    finally:
        store.close()
