"""Start the daemon in the background when a front end needs it and nothing answers.

``localllm list`` should just work, as ``ollama list`` does once its service runs: if nothing
answers at the configured address and that address is on this machine's loopback, start
``python -m localllm.daemon serve --log-file-only`` detached (its own session) and wait until it
answers. A daemon meant for the network (any other address) is never started behind the
user's back: it has to be started on purpose (``network=True``, the desktop app's
"serve on the local network" switch), and the daemon itself refuses to listen there without an
API key. A lock file keeps two front ends starting at once from racing to start two daemons.
The started process is reaped by a background thread, so a long-running front end (the
desktop app) never collects zombies when the daemon it started exits.

The daemon writes and rotates ``<log dir>/daemon.log`` itself, and once its log is set up it
sends its own stdout and stderr there too. What it prints before that (a setting it refuses, a
crash at import) goes to ``daemon-start.log``, emptied at each start: nothing here grows while
the daemon runs. When a start fails, the error shows the end of both. Logs may quote model
names and paths: they are readable by their user only (0600; new folders 0700).
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

import httpx
from filelock import FileLock, Timeout

from localllm.daemon.client.errors import DaemonUnavailable
from localllm.daemon.security.keys import AdminTokenStore
from localllm.daemon.settings import Settings

__all__ = [
    "DaemonStartError",
    "admin_token_reader",
    "connect_url",
    "daemon_answers",
    "ensure_daemon",
    "is_loopback",
]

LOG_NAME = "daemon.log"  # the daemon's (``daemon.server.log_file``)
START_LOG_NAME = "daemon-start.log"  # the daemon's output before its log is set up
_TAIL_LINES = 12
_TAIL_BYTES = 16384
_PROBE_TIMEOUT = 2.0
_UNSPECIFIED = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


class DaemonStartError(DaemonUnavailable):
    """The daemon could not be reached or started; ``details`` holds its log's last lines."""

    def __init__(self, message: str, details: list[str] | None = None):
        self.details = details or []
        super().__init__(message)


def is_loopback(host: str) -> bool:
    """Whether ``host`` only reaches this machine (``localhost``, ``127.x``, ``::1``)."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def admin_token_reader(settings: Settings) -> Callable[[], str | None]:
    """How a front end reads the daemon's admin token (for changing remotes) when a call needs
    it: LOCALLLM_ADMIN_TOKEN, else the file the daemon keeps in the config folder, for a daemon
    on this machine only (the file's token means nothing to another machine's daemon)."""
    configured = settings.admin_token
    if configured:
        return lambda: configured
    if not (is_loopback(settings.host) or settings.host in _UNSPECIFIED):
        return lambda: None
    return AdminTokenStore(settings.config_dir).load


def connect_url(settings: Settings) -> str:
    """Where a client reaches the daemon: a wildcard bind address means this machine."""
    host = _UNSPECIFIED.get(settings.host, settings.host)
    return replace(settings, host=host).base_url


def daemon_answers(url: str, timeout: float = _PROBE_TIMEOUT) -> bool:
    """True if localllm answers ``GET /`` at ``url``; raises if something else does."""
    try:
        response = httpx.get(url + "/", timeout=timeout)
    except httpx.HTTPError:
        return False
    if response.status_code == 200 and "localllm" not in response.text.lower():
        raise DaemonStartError(
            f"something other than localllm answers at {url}; "
            "set LOCALLLM_HOST to another address or port"
        )
    return True


def ensure_daemon(
    settings: Settings,
    timeout: float = 30.0,
    *,
    on_start: Callable[[], None] | None = None,
    network: bool = False,
) -> subprocess.Popen[bytes] | None:
    """Return once the daemon answers, starting it first if it is not running and either local
    or ``network`` (asked for on purpose). Returns the process it started, else None."""
    url = connect_url(settings)
    if daemon_answers(url):
        return None
    if not (network or is_loopback(settings.host)):
        raise DaemonStartError(
            f"the daemon at {url} is not reachable; it is only started automatically on a "
            "loopback address, so start it there with `localllm serve`"
        )
    deadline = time.monotonic() + timeout
    settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        with FileLock(str(settings.data_dir / "daemon-start.lock"), timeout=timeout):
            if daemon_answers(url):  # another front end started it while we waited
                return None
            log = _LaunchLog(settings.log_dir)
            process = _spawn(settings, log)
            _reap_when_done(process)
            if on_start is not None:
                on_start()
            _wait_until_up(url, process, log, deadline)
            return process
    except Timeout:
        raise DaemonStartError(
            f"timed out waiting for another start of the daemon at {url}"
        ) from None


def _reap_when_done(process: subprocess.Popen[bytes]) -> None:
    """Wait for the process in a daemon thread: its exit status is collected, not left as a
    zombie for as long as this (possibly long-running) front end lives."""
    threading.Thread(target=process.wait, name="localllm-daemon-reaper", daemon=True).start()


class _LaunchLog:
    """What a daemon being started wrote: its output before its log was set up, and the lines
    its log (which holds earlier runs too) got since the start."""

    def __init__(self, log_dir: Path):
        log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = log_dir / LOG_NAME
        self.start_path = log_dir / START_LOG_NAME
        try:
            self._start = self.path.stat().st_size
        except OSError:
            self._start = 0

    def open_output(self) -> BinaryIO:
        """The start log, emptied, 0600 whatever the umask (and if an older version left it
        readable to others)."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
        fd = os.open(self.start_path, flags, 0o600)
        os.chmod(self.start_path, 0o600)
        return os.fdopen(fd, "wb")

    def tail(self, lines: int = _TAIL_LINES) -> list[str]:
        text = _read_end(self.start_path, 0) + _read_end(self.path, self._start)
        kept = [line for line in text.splitlines() if line.strip()][-lines:]
        return kept or ["(the log is empty)"]


def _read_end(path: Path, start: int) -> str:
    """The end of ``path`` from ``start`` on (from its beginning if it was rotated since)."""
    try:
        with path.open("rb") as stream:
            size = stream.seek(0, os.SEEK_END)
            stream.seek(max(start if size >= start else 0, size - _TAIL_BYTES))
            return stream.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _spawn(settings: Settings, log: _LaunchLog) -> subprocess.Popen[bytes]:
    """``python -m localllm.daemon serve`` in its own session, outliving this process."""
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    argv = [sys.executable, "-m", "localllm.daemon", "serve", "--host", f"{host}:{settings.port}"]
    argv.append("--log-file-only")  # it logs to daemon.log, and rotates it, itself
    windows = os.name == "nt"
    flags = ("DETACHED_PROCESS", "CREATE_NEW_PROCESS_GROUP", "CREATE_NO_WINDOW")
    creationflags = sum(getattr(subprocess, flag, 0) for flag in flags) if windows else 0
    with log.open_output() as output:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            close_fds=True,
            cwd=Path(__file__).resolve().parents[2],  # runs the daemon package this one is
            start_new_session=not windows,
            creationflags=creationflags,
        )


def _wait_until_up(
    url: str, process: subprocess.Popen[bytes], log: _LaunchLog, deadline: float
) -> None:
    delay = 0.05
    while time.monotonic() < deadline:
        if daemon_answers(url, timeout=min(_PROBE_TIMEOUT, max(deadline - time.monotonic(), 0.1))):
            return
        code = process.poll()
        if code is not None:
            raise DaemonStartError(
                f"the daemon exited (status {code}) instead of starting; its log, {log.path}, "
                "ends with:",
                log.tail(),
            )
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)
    raise DaemonStartError(
        f"the daemon did not answer at {url} in time (it may still be starting); "
        f"its log, {log.path}, ends with:",
        log.tail(),
    )
