"""The tray icon: open the window, see (and unload) running models, and leave: quit the app
and keep the daemon serving, or stop everything (the daemon too, unloading its models).

The running-models menu is refreshed each time the menu opens, from the Server service's
table, which a worker keeps up to date. A daemon on another computer is not this app's to
stop: "Stop everything" is off then.
"""

from __future__ import annotations

from functools import partial

from PySide6.QtCore import Signal
from PySide6.QtGui import QAction, QIcon
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from localllm.app.gui.services.server import ServerService
from localllm.app.gui.state.units import bytes_text

__all__ = ["Tray"]


class Tray(QSystemTrayIcon):
    open_requested = Signal()
    quit_requested = Signal()  # quit the app, the daemon keeps serving
    stop_requested = Signal()  # stop the daemon too, then quit

    def __init__(self, icon: QIcon, server: ServerService, parent=None):
        super().__init__(icon, parent)
        self.server = server
        self.setToolTip("localllm")
        self.menu = QMenu()
        self.menu.addAction("Open localllm", self.open_requested.emit)
        self.models_menu = self.menu.addMenu("Running models")
        self.menu.addSeparator()
        self.quit_action = self.menu.addAction("Quit the app, keep serving")
        self.quit_action.triggered.connect(self.quit_requested.emit)
        self.stop_action = self.menu.addAction("Stop everything")
        self.stop_action.triggered.connect(self.stop_requested.emit)
        self.told: list[str] = []  # what it said in a notification, in order
        self.menu.aboutToShow.connect(self._before_show)
        self.setContextMenu(self.menu)
        self.activated.connect(self._activated)
        self.fill_models()
        self.stop_action.setEnabled(not server.remote)

    def fill_models(self) -> None:
        self.models_menu.clear()
        running = self.server.running.items()
        if not running:
            empty = QAction("No models loaded", self.models_menu)
            empty.setEnabled(False)
            self.models_menu.addAction(empty)
        for model in running:
            if model.remote:  # its engine runs it: in use, nothing to unload from here
                busy = QAction(f"{model.name} · remote {model.remote}", self.models_menu)
                busy.setEnabled(False)
                self.models_menu.addAction(busy)
                continue
            label = f"{model.name} · {bytes_text(model.size)} · {model.processor}  (unload)"
            self.models_menu.addAction(label, partial(self.server.unload, model.name))

    def tell(self, text: str) -> None:
        """Say ``text`` in a notification from the icon."""
        self.told.append(text)
        self.showMessage("localllm", text, self.icon())

    def _before_show(self) -> None:
        self.fill_models()
        self.stop_action.setEnabled(not self.server.remote)
        self.server.refresh_running()  # fresher next time; never wait for it here

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self.open_requested.emit()
