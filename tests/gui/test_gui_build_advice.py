"""The daemon's advice about its llama.cpp build (``GET /api/system``'s ``build_advice``: a GPU
next to a CPU-only build) in the window: a banner with the fix until it is dismissed for the
session, and the same on the Server page. The daemon's side is tested in
``tests/test_native_api.py``; here a fake daemon says it."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from localllm.app.gui.services.bundle import build_services
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.views.main_window import MainWindow
from localllm.daemon.api import SystemResponse
from tests.support.cli import FakeClient
from tests.support.gui_e2e import prefs_in

ADVICE = (
    "this llama.cpp build runs on the CPU only, so the NVIDIA GeForce RTX 4090 is not used; "
    "install a GPU build with `python -m installers.llama_build` in the localllm checkout, or "
    "the app built for this machine"
)


@dataclass
class AdvisingDaemon(FakeClient):
    advice: str | None = ADVICE

    def system(self) -> SystemResponse:
        return super().system().model_copy(update={"build_advice": self.advice})


def _window(qtbot, tmp_path, daemon: FakeClient):
    services = build_services(Gateway(daemon), tmp_path, autostart=False)
    window = MainWindow(services, prefs_in(tmp_path))
    qtbot.addWidget(window)
    window.show()
    return services, window


def test_a_gpu_the_build_leaves_unused_is_said_until_dismissed(qtbot, tmp_path):
    services, window = _window(qtbot, tmp_path, AdvisingDaemon())
    banner, page = window.build_advice, window.server_page.build_advice
    assert not banner.isVisibleTo(window)
    services.hub.load_system()
    qtbot.waitUntil(lambda: banner.isVisibleTo(window))
    assert banner.text().startswith("This llama.cpp build runs on the CPU only")
    assert banner.text().endswith("built for this machine.")  # one sentence
    assert page.text() == banner.text()  # and on the Server page
    QGuiApplication.clipboard().clear()
    qtbot.mouseClick(window.copy_advice, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == "python -m installers.llama_build"
    qtbot.mouseClick(banner.dismiss_button, Qt.MouseButton.LeftButton)
    assert not banner.isVisibleTo(window)
    with qtbot.waitSignal(services.hub.system_changed):
        services.hub.load_system()  # the daemon came back, still saying it
    assert not banner.isVisibleTo(window)  # dismissed for this session
    window.show_page("Server")
    assert page.isVisibleTo(window.server_page) and page.text() == banner.text()
    services.shutdown()


def test_nothing_is_said_when_the_build_uses_what_there_is(qtbot, tmp_path):
    services, window = _window(qtbot, tmp_path, AdvisingDaemon(advice=None))
    with qtbot.waitSignal(services.hub.system_changed):
        services.hub.load_system()
    assert not window.build_advice.isVisibleTo(window)
    assert not window.server_page.build_advice.isVisibleTo(window.server_page)
    services.shutdown()
