"""The shared notice banner (``design.widgets.Banner``): its dismiss button and its row of
actions once took the names ``close`` and ``actions``, so ``banner.close()`` raised instead of
closing and ``banner.actions()`` was not QWidget's list of actions. And the window's offline
notice: dismissed, it stays away while the app is offline, across launches, and comes back
the next time it is offline (the daemon is ``FakeClient``, its Hugging Face switched off)."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt

from localllm.app.gui.design.widgets import Banner
from localllm.app.gui.services.bundle import build_services
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.views.main_window import MainWindow
from localllm.daemon.client import ClientError
from tests.support.cli import FakeClient
from tests.support.gui_e2e import prefs_in


def test_a_banner_closes_like_any_widget(qtbot):
    banner = Banner()
    qtbot.addWidget(banner)
    banner.show_text("The daemon stopped.")
    assert banner.isVisible()
    assert banner.close()
    assert not banner.isVisible()
    assert banner.actions() == []


def test_the_dismiss_button_dismisses_until_there_is_something_else_to_say(qtbot):
    banner = Banner()
    qtbot.addWidget(banner)
    banner.add_action("Retry", lambda: None)
    banner.finish_actions()
    banner.show_text("The daemon stopped.")
    with qtbot.waitSignal(banner.dismissed):
        qtbot.mouseClick(banner.dismiss_button, Qt.MouseButton.LeftButton)
    assert not banner.isVisible()
    banner.show_text("The daemon stopped.")
    assert not banner.isVisible()  # the same notice stays away
    banner.show_text("The daemon is back.")
    assert banner.isVisible()


@dataclass
class _Hub(FakeClient):
    """Hugging Face answers only while ``online``."""

    online: bool = False

    def hub_search(self, query: str, limit: int = 20):
        if not self.online:
            raise ClientError("Hugging Face could not be reached.", status=502)
        return super().hub_search(query, limit)


def _launch(qtbot, folder, daemon: _Hub):
    """The window as a launch builds it, over ``daemon``, its settings kept in ``folder``."""
    services = build_services(Gateway(daemon), folder, autostart=False)
    window = MainWindow(services, prefs_in(folder))
    qtbot.addWidget(window)
    window.show()
    return services, window


def _connection(qtbot, services, online: bool) -> None:
    services.hub.check_online()
    qtbot.waitUntil(lambda: services.hub.offline is not online, timeout=10_000)


def test_the_offline_notice_dismissed_stays_away_while_offline_across_launches(qtbot, tmp_path):
    daemon = _Hub(online=False)
    services, window = _launch(qtbot, tmp_path, daemon)
    _connection(qtbot, services, online=False)
    assert window.offline.isVisibleTo(window)
    qtbot.mouseClick(window.offline.dismiss_button, Qt.MouseButton.LeftButton)
    assert not window.offline.isVisibleTo(window)
    services.shutdown()
    window.hide()  # gone (closing it is the quit note's business, not this test's)

    services, window = _launch(qtbot, tmp_path, daemon)  # the next launch, still offline
    _connection(qtbot, services, online=False)
    assert not window.offline.isVisibleTo(window)  # not back at every launch
    daemon.online = True
    _connection(qtbot, services, online=True)
    daemon.online = False  # offline again, later: worth saying again
    _connection(qtbot, services, online=False)
    assert window.offline.isVisibleTo(window)
    services.shutdown()
