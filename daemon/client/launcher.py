"""Start the daemon in the background when a front end needs it and nothing answers.

``localllm list`` should just work, as ``ollama list`` does once its service runs: if nothing
answers at the configured address and that address is on this machine's loopback, start
``python -m daemon serve`` detached (its own session, output to ``<log dir>/daemon.log``) and
wait until it answers. A daemon meant for the network (any other address) is never started
behind the user's back: it has to be started on purpose (``network=True``, the desktop app's
"serve on the local network" switch), and the daemon itself refuses to listen there without an
API key. A lock file keeps two front ends starting at once from racing to start two daemons.
The started process is reaped by a background thread, so a long-running front end (the
desktop app) never collects zombies when the daemon it started exits. The log may quote
prompts and model names: it is readable by its user only (0600; new folders 0700).
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

from daemon.client.errors import DaemonUnavailable
from daemon.security.keys import AdminTokenStore
from daemon.settings import Settings

__all__ = [
    "DaemonStartError",
    "admin_token_reader",
    "connect_url",
    "daemon_answers",
    "ensure_daemon",
    "is_loopback",
]

LOG_NAME = "daemon.log"
_LOG_ROTATE_BYTES = 10 << 20
_TAIL_LINES = 12
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
) -> subprocess.Popen | None:
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
            process = _spawn(settings)
            _reap_when_done(process)
            if on_start is not None:
                on_start()
            _wait_until_up(url, process, settings.log_dir / LOG_NAME, deadline)
            return process
    except Timeout:
        raise DaemonStartError(
            f"timed out waiting for another start of the daemon at {url}"
        ) from None


def _reap_when_done(process: subprocess.Popen) -> None:
    """Wait for the process in a daemon thread: its exit status is collected, not left as a
    zombie for as long as this (possibly long-running) front end lives."""
    threading.Thread(target=process.wait, name="localllm-daemon-reaper", daemon=True).start()


def _spawn(settings: Settings) -> subprocess.Popen:
    """``python -m daemon serve`` in its own session, outliving this process."""
    settings.log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    log_path = settings.log_dir / LOG_NAME
    _rotate(log_path)
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    argv = [sys.executable, "-m", "daemon", "serve", "--host", f"{host}:{settings.port}"]
    detach: dict[str, object] = {"start_new_session": True}
    if os.name == "nt":
        flags = ("DETACHED_PROCESS", "CREATE_NEW_PROCESS_GROUP", "CREATE_NO_WINDOW")
        detach = {"creationflags": sum(getattr(subprocess, flag, 0) for flag in flags)}
    with _open_private_log(log_path) as log:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            close_fds=True,
            cwd=Path(__file__).resolve().parents[1],  # runs the daemon package this one is
            **detach,  # type: ignore[arg-type]
        )


def _open_private_log(path: Path) -> BinaryIO:
    """The log opened for appending, 0600 whatever the umask (and if an older version left
    it readable to others)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags, 0o600)
    os.chmod(path, 0o600)
    return os.fdopen(fd, "ab")


def _wait_until_up(url: str, process: subprocess.Popen, log_path: Path, deadline: float) -> None:
    delay = 0.05
    while time.monotonic() < deadline:
        if daemon_answers(url, timeout=min(_PROBE_TIMEOUT, max(deadline - time.monotonic(), 0.1))):
            return
        code = process.poll()
        if code is not None:
            raise DaemonStartError(
                f"the daemon exited (status {code}) instead of starting; its log, {log_path}, "
                "ends with:",
                _tail(log_path),
            )
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)
    raise DaemonStartError(
        f"the daemon did not answer at {url} in time (it may still be starting); "
        f"its log, {log_path}, ends with:",
        _tail(log_path),
    )


def _rotate(log_path: Path) -> None:
    """Keep one older log once the current one grows past a few megabytes."""
    try:
        if log_path.stat().st_size > _LOG_ROTATE_BYTES:
            os.replace(log_path, log_path.with_name(LOG_NAME + ".1"))
    except OSError:
        pass


def _tail(path: Path, lines: int = _TAIL_LINES) -> list[str]:
    try:
        with path.open("rb") as stream:
            stream.seek(max(stream.seek(0, os.SEEK_END) - 16384, 0))
            text = stream.read().decode("utf-8", errors="replace")
    except OSError:
        return ["(no log was written)"]
    return [line for line in text.splitlines() if line.strip()][-lines:] or ["(the log is empty)"]
