"""What quitting the app does to the daemon, as the user chose it (Qt-free).

Quitting the app leaves the daemon serving (other apps and the command line use it) with its
loaded models in memory until their keep-alive ends; "stop everything" stops it too. The first
quit asks which, until the user ticks "don't ask again"; the first time the window hides to the
tray it says so. Both are remembered in a key/value store (``QSettings`` in the app).
"""

from __future__ import annotations

from enum import Enum

from localllm.app.gui.state.chat_choice import Remembered

__all__ = ["QUIT_KEY", "TRAY_TOLD_KEY", "QuitChoice", "QuitMemory"]

QUIT_KEY = "app/quit"  # "keep" or "stop" once the user said not to ask again; else asked
TRAY_TOLD_KEY = "app/told_tray"  # "true" once the window said it hides to the tray


class QuitChoice(Enum):
    KEEP = "keep"  # the app quits, the daemon keeps serving
    STOP = "stop"  # the daemon stops too, unloading its models


class QuitMemory:
    """The remembered answer to the first-quit note, and whether the tray was explained."""

    def __init__(self, remembered: Remembered) -> None:
        self._remembered = remembered

    @property
    def choice(self) -> QuitChoice | None:
        """What quitting does without asking; None: ask."""
        value = str(self._remembered.value(QUIT_KEY) or "")
        return next((c for c in QuitChoice if c.value == value), None)

    def remember(self, choice: QuitChoice | None) -> None:
        """``choice`` from now on without asking; None: ask again at the next quit."""
        self._remembered.setValue(QUIT_KEY, choice.value if choice is not None else "")

    def first_time_in_tray(self) -> bool:
        """True the first time the window hides to the tray (and never again)."""
        if str(self._remembered.value(TRAY_TOLD_KEY) or "") == "true":
            return False
        self._remembered.setValue(TRAY_TOLD_KEY, "true")
        return True
