"""The window at the sizes people use it (1,024 x 700, 1,366 x 768, 1,920 x 1,080), in the app's
own theme: at 1,024 the chat list folds away (the header's Chats button brings it as a drawer)
and the chat settings float over the conversation instead of taking a column, so the
conversation keeps its room and the model picker its width; a base model's notice is one line;
at 1,366 the list has its column; at 1,920 the message box is as wide as the messages and under
them; the Models page gives the installed models the room an empty "Found on this computer"
panel does not need; the offline notice arrives without moving the pages.

The daemon is ``FakeClient`` (what is measured is the window's layout, not the daemon)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QApplication, QWidget

from localllm.app.gui.design.tokens import READING_WIDTH
from localllm.app.gui.services.bundle import build_services
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.theme import Theme
from localllm.app.gui.views.main_window import MainWindow
from localllm.daemon.api import ShowResponse
from localllm.daemon.client import ClientError
from tests.support.cli import SHOW, FakeClient
from tests.support.gui_e2e import prefs_in

BASE_MODEL = SHOW.model_copy(update={"template": "", "capabilities": ["completion"]})


@dataclass
class Daemon(FakeClient):
    """Serves a base model (no chat template); Hugging Face answers only while ``online``."""

    show_info: ShowResponse = field(default_factory=lambda: BASE_MODEL.model_copy())
    online: bool = True

    def hub_search(self, query: str, limit: int = 20):
        if not self.online:
            raise ClientError("Hugging Face could not be reached.", status=502)
        return super().hub_search(query, limit)


@pytest.fixture
def themed(qapp):
    """The app's light theme (its paddings decide what fits), taken off afterwards."""
    palette = qapp.palette()
    theme = Theme(qapp, "light")
    theme.apply()
    yield theme
    qapp.setStyleSheet("")
    qapp.setPalette(palette)
    theme.setParent(None)


@pytest.fixture
def app(qtbot, tmp_path, themed):
    daemon = Daemon()
    services = build_services(Gateway(daemon), tmp_path, autostart=False)
    window = MainWindow(services, prefs_in(tmp_path))
    qtbot.addWidget(window)
    window.show()
    services.start()
    page = window.chat_page
    qtbot.waitUntil(lambda: page.model_picker.currentText() == "tiny:latest", timeout=10_000)
    yield daemon, services, window
    services.shutdown()


def _resized(qtbot, window: MainWindow, width: int, height: int) -> None:
    window.resize(width, height)
    qtbot.waitUntil(lambda: window.size().toTuple() == (width, height))
    _settled(window)


def _settled(window: QWidget) -> None:
    """The layout requests what changed made, and the layouts they ask for, done now (twice:
    a column laid out can ask again, as the reading column does for its margins)."""
    for _ in range(2):
        QApplication.sendPostedEvents()
        window.layout().activate()


def _on_window(widget: QWidget, window: QWidget) -> QRect:
    return QRect(widget.mapTo(window, widget.rect().topLeft()), widget.size())


def test_at_1024_the_list_folds_and_the_settings_float_over_the_conversation(qtbot, app):
    _daemon, _services, window = app
    page = window.chat_page
    notice = page.settings.model_notice
    qtbot.waitUntil(lambda: notice.isVisibleTo(window), timeout=10_000)  # a base model
    _resized(qtbot, window, 1024, 700)
    page.settings_button.click()
    qtbot.waitUntil(lambda: page.settings_area.isVisibleTo(window))
    _settled(window)
    assert not page.sidebar.isVisibleTo(window)  # folded away...
    assert page.header.list_button.isVisibleTo(window)  # ...with a button to bring it
    assert page.splitter.indexOf(page.settings_area) == -1  # no column of its own
    drawer = page.columns.settings
    assert drawer.isVisibleTo(window) and page.settings_area.parent() is drawer
    viewport = page.transcript.viewport()
    assert viewport.width() >= 560 and viewport.height() >= 360
    over = _on_window(drawer, window)
    uncovered = over.left() - _on_window(viewport, window).left()
    assert uncovered >= 560  # the conversation beside the drawer, not only under it
    picker = page.model_picker
    assert picker.width() >= picker.sizeHint().width()  # its name whole
    assert window.rect().contains(_on_window(picker, window))
    assert not over.intersects(_on_window(picker, window))
    assert not over.intersects(_on_window(page.composer, window))  # Send in reach
    assert not over.intersects(_on_window(page.settings_button, window))  # and closing it
    tallest = max(notice.label.sizeHint().height(), notice.dismiss_button.sizeHint().height())
    assert notice.height() <= tallest  # a base model is said in one line, not a card
    assert "tiny:latest has no chat template" in notice.text()  # whole, in its tooltip too


def test_the_chats_button_brings_the_list_and_a_pick_takes_it_away(qtbot, app):
    _daemon, services, window = app
    page = window.chat_page
    _resized(qtbot, window, 1024, 700)
    qtbot.mouseClick(page.header.list_button, Qt.MouseButton.LeftButton)
    assert page.sidebar.isVisibleTo(window) and page.columns.chats.isVisibleTo(window)
    assert _on_window(page.sidebar, window).width() >= 230  # titles readable
    qtbot.mouseClick(page.sidebar.new_button, Qt.MouseButton.LeftButton)  # a chat is picked
    assert not page.sidebar.isVisibleTo(window)
    assert not page.header.list_button.isChecked()
    window.show_page("Chat")
    window.chat_page.focus_search()  # Ctrl+F: the list comes to search it
    assert page.sidebar.search.isVisibleTo(window)
    services.chat.search("")


def test_esc_closes_an_open_drawer_before_anything_else(qtbot, app):
    _daemon, _services, window = app
    page = window.chat_page
    _resized(qtbot, window, 1024, 700)
    page.settings_button.click()
    qtbot.mouseClick(page.header.list_button, Qt.MouseButton.LeftButton)
    assert page.columns.settings.isVisibleTo(window) and page.sidebar.isVisibleTo(window)
    page.composer.editor.setFocus()
    qtbot.keyClick(page.composer.editor, Qt.Key.Key_Escape)  # the settings' drawer first
    assert not page.columns.settings.isVisibleTo(window) and page.sidebar.isVisibleTo(window)
    qtbot.keyClick(page.composer.editor, Qt.Key.Key_Escape)  # then the list's
    assert not page.sidebar.isVisibleTo(window) and not page.header.list_button.isChecked()


def test_at_1366_the_chat_list_has_its_column(qtbot, app):
    _daemon, _services, window = app
    page = window.chat_page
    _resized(qtbot, window, 1366, 768)
    assert page.sidebar.isVisibleTo(window) and page.splitter.indexOf(page.sidebar) == 0
    assert not page.header.list_button.isVisibleTo(window)
    assert page.sidebar.width() >= 200
    page.settings_button.click()
    qtbot.waitUntil(lambda: page.settings_area.isVisibleTo(window))
    _settled(window)
    assert page.splitter.indexOf(page.settings_area) == 2  # room for a column here
    assert page.transcript.viewport().width() >= 560


def test_at_1920_the_message_box_is_as_wide_as_the_messages_and_under_them(qtbot, app):
    _daemon, _services, window = app
    page = window.chat_page
    _resized(qtbot, window, 1920, 1080)
    box = _on_window(page.composer, window)
    notice = _on_window(page.settings.model_notice, window)
    text = _on_window(page.transcript.viewport(), window)
    assert box.width() == READING_WIDTH and notice.width() == READING_WIDTH
    assert abs(box.center().x() - text.center().x()) <= 8  # centred (a scroll bar aside)
    assert notice.left() == box.left()


def test_at_1024_the_installed_models_keep_the_room_found_does_not_need(qtbot, app):
    _daemon, _services, window = app
    _resized(qtbot, window, 1024, 700)
    window.show_page("Models")
    found, table = window.found_panel, window.models_page.table
    qtbot.waitUntil(lambda: found.status.text() == "No GGUF models found.", timeout=10_000)
    _settled(window)
    whole = window.models_page.splitter.height()
    assert found.height() <= 3 * found.fontMetrics().height() + 16  # its header line only
    assert table.height() >= whole // 2  # the most of the three
    rows = table.viewport().height() // table.verticalHeader().defaultSectionSize()
    assert rows >= 6


def test_the_offline_notice_arrives_without_moving_the_pages(qtbot, app):
    daemon, services, window = app
    _resized(qtbot, window, 1024, 700)
    before = _on_window(window.pages, window)
    daemon.online = False
    services.hub.check_online()
    qtbot.waitUntil(lambda: window.offline.isVisibleTo(window), timeout=10_000)
    _settled(window)
    assert _on_window(window.pages, window) == before
    assert window.nav.width() == window.offline.width()  # in the navigation's column
    last = window.nav.visualRect(window.nav.model().index(window.nav.count() - 1, 0))
    assert window.nav.viewport().rect().contains(last)  # every page still listed
