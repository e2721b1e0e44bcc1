"""The services over a stand-in daemon: start-up, chat with history on disk, downloads.

Marked ``e2e_later``: the same flows run against a real daemon once its native API exists.
"""

from __future__ import annotations

import threading

import pytest

from app.gui.chat.store import ConversationStore
from app.gui.daemon_health import DaemonState
from app.gui.gateway import GatewayError
from app.gui.records import PullProgress, PullStatus
from app.gui.services.bundle import HISTORY_FILE, build_services

pytestmark = pytest.mark.e2e_later


@pytest.fixture
def services(qtbot, gateway, tmp_path):
    built = build_services(gateway, tmp_path, poll_ms=50)
    yield built
    built.shutdown()


def _wait_idle(qtbot, services) -> None:
    qtbot.waitUntil(lambda: services.net.busy == 0 and services.disk.busy == 0, timeout=3000)


def test_start_up_starts_a_silent_daemon_then_loads_the_pages(qtbot, services, gateway):
    gateway.up = False
    statuses = []
    services.monitor.status_changed.connect(lambda s: statuses.append(s.state))
    with qtbot.waitSignal(services.monitor.came_up, timeout=3000):
        services.start()
    assert gateway.started == 1
    assert statuses[:2] == [DaemonState.CONNECTING, DaemonState.STARTING]
    assert statuses[-1] is DaemonState.RUNNING
    qtbot.waitUntil(lambda: services.library.loaded, timeout=3000)
    assert services.library.table.items()[0].name == "qwen:0.5b"
    qtbot.waitUntil(lambda: services.library.table.items()[0].context_length == 32768, timeout=3000)


def test_a_daemon_that_dies_is_reported_with_a_restart(qtbot, services, gateway):
    with qtbot.waitSignal(services.monitor.came_up, timeout=3000):
        services.start()
    gateway.up = False
    qtbot.waitUntil(lambda: services.monitor.status.state is DaemonState.STOPPED, timeout=3000)
    assert gateway.started == 0 and services.monitor.status.can_restart
    with qtbot.waitSignal(services.monitor.came_up, timeout=3000):
        services.monitor.restart()
    assert gateway.started == 1


def test_a_hanging_daemon_never_blocks_the_window(qtbot, services, gateway):
    gateway.hang.clear()
    services.library.refresh()
    qtbot.wait(100)  # the event loop runs; the call is still out
    assert not services.library.loaded
    gateway.hang.set()
    qtbot.waitUntil(lambda: services.library.loaded, timeout=3000)


def _chat(qtbot, services, text: str) -> None:
    with qtbot.waitSignal(services.chat.reply_finished, timeout=3000):
        assert services.chat.send(text)


def test_a_chat_streams_measures_and_is_saved(qtbot, services, gateway, tmp_path):
    chat = services.chat
    chat.new_chat("qwen:0.5b")
    seen = []
    chat.transcript_changed.connect(lambda: seen.append(chat.session.messages[-1].content))
    _chat(qtbot, services, "Say hello")
    reply = chat.session.messages[-1]
    assert reply.content == "Hello there!" and reply.stats.tokens_per_second == pytest.approx(60)
    assert any(0 < len(text) < len("Hello there!") for text in seen)  # it streamed
    [(_, model, turns, _options)] = gateway.called("chat")
    assert model == "qwen:0.5b" and turns[-1].content == "Say hello"
    _wait_idle(qtbot, services)
    store = ConversationStore(tmp_path / HISTORY_FILE)
    [saved] = store.conversations()
    assert saved.title == "Say hello"
    assert [m.content for m in store.messages(saved.id)] == ["Say hello", "Hello there!"]


def test_stop_keeps_the_partial_reply_and_frees_the_chat(qtbot, services, gateway):
    gateway.gate = threading.Event()
    chat = services.chat
    chat.new_chat("qwen:0.5b")
    assert chat.send("Count")
    qtbot.waitUntil(lambda: chat.session.messages[-1].content == "Hello", timeout=3000)
    with qtbot.waitSignal(chat.streaming_changed, timeout=1000) as stopped:
        chat.stop()
    assert stopped.args == [False]
    assert chat.session.messages[-1].stats.done_reason == "stopped"
    gateway.gate.set()
    qtbot.wait(50)
    assert chat.session.messages[-1].content == "Hello"  # late tokens are dropped


def test_errors_appear_in_place_with_what_to_do(qtbot, services, gateway):
    gateway.chat_error = GatewayError("model 'qwen:0.5b' not found", "Pull the model first.")
    services.chat.new_chat("qwen:0.5b")
    _chat(qtbot, services, "hi")
    failed = services.chat.session.messages[-1]
    assert failed.error.startswith("model") and failed.hint == "Pull the model first."
    gateway.chat_error = None
    with qtbot.waitSignal(services.chat.reply_finished, timeout=3000):
        services.chat.regenerate()
    assert [m.content for m in services.chat.session.messages] == ["hi", "Hello there!"]


def test_no_model_means_no_send(qtbot, services):
    errors = []
    services.chat.error.connect(errors.append)
    services.chat.new_chat("")
    assert not services.chat.send("hi")
    assert "Pick a model" in errors[0]


def test_history_comes_back_in_a_new_window(qtbot, services, gateway, tmp_path):
    services.chat.new_chat("qwen:0.5b")
    _chat(qtbot, services, "Remember me")
    first_id = services.chat.session.conversation.id
    services.chat.edit(services.chat.session.messages[0].id, "Remember me, edited")
    qtbot.waitUntil(lambda: not services.chat.session.streaming, timeout=3000)
    _wait_idle(qtbot, services)

    again = build_services(gateway, tmp_path)
    try:
        with qtbot.waitSignal(again.chat.loaded, timeout=3000):
            again.chat.load()
        with qtbot.waitSignal(again.chat.opened, timeout=3000):
            again.chat.open(first_id)
        assert [m.content for m in again.chat.session.messages] == [
            "Remember me, edited",
            "Hello there!",
        ]
        again.chat.delete(first_id)
        assert again.chat.conversations.rowCount() == 0
    finally:
        again.shutdown()


def test_search_finds_words_inside_messages(qtbot, services):
    services.chat.new_chat("qwen:0.5b")
    _chat(qtbot, services, "Tell me about llamas")
    services.chat.new_chat("qwen:0.5b")
    _chat(qtbot, services, "Something else")
    services.chat.search("there!")  # only in the replies
    qtbot.waitUntil(lambda: services.chat.filter.rowCount() == 2, timeout=3000)
    services.chat.search("llamas")
    qtbot.waitUntil(lambda: services.chat.filter.rowCount() == 1, timeout=3000)


def test_a_pull_reports_progress_and_refreshes_the_models(qtbot, services, gateway):
    gateway.pull_events = [
        PullProgress("qwen:7b", "pulling manifest"),
        PullProgress("qwen:7b", "pulling abc", "sha256:abc", 100, 50),
        PullProgress("qwen:7b", "success"),
    ]
    with qtbot.waitSignal(services.downloads.finished, timeout=3000) as finished:
        services.downloads.pull("qwen:7b")
    assert finished.args == ["qwen:7b"]
    [row] = services.downloads.table.items()
    assert (row.state, row.completed, row.total) == ("done", 100, 100)
    qtbot.waitUntil(lambda: bool(gateway.called("models")), timeout=3000)


def test_pulls_started_elsewhere_show_up_and_can_be_paused(qtbot, services, gateway):
    gateway.pulls = lambda: (PullStatus("llama3.2:3b", "pulling", 200, 20, "running"),)
    services.downloads.start()
    qtbot.waitUntil(lambda: services.downloads.table.rowCount() == 1, timeout=3000)
    services.downloads.pause("llama3.2:3b")
    qtbot.waitUntil(lambda: bool(gateway.called("pause_pull")), timeout=3000)


def test_renaming_the_open_chat_survives_its_next_reply(qtbot, services, tmp_path):
    chat = services.chat
    chat.new_chat("qwen:0.5b")
    _chat(qtbot, services, "first")
    conversation_id = chat.session.conversation.id
    model = chat.conversations
    assert model.setData(model.index_of(conversation_id), "My title")
    _chat(qtbot, services, "second")
    assert chat.session.conversation.title == "My title"
    _wait_idle(qtbot, services)
    [saved] = ConversationStore(tmp_path / HISTORY_FILE).conversations()
    assert saved.title == "My title"


def test_attached_images_are_encoded_off_the_ui_thread_and_sent(qtbot, services, gateway, tmp_path):
    picture = tmp_path / "cat.png"
    picture.write_bytes(b"\x89PNG fake")
    services.chat.new_chat("qwen:0.5b")
    with qtbot.waitSignal(services.chat.reply_finished, timeout=3000):
        assert services.chat.send("what is this?", (picture,))
    [(_, _model, turns, _options)] = gateway.called("chat")
    assert turns[-1].images == ("iVBORyBmYWtl",)
