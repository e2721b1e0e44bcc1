"""The window as a user resizes and tabs through it, over a real daemon: the chat settings open
without the window growing (a drawer over the conversation at 1,024 px, a column at 1,366 where
the chat list keeps room for its titles), and every button on every page has a name a screen
reader can say."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton

from localllm.app.gui.views.main_window import PAGES
from tests.support.gui_e2e import MODEL, GuiDaemon, open_app, tiny_models

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    running = GuiDaemon(tmp_path_factory.mktemp("gui-window"), tiny_models(tiny_model_path))
    yield running
    running.stop()


@pytest.fixture
def window(qtbot, daemon, tmp_path):
    _services, shown = open_app(qtbot, daemon.gateway(), tmp_path)
    qtbot.waitUntil(lambda: shown.services.library.loaded, timeout=10_000)
    qtbot.waitUntil(lambda: shown.chat_page.model_picker.currentText() == MODEL, timeout=10_000)
    yield shown
    shown.services.shutdown()


@pytest.mark.parametrize("width, height, drawer", [(1024, 700, True), (1366, 768, False)])
def test_the_window_keeps_its_width_when_the_chat_settings_open(
    qtbot, window, width, height, drawer
):
    """At 1,024 px the settings float over the conversation (the chat list folded away); at
    1,366 they are a column beside it and the list."""
    window.resize(width, height)
    qtbot.waitUntil(lambda: window.width() == width)
    page = window.chat_page
    page.settings_button.click()
    qtbot.waitUntil(lambda: page.settings_area.isVisible())
    qtbot.wait(100)  # the layout settles
    assert window.width() == width
    assert page.settings_area.width() >= 230  # readable, not squeezed
    assert page.columns.settings.floating is drawer
    for part in [page.splitter.widget(i) for i in range(page.splitter.count())]:  # all fits
        least = max(part.minimumWidth(), part.minimumSizeHint().width())
        assert part.width() >= least and part.geometry().right() < page.splitter.width(), part
    if not drawer:
        assert page.sidebar.width() >= 170  # the chat titles keep their room ("Sea…" no more)
    assert page.settings.temperature.isVisibleTo(window)
    page.settings_button.click()
    qtbot.waitUntil(lambda: not page.settings_area.isVisible())
    assert window.width() == width


def test_every_button_has_a_name_to_say(qtbot, window):
    window.resize(1024, 700)
    unnamed = []
    for title, _icon in PAGES:
        window.show_page(title)
        qtbot.wait(50)
        page = window.pages.currentWidget()
        for button in page.findChildren(QAbstractButton):
            reachable = (
                button.isVisibleTo(window) and button.focusPolicy() != Qt.FocusPolicy.NoFocus
            )
            if reachable and not (button.text() or button.accessibleName()):
                unnamed.append(f"{title}: {type(button).__name__} {button.toolTip()!r}")
    assert not unnamed, unnamed


def test_each_entry_of_the_navigation_shows_its_own_page(window):
    own = {
        "Chat": window.chat_page,
        "Models": window.models_page,
        "Discover": window.discover_page,
        "Downloads": window.downloads_page,
        "Server": window.server_page,
        "Tools": window.tools_page,
        "Settings": window.settings_page,
    }
    assert [window.nav.item(row).text() for row in range(window.nav.count())] == list(own)
    for title, page in own.items():
        window.show_page(title)
        assert window.pages.currentWidget() is page, title
    assert window.pages.count() == len(own)
