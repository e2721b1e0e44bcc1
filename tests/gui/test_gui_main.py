"""Start-up: arguments, a window that opens at once even when the daemon hangs, and a quit
that still saves the reply in progress.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from app.gui.chat.store import ConversationStore
from app.gui.main import AppConfig, open_window, parse_args
from app.gui.services.bundle import HISTORY_FILE, build_services


def test_arguments_become_one_config():
    config = parse_args(
        [
            "--host",
            "127.0.0.1:9999",
            "--data-dir",
            "/tmp/x",
            "--no-start",
            "--theme",
            "dark",
            "-style",
            "fusion",
        ]
    )
    assert config == AppConfig("http://127.0.0.1:9999", Path("/tmp/x"), False, "dark")
    assert parse_args([]).base_url == "http://127.0.0.1:11435"


@pytest.mark.e2e_later
def test_the_window_opens_at_once_while_the_daemon_hangs(qtbot, gateway, tmp_path):
    gateway.hang.clear()  # every daemon call blocks
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    started = time.monotonic()
    window, _tray = open_window(
        QApplication.instance(), gateway, AppConfig(data_dir=tmp_path, theme="light"), settings
    )
    qtbot.addWidget(window)
    try:
        assert window.isVisible() and time.monotonic() - started < 2.0
        qtbot.wait(50)  # events flow while the version check hangs
        assert "Connecting" in window.indicator.text.text()
        assert window.services.monitor.status.state.value == "connecting"
    finally:
        QApplication.instance().aboutToQuit.disconnect(window.services.shutdown)
        window.services.shutdown()
        gateway.hang.set()


@pytest.mark.e2e_later
def test_quitting_mid_reply_saves_what_has_streamed(qtbot, gateway, tmp_path):
    gateway.gate = threading.Event()
    services = build_services(gateway, tmp_path)
    services.chat.new_chat("qwen:0.5b")
    services.chat.send("tell me a story")
    qtbot.waitUntil(lambda: services.chat.session.messages[-1].content == "Hello", timeout=3000)
    services.shutdown()
    store = ConversationStore(tmp_path / HISTORY_FILE)
    [chat] = store.conversations()
    assert [m.content for m in store.messages(chat.id)] == ["tell me a story", "Hello"]
    gateway.gate.set()
