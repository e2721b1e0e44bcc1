"""Discover and the first-run page without the internet, over a real daemon whose Hugging Face
is an address nothing listens on: the window's banner says once what needs the internet (the
pages do not say it again under it), Discover offers to import a file beside the Download
button it turns off, its search finds every word typed anywhere in the built-in list ("qwen
coder" finds qwen2.5-coder), and a search that finds nothing says so in the heading.
"""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QLabel

from localllm.app.gui.item_models.table import ITEM_ROLE
from localllm.app.gui.views.main_window import MainWindow
from tests.support.daemon import free_port
from tests.support.gui_e2e import GuiDaemon, open_app

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    offline = {"HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
    running = GuiDaemon(tmp_path_factory.mktemp("gui-offline"), env=offline)
    yield running
    running.stop()


@pytest.fixture
def window(qtbot, daemon, tmp_path):
    services, shown = open_app(qtbot, daemon.gateway(), tmp_path)
    qtbot.waitUntil(lambda: services.monitor.status.up, timeout=10_000)
    yield shown
    services.shutdown()


def _offline_discover(qtbot, window: MainWindow):
    window.show_page("Discover")
    hub = window.services.hub
    qtbot.waitUntil(lambda: hub.catalog.rowCount() > 3 and hub.offline, timeout=20_000)
    return window.discover_page


def _listed(page) -> list[str]:
    shown = page.catalog.model()
    return [shown.index(r, 0).data(ITEM_ROLE).name for r in range(shown.rowCount())]


def _said(window: MainWindow, words: str) -> list[str]:
    """The texts on screen, outside the offline banner, that contain ``words``."""
    banner = window.offline
    return [
        label.text()
        for label in window.findChildren(QLabel)
        if label.isVisibleTo(window)
        and not banner.isAncestorOf(label)
        and words.casefold() in label.text().casefold()
    ]


def test_the_search_finds_every_word_anywhere_in_the_built_in_list(qtbot, window):
    page = _offline_discover(qtbot, window)
    qtbot.keyClicks(page.query, "qwen coder")
    found = _listed(page)
    assert {"qwen2.5-coder:1.5b", "qwen2.5-coder:7b"} <= set(found)
    catalog = {m.name: m for m in window.services.hub.catalog.items()}
    for name in found:
        text = f"{name} {catalog[name].description}".casefold()
        assert "qwen" in text and "coder" in text, name
    page.query.clear()
    qtbot.keyClicks(page.query, "CODER  7b")  # any order, any case, any spacing
    assert "qwen2.5-coder:7b" in _listed(page) and "qwen2.5-coder:1.5b" not in _listed(page)
    assert page.heading.text().startswith("Popular models")


def test_a_search_that_finds_nothing_says_so_in_the_heading(qtbot, window):
    page = _offline_discover(qtbot, window)
    qtbot.keyClicks(page.query, "xyz")
    assert not _listed(page) and not _said(window, "Popular models")
    assert page.heading.text() == "No models match “xyz”." and page.heading.isVisibleTo(window)
    assert page.empty.isVisibleTo(window) and not page.catalog.isVisibleTo(window)
    page.query.clear()
    assert page.heading.text().startswith("Popular models") and page.catalog.isVisibleTo(window)
    assert len(_listed(page)) == window.services.hub.catalog.rowCount()


def test_offline_discover_says_it_once_and_offers_to_import_a_file(qtbot, window):
    page = _offline_discover(qtbot, window)
    qtbot.waitUntil(lambda: window.offline.isVisibleTo(window), timeout=10_000)
    assert "internet" in window.offline.text()  # the banner says it...
    assert not _said(window, "internet")  # ...and the page does not, again
    assert not _said(window, "once the internet connection is back")
    assert "could not reach Hugging Face" in page.state.text()
    hub = window.services.hub
    row = page.catalog.model().mapFromSource(hub.catalog.index(hub.catalog.row_of(_first(page)), 0))
    page.catalog.selectRow(row.row())
    assert not page.pull_button.isEnabled() and "internet" in page.pull_button.toolTip()
    assert page.import_button.isVisibleTo(window) and page.import_button.isEnabled()
    page.import_requested.disconnect()  # the window would open a file dialog
    with qtbot.waitSignal(page.import_requested) as asked:
        page.import_button.click()
    assert asked.args == [None]


def _first(page) -> str:
    return _listed(page)[0]


def test_the_first_run_page_does_not_repeat_the_banner(qtbot, window):
    welcome = window.welcome
    qtbot.waitUntil(lambda: window.chat_page.currentWidget() is welcome, timeout=10_000)
    qtbot.waitUntil(lambda: window.offline.isVisibleTo(window), timeout=20_000)
    qtbot.waitUntil(lambda: bool(welcome.buttons), timeout=10_000)
    assert "internet" in window.offline.text()
    assert not _said(window, "Downloads need the internet")  # was on each of five cards
    assert not any(p.isVisibleTo(window) for p in welcome.problems.values())
    for name, button in welcome.buttons.items():  # each download is off, and says why
        assert not button.isEnabled() and "internet" in button.toolTip(), name
    assert welcome.import_button.isEnabled()
