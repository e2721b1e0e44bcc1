"""The Settings page's theme box shows the theme in effect: when ``--theme`` overrides the
saved choice, the box shows the flag's theme and says that ``--theme`` set it; a choice made
there applies at once and is the one kept."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from localllm.app.gui.main import AppConfig, open_window
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.views.main_window import THEME_KEY
from tests.support.cli import FakeClient
from tests.support.gui_e2e import prefs_in


def test_the_theme_box_shows_what_theme_is_in_effect(qtbot, tmp_path):
    prefs = prefs_in(tmp_path)
    prefs.setValue(THEME_KEY, "light")  # saved on the Settings page in an earlier run
    app = QApplication.instance()
    config = AppConfig(history_dir=tmp_path, autostart=False, theme="dark")  # --theme dark
    window, _tray = open_window(app, Gateway(FakeClient()), config, prefs)
    qtbot.addWidget(window)
    app.aboutToQuit.disconnect(window.services.shutdown)
    try:
        page = window.settings_page
        assert window.theme.dark
        assert page.theme.currentData() == "dark"  # what is in effect, not the saved "light"
        window.show_page("Settings")
        assert page.theme_note.isVisible() and "--theme dark" in page.theme_note.text()
        page.theme.setCurrentIndex(page.theme.findData("light"))
        page.theme.activated.emit(page.theme.currentIndex())  # as a click picks it
        assert not window.theme.dark and str(prefs.value(THEME_KEY)) == "light"
        assert not page.theme_note.isVisible()  # the choice made here is the one in effect
    finally:
        window.services.shutdown()


def test_without_the_flag_the_saved_choice_shows_and_nothing_more(qtbot, tmp_path):
    prefs = prefs_in(tmp_path)
    prefs.setValue(THEME_KEY, "light")
    app = QApplication.instance()
    config = AppConfig(history_dir=tmp_path, autostart=False)
    window, _tray = open_window(app, Gateway(FakeClient()), config, prefs)
    qtbot.addWidget(window)
    app.aboutToQuit.disconnect(window.services.shutdown)
    try:
        window.show_page("Settings")
        assert window.settings_page.theme.currentData() == "light"
        assert not window.settings_page.theme_note.isVisible()
    finally:
        window.services.shutdown()
