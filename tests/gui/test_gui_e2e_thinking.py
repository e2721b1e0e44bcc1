"""A thinking model in the real app against a real daemon: the Think setting (offered for this
model, sent on the wire), the reasoning streamed apart from the answer, shown as one line that
a click opens, never inside the answer, kept on disk, and turned off per chat.

The model thinks as Qwen3 does and never ends its thinking by itself: its own parameters give
it a ``think_budget``, so each reply thinks a few tokens and then answers.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from localllm.app.gui.services.bundle import HISTORY_FILE
from localllm.app.gui.state.chat.store import ConversationStore
from localllm.app.gui.state.gateway import Gateway
from localllm.daemon.client import Client
from tests.support.gui_e2e import GuiDaemon, open_app, wait_idle
from tests.support.qt_text import click_link
from tests.support.wire_log import WireLog

pytestmark = pytest.mark.slow
THINKER = "thinker:latest"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, thinking_model_path):
    from localllm.model_registry.importer import ModelExtras

    root = tmp_path_factory.mktemp("gui-thinking")
    budget = ModelExtras(parameters={"num_predict": 16, "think_budget": 6, "seed": 3})
    running = GuiDaemon(root, {"thinker": (thinking_model_path, budget)})
    yield running
    running.stop()


@pytest.fixture
def app(qtbot, daemon, tmp_path):
    wire = WireLog()

    def make(key: str | None, timeout: float) -> Client:
        return Client(daemon.url, api_key=key, timeout=timeout, transport=wire)

    _services, window = open_app(qtbot, Gateway(None, daemon.control(), make_client=make), tmp_path)
    yield window, wire
    window.services.shutdown()


def flat(text: str) -> str:
    return " ".join(text.split())


def _pick_thinker(qtbot, window) -> None:
    library, chat = window.services.library, window.services.chat
    qtbot.waitUntil(lambda: library.table.row_of(THINKER) is not None, timeout=10_000)
    qtbot.waitUntil(lambda: chat.session is not None, timeout=10_000)
    row = library.table.row_of(THINKER)
    window.chat_page.model_picker.setCurrentIndex(row)
    window.chat_page.model_picker.activated.emit(row)
    qtbot.waitUntil(lambda: chat.session.conversation.model == THINKER)


def _set_think(qtbot, window, value: str) -> None:
    think = window.chat_page.settings.think
    think.setCurrentIndex(think.findData(value))
    think.activated.emit(think.currentIndex())  # what picking it with the mouse sends
    qtbot.waitUntil(lambda: window.services.chat.session.conversation.think == value)


def _send(qtbot, window, text: str):
    composer = window.chat_page.composer
    composer.editor.setPlainText(text)
    with qtbot.waitSignal(window.services.chat.reply_finished, timeout=60_000):
        qtbot.keyClick(composer.editor, Qt.Key.Key_Return)
    return window.services.chat.session.messages[-1]


def test_a_thinking_reply_is_folded_opens_on_click_and_stays_out_of_the_answer(
    qtbot, app, tmp_path
):
    window, wire = app
    page, chat = window.chat_page, window.services.chat
    _pick_thinker(qtbot, window)
    page.settings_button.click()
    settings = page.settings
    qtbot.waitUntil(lambda: settings.think.isVisibleTo(settings), timeout=10_000)
    _set_think(qtbot, window, "on")
    seen = []  # the reply as the window drew it, event by event
    chat.transcript_changed.connect(lambda: seen.append(chat.session.messages[-1]))
    reply = _send(qtbot, window, "Is 1009 a prime?")

    assert wire.chats[-1]["think"] is True
    assert reply.thinking.strip() and reply.content.strip() and not reply.failed
    assert reply.thinking.strip() not in reply.content and "<think>" not in reply.content
    assert reply.thinking_seconds is not None and reply.thinking_seconds >= 0
    assert any(m.thinking and not m.content for m in seen)  # drawn as "Thinking…" meanwhile

    transcript, thought = page.transcript, flat(reply.thinking)
    words = len(reply.thinking.split())
    summary = f"· {words} word{'s' if words != 1 else ''} ▸"
    qtbot.waitUntil(lambda: "Thought for " in transcript.toPlainText())
    closed = flat(transcript.toPlainText())
    assert summary in closed and thought not in closed  # one line until clicked
    click_link(qtbot, transcript, f"action:thinking:{reply.id}")
    opened = flat(transcript.toPlainText())
    assert "▾" in opened and thought in opened
    assert thought not in opened.split(thought, 1)[1]  # the answer drawn after it has none
    transcript.pick(reply.id)  # its buttons, as under the pointer
    qtbot.mouseClick(transcript.message_actions.copy, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == reply.content  # the answer alone

    wait_idle(qtbot, window.services)
    store = ConversationStore(tmp_path / HISTORY_FILE)
    try:
        [saved_chat] = store.conversations()
        [_, saved] = store.messages(saved_chat.id)
    finally:
        store.close()
    assert saved_chat.think == "on"
    assert (saved.thinking, saved.content) == (reply.thinking, reply.content)
    assert saved.thinking_seconds == pytest.approx(reply.thinking_seconds)


def test_think_off_answers_without_thinking(qtbot, app):
    window, wire = app
    _pick_thinker(qtbot, window)
    settings = window.chat_page.settings
    qtbot.waitUntil(lambda: settings.think.isVisibleTo(settings), timeout=10_000)
    _set_think(qtbot, window, "off")
    reply = _send(qtbot, window, "Hello")
    assert wire.chats[-1]["think"] is False
    assert reply.content and reply.thinking == "" and reply.thinking_seconds is None
    assert "Thought for" not in window.chat_page.transcript.toPlainText()
