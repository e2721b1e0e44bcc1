"""Is the daemon up? The status bar's state machine, without Qt.

The first time the daemon does not answer we start it ourselves (that is what "double-click and
chat" needs); if it dies later we say so and let the user restart it, rather than silently
respawning something that may be crashing in a loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["DaemonHealth", "DaemonState", "DaemonStatus"]


class DaemonState(Enum):
    CONNECTING = "connecting"
    STARTING = "starting"
    STOPPING = "stopping"
    RUNNING = "running"
    STOPPED = "stopped"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class DaemonStatus:
    state: DaemonState
    version: str = ""
    message: str = ""

    @property
    def up(self) -> bool:
        return self.state is DaemonState.RUNNING

    @property
    def can_restart(self) -> bool:
        return self.state in (DaemonState.STOPPED, DaemonState.FAILED)

    def text(self) -> str:
        if self.state is DaemonState.RUNNING:
            return f"Daemon running (v{self.version})" if self.version else "Daemon running"
        default = {
            DaemonState.CONNECTING: "Connecting to the daemon…",
            DaemonState.STARTING: "Starting the daemon…",
            DaemonState.STOPPING: "Stopping the daemon…",
            DaemonState.STOPPED: "The daemon stopped.",
            DaemonState.FAILED: "The daemon could not start.",
        }[self.state]
        return self.message or default


class DaemonHealth:
    """Feed it what the checks saw; it says what the status is and whether to start one."""

    def __init__(self, autostart: bool = True):
        self._autostart = autostart
        self.status = DaemonStatus(DaemonState.CONNECTING)

    def answered(self, version: str) -> DaemonStatus:
        self.status = DaemonStatus(DaemonState.RUNNING, version)
        return self.status

    def no_answer(self, reason: str = "") -> bool:
        """Record a failed check; True when the caller should start the daemon now."""
        state = self.status.state
        if state is DaemonState.CONNECTING and self._autostart:
            self.status = DaemonStatus(DaemonState.STARTING)
            return True
        if state is DaemonState.RUNNING:
            self.status = DaemonStatus(
                DaemonState.STOPPED, message="The daemon stopped. Restart it to keep chatting."
            )
        elif state is DaemonState.CONNECTING:
            self.status = DaemonStatus(
                DaemonState.STOPPED, message="The daemon is not answering. Restart it to chat."
            )
        return False

    def start_failed(self, reason: str) -> DaemonStatus:
        self.status = DaemonStatus(
            DaemonState.FAILED, message=f"The daemon could not start: {reason}"
        )
        return self.status

    def restarting(self) -> DaemonStatus:
        self.status = DaemonStatus(DaemonState.STARTING)
        return self.status

    def stopping(self) -> DaemonStatus:
        self.status = DaemonStatus(DaemonState.STOPPING)
        return self.status

    def stopped(self) -> DaemonStatus:
        """Stopped on purpose: said plainly, and never started again behind the user's back."""
        self.status = DaemonStatus(
            DaemonState.STOPPED, message="The daemon is stopped. Start it to chat."
        )
        return self.status
