"""Start, stop and re-bind the local daemon for the desktop app. Blocking: run it in workers.

The app starts the daemon the way the CLI does (``daemon.client.launcher``): bound to this machine,
or, once the user turns on "serve on the local network", to every interface, where the daemon
insists on an API key (it loads the key saved here by ``ApiKeyStore``). The launcher reaps the
process it starts, so a long-running window never collects zombies. Qt-free.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import replace

from localllm.daemon.client.launcher import (
    DaemonStartError,
    connect_url,
    daemon_answers,
    ensure_daemon,
)
from localllm.daemon.client.launcher import is_loopback as _is_loopback
from localllm.daemon.security.keys import ApiKeyStore
from localllm.daemon.settings import Settings

__all__ = ["ANY_ADDRESS", "DaemonControl", "lan_address"]

ANY_ADDRESS = "0.0.0.0"  # every IPv4 interface: what "serve on the local network" binds
_LOCAL_ADDRESS = "127.0.0.1"
_WILDCARDS = frozenset({"", "0.0.0.0", "::"})
_STOP_TIMEOUT = 20.0  # the daemon's graceful stop waits up to 5 s for requests, then runners
_POLL = 0.1


def lan_address() -> str:
    """This machine's address on its network (no packet is sent), or loopback when offline."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            return probe.getsockname()[0]
        except OSError:
            return _LOCAL_ADDRESS


def _port_free(host: str, port: int) -> bool:
    """Whether a daemon could listen on ``port`` (nothing else holds it)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the daemon's server
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


class DaemonControl:
    """The local daemon's lifecycle as the app sees it: start, stop, switch the binding."""

    def __init__(
        self,
        settings: Settings,
        *,
        lan: bool = False,
        keys: ApiKeyStore | None = None,
        start_timeout: float = 30.0,
        port_fixed: bool = False,
    ):
        self.settings = settings
        host = settings.host
        # another computer's address: that daemon is used, never started or stopped from here
        self.remote = not (_is_loopback(host) or host in _WILDCARDS)
        self.port_fixed = port_fixed  # --host or LOCALLLM_HOST named the port: not ours to move
        self.lan = (lan or host in _WILDCARDS) and not self.remote
        self.process: subprocess.Popen | None = None  # the last daemon this app started
        self._keys = keys or ApiKeyStore(settings.config_dir)
        self._start_timeout = start_timeout

    @property
    def url(self) -> str:
        """Where this app reaches the daemon, however it is bound."""
        return connect_url(self.settings)

    def bind_settings(self) -> Settings:
        """The settings the daemon is started with: every interface for the local network,
        else the configured address if it is local, else loopback."""
        if self.lan:
            return replace(self.settings, host=ANY_ADDRESS)
        if self.remote or _is_loopback(self.settings.host):
            return self.settings
        return replace(self.settings, host=_LOCAL_ADDRESS)

    def stored_key(self) -> str | None:
        """The key to send: the configured one, else the one saved for the network switch."""
        return self.settings.api_key or self._keys.load()

    def api_key(self) -> str:
        """The key clients on the network need, made (and saved) on first use."""
        return self.settings.api_key or self._keys.create()

    def start(self) -> None:
        """Return once the daemon answers, starting it if nothing does."""
        if self.lan:
            self.api_key()  # the daemon refuses to listen beyond loopback without one
        process = ensure_daemon(self.bind_settings(), self._start_timeout, network=self.lan)
        if process is not None:
            self.process = process

    def switch(self, lan: bool, stop: Callable[[], None]) -> str | None:
        """Restart the daemon for (or off) the local network; ``stop`` asks the running one
        to exit. Returns the API key clients need from now on, if any."""
        self._ensure_local("change how it is served there")
        key = self.api_key() if lan else self.stored_key()
        stop()
        self.wait_stopped()
        self.lan = lan
        self.start()
        return key

    def move(self, port: int, stop: Callable[[], None]) -> str | None:
        """Restart the daemon on ``port`` (``stop`` asks the running one to exit); back on
        the old port if it cannot start there. Returns the API key clients need, if any."""
        self._ensure_local("change its port there")
        if not 1 <= port <= 65535:
            raise DaemonStartError(f"a port is a number from 1 to 65535, not {port}")
        if port != self.settings.port and not _port_free(self.bind_settings().host, port):
            raise DaemonStartError(f"port {port} is in use by another program; pick another")
        old = self.settings
        stop()
        self.wait_stopped()
        self.settings = replace(old, port=port)
        try:
            self.start()
        except DaemonStartError:
            self.settings = old
            self.start()
            raise
        return self.api_key() if self.lan else self.stored_key()

    def stop(self, stop: Callable[[], None]) -> None:
        """Ask the daemon to exit (``stop``) and wait until it no longer answers."""
        self._ensure_local("stop it there")
        stop()
        self.wait_stopped()

    def _ensure_local(self, what: str) -> None:
        if self.remote:
            raise DaemonStartError(f"the daemon at {self.url} runs on another computer: {what}")

    def wait_stopped(self, timeout: float = _STOP_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while daemon_answers(self.url, timeout=1.0):
            if time.monotonic() > deadline:
                raise DaemonStartError(f"the daemon at {self.url} did not stop in time")
            time.sleep(_POLL)
