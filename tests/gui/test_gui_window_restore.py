"""The window comes back as it was left: size, place and maximised state, across a quit and a
relaunch, also when the screen changed in between. Each run of the app is a process of its own
(``localllm app``'s ``open_window`` and event loop, on Qt's offscreen platform with the screens
a test gives it), quit with Ctrl+Q's ``quit_app``; the daemon is never started.

Run as a script, this file is that app: ``python test_gui_window_restore.py FOLDER STEP...``
prints the window as it came up, does the steps, and quits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

WIDE = [(0, 0, 1920, 1080)]
LAPTOP = [(0, 0, 1366, 768)]
AT_THE_DESK = [(0, 0, 1920, 1080), (1920, 0, 1366, 768)]  # a monitor, the laptop beside it


def _launch(folder: Path, screens: list[tuple[int, int, int, int]], *steps: str) -> dict:
    """One run of the app on ``screens``: how its window came up."""
    config = folder / f"screens-{len(list(folder.glob('screens-*')))}.json"
    config.write_text(
        json.dumps(
            {
                "screens": [
                    {"name": f"screen{i}", "x": x, "y": y, "width": w, "height": h}
                    for i, (x, y, w, h) in enumerate(screens)
                ]
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALLLM_")}
    env.update(
        QT_QPA_PLATFORM=f"offscreen:configfile={config}",
        LOCALLLM_HOST="127.0.0.1:9",  # nothing answers there; --no-start starts nothing
        LOCALLLM_CONFIG=str(folder / "config"),
        LOCALLLM_DATA=str(folder / "data"),
        LOCALLLM_MODELS=str(folder / "models"),
        LOCALLLM_LOGS=str(folder / "logs"),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
    )
    done = subprocess.run(
        [sys.executable, __file__, str(folder), *steps],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_size_and_place_come_back_on_a_larger_screen(tmp_path):
    """Quit at 1024x700 on a laptop's screen, relaunched on a 1920 px monitor: 1024x700 where
    it was (Qt's restoreGeometry gave up there: the window came back at its size hint)."""
    _launch(tmp_path, LAPTOP, "resize 1024 700", "move 300 40", "quit")
    shown = _launch(tmp_path, WIDE, "quit")
    assert shown["size"] == [1024, 700] and shown["pos"] == [300, 40]
    assert not shown["maximized"]
    again = _launch(tmp_path, WIDE, "quit")  # and it does not creep down a title bar a run
    assert again["size"] == [1024, 700] and again["pos"] == [300, 40]


def test_a_maximised_window_comes_back_maximised_with_its_size_to_go_back_to(tmp_path):
    _launch(tmp_path, LAPTOP, "resize 1024 700", "move 300 40", "maximize", "quit")
    shown = _launch(tmp_path, WIDE, "normal", "quit")
    assert shown["maximized"]
    assert shown["after"]["size"] == [1024, 700] and shown["after"]["pos"] == [300, 40]


def test_a_window_on_a_screen_that_is_gone_comes_back_on_the_one_left_made_to_fit(tmp_path):
    """Left large on a monitor, then opened on the laptop alone: on the laptop's screen, as
    large as fits there, where the window manager puts it."""
    _launch(tmp_path, AT_THE_DESK, "resize 1600 1000", "move 1500 40", "quit")
    shown = _launch(tmp_path, LAPTOP, "quit")
    assert shown["size"] == [1366, 768]
    x, y = shown["pos"]
    assert 0 <= x < 1366 and 0 <= y < 768


def _run_app(folder: Path, steps: list[str]) -> int:
    """``localllm app --no-start`` with its settings in ``folder``: print the window, do the
    steps, quit the way Ctrl+Q does."""
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from localllm.app.gui.main import open_window, parse_args
    from localllm.app.gui.state.daemon_control import DaemonControl
    from localllm.app.gui.state.gateway import Gateway
    from localllm.app.gui.state.quit_choice import QUIT_KEY

    app = QApplication(["localllm"])
    prefs = QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat)
    prefs.setValue(QUIT_KEY, "keep")  # the first-quit note was answered: quit at once
    config = parse_args(["--no-start", "--data-dir", str(folder / "chats")])
    window, _tray = open_window(app, Gateway.connect(DaemonControl(config.settings)), config, prefs)

    def state() -> dict:
        return {
            "size": [window.width(), window.height()],
            "pos": [window.x(), window.y()],
            "maximized": window.isMaximized(),
        }

    def act() -> None:
        report = state()
        for step in steps:
            word, *numbers = step.split()
            values = [int(n) for n in numbers]
            if word == "resize":
                window.resize(*values)
            elif word == "move":
                window.move(*values)
            elif word == "maximize":
                window.showMaximized()
            elif word == "normal":
                window.showNormal()
                report["after"] = state()
            elif word == "quit":
                window.quit_app()
        print(json.dumps(report), flush=True)

    QTimer.singleShot(0, act)
    code = app.exec()
    window.services.wait_for_workers()  # as launch() does before the process exits
    return code


if __name__ == "__main__":
    sys.exit(_run_app(Path(sys.argv[1]), sys.argv[2:]))
