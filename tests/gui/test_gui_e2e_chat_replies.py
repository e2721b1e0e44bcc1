"""Replies in the real app against a real daemon: versions kept by Regenerate (and kept on
disk), Continue, Delete, live and stopped numbers, the context meter and the context-length
error in the window's words, what "model default" means, titles that stay, and a transcript
that opens and stays at its end. One daemon for the module; each test has its own window and
chat history.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from PySide6.QtCore import Qt, QUrl

from localllm.app.gui.services.bundle import HISTORY_FILE
from localllm.app.gui.state.chat.records import Conversation, Message
from localllm.app.gui.state.chat.store import ConversationStore
from localllm.daemon.client import Client
from tests.support.gui_e2e import (
    MODEL,
    GuiDaemon,
    open_app,
    pick_model,
    send_message,
    tiny_models,
    wait_idle,
)
from tests.support.qt_text import laid_out

pytestmark = pytest.mark.slow
ROOMY = "roomy:latest"  # trained for 32,768 tokens; the daemon sizes it to its cap of 4,096
LONG_REPLY = 4000


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    from localllm.model_registry.importer import ModelExtras
    from localllm.model_registry.tiny_gguf import write_tiny_model

    root = tmp_path_factory.mktemp("gui-replies")
    roomy = write_tiny_model(root / "roomy.gguf", context_length=32_768, seed=3)
    models = {
        **tiny_models(tiny_model_path),
        "roomy": (roomy, ModelExtras(parameters={"num_predict": 12})),
    }
    running = GuiDaemon(root, models, env={"LOCALLLM_CONTEXT_CAP": "4096"})
    yield running
    running.stop()


@pytest.fixture
def window(qtbot, daemon, tmp_path):
    _services, shown = open_app(qtbot, daemon.gateway(), tmp_path)
    yield shown
    shown.services.shutdown()


def _click(qtbot, window, href: str) -> Message:
    """A link in the transcript that asks for a reply; returns it once it has come."""
    with qtbot.waitSignal(window.services.chat.reply_finished, timeout=30_000):
        window.chat_page.transcript.anchorClicked.emit(QUrl(href))
    return window.services.chat.session.messages[-1]


def _long_replies(chat) -> None:
    options = replace(chat.session.conversation.options, num_predict=LONG_REPLY)
    chat.update_settings(replace(chat.session.conversation, options=options))


def test_regenerate_keeps_every_version_and_the_history_keeps_them(qtbot, daemon, tmp_path):
    services, window = open_app(qtbot, daemon.gateway(), tmp_path)
    try:
        pick_model(qtbot, window)
        send_message(qtbot, window, "Tell me a joke")
        first = window.services.chat.session.messages[-1]
        second = _click(qtbot, window, "action:regenerate")
        assert [v.content for v in second.versions] == [first.content, second.content]
        transcript = window.chat_page.transcript
        assert "\u2039 2/2 \u203a" in transcript.toPlainText()
        transcript.anchorClicked.emit(QUrl(f"action:version:{second.id}:0"))
        shown = services.chat.session.messages[-1]
        assert (shown.id, shown.content, shown.version) == (first.id, first.content, 0)
        assert "\u2039 1/2 \u203a" in transcript.toPlainText()
        chat_id = services.chat.session.conversation.id
    finally:
        window.close()
        services.shutdown()

    again, _ = open_app(qtbot, daemon.gateway(), tmp_path, window=False)
    try:
        qtbot.waitUntil(lambda: again.chat.conversations.rowCount() == 1, timeout=10_000)
        again.chat.open(chat_id)
        qtbot.waitUntil(lambda: again.chat.session is not None, timeout=10_000)
        kept = again.chat.session.messages[-1]
        assert (kept.content, kept.version) == (first.content, 0)
        assert [v.content for v in kept.versions] == [first.content, second.content]
    finally:
        again.shutdown()


def test_continue_writes_more_of_a_cut_off_reply(qtbot, window):
    pick_model(qtbot, window)
    send_message(qtbot, window, "Count to a hundred")
    cut = window.services.chat.session.messages[-1]
    assert cut.stats.done_reason == "length" and cut.can_continue
    assert "Continue" in window.chat_page.transcript.toPlainText()
    longer = _click(qtbot, window, f"action:continue:{cut.id}")
    assert longer.id == cut.id and len(window.services.chat.session.messages) == 2
    assert longer.content.startswith(cut.content) and len(longer.content) > len(cut.content)
    assert longer.stats.tokens == 24  # both parts, 12 tokens each
    assert longer.stats.prompt_tokens > cut.stats.prompt_tokens + 6  # it read its own start


def test_delete_a_message_and_the_history_forgets_it(qtbot, window, tmp_path):
    pick_model(qtbot, window)
    send_message(qtbot, window, "first question")
    send_message(qtbot, window, "second question")
    chat = window.services.chat
    first_reply = chat.session.messages[1]
    window.chat_page.transcript.anchorClicked.emit(QUrl(f"action:delete:{first_reply.id}"))
    contents = [m.content for m in chat.session.messages]
    assert contents[0] == "first question" and contents[1] == "second question"
    assert first_reply.content not in window.chat_page.transcript.toPlainText()
    wait_idle(qtbot, window.services)
    stored = ConversationStore(tmp_path / HISTORY_FILE).messages(chat.session.conversation.id)
    assert [m.content for m in stored] == contents


def test_numbers_are_live_while_a_reply_streams_and_kept_when_it_is_stopped(qtbot, window):
    """In the reply's own quiet line (the only one): live while it streams, then short."""
    pick_model(qtbot, window)
    send_message(qtbot, window, "hello")
    transcript = window.chat_page.transcript

    def last_line() -> str:
        return transcript.toPlainText().strip().splitlines()[-1]

    previous = last_line()
    assert "tok/s" in previous
    chat = window.services.chat
    _long_replies(chat)
    composer = window.chat_page.composer
    composer.editor.setPlainText("Count to a thousand")
    qtbot.keyClick(composer.editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "tokens" in last_line(), timeout=30_000)  # this reply's, live
    qtbot.waitUntil(lambda: "tok/s ·" in last_line(), timeout=30_000)
    qtbot.keyClick(composer.editor, Qt.Key.Key_Escape)
    stopped = chat.session.messages[-1].stats
    assert stopped.done_reason == "stopped" and stopped.tokens_per_second
    qtbot.waitUntil(lambda: "tok/s · stopped ▸" in last_line())
    assert "tok/s" not in window.chat_page.status.text()


def test_the_context_meter_and_a_too_long_chat_in_the_windows_words(qtbot, window):
    pick_model(qtbot, window)
    send_message(qtbot, window, "hello")
    reply = window.services.chat.session.messages[-1]
    used = reply.stats.prompt_tokens + reply.stats.tokens
    meter = window.chat_page.context_meter.label
    assert meter.text() == f"Context: {used} of 2,048 tokens ({round(100 * used / 2048)}%)"
    settings = window.chat_page.settings
    settings.context.setValue(64)
    settings.flush()
    assert "of 64 tokens" in meter.text()
    send_message(qtbot, window, "Tell me everything about " + "llamas and alpacas " * 20)
    failed = window.services.chat.session.messages[-1]
    assert failed.failed and "Context length" in failed.error and "num_ctx" not in failed.error
    shown = window.chat_page.transcript.toPlainText()
    assert "Raise Context length in this chat's settings" in shown and "num_ctx" not in shown


def test_what_the_model_runs_at_and_what_model_default_means(qtbot, window, daemon):
    pick_model(qtbot, window, ROOMY)
    settings = window.chat_page.settings
    qtbot.waitUntil(lambda: "4,096" in settings.context.specialValueText(), timeout=10_000)
    assert settings.context.specialValueText() == "model default (4,096)"
    assert settings.temperature.specialValueText() == "model default (0.8)"
    assert settings.max_tokens.specialValueText() == "model default (12)"
    send_message(qtbot, window, "hello")
    with Client(daemon.url) as client:  # the daemon's own word on what it runs
        [loaded] = [m for m in client.running() if m.name == ROOMY]
    assert loaded.context_length == 4096
    assert window.chat_page.context_meter.label.text().endswith("of 4,096 tokens (1%)")
    window.show_page("Models")
    page = window.models_page
    model = page.table.model()
    row = next(r for r in range(model.rowCount()) if model.index(r, 0).data() == ROOMY)
    page.table.selectRow(row)
    qtbot.waitUntil(lambda: "runs at" in page.summary.text(), timeout=10_000)
    assert "runs at 4,096 of 32,768 tokens" in page.summary.text()


def test_a_title_once_given_stays(qtbot, window, tmp_path):
    """It used to become "Continue": the settings panel put back the chat's old title."""
    pick_model(qtbot, window)
    send_message(qtbot, window, "Why is the sky blue?")
    settings = window.chat_page.settings
    settings.temperature.setValue(0.5)
    settings.flush()
    send_message(qtbot, window, "Continue")
    chat = window.services.chat
    assert chat.session.conversation.title == "Why is the sky blue?"
    assert chat.session.conversation.options.temperature == 0.5
    wait_idle(qtbot, window.services)
    [saved] = ConversationStore(tmp_path / HISTORY_FILE).conversations()
    assert saved.title == "Why is the sky blue?"


def _long_chat(path, chat_id: str) -> None:
    store = ConversationStore(path)
    store.save_conversation(Conversation(chat_id, "Long", MODEL, created_at=1, updated_at=1))
    for turn in range(25):
        store.save_message(chat_id, 2 * turn, Message(f"q{turn}", "user", f"question {turn}"))
        reply = "\n\n".join(f"part {p} of answer {turn}: " + "words " * 50 for p in range(3))
        store.save_message(chat_id, 2 * turn + 1, Message(f"a{turn}", "assistant", reply))
    store.close()


def _at_end(transcript) -> bool:
    bar = transcript.verticalScrollBar()
    return bar.maximum() > 0 and bar.value() == bar.maximum()


def test_a_chat_opens_at_its_end_and_stays_there(qtbot, daemon, tmp_path):
    _long_chat(tmp_path / HISTORY_FILE, "long")
    services, window = open_app(qtbot, daemon.gateway(), tmp_path)
    try:
        transcript = window.chat_page.transcript
        qtbot.waitUntil(lambda: "answer 24" in transcript.toPlainText(), timeout=10_000)
        qtbot.waitUntil(lambda: laid_out(transcript))  # Qt lays long documents out in steps
        assert _at_end(transcript)
        window.resize(1366, 768)  # room for the settings' column (narrower: a drawer over it)
        qtbot.waitUntil(lambda: window.width() == 1366 and laid_out(transcript))
        width = transcript.width()
        window.chat_page.settings_button.click()  # the panel takes width: the text grows taller
        qtbot.waitUntil(lambda: transcript.width() < width and laid_out(transcript))
        assert _at_end(transcript)
        services.chat.new_chat(MODEL)
        qtbot.waitUntil(lambda: "answer 24" not in transcript.toPlainText())
        services.chat.open("long")
        qtbot.waitUntil(lambda: "answer 24" in transcript.toPlainText(), timeout=10_000)
        qtbot.waitUntil(lambda: laid_out(transcript))
        assert _at_end(transcript)
    finally:
        services.shutdown()
