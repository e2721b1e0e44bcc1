"""Small things a new user tripped over: the Settings page's theme list showing every choice
in full, the Models table saying "completion" for a base model as its details do (and "Max
context" for what was "Trained for"), the Server page's log hiding the app's own requests
while "Show the app's own requests" is unticked, and the file dialogs opening in the home
folder (or the last one used) rather than wherever the app was started."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from localllm.app.gui.item_models.table import BADGES_ROLE
from localllm.app.gui.main import AppConfig, open_window
from localllm.app.gui.state.daemon_log import app_user_agent, visible_log
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.views.file_dialogs import remember_folder, start_folder
from localllm.app.gui.views.main_window import THEME_KEY
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.cli import FakeClient
from tests.support.gui_e2e import GuiDaemon, open_app, prefs_in, tiny_models

BASE, TINY = "base:latest", "tiny:latest"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("polish")
    base = write_tiny_model(root / "base.gguf", chat_template=None, seed=5)  # no chat template
    running = GuiDaemon(root, {**tiny_models(tiny_model_path), "base": base})
    yield running
    running.stop()


def test_the_theme_list_opens_with_every_choice_in_full(qtbot, tmp_path):
    """It drops down under the box, as tall as its choices: not the style's menu over the box,
    which scrolled to put the current choice on it and left "Dark" half under an arrow."""
    prefs = prefs_in(tmp_path)
    prefs.setValue(THEME_KEY, "dark")  # the last choice is the current one
    app = QApplication.instance()
    config = AppConfig(history_dir=tmp_path, autostart=False)
    window, _tray = open_window(app, Gateway(FakeClient()), config, prefs)
    qtbot.addWidget(window)
    app.aboutToQuit.disconnect(window.services.shutdown)
    try:
        window.resize(1366, 768)
        window.show_page("Settings")
        box = window.settings_page.theme
        QTest.qWaitForWindowExposed(window)
        assert box.currentText() == "Dark"
        box.showPopup()
        view = box.view()
        qtbot.waitUntil(view.isVisible)
        inside = view.viewport().rect()
        rows = [view.visualRect(view.model().index(row, 0)) for row in range(box.count())]
        assert [view.model().index(r, 0).data() for r in range(box.count())] == [
            "Follow the system",
            "Light",
            "Dark",
        ]
        assert all(inside.contains(row) for row in rows), (inside, rows)  # none cut off
        assert view.verticalScrollBar().maximum() == 0  # nothing to scroll to
        under = box.mapToGlobal(QPoint(0, box.height()))
        assert view.window().geometry().top() >= under.y() - 1  # under the box, not over it
        box.hidePopup()
    finally:
        window.services.shutdown()


@pytest.mark.slow
def test_a_base_model_can_completion_in_the_table_as_in_its_details(qtbot, daemon, tmp_path):
    services, _window = open_app(qtbot, daemon.gateway(), tmp_path, window=False)
    try:
        table = services.library.table

        def known(name: str) -> bool:
            row = table.row_of(name)
            return row is not None and table.item(row).capabilities is not None

        qtbot.waitUntil(lambda: known(BASE) and known(TINY), timeout=20_000)
        base, tiny = table.row_of(BASE), table.row_of(TINY)
        assert table.item(base).capabilities == {"completion"}  # what its details say
        titles = [
            table.headerData(c, Qt.Orientation.Horizontal) for c in range(table.columnCount())
        ]
        can = titles.index("Can")
        assert table.index(base, can).data() == "completion"
        assert table.index(base, can).data(BADGES_ROLE) == (("completion", "neutral"),)
        assert "base model" in table.index(base, can).data(Qt.ItemDataRole.ToolTipRole)
        assert table.index(tiny, can).data() == ""  # chat, what every other model does
        assert "Max context" in titles and "Trained for" not in titles
        assert table.index(base, titles.index("Max context")).data() == "2,048"
    finally:
        services.shutdown()


@pytest.mark.slow
def test_the_server_log_hides_the_apps_own_plans_until_asked(qtbot, daemon, tmp_path):
    """The app plans every installed model's memory (``POST /api/plan``, which loads
    nothing); those lines stayed in the log with the box unticked."""
    services, window = open_app(qtbot, daemon.gateway(), tmp_path)
    page = window.server_page
    try:
        log = daemon.root / "logs" / "daemon.log"
        window.show_page("Server")
        qtbot.waitUntil(lambda: '"path": "/api/plan"' in log.read_text(), timeout=20_000)
        httpx.get(daemon.url + "/v1/models")  # someone else's, after the app's plan
        qtbot.waitUntil(lambda: "/v1/models" in page.log.toPlainText(), timeout=20_000)
        assert not page.show_own.isChecked()
        assert "/api/plan" not in page.log.toPlainText()
        page.show_own.click()
        assert "POST /api/plan  200" in page.log.toPlainText()
        assert "(localllm-app/" in page.log.toPlainText()
    finally:
        services.shutdown()


def test_the_apps_reads_that_found_the_hub_out_of_reach_hide_too():
    """Offline, the Discover page's plans of the catalog's models each fail (502: the hub is
    out of reach), a dozen lines at every visit; the page says so itself. A failure of the
    daemon's own (500) and a refusal (403) still show."""
    ours = app_user_agent()

    def line(path: str, status: int, method: str = "POST") -> str:
        record = {"event": "request", "method": method, "path": path, "status": status}
        return json.dumps({**record, "user_agent": ours})

    hidden = [line("/api/plan", 502), line("/api/hub/search", 502, "GET"), line("/api/plan", 200)]
    shown = [line("/api/plan", 500), line("/api/plan", 403), line("/api/pull", 502)]
    assert visible_log("\n".join(hidden + shown)).splitlines() == shown


def test_file_dialogs_start_at_home_then_where_the_last_pick_was(tmp_path):
    prefs = prefs_in(tmp_path)
    assert start_folder(prefs) == str(Path.home())
    (tmp_path / "models").mkdir()
    picked = tmp_path / "models" / "mine.gguf"
    picked.write_bytes(b"GGUF")
    remember_folder(str(picked), prefs)
    assert start_folder(prefs) == str(tmp_path / "models")
    remember_folder(str(tmp_path), prefs)  # a folder picked is kept itself
    assert start_folder(prefs) == str(tmp_path)
    (tmp_path / "models" / "mine.gguf").unlink()
    (tmp_path / "models").rmdir()
    remember_folder(str(picked), prefs)  # a folder that has gone since: home again
    assert start_folder(prefs) == str(Path.home())
