"""Leaving the app: quit and keep the daemon serving, or stop everything (the daemon too,
unloading its models), as the tray's menu offers, Ctrl+Q does and closing the window without a
tray does; the window's close button with a tray hides the window instead.

The daemon outlives the app on purpose (other apps and the command line use it), so the first
quit says so in a note with both choices and a "don't ask again" (``QuitMemory`` keeps the
answer); the first hide to the tray says where the app went. "Stop everything" stops the daemon
the way the Server page does and quits once it is down; if it cannot, the app stays and says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QSettings, Qt, Signal
from PySide6.QtWidgets import QApplication, QCheckBox, QMessageBox, QWidget

from localllm.app.gui.services.daemon_monitor import DaemonMonitor
from localllm.app.gui.services.server import ServerService
from localllm.app.gui.state.daemon_health import DaemonState, DaemonStatus
from localllm.app.gui.state.quit_choice import QuitChoice, QuitMemory
from localllm.app.gui.views.tray import Tray

if TYPE_CHECKING:
    from localllm.app.gui.views.main_window import MainWindow

__all__ = ["IN_THE_TRAY", "QuitNote", "Quitting"]

IN_THE_TRAY = (
    "localllm is still running here in the tray, and its daemon keeps serving. Open the window "
    "or quit from this icon's menu."
)


class QuitNote(QMessageBox):
    """What keeps running after the app quits, and the choice: keep serving or stop it all."""

    def __init__(self, parent: QWidget, loaded: Sequence[str], tray: bool) -> None:
        super().__init__(parent)
        self.setWindowTitle("Quit localllm")
        self.setIcon(QMessageBox.Icon.NoIcon)
        self.setTextFormat(Qt.TextFormat.PlainText)  # model names are the user's
        now = f" Loaded now: {', '.join(loaded)}." if loaded else ""
        later = " The tray icon's menu offers both as well." if tray else ""
        self.setText(
            "The daemon keeps serving after the app quits: other apps and the command line can "
            "still use it, and the models it has loaded stay in memory until their keep-alive "
            f"ends.{now}\n\nStop everything to stop the daemon too and free that memory now."
            f"{later}"
        )
        self.keep = self.addButton("Keep serving", QMessageBox.ButtonRole.AcceptRole)
        self.stop = self.addButton("Stop everything", QMessageBox.ButtonRole.DestructiveRole)
        cancel = self.addButton(QMessageBox.StandardButton.Cancel)
        self.setDefaultButton(self.keep)
        self.setEscapeButton(cancel)
        self.dont_ask = QCheckBox("Don't ask again", self)
        self.dont_ask.setChecked(True)  # a note for the first quit, unless asked for again
        self.setCheckBox(self.dont_ask)

    @property
    def choice(self) -> QuitChoice | None:
        """The button pressed; None when cancelled."""
        clicked = self.clickedButton()
        if clicked is self.keep:
            return QuitChoice.KEEP
        return QuitChoice.STOP if clicked is self.stop else None


class Quitting(QObject):
    """How the window leaves; ``tray`` is set once a tray icon is shown."""

    leaving = Signal(object)  # QuitChoice: the app quits now (after the daemon, for STOP)

    def __init__(
        self,
        window: MainWindow,
        settings: QSettings,
        server: ServerService,
        monitor: DaemonMonitor,
    ) -> None:
        super().__init__(window)
        self.window, self.server, self.monitor = window, server, monitor
        self.memory = QuitMemory(settings)
        self.tray: Tray | None = None
        self.note: QuitNote | None = None  # while it asks
        self.left = False  # the app is quitting: the window may close
        self._stopping = False

    def quit(self) -> None:
        """Ctrl+Q, or closing the window without a tray: as the user said to, else asked."""
        if self.server.remote:  # nothing runs here to keep or stop
            return self._leave(QuitChoice.KEEP)
        choice = self.memory.choice
        if choice is not None:
            return self.carry_out(choice)
        if self.note is None:
            loaded = [m.name for m in self.server.running.items() if not m.remote]
            self.note = QuitNote(self.window, loaded, tray=self.tray is not None)
            self.note.finished.connect(self._answered)
        self.note.open()

    def carry_out(self, choice: QuitChoice) -> None:
        if choice is QuitChoice.STOP:
            self.stop_everything()
        else:
            self.keep_serving()

    def keep_serving(self) -> None:
        """Quit the app; the daemon keeps serving."""
        self._leave(QuitChoice.KEEP)

    def stop_everything(self) -> None:
        """Stop the daemon (its models unload with it), then quit."""
        if self.server.remote:
            return self._leave(QuitChoice.KEEP)
        if self._stopping:
            return
        self._stopping = True
        self.window.message("Stopping the daemon and unloading its models…")
        self.monitor.status_changed.connect(self._stop_progress)
        self.monitor.stop_daemon(self._not_stopped)

    def let_close(self) -> bool:
        """Whether the window's close goes on: once the app is leaving. Before, with a tray
        the window hides (said the first time); without one the close is a quit."""
        if self.left:
            return True
        if self.tray is not None:
            self.window.hide()
            if self.memory.first_time_in_tray():
                self.tray.tell(IN_THE_TRAY)
            return False
        self.quit()
        return False

    def _answered(self, _result: int) -> None:
        note, self.note = self.note, None
        if note is None:
            return
        note.deleteLater()
        choice = note.choice
        if choice is None:
            return  # cancelled: the app stays
        if note.dont_ask.isChecked():
            self.memory.remember(choice)
        self.carry_out(choice)

    def _stop_progress(self, status: DaemonStatus) -> None:
        if status.state is DaemonState.STOPPED:
            self._stop_over()
            self._leave(QuitChoice.STOP)

    def _not_stopped(self, error: Exception) -> None:
        self._stop_over()
        said = f"The daemon could not be stopped, so the app stays open: {error}"
        self.window.message(said)
        if self.tray is not None and not self.window.isVisible():
            self.tray.tell(said)

    def _stop_over(self) -> None:
        self._stopping = False
        self.monitor.status_changed.disconnect(self._stop_progress)

    def _leave(self, choice: QuitChoice) -> None:
        self.window.save_state()
        self.left = True
        self.leaving.emit(choice)
        QApplication.quit()
