"""The Settings page lists every daemon setting from the one declaration (``daemon.settings``):
grouped, the value in the app's environment, those set marked, a key never shown, what each
does in its tooltip. The window is the one ``localllm app`` opens (``open_window``)."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from localllm.app.gui.main import AppConfig, open_window
from localllm.app.gui.state.gateway import Gateway
from localllm.daemon.settings import Settings, settings_rows
from tests.support.cli import FakeClient
from tests.support.gui_e2e import prefs_in


def test_the_settings_page_shows_every_daemon_setting_in_effect(qtbot, tmp_path):
    env = {"LOCALLLM_NUM_PARALLEL": "3", "LOCALLLM_API_KEY": "do-not-show-me"}
    settings = Settings.from_env(env)
    app = QApplication.instance()
    config = AppConfig(settings=settings, history_dir=tmp_path, autostart=False)
    window, _tray = open_window(app, Gateway(FakeClient()), config, prefs_in(tmp_path))
    qtbot.addWidget(window)
    app.aboutToQuit.disconnect(window.services.shutdown)
    try:
        tree = window.settings_page.environment.tree
        shown = {
            tree.topLevelItem(g).child(c).text(0): tree.topLevelItem(g).child(c)
            for g in range(tree.topLevelItemCount())
            for c in range(tree.topLevelItem(g).childCount())
        }
        rows = settings_rows(settings)
        assert set(shown) == {row.name for row in rows}
        assert tree.topLevelItemCount() == len({row.group for row in rows})
        assert shown["LOCALLLM_NUM_PARALLEL"].text(1) == "3  (set)"
        key = shown["LOCALLLM_API_KEY"]
        assert "do-not-show-me" not in key.text(1) and key.text(1).endswith("(set)")
        help_of = {row.name: row.help for row in rows}
        assert shown["LOCALLLM_NUM_PARALLEL"].toolTip(0) == help_of["LOCALLLM_NUM_PARALLEL"]
        assert not shown["LOCALLLM_KEEP_ALIVE"].text(1).endswith("(set)")
    finally:
        window.services.shutdown()
