"""Leaving the app: the first quit says the daemon keeps serving (its models stay loaded until
their keep-alive ends) and offers to stop everything, with a "don't ask again" that is kept;
the tray offers both ways out, closing the window hides it there (said once), and "Stop
everything" stops the daemon the app started, and the model it had loaded, before quitting.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from localllm.app.gui.icons import Icons
from localllm.app.gui.main import AppConfig, open_window, wire_tray
from localllm.app.gui.services.bundle import build_services
from localllm.app.gui.state.daemon_control import DaemonControl
from localllm.app.gui.state.daemon_health import DaemonState
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.state.quit_choice import QUIT_KEY, TRAY_TOLD_KEY, QuitChoice
from localllm.app.gui.views.main_window import MainWindow
from localllm.app.gui.views.quit_note import IN_THE_TRAY
from localllm.daemon.settings import Settings
from tests.support.daemon import free_port
from tests.support.gui_e2e import MODEL, GuiDaemon, prefs_in, tiny_models


@pytest.fixture
def windows(qtbot, tmp_path):
    """``open()`` a window over a local daemon that is not running (none is started), its
    settings in ``tmp_path``, as a new run of the app would."""
    made = []

    def open_one() -> MainWindow:
        settings = Settings(host="127.0.0.1", port=free_port(), config_dir=tmp_path / "config")
        services = build_services(Gateway.connect(DaemonControl(settings)), tmp_path)
        window = MainWindow(services, prefs_in(tmp_path))
        qtbot.addWidget(window)
        window.show()
        made.append(window)
        return window

    yield open_one
    for window in made:
        window.services.shutdown()


def _quit(qtbot, window: MainWindow) -> None:
    """Ctrl+Q, as the user presses it."""
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    qtbot.keyClick(window, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)


def test_the_first_quit_says_what_keeps_running_and_the_answer_is_kept(qtbot, windows, tmp_path):
    window = windows()
    left: list[QuitChoice] = []
    window.quitting.leaving.connect(left.append)
    _quit(qtbot, window)
    note = window.quitting.note
    assert note is not None and note.isVisible()
    said = note.text()
    assert "keeps serving" in said and "keep-alive" in said and "Stop everything" in said
    assert [b.text() for b in (note.keep, note.stop)] == ["Keep serving", "Stop everything"]
    assert note.defaultButton() is note.keep and note.dont_ask.isChecked()
    note.escapeButton().click()  # cancelled: nothing happens, nothing is kept
    qtbot.waitUntil(lambda: window.quitting.note is None)
    assert window.isVisible() and not left and prefs_in(tmp_path).value(QUIT_KEY) is None

    _quit(qtbot, window)  # asked again; this time "ask me next time" too
    note = window.quitting.note
    assert note is not None and note.isVisible()
    note.dont_ask.setChecked(False)
    with qtbot.waitSignal(window.quitting.leaving) as leaving:
        note.keep.click()
    assert leaving.args == [QuitChoice.KEEP] and window.quitting.note is None
    window.close()  # the close that quitting sends: it goes through, and asks nothing more
    assert not window.isVisible() and window.quitting.note is None

    second = windows()  # the next run asks again, and keeps the answer this time
    _quit(qtbot, second)
    note = second.quitting.note
    assert note is not None and note.dont_ask.isChecked()
    with qtbot.waitSignal(second.quitting.leaving):
        note.keep.click()
    assert prefs_in(tmp_path).value(QUIT_KEY) == "keep"

    third = windows()  # and from then on quits at once
    with qtbot.waitSignal(third.quitting.leaving) as leaving:
        _quit(qtbot, third)
    assert leaving.args == [QuitChoice.KEEP] and third.quitting.note is None


def test_the_tray_offers_both_ways_out_and_closing_the_window_hides_it_there(
    qtbot, windows, tmp_path
):
    window = windows()
    tray = wire_tray(window, Icons().tray_icon(), window.services)
    titles = [a.text() for a in tray.menu.actions() if a.text()]
    assert titles[-2:] == ["Quit the app, keep serving", "Stop everything"]
    assert tray.stop_action.isEnabled()  # a daemon on this computer: the app may stop it
    window.close()
    assert not window.isVisible() and tray.told == [IN_THE_TRAY]  # said the first time
    tray.open_requested.emit()
    assert window.isVisible()
    window.close()
    assert not window.isVisible() and tray.told == [IN_THE_TRAY]  # and only then
    assert prefs_in(tmp_path).value(TRAY_TOLD_KEY) == "true"
    with qtbot.waitSignal(window.quitting.leaving) as leaving:
        tray.quit_action.trigger()  # asks nothing: the menu said what it does
    assert leaving.args == [QuitChoice.KEEP] and window.quitting.note is None

    again = windows()  # the next run's first hide says nothing more
    again_tray = wire_tray(again, Icons().tray_icon(), again.services)
    again.close()
    assert not again.isVisible() and again_tray.told == []


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (Linux's /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True


@pytest.mark.slow
def test_stop_everything_stops_the_daemon_the_app_started_and_its_model(
    qtbot, tmp_path, tiny_model_path, monkeypatch
):
    planned = GuiDaemon(tmp_path / "d", tiny_models(tiny_model_path), start=False)
    planned.use_env(monkeypatch)
    app = QApplication.instance()
    config = AppConfig(planned.settings(), history_dir=tmp_path, theme="light")
    window, _tray = open_window(app, planned.gateway(), config, prefs_in(tmp_path))
    qtbot.addWidget(window)
    app.aboutToQuit.disconnect(window.services.shutdown)
    try:
        qtbot.waitUntil(lambda: window.services.monitor.status.up, timeout=60_000)
        daemon = planned.controls[0].process
        assert daemon is not None  # started by the app
        before = _children(daemon.pid)
        answer = httpx.post(
            planned.url + "/api/generate",
            json={"model": MODEL, "prompt": "hi", "stream": False},
            timeout=60,
        )
        assert answer.status_code == 200
        loaded = httpx.get(planned.url + "/api/ps", timeout=10).json()["models"]
        assert [m["name"] for m in loaded] == [MODEL]
        runners = _children(daemon.pid) - before
        assert runners  # the model runs in a process of its own

        tray = wire_tray(window, Icons().tray_icon(), window.services)
        with qtbot.waitSignal(window.quitting.leaving, timeout=30_000) as leaving:
            tray.stop_action.trigger()
        assert leaving.args == [QuitChoice.STOP]
        assert daemon.wait(20) is not None  # the daemon exited...
        qtbot.waitUntil(
            lambda: all(_gone(pid) for pid in runners), timeout=20_000
        )  # ...and its model
        assert window.services.monitor.status.state is DaemonState.STOPPED
    finally:
        window.services.shutdown()
        planned.stop()


def test_a_remembered_stop_everything_is_what_ctrl_q_does(qtbot, windows, tmp_path):
    prefs = prefs_in(tmp_path)
    prefs.setValue(QUIT_KEY, "stop")
    prefs.sync()
    window = windows()  # nothing answers at its address: stopping finds it gone, then quits
    with qtbot.waitSignal(window.quitting.leaving, timeout=30_000) as leaving:
        _quit(qtbot, window)
    assert leaving.args == [QuitChoice.STOP] and window.quitting.note is None


def test_the_settings_page_shows_and_changes_what_quitting_does(qtbot, windows, tmp_path):
    """ "Don't ask again" is not for ever: Settings shows the kept answer and can ask again."""
    prefs_in(tmp_path).setValue(QUIT_KEY, "stop")
    window = windows()
    box = window.settings_page.on_quit
    assert box.currentData() is QuitChoice.STOP
    box.setCurrentIndex(box.findData(None))
    box.activated.emit(box.currentIndex())  # as a pick in the list sends it
    assert window.quitting.memory.choice is None
    _quit(qtbot, window)  # asked again
    note = window.quitting.note
    assert note is not None and note.isVisible()
    note.escapeButton().click()
    box.setCurrentIndex(box.findData(QuitChoice.KEEP))
    box.activated.emit(box.currentIndex())
    assert prefs_in(tmp_path).value(QUIT_KEY) == "keep"
