"""The window with qtbot: first run, chatting, editing, copying, settings, the other pages.

Marked ``e2e_later``: the stand-in daemon streams a fixed reply; these become end-to-end
tests against a real daemon (with a tiny model) once the native API lands.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from PySide6.QtCore import QSettings, Qt, QUrl
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMessageBox

from app.gui.records import HubFile, HubRepo, SystemInfo
from app.gui.services.bundle import build_services
from app.gui.views.main_window import MainWindow

pytestmark = pytest.mark.e2e_later
GB = 1_000_000_000


def _window(qtbot, gateway, tmp_path):
    services = build_services(gateway, tmp_path, poll_ms=100)
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(services, settings)
    qtbot.addWidget(window)
    window.show()
    services.start()
    return window


@pytest.fixture
def window(qtbot, gateway, tmp_path):
    w = _window(qtbot, gateway, tmp_path)
    yield w
    w.services.shutdown()


def _ready(qtbot, window):
    qtbot.waitUntil(lambda: window.services.library.loaded, timeout=3000)
    qtbot.waitUntil(lambda: window.services.chat.session is not None, timeout=3000)
    qtbot.waitUntil(
        lambda: window.chat_page.model_picker.currentText() == "qwen:0.5b", timeout=3000
    )


def _type_and_send(qtbot, window, text: str) -> None:
    composer = window.chat_page.composer
    composer.editor.setFocus()
    qtbot.keyClicks(composer.editor, text)
    with qtbot.waitSignal(window.services.chat.reply_finished, timeout=3000):
        qtbot.keyClick(composer.editor, Qt.Key.Key_Return)


def test_status_bar_shows_the_daemon(qtbot, window):
    qtbot.waitUntil(lambda: "running" in window.indicator.text.text(), timeout=3000)
    assert not window.indicator.restart.isVisible()


def test_first_run_offers_models_and_pulls_in_one_click(qtbot, gateway, tmp_path):
    gateway.models_list = []
    window = _window(qtbot, gateway, tmp_path)
    try:
        qtbot.waitUntil(lambda: window.chat_page.currentWidget() is window.welcome, timeout=3000)
        qtbot.waitUntil(lambda: "16.0 GB RAM" in window.welcome.machine.text(), timeout=3000)
        button = window.welcome.buttons["qwen:0.5b"]
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
        assert not button.isEnabled()
        qtbot.waitUntil(lambda: bool(gateway.called("pull")), timeout=3000)
        assert gateway.called("pull")[0] == ("pull", "qwen:0.5b")
    finally:
        window.services.shutdown()


def test_type_enter_and_watch_the_reply_stream_in(qtbot, window, gateway):
    _ready(qtbot, window)
    _type_and_send(qtbot, window, "Say hello")
    page = window.chat_page
    assert "Hello there!" in page.transcript.toPlainText()
    assert "tok/s" in page.status.text() and "first token" in page.status.text()
    assert page.composer.editor.toPlainText() == ""
    title = window.services.chat.conversations.index(0, 0).data()
    assert title == "Say hello"


def test_shift_enter_adds_a_line_and_ctrl_enter_sends(qtbot, window, gateway):
    _ready(qtbot, window)
    editor = window.chat_page.composer.editor
    qtbot.keyClicks(editor, "line one")
    qtbot.keyClick(editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert editor.toPlainText() == "line one\n" and not gateway.called("chat")
    with qtbot.waitSignal(window.services.chat.reply_finished, timeout=3000):
        qtbot.keyClick(editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert gateway.called("chat")[0][2][-1].content == "line one"


def test_escape_stops_a_reply(qtbot, window, gateway):
    import threading

    _ready(qtbot, window)
    gateway.gate = threading.Event()
    composer = window.chat_page.composer
    qtbot.keyClicks(composer.editor, "Count")
    qtbot.keyClick(composer.editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: composer.button.text() == "Stop", timeout=3000)
    qtbot.keyClick(composer.editor, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: composer.button.text() == "Send", timeout=3000)
    assert "stopped" in window.chat_page.transcript.toPlainText()


def test_edit_and_resend_from_the_transcript(qtbot, window, gateway):
    _ready(qtbot, window)
    _type_and_send(qtbot, window, "First question")
    page = window.chat_page
    user_id = window.services.chat.session.messages[0].id
    page.transcript.anchorClicked.emit(QUrl(f"action:edit:{user_id}"))
    assert page.composer.banner.isVisibleTo(page) and "First question" in (
        page.composer.editor.toPlainText()
    )
    page.composer.editor.setPlainText("Better question")
    with qtbot.waitSignal(window.services.chat.reply_finished, timeout=3000):
        qtbot.keyClick(page.composer.editor, Qt.Key.Key_Return)
    contents = [m.content for m in window.services.chat.session.messages]
    assert contents == ["Better question", "Hello there!"]


def test_code_blocks_have_a_copy_link(qtbot, window, gateway):
    _ready(qtbot, window)
    gateway.reply = ["Try:\n\n```python\nprint('hi')\n```\n"]
    _type_and_send(qtbot, window, "code please")
    reply_id = window.services.chat.session.messages[-1].id
    window.chat_page.transcript.anchorClicked.emit(QUrl(f"copy:{reply_id}:0"))
    assert QGuiApplication.clipboard().text() == "print('hi')\n"


def test_per_chat_settings_travel_with_the_request(qtbot, window, gateway):
    _ready(qtbot, window)
    page = window.chat_page
    page.settings_button.click()
    page.settings.system_prompt.setPlainText("Answer in French.")
    page.settings.temperature.setValue(0.3)
    page.settings.context.setValue(4096)
    _type_and_send(qtbot, window, "hello")
    [(_, _model, turns, options)] = gateway.called("chat")
    assert turns[0].role == "system" and turns[0].content == "Answer in French."
    assert options == {"temperature": 0.3, "num_ctx": 4096}


def test_attach_is_offered_only_for_models_that_see(qtbot, window, gateway):
    _ready(qtbot, window)
    composer = window.chat_page.composer
    assert not composer.attach.isVisibleTo(window)
    gateway.capabilities["llava:7b"] = frozenset({"completion", "vision"})
    gateway.models_list.append(replace(gateway.models_list[0], name="llava:7b", digest="v"))
    window.services.library.refresh()
    qtbot.waitUntil(
        lambda: window.services.library.table.row_of("llava:7b") is not None, timeout=3000
    )
    window.chat_page.model_picker.setCurrentIndex(1)
    window.chat_page.model_picker.activated.emit(1)
    qtbot.waitUntil(lambda: composer.attach.isVisibleTo(window), timeout=3000)


def test_the_last_chat_and_window_size_are_remembered(qtbot, gateway, tmp_path):
    first = _window(qtbot, gateway, tmp_path)
    _ready(qtbot, first)
    _type_and_send(qtbot, first, "keep me")
    first.resize(850, 580)  # the offscreen screen is 800x600
    size = first.size()
    kept = first.services.chat.session.conversation.id
    first.services.chat.new_chat("qwen:0.5b")  # an empty chat is not what we reopen...
    first.services.chat.open(kept)  # ...the one we were reading is
    qtbot.waitUntil(lambda: first.services.chat.session.conversation.id == kept, timeout=3000)
    first.close()
    first.services.shutdown()

    second = _window(qtbot, gateway, tmp_path)
    try:
        qtbot.waitUntil(
            lambda: (
                second.services.chat.session is not None
                and second.services.chat.session.conversation.id == kept
            ),
            timeout=3000,
        )
        assert "keep me" in second.chat_page.transcript.toPlainText()
        assert second.height() == size.height() < 760  # restored, not the default 760
    finally:
        second.services.shutdown()


def test_shortcuts_new_chat_and_search(qtbot, window):
    _ready(qtbot, window)
    _type_and_send(qtbot, window, "one")
    window.show_page("Models")
    qtbot.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert window.pages.currentWidget() is window.chat_page
    assert window.services.chat.session.messages == ()
    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert window.chat_page.sidebar.search.hasFocus()


def test_models_page_shows_details_and_deletes(qtbot, window, gateway, monkeypatch):
    _ready(qtbot, window)
    window.show_page("Models")
    page = window.models_page
    page.table.selectRow(0)
    qtbot.waitUntil(lambda: page.tabs.count() == 6, timeout=3000)
    assert "context 32,768 tokens" in page.summary.text()
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    page.delete_button.click()
    qtbot.waitUntil(lambda: window.services.library.table.rowCount() == 0, timeout=3000)
    assert window.chat_page.currentWidget() is window.welcome


def test_discover_search_fit_badges_and_pull(qtbot, window, gateway):
    gateway.hub_search = lambda q, limit=20: (HubRepo("bartowski/Qwen-GGUF", 1200, 30),)
    gateway.hub_files = lambda repo: (
        HubFile("Qwen-Q4_K_M.gguf", "Q4_K_M", 4 * GB, f"hf.co/{repo}:Q4_K_M"),
        HubFile("Qwen-F16.gguf", "F16", 30 * GB, f"hf.co/{repo}:F16"),
    )
    gateway.system = lambda: SystemInfo(16 * GB, 8 * GB)
    window.services.hub.load_system()
    window.show_page("Discover")
    page = window.discover_page
    page.query.setText("qwen")
    page.search_now()
    qtbot.waitUntil(lambda: window.services.hub.repos.rowCount() == 1, timeout=3000)
    page.repos.selectRow(0)
    qtbot.waitUntil(lambda: window.services.hub.files.rowCount() == 2, timeout=3000)
    badges = {
        f.quant: window.services.hub.files.fit(f).label for f in window.services.hub.files.items()
    }
    assert badges == {"Q4_K_M": "fits in RAM", "F16": "too large"}
    page.files.selectRow(0)
    page.pull_button.click()
    qtbot.waitUntil(lambda: bool(gateway.called("pull")), timeout=3000)
    assert gateway.called("pull")[0][1] == "hf.co/bartowski/Qwen-GGUF:Q4_K_M"


def test_server_page_snippets_lan_switch_and_key(qtbot, window, gateway):
    _ready(qtbot, window)
    window.show_page("Server")
    page = window.server_page
    qtbot.waitUntil(lambda: "11435/v1" in page.address.text(), timeout=3000)
    assert page.snippet_tabs.count() == 3
    page.lan.click()
    qtbot.waitUntil(lambda: page.api_key.text() == "sk-local-test", timeout=3000)
    assert gateway.called("set_lan") == [("set_lan", True)]
    qtbot.waitUntil(lambda: "daemon started" in page.log.toPlainText(), timeout=3000)


def test_a_dead_daemon_offers_restart(qtbot, window, gateway):
    qtbot.waitUntil(lambda: window.services.monitor.status.up, timeout=3000)
    gateway.up = False
    qtbot.waitUntil(lambda: window.indicator.restart.isVisibleTo(window), timeout=3000)
    assert "stopped" in window.indicator.text.text()
    window.indicator.restart.click()
    qtbot.waitUntil(lambda: window.services.monitor.status.up, timeout=3000)
    assert gateway.started == 1


def test_dropping_a_gguf_on_the_first_run_page_asks_to_import(qtbot, tmp_path):
    from PySide6.QtCore import QMimeData, QPointF
    from PySide6.QtGui import QDropEvent

    from app.gui.downloads import Download
    from app.gui.views.welcome import WelcomePage

    page = WelcomePage()
    qtbot.addWidget(page)
    mime = QMimeData()
    mime.setUrls(
        [
            QUrl.fromLocalFile(str(tmp_path / "model.gguf")),
            QUrl.fromLocalFile(str(tmp_path / "notes.txt")),
        ]
    )
    event = QDropEvent(
        QPointF(5, 5),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    with qtbot.waitSignal(page.import_requested) as dropped:
        page.dropEvent(event)
    assert dropped.args[0].name == "model.gguf"
    page.show_download(Download("qwen:0.5b", "pulling", 1000, 250, "running"))
    assert page.buttons["qwen:0.5b"].text().startswith("Downloading… 25%")
    page.show_download(Download("qwen:0.5b", state="failed", error="disk full"))
    assert page.buttons["qwen:0.5b"].isEnabled()
