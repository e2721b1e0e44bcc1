"""The GUI's end-to-end tests: a real daemon (a subprocess, ``tests.support.daemon``) with a
generated model, and the app's own gateway, services or window over it.

``GuiDaemon`` knows the environment the daemon runs with, so the app builds its settings from
the same ``LOCALLLM_*`` values (as a user's app and daemon share them) and a daemon the app
starts itself (restart, the local-network switch) uses the same store, logs and config.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path

from PySide6.QtCore import QSettings, Qt

from localllm.app.gui.main import lan_memory, port_memory
from localllm.app.gui.services.bundle import Services, build_services
from localllm.app.gui.state.daemon_control import DaemonControl
from localllm.app.gui.state.gateway import Gateway
from localllm.app.gui.views.main_window import MainWindow
from localllm.daemon.security.keys import ApiKeyStore
from localllm.daemon.settings import Settings
from tests.support.daemon import Daemon, free_port, make_store

__all__ = [
    "MODEL",
    "GuiDaemon",
    "HangingServer",
    "open_app",
    "prefs_in",
    "tiny_models",
    "wait_idle",
]

MODEL = "tiny:latest"
NO_KEYRING = "keyring.backends.fail.Keyring"  # secrets go to files under the test's config dir


def tiny_models(path: Path, num_predict: int = 12) -> dict:
    """``make_store`` models: ``tiny`` answers in ``num_predict`` tokens (quick, and never
    endless: a tiny model with random weights never stops on its own)."""
    from localllm.model_registry.importer import ModelExtras

    return {"tiny": (path, ModelExtras(parameters={"num_predict": num_predict}))}


class GuiDaemon:
    """A daemon on a free port and everything the app needs to reach (or restart) it. With
    ``start=False`` nothing runs yet: the app is to start it."""

    def __init__(
        self,
        root: Path,
        models: Mapping | None = None,
        env: Mapping[str, str] | None = None,
        *,
        start: bool = True,
    ):
        self.root = root
        store = make_store(root / "store", models or {})
        logs = root / "logs"
        self.env = {
            "LOCALLLM_MODELS": str(store),
            "LOCALLLM_LOGS": str(logs),
            "LOCALLLM_DATA": str(logs / "data"),
            "LOCALLLM_CONFIG": str(root / "config"),
            "LOCALLLM_NUM_THREADS": "1",
            "PYTHON_KEYRING_BACKEND": NO_KEYRING,
            **(env or {}),
        }
        self.daemon = Daemon(store, logs, env=self.env) if start else None
        port = self.daemon.port if self.daemon is not None else free_port()
        self.env["LOCALLLM_HOST"] = f"127.0.0.1:{port}"
        self.url = f"http://127.0.0.1:{port}"
        self.controls: list[DaemonControl] = []

    def settings(self) -> Settings:
        return Settings.from_env(self.env)

    def keys(self) -> ApiKeyStore:
        return ApiKeyStore(Path(self.env["LOCALLLM_CONFIG"]), use_keyring=False)

    def control(self, **kwargs) -> DaemonControl:
        control = DaemonControl(self.settings(), keys=self.keys(), start_timeout=60, **kwargs)
        self.controls.append(control)
        return control

    def gateway(self, quick_timeout: float = 10.0, **kwargs) -> Gateway:
        return Gateway.connect(self.control(**kwargs), quick_timeout=quick_timeout)

    def use_env(self, monkeypatch) -> None:
        """Make this test process's environment the daemon's, so a daemon the app starts
        (``ensure_daemon`` passes its own environment on) finds the same files."""
        for key in [k for k in os.environ if k.startswith("LOCALLLM_")]:
            monkeypatch.delenv(key)
        for key, value in self.env.items():
            monkeypatch.setenv(key, value)

    def stop(self) -> None:
        """Stop the daemon the test started and every one the app started."""
        if self.daemon is not None:
            self.daemon.stop()
        for control in self.controls:
            process = control.process
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()


def open_app(
    qtbot, gateway: Gateway, folder: Path, *, poll_ms: int = 200, window: bool = True
) -> tuple[Services, MainWindow | None]:
    """Services (and the window) as ``localllm app`` builds them, over ``gateway``, keeping
    chats and window settings (``settings.ini``) in ``folder``; started, not waited for."""
    prefs = prefs_in(folder)
    services = build_services(
        gateway,
        folder,
        poll_ms=poll_ms,
        remember_lan=lan_memory(prefs),
        remember_port=port_memory(prefs),
    )
    shown = None
    if window:
        shown = MainWindow(services, prefs, base_url=gateway.control.url)
        qtbot.addWidget(shown)
        shown.show()
    services.start()
    return services, shown


def prefs_in(folder: Path) -> QSettings:
    return QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat)


class HangingServer:
    """A port that accepts connections and never answers: a daemon stuck for good."""

    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self.port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self._socket.settimeout(0.05)
        while not self._stop.is_set():
            with contextlib.suppress(OSError):
                connection, _ = self._socket.accept()
                self._held.append(connection)  # read nothing, answer nothing

    def close(self) -> None:
        self._stop.set()
        for connection in self._held:
            connection.close()
        self._socket.close()

    def __enter__(self) -> HangingServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def wait_idle(qtbot, services: Services, timeout: int = 10_000) -> None:
    """Until every queued history write has landed."""
    qtbot.waitUntil(lambda: services.disk.busy == 0, timeout=timeout)


def pick_model(qtbot, window, name: str = MODEL) -> None:
    """The models are listed and an empty chat with ``name`` picked is on screen."""
    qtbot.waitUntil(lambda: window.services.library.loaded, timeout=10_000)
    qtbot.waitUntil(lambda: window.services.chat.session is not None, timeout=10_000)
    row = window.services.library.table.row_of(name)
    window.chat_page.model_picker.setCurrentIndex(row)
    window.chat_page.model_picker.activated.emit(row)
    qtbot.waitUntil(lambda: window.services.chat.session.conversation.model == name)


def send_message(qtbot, window, text: str) -> None:
    """``text`` typed and sent with Enter, as a user does; returns once the reply is in."""
    composer = window.chat_page.composer
    composer.editor.setPlainText(text)
    with qtbot.waitSignal(window.services.chat.reply_finished, timeout=30_000):
        qtbot.keyClick(composer.editor, Qt.Key.Key_Return)
