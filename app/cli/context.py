"""What every command gets: the settings, the three standard streams and a daemon client.

The client is made on first use, after :func:`localllm.daemon.client.launcher.ensure_daemon` has
made sure something answers, so commands that never talk to the daemon (``login``, ``key``,
``--help``) never start it. Tests pass ``client_factory`` to run commands against a stand-in.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from localllm.daemon.client import Client, DaemonClient
from localllm.daemon.client.launcher import admin_token_reader, connect_url, ensure_daemon
from localllm.daemon.settings import Settings

__all__ = ["Context"]


@dataclass
class Context:
    settings: Settings
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    stdin: TextIO = field(default_factory=lambda: sys.stdin)
    client_factory: Callable[[Settings], DaemonClient] | None = None
    _client: DaemonClient | None = None

    def client(self) -> DaemonClient:
        """The daemon client, starting the daemon first if it is local and not running."""
        if self._client is None:
            if self.client_factory is not None:
                self._client = self.client_factory(self.settings)
            else:
                ensure_daemon(self.settings, on_start=self._say_starting)
                self._client = Client(
                    connect_url(self.settings),
                    api_key=self.settings.api_key,
                    admin_token=admin_token_reader(self.settings),
                )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client = None

    def print(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def note(self, text: str) -> None:
        """A message for the person, not the pipe: goes to stderr."""
        self.err.write(text + "\n")
        self.err.flush()

    def stdin_is_tty(self) -> bool:
        return _isatty(self.stdin)

    def stdout_is_tty(self) -> bool:
        return _isatty(self.out)

    def stderr_is_tty(self) -> bool:
        return _isatty(self.err)

    def _say_starting(self) -> None:
        self.note(f"starting the localllm daemon (log: {self.settings.log_dir / 'daemon.log'})")


def _isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        return False
