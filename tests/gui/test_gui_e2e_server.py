"""The Server page over a real daemon: the log without the app's own requests (tagged by its
User-Agent in the daemon's request log), checks that space out while all is quiet, and the
daemon moved to another port, stopped and started again from the page (and a failed log
check is not left on the page once the daemon is back).
"""

from __future__ import annotations

import socket

import httpx
import pytest

from localllm.app.gui.main import PORT_KEY
from localllm.app.gui.state.daemon_health import DaemonState
from tests.support.daemon import free_port
from tests.support.gui_e2e import GuiDaemon, open_app, prefs_in, tiny_models

pytestmark = pytest.mark.slow
POLL_MS = 200  # open_app's: the checks start this often and space out to 5 times that


@pytest.fixture
def cleanup():
    daemons: list[GuiDaemon] = []
    yield daemons.append
    for daemon in daemons:
        daemon.stop()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/api/version", timeout=2).is_success
    except httpx.TransportError:
        return False


def test_the_log_hides_the_apps_own_requests_and_quiet_checks_space_out(
    qtbot, tmp_path, cleanup, tiny_model_path
):
    daemon = GuiDaemon(tmp_path / "d", tiny_models(tiny_model_path))
    cleanup(daemon)
    services, window = open_app(qtbot, daemon.gateway(), tmp_path, poll_ms=POLL_MS)
    page = window.server_page
    try:
        qtbot.waitUntil(lambda: services.monitor.status.up, timeout=10_000)
        window.show_page("Server")
        httpx.get(daemon.url + "/v1/models")  # someone else's request
        qtbot.waitUntil(lambda: "/v1/models" in page.log.toPlainText(), timeout=20_000)
        raw = (daemon.root / "logs" / "daemon.log").read_text()
        assert '"path": "/api/version"' in raw and '"user_agent": "localllm-app/' in raw
        assert '"path": "/api/pulls"' in raw  # the app did ask, and the daemon logged it...
        shown = page.log.toPlainText()
        assert "/api/version" not in shown and "/api/pulls" not in shown  # ...out of sight
        assert "python-httpx" in shown
        page.show_own.click()
        assert "/api/version" in page.log.toPlainText()
        # nothing happening: the checks space out, and the pull list is asked now and then
        qtbot.waitUntil(lambda: services.monitor.interval_ms == 5 * POLL_MS, timeout=10_000)
        assert services.downloads.poll_interval_ms == 10 * POLL_MS
        daemon.daemon.stop()  # something happens: the checks close in again
        qtbot.waitUntil(
            lambda: services.monitor.status.state is DaemonState.STOPPED, timeout=10_000
        )
        assert services.monitor.interval_ms == POLL_MS
    finally:
        services.shutdown()


def test_the_port_moves_and_the_daemon_stops_and_starts_from_the_server_page(
    qtbot, tmp_path, cleanup, tiny_model_path, monkeypatch
):
    daemon = GuiDaemon(tmp_path / "d", tiny_models(tiny_model_path), start=False)
    cleanup(daemon)
    daemon.use_env(monkeypatch)  # the daemons the app starts use the test's store
    gateway, checks = daemon.gateway(), []
    version = gateway.version
    monkeypatch.setattr(gateway, "version", lambda: checks.append(1) or version())
    services, window = open_app(qtbot, gateway, tmp_path, poll_ms=POLL_MS)
    page, server = window.server_page, services.server
    try:
        qtbot.waitUntil(lambda: services.monitor.status.up, timeout=60_000)
        window.show_page("Server")
        qtbot.waitUntil(lambda: server.info is not None, timeout=10_000)
        old = server.info.port
        assert page.port.value() == old and page.port.isEnabled()
        assert not page.move_port.isEnabled()  # nothing to apply yet
        new = free_port()
        page.port.setValue(new)
        page.move_port.click()
        qtbot.waitUntil(lambda: server.info.port == new, timeout=60_000)
        qtbot.waitUntil(lambda: services.monitor.status.up, timeout=10_000)
        assert _answers(f"http://127.0.0.1:{new}") and not _answers(f"http://127.0.0.1:{old}")
        assert f":{new}/v1" in page.address.text()
        assert str(prefs_in(tmp_path).value(PORT_KEY)) == str(new)  # for the next start
        assert services.gateway.models()  # the app talks to it there

        with socket.socket() as taken:  # a port another program holds: refused, nothing lost
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            page.port.setValue(taken.getsockname()[1])
            page.move_port.click()
            qtbot.waitUntil(lambda: "in use" in page.message.text(), timeout=30_000)
        qtbot.waitUntil(lambda: services.monitor.status.up, timeout=10_000)
        assert server.info.port == new and _answers(f"http://127.0.0.1:{new}")

        assert page.start_stop.text() == "Stop the daemon"
        page.start_stop.click()
        qtbot.waitUntil(lambda: page.start_stop.text() == "Start the daemon", timeout=30_000)
        assert services.monitor.status.state is DaemonState.STOPPED
        assert not _answers(f"http://127.0.0.1:{new}")
        done = len(checks)
        qtbot.waitUntil(lambda: len(checks) >= done + 3, timeout=30_000)  # a few checks later:
        assert not _answers(f"http://127.0.0.1:{new}")  # still stopped, as the user asked
        assert "stopped" in window.indicator.text.text()
        server.fetch_log()  # the page's log check, while the daemon is stopped, fails...
        qtbot.waitUntil(lambda: "not" in page.message.text(), timeout=20_000)
        page.start_stop.click()
        qtbot.waitUntil(lambda: services.monitor.status.up, timeout=60_000)
        assert _answers(f"http://127.0.0.1:{new}") and page.start_stop.text() == "Stop the daemon"
        server.fetch_log()  # ...and once a check gets the log, the page stops saying so
        qtbot.waitUntil(lambda: page.message.text() == "", timeout=20_000)
    finally:
        services.shutdown()
