"""The app and its daemon: started when nothing answers, a dead daemon shown as such with a
restart, a hanging one that never freezes the window, the local-network switch (API key, a
daemon re-bound on every interface, remembered for the next start), and a pull without
internet that says so in place. Each test has its own daemon: they stop and start it.
"""

from __future__ import annotations

import httpx
import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from localllm.app.gui.item_models.table import ITEM_ROLE
from localllm.app.gui.main import AppConfig, open_window, remembered_lan
from localllm.app.gui.state.daemon_control import lan_address
from localllm.app.gui.state.daemon_health import DaemonState
from localllm.app.gui.views.welcome import OFFLINE_REASON
from tests.support.daemon import free_port
from tests.support.gui_e2e import MODEL, GuiDaemon, HangingServer, open_app, prefs_in, tiny_models
from tests.support.local_hub import LocalHub

pytestmark = pytest.mark.slow


@pytest.fixture
def models(tiny_model_path):
    return tiny_models(tiny_model_path)


@pytest.fixture
def cleanup():
    daemons: list[GuiDaemon] = []
    yield daemons.append
    for daemon in daemons:
        daemon.stop()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/", timeout=10).status_code == 200
    except httpx.TransportError:
        return False


def _close(services) -> None:
    services.shutdown()


def test_the_window_opens_at_once_and_starts_the_daemon(
    qtbot, tmp_path, models, monkeypatch, cleanup
):
    planned = GuiDaemon(tmp_path / "d", models, start=False)  # nothing answers yet
    cleanup(planned)
    planned.use_env(monkeypatch)
    app = QApplication.instance()
    config = AppConfig(planned.settings(), history_dir=tmp_path, theme="light")
    window, _tray = open_window(app, planned.gateway(), config, prefs_in(tmp_path))
    qtbot.addWidget(window)
    app.aboutToQuit.disconnect(window.services.shutdown)
    try:
        assert window.isVisible() and not _answers(planned.url)  # shown before it can answer
        states = []
        window.services.monitor.status_changed.connect(lambda s: states.append(s.state))
        qtbot.waitUntil(lambda: window.services.monitor.status.up, timeout=60_000)
        assert DaemonState.STARTING in states or states[0] is DaemonState.RUNNING
        assert "running" in window.indicator.text.text()
        qtbot.waitUntil(lambda: window.services.library.table.row_of(MODEL) is not None)
        assert httpx.get(planned.url + "/").status_code == 200
    finally:
        window.services.shutdown()


def test_a_dead_daemon_is_shown_with_a_restart_that_works(
    qtbot, tmp_path, models, monkeypatch, cleanup
):
    daemon = GuiDaemon(tmp_path / "d", models)
    cleanup(daemon)
    daemon.use_env(monkeypatch)
    services, window = open_app(qtbot, daemon.gateway(quick_timeout=2.0), tmp_path)
    try:
        qtbot.waitUntil(lambda: services.monitor.status.up, timeout=10_000)
        daemon.daemon.stop()  # it dies (or the user killed it)
        qtbot.waitUntil(lambda: window.indicator.restart.isVisibleTo(window), timeout=10_000)
        assert services.monitor.status.state is DaemonState.STOPPED
        assert "stopped" in window.indicator.text.text()
        window.indicator.restart.click()
        qtbot.waitUntil(lambda: services.monitor.status.up, timeout=60_000)
        assert not window.indicator.restart.isVisibleTo(window)
        services.chat.new_chat(MODEL)
        with qtbot.waitSignal(services.chat.reply_finished, timeout=30_000):
            assert services.chat.send("are you back?")
        assert not services.chat.session.messages[-1].failed
    finally:
        _close(services)


def test_a_hanging_daemon_never_freezes_the_window(qtbot, tmp_path):
    with HangingServer() as stuck:
        planned = GuiDaemon(
            tmp_path / "d", env={"LOCALLLM_HOST": f"127.0.0.1:{stuck.port}"}, start=False
        )
        planned.env["LOCALLLM_HOST"] = f"127.0.0.1:{stuck.port}"
        gateway = planned.gateway(quick_timeout=5.0)
        app = QApplication.instance()
        config = AppConfig(planned.settings(), history_dir=tmp_path, autostart=False)
        window, _tray = open_window(app, gateway, config, prefs_in(tmp_path))
        qtbot.addWidget(window)
        app.aboutToQuit.disconnect(window.services.shutdown)
        shown: list[str] = []  # the status the window showed at each tick of a UI timer
        timer = QTimer(interval=20)
        timer.timeout.connect(lambda: shown.append(window.indicator.text.text()))
        try:
            assert window.isVisible() and "Connecting" in window.indicator.text.text()
            window.services.library.refresh()  # more calls that hang
            window.services.hub.search("qwen")
            timer.start()
            # The loop runs on while the check is still out (it gives up after 5 s): a window
            # that waited on any of these calls would tick only once it had given up.
            qtbot.waitUntil(lambda: sum("Connecting" in t for t in shown) >= 20, timeout=30_000)
            window.show_page("Server")  # pages switch while calls hang
            assert window.pages.currentWidget() is window.server_page
            qtbot.waitUntil(lambda: window.indicator.restart.isVisibleTo(window), timeout=30_000)
            assert "not answering" in window.indicator.text.text()
            assert not window.services.library.loaded
        finally:
            timer.stop()
            window.services.shutdown()


def test_serving_on_the_local_network_and_remembering_it(
    qtbot, tmp_path, models, monkeypatch, cleanup, tiny_q8_model_path
):
    hub = LocalHub().start()
    size = tiny_q8_model_path.stat().st_size
    hub.add_repo("local/Q8-GGUF", {"Q8-Q8_0.gguf": tiny_q8_model_path})
    hub.set_throttle("local/Q8-GGUF", "Q8-Q8_0.gguf", size / 60)  # a pull under way...
    daemon = GuiDaemon(tmp_path / "d", models, env={"HF_ENDPOINT": hub.endpoint})
    cleanup(daemon)
    daemon.use_env(monkeypatch)
    services, window = open_app(qtbot, daemon.gateway(), tmp_path)
    page = window.server_page
    try:
        qtbot.waitUntil(lambda: services.monitor.status.up, timeout=10_000)
        services.downloads.pull("hf.co/local/Q8-GGUF:Q8_0")
        qtbot.waitUntil(lambda: services.downloads.table.item(0).total == size, timeout=10_000)
        window.show_page("Server")
        qtbot.waitUntil(lambda: services.server.info is not None, timeout=10_000)
        assert not page.lan.isChecked() and not page.key_row.isVisibleTo(window)
        page.lan.click()
        qtbot.waitUntil(lambda: page.api_key.text() != "", timeout=60_000)
        hub.set_throttle("local/Q8-GGUF", "Q8-Q8_0.gguf", None)  # ...goes on after the restart
        qtbot.waitUntil(lambda: services.downloads.table.item(0).state == "done", timeout=30_000)
        key = daemon.keys().load()
        assert page.api_key.text() == key and page.key_row.isVisibleTo(window)
        assert services.server.info.lan and services.server.info.api_key_set
        assert services.monitor.status.up
        assert "local network" in page.address.text()
        assert (
            f"Bearer {key}" in page.snippet_tabs.widget(2).findChild(type(page.log)).toPlainText()
        )
        _assert_needs_key(daemon.url, key)
        if lan_address() != "127.0.0.1":  # this machine has a network: reach it there
            answer = httpx.get(
                f"http://{lan_address()}:{services.server.info.port}/api/tags",
                headers={"Authorization": f"Bearer {key}"},
                timeout=10,
            )
            assert answer.status_code == 200
        assert remembered_lan(prefs_in(tmp_path))
    finally:
        _close(services)
        hub.stop()

    # the next start: the daemon is gone; the app starts it on the network again
    httpx.post(daemon.url + "/api/shutdown", headers={"Authorization": f"Bearer {key}"})
    assert daemon.controls[0].process.wait(20) is not None
    lan = remembered_lan(prefs_in(tmp_path))
    services, window = open_app(qtbot, daemon.gateway(lan=lan), tmp_path)
    page = window.server_page
    try:
        qtbot.waitUntil(lambda: services.monitor.status.up, timeout=60_000)
        window.show_page("Server")
        qtbot.waitUntil(lambda: page.lan.isChecked(), timeout=10_000)
        _assert_needs_key(daemon.url, key)
        page.lan.click()  # and off again: this machine only, no key needed
        qtbot.waitUntil(
            lambda: services.server.info is not None and not services.server.info.lan,
            timeout=60_000,
        )
        assert httpx.get(daemon.url + "/api/tags").status_code == 200
        assert not remembered_lan(prefs_in(tmp_path))
        assert not page.lan.isChecked() and "this computer only" in page.address.text()
    finally:
        _close(services)


def _assert_needs_key(url: str, key: str) -> None:
    assert httpx.get(url + "/api/tags").status_code == 401
    assert httpx.get(url + "/api/tags", headers={"Authorization": f"Bearer {key}"}).is_success


def _offline_app(qtbot, tmp_path, cleanup):
    """The app over a daemon whose Hugging Face is an address nothing listens on."""
    offline = {"HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
    daemon = GuiDaemon(tmp_path / "d", env=offline)
    cleanup(daemon)
    return open_app(qtbot, daemon.gateway(), tmp_path)


def test_a_pull_without_internet_says_so_in_place(qtbot, tmp_path, cleanup):
    services, window = _offline_app(qtbot, tmp_path, cleanup)
    try:
        qtbot.waitUntil(lambda: window.chat_page.currentWidget() is window.welcome, timeout=10_000)
        qtbot.waitUntil(lambda: "RAM" in window.welcome.machine.text(), timeout=10_000)
        window.welcome.pull_requested.emit("qwen:0.5b")  # what its Download button asks
        problem = window.welcome.problems["qwen:0.5b"]
        qtbot.waitUntil(lambda: "could not reach" in problem.text(), timeout=20_000)
        assert problem.isVisibleTo(window) and "import a GGUF file" in problem.text()
        assert problem.text().count(". ") == 0  # one sentence, with the next step
        assert window.welcome.buttons["qwen:0.5b"].text() == "Retry download"
        window.show_page("Discover")
        services.hub.search("qwen")
        state = window.discover_page.state
        qtbot.waitUntil(lambda: "could not reach" in state.text(), timeout=20_000)
        assert "built-in list" in state.text()  # what the search does (the banner: the rest)
    finally:
        _close(services)


def test_offline_the_first_run_says_so_and_its_downloads_wait(qtbot, tmp_path, cleanup):
    """No internet: a banner says so, the first-run downloads are off (each button's tooltip
    says why; the cards do not repeat the banner), and importing a GGUF file you have is the
    button to press."""
    services, window = _offline_app(qtbot, tmp_path, cleanup)
    try:
        qtbot.waitUntil(lambda: window.chat_page.currentWidget() is window.welcome, timeout=10_000)
        qtbot.waitUntil(lambda: window.offline.isVisibleTo(window), timeout=20_000)
        assert "offline" in window.offline.text() and "import a GGUF" in window.offline.text()
        welcome = window.welcome
        qtbot.waitUntil(lambda: bool(welcome.buttons), timeout=10_000)
        for name, button in welcome.buttons.items():
            assert not button.isEnabled(), name
            assert "offline" in button.toolTip()
        assert not any(p.isVisibleTo(window) for p in welcome.problems.values())
        assert all(b.toolTip() == OFFLINE_REASON for b in welcome.buttons.values())
        assert welcome.import_button.isEnabled() and welcome.import_button.property("kind") == (
            "primary"
        )
    finally:
        _close(services)


def test_offline_discover_search_filters_the_built_in_list(qtbot, tmp_path, cleanup):
    services, window = _offline_app(qtbot, tmp_path, cleanup)
    page, hub = window.discover_page, services.hub
    try:
        window.show_page("Discover")
        qtbot.waitUntil(lambda: hub.catalog.rowCount() > 3 and hub.offline, timeout=20_000)
        qtbot.keyClicks(page.query, "qwen")
        shown = page.catalog.model()
        found = [shown.index(r, 0).data(ITEM_ROLE) for r in range(shown.rowCount())]
        assert any(m.name.startswith("qwen") for m in found)
        assert all("qwen" in f"{m.name} {m.description}".casefold() for m in found)
        assert len(found) < hub.catalog.rowCount()
        qtbot.keyClicks(page.query, "-nothing-like-it")
        assert shown.rowCount() == 0 and page.empty.isVisibleTo(window)
        page.query.clear()
        assert shown.rowCount() == hub.catalog.rowCount()
    finally:
        _close(services)


def test_discover_offline_lists_the_catalog_and_keeps_the_window_on_screen(
    qtbot, tmp_path, cleanup
):
    services, window = _offline_app(qtbot, tmp_path, cleanup)
    window.resize(1000, 700)  # room for every page on a 1400 px screen, not much more
    page, hub = window.discover_page, services.hub
    try:
        window.show_page("Discover")
        qtbot.waitUntil(
            lambda: hub.catalog.rowCount() > 0 and hub.system is not None, timeout=10_000
        )
        qtbot.keyClicks(page.query, "qwen")
        qtbot.waitUntil(lambda: "could not reach Hugging Face" in page.state.text(), timeout=20_000)
        QApplication.sendPostedEvents()  # the layout requests the new text made...
        window.layout().activate()  # ...and the layout they ask for, done now
        assert window.width() == 1000 and window.minimumSizeHint().width() < 1000
        assert page.state.minimumSizeHint().width() < 200  # it wraps: no width of its own
        assert page.state.wordWrap() and "Error" not in page.state.text()
        assert "internet" not in page.state.text()  # said once, by the window's banner
        listed = {m.name: m for m in hub.catalog.items()}
        assert "qwen2.5:0.5b" in listed and listed["qwen2.5:0.5b"].size > 0
        assert page.catalog.isVisibleTo(window) and not page.repos.isVisibleTo(window)
        row = hub.catalog.row_of("qwen2.5:0.5b")
        badge = hub.catalog.index(row, 3).data()
        assert badge in ("fits in VRAM", "fits in RAM", "too large")
        page.catalog.selectRow(page.catalog.model().mapFromSource(hub.catalog.index(row, 0)).row())
        assert page.pull_button.text() == "Download qwen2.5:0.5b (491.4 MB)"
        assert not page.pull_button.isEnabled() and "offline" in page.pull_button.toolTip()
    finally:
        _close(services)
